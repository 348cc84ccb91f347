package connectengine

import (
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/connect"
	"github.com/kmirror/kmirror/internal/connect/connectplan"
	"github.com/kmirror/kmirror/internal/engine"
	"github.com/kmirror/kmirror/internal/replicator"
	"github.com/kmirror/kmirror/internal/switchover"
)

// progress is the copy progress of one task's flows as last sampled: the
// source connectors' offsets on Connect (the last copied record per
// partition) against the source partitions' end offsets. Its Connect
// cluster's lagSampler samples it.
type progress struct {
	log *slog.Logger

	mu    sync.Mutex
	flows map[string]flowProgress // by flow
	// first is each partition's next offset when first seen, so Records
	// counts what was copied while kmirror watched.
	first map[partitionKey]int64
	// tails are each partition's position at the previous sample, and what
	// a look past it found: one that did not move may have only
	// transaction markers left.
	tails map[partitionKey]tail
	// ends are each partition's end offset when last read: while the
	// source cannot be reached, the lag (and what an emergency switchover
	// may lose) is as last seen.
	ends map[partitionKey]int64
}

// tail is a partition's next and end offsets at a sample, and the
// settled-tail check's answer for them: the offset markers and aborted
// records reach, or notLooked, or unsettled (a record is still to copy).
type tail struct{ next, end, settled int64 }

const (
	notLooked = -1
	unsettled = -2
)

// tailChecks bounds the settled-tail fetches of one sample: each reads up
// to 1 MiB from the source (an answer is kept while the partition stays).
const tailChecks = 8

type partitionKey struct {
	topic     string
	partition int32
}

type flowProgress struct {
	partitions []engine.PartitionStatus
	records    int64
	lag        int64
}

// sampleBudget bounds reading one connector's offsets in a sample.
const sampleBudget = 10 * time.Second

// sampleRequestTimeout bounds one such request to one URL (see
// newLagSampler). A variable for tests.
var sampleRequestTimeout = 3 * time.Second

// connectorsPerRound: a round of a Connect cluster's lag sampler reads the
// offsets of one connector in this many (at least one), in turn, so 200
// tasks cost 20 offset requests a round, not 200; a switchover reads its
// flow's at once (positions).
const connectorsPerRound = 10

func newProgress(log *slog.Logger) *progress {
	return &progress{log: log, flows: map[string]flowProgress{}, first: map[partitionKey]int64{},
		tails: map[partitionKey]tail{}, ends: map[partitionKey]int64{}}
}

// settledEnd is how far a partition's markers and aborted records reach
// past next (ok false: not known, or a record is still to copy). It looks
// (look) only once the partition stopped moving since the previous sample,
// and once per position: an answer holds while next and end stay.
func (p *progress) settledEnd(key partitionKey, next, end int64, look func() (int64, bool)) (int64, bool) {
	p.mu.Lock()
	prev, seen := p.tails[key]
	p.mu.Unlock()
	cur := tail{next: next, end: end, settled: notLooked}
	switch {
	case seen && prev.next == next && prev.end == end && prev.settled != notLooked:
		cur.settled = prev.settled
	case seen && prev.next == next:
		if s, ok := look(); ok {
			cur.settled = s
		} else if s == unsettled {
			cur.settled = unsettled
		}
	}
	p.mu.Lock()
	p.tails[key] = cur
	p.mu.Unlock()
	return cur.settled, cur.settled >= 0
}

func (p *progress) of(flow string) (flowProgress, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f, ok := p.flows[flow]
	return f, ok
}

// sample takes one source connector's offsets as read from Connect, and
// its source's offsets through src (nil when the source cannot be reached:
// the ends are as last seen, or unknown). A failure leaves the last sample
// shown: the state says why the copy is in trouble, this only measures it.
func (p *progress) sample(offs connect.Offsets, c connectplan.Connector, src sarama.Client) {
	var statuses []engine.PartitionStatus
	known := map[partitionKey]bool{}
	for _, o := range offs.Offsets {
		pos, err := o.MirrorSource()
		if err != nil {
			continue // not a copy position (MM2 keeps none other today)
		}
		known[partitionKey{pos.Topic, pos.Partition}] = true
		statuses = append(statuses, engine.PartitionStatus{Topic: pos.Topic, Target: c.Copy.TargetTopic(pos.Topic), Partition: pos.Partition,
			NextOffset: pos.Offset + 1, EndOffset: -1, LastCopied: pos.Offset})
	}
	// Partitions MM2 copied nothing of yet: all they hold is behind.
	var selected map[string][]int32
	if c.Copy.Selects != nil && src != nil {
		selected, _ = selectedPartitions(src, c.Copy) // none read: the known partitions only
	}
	if len(selected) > 0 {
		unseen := map[string][]int32{}
		for topic, parts := range selected {
			for _, part := range parts {
				if !known[partitionKey{topic, part}] {
					unseen[topic] = append(unseen[topic], part)
				}
			}
		}
		if len(unseen) > 0 {
			if oldest, err := replicator.ListOffsets(src, unseen, sarama.OffsetOldest); err == nil {
				for topic, parts := range unseen {
					for _, part := range parts {
						statuses = append(statuses, engine.PartitionStatus{Topic: topic, Target: c.Copy.TargetTopic(topic), Partition: part,
							NextOffset: oldest[topic][part], EndOffset: -1, LastCopied: -1})
					}
				}
			}
		}
	}
	// Every partition's end in one request per leader.
	var ends map[string]map[int32]int64
	if src != nil && len(statuses) > 0 {
		parts := map[string][]int32{}
		for _, ps := range statuses {
			parts[ps.Topic] = append(parts[ps.Topic], ps.Partition)
		}
		var err error
		if ends, err = replicator.ListOffsets(src, parts, sarama.OffsetNewest); err != nil {
			p.log.Debug("source ends not read for lag", "connector", c.Name, "error", err)
		}
	}
	var fp flowProgress
	checks := 0
	add := func(ps engine.PartitionStatus) {
		key := partitionKey{ps.Topic, ps.Partition}
		end, ok := ends[ps.Topic][ps.Partition]
		p.mu.Lock()
		if ok {
			p.ends[key] = end
		} else {
			end, ok = p.ends[key]
		}
		p.mu.Unlock()
		if ok {
			ps.EndOffset, ps.Lag = end, max(end-ps.NextOffset, 0)
		}
		// MM2's offset is its last copied record's: a transactional
		// partition's commit marker (and an aborted transaction) after it
		// is never copied, and would show as lag for ever. As the embedded
		// engine does, what is left is looked at once progress stops.
		if ps.Lag > 0 && ps.LastCopied >= 0 && src != nil {
			look := func() (int64, bool) {
				if checks >= tailChecks {
					return notLooked, false
				}
				checks++
				end, ok, err := replicator.SettledTail(src, ps.Topic, ps.Partition, ps.NextOffset)
				switch {
				case err != nil:
					return notLooked, false
				case !ok:
					return unsettled, false
				}
				return end, true
			}
			if settled, ok := p.settledEnd(key, ps.NextOffset, ps.EndOffset, look); ok {
				ps.Lag = max(ps.EndOffset-settled, 0)
			}
		}
		fp.partitions = append(fp.partitions, ps)
		fp.lag += ps.Lag
	}
	for _, ps := range statuses {
		add(ps)
	}
	sort.Slice(fp.partitions, func(i, j int) bool {
		a, b := fp.partitions[i], fp.partitions[j]
		return a.Topic < b.Topic || a.Topic == b.Topic && a.Partition < b.Partition
	})
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, ps := range fp.partitions {
		key := partitionKey{ps.Topic, ps.Partition}
		first, seen := p.first[key]
		if !seen {
			first = ps.NextOffset
			p.first[key] = first
		}
		// Offsets, not records: transaction markers count too.
		fp.partitions[i].Records = ps.NextOffset - first
		fp.records += ps.NextOffset - first
	}
	p.flows[c.Flow] = fp
}

// positions are the flow's partitions as last sampled (a switchover asks
// for a sample first: lagSampler.positions):
// the next offset whose copy MirrorMaker 2 committed (past a settled tail of
// transaction markers, which it never copies).
func (p *progress) positions(flow string) ([]switchover.Position, error) {
	fp, ok := p.of(flow)
	if !ok {
		return nil, fmt.Errorf("the copy of %s has not been sampled yet (its connectors' offsets are read every few seconds)", flow)
	}
	out := make([]switchover.Position, 0, len(fp.partitions))
	for _, ps := range fp.partitions {
		pos := switchover.Position{Topic: ps.Topic, Partition: ps.Partition, TargetTopic: ps.Target, Next: ps.NextOffset, SeenEnd: ps.EndOffset}
		if ps.EndOffset >= 0 {
			pos.Next = max(ps.NextOffset, ps.EndOffset-ps.Lag)
		}
		if ps.Failed {
			pos.Failed = ps.Reason
		}
		out = append(out, pos)
	}
	return out, nil
}

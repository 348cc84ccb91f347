package connectengine

import (
	"context"
	"errors"
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

// progress samples the copy progress of one task's flows: the source
// connectors' offsets on Connect (the last copied record per partition)
// against the source partitions' end offsets.
type progress struct {
	log  *slog.Logger
	quit chan struct{}
	done chan struct{}

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

// sampleRequestTimeout bounds one such request to one URL (see run). A
// variable for tests.
var sampleRequestTimeout = 3 * time.Second

func newProgress(cfg connect.Config, conns []connectplan.Connector, every time.Duration, log *slog.Logger) *progress {
	p := &progress{log: log, quit: make(chan struct{}), done: make(chan struct{}), flows: map[string]flowProgress{}, first: map[partitionKey]int64{},
		tails: map[partitionKey]tail{}, ends: map[partitionKey]int64{}}
	var copies []connectplan.Connector
	for _, c := range conns {
		if c.Copy != nil {
			copies = append(copies, c)
		}
	}
	go p.run(cfg, copies, every)
	return p
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

func (p *progress) stop() {
	close(p.quit)
	<-p.done
}

func (p *progress) of(flow string) (flowProgress, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f, ok := p.flows[flow]
	return f, ok
}

func (p *progress) run(cfg connect.Config, copies []connectplan.Connector, every time.Duration) {
	defer close(p.done)
	clients := map[string]sarama.Client{}
	defer func() {
		for _, c := range clients {
			_ = c.Close()
		}
	}()
	// One REST client for the sampler's life: a client a sample would
	// leave its idle connections to the garbage collector. It keeps the
	// URL that answered last, and each request to one URL is bounded well
	// inside a sample's budget, so a hung worker costs one try and the
	// next URL answers in the same sample.
	if cfg.Timeout <= 0 || cfg.Timeout > sampleRequestTimeout {
		cfg.Timeout = sampleRequestTimeout
	}
	rest, err := connect.New(cfg)
	if err != nil {
		p.log.Warn("Connect progress not sampled", "error", err)
		return
	}
	defer rest.Close()
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		for _, c := range copies {
			p.sample(rest, c, clients)
		}
		select {
		case <-p.quit:
			return
		case <-tick.C:
		}
	}
}

// sample reads one source connector's offsets and its source's end
// offsets. A failure leaves the last sample shown: the state says why the
// copy is in trouble, this only measures it.
func (p *progress) sample(rest *connect.Client, c connectplan.Connector, clients map[string]sarama.Client) {
	ctx, cancel := context.WithTimeout(context.Background(), sampleBudget)
	defer cancel()
	offs, err := rest.Offsets(ctx, c.Name)
	if err != nil {
		p.log.Debug("connector offsets not read", "connector", c.Name, "error", err)
		return
	}
	src, ok := clients[c.Name]
	if !ok {
		scfg, err := c.Copy.Source.Config("kmirror-connect-lag")
		if err == nil {
			src, err = sarama.NewClient(c.Copy.Source.BootstrapServers, scfg)
		}
		if err != nil {
			// Connect's offsets still say where the copy stands (an
			// emergency switchover needs no more); the ends are as last
			// seen, or unknown.
			p.log.Debug("source not reached for lag", "connector", c.Name, "error", err)
			src = nil
		} else {
			clients[c.Name] = src
		}
	}
	var fp flowProgress
	seen := map[partitionKey]bool{}
	checks := 0
	add := func(ps engine.PartitionStatus) {
		key := partitionKey{ps.Topic, ps.Partition}
		end, err := int64(-1), errors.New("the source is not reached")
		if src != nil {
			end, err = src.GetOffset(ps.Topic, ps.Partition, sarama.OffsetNewest)
		}
		p.mu.Lock()
		if err == nil {
			p.ends[key] = end
		} else if seen, ok := p.ends[key]; ok {
			end, err = seen, nil
		}
		p.mu.Unlock()
		if err == nil {
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
		seen[key] = true
		fp.partitions = append(fp.partitions, ps)
		fp.lag += ps.Lag
	}
	for _, o := range offs.Offsets {
		pos, err := o.MirrorSource()
		if err != nil {
			continue // not a copy position (MM2 keeps none other today)
		}
		add(engine.PartitionStatus{Topic: pos.Topic, Target: c.Copy.TargetTopic(pos.Topic), Partition: pos.Partition,
			NextOffset: pos.Offset + 1, EndOffset: -1, LastCopied: pos.Offset})
	}
	// Partitions MM2 copied nothing of yet: all they hold is behind.
	if c.Copy.Selects != nil && src != nil && src.RefreshMetadata() == nil {
		topics, _ := src.Topics()
		for _, topic := range topics {
			if !c.Copy.Selects(topic) {
				continue
			}
			parts, err := src.Partitions(topic)
			if err != nil {
				continue
			}
			for _, part := range parts {
				if seen[partitionKey{topic, part}] {
					continue
				}
				oldest, err := src.GetOffset(topic, part, sarama.OffsetOldest)
				if err != nil {
					continue
				}
				add(engine.PartitionStatus{Topic: topic, Target: c.Copy.TargetTopic(topic), Partition: part,
					NextOffset: oldest, EndOffset: -1, LastCopied: -1})
			}
		}
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

// positions are the flow's partitions as last sampled, for a switchover:
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

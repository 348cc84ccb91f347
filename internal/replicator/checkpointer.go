package replicator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/checkpoint"
	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/engine"
	"github.com/kmirror/kmirror/internal/mm2"
	"github.com/kmirror/kmirror/internal/policy"
)

// loadHistory reads the sync history back at start, so translation works
// right after a restart for offsets copied before it (MM2 keeps only what it
// saw since its own start): kmirror's history topic, with its links, then
// MM2's offset-syncs topic for what lies before it (syncs MM2 wrote before
// kmirror took over), unlinked. Syncs of topics this flow does not
// replicate are ignored.
func (r *Replicator) loadHistory(client sarama.Client) error {
	part := func(topic string, partition int32) *partState {
		return r.state.partition(Partition{Source: topic, Partition: partition, Target: r.flow.Policy.TargetTopic(topic)})
	}
	linked := 0
	err := readTopic(client, r.flow.SyncHistoryTopic, func(m *sarama.ConsumerMessage) {
		if topic, partition, p, err := checkpoint.DecodeHistory(m.Key, m.Value); err == nil && r.flow.Policy.Selected(topic) {
			ps := part(topic, partition)
			ps.mu.Lock()
			ps.hist.Add(p)
			ps.mu.Unlock()
			linked++
		}
	})
	if err != nil {
		return fmt.Errorf("read sync history %s: %w", r.flow.SyncHistoryTopic, err)
	}
	older := map[*partState][]checkpoint.SyncPoint{}
	err = readTopic(client, r.flow.OffsetSyncsTopic, func(m *sarama.ConsumerMessage) {
		if s, err := mm2.DecodeOffsetSync(m.Key, m.Value); err == nil && r.flow.Policy.Selected(s.Topic) {
			ps := part(s.Topic, s.Partition)
			older[ps] = append(older[ps], checkpoint.SyncPoint{Upstream: s.UpstreamOffset, Downstream: s.DownstreamOffset})
		}
	})
	if err != nil {
		return fmt.Errorf("read offset syncs %s: %w", r.flow.OffsetSyncsTopic, err)
	}
	for ps, points := range older {
		ps.mu.Lock()
		ps.hist.AddOlder(points)
		ps.mu.Unlock()
	}
	r.log.Info("offset sync history loaded", "history", r.flow.SyncHistoryTopic, "linked", linked, "topic", r.flow.OffsetSyncsTopic, "partitions", len(older))
	if fb := r.flow.Failback; fb != nil {
		err := r.loadReverseHistory(fb.ForwardSyncs, fb.ForwardHistoryTopic, "forward", fb.Names, func(ps *partState, p checkpoint.SyncPoint) {
			pt, ok := fb.point(ps.Partition)
			if !ok {
				return
			}
			if ps.back == nil {
				ps.back, ps.backPoint = checkpoint.NewHistory(0), pt
			}
			ps.back.Add(p)
		})
		if err != nil {
			return err
		}
	}
	if rf := r.flow.Returns; rf != nil && rf.BackHistoryTopic != "" {
		err := r.loadReverseHistory(rf.BackSyncs, rf.BackHistoryTopic, "way-back", rf.Names, func(ps *partState, p checkpoint.SyncPoint) {
			if ps.returned != nil {
				ps.returned.Add(p)
			}
		})
		if err != nil {
			// The copy goes on: groups inside what a way back wrote are
			// reported not translated until a restart reads it.
			r.log.Warn("the ways back's sync history was not read; groups inside what they wrote are not translated", "error", err)
		}
	}
	return nil
}

// loadReverseHistory reads the sync history of the flow that copies the
// other way (the forward flow, for a way back; the ways back, for a push
// flow that went home): groups inside what it wrote on this flow's source
// translate through its syncs inverted. It copied this flow's target topics
// to its source topics; names maps its source topics to this flow's (none:
// the same names). add is called under ps.mu.
func (r *Replicator) loadReverseHistory(s cluster.Settings, topic, which string, names map[string]string, add func(*partState, checkpoint.SyncPoint)) error {
	client, admin, err := adminClient(s, "kmirror-"+r.flow.Task+"-"+r.flow.Name()+"-"+which+"-history")
	if err != nil {
		return fmt.Errorf("the %s flow's sync history: %w", which, err)
	}
	defer admin.Close() // closes client too
	n := 0
	err = readTopic(client, topic, func(m *sarama.ConsumerMessage) {
		topic, partition, p, err := checkpoint.DecodeHistory(m.Key, m.Value)
		if err != nil {
			return
		}
		if mine, ok := names[topic]; ok {
			topic = mine
		}
		if !r.flow.Policy.Selected(topic) {
			return
		}
		ps := r.state.partition(Partition{Source: topic, Partition: partition, Target: r.flow.Policy.TargetTopic(topic)})
		ps.mu.Lock()
		add(ps, p)
		ps.mu.Unlock()
		n++
	})
	if err != nil {
		return fmt.Errorf("read the %s flow's sync history %s: %w", which, topic, err)
	}
	r.log.Info("the other way's sync history loaded", "flow", which, "history", topic, "syncs", n)
	return nil
}

// checkpointer translates the source's consumer-group offsets and keeps the
// target in step: it writes MM2 checkpoints, then commits the translated
// offsets to target groups with no active members, only forward.
type checkpointer struct {
	flow     Flow
	state    *flowState
	srcAdmin sarama.ClusterAdmin
	dst      sarama.Client
	dstAdmin sarama.ClusterAdmin
	log      *slog.Logger
	mu       sync.Mutex                // one sync at a time: the interval and on-demand failovers
	emitted  map[string]mm2.Checkpoint // last checkpoint written per group/topic/partition
	loaded   bool                      // emitted holds what the topic had at start
	producer sarama.SyncProducer
	// targetGens is each partition's targetGen as last seen: a change says
	// its target topic was replaced since.
	targetGens map[*partState]int64
}

// forgetReplaced drops the checkpoints written for target partitions
// replaced since the last sync: they name offsets of a topic that is gone,
// and "never backwards" would keep them standing over the new topic's.
func (c *checkpointer) forgetReplaced(parts []*partState) {
	if c.targetGens == nil {
		c.targetGens = map[*partState]int64{}
	}
	for _, ps := range parts {
		gen := ps.targetGen.Load()
		if gen == c.targetGens[ps] {
			continue
		}
		c.targetGens[ps] = gen
		for key, cp := range c.emitted {
			if cp.Topic == ps.Target && cp.Partition == ps.Partition.Partition {
				delete(c.emitted, key)
			}
		}
	}
}

// forget makes the next sync write every checkpoint again (the topic was
// recreated empty).
func (c *checkpointer) forget() {
	c.mu.Lock()
	c.emitted = map[string]mm2.Checkpoint{}
	c.loaded = true // nothing to read back: the topic is new
	c.mu.Unlock()
}

// loadEmitted reads the checkpoints topic once, so a restarted flow knows
// the checkpoints written before it and never writes one behind them (as
// MM2's CheckpointStore).
func (c *checkpointer) loadEmitted() error {
	if c.loaded {
		return nil
	}
	err := readTopic(c.dst, c.flow.CheckpointsTopic, func(m *sarama.ConsumerMessage) {
		if cp, err := mm2.DecodeCheckpoint(m.Key, m.Value); err == nil {
			c.emitted[string(cp.Key())] = cp
		}
	})
	if err != nil {
		return fmt.Errorf("read checkpoints %s on the target: %w", c.flow.CheckpointsTopic, err)
	}
	c.loaded = true
	return nil
}

// newerCheckpoint says whether cp replaces last for the same group and
// partition, MM2 4.x's rule: after a rewind of the source group (its
// upstream offset went back), or when the downstream offset moved forward.
// Otherwise the checkpoint would move the target group backwards — a less
// exact translation after a restart, say — and last stands.
func newerCheckpoint(last, cp mm2.Checkpoint) bool {
	return cp.UpstreamOffset < last.UpstreamOffset || cp.DownstreamOffset > last.DownstreamOffset
}

func (c *checkpointer) close() {
	if c.producer != nil {
		c.producer.Close()
	}
}

func (c *checkpointer) run(ctx context.Context, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	for {
		if _, err := c.Sync(ctx, ""); err != nil && ctx.Err() == nil {
			c.log.Warn("consumer offset sync failed; will retry", "error", err)
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// GroupResult is what one sync did for a group.
type GroupResult struct {
	Group       string           `json:"group"`
	Checkpoints []mm2.Checkpoint `json:"checkpoints"`
	Committed   map[string]int64 `json:"committed,omitempty"` // "topic/partition" -> offset committed on the target
	Skipped     []string         `json:"skipped,omitempty"`
	// CommitError says why the offsets were not (all) committed on the
	// target (also in Skipped).
	CommitError string `json:"commit_error,omitempty"`
	// Notes say what a failover should know besides: a checkpoint behind
	// the group's offset on the source (records read again, none skipped).
	Notes []string `json:"notes,omitempty"`
	// Partitions say, per partition translated now, how far the
	// translation can be trusted (the embedded engine's; the Connect
	// engine's come from MM2's checkpoints and leave it empty).
	Partitions []PartitionTranslation `json:"partitions,omitempty"`
	offsets    map[string]map[int32]int64
}

// commitAt sets the offset to commit for target partition topic-partition.
func (r *GroupResult) commitAt(topic string, partition int32, offset int64) {
	if r.offsets[topic] == nil {
		r.offsets[topic] = map[int32]int64{}
	}
	r.offsets[topic][partition] = offset
}

// PartitionTranslation is one partition of a group's translation.
type PartitionTranslation struct {
	Topic        string `json:"topic"`
	Partition    int32  `json:"partition"`
	TargetTopic  string `json:"target_topic"`
	SourceOffset int64  `json:"source_offset"`
	TargetOffset int64  `json:"target_offset"`
	Exact        bool   `json:"exact"`
	// MayReadAgain bounds the records a consumer moved to TargetOffset
	// reads again: how far the translation may be behind, plus, for a
	// copy that is not exactly-once, the records copied again after it.
	// -1: not bounded.
	MayReadAgain int64 `json:"may_read_again"`
	// Lost counts the group's unread records the target no longer holds.
	Lost int64 `json:"lost,omitempty"`
}

// Sync translates and syncs every group (or only the named one) once.
func (c *checkpointer) Sync(ctx context.Context, only string) ([]GroupResult, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	st := &engine.CheckpointStatus{LastRun: time.Now()}
	defer func() {
		c.state.mu.Lock()
		c.state.ckpt = st
		c.state.mu.Unlock()
	}()
	if err := c.loadEmitted(); err != nil {
		st.LastError = err.Error()
		return nil, err
	}
	groups, err := c.sourceGroups(only)
	if err != nil {
		st.LastError = err.Error()
		return nil, err
	}
	parts := c.replicated()
	c.forgetReplaced(parts)
	if len(parts) == 0 || len(groups) == 0 {
		return nil, nil
	}
	request := map[string][]int32{}
	for _, ps := range parts {
		request[ps.Source] = append(request[ps.Source], ps.Partition.Partition)
	}
	var results []GroupResult
	var records []*sarama.ProducerMessage
	before := map[string]mm2.Checkpoint{} // what emitted held for the records written now
	for _, g := range groups {
		resp, err := c.srcAdmin.ListConsumerGroupOffsets(g, request)
		if err != nil {
			st.Skipped = append(st.Skipped, fmt.Sprintf("%s: read offsets on the source: %v", g, err))
			continue
		}
		res := GroupResult{Group: g, offsets: map[string]map[int32]int64{}}
		for _, ps := range parts {
			b := resp.GetBlock(ps.Source, ps.Partition.Partition)
			if b == nil || b.Offset < 0 || !errors.Is(b.Err, sarama.ErrNoError) {
				continue
			}
			tr, oldest, ok := ps.explainAt(b.Offset)
			down := tr.Downstream
			if !ok {
				res.Skipped = append(res.Skipped, fmt.Sprintf("%s-%d offset %d is older than the offset sync history (oldest %d): not translated",
					ps.Source, ps.Partition.Partition, b.Offset, oldest))
				continue
			}
			cp := mm2.Checkpoint{Group: g, Topic: ps.Target, Partition: ps.Partition.Partition,
				UpstreamOffset: b.Offset, DownstreamOffset: down, Metadata: b.Metadata}
			key := string(cp.Key())
			if last, ok := c.emitted[key]; ok && !newerCheckpoint(last, cp) {
				cp = last // never backwards: the last checkpoint stands
			} else {
				records = append(records, &sarama.ProducerMessage{Topic: c.flow.CheckpointsTopic, Partition: 0,
					Key: sarama.ByteEncoder(cp.Key()), Value: sarama.ByteEncoder(cp.Value())})
				if _, seen := before[key]; !seen {
					before[key] = c.emitted[key] // zero when none: dropped again on failure
				}
				c.emitted[key] = cp
			}
			res.Checkpoints = append(res.Checkpoints, cp)
			res.Partitions = append(res.Partitions, explain(ps, b.Offset, tr, cp))
			res.commitAt(ps.Target, ps.Partition.Partition, cp.DownstreamOffset)
		}
		if len(res.Checkpoints) > 0 {
			results = append(results, res)
			st.Groups = append(st.Groups, g)
		}
		for _, s := range res.Skipped {
			st.Skipped = append(st.Skipped, g+": "+s)
		}
	}
	if len(records) > 0 {
		if err := c.write(records); err != nil {
			for key, last := range before { // write again next time
				if last == (mm2.Checkpoint{}) {
					delete(c.emitted, key)
				} else {
					c.emitted[key] = last
				}
			}
			st.LastError = err.Error()
			return results, err
		}
	}
	for i := range results {
		if err := commitGroup(c.dstAdmin, &results[i]); err != nil {
			results[i].CommitError = err.Error()
			results[i].Skipped = append(results[i].Skipped, err.Error())
			st.Skipped = append(st.Skipped, results[i].Group+": "+err.Error())
			continue
		}
		if len(results[i].Committed) > 0 {
			st.Committed = append(st.Committed, results[i].Group)
		}
	}
	return results, nil
}

// sourceGroups lists the source's consumer groups, kmirror's own left out.
func (c *checkpointer) sourceGroups(only string) ([]string, error) {
	if only != "" {
		return []string{only}, nil
	}
	return userGroups(c.srcAdmin)
}

// userGroups lists the source's consumer groups whose offsets are synced
// (policy.UnsyncedGroup: kmirror's own and tools' left out), sorted.
func userGroups(srcAdmin sarama.ClusterAdmin) ([]string, error) {
	all, err := srcAdmin.ListConsumerGroups()
	if err != nil {
		return nil, fmt.Errorf("list consumer groups on the source: %w", err)
	}
	var out []string
	for g := range all {
		if policy.UnsyncedGroup(g) == "" {
			out = append(out, g)
		}
	}
	sort.Strings(out)
	return out, nil
}

// replicated are the partitions the flow copies (with a target name).
func (c *checkpointer) replicated() []*partState { return c.state.replicated() }

// replicated are the partitions the flow copies (with a target name).
func (fs *flowState) replicated() []*partState {
	fs.mu.Lock()
	defer fs.mu.Unlock()
	out := make([]*partState, 0, len(fs.parts))
	for _, ps := range fs.parts {
		if ps.Target != "" {
			out = append(out, ps)
		}
	}
	return out
}

// explainAt translates group offset g of the partition, with how far the
// answer can be trusted. It uses the flow's live progress when this
// process copied the partition, so the newest run of syncs translates
// exactly; before its first copy, the progress it resumed from stands for
// it (committed only once every distance change before it was in the sync
// history). oldest is the first offset the history can translate, read
// under the same lock (the copy path adds syncs meanwhile).
func (ps *partState) explainAt(g int64) (tr checkpoint.Translation, oldest int64, ok bool) {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if tr, ok, in := ps.translateReturned(g); in {
		if !ok {
			return tr, -1, false // the way back's syncs are not known
		}
		return tr, 0, true
	}
	if ps.back != nil && g <= ps.backPoint.TargetEnd {
		return ps.translateBack(g)
	}
	var live *checkpoint.Live
	if ps.exactlyOnce {
		// What is acknowledged may still be aborted: only the committed
		// progress bounds a translation.
		if c := ps.txnCommitted; c.offset >= 0 && c.down >= 0 {
			live = &checkpoint.Live{NextUpstream: c.offset, NextDownstream: c.down}
		}
	} else if up, dn := ps.lastUp.Load(), ps.lastDown.Load(); up >= 0 && dn >= 0 {
		next := ps.next.Load()
		live = &checkpoint.Live{NextUpstream: max(next, up+1), NextDownstream: dn + 1}
	} else if next := ps.next.Load(); ps.resumed && next >= 0 && ps.progDown >= 0 {
		live = &checkpoint.Live{NextUpstream: next, NextDownstream: ps.progDown}
	}
	tr, ok = ps.hist.Explain(g, live)
	if ps.exactlyOnce {
		// Read committed, what inflates an exactly-once copy (markers,
		// aborted records) is never read again.
		tr.Inflation = 0
	}
	return tr, ps.hist.Oldest(), ok
}

// translateBack is a way back's translation of a group behind the
// switchover point (under ps.mu): the forward flow's syncs inverted, the
// point itself mapping to where the forward copy's source ended.
func (ps *partState) translateBack(g int64) (checkpoint.Translation, int64, bool) {
	pt := ps.backPoint
	tr, ok := ps.inverted(ps.back, g, checkpoint.Live{NextUpstream: pt.SourceEnd, NextDownstream: pt.TargetEnd})
	if !ok {
		return tr, -1, false
	}
	return tr, 0, true
}

// translateReturned translates a group that stopped inside a stretch a way
// back that went home wrote (under ps.mu); in is false when g lies in none.
// On the push flow those records are copies of the target's: the way
// back's syncs inverted say where the group goes on there (this flow's own
// distance says nothing of them: it skipped them). On a way back, g is in
// the target's records an earlier round copied back: its own syncs of that
// round, bounded by where that round ended.
func (ps *partState) translateReturned(g int64) (tr checkpoint.Translation, ok, in bool) {
	for _, rp := range ps.returns {
		end := checkpoint.Live{NextUpstream: rp.PeerTo, NextDownstream: rp.To}
		switch {
		case ps.returned != nil && rp.Covers(g):
			tr, ok = ps.inverted(ps.returned, g, end)
			tr.Downstream = min(tr.Downstream, rp.PeerTo)
			return tr, ok, true
		case ps.returned == nil && ps.back != nil && rp.CoversPeer(g):
			tr, ok = ps.hist.Explain(g, &end)
			tr.Downstream = min(tr.Downstream, rp.To)
			return tr, ok, true
		}
	}
	return tr, false, false
}

// inverted is the translation of g through h, another flow's syncs that
// copied the other way (g is their downstream), end bounding that copy.
func (ps *partState) inverted(h *checkpoint.History, g int64, end checkpoint.Live) (checkpoint.Translation, bool) {
	if h == nil {
		return checkpoint.Translation{}, false
	}
	inv, ok := h.Invert(g, &end)
	if !ok {
		return checkpoint.Translation{}, false
	}
	tr := checkpoint.Translation{Downstream: inv.Upstream, Exact: inv.Exact, Behind: inv.Behind}
	if !ps.exactlyOnce && inv.Overshoot > 0 {
		// Records the other copy wrote twice: the group may read them
		// again.
		tr.Exact, tr.Inflation = false, inv.Overshoot
	}
	return tr, true
}

// explain reports a partition's translation as cp stands (a newer
// translation, or the last checkpoint, never behind it).
func explain(ps *partState, g int64, tr checkpoint.Translation, cp mm2.Checkpoint) PartitionTranslation {
	pt := PartitionTranslation{Topic: ps.Source, Partition: ps.Partition.Partition, TargetTopic: ps.Target,
		SourceOffset: g, TargetOffset: cp.DownstreamOffset, Exact: tr.Exact, Lost: tr.Lost}
	if cp.DownstreamOffset != tr.Downstream || cp.UpstreamOffset != g {
		// The last checkpoint stands: it says nothing of its own
		// exactness.
		pt.Exact = false
		tr.Behind = -1
	}
	switch {
	case !pt.Exact && tr.Behind < 0:
		pt.MayReadAgain = -1
	default:
		pt.MayReadAgain = tr.Behind + tr.Inflation
	}
	return pt
}

func (c *checkpointer) write(records []*sarama.ProducerMessage) error {
	if c.producer == nil {
		cfg, err := c.flow.Target.Settings.Config("kmirror-" + c.flow.Task + "-" + c.flow.Name() + "-checkpoints")
		if err != nil {
			return err
		}
		cfg.Producer.Partitioner = sarama.NewManualPartitioner
		cfg.Producer.RequiredAcks = sarama.WaitForAll
		cfg.Producer.Return.Successes = true
		if c.producer, err = sarama.NewSyncProducer(c.flow.Target.Settings.BootstrapServers, cfg); err != nil {
			return fmt.Errorf("checkpoints producer: %w", err)
		}
	}
	if err := c.producer.SendMessages(records); err != nil {
		return fmt.Errorf("write checkpoints to %s: %w", c.flow.CheckpointsTopic, err)
	}
	return nil
}

// rebalancing says a group is in a state other than Empty or Dead: members
// are joining, so its offsets are not to be moved.
func rebalancing(d *sarama.GroupDescription) bool {
	return d.State != "" && d.State != "Empty" && d.State != "Dead"
}

// commitGroup writes a group's translated offsets to the target when the
// group has no active members there, and only where they move forward: a
// consumer that already moved to the target is never pulled back. The one
// rule for every engine: the checkpointer's syncs and failovers, and
// failovers from MM2's checkpoints (FailoverFromCheckpoints).
func commitGroup(admin sarama.ClusterAdmin, res *GroupResult) error {
	descs, err := admin.DescribeConsumerGroups([]string{res.Group})
	if err != nil {
		return fmt.Errorf("describe group on the target: %w", err)
	}
	for _, d := range descs {
		if !errors.Is(d.Err, sarama.ErrNoError) && !errors.Is(d.Err, sarama.ErrGroupIDNotFound) {
			return fmt.Errorf("describe group on the target: %w", d.Err)
		}
		if len(d.Members) > 0 || rebalancing(d) {
			return fmt.Errorf("group is active on the target (%s, %d members): offsets not committed", d.State, len(d.Members))
		}
	}
	request := map[string][]int32{}
	for topic, ps := range res.offsets {
		for p := range ps {
			request[topic] = append(request[topic], p)
		}
	}
	current, err := admin.ListConsumerGroupOffsets(res.Group, request)
	if err != nil && !errors.Is(err, sarama.ErrGroupIDNotFound) {
		return fmt.Errorf("read the group's offsets on the target: %w", err)
	}
	forward := map[string]map[int32]sarama.OffsetAndMetadata{}
	for topic, ps := range res.offsets {
		for p, off := range ps {
			if current != nil {
				if b := current.GetBlock(topic, p); b != nil && b.Offset >= off {
					continue
				}
			}
			if forward[topic] == nil {
				forward[topic] = map[int32]sarama.OffsetAndMetadata{}
			}
			forward[topic][p] = sarama.OffsetAndMetadata{Offset: off, LeaderEpoch: -1}
		}
	}
	if len(forward) == 0 {
		return nil
	}
	resp, err := admin.AlterConsumerGroupOffsets(res.Group, forward, nil)
	if err != nil {
		return fmt.Errorf("commit the group's offsets on the target: %w", err)
	}
	// The call can succeed while partitions were refused: check each.
	res.Committed = map[string]int64{}
	var errs []error
	for topic, ps := range forward {
		for p, o := range ps {
			if kerr := resp.Errors[topic][p]; !errors.Is(kerr, sarama.ErrNoError) {
				errs = append(errs, fmt.Errorf("commit %s-%d on the target: %w", topic, p, kerr))
				continue
			}
			res.Committed[fmt.Sprintf("%s/%d", topic, p)] = o.Offset
		}
	}
	return errors.Join(errs...)
}

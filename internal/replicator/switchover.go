package replicator

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/policy"
	"github.com/kmirror/kmirror/internal/switchover"
)

// SwitchoverSide is the flow's side of a switchover (internal/switchover):
// where its copy stands, read from the running flow, and the clusters'
// answers, through clients of its own (Close ends them).
func (r *Replicator) SwitchoverSide() *SwitchoverSide {
	return &SwitchoverSide{clusterSide: clusterSide{flow: r.flow}, r: r}
}

// SwitchoverSide implements switchover.Side for a running flow.
type SwitchoverSide struct {
	clusterSide
	r *Replicator
}

// clusterSide is what a switchover side asks of a flow's clusters alone,
// whoever copies: the end offsets, the groups, the target's topics.
type clusterSide struct {
	flow     Flow
	mu       sync.Mutex
	src, dst sarama.Client
	srcAdmin sarama.ClusterAdmin
	dstAdmin sarama.ClusterAdmin
}

var (
	_ switchover.Side        = (*SwitchoverSide)(nil)
	_ switchover.GroupFilter = (*clusterSide)(nil)
)

// clients connects to both clusters once.
func (s *clusterSide) clients() error {
	if err := s.targetClients(); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	id := "kmirror-" + s.flow.Task + "-" + s.flow.Name() + "-switchover"
	if s.src == nil {
		c, a, err := adminClient(s.flow.Source.Settings, id)
		if err != nil {
			return fmt.Errorf("source %s: %w", s.flow.Source.Alias, err)
		}
		s.src, s.srcAdmin = c, a
	}
	return nil
}

// targetClients connects to the target alone once: an emergency asks
// nothing of the source.
func (s *clusterSide) targetClients() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	id := "kmirror-" + s.flow.Task + "-" + s.flow.Name() + "-switchover"
	if s.dst == nil {
		c, a, err := adminClient(s.flow.Target.Settings, id)
		if err != nil {
			return fmt.Errorf("target %s: %w", s.flow.Target.Alias, err)
		}
		s.dst, s.dstAdmin = c, a
	}
	return nil
}

// Close ends the side's clients.
func (s *clusterSide) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	var errs []error
	for _, a := range []sarama.ClusterAdmin{s.srcAdmin, s.dstAdmin} {
		if a != nil {
			errs = append(errs, a.Close()) // closes its client too
		}
	}
	s.src, s.dst, s.srcAdmin, s.dstAdmin = nil, nil, nil, nil
	return errors.Join(errs...)
}

// Positions implements switchover.Side: what is durable on the target,
// acknowledged, or for an exactly-once flow committed. Heartbeats topics,
// which the flow copies too, are no consumer's data: left out.
func (s *SwitchoverSide) Positions(context.Context) ([]switchover.Position, error) {
	var out []switchover.Position
	for _, ps := range s.r.state.replicated() {
		if policy.IsHeartbeats(ps.Source) {
			continue // kmirror's and MM2's own, no consumer's data
		}
		p := switchover.Position{Topic: ps.Source, Partition: ps.Partition.Partition, TargetTopic: ps.Target, Next: ps.durableNext(), SeenEnd: ps.hwm.Load()}
		ps.mu.Lock()
		if ps.failed {
			p.Failed = ps.reason
		}
		ps.mu.Unlock()
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Topic != out[j].Topic {
			return out[i].Topic < out[j].Topic
		}
		return out[i].Partition < out[j].Partition
	})
	return out, nil
}

// SourceEnds implements switchover.Side: last stable offsets, what a
// read_committed copy can reach.
func (s *clusterSide) SourceEnds(_ context.Context, ps []switchover.Position) (map[string]int64, error) {
	if err := s.clients(); err != nil {
		return nil, err
	}
	return ends(s.src, ps, onSource, "source")
}

// TargetEnds implements switchover.Side: last stable offsets, past an
// exactly-once copy's markers.
func (s *clusterSide) TargetEnds(_ context.Context, ps []switchover.Position) (map[string]int64, error) {
	if err := s.clients(); err != nil {
		return nil, err
	}
	return ends(s.dst, ps, onTarget, "target")
}

// onSource and onTarget name a position's partition on each side.
func onSource(p switchover.Position) string { return p.Topic }
func onTarget(p switchover.Position) string { return p.TargetTopic }

// ends are the last stable offsets of one side's partitions of ps (topic
// names them there), by Position.Key: one request per leader.
func ends(client sarama.Client, ps []switchover.Position, topic func(switchover.Position) string, side string) (map[string]int64, error) {
	parts := make([]tp, len(ps))
	for i, p := range ps {
		parts[i] = tp{topic(p), p.Partition}
	}
	offs, err := lastStableOffsets(client, parts)
	if err != nil {
		return nil, fmt.Errorf("end offsets on the %s: %w", side, err)
	}
	out := make(map[string]int64, len(ps))
	for i, p := range ps {
		out[p.Key()] = offs[parts[i]]
	}
	return out, nil
}

// Untranslatable implements switchover.GroupFilter: no flow syncs the
// offsets of kmirror's own and tools' groups, on either engine.
func (s *clusterSide) Untranslatable(group string) string { return policy.UnsyncedGroup(group) }

// SourceGroups implements switchover.Side: those whose offsets are synced.
func (s *clusterSide) SourceGroups(context.Context) ([]string, error) {
	if err := s.clients(); err != nil {
		return nil, err
	}
	return userGroups(s.srcAdmin)
}

// ActiveMembers implements switchover.Side, by commitGroup's rule: a group
// in any state but Empty or Dead counts as active.
func (s *clusterSide) ActiveMembers(_ context.Context, group string) (source, target int, err error) {
	if err := s.clients(); err != nil {
		return 0, 0, err
	}
	if source, err = members(s.srcAdmin, group, "source"); err != nil {
		return 0, 0, err
	}
	target, err = members(s.dstAdmin, group, "target")
	return source, target, err
}

// TargetMembers implements switchover.Side.
func (s *clusterSide) TargetMembers(_ context.Context, group string) (int, error) {
	if err := s.targetClients(); err != nil {
		return 0, err
	}
	return members(s.dstAdmin, group, "target")
}

// members counts a group's members on one side.
func members(admin sarama.ClusterAdmin, group, side string) (int, error) {
	descs, err := admin.DescribeConsumerGroups([]string{group})
	if err != nil {
		return 0, fmt.Errorf("describe group %s on the %s: %w", group, side, err)
	}
	n := 0
	for _, d := range descs {
		if !errors.Is(d.Err, sarama.ErrNoError) && !errors.Is(d.Err, sarama.ErrGroupIDNotFound) {
			return 0, fmt.Errorf("describe group %s on the %s: %w", group, side, d.Err)
		}
		n += len(d.Members)
		if len(d.Members) == 0 && rebalancing(d) {
			n++ // rebalancing towards members
		}
	}
	return n, nil
}

// durableNext is the next source offset whose copy is durable on the
// target: acknowledged, or for an exactly-once flow committed.
func (p *partState) durableNext() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.exactlyOnce {
		return p.txnCommitted.offset
	}
	return p.next.Load()
}

// TargetPartitions implements switchover.Side.
func (s *clusterSide) TargetPartitions(_ context.Context, topics []string) (map[string]int, error) {
	if err := s.targetClients(); err != nil {
		return nil, err
	}
	if err := s.dst.RefreshMetadata(topics...); err != nil && !errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
		return nil, fmt.Errorf("read the target's topics: %w", err)
	}
	out := make(map[string]int, len(topics))
	for _, t := range topics {
		parts, err := s.dst.Partitions(t)
		if err != nil && !errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
			return nil, fmt.Errorf("partitions of %s on the target: %w", t, err)
		}
		out[t] = len(parts)
	}
	return out, nil
}

// Translate implements switchover.Side: the checkpointer's sync of the
// group now (checkpoints written, offsets committed only forward and only
// to an empty group), then what the target group holds read back, so the
// report says where its consumers will start.
func (s *SwitchoverSide) Translate(ctx context.Context, group string) (switchover.GroupReport, error) {
	rep := switchover.GroupReport{Group: group, Partitions: []switchover.PartitionReport{}}
	if err := s.clients(); err != nil {
		return rep, err
	}
	results, err := s.r.SyncGroup(ctx, group)
	if err != nil {
		return rep, err
	}
	var tr []PartitionTranslation
	for _, res := range results {
		if res.CommitError != "" {
			return rep, errors.New(res.CommitError)
		}
		rep.Notes = append(rep.Notes, res.Skipped...)
		rep.Notes = append(rep.Notes, res.Notes...)
		tr = append(tr, res.Partitions...)
	}
	moved := map[string]bool{}
	for _, p := range tr {
		moved[fmt.Sprintf("%s-%d", p.Topic, p.Partition)] = true
	}
	var none []string
	for _, ps := range s.r.state.replicated() {
		if policy.IsHeartbeats(ps.Source) {
			continue
		}
		if k := fmt.Sprintf("%s-%d", ps.Source, ps.Partition.Partition); !moved[k] {
			none = append(none, k)
			// Read from the first offset, the target may show records
			// copied twice (at least once) that the source did not.
			ps.mu.Lock()
			again := ps.hist.InflationFromStart()
			if ps.exactlyOnce {
				again = 0
			}
			ps.mu.Unlock()
			rep.Partitions = append(rep.Partitions, switchover.PartitionReport{Topic: ps.Source, Partition: ps.Partition.Partition,
				TargetTopic: ps.Target, SourceOffset: -1, TargetOffset: -1, MayReadAgain: again})
		}
	}
	if len(none) > 0 {
		sort.Strings(none)
		rep.Notes = append(rep.Notes, fmt.Sprintf("no committed offset on the source for %s: not committed (target offset -1); the group's consumers start there on the target as on the source, by their auto.offset.reset",
			strings.Join(none, ", ")))
	}
	return rep, s.readBack(group, tr, &rep)
}

// readBack adds to rep each translated partition as the target group holds
// it after the commit: a group that was already past a translation keeps
// its offset (only forward), and a note says what its consumers skip.
func (s *clusterSide) readBack(group string, tr []PartitionTranslation, rep *switchover.GroupReport) error {
	request := map[string][]int32{}
	for _, p := range tr {
		request[p.TargetTopic] = append(request[p.TargetTopic], p.Partition)
	}
	held, err := s.dstAdmin.ListConsumerGroupOffsets(group, request)
	if err != nil {
		return fmt.Errorf("read group %s's offsets on the target: %w", group, err)
	}
	for _, p := range tr {
		pr := switchover.PartitionReport{Topic: p.Topic, Partition: p.Partition, TargetTopic: p.TargetTopic,
			SourceOffset: p.SourceOffset, TargetOffset: p.TargetOffset, Exact: p.Exact,
			MayReadAgain: p.MayReadAgain, MayBeLost: p.Lost}
		b := held.GetBlock(p.TargetTopic, p.Partition)
		switch {
		case b == nil || b.Offset < 0:
			return fmt.Errorf("group %s holds no offset on %s-%d on the target after the commit", group, p.TargetTopic, p.Partition)
		case b.Offset > p.TargetOffset:
			// Only forward: it stands, and its consumers start past the
			// translation.
			rep.Notes = append(rep.Notes, fmt.Sprintf("%s-%d: the target group was already at %d, past the translation %d: its consumers start there and skip %d records",
				p.TargetTopic, p.Partition, b.Offset, p.TargetOffset, b.Offset-p.TargetOffset))
			pr.TargetOffset, pr.Exact = b.Offset, false
		}
		rep.Partitions = append(rep.Partitions, pr)
	}
	return nil
}

// EmergencyTranslate implements switchover.Side: the group's last
// checkpoints on the target, committed (only forward, only to an empty
// group), nothing asked of the source. Per partition: may be read again,
// the records copied past the checkpoint (the group may have read them on
// the source since) plus how far the checkpoint's translation may be
// behind; may be lost, what the flow last saw on the source past what it
// copied (-1 when it never saw the source's end).
func (s *SwitchoverSide) EmergencyTranslate(_ context.Context, group string) (switchover.GroupReport, error) {
	rep := switchover.GroupReport{Group: group, Partitions: []switchover.PartitionReport{}}
	if err := s.targetClients(); err != nil {
		return rep, err
	}
	last, err := readCheckpoints(s.dst, s.flow.CheckpointsTopic, group)
	if err != nil {
		return rep, err
	}
	res := GroupResult{Group: group, offsets: map[string]map[int32]int64{}}
	var none []string
	for _, ps := range s.r.state.replicated() {
		if policy.IsHeartbeats(ps.Source) {
			continue
		}
		next := ps.durableNext()
		lost := int64(-1)
		if hwm := ps.hwm.Load(); hwm >= 0 && next >= 0 {
			lost = max(0, hwm-next)
		}
		cp, ok := last[tp{ps.Target, ps.Partition.Partition}]
		if !ok {
			// Not committed: the group's consumers start by their
			// auto.offset.reset; from the earliest they read again at
			// most all the target holds there.
			none = append(none, fmt.Sprintf("%s-%d", ps.Source, ps.Partition.Partition))
			end, err := lastStableOffset(s.dst, ps.Target, ps.Partition.Partition)
			if err != nil {
				return rep, fmt.Errorf("end offset of %s-%d on the target: %w", ps.Target, ps.Partition.Partition, err)
			}
			rep.Partitions = append(rep.Partitions, switchover.PartitionReport{Topic: ps.Source, Partition: ps.Partition.Partition, TargetTopic: ps.Target,
				SourceOffset: -1, TargetOffset: -1, MayReadAgain: end, MayBeLost: lost})
			continue
		}
		tr, _, known := ps.explainAt(cp.UpstreamOffset)
		pr := switchover.PartitionReport{Topic: ps.Source, Partition: ps.Partition.Partition, TargetTopic: ps.Target,
			SourceOffset: cp.UpstreamOffset, TargetOffset: cp.DownstreamOffset, MayReadAgain: max(0, next-cp.UpstreamOffset), MayBeLost: lost}
		switch {
		case !known || tr.Downstream != cp.DownstreamOffset || tr.Behind < 0 && !tr.Exact:
			pr.MayReadAgain = -1
		default:
			pr.MayReadAgain += tr.Behind + tr.Inflation
		}
		pr.Exact = known && tr.Exact && pr.MayReadAgain == 0 && pr.MayBeLost == 0
		rep.Partitions = append(rep.Partitions, pr)
		res.commitAt(ps.Target, ps.Partition.Partition, cp.DownstreamOffset)
	}
	return rep, s.commitCheckpoints(&res, none, &rep)
}

// commitCheckpoints ends an emergency translation: the partitions without
// a checkpoint (none) said in a note, the others committed (only forward,
// only to an empty group).
func (s *clusterSide) commitCheckpoints(res *GroupResult, none []string, rep *switchover.GroupReport) error {
	if len(none) > 0 {
		sort.Strings(none)
		rep.Notes = append(rep.Notes, fmt.Sprintf("no checkpoint on the target for %s: not committed (target offset -1); the group's consumers start there by their auto.offset.reset: from the earliest they read again what the target holds, from the latest they skip it",
			strings.Join(none, ", ")))
	}
	if len(res.offsets) == 0 {
		return nil
	}
	return commitGroup(s.dstAdmin, res)
}

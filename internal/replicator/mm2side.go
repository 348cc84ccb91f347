package replicator

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/mm2"
	"github.com/kmirror/kmirror/internal/policy"
	"github.com/kmirror/kmirror/internal/switchover"
	"github.com/kmirror/kmirror/internal/task"
)

// MM2Side is the switchover side of a flow MirrorMaker 2 copies (a task on
// Kafka Connect): its positions come from whoever watches the copy, and
// groups translate by MM2's own checkpoints (the newest of each partition,
// which MM2 writes on its interval), committed only forward and only to an
// empty group, as the embedded engine's failover of MM2 checkpoints does.
type MM2Side struct {
	clusterSide
	positions func() ([]switchover.Position, error)
	// read is the checkpoints and offset syncs as last read: a step
	// translates every group in one pass, and each would read both
	// topics whole again.
	read mm2Read
}

type mm2Read struct {
	at          time.Time
	checkpoints map[string]map[tp]mm2.Checkpoint
	syncs       map[tp][]mm2.OffsetSync
	// forward are, on a way back, the forward flow's offset syncs.
	forward map[tp][]mm2.OffsetSync
}

// mm2ReadFor is how long one read of the checkpoints and offset syncs
// serves the groups of a step.
const mm2ReadFor = 2 * time.Second

// mm2State is the newest checkpoints of every group and MM2's offset syncs
// (syncs only when withSyncs: an emergency cannot count on reaching them;
// on a way back the forward flow's too), read at most every mm2ReadFor.
func (s *MM2Side) mm2State(withSyncs bool) (mm2Read, error) {
	s.mu.Lock()
	r := s.read
	s.mu.Unlock()
	if time.Since(r.at) < mm2ReadFor && (!withSyncs || r.syncs != nil) {
		return r, nil
	}
	cps, err := readGroupCheckpoints(s.dst, s.flow.CheckpointsTopic, func(string) bool { return true })
	if err != nil {
		return r, err
	}
	r = mm2Read{at: time.Now(), checkpoints: cps}
	if withSyncs {
		if r.syncs, err = offsetSyncs(s.flow, s.flow.OffsetSyncs, s.flow.OffsetSyncsTopic); err != nil {
			return r, err
		}
		if fb := s.flow.Failback; fb != nil {
			if r.forward, err = offsetSyncs(s.flow, fb.ForwardSyncs, fb.ForwardOffsetSyncsTopic); err != nil {
				return r, err
			}
		}
	}
	s.mu.Lock()
	s.read = r
	s.mu.Unlock()
	return r, nil
}

var _ switchover.Side = (*MM2Side)(nil)

// NewMM2Side is f's side; positions says where the copy of each source
// partition stands (the next offset durable on the target). MM2 checkpoints
// the groups the embedded engine syncs (its groups.exclude is
// policy.GroupsExclude), so the groups it lists and refuses are
// clusterSide's.
func NewMM2Side(f Flow, positions func() ([]switchover.Position, error)) *MM2Side {
	return &MM2Side{clusterSide: clusterSide{flow: f}, positions: positions}
}

// Positions implements switchover.Side. Heartbeats topics, which MM2
// copies too, are no consumer's data: left out.
func (s *MM2Side) Positions(context.Context) ([]switchover.Position, error) {
	ps, err := s.positions()
	if err != nil {
		return nil, err
	}
	out := ps[:0:0]
	for _, p := range ps {
		if !policy.IsHeartbeats(p.Topic) {
			out = append(out, p)
		}
	}
	return out, nil
}

// Translate implements switchover.Side: once MM2 has checkpointed the
// group at the offsets it holds on the source (it is idle: they do not
// move), those checkpoints are committed on the target. Until then it says
// what it waits for, and the step tries again.
//
// MM2's translation is its last offset sync at or before the group's
// offset, plus one when the sync is older (docs/DESIGN.md): behind by at
// most what was copied since that sync. What bounds it is the next sync's
// downstream offset or the target's end, read here: the report's may-read-
// again. An at-least-once MM2 copy keeps no record of what a restart wrote
// twice, so those duplicates are not counted.
func (s *MM2Side) Translate(ctx context.Context, group string) (switchover.GroupReport, error) {
	rep := switchover.GroupReport{Group: group, Partitions: []switchover.PartitionReport{}}
	if err := s.clients(); err != nil {
		return rep, err
	}
	ps, err := s.Positions(ctx)
	if err != nil {
		return rep, err
	}
	onSource, err := s.srcAdmin.ListConsumerGroupOffsets(group, nil) // nil: every partition it committed
	if err != nil && !errors.Is(err, sarama.ErrGroupIDNotFound) {
		return rep, fmt.Errorf("read group %s's offsets on the source: %w", group, err)
	}
	read, err := s.mm2State(true)
	if err != nil {
		return rep, err
	}
	latest, syncs := read.checkpoints[group], read.syncs
	var leftAt *sarama.OffsetFetchResponse // on a way back, the group's offsets on the target
	if s.flow.Failback != nil {
		if leftAt, err = s.dstAdmin.ListConsumerGroupOffsets(group, nil); err != nil && !errors.Is(err, sarama.ErrGroupIDNotFound) {
			return rep, fmt.Errorf("read group %s's offsets on the target: %w", group, err)
		}
	}
	tends, err := ends(s.dst, ps, onTarget, "target")
	if err != nil {
		return rep, err
	}
	res := GroupResult{Group: group, offsets: map[string]map[int32]int64{}}
	var tr []PartitionTranslation
	var waiting, none, kept []string
	for _, p := range ps {
		var b *sarama.OffsetFetchResponseBlock
		if onSource != nil {
			b = onSource.GetBlock(p.Topic, p.Partition)
		}
		if b == nil || b.Offset < 0 {
			// Nothing read on the source: nothing to read again (but
			// what a restart of MM2 wrote twice, see the note below).
			none = append(none, fmt.Sprintf("%s-%d", p.Topic, p.Partition))
			rep.Partitions = append(rep.Partitions, switchover.PartitionReport{Topic: p.Topic, Partition: p.Partition,
				TargetTopic: p.TargetTopic, SourceOffset: -1, TargetOffset: -1})
			continue
		}
		// A way back: a group at or before the switchover's point is inside
		// what the forward flow copied, where the way back's own checkpoints
		// say nothing.
		if pt, ok := s.flow.Failback.pointAt(p.TargetTopic, p.Partition); ok && b.Offset <= pt.TargetEnd {
			t, synced, err := s.backInsideForward(p, b.Offset, pt, read.forward[tp{p.TargetTopic, p.Partition}], leftAt)
			if err != nil {
				return rep, err
			}
			if !synced {
				kept = append(kept, fmt.Sprintf("%s-%d", p.Topic, p.Partition))
			}
			tr = append(tr, t)
			res.commitAt(p.TargetTopic, p.Partition, t.TargetOffset)
			continue
		}
		cp, ok := latest[tp{p.TargetTopic, p.Partition}]
		if !ok || cp.UpstreamOffset != b.Offset {
			have := "none"
			if ok {
				have = fmt.Sprint(cp.UpstreamOffset)
			}
			waiting = append(waiting, fmt.Sprintf("%s-%d at %d (checkpointed: %s)", p.Topic, p.Partition, b.Offset, have))
			continue
		}
		bound := tends[p.Key()]
		for _, sy := range syncs[tp{p.Topic, p.Partition}] {
			if sy.UpstreamOffset > cp.UpstreamOffset {
				bound = min(bound, sy.DownstreamOffset)
				break
			}
		}
		again := max(0, bound-cp.DownstreamOffset)
		tr = append(tr, PartitionTranslation{Topic: p.Topic, Partition: p.Partition, TargetTopic: p.TargetTopic,
			SourceOffset: cp.UpstreamOffset, TargetOffset: cp.DownstreamOffset, Exact: again == 0, MayReadAgain: again})
		res.commitAt(p.TargetTopic, p.Partition, cp.DownstreamOffset)
	}
	if len(waiting) > 0 {
		return rep, fmt.Errorf("waiting for MirrorMaker 2 to checkpoint group %s where it stands on the source (it does every emit.checkpoints.interval.seconds once the records are copied): %s",
			group, strings.Join(waiting, ", "))
	}
	if len(none) > 0 {
		sort.Strings(none)
		rep.Notes = append(rep.Notes, fmt.Sprintf("no committed offset on the source for %s: not committed (target offset -1); the group's consumers start there on the target as on the source, by their auto.offset.reset",
			strings.Join(none, ", ")))
	}
	if len(kept) > 0 {
		rep.Notes = append(rep.Notes, fmt.Sprintf("no offset sync of the forward copy is left at or before the group's position on %s (MirrorMaker 2's offset-syncs topic is compacted): not translated; the group goes on from its offset on the target when it left (at or before where it stands), or from the partition's first record where it had none",
			strings.Join(kept, ", ")))
	}
	if !s.flow.ExactlyOnce {
		rep.Notes = append(rep.Notes, "copied at least once by MirrorMaker 2: records a restart of it wrote twice are not counted in may-read-again (it keeps no record of them)")
	}
	if len(res.offsets) > 0 {
		if err := commitGroup(s.dstAdmin, &res); err != nil {
			return rep, err
		}
	}
	return rep, s.readBack(group, tr, &rep)
}

// backInsideForward translates a group at offset d of a way back's source
// partition p, at or before the switchover's point pt, through the forward
// flow's offset syncs inverted (backThroughForwardSyncs). Where the group
// stood on the target when it left (leftAt; it has only moved on since, on
// the other side) is at or before where it stands, and commits only go
// forward: the further of the two is what it goes on from. With no sync to
// translate by (synced false), that offset, or with none the partition's
// first record: it reads again, where a consumer's auto.offset.reset could
// skip.
func (s *MM2Side) backInsideForward(p switchover.Position, d int64, pt task.SwitchPoint, syncs []mm2.OffsetSync, leftAt *sarama.OffsetFetchResponse) (PartitionTranslation, bool, error) {
	off, again, synced := backThroughForwardSyncs(syncs, d, pt)
	left := int64(-1)
	if leftAt != nil {
		if lb := leftAt.GetBlock(p.TargetTopic, p.Partition); lb != nil && lb.Offset <= pt.SourceEnd {
			left = lb.Offset
		}
	}
	switch {
	case !synced && left < 0:
		first, err := s.dst.GetOffset(p.TargetTopic, p.Partition, sarama.OffsetOldest)
		if err != nil {
			return PartitionTranslation{}, false, fmt.Errorf("the first offset of %s-%d on the target: %w", p.TargetTopic, p.Partition, err)
		}
		off, again = first, max(0, pt.SourceEnd-first)
	case !synced:
		off, again = left, max(0, pt.SourceEnd-left)
	case left > off:
		off, again = left, max(0, again-(left-off))
	}
	return PartitionTranslation{Topic: p.Topic, Partition: p.Partition, TargetTopic: p.TargetTopic,
		SourceOffset: d, TargetOffset: off, Exact: again == 0, MayReadAgain: again}, synced, nil
}

// offsetSyncs are MM2's offset syncs in topic on the cluster at, per source
// partition in the order written (upstream offsets only grow but after a
// rewind).
func offsetSyncs(f Flow, at cluster.Settings, topic string) (map[tp][]mm2.OffsetSync, error) {
	client, admin, err := adminClient(at, "kmirror-"+f.Task+"-"+f.Name()+"-switchover-syncs")
	if err != nil {
		return nil, fmt.Errorf("the offset syncs' cluster: %w", err)
	}
	defer admin.Close() // closes client too
	out := map[tp][]mm2.OffsetSync{}
	err = readTopic(client, topic, func(m *sarama.ConsumerMessage) {
		if sy, err := mm2.DecodeOffsetSync(m.Key, m.Value); err == nil {
			k := tp{sy.Topic, sy.Partition}
			out[k] = append(out[k], sy)
		}
	})
	if err != nil {
		return nil, fmt.Errorf("read MirrorMaker 2's offset syncs %s: %w", topic, err)
	}
	return out, nil
}

// backThroughForwardSyncs is where a group at offset d of a way back's
// source (the forward flow's target) goes on at the way back's target (the
// forward flow's source), when d is at or before the switchover's point:
// the forward flow's MM2 offset syncs inverted. The point itself is the
// forward source's end then. Otherwise the newest sync at or before d: its
// upstream offset when it stands at d, the next one when it is older (the
// group read that record's copy); again bounds how far that is behind: the
// upstream offset of the first sync past d, or the point. ok is false when
// no sync stands at or before d (MM2's topic is compacted: old syncs go):
// nothing is translated then.
func backThroughForwardSyncs(syncs []mm2.OffsetSync, d int64, pt task.SwitchPoint) (offset, again int64, ok bool) {
	if d == pt.TargetEnd {
		return pt.SourceEnd, 0, true
	}
	var best *mm2.OffsetSync
	bound := pt.SourceEnd
	for i := range syncs {
		sy := &syncs[i]
		if sy.DownstreamOffset > d {
			bound = min(bound, sy.UpstreamOffset)
			continue
		}
		// The newest copy at or before d; of two at the same place (a
		// re-copy), the earlier record.
		if best == nil || sy.DownstreamOffset > best.DownstreamOffset ||
			sy.DownstreamOffset == best.DownstreamOffset && sy.UpstreamOffset < best.UpstreamOffset {
			best = sy
		}
	}
	if best == nil {
		return 0, 0, false
	}
	if best.DownstreamOffset == d {
		return best.UpstreamOffset, 0, true
	}
	offset = best.UpstreamOffset + 1
	return offset, max(0, bound-offset), true
}

// EmergencyTranslate implements switchover.Side: the group's newest
// checkpoints on the target, committed, nothing asked of the source. Per
// partition: may be read again, what was copied past the checkpoint (the
// group may have read it on the source since) plus how far MM2's
// translation may be behind, bounded by the target's end (MM2's offset
// syncs may live on the source, which is gone); may be lost, the source's
// end past the copy when last seen (-1 when never seen).
func (s *MM2Side) EmergencyTranslate(ctx context.Context, group string) (switchover.GroupReport, error) {
	rep := switchover.GroupReport{Group: group, Partitions: []switchover.PartitionReport{}}
	if err := s.targetClients(); err != nil {
		return rep, err
	}
	ps, err := s.Positions(ctx)
	if err != nil {
		return rep, err
	}
	read, err := s.mm2State(false)
	if err != nil {
		return rep, err
	}
	latest := read.checkpoints[group]
	tends, err := ends(s.dst, ps, onTarget, "target")
	if err != nil {
		return rep, err
	}
	res := GroupResult{Group: group, offsets: map[string]map[int32]int64{}}
	var none []string
	for _, p := range ps {
		end := tends[p.Key()]
		lost := int64(-1)
		if p.SeenEnd >= 0 && p.Next >= 0 {
			lost = max(0, p.SeenEnd-p.Next)
		}
		cp, ok := latest[tp{p.TargetTopic, p.Partition}]
		if !ok {
			none = append(none, fmt.Sprintf("%s-%d", p.Topic, p.Partition))
			rep.Partitions = append(rep.Partitions, switchover.PartitionReport{Topic: p.Topic, Partition: p.Partition, TargetTopic: p.TargetTopic,
				SourceOffset: -1, TargetOffset: -1, MayReadAgain: end, MayBeLost: lost})
			continue
		}
		again := max(0, end-cp.DownstreamOffset)
		rep.Partitions = append(rep.Partitions, switchover.PartitionReport{Topic: p.Topic, Partition: p.Partition, TargetTopic: p.TargetTopic,
			SourceOffset: cp.UpstreamOffset, TargetOffset: cp.DownstreamOffset, Exact: again == 0 && lost == 0, MayReadAgain: again, MayBeLost: lost})
		res.commitAt(p.TargetTopic, p.Partition, cp.DownstreamOffset)
	}
	return rep, s.commitCheckpoints(&res, none, &rep)
}

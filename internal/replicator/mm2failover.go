package replicator

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/mm2"
)

// FailoverFromCheckpoints fails one consumer group over for a flow whose
// checkpoints another process writes: MirrorMaker 2's
// MirrorCheckpointConnector, for a task on Kafka Connect. The group's newest
// checkpoint per partition is read from the flow's checkpoints topic on the
// target (MM2 translated it from its offset syncs: never ahead of what was
// copied) and committed to the group there by the rule every failover
// follows (commitGroup: only to a group with no active members on the
// target, only forward).
//
// MM2 writes checkpoints on an interval, so a checkpoint can stand for an
// older position than the group's offset on the source: that partition's
// note says so (its consumers read a few records again; none is skipped).
// A partition the group committed on the source with no checkpoint yet is
// in Skipped.
func FailoverFromCheckpoints(ctx context.Context, f Flow, group string) (GroupResult, error) {
	res := GroupResult{Group: group, offsets: map[string]map[int32]int64{}}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	id := "kmirror-" + f.Task + "-failover"
	dst, dstAdmin, err := adminClient(f.Target.Settings, id)
	if err != nil {
		return res, fmt.Errorf("target %s: %w", f.Target.Alias, err)
	}
	defer dstAdmin.Close() // closes dst too
	latest, err := readCheckpoints(dst, f.CheckpointsTopic, group)
	if err != nil {
		return res, err
	}
	_, srcAdmin, err := adminClient(f.Source.Settings, id)
	if err != nil {
		return res, fmt.Errorf("source %s: %w", f.Source.Alias, err)
	}
	defer srcAdmin.Close()
	onSource, err := srcAdmin.ListConsumerGroupOffsets(group, nil) // nil: every partition it committed
	if err != nil && !errors.Is(err, sarama.ErrGroupIDNotFound) {
		return res, fmt.Errorf("read the offsets of group %s on the source %s: %w", group, f.Source.Alias, err)
	}
	if onSource != nil {
		for topic, parts := range onSource.Blocks {
			if !f.Policy.Selected(topic) {
				continue
			}
			target := f.Policy.TargetTopic(topic)
			for p, b := range parts {
				if !errors.Is(b.Err, sarama.ErrNoError) || b.Offset < 0 {
					continue
				}
				cp, ok := latest[tp{target, p}]
				switch {
				case !ok:
					res.Skipped = append(res.Skipped, fmt.Sprintf("%s-%d: no checkpoint yet (the group is at %d on the source): MirrorMaker 2 writes one within emit.checkpoints.interval.seconds once the partition's records are copied; fail over again then", target, p, b.Offset))
				case cp.UpstreamOffset < b.Offset:
					res.Notes = append(res.Notes, fmt.Sprintf("%s-%d: the newest checkpoint is for offset %d on the source, the group is at %d there: its consumers read at least %d records again (MirrorMaker 2 writes checkpoints every emit.checkpoints.interval.seconds: stop them, wait that long and fail over again to read fewer)", target, p, cp.UpstreamOffset, b.Offset, b.Offset-cp.UpstreamOffset))
				}
			}
		}
	}
	keys := make([]tp, 0, len(latest))
	for k := range latest {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].topic != keys[j].topic {
			return keys[i].topic < keys[j].topic
		}
		return keys[i].partition < keys[j].partition
	})
	for _, k := range keys {
		cp := latest[k]
		res.Checkpoints = append(res.Checkpoints, cp)
		res.commitAt(cp.Topic, cp.Partition, cp.DownstreamOffset)
	}
	sort.Strings(res.Skipped)
	sort.Strings(res.Notes)
	if len(res.Checkpoints) == 0 {
		return res, nil
	}
	if err := commitGroup(dstAdmin, &res); err != nil {
		res.Skipped = append(res.Skipped, err.Error())
	}
	return res, nil
}

type tp struct {
	topic     string
	partition int32
}

// readCheckpoints is group's newest checkpoint per target partition in the
// checkpoints topic: the last one written (MM2 never writes one that moves
// the group backwards but after a rewind on the source, which the last
// one then reflects).
func readCheckpoints(client sarama.Client, topic, group string) (map[tp]mm2.Checkpoint, error) {
	all, err := readGroupCheckpoints(client, topic, func(g string) bool { return g == group })
	return all[group], err
}

// readGroupCheckpoints is readCheckpoints of every group want takes, by
// group, in one read of the topic.
func readGroupCheckpoints(client sarama.Client, topic string, want func(group string) bool) (map[string]map[tp]mm2.Checkpoint, error) {
	latest := map[string]map[tp]mm2.Checkpoint{}
	err := readTopic(client, topic, func(m *sarama.ConsumerMessage) {
		if cp, err := mm2.DecodeCheckpoint(m.Key, m.Value); err == nil && want(cp.Group) {
			if latest[cp.Group] == nil {
				latest[cp.Group] = map[tp]mm2.Checkpoint{}
			}
			latest[cp.Group][tp{cp.Topic, cp.Partition}] = cp
		}
	})
	if errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
		return nil, fmt.Errorf("no checkpoints topic %s on the target yet: the flow's consumer-offset sync (MirrorMaker 2's checkpoint connector on Kafka Connect) creates it when it starts; try again in a moment", topic)
	}
	if err != nil {
		return nil, fmt.Errorf("read checkpoints %s on the target: %w", topic, err)
	}
	return latest, nil
}

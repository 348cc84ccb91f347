package replicator

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/task"
)

// ReadProgress is the stored progress of a stopped flow of task taskName,
// for another engine to continue from: per source partition the further of
// the flow's group on the source and its progress log on the target, as a
// start would load it.
func ReadProgress(taskName string, f task.FlowSpec, source, target cluster.Settings) ([]task.Position, error) {
	next := map[Partition]int64{}
	_, admin, err := adminClient(source, "kmirror-handover")
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	// nil partitions: every partition the group committed.
	resp, err := admin.ListConsumerGroupOffsets(f.Group, nil)
	switch {
	case errors.Is(err, sarama.ErrGroupIDNotFound):
	case err != nil:
		return nil, fmt.Errorf("read progress of group %s: %w", f.Group, err)
	default:
		for topic, parts := range resp.Blocks {
			for p, b := range parts {
				if errors.Is(b.Err, sarama.ErrNoError) && b.Offset >= 0 {
					next[Partition{Source: topic, Partition: p}] = b.Offset
				}
			}
		}
	}
	dst, dstAdmin, err := adminClient(target, "kmirror-handover")
	if err != nil {
		return nil, err
	}
	defer dstAdmin.Close()
	err = readTopic(dst, f.ProgressTopic, func(m *sarama.ConsumerMessage) {
		k, v, ok := decodeProgress(m)
		if !ok || v == nil || k.Task != taskName || k.Flow != f.Name() || k.Partition < 0 {
			return
		}
		pt := Partition{Source: k.Topic, Partition: k.Partition}
		if v.Next > next[pt] {
			next[pt] = v.Next
		}
	})
	if err != nil && !errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
		return nil, fmt.Errorf("read progress from %s on the target: %w", f.ProgressTopic, err)
	}
	out := make([]task.Position, 0, len(next))
	for pt, n := range next {
		out = append(out, task.Position{Topic: pt.Source, Partition: pt.Partition, Next: n})
	}
	sort.Slice(out, func(i, j int) bool {
		return out[i].Topic < out[j].Topic || out[i].Topic == out[j].Topic && out[i].Partition < out[j].Partition
	})
	return out, nil
}

// WriteProgress stores positions as the progress of flow f of task
// taskName, in its group and its progress log, so the flow starts from
// them. The flow must not run. The target positions are unknown, so
// records copied again are not counted as such.
func WriteProgress(taskName string, f task.FlowSpec, source, target cluster.Settings, rf int16, ps []task.Position) error {
	if len(ps) == 0 {
		return nil
	}
	src, srcAdmin, err := adminClient(source, "kmirror-handover")
	if err != nil {
		return err
	}
	defer srcAdmin.Close()
	req := sarama.NewOffsetCommitRequest(src.Config(), f.Group)
	for _, p := range ps {
		req.AddBlock(p.Topic, p.Partition, p.Next, 0, "")
	}
	if err := commitRetrying(src, f.Group, req); err != nil {
		return err
	}

	dst, admin, err := adminClient(target, "kmirror-handover")
	if err != nil {
		return err
	}
	defer admin.Close()
	if _, err := ensureInternalTopic(dst, admin, f.ProgressTopic, rf, progressTopicConfig); err != nil {
		return fmt.Errorf("progress topic %s on the target: %w", f.ProgressTopic, err)
	}
	prod, err := sarama.NewSyncProducerFromClient(dst)
	if err != nil {
		return err
	}
	defer prod.Close()
	msgs := make([]*sarama.ProducerMessage, 0, len(ps))
	for _, p := range ps {
		msgs = append(msgs, progressRecord(f.ProgressTopic, progressKey{taskName, f.Name(), p.Topic, p.Partition}, progressValue{Next: p.Next, Down: -1}))
	}
	if err := prod.SendMessages(msgs); err != nil {
		return fmt.Errorf("write progress to %s on the target: %w", f.ProgressTopic, err)
	}
	return nil
}

// commitRetrying commits req to group's coordinator, asking again while
// the coordinator is loading or moving (a new group on a busy broker
// answers so for a while).
func commitRetrying(c sarama.Client, group string, req *sarama.OffsetCommitRequest) error {
	return whileCoordinatorBusy(context.Background(), 500*time.Millisecond, func() error {
		err := commitOnce(c, group, req)
		if coordinatorBusy(err) {
			_ = c.RefreshCoordinator(group)
		}
		return err
	})
}

func commitOnce(c sarama.Client, group string, req *sarama.OffsetCommitRequest) error {
	coordinator, err := c.Coordinator(group)
	if err != nil {
		return fmt.Errorf("find coordinator of group %s: %w", group, err)
	}
	resp, err := coordinator.CommitOffset(req)
	if err != nil {
		return fmt.Errorf("commit progress of group %s: %w", group, err)
	}
	for topic, parts := range resp.Errors {
		for p, kerr := range parts {
			if !errors.Is(kerr, sarama.ErrNoError) {
				return fmt.Errorf("commit progress of %s-%d to group %s: %w", topic, p, group, kerr)
			}
		}
	}
	return nil
}

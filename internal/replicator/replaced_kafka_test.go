package replicator

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/e2e"
	"github.com/kmirror/kmirror/internal/kafkatest"
	"github.com/kmirror/kmirror/internal/task"
)

// The scenario on real Kafka, with consumer-offset sync: 3,000
// records copied, groups synced to the target, the source's first 1,000
// records gone (retention), the target topic deleted, 500 more produced.
// The new target topic holds every record the source still has, once, in
// order; the status counted 3,000 lost on the target and 1,000 expired on
// the source; and groups behind, at and past the deletion point are
// translated into the new topic without skipping a record it holds.
func TestTargetTopicDeletedUnderTheCopyIsMadeWholeAndTranslatedWithin(t *testing.T) {
	k1, k2 := kafkatest.Shared(t, 0), kafkatest.Shared(t, 1)
	src, dst := k1.Settings(cluster.Plaintext, ""), k2.Settings(cluster.Plaintext, "")
	topic := kafkatest.NewTopic(t, k1, 1, nil)
	keyed := func(from, n int) []*sarama.ProducerMessage {
		var msgs []*sarama.ProducerMessage
		for i := from; i < from+n; i++ {
			msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Partition: 0, Key: sarama.StringEncoder(fmt.Sprintf("k%d", i)), Value: sarama.StringEncoder("v")})
		}
		return msgs
	}
	produce(t, src, keyed(0, 3000)...)
	tk := newTask("replaced", task.DirectionPush, []string{topic})
	tk.Rules.Tasks = 1
	tk.Rules.SyncConsumerOffsets = true
	flows, err := FlowsOf(tk, src, dst)
	if err != nil {
		t.Fatal(err)
	}
	r := New(flows[0], Options{RefreshInterval: time.Second, CommitInterval: 100 * time.Millisecond, CheckpointInterval: time.Hour}, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(runCtx) }()
	defer func() { stop(); <-done }()
	waitFor(t, func() error {
		if st := dataOnly(r.Status()); st.Records != 3000 || st.LagRecords != 0 {
			return fmt.Errorf("records %d lag %d", st.Records, st.LagRecords)
		}
		return nil
	})
	// Groups synced to the old target topic first: their checkpoints
	// name its offsets.
	const behind, atEnd = "behind-" + "g", "at-end-g"
	commitOnSource(t, k1, behind+topic, topic, map[int32]int64{0: 1200})
	commitOnSource(t, k1, atEnd+topic, topic, map[int32]int64{0: 3000})
	for _, g := range []string{behind + topic, atEnd + topic} {
		if _, err := r.SyncGroup(ctx, g); err != nil {
			t.Fatal(err)
		}
	}

	// The source's first 1,000 records go (retention, as DeleteRecords
	// does it); the target topic is deleted by mistake; 500 more come.
	if err := mustAdmin(t, k1).DeleteRecords(topic, map[int32]int64{0: 1000}); err != nil {
		t.Fatal(err)
	}
	if err := mustAdmin(t, k2).DeleteTopic(topic); err != nil {
		t.Fatal(err)
	}
	produce(t, src, keyed(3000, 500)...)
	waitFor(t, func() error {
		st := dataOnly(r.Status())
		n, err := e2e.Count(ctx, dst, topic)
		if err != nil || n != 2500 || st.State != task.StateRunning || st.LostOnTarget != 3000 || st.ExpiredOnSource != 1000 || st.TargetTopicsReplaced != 1 {
			return fmt.Errorf("target holds %d (%v); %s (%s), lost %d, expired %d, replaced %d", n, err, st.State, st.Reason,
				st.LostOnTarget, st.ExpiredOnSource, st.TargetTopicsReplaced)
		}
		return nil
	})
	// Record by record: the source's 1000..3499 at 0..2499.
	for i, m := range readAll(t, dst, topic, 0, 2500) {
		if want := fmt.Sprintf("k%d", 1000+i); string(m.Key) != want || m.Offset != int64(i) {
			t.Fatalf("new target topic offset %d: key %q, want %s", m.Offset, m.Key, want)
		}
	}
	// Groups behind the new start, behind the copy's old end, at it, and
	// past the deletion point; each must read on from the first record it
	// has not read that the new topic holds.
	const past = "past-g"
	commitOnSource(t, k1, past+topic, topic, map[int32]int64{0: 3300})
	commitOnSource(t, k1, "gone-g"+topic, topic, map[int32]int64{0: 500})
	for g, want := range map[string]int64{behind + topic: 200, atEnd + topic: 2000, past + topic: 2300, "gone-g" + topic: 0} {
		waitFor(t, func() error {
			res, err := r.SyncGroup(ctx, g)
			if err != nil || len(res) == 0 {
				return fmt.Errorf("%s: sync %+v, %v", g, res, err)
			}
			if got := targetGroupOffset(t, k2, g, topic, 0); got != want {
				return fmt.Errorf("%s: translated to %d on the new target topic, want %d (checkpoints %+v, skipped %v)", g, got, want, res[0].Checkpoints, res[0].Skipped)
			}
			return nil
		})
	}
}

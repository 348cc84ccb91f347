package replicator

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/task"
)

// targetTotal sums the end offsets of a topic's partitions on s.
func targetTotal(t *testing.T, s cluster.Settings, topic string, partitions int32) int64 {
	t.Helper()
	c, _ := admin(t, s)
	var n int64
	for p := int32(0); p < partitions; p++ {
		end, err := c.GetOffset(topic, p, sarama.OffsetNewest)
		if err != nil {
			return -1
		}
		n += end
	}
	return n
}

func produceKeys(t *testing.T, s cluster.Settings, topic string, partitions int32, from, n int) {
	t.Helper()
	var msgs []*sarama.ProducerMessage
	for i := from; i < from+n; i++ {
		msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Partition: int32(i) % partitions,
			Key: sarama.StringEncoder(fmt.Sprintf("k%d", i)), Value: sarama.StringEncoder("v")})
	}
	produce(t, s, msgs...)
}

// The flow's consumer group expires on the broker while the task is
// stopped (offsets.retention.minutes): the restart continues from the
// progress topic on the target and copies nothing twice.
func TestProgressOutlivesAnExpiredGroup(t *testing.T) {
	a, b := startFakes(t)
	createTopic(t, a, "orders", 2)
	produceKeys(t, a, "orders", 2, 0, 100)
	f := pushFlow(t, a, b, task.Rules{Direction: task.DirectionPush, Topics: []string{"orders"}, Tasks: 2,
		ReplicationFactor: 1, StartOffset: task.StartEarliest})

	run := func() (*Replicator, func()) {
		r := New(f, Options{RefreshInterval: 500 * time.Millisecond, CommitInterval: 100 * time.Millisecond}, nil)
		ctx, cancel := context.WithCancel(context.Background())
		var wg sync.WaitGroup
		wg.Go(func() { r.Run(ctx) })
		return r, func() { cancel(); wg.Wait() }
	}
	caughtUp := func(r *Replicator, want int64) {
		t.Helper()
		waitFor(t, func() error {
			st := r.Status()
			var next int64
			for _, p := range st.Partitions {
				next += p.NextOffset
			}
			if next != want || st.LagRecords != 0 {
				return fmt.Errorf("progress %d of %d, lag %d (%s)", next, want, st.LagRecords, st.LastError)
			}
			return nil
		})
	}
	r, stop := run()
	caughtUp(r, 100)
	stop()

	// What offsets.retention.minutes does to a group with no members.
	_, srcAdmin := admin(t, a)
	if err := srcAdmin.DeleteConsumerGroup(f.Group()); err != nil {
		t.Fatalf("delete group %s: %v", f.Group(), err)
	}
	produceKeys(t, a, "orders", 2, 100, 50)
	r, stop = run()
	defer stop()
	caughtUp(r, 150)
	if got := targetTotal(t, b, "orders", 2); got != 150 {
		t.Fatalf("target holds %d records after the restart, want 150 (%d copied twice)", got, got-150)
	}
	if st := r.Status(); st.Recopied != 0 {
		t.Fatalf("restart reports %d records copied again", st.Recopied)
	}
}

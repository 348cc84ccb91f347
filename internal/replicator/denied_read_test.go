package replicator

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/engine"
	"github.com/kmirror/kmirror/internal/task"
)

// A source partition kmirror may no longer read (its READ right taken away
// while the task runs) stops only itself, and says so: the flow shows
// DEGRADED naming the partition and the right, the other partition copies
// on, nothing restarts; once the right is back it catches up, nothing lost
// or copied twice. Before, the partition stalled silently under RUNNING.
func TestSourcePartitionDeniedMidRunWaitsAloneAndSaysWhy(t *testing.T) {
	const n, more = 300, 100
	cs, a, b := startFaultyPair(t, n)
	f := pushFlow(t, a, b, task.Rules{Direction: task.DirectionPush, Topics: []string{"orders"}, Tasks: 1,
		RenameTopics: true, ReplicationFactor: 1, StartOffset: "earliest", Compression: "none"})
	r := New(f, Options{RefreshInterval: 500 * time.Millisecond, CommitInterval: 100 * time.Millisecond, DegradedAfter: time.Second}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = r.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()
	next := func(st engine.FlowStatus, p int32) int64 {
		for _, ps := range st.Partitions {
			if ps.Partition == p {
				return ps.NextOffset
			}
		}
		return -1
	}
	waitFor(t, func() error {
		if st := r.Status(); next(st, 0) != n || next(st, 1) != n {
			return fmt.Errorf("copied %d and %d of %d", next(st, 0), next(st, 1), n)
		}
		return nil
	})

	denied := cs[0].Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch}, Topic: "orders", Partitions: []int32{0},
		Err: kerr.TopicAuthorizationFailed, Count: -1})
	var msgs []*sarama.ProducerMessage
	for p := int32(0); p < 2; p++ {
		for i := n; i < n+more; i++ {
			msgs = append(msgs, &sarama.ProducerMessage{Topic: "orders", Partition: p, Key: sarama.StringEncoder(fmt.Sprintf("k%d-%d", p, i))})
		}
	}
	produce(t, a, msgs...)
	var st engine.FlowStatus
	waitFor(t, func() error {
		st = r.Status()
		if next(st, 1) != n+more || st.State != task.StateDegraded || !strings.Contains(st.Reason, "orders-0") || !strings.Contains(st.Reason, "READ") {
			return fmt.Errorf("partition 1 at %d; state %s (%s); last error %q", next(st, 1), st.State, st.Reason, st.LastError)
		}
		return nil
	})
	t.Logf("with orders-0 denied: %s: %s", st.State, st.Reason)
	checkExactCopy(t, b, 1, n+more)

	denied.Remove() // the operator grants READ again
	waitFor(t, func() error {
		if st := r.Status(); st.Records != 2*(n+more) || st.LagRecords != 0 || st.State != task.StateRunning {
			return fmt.Errorf("status %s records=%d lag=%d reason=%q", st.State, st.Records, st.LagRecords, st.Reason)
		}
		return nil
	})
	checkExactCopy(t, b, 0, n+more)
	if st := r.Status(); st.Restarts != 0 || st.Recopied != 0 {
		t.Fatalf("flow restarted %d times, %d records copied again: the denied partition should have waited alone", st.Restarts, st.Recopied)
	}

	// Denied while idle, then allowed with nothing new to read: the
	// partition counts as readable again once no refusal comes.
	denied = cs[0].Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch}, Topic: "orders", Partitions: []int32{0},
		Err: kerr.TopicAuthorizationFailed, Count: -1})
	waitForLong(t, 2*time.Minute, func() error { // a built-in timer takes about 11 s of it
		if st := r.Status(); st.State != task.StateDegraded || !strings.Contains(st.Reason, "READ") {
			return fmt.Errorf("idle and denied: state %s (%s)", st.State, st.Reason)
		}
		return nil
	})
	denied.Remove()
	waitFor(t, func() error {
		if st := r.Status(); st.State != task.StateRunning {
			return fmt.Errorf("idle and allowed again: state %s (%s)", st.State, st.Reason)
		}
		return nil
	})
}

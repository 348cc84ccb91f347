package replicator

import (
	"context"
	"fmt"
	"syscall"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/e2e"
	"github.com/kmirror/kmirror/internal/kafkatest"
	"github.com/kmirror/kmirror/internal/task"
)

// exactlyOnce is tk with exactly-once delivery.
func exactlyOnce(tk task.Task) task.Task {
	tk.Rules.Delivery = task.DeliveryExactlyOnce
	return tk
}

// committedRecords sums the flow's stored progress over topic's partitions.
func committedRecords(t *testing.T, tk task.Task, current, peer cluster.Settings, topic string) int64 {
	t.Helper()
	ps, err := ReadProgress(tk.Name, tk.Flows()[0], current, peer)
	if err != nil {
		t.Fatal(err)
	}
	var n int64
	for _, p := range ps {
		if p.Topic == topic {
			n += p.Next
		}
	}
	return n
}

// verifyExactlyOnce checks that the target holds every source record
// exactly once, in order, as read_committed consumers see it, and returns
// how many aborted copies a read_uncommitted reader sees besides.
func verifyExactlyOnce(t *testing.T, src cluster.Settings, dst cluster.Settings, topic string, total int64) (aborted int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	waitForLong(t, 2*time.Minute, func() error {
		rep, err := e2e.Verify(ctx, src, topic, dst, topic, e2e.VerifyOptions{AllowDuplicates: true, Idle: time.Second})
		if err != nil {
			return err
		}
		if rep.Replicated < int(total) {
			return fmt.Errorf("read_committed: %d of %d records on the target", rep.Replicated, total)
		}
		return nil
	})
	rep, err := e2e.Verify(ctx, src, topic, dst, topic, e2e.VerifyOptions{Idle: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Replicated != int(total) {
		t.Fatalf("read_committed: the copy is not exactly once: %s\n%v", rep.String(), rep.Problems)
	}
	all, err := e2e.Verify(ctx, src, topic, dst, topic, e2e.VerifyOptions{Idle: time.Second, ReadUncommitted: true, AllowDuplicates: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("read_committed: %s; read_uncommitted: %d aborted copies", rep.String(), all.Duplicated)
	return all.Duplicated
}

// A kmirror killed with SIGKILL mid-stream, with transactions open, then
// started again: read_committed readers of the target see every source
// record exactly once and in order; the aborted transaction's records are
// there for a read_uncommitted reader only (the kill landed mid-transaction).
func TestExactlyOnceKilledMidStreamCopiesNothingTwice(t *testing.T) {
	k1, k2 := kafkatest.Shared(t, 0), kafkatest.Shared(t, 1)
	current := k1.Settings(cluster.Plaintext, "")
	peer := k2.Settings(cluster.SASLSSL, cluster.MechanismSCRAMSHA512)
	topic := kafkatest.NewTopic(t, k1, 4, nil)
	tk := exactlyOnce(newTask("eos-crash", task.DirectionPush, []string{topic}))
	const total = 30000
	killed := make(chan struct{})
	produced := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		defer cancel()
		acked, _, last := stream(ctx, current, topic, 4, total, killed)
		if acked < total {
			produced <- fmt.Errorf("produced %d of %d records: %w", acked, total, last)
			return
		}
		produced <- nil
	}()
	first := startChild(t, childSpec{Task: tk, Current: current, Peer: peer})
	waitForLong(t, 2*time.Minute, func() error {
		if n := committedRecords(t, tk, current, peer, topic); n < 5000 {
			return fmt.Errorf("progress committed for %d records, want 5000", n)
		}
		return nil
	})
	// Not right after the commit the poll saw: the stream goes on, so the
	// kill lands inside the next transaction.
	time.Sleep(600 * time.Millisecond)
	err := first.Process.Signal(syscall.SIGKILL)
	close(killed)
	if err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	{
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		atKill, _ := e2e.Count(ctx, peer, topic)
		cancel()
		t.Logf("at the kill: %d offsets on the target, progress committed for %d records", atKill, committedRecords(t, tk, current, peer, topic))
	}
	reps := startTask(t, tk, current, peer)
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	aborted := verifyExactlyOnce(t, current, peer, topic, total)
	if st := dataOnly(reps[0].Status()); st.Recopied != 0 {
		t.Errorf("the restart reports %d records copied again; exactly once copies none", st.Recopied)
	}
	if aborted == 0 {
		t.Errorf("no aborted copy on the target: the kill did not land inside a transaction, so this run proves nothing")
	}
}

package replicator

import (
	"context"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/e2e"
	"github.com/kmirror/kmirror/internal/kafkatest"
	"github.com/kmirror/kmirror/internal/task"
)

// A partition stops fetching while the process's budget is spent (it copies
// at most what was already fetched), copies the rest, in order, once the
// budget has room, and gives back every byte it held when it stops.
func TestSpentBudgetPausesFetchingUntilRoomIsFreed(t *testing.T) {
	k1, k2 := kafkatest.Shared(t, 0), kafkatest.Shared(t, 1)
	src, dst := k1.Settings(cluster.Plaintext, ""), k2.Settings(cluster.Plaintext, "")
	topic := kafkatest.TopicName(t.Name())
	const n = 8000 // 8 MiB: several fetches of 1 MiB
	produceN(t, src, topic, 1, n, 1024)

	budget := NewBudget(8 << 20)
	budget.guaranteed = 0 // no partition's own part: the pool is all of it
	spend := budget.heldLimit()
	budget.hold(spend) // as if other flows' copies held it all
	tk := newTask("budget", task.DirectionPush, []string{topic})
	flows, err := FlowsOf(tk, src, dst)
	if err != nil {
		t.Fatal(err)
	}
	r := New(flows[0], Options{RefreshInterval: time.Second, Budget: budget}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(ctx) }()

	// Paused: the count settles below n (what was fetched before the
	// pause), unchanged over three looks a second apart.
	var last int64 = -1
	for stable, deadline := 0, time.Now().Add(2*time.Minute); stable < 3; {
		if time.Now().After(deadline) {
			t.Fatalf("records never settled (last %d)", last)
		}
		time.Sleep(time.Second)
		st := dataOnly(r.Status())
		if st.Records == last && st.State == task.StateRunning {
			stable++
		} else {
			stable = 0
		}
		last = st.Records
	}
	if last >= n {
		t.Fatalf("copied all %d records while the budget was spent", last)
	}
	t.Logf("copied %d of %d records while the budget was spent", last, n)

	budget.release(spend)
	verifyCopy(t, src, topic, dst, topic, n, e2e.VerifyOptions{})
	cancel()
	<-done
	if held := budget.held.Load(); held != 0 {
		t.Fatalf("%d bytes still held after the flow stopped", held)
	}
}

package replicator

import (
	"fmt"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/task"
)

// A progress-log write the target holds does not hold the copy: the copy
// produces on clients of its own. On the connection the progress log
// writes on, the broker would answer the copy's produce requests only
// after the write (a connection's requests are served in order), and the
// copy stood still for as long as each write took.
func TestProgressLogWritesDoNotHoldTheCopy(t *testing.T) {
	a := embeddedCluster(t, "A")
	dst, b := fakeTarget(t, "B")
	createTopic(t, a, "orders", 1)
	produceKeys(t, a, "orders", 1, 0, 1)
	f := pushFlow(t, a, b, task.Rules{Direction: task.DirectionPush, Topics: []string{"orders"}, Tasks: 1,
		RenameTopics: true, ReplicationFactor: 1, StartOffset: task.StartEarliest, Compression: "none"})

	// Once armed, the flow's progress-log writes are held (the log waits
	// for each) until the test lets them go.
	release := make(chan struct{})
	hold := holdProduces(dst, false, release, f.ProgressTopic)
	r := runFlowWith(t, f, Options{RefreshInterval: 500 * time.Millisecond, ProgressLogInterval: 100 * time.Millisecond})
	t.Cleanup(func() { close(release) }) // before the flow's stop (cleanups run last first)
	waitFor(t, recordsCopied(r, 1))
	hold.armed.Store(true)
	// A write comes once the copied position moves.
	produceKeys(t, a, "orders", 1, 1, 1)
	waitFor(t, func() error {
		if !hold.holding.Load() {
			return fmt.Errorf("no progress-log write held yet")
		}
		return nil
	})
	// The copy goes on while the write is held.
	produceKeys(t, a, "orders", 1, 2, 50)
	waitForLong(t, 15*time.Second, recordsCopied(r, 52))
	if !hold.holding.Load() {
		t.Fatal("the write was let go before the check: the test proves nothing")
	}
	from, to := readAll(t, a, "orders", 0, 52), readAll(t, b, "A.orders", 0, 52)
	for i := range from {
		if string(from[i].Key) != string(to[i].Key) {
			t.Fatalf("A.orders-0 offset %d holds %q, the source %q", i, to[i].Key, from[i].Key)
		}
	}
	t.Logf("52 records copied while a progress-log write was held (state %s)", r.Status().State)
}

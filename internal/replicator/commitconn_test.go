package replicator

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/task"
)

// A progress commit the group coordinator holds does not hold the copy:
// commits go on a connection of their own. On the connection the consumer
// fetches on, the broker would answer the fetches only after the commit
// (a connection's requests are served in order), and the copy stood still
// for as long as each commit took.
func TestProgressCommitsDoNotHoldTheCopy(t *testing.T) {
	src, a, b := fakeSourceTo(t, 1, "orders", 1)
	f := pushFlow(t, a, b, task.Rules{Direction: task.DirectionPush, Topics: []string{"orders"}, Tasks: 1,
		RenameTopics: true, ReplicationFactor: 1, StartOffset: "earliest", Compression: "none"})

	// Once armed (the copy has started: its start commits the positions
	// first), the flow's commits are held (one at a time: the flow waits for
	// each) until the test lets them go.
	var armed, held atomic.Bool
	release := make(chan struct{})
	src.ControlKey(kmsg.OffsetCommit.Int16(), func(r kmsg.Request) (kmsg.Response, error, bool) {
		src.KeepControl()
		if !armed.Load() || r.(*kmsg.OffsetCommitRequest).Group != f.Group() {
			return nil, nil, false
		}
		held.Store(true)
		src.SleepControl(func() { <-release })
		held.Store(false)
		return nil, nil, false // then served as usual
	})
	record := func(i int) *sarama.ProducerMessage {
		return &sarama.ProducerMessage{Topic: "orders", Partition: 0, Key: sarama.StringEncoder(fmt.Sprintf("k0-%d", i))}
	}
	produce(t, a, record(0))
	r := runFlowWith(t, f, Options{RefreshInterval: 500 * time.Millisecond, CommitInterval: 100 * time.Millisecond})
	t.Cleanup(func() { close(release) }) // before the flow's stop (cleanups run last first)
	waitFor(t, recordsCopied(r, 1))
	armed.Store(true)
	waitFor(t, func() error {
		if !held.Load() {
			return fmt.Errorf("no progress commit held yet")
		}
		return nil
	})
	// The copy goes on while the commit is held.
	var more []*sarama.ProducerMessage
	for i := 1; i <= 50; i++ {
		more = append(more, record(i))
	}
	produce(t, a, more...)
	waitForLong(t, 15*time.Second, recordsCopied(r, 51))
	if !held.Load() {
		t.Fatal("the commit was let go before the check: the test proves nothing")
	}
	checkExactCopy(t, b, 0, 51)
	t.Logf("51 records copied while a progress commit was held (state %s)", r.Status().State)
}

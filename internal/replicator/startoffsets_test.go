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

// A worker learns its partitions' start offsets in a request or two per
// broker, not round trips per partition: with a thousand partitions a
// broker served a start's lookups one after another. Counted on the
// source: the code before asked four per partition (its start position,
// its end for lag, and sarama's ConsumePartition the newest and oldest
// again). Every record is still copied, from where each partition starts.
func TestStartLooksOffsetsUpPerBroker(t *testing.T) {
	const partitions = 48
	src, a, b := fakeSourceTo(t, 3, "orders", partitions)
	var lookups atomic.Int64
	src.ControlKey(kmsg.ListOffsets.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		src.KeepControl()
		lookups.Add(1)
		return nil, nil, false
	})
	var msgs []*sarama.ProducerMessage
	for p := range int32(partitions) {
		for i := range 3 {
			msgs = append(msgs, &sarama.ProducerMessage{Topic: "orders", Partition: p, Key: sarama.StringEncoder(fmt.Sprintf("k%d-%d", p, i))})
		}
	}
	produce(t, a, msgs...)
	lookups.Store(0) // the test producer's own
	f := pushFlow(t, a, b, task.Rules{Direction: task.DirectionPush, Topics: []string{"orders"}, Tasks: 1,
		RenameTopics: true, ReplicationFactor: 1, StartOffset: "earliest", Compression: "none"})
	r := runFlowWith(t, f, Options{RefreshInterval: 500 * time.Millisecond})
	waitFor(t, recordsCopied(r, int64(len(msgs))))
	// Two lookups (newest, oldest) to each of three brokers; a partition
	// whose leader was not known yet is asked alone, as before.
	n := lookups.Load()
	t.Logf("%d ListOffsets requests to the source for %d partitions on 3 brokers", n, partitions)
	if n >= partitions {
		t.Fatalf("the start asked the source %d ListOffsets for %d partitions: want a few per broker", n, partitions)
	}
	if got := r.Status().Records; got != int64(len(msgs)) {
		t.Fatalf("%d records copied, want %d", got, len(msgs))
	}
}

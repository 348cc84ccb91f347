package replicator

import (
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/task"
)

// BenchmarkCopyThroughASlowLeader measures a copy's latency through a
// target broker that takes 2 ms over each produce request (an RF 3
// leader's wait for its followers, which a single-node bench cannot show)
// and serves a connection's requests one at a time, as Kafka does. Each
// round writes one record to each of 64 partitions and waits until the
// copy's progress has them all; it reports the mean round in ms. Compare
// it across commits in one run, e.g.
// go test ./internal/replicator -run '^$' -bench SlowLeader -benchtime 20x.
func BenchmarkCopyThroughASlowLeader(b *testing.B) {
	const parts = 64
	a := embeddedCluster(b, "A")
	dst, target := fakeTarget(b, "B")
	dst.ControlKey(kmsg.Produce.Int16(), func(r kmsg.Request) (kmsg.Response, error, bool) {
		dst.KeepControl()
		for _, tp := range r.(*kmsg.ProduceRequest).Topics {
			if tp.Topic == "A.orders" {
				dst.SleepControl(func() { time.Sleep(2 * time.Millisecond) })
				break
			}
		}
		return nil, nil, false
	})
	createTopic(b, a, "orders", parts)
	f := pushFlow(b, a, target,
		task.Rules{Direction: task.DirectionPush, Topics: []string{"orders"}, Tasks: 1,
			RenameTopics: true, ReplicationFactor: 1, StartOffset: task.StartEarliest})
	r := runFlow(b, f)
	copied := func() int64 {
		var n int64
		for _, p := range r.Status().Partitions {
			n += p.NextOffset
		}
		return n
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	// A first round: the flow is running and every partition copying.
	produceKeys(b, a, "orders", parts, 0, parts)
	waitProgress(b, r, parts)
	b.ResetTimer()
	var waited time.Duration
	for i := range b.N {
		produceKeys(b, a, "orders", parts, (i+1)*parts, parts)
		start := time.Now()
		for copied() < int64((i+2)*parts) {
			if ctx.Err() != nil {
				b.Fatalf("round %d: %d of %d records copied", i, copied(), (i+2)*parts)
			}
			time.Sleep(200 * time.Microsecond)
		}
		waited += time.Since(start)
	}
	b.ReportMetric(float64(waited.Milliseconds())/float64(b.N), "ms/round")
}

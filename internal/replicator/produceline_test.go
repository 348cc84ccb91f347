package replicator

import (
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/task"
)

// A worker's partitions led by one broker reach it in shared produce
// requests: while one request waits for the broker (here 20 ms, as an RF 3
// target's replication wait), the batches made meanwhile go together in the
// next, never two of one partition in a request. Every record arrives
// once, in order. Before lines, each request carried one partition.
func TestPartitionsSharingALeaderShareProduceRequests(t *testing.T) {
	const parts, perPart = 8, 500
	a := embeddedCluster(t, "A")
	dst, b := fakeTarget(t, "B")

	var mu sync.Mutex
	var requests, batches, widest int
	var twice []string
	dst.ControlKey(kmsg.Produce.Int16(), func(r kmsg.Request) (kmsg.Response, error, bool) {
		dst.KeepControl()
		n := 0
		seen := map[int32]bool{}
		for _, tp := range r.(*kmsg.ProduceRequest).Topics {
			if tp.Topic != "A.orders" {
				continue
			}
			for _, p := range tp.Partitions {
				if seen[p.Partition] {
					twice = append(twice, fmt.Sprintf("A.orders-%d", p.Partition))
				}
				seen[p.Partition] = true
				n++
			}
		}
		if n > 0 {
			mu.Lock()
			requests++
			batches += n
			widest = max(widest, n)
			mu.Unlock()
			dst.SleepControl(func() { time.Sleep(20 * time.Millisecond) })
		}
		return nil, nil, false
	})

	createTopic(t, a, "orders", parts)
	produceKeys(t, a, "orders", parts, 0, parts*perPart)
	f := pushFlow(t, a, b, task.Rules{Direction: task.DirectionPush, Topics: []string{"orders"}, Tasks: 1,
		RenameTopics: true, ReplicationFactor: 1, StartOffset: task.StartEarliest})
	r := runFlow(t, f)
	waitProgress(t, r, parts*perPart)

	for part := range int32(parts) {
		from, to := readAll(t, a, "orders", part, perPart), readAll(t, b, "A.orders", part, perPart)
		for i := range from {
			if string(from[i].Key) != string(to[i].Key) {
				t.Fatalf("A.orders-%d offset %d holds %q, the source %q", part, i, to[i].Key, from[i].Key)
			}
		}
	}
	if n := targetTotal(t, b, "A.orders", parts); n != parts*perPart {
		t.Fatalf("the target holds %d records, want the %d produced, once", n, parts*perPart)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(twice) > 0 {
		t.Fatalf("a request carried two batches of %v", twice)
	}
	t.Logf("%d batches in %d produce requests, at most %d in one", batches, requests, widest)
	if widest < 2 || requests >= batches {
		t.Fatalf("%d batches in %d produce requests, at most %d in one: partitions sharing a leader did not share requests", batches, requests, widest)
	}
}

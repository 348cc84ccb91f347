package replicator

import (
	"context"
	"log/slog"
	"sync"
	"testing"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/mm2"
)

// Every sync emitted to a healthy producer is written, however many
// partitions emit at once: the producer's input is unbuffered, and a send
// that did not wait dropped a sync whenever its dispatcher was busy.
func TestEverySyncReachesAHealthyProducer(t *testing.T) {
	a, _ := startFakes(t)
	createTopic(t, a, "syncs", 1)
	createTopic(t, a, "history", 1)
	w, err := newSyncWriter(a, "sync-test", "syncs", "history", slog.Default(), func(err error) { t.Error(err) })
	if err != nil {
		t.Fatal(err)
	}
	const emitters, each = 8, 250
	var wg sync.WaitGroup
	for e := range emitters {
		wg.Go(func() {
			for i := range each {
				w.emit(context.Background(), nil, pendingSync{sync: mm2.OffsetSync{Topic: "t", Partition: int32(e), UpstreamOffset: int64(i), DownstreamOffset: int64(i)}})
			}
		})
	}
	wg.Wait()
	if !w.close() {
		t.Fatal("the sync producer did not flush")
	}
	n := 0
	if err := readTopicForTest(t, a, "syncs", func(*sarama.ConsumerMessage) { n++ }); err != nil {
		t.Fatal(err)
	}
	if n != emitters*each {
		t.Fatalf("%d syncs written of %d emitted", n, emitters*each)
	}
}

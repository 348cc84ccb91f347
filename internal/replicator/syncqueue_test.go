package replicator

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/task"
)

// A slow sync topic holds progress back, never the copy: every record of a
// transactional source is a distance change (its commit marker takes an
// offset), so each is a sync the history waits for. With the sync topics'
// writes held by their broker, the code before handed each sync to the
// sync producer on the copy path and the copy stood still once the
// producer's buffers were full; the copy now goes on, and once the writes
// are let go the syncs are written and progress catches up.
func TestSlowSyncTopicDoesNotHoldTheCopy(t *testing.T) {
	const txns = 25000
	src, a, b := fakeSourceTo(t, 1, "orders", 1)
	produceOneRecordTransactions(t, src.ListenAddrs(), "orders", txns)
	f := pushFlow(t, a, b, task.Rules{Direction: task.DirectionPush, Topics: []string{"orders"}, Tasks: 1,
		RenameTopics: true, ReplicationFactor: 1, StartOffset: "earliest", Compression: "none"})
	release := make(chan struct{})
	hold := holdProduces(src, true, release, f.OffsetSyncsTopic, f.SyncHistoryTopic)
	r := runFlowWith(t, f, Options{RefreshInterval: 500 * time.Millisecond, CommitInterval: 100 * time.Millisecond})
	letGo := func() {
		if hold.armed.CompareAndSwap(true, false) {
			close(release)
		}
	}
	t.Cleanup(letGo) // before the flow's stop
	// Bounds for a starved CPU under -race (25,000 transactions took 58 s
	// to produce there, 16 s alone).
	waitForLong(t, 3*time.Minute, func() error {
		if got := r.Status().Records; got < txns {
			return fmt.Errorf("%d of %d records copied while the sync topics' writes are held (held: %v)", got, txns, hold.ever.Load())
		}
		return nil
	})
	if !hold.ever.Load() {
		t.Fatal("no sync write was held: the test proves nothing")
	}
	letGo()
	// Once written, the syncs let progress pass them: the flow's stored
	// position reaches the source's end (two offsets a transaction).
	waitForLong(t, 3*time.Minute, func() error {
		st := r.Status()
		if len(st.Partitions) != 1 || st.Partitions[0].NextOffset != 2*txns {
			return fmt.Errorf("progress %+v, want next offset %d", st.Partitions, 2*txns)
		}
		return nil
	})
}

// produceOneRecordTransactions commits n transactions of one record each
// to partition 0 of topic.
func produceOneRecordTransactions(t *testing.T, addrs []string, topic string, n int) {
	t.Helper()
	cl, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.TransactionalID("one-"+topic), kgo.DefaultProduceTopic(topic))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	for i := range n {
		if err := cl.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		if err := cl.ProduceSync(ctx, &kgo.Record{Key: fmt.Appendf(nil, "k-%d", i)}).FirstErr(); err != nil {
			t.Fatal(err)
		}
		if err := cl.EndTransaction(ctx, kgo.TryCommit); err != nil {
			t.Fatal(err)
		}
	}
}

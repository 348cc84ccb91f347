package replicator

import (
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/checkpoint"
	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/kafkatest"
	"github.com/kmirror/kmirror/internal/task"
)

// A transactional source makes a distance change at every commit (its
// marker takes an offset), so a flow's sync-history topic, compacted by
// partition and upstream offset, kept a point a transaction for its
// 30-day retention, and a restart read them all. The points the history's bound drops are
// deleted from the topic: after 12 transactions with a bound of 4, the
// topic's compacted view holds the newest 4, and a group at the end still
// translates exactly.
func TestSyncHistoryTopicKeepsTheHistorysBound(t *testing.T) {
	k1, k2 := kafkatest.Shared(t, 0), kafkatest.Shared(t, 1)
	src, dst := k1.Settings(cluster.Plaintext, ""), k2.Settings(cluster.Plaintext, "")
	topic := kafkatest.NewTopic(t, k1, 1, nil)
	const txns, limit = 12, 4
	produceTransactionsOfOne(t, src, topic, txns) // upstream 0, 2, ..., 22; markers between

	tk := newTask("hist-bound", task.DirectionPush, []string{topic})
	tk.Rules.Tasks = 1
	flows, err := FlowsOf(tk, src, dst)
	if err != nil {
		t.Fatal(err)
	}
	f := flows[0]
	r := runFlowWith(t, f, Options{RefreshInterval: 500 * time.Millisecond, CommitInterval: 100 * time.Millisecond, SyncHistoryLimit: limit})
	waitFor(t, recordsCopied(r, txns))
	// Every record after the first is a distance change (a marker before
	// it): 12 points, the first 8 pushed out by the bound.
	want := []int64{16, 18, 20, 22}
	syncs := f.OffsetSyncs
	if syncs.BootstrapServers == nil {
		t.Fatalf("flow has no offset-syncs cluster")
	}
	var kept []int64
	waitFor(t, func() error {
		live := map[string]int64{}
		err := readTopicForTest(t, syncs, f.SyncHistoryTopic, func(m *sarama.ConsumerMessage) {
			if m.Value == nil {
				delete(live, string(m.Key))
				return
			}
			if tp, _, p, err := checkpoint.DecodeHistory(m.Key, m.Value); err == nil && tp == topic {
				live[string(m.Key)] = p.Upstream
			}
		})
		if err != nil {
			return err
		}
		kept = kept[:0]
		for _, up := range live {
			kept = append(kept, up)
		}
		slices.Sort(kept)
		if !slices.Equal(kept, want) {
			return fmt.Errorf("the sync history topic holds points at upstream %v, want %v", kept, want)
		}
		return nil
	})
	ps := r.state.partition(Partition{Source: topic, Partition: 0, Target: f.Policy.TargetTopic(topic)})
	ps.mu.Lock()
	n, oldest := ps.hist.Len(), ps.hist.Oldest()
	down, ok := ps.hist.Translate(23, nil)
	ps.mu.Unlock()
	if n != limit || oldest != 16 {
		t.Fatalf("history in memory: %d points from upstream %d, want %d from 16", n, oldest, limit)
	}
	// 23 is past the last record (22, copied to 11): the next downstream.
	if !ok || down != 12 {
		t.Fatalf("a group at the source's end translates to %d (%v), want 12", down, ok)
	}
}

// produceTransactionsOfOne commits n transactions of one record each to
// partition 0 of topic: the record at 2i, its commit marker at 2i+1.
func produceTransactionsOfOne(t *testing.T, s cluster.Settings, topic string, n int) {
	t.Helper()
	p := transactionalProducer(t, s, "one-"+topic)
	for i := range n {
		if err := p.BeginTxn(); err != nil {
			t.Fatal(err)
		}
		if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: 0, Key: sarama.StringEncoder(fmt.Sprintf("k-%d", i))}); err != nil {
			t.Fatal(err)
		}
		if err := p.CommitTxn(); err != nil {
			t.Fatal(err)
		}
	}
}

// transactionalProducer is a sarama producer with transactional id id
// (manual partitions), closed when t ends.
func transactionalProducer(t *testing.T, s cluster.Settings, id string) sarama.SyncProducer {
	t.Helper()
	cfg, err := s.Config("kmirror-test-" + id)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Producer.Idempotent, cfg.Producer.RequiredAcks, cfg.Producer.Return.Successes = true, sarama.WaitForAll, true
	cfg.Producer.Transaction.ID, cfg.Producer.Partitioner, cfg.Net.MaxOpenRequests = id, sarama.NewManualPartitioner, 1
	p, err := sarama.NewSyncProducer(s.BootstrapServers, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = p.Close() })
	return p
}

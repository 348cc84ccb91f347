package replicator

import (
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/task"
)

// Exactly once, a partition's first batch in a transaction joins it
// through the target's transaction coordinator. A coordinator that does
// not answer held that join (and every batch behind it) for its client's
// retries with no error to report, and the flow showed RUNNING for minutes
// (CI: a frozen target broker, 2 minutes of RUNNING). The wait is shown:
// DEGRADED after DegradedAfter, naming the partition and the coordinator.
func TestUnansweredCoordinatorShowsDegraded(t *testing.T) {
	src, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(src.Close)
	dst, b := fakeTarget(t, "B")
	var armed atomic.Bool
	release := make(chan struct{})
	dst.ControlKey(kmsg.AddPartitionsToTxn.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		dst.KeepControl()
		if armed.Load() {
			dst.SleepControl(func() { <-release })
		}
		return nil, nil, false
	})
	t.Cleanup(func() { close(release) }) // before the flow's stop
	a := cluster.Settings{Name: "A", BootstrapServers: src.ListenAddrs(), SecurityProtocol: cluster.Plaintext}
	f := pushFlow(t, a, b, task.Rules{Direction: task.DirectionPush, Topics: []string{"orders"}, Tasks: 1,
		RenameTopics: true, ReplicationFactor: 1, StartOffset: "earliest", Compression: "none", Delivery: task.DeliveryExactlyOnce})
	record := func(i int) *sarama.ProducerMessage {
		return &sarama.ProducerMessage{Topic: "orders", Partition: 0, Key: sarama.StringEncoder(fmt.Sprintf("k-%d", i))}
	}
	produce(t, a, record(0))
	r := runFlowWith(t, f, Options{RefreshInterval: 500 * time.Millisecond, CommitInterval: 100 * time.Millisecond, DegradedAfter: time.Second})
	waitFor(t, func() error {
		if st := r.Status(); st.Records < 1 || st.State != task.StateRunning {
			return fmt.Errorf("state %s, %d records copied", st.State, st.Records)
		}
		return nil
	})
	armed.Store(true)
	// Records keep coming: a batch after the next commit must join the
	// next transaction (the commit itself adds the progress topic, held
	// too, and the join waits behind it).
	cfg, err := a.Config("coordinator-stall-test")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	p, err := sarama.NewSyncProducer(a.BootstrapServers, cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	defer func() { close(done); wg.Wait(); _ = p.Close() }()
	wg.Go(func() {
		for i := 1; ; i++ {
			select {
			case <-done:
				return
			case <-time.After(200 * time.Millisecond):
				if _, _, err := p.SendMessage(record(i)); err != nil {
					t.Errorf("produce to the source: %v", err)
					return
				}
			}
		}
	})
	waitFor(t, func() error {
		st := r.Status()
		if st.State != task.StateDegraded || !strings.Contains(st.Reason, "produce to A.orders-0 waits for the target's transaction coordinator") {
			return fmt.Errorf("state %s: %s; want DEGRADED naming the wait for the coordinator", st.State, st.Reason)
		}
		return nil
	})
}

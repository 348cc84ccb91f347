package replicator

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/embedded"
	"github.com/kmirror/kmirror/internal/engine"
	"github.com/kmirror/kmirror/internal/mm2"
	"github.com/kmirror/kmirror/internal/task"
)

// These tests run on in-process kfake clusters for speed; the same behaviour
// is proven on real Apache Kafka in replicator_kafka_test.go.

// fakeSourceTo is a kfake source ("A") of brokers seeded with topic
// (partitions), whose requests a test can hold (ControlKey), and an
// embedded target ("B"); both closed when t ends.
func fakeSourceTo(t *testing.T, brokers int, topic string, partitions int32) (src *kfake.Cluster, a, b cluster.Settings) {
	t.Helper()
	src, err := kfake.NewCluster(kfake.NumBrokers(brokers), kfake.SeedTopics(partitions, topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(src.Close)
	a = cluster.Settings{Name: "A", BootstrapServers: src.ListenAddrs(), SecurityProtocol: cluster.Plaintext}
	return src, a, embeddedCluster(t, "B")
}

// embeddedCluster is an in-process cluster named name, closed when t ends.
func embeddedCluster(t testing.TB, name string) cluster.Settings {
	t.Helper()
	c, err := embedded.Start(name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c.Settings()
}

// fakeTarget is a one-broker kfake cluster named name, whose requests a
// test can hold or slow (ControlKey), closed when t ends.
func fakeTarget(t testing.TB, name string) (*kfake.Cluster, cluster.Settings) {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c, cluster.Settings{Name: name, BootstrapServers: c.ListenAddrs(), SecurityProtocol: cluster.Plaintext}
}

// producesHold holds a kfake cluster's produce requests that write to any
// of its topics, while armed, until release is closed; then each is
// served as usual.
type producesHold struct {
	armed   atomic.Bool
	ever    atomic.Bool // a request was held
	holding atomic.Bool // one is held now
}

func holdProduces(c *kfake.Cluster, armed bool, release <-chan struct{}, topics ...string) *producesHold {
	h := &producesHold{}
	h.armed.Store(armed)
	c.ControlKey(kmsg.Produce.Int16(), func(r kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if !h.armed.Load() {
			return nil, nil, false
		}
		for _, tp := range r.(*kmsg.ProduceRequest).Topics {
			if slices.Contains(topics, tp.Topic) {
				h.ever.Store(true)
				h.holding.Store(true)
				c.SleepControl(func() { <-release })
				h.holding.Store(false)
				break
			}
		}
		return nil, nil, false
	})
	return h
}

// recordsCopied is a waitFor condition: r copied at least n records.
func recordsCopied(r *Replicator, n int64) func() error {
	return func() error {
		if got := r.Status().Records; got < n {
			return fmt.Errorf("%d of %d records copied: %+v", got, n, r.Status())
		}
		return nil
	}
}

func startFakes(t *testing.T) (a, b cluster.Settings) {
	t.Helper()
	cs, err := embedded.StartAll([]string{"A", "B"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cs.Close)
	return cs[0].Settings(), cs[1].Settings()
}

func admin(t testing.TB, s cluster.Settings) (sarama.Client, sarama.ClusterAdmin) {
	t.Helper()
	c, a, err := adminClient(s, "test")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return c, a
}

func createTopic(t testing.TB, s cluster.Settings, topic string, partitions int32) {
	t.Helper()
	_, a := admin(t, s)
	if err := a.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 1}, false); err != nil {
		t.Fatal(err)
	}
}

func produce(t testing.TB, s cluster.Settings, msgs ...*sarama.ProducerMessage) {
	t.Helper()
	cfg, _ := s.Config("test-producer")
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	p, err := sarama.NewSyncProducer(s.BootstrapServers, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	if err := p.SendMessages(msgs); err != nil {
		t.Fatal(err)
	}
}

// readAll reads a topic-partition from the start until want records or timeout.
func readAll(t *testing.T, s cluster.Settings, topic string, partition int32, want int) []*sarama.ConsumerMessage {
	t.Helper()
	cfg, _ := s.Config("test-consumer")
	c, err := sarama.NewConsumer(s.BootstrapServers, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var pc sarama.PartitionConsumer
	deadline := time.Now().Add(30 * time.Second)
	for {
		pc, err = c.ConsumePartition(topic, partition, sarama.OffsetOldest)
		if err == nil || time.Now().After(deadline) {
			break
		}
		time.Sleep(100 * time.Millisecond) // the topic may not exist yet
	}
	if err != nil {
		t.Fatalf("consume %s-%d: %v", topic, partition, err)
	}
	defer pc.Close()
	var out []*sarama.ConsumerMessage
	for len(out) < want {
		select {
		case m := <-pc.Messages():
			out = append(out, m)
		case <-time.After(time.Until(deadline)):
			t.Fatalf("%s-%d: got %d records, want %d", topic, partition, len(out), want)
		}
	}
	return out
}

func runFlow(t testing.TB, f Flow) *Replicator {
	t.Helper()
	return runFlowWith(t, f, Options{RefreshInterval: 500 * time.Millisecond, CommitInterval: 100 * time.Millisecond})
}

func runFlowWith(t testing.TB, f Flow, opts Options) *Replicator {
	t.Helper()
	r := New(f, opts, nil)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = r.Run(ctx) }()
	t.Cleanup(func() { cancel(); wg.Wait() })
	return r
}

func pushFlow(t testing.TB, a, b cluster.Settings, rules task.Rules) Flow {
	t.Helper()
	tk := task.Task{Name: "t1", Current: task.Current{Cluster: "A", Alias: "A"},
		Peer: task.Peer{Alias: "B", ConfigType: task.PeerByAddress}, Rules: rules}
	flows, err := FlowsOf(tk, a, b)
	if err != nil {
		t.Fatal(err)
	}
	return flows[0]
}

func TestPushKeepsEveryRecord(t *testing.T) {
	a, b := startFakes(t)
	createTopic(t, a, "orders", 3)
	const perPartition = 200
	var msgs []*sarama.ProducerMessage
	ts := time.UnixMilli(1_700_000_000_000)
	for p := int32(0); p < 3; p++ {
		for i := 0; i < perPartition; i++ {
			m := &sarama.ProducerMessage{Topic: "orders", Partition: p, Timestamp: ts.Add(time.Duration(i) * time.Millisecond),
				Key: sarama.StringEncoder(fmt.Sprintf("k%d-%d", p, i))}
			if i%10 != 9 { // every tenth record is a tombstone
				m.Value = sarama.StringEncoder(fmt.Sprintf("v%d-%d", p, i))
			}
			if i%7 == 0 {
				m.Headers = []sarama.RecordHeader{{Key: []byte("h"), Value: []byte("1")}, {Key: []byte("h"), Value: nil}}
			}
			msgs = append(msgs, m)
		}
	}
	produce(t, a, msgs...)

	f := pushFlow(t, a, b, task.Rules{Direction: task.DirectionPush, Topics: []string{"orders"}, Tasks: 2,
		RenameTopics: true, AddSourceHeader: true, ReplicationFactor: 1, StartOffset: "earliest", Compression: "lz4"})
	r := runFlow(t, f)

	for p := int32(0); p < 3; p++ {
		got := readAll(t, b, "A.orders", p, perPartition)
		for i, m := range got {
			want := msgs[int(p)*perPartition+i]
			if string(m.Key) != fmt.Sprintf("k%d-%d", p, i) {
				t.Fatalf("partition %d record %d: key %q (order or loss)", p, i, m.Key)
			}
			if (want.Value == nil) != (m.Value == nil) {
				t.Fatalf("partition %d record %d: tombstone not kept", p, i)
			}
			if !m.Timestamp.Equal(want.Timestamp) {
				t.Fatalf("partition %d record %d: timestamp %v, want %v", p, i, m.Timestamp, want.Timestamp)
			}
			nh := len(want.Headers) + 1
			if len(m.Headers) != nh || string(m.Headers[nh-1].Key) != task.SourceHeader || string(m.Headers[nh-1].Value) != "A" {
				t.Fatalf("partition %d record %d: headers %v", p, i, m.Headers)
			}
			if len(want.Headers) == 2 && m.Headers[1].Value != nil {
				t.Fatalf("nil header value became %q", m.Headers[1].Value)
			}
		}
	}
	waitFor(t, func() error {
		st := r.Status()
		if st.Records != 3*perPartition || st.LagRecords != 0 || st.State != task.StateRunning {
			return fmt.Errorf("status %s records=%d lag=%d", st.State, st.Records, st.LagRecords)
		}
		return nil
	})
	// Offset syncs were written in MM2's format on the current cluster.
	syncs := readAll(t, a, "mm2-offset-syncs.B.internal", 0, 3)
	for _, m := range syncs {
		s, err := mm2.DecodeOffsetSync(m.Key, m.Value)
		if err != nil || s.Topic != "orders" {
			t.Fatalf("offset sync %+v, %v", s, err)
		}
	}
}

// waitFor polls check until it passes, for up to 30 s.
func waitFor(t testing.TB, check func() error) {
	t.Helper()
	waitForLong(t, 30*time.Second, check)
}

// waitForLong is waitFor with its own limit.
func waitForLong(t testing.TB, limit time.Duration, check func() error) {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startFaultyPair starts source A (topic "orders", 2 partitions, perPartition
// keyed records each) and target B, for the fault-injection tests below.
func startFaultyPair(t *testing.T, perPartition int) (embedded.Clusters, cluster.Settings, cluster.Settings) {
	t.Helper()
	cs, err := embedded.StartAll([]string{"A", "B"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cs.Close)
	a, b := cs[0].Settings(), cs[1].Settings()
	createTopic(t, a, "orders", 2)
	var msgs []*sarama.ProducerMessage
	for p := int32(0); p < 2; p++ {
		for i := 0; i < perPartition; i++ {
			msgs = append(msgs, &sarama.ProducerMessage{Topic: "orders", Partition: p, Key: sarama.StringEncoder(fmt.Sprintf("k%d-%d", p, i))})
		}
	}
	produce(t, a, msgs...)
	return cs, a, b
}

// checkExactCopy reads partition p of A.orders on b: exactly n records, the
// source's keys in order, nothing twice.
func checkExactCopy(t *testing.T, b cluster.Settings, p int32, n int) {
	t.Helper()
	for i, m := range readAll(t, b, "A.orders", p, n) {
		if string(m.Key) != fmt.Sprintf("k%d-%d", p, i) {
			t.Fatalf("partition %d offset %d: key %q (order or loss)", p, i, m.Key)
		}
	}
	dst, _ := admin(t, b)
	end, err := dst.GetOffset("A.orders", p, sarama.OffsetNewest)
	if err != nil {
		t.Fatal(err)
	}
	if end != int64(n) {
		t.Fatalf("partition %d holds %d records, want %d", p, end, n)
	}
}

func faultyFlow(t *testing.T, a, b cluster.Settings) *Replicator {
	t.Helper()
	return runFlow(t, faultyPushFlow(t, a, b))
}

func faultyPushFlow(t *testing.T, a, b cluster.Settings) Flow {
	t.Helper()
	return pushFlow(t, a, b, task.Rules{Direction: task.DirectionPush, Topics: []string{"orders"}, Tasks: 1,
		RenameTopics: true, ReplicationFactor: 1, StartOffset: "earliest", Compression: "none"})
}

// A single record the target refuses as too large stops its partition with
// the reason; the other partition goes on, and the stopped one gives back
// the budget its copies held (else it would keep the others paused).
func TestRecordRefusedAsTooLargeStopsOnlyItsPartition(t *testing.T) {
	const n = 50
	cs, a, b := startFaultyPair(t, n)
	cs[1].Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "A.orders", Partitions: []int32{1},
		Err: kerr.MessageTooLarge, Count: -1})
	budget := NewBudget(64 << 20)
	r := runFlowWith(t, faultyPushFlow(t, a, b), Options{RefreshInterval: 500 * time.Millisecond, CommitInterval: 100 * time.Millisecond, Budget: budget})
	waitFor(t, func() error {
		st := r.Status()
		var p0, p1 engine.PartitionStatus
		for _, p := range st.Partitions {
			if p.Partition == 0 {
				p0 = p
			} else {
				p1 = p
			}
		}
		if st.State != task.StateFailed || !p1.Failed || !strings.Contains(p1.Reason, "offset 0 of orders-1") ||
			!strings.Contains(p1.Reason, "raise max.message.bytes") || p0.Failed || p0.Records != n {
			return fmt.Errorf("status %s reason %q; partition 0 %+v; partition 1 %+v", st.State, st.Reason, p0, p1)
		}
		if p1.NextOffset != 0 {
			return fmt.Errorf("partition 1 progress moved to %d past the refused record", p1.NextOffset)
		}
		if held := budget.held.Load(); held != 0 {
			return fmt.Errorf("%d bytes still held by the budget with partition 0 copied and partition 1 stopped", held)
		}
		return nil
	})
	checkExactCopy(t, b, 0, n)
}

// Produce errors on partition 0 of the target, each answered the way the
// copy path must: every record arrives once, in order, with the reason
// shown where there is one.
//   - an answer lost after the write (kfake writes, then answers
//     REQUEST_TIMED_OUT): retried, and the broker drops the retried copy
//     because the batch carries the producer id and sequence;
//   - a batch refused as too large (our estimate can be off near the
//     limit): split;
//   - no rights: the worker ends with the reason and restarts from
//     committed progress (its stop waited for the offset syncs, so the
//     other partition is not copied again);
//   - producer state lost on the broker: a fresh producer id.
func TestSendPathFaultsLoseAndDuplicateNothing(t *testing.T) {
	cases := []struct {
		name   string
		err    *kerr.Error
		count  int
		reason string
	}{
		{"answer lost after the write", kerr.RequestTimedOut, 4, "retrying"},
		{"batch refused as too large", kerr.MessageTooLarge, 3, ""},
		{"not authorized", kerr.TopicAuthorizationFailed, 2, "not authorized"},
		{"producer state lost", kerr.UnknownProducerID, 2, "new producer id"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			const n = 300
			cs, a, b := startFaultyPair(t, n)
			faults := cs[1].Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "A.orders", Partitions: []int32{0},
				Err: c.err, Count: c.count})
			r := faultyFlow(t, a, b)
			waitFor(t, func() error {
				if st := r.Status(); st.Records != 2*n || st.LagRecords != 0 || st.State != task.StateRunning {
					return fmt.Errorf("status %s records=%d lag=%d reason=%q", st.State, st.Records, st.LagRecords, st.Reason)
				}
				return nil
			})
			if faults.Hits() != c.count {
				t.Fatalf("%d produce requests faulted, want %d: the case was not exercised", faults.Hits(), c.count)
			}
			st := r.Status()
			if !strings.Contains(st.LastError, c.reason) {
				t.Fatalf("last error %q does not say %q", st.LastError, c.reason)
			}
			if st.Recopied != 0 {
				t.Fatalf("%d records copied again after a restart", st.Recopied)
			}
			checkExactCopy(t, b, 0, n)
			checkExactCopy(t, b, 1, n)
		})
	}
}

// A target whose transaction coordinator is still loading (a fresh cluster)
// delays the first producer id; the worker asks again in place instead of
// failing into its backoff, and copies everything.
func TestProducerIDAskedAgainWhileTheCoordinatorLoads(t *testing.T) {
	const n = 20
	cs, a, b := startFaultyPair(t, n)
	cs[1].Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.InitProducerID}, Err: kerr.CoordinatorLoadInProgress, Count: 3})
	r := faultyFlow(t, a, b)
	waitFor(t, func() error {
		st := r.Status()
		if st.Records != 2*n {
			return fmt.Errorf("copied %d of %d (state %s, last error %q)", st.Records, 2*n, st.State, st.LastError)
		}
		return nil
	})
	if st := r.Status(); st.Restarts != 0 || strings.Contains(st.LastError, "producer id") {
		t.Fatalf("the worker failed on a loading coordinator: %d restarts, last error %q", st.Restarts, st.LastError)
	}
	checkExactCopy(t, b, 0, n)
	checkExactCopy(t, b, 1, n)
}

package replicator

import (
	"context"
	"fmt"
	"log/slog"
	"maps"
	"runtime/pprof"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/e2e"
	"github.com/kmirror/kmirror/internal/engine"
	"github.com/kmirror/kmirror/internal/kafkatest"
	"github.com/kmirror/kmirror/internal/task"
)

// Behaviour 4 of issue 11, bounded waits and visible state, on real brokers
// that die or hang. They take brokers away, each on a cluster it has to
// itself, and run in parallel with the package's other parallel tests.

// runStoppable runs a task's one flow with opts until stop, which cancels it as
// a pause or delete does and says how long the flow took to end. A stop
// past StopBound fails the test (the bound is the code's own timeouts
// added up, not a speed), one of 2 minutes stops it with the goroutines.
func runStoppable(t *testing.T, tk task.Task, opts Options, src, dst cluster.Settings) (*Replicator, func() time.Duration) {
	t.Helper()
	flows, err := FlowsOf(tk, src, dst)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := New(flows[0], opts, failureLog(t))
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(ctx) }()
	var took time.Duration
	stopped := false
	stop := func() time.Duration {
		t.Helper()
		if stopped {
			return took
		}
		stopped = true
		began := time.Now()
		cancel()
		select {
		case <-done:
		case <-time.After(2 * time.Minute):
			var stacks strings.Builder
			_ = pprof.Lookup("goroutine").WriteTo(&stacks, 1)
			t.Fatalf("flow %s did not stop within 2 minutes; state %+v; goroutines:\n%s", r.Flow().Name(), r.Status(), stacks.String())
		}
		took = time.Since(began)
		if took > StopBound {
			t.Errorf("flow %s took %s to stop, past StopBound (%s): a wait on the stop path is not bounded as documented",
				r.Flow().Name(), took.Round(time.Millisecond), StopBound)
		}
		return took
	}
	t.Cleanup(func() { stop() })
	return r, stop
}

// failureLog is a flow's logger for a test: it logs as the default logger
// does, and keeps the warnings and errors, which a failed test prints in
// its own output (the package's interleaved log of parallel tests is cut
// in CI's view, and a flow's restart, for one, says why only there).
func failureLog(t *testing.T) *slog.Logger {
	l, _ := keptLog(t)
	return l
}

// keptLog is failureLog with the warnings and errors kept so far.
func keptLog(t *testing.T) (*slog.Logger, func() []string) {
	var mu sync.Mutex
	var kept []string
	keep := writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		kept = append(kept, strings.TrimSpace(string(p)))
		return len(p), nil
	})
	t.Cleanup(func() {
		if !t.Failed() {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		// The first ones say what went wrong; a long outage repeats.
		t.Logf("the flow's warnings and errors (%d, the first %d):\n%s", len(kept), min(len(kept), 40), strings.Join(kept[:min(len(kept), 40)], "\n"))
	})
	lines := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(kept)
	}
	return slog.New(slog.NewMultiHandler(slog.Default().Handler(), slog.NewTextHandler(keep, &slog.HandlerOptions{Level: slog.LevelWarn}))), lines
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// waitState polls the flow's status until check passes, for up to limit,
// and returns the status and how long it took.
func waitState(t *testing.T, r *Replicator, limit time.Duration, check func(engine.FlowStatus) error) (engine.FlowStatus, time.Duration) {
	t.Helper()
	began := time.Now()
	var st engine.FlowStatus
	waitForLong(t, limit, func() error {
		st = r.Status()
		if err := check(st); err != nil {
			return fmt.Errorf("%w (state %s: %s; last error %s)", err, st.State, st.Reason, st.LastError)
		}
		return nil
	})
	return st, time.Since(began)
}

// Behaviour: an internal partition without a leader. The flow's offset-syncs,
// sync history and progress topics each have their only replica on one
// broker of three, which is killed while the flow copies. The data (RF 3)
// goes on copying; the flow shows DEGRADED naming the internal partition
// and what is held back; a stop ends within seconds; a start meanwhile
// waits with the reason. Once the broker is back the flow runs, every
// record copied once.
func TestInternalPartitionLeaderlessDegradesAndStopStaysPrompt(t *testing.T) {
	k := rf3Away(t, "rf3-away-1")
	s := k.Settings(cluster.Plaintext, "")
	topic := kafkatest.NewTopic(t, k, 3, nil)
	tk := rf3Task("internal-away", "NA", "NB", topic)
	fs := tk.Flows()[0]
	target := "NA." + topic
	ids := k.BrokerIDs()
	away := ids[len(ids)-1]
	admin := mustAdmin(t, k)
	for name, extra := range map[string]map[string]string{
		fs.OffsetSyncsTopic: nil, fs.SyncHistoryTopic: syncHistoryConfig, fs.ProgressTopic: progressTopicConfig,
	} {
		// As kmirror creates them, but on one broker (min ISR 1: a single
		// replica takes acks=all writes).
		configs := map[string]*string{"cleanup.policy": ptr("compact"), "min.insync.replicas": ptr("1")}
		for k, v := range maps.All(extra) {
			configs[k] = ptr(v)
		}
		if err := admin.CreateTopic(name, &sarama.TopicDetail{NumPartitions: -1, ReplicationFactor: -1,
			ReplicaAssignment: map[int32][]int32{0: {away}}, ConfigEntries: configs}, false); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			if a, err := k.Admin(); err == nil {
				_ = a.DeleteTopic(name)
			}
		})
	}
	// Records keep coming, so the flow keeps acknowledging batches and
	// emitting offset syncs (one per partition every SyncInterval) for
	// the partition that has no leader.
	opts, r, stop, steady := copyingSteadily(t, tk, s, s, topic, target)
	killed := time.Now()
	back := brokerAway(t, k, away, true)
	st, _ := waitState(t, r, 2*time.Minute, func(st engine.FlowStatus) error {
		named := false
		for _, internal := range []string{fs.ProgressTopic, fs.SyncHistoryTopic, fs.OffsetSyncsTopic} {
			named = named || strings.Contains(st.Reason, "internal topic "+internal+"-0 has had no leader")
		}
		if st.State != task.StateDegraded || !named {
			return fmt.Errorf("want DEGRADED naming the internal partition without a leader")
		}
		return nil
	})
	t.Logf("DEGRADED %s after the kill: %s", time.Since(killed).Round(time.Millisecond), st.Reason)
	// The workers start again meanwhile (a larger max.message.bytes on the
	// target topic is a new plan): they cannot read the progress topic,
	// and go on from what this process copied instead of failing the flow.
	restarts := st.Restarts
	bigger := "2097152"
	alter := mustAdmin(t, k) // the first admin's broker was the one killed
	err := alter.IncrementalAlterConfig(sarama.TopicResource, target, map[string]sarama.IncrementalAlterConfigsEntry{
		"max.message.bytes": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &bigger}}, false)
	_ = alter.Close()
	if err != nil {
		t.Fatal(err)
	}
	st, _ = waitState(t, r, time.Minute, func(st engine.FlowStatus) error {
		if !strings.Contains(st.LastError, "goes on from what this kmirror copied") {
			return fmt.Errorf("want the workers started again from what was copied")
		}
		return nil
	})
	t.Logf("workers started again with the progress topic away: %s", st.LastError)
	// Offset syncs pile up for the partition without a leader: hundreds
	// per partition, more than the sync producer holds.
	time.Sleep(time.Until(killed.Add(45 * time.Second)))
	sent := steady()
	verifyCopy(t, s, topic, s, target, int64(300+sent), e2e.VerifyOptions{})
	t.Logf("with broker %d killed, the data copied on: %d records produced while it died, all copied %s after the kill", away, sent, time.Since(killed).Round(time.Millisecond))
	if st = r.Status(); st.State != task.StateDegraded || st.Restarts != restarts {
		t.Fatalf("state %s (%s), %d restarts of the flow with broker %d still away, want DEGRADED, %d", st.State, st.Reason, st.Restarts, away, restarts)
	}
	t.Logf("stopped in %s with broker %d away", stop().Round(time.Millisecond), away)

	// Started while the broker is away (a resume): it cannot read its
	// progress, so it copies nothing, and says why.
	r, stop = runStoppable(t, tk, opts, s, s)
	st, waited := waitState(t, r, 2*time.Minute, func(st engine.FlowStatus) error {
		if st.State == task.StateRunning || !strings.Contains(st.Reason, fs.ProgressTopic) {
			return fmt.Errorf("want a state naming %s", fs.ProgressTopic)
		}
		return nil
	})
	t.Logf("started with broker %d away: %s after %s: %s", away, st.State, waited.Round(time.Millisecond), st.Reason)

	back()
	st, waited = waitState(t, r, 2*time.Minute, func(st engine.FlowStatus) error {
		if st.State != task.StateRunning {
			return fmt.Errorf("want RUNNING")
		}
		return nil
	})
	t.Logf("RUNNING %s after broker %d was back", waited.Round(time.Millisecond), away)
	produceN(t, s, topic, 3, 100, 100)
	verifyCopy(t, s, topic, s, target, int64(400+sent), e2e.VerifyOptions{})
	st = r.Status()
	t.Logf("every record copied once: recopied %d", dataOnly(st).Recopied)
	if n := dataOnly(st).Recopied; n != 0 {
		t.Errorf("%d records copied twice", n)
	}
	t.Logf("stopped in %s with every broker up", stop().Round(time.Millisecond))
}

// copyingSteadily runs a flow of tk (DegradedAfter shortened to 10 s)
// until 300 records of topic's 3 partitions are on target, then keeps
// records coming (steady stops them) and lets some be copied, so a test
// takes a cluster away from a flow at work.
func copyingSteadily(t *testing.T, tk task.Task, src, dst cluster.Settings, topic, target string) (opts Options, r *Replicator, stop func() time.Duration, steady func() int) {
	t.Helper()
	opts = testOpts
	opts.DegradedAfter = 10 * time.Second // the default 30 s, shortened for the test
	produceN(t, src, topic, 3, 300, 100)
	r, stop = runStoppable(t, tk, opts, src, dst)
	if tk.Rules.ExactlyOnce() {
		verifyExactlyOnceTo(t, src, topic, dst, target, 300) // offsets count markers too
	} else {
		verifyCopy(t, src, topic, dst, target, 300, e2e.VerifyOptions{})
	}
	steady = produceSteadily(t, src, topic, 3, 25*time.Millisecond)
	time.Sleep(2 * time.Second) // some copied with every broker up
	return opts, r, stop, steady
}

// produceSteadily writes one record to each partition of topic every
// interval (keys unique, as verifyCopy needs) until the returned stop,
// which says how many it wrote. Its sends retry for about a minute, so
// they ride out a broker's death and the leader moves after it.
func produceSteadily(t *testing.T, s cluster.Settings, topic string, partitions int32, every time.Duration) (stop func() int) {
	t.Helper()
	cfg, err := s.Config("test-steady")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Retry.Max = 300
	cfg.Producer.Retry.Backoff = 200 * time.Millisecond
	// In order and once through retries (a send whose answer died with
	// the broker is sent again).
	cfg.Producer.Idempotent = true
	cfg.Net.MaxOpenRequests = 1
	p, err := sarama.NewSyncProducer(s.BootstrapServers, cfg)
	if err != nil {
		t.Fatal(err)
	}
	quit, done := make(chan struct{}), make(chan struct{})
	sent := 0
	var sendErr error
	go func() {
		defer close(done)
		tick := time.NewTicker(every)
		defer tick.Stop()
		for n := 0; ; n++ {
			select {
			case <-quit:
				return
			case <-tick.C:
			}
			var msgs []*sarama.ProducerMessage
			for part := range partitions {
				msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Partition: part,
					Key: sarama.StringEncoder(fmt.Sprintf("steady-%d-%d", n, part)), Value: sarama.StringEncoder("v")})
			}
			if sendErr = p.SendMessages(msgs); sendErr != nil {
				return
			}
			sent += len(msgs)
		}
	}()
	var once sync.Once
	stop = func() int {
		once.Do(func() {
			close(quit)
			<-done
			_ = p.Close()
			if sendErr != nil {
				t.Fatalf("steady producer to %s: %v", topic, sendErr)
			}
		})
		return sent
	}
	t.Cleanup(func() { stop() })
	return stop
}

// Behaviour: a target that stops answering. The target broker is frozen
// (SIGSTOP: its connections stay open, nothing is answered) while records
// keep coming. Within a bounded time the flow shows DEGRADED naming the
// target partition whose writes wait, not RUNNING; a stop ends within
// seconds while it is frozen. Thawed, a new start copies every record;
// the records a request lost in the freeze may have written are copied
// again, and exactly those are counted as recopied.
func TestFrozenTargetDegradesAndStopStaysPrompt(t *testing.T) {
	t.Parallel() // it freezes only its own target cluster
	k := kafkatest.Shared(t, 0)
	src := k.Settings(cluster.Plaintext, "")
	// A cluster of this test's own: no other test may see it frozen. The
	// two deliveries take turns on it.
	frozen := kafkatest.Lazy(t, "frozen-target")
	dst := frozen.Settings(cluster.Plaintext, "")
	for _, delivery := range []task.Delivery{task.DeliveryAtLeastOnce, task.DeliveryExactlyOnce} {
		t.Run(string(delivery), func(t *testing.T) { frozenTarget(t, src, frozen, dst, delivery) })
	}
}

// frozenTarget is TestFrozenTargetDegradesAndStopStaysPrompt for one
// delivery. Exactly once, the requests the freeze left unanswered keep
// their transaction from committing: after the thaw read_committed
// readers see every record once.
func frozenTarget(t *testing.T, src cluster.Settings, frozen *kafkatest.Cluster, dst cluster.Settings, delivery task.Delivery) {
	k := kafkatest.Shared(t, 0)
	topic := kafkatest.NewTopic(t, k, 3, nil)
	tk := newTask("frozen", task.DirectionPush, []string{topic})
	tk.Current.Alias, tk.Peer.Alias = "FA", "FB"
	if tk.Rules.Delivery = delivery; tk.Rules.ExactlyOnce() {
		tk.Name = "frozen-eos"
	}
	t.Cleanup(func() {
		if a, err := frozen.Admin(); err == nil {
			_ = a.DeleteTopic(topic)
		}
	})
	opts, r, stop, steady := copyingSteadily(t, tk, src, dst, topic, topic)
	if err := frozen.FreezeBroker(1); err != nil {
		t.Fatal(err)
	}
	froze := time.Now()
	thawed := false
	thaw := func() {
		if !thawed {
			thawed = true
			if err := frozen.ThawBroker(1); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(thaw)
	st, _ := waitState(t, r, 2*time.Minute, func(st engine.FlowStatus) error {
		if st.State != task.StateDegraded || !strings.Contains(st.Reason, "produce to "+topic+"-") {
			return fmt.Errorf("want DEGRADED naming a target partition of %s", topic)
		}
		return nil
	})
	t.Logf("DEGRADED %s after the freeze: %s", time.Since(froze).Round(time.Millisecond), st.Reason)
	t.Logf("stopped in %s with the target frozen", stop().Round(time.Millisecond))
	sent := steady()

	thaw()
	r, _ = runStoppable(t, tk, opts, src, dst)
	if delivery == task.DeliveryExactlyOnce {
		rep := verifyExactlyOnceTo(t, src, topic, dst, topic, 300+sent)
		if st := dataOnly(r.Status()); st.Recopied != 0 {
			t.Fatalf("after the thaw: %s; yet %d records counted as copied again", rep.String(), st.Recopied)
		}
		t.Logf("after the thaw: %s", rep.String())
		return
	}
	rep := verifyCopy(t, src, topic, dst, topic, int64(300+sent), e2e.VerifyOptions{AllowDuplicates: true})
	st = dataOnly(r.Status())
	t.Logf("after the thaw: %s; recopied %d", rep.String(), st.Recopied)
	if int64(rep.Duplicated) != st.Recopied {
		t.Fatalf("the target holds %d duplicates; the flow counted %d as recopied", rep.Duplicated, st.Recopied)
	}
}

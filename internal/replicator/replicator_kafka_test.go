package replicator

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/e2e"
	"github.com/kmirror/kmirror/internal/kafkatest"
	"github.com/kmirror/kmirror/internal/task"
)

// Real Apache Kafka: two single-node KRaft clusters shared by the package's
// tests; every test uses its own topics.
// A test binary started with KMIRROR_TEST_CHILD runs a task's flows until
// killed: the crash test SIGKILLs it mid-stream.
func TestMain(m *testing.M) {
	if spec := os.Getenv("KMIRROR_TEST_CHILD"); spec != "" {
		os.Exit(runChild(spec))
	}
	kafkatest.Main(m, 2)
}

type childSpec struct {
	Task    task.Task
	Current cluster.Settings
	Peer    cluster.Settings
}

func runChild(spec string) int {
	if at := os.Getenv("KMIRROR_TEST_CRASH_AT"); at != "" {
		// SIGKILL itself at the point of the first commit 4 s after the
		// first reached it: commits with records have landed before. With
		// KMIRROR_TEST_HOLD_DIR, that commit is held instead (the file
		// "held" written there) until the file "go" is there, and the next
		// commit reaching the point dies.
		hold := os.Getenv("KMIRROR_TEST_HOLD_DIR")
		var mu sync.Mutex
		var first time.Time
		crashAt = func(point string) {
			if point != at {
				return
			}
			mu.Lock()
			defer mu.Unlock()
			if first.IsZero() {
				first = time.Now()
			}
			if time.Since(first) <= 4*time.Second {
				return
			}
			if hold != "" {
				_ = os.WriteFile(filepath.Join(hold, "held"), nil, 0o600)
				for {
					if _, err := os.Stat(filepath.Join(hold, "go")); err == nil {
						break
					}
					time.Sleep(50 * time.Millisecond)
				}
				hold = ""
				return
			}
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // dies here
		}
	}
	var cs childSpec
	if err := json.Unmarshal([]byte(spec), &cs); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	flows, err := FlowsOf(cs.Task, cs.Current, cs.Peer)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	var wg sync.WaitGroup
	for _, f := range flows {
		r := New(f, testOpts, nil)
		wg.Go(func() { _ = r.Run(ctx) })
	}
	wg.Wait()
	return 0
}

func startChild(t *testing.T, cs childSpec, env ...string) *exec.Cmd {
	t.Helper()
	b, err := json.Marshal(cs)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), "KMIRROR_TEST_CHILD="+string(b)), env...)
	cmd.Stderr = os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill(); _ = cmd.Wait() })
	return cmd
}

var testOpts = Options{RefreshInterval: time.Second, CommitInterval: 200 * time.Millisecond, MaxBackoff: 2 * time.Second, SyncInterval: 100 * time.Millisecond}

// startTask runs every flow of a task until the test ends.
func startTask(t *testing.T, tk task.Task, current, peer cluster.Settings) []*Replicator {
	t.Helper()
	flows, err := FlowsOf(tk, current, peer)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	var reps []*Replicator
	for _, f := range flows {
		r := New(f, testOpts, nil)
		reps = append(reps, r)
		wg.Go(func() { _ = r.Run(ctx) })
	}
	t.Cleanup(func() { cancel(); wg.Wait() })
	return reps
}

func newTask(name string, direction task.Direction, topics []string) task.Task {
	return task.Task{Name: name, Type: task.TypeKafkaReplication,
		Current: task.Current{Cluster: "kafka1", Alias: "A"},
		Peer:    task.Peer{Alias: "B", ConfigType: task.PeerByAddress},
		Rules: task.Rules{Direction: direction, Topics: topics, Tasks: 2, ReplicationFactor: 1,
			StartOffset: task.StartEarliest, Compression: "none"}}
}

func produceN(t *testing.T, s cluster.Settings, topic string, partitions, n, size int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := e2e.Produce(ctx, s, topic, partitions, n, size); err != nil {
		t.Fatal(err)
	}
}

// verifyCopy waits until the target holds want records, then compares
// record by record.
func verifyCopy(t *testing.T, src cluster.Settings, srcTopic string, dst cluster.Settings, dstTopic string, want int64, opts e2e.VerifyOptions) e2e.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := e2e.WaitFor(ctx, dst, dstTopic, want, nil); err != nil {
		t.Fatalf("waiting for %d records on %s: %v", want, dstTopic, err)
	}
	rep, err := e2e.Verify(ctx, src, srcTopic, dst, dstTopic, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("copy of %s is not exact: %s\n%v", srcTopic, rep.String(), rep.Problems)
	}
	return rep
}

func TestPushRenameSourceHeaderToSASLSSLPeer(t *testing.T) {
	k1, k2 := kafkatest.Shared(t, 0), kafkatest.Shared(t, 1)
	current := k1.Settings(cluster.Plaintext, "")
	peer := k2.Settings(cluster.SASLSSL, cluster.MechanismSCRAMSHA512)
	topic := kafkatest.TopicName(t.Name())
	produceN(t, current, topic, 6, 3000, 512)

	tk := newTask("push-rename", task.DirectionPush, []string{topic})
	tk.Rules.RenameTopics, tk.Rules.AddSourceHeader, tk.Rules.Compression = true, true, "lz4"
	reps := startTask(t, tk, current, peer)

	rep := verifyCopy(t, current, topic, peer, "A."+topic, 3000, e2e.VerifyOptions{SourceAlias: "A"})
	t.Logf("verified: %s", rep.String())
	waitFor(t, func() error {
		st := dataOnly(reps[0].Status())
		if st.State != task.StateRunning || st.LagRecords != 0 || st.Records < 3000 {
			return fmt.Errorf("status %s records=%d lag=%d reason=%s", st.State, st.Records, st.LagRecords, st.Reason)
		}
		return nil
	})
}

func TestPullMappingFromSASLPlainPeer(t *testing.T) {
	k1, k2 := kafkatest.Shared(t, 0), kafkatest.Shared(t, 1)
	current := k1.Settings(cluster.Plaintext, "")
	peer := k2.Settings(cluster.SASLPlaintext, cluster.MechanismPlain)
	topic := kafkatest.TopicName(t.Name())
	produceN(t, peer, topic, 3, 1000, 100)

	tk := newTask("pull-map", task.DirectionPull, []string{topic})
	tk.Rules.TopicMappings = []task.Mapping{{Source: topic, Target: topic + "-copy"}}
	tk.Rules.Compression = "zstd"
	startTask(t, tk, current, peer)
	verifyCopy(t, peer, topic, current, topic+"-copy", 1000, e2e.VerifyOptions{})
}

func TestBidirectionalIdentityWithSourceHeaderDoesNotLoop(t *testing.T) {
	k1, k2 := kafkatest.Shared(t, 0), kafkatest.Shared(t, 1)
	a := k1.Settings(cluster.Plaintext, "")
	b := k2.Settings(cluster.SASLPlaintext, cluster.MechanismSCRAMSHA256)
	topic := kafkatest.TopicName(t.Name())
	produceN(t, a, topic, 2, 400, 100)
	produceN(t, b, topic, 2, 300, 100)

	tk := newTask("bidi", task.DirectionBidirectional, []string{topic})
	tk.Rules.AddSourceHeader = true
	reps := startTask(t, tk, a, b)

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	for _, s := range []cluster.Settings{a, b} {
		if _, err := e2e.WaitFor(ctx, s, topic, 700, nil); err != nil {
			t.Fatal(err)
		}
	}
	// Stable: several refresh rounds later nothing was copied back and forth.
	deadline := time.Now().Add(30 * time.Second) // the window: 30 refresh rounds
	for time.Now().Before(deadline) {
		for _, s := range []cluster.Settings{a, b} {
			n, err := e2e.Count(ctx, s, topic)
			if err != nil {
				t.Fatal(err)
			}
			if n != 700 {
				t.Fatalf("%s holds %d records of %s, want 700: records loop", s.Name, n, topic)
			}
		}
		time.Sleep(500 * time.Millisecond) // sampling the counts over time is the test
	}
	var skipped int64
	for _, r := range reps {
		skipped += r.Status().SkippedLoops
	}
	if skipped != 700 {
		t.Errorf("skipped loop records = %d, want 700 (each copied record seen once by the reverse flow)", skipped)
	}
}

// A topic and partitions added to a regex task's source are copied by
// workers started beside the running ones, which go on undisturbed: each
// target partition is written by one producer id, the first topic's first
// partition included, whose copy ran through both additions.
func TestNewTopicAndPartitionGrowthArePickedUp(t *testing.T) {
	k1, k2 := kafkatest.Shared(t, 0), kafkatest.Shared(t, 1)
	current := k1.Settings(cluster.Plaintext, "")
	peer := k2.Settings(cluster.Plaintext, "")
	prefix := kafkatest.TopicName(t.Name())
	first := prefix + ".one"
	produceN(t, current, first, 1, 100, 50)

	tk := newTask("regex", task.DirectionPush, nil)
	tk.Rules.TopicsRegex = strings.ReplaceAll(prefix, ".", `\.`) + `\..*`
	r := startTask(t, tk, current, peer)[0]
	verifyCopy(t, current, first, peer, first, 100, e2e.VerifyOptions{})

	second := prefix + ".two"
	produceN(t, current, second, 2, 200, 50)
	verifyCopy(t, current, second, peer, second, 200, e2e.VerifyOptions{})

	admin := mustAdmin(t, k1)
	if err := admin.CreatePartitions(first, 3, nil, false); err != nil {
		t.Fatal(err)
	}
	produceN(t, current, first, 3, 300, 50)
	verifyCopy(t, current, first, peer, first, 400, e2e.VerifyOptions{})
	var pids []int64
	for _, tp := range []struct {
		topic string
		part  int32
	}{{first, 0}, {first, 1}, {first, 2}, {second, 0}, {second, 1}} {
		got := producerIDs(t, peer, tp.topic, tp.part)
		if len(got) != 1 || slices.Contains(pids, got[0]) {
			t.Fatalf("%s-%d was written by producer ids %v (the others' %v): one each, else a copy started again", tp.topic, tp.part, got, pids)
		}
		pids = append(pids, got[0])
	}
	if st := r.Status(); st.Restarts != 0 {
		t.Fatalf("the flow started again %d times (last error %q)", st.Restarts, st.LastError)
	}
}

func TestStartLatestCopiesOnlyNewRecords(t *testing.T) {
	k1, k2 := kafkatest.Shared(t, 0), kafkatest.Shared(t, 1)
	current := k1.Settings(cluster.Plaintext, "")
	peer := k2.Settings(cluster.Plaintext, "")
	topic := kafkatest.TopicName(t.Name())
	produceN(t, current, topic, 2, 100, 50)

	tk := newTask("latest", task.DirectionPush, []string{topic})
	tk.Rules.StartOffset = task.StartLatest
	reps := startTask(t, tk, current, peer)
	waitFor(t, func() error { // both partitions positioned at their end
		st := dataOnly(reps[0].Status())
		if len(st.Partitions) != 2 || st.Partitions[0].NextOffset != 50 || st.Partitions[1].NextOffset != 50 {
			return fmt.Errorf("partitions %+v", st.Partitions)
		}
		return nil
	})
	produceN(t, current, topic, 2, 60, 50)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := e2e.WaitFor(ctx, peer, topic, 60, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() error {
		if st := dataOnly(reps[0].Status()); st.LagRecords != 0 {
			return fmt.Errorf("lag %d", st.LagRecords)
		}
		return nil
	})
	if n, err := e2e.Count(ctx, peer, topic); err != nil || n != 60 {
		t.Fatalf("target holds %d records (%v), want the 60 produced after start", n, err)
	}
}

func TestOversizeRecordStopsPartitionWithReason(t *testing.T) {
	k1, k2 := kafkatest.Shared(t, 0), kafkatest.Shared(t, 1)
	current := k1.Settings(cluster.Plaintext, "")
	peer := k2.Settings(cluster.Plaintext, "")
	topic := kafkatest.NewTopic(t, k1, 1, nil)
	small := "4096"
	if err := mustAdmin(t, k2).CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1,
		ConfigEntries: map[string]*string{"max.message.bytes": &small}}, false); err != nil {
		t.Fatal(err)
	}
	var msgs []*sarama.ProducerMessage
	for i := 0; i < 10; i++ {
		v := strings.Repeat("x", 100)
		if i == 5 {
			v = strings.Repeat("y", 20000)
		}
		msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Partition: 0, Key: sarama.StringEncoder(fmt.Sprint(i)), Value: sarama.StringEncoder(v)})
	}
	produce(t, current, msgs...)

	tk := newTask("oversize", task.DirectionPush, []string{topic})
	tk.Rules.Tasks = 1
	reps := startTask(t, tk, current, peer)
	waitFor(t, func() error {
		st := reps[0].Status()
		if st.State != task.StateFailed || !strings.Contains(st.Reason, "offset 5") || !strings.Contains(st.Reason, "max.message.bytes") {
			return fmt.Errorf("status %s: %q", st.State, st.Reason)
		}
		return nil
	})
	t.Logf("reason: %s", reps[0].Status().Reason)
	// The partition stops when the oversize record is read; the 5 records
	// before it may still be in flight then: wait for their acknowledgement.
	waitFor(t, func() error {
		if st := dataOnly(reps[0].Status()); st.Partitions[0].NextOffset != 5 {
			return fmt.Errorf("progress %d, want 5: the records before the oversize one copied, the oversize one never skipped", st.Partitions[0].NextOffset)
		}
		return nil
	})
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	n, err := e2e.Count(ctx, peer, topic)
	if err != nil || n != 5 {
		t.Fatalf("target holds %d records (%v), want the 5 before the oversize one and none after", n, err)
	}
}

// mustAdmin is the cluster's shared admin. Never closed here: tests
// running in parallel on the cluster hold it too.
func mustAdmin(t *testing.T, c *kafkatest.Cluster) sarama.ClusterAdmin {
	t.Helper()
	a, err := c.Admin()
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func TestKilledMidStreamResumesWithoutLoss(t *testing.T) {
	k1, k2 := kafkatest.Shared(t, 0), kafkatest.Shared(t, 1)
	current := k1.Settings(cluster.Plaintext, "")
	peer := k2.Settings(cluster.SASLSSL, cluster.MechanismSCRAMSHA512)
	topic := kafkatest.NewTopic(t, k1, 4, nil)
	tk := newTask("crash", task.DirectionPush, []string{topic})
	cs := childSpec{Task: tk, Current: current, Peer: peer}

	// Records keep coming at a bounded pace (stream: at most 5,000/s), so
	// the kill lands mid-stream, after commits and before the end.
	const total = 40000
	killed := make(chan struct{})
	produced := streamInBackground(current, topic, 4, total, killed, 50*time.Millisecond, 3*time.Minute)
	first := startChild(t, cs)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// Killed once it has committed progress for 5,000 records (and copied
	// on past them): a kill before the first commit would make a full
	// re-copy look bounded.
	committedNext := func() int64 {
		ps, err := ReadProgress(tk.Name, tk.Flows()[0], current, peer)
		if err != nil {
			t.Fatal(err)
		}
		var n int64
		for _, p := range ps {
			if p.Topic == topic {
				n += p.Next
			}
		}
		return n
	}
	waitForLong(t, 2*time.Minute, func() error {
		if n := committedNext(); n < 5000 {
			return fmt.Errorf("progress committed for %d records, want 5000", n)
		}
		return nil
	})
	err := first.Process.Signal(syscall.SIGKILL)
	close(killed)
	if err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	atKill, _ := e2e.Count(ctx, peer, topic)
	// What the restart resumes from: the progress the killed process had
	// committed. Only records copied after it may be copied again.
	resumeAt := committedNext()
	// The restart runs in this process, so its status can be read: it
	// reports the records it copies again.
	reps := startTask(t, tk, current, peer)
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	rep := verifyCopy(t, current, topic, peer, topic, total, e2e.VerifyOptions{AllowDuplicates: true})
	// Heartbeats partitions (copied again too) are not this topic's.
	recopied := dataOnly(reps[0].Status()).Recopied
	t.Logf("killed with %d records on the target; after restart: %s; duplicates %d (%.2f%% of %d); reported as copied again: %d",
		atKill, rep.String(), rep.Duplicated, 100*float64(rep.Duplicated)/total, total, recopied)
	if rep.Missing != 0 || rep.Replicated != total {
		t.Fatalf("records lost: %s", rep.String())
	}
	if recopied != int64(rep.Duplicated) {
		t.Fatalf("restart reported %d records copied again; the target holds %d duplicates", recopied, rep.Duplicated)
	}
	t.Logf("progress committed at the kill: %d records; copied after it: %d", resumeAt, atKill-resumeAt)
	if since := atKill - resumeAt; int64(rep.Duplicated) > since {
		t.Fatalf("%d duplicates, more than the %d records copied after the last committed progress (%d on the target at the kill, progress at %d)",
			rep.Duplicated, since, atKill, resumeAt)
	}
}

// Source topic configs reach the target when the topic is created and when
// they change later; a setting made only on the target is left alone.
func TestTopicConfigsAreSyncedIncrementally(t *testing.T) {
	k1, k2 := kafkatest.Shared(t, 0), kafkatest.Shared(t, 1)
	src, dst := k1.Settings(cluster.Plaintext, ""), k2.Settings(cluster.Plaintext, "")
	hour, compact := "3600000", "compact"
	topic := kafkatest.NewTopic(t, k1, 1, map[string]*string{"retention.ms": &hour, "cleanup.policy": &compact})
	startTask(t, newTask("configs", task.DirectionPush, []string{topic}), src, dst)

	dstAdmin, srcAdmin := mustAdmin(t, k2), mustAdmin(t, k1)
	targetConfig := func() map[string]string {
		configs, err := topicConfigs(dstAdmin, []string{topic}, false)
		if err != nil {
			return nil
		}
		return configs[topic]
	}
	waitFor(t, func() error {
		if c := targetConfig(); c["retention.ms"] != hour || c["cleanup.policy"] != compact {
			return fmt.Errorf("target configs at creation: retention.ms=%q cleanup.policy=%q", c["retention.ms"], c["cleanup.policy"])
		}
		return nil
	})
	// Set only on the target.
	segment := "10485760"
	if err := dstAdmin.IncrementalAlterConfig(sarama.TopicResource, topic, map[string]sarama.IncrementalAlterConfigsEntry{
		"segment.bytes": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &segment}}, false); err != nil {
		t.Fatal(err)
	}
	// Changed on the source.
	twoHours, bigger := "7200000", "2097152"
	if err := srcAdmin.IncrementalAlterConfig(sarama.TopicResource, topic, map[string]sarama.IncrementalAlterConfigsEntry{
		"retention.ms":      {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &twoHours},
		"max.message.bytes": {Operation: sarama.IncrementalAlterConfigsOperationSet, Value: &bigger}}, false); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() error {
		c := targetConfig()
		if c["retention.ms"] != twoHours || c["max.message.bytes"] != bigger || c["segment.bytes"] != segment {
			return fmt.Errorf("target configs after the change: retention.ms=%q max.message.bytes=%q segment.bytes=%q",
				c["retention.ms"], c["max.message.bytes"], c["segment.bytes"])
		}
		return nil
	})
}

// The source is read with read_committed: records of aborted transactions
// are not copied, committed ones are, in order.
func TestAbortedTransactionsAreNotCopied(t *testing.T) {
	k1, k2 := kafkatest.Shared(t, 0), kafkatest.Shared(t, 1)
	src, dst := k1.Settings(cluster.Plaintext, ""), k2.Settings(cluster.Plaintext, "")
	topic := kafkatest.NewTopic(t, k1, 1, nil)
	if err := e2e.ProduceTransactions(src, topic); err != nil {
		t.Fatal(err)
	}

	reps := startTask(t, newTask("txn", task.DirectionPush, []string{topic}), src, dst)
	got := readAll(t, dst, topic, 0, 20)
	for i, m := range got {
		want := fmt.Sprintf("first-%d", i)
		if i >= 10 {
			want = fmt.Sprintf("second-%d", i-10)
		}
		if string(m.Key) != want {
			t.Fatalf("target record %d is %q, want %q (aborted records must not be copied)", i, m.Key, want)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	time.Sleep(2 * time.Second) // nothing else may arrive: the sampling is the test
	if n, err := e2e.Count(ctx, dst, topic); err != nil || n != 20 {
		t.Fatalf("target holds %d records (%v), want the 20 committed ones", n, err)
	}
	// Four transactions of 10 records, each ending in a marker: 44 offsets.
	// The flow's progress passes the last ones (an aborted transaction and
	// markers, which the consumer never delivers), so no lag is left.
	waitFor(t, func() error {
		st := dataOnly(reps[0].Status())
		if len(st.Partitions) != 1 || st.Partitions[0].NextOffset != 44 || st.LagRecords != 0 {
			return fmt.Errorf("progress %+v, lag %d; want next offset 44 and no lag", st.Partitions, st.LagRecords)
		}
		return nil
	})
}

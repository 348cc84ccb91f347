package replicator

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/e2e"
	"github.com/kmirror/kmirror/internal/kafkatest"
	"github.com/kmirror/kmirror/internal/mm2"
	"github.com/kmirror/kmirror/internal/task"
)

// keyOffsets reads a topic-partition and maps each record key to its first
// offset.
func keyOffsets(t *testing.T, s cluster.Settings, topic string, partition int32, want int) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for _, m := range readAll(t, s, topic, partition, want) {
		if _, dup := out[string(m.Key)]; !dup {
			out[string(m.Key)] = m.Offset
		}
	}
	return out
}

func commitOnSource(t *testing.T, c *kafkatest.Cluster, group, topic string, offsets map[int32]int64) {
	t.Helper()
	o := map[int32]sarama.OffsetAndMetadata{}
	for p, off := range offsets {
		o[p] = sarama.OffsetAndMetadata{Offset: off, LeaderEpoch: -1}
	}
	// A broker that just started may still be loading its offsets topic:
	// retried for a while, as any client would.
	var resp *sarama.OffsetCommitResponse
	var err error
	for range 60 {
		resp, err = mustAdmin(t, c).AlterConsumerGroupOffsets(group, map[string]map[int32]sarama.OffsetAndMetadata{topic: o}, nil)
		loading := err == nil
		for p := range offsets {
			loading = loading && errors.Is(resp.Errors[topic][p], sarama.ErrOffsetsLoadInProgress)
		}
		if err == nil && !loading {
			break
		}
		time.Sleep(500 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	for p := range offsets {
		if kerr := resp.Errors[topic][p]; kerr != sarama.ErrNoError {
			t.Fatalf("commit %s-%d: %v", topic, p, kerr)
		}
	}
}

func targetGroupOffset(t *testing.T, c *kafkatest.Cluster, group, topic string, p int32) int64 {
	t.Helper()
	resp, err := mustAdmin(t, c).ListConsumerGroupOffsets(group, map[string][]int32{topic: {p}})
	if err != nil {
		t.Fatal(err)
	}
	b := resp.GetBlock(topic, p)
	if b == nil {
		return -1
	}
	return b.Offset
}

// A group far behind a stream whose offsets have thousands of gaps (records
// that came from the target and are not copied back) translates exactly: the
// target offset is the copy of the very record the group reads next. Then,
// after a restart of the flow (history read back from the offset-syncs
// topic), the same holds.
func TestCheckpointsTranslateExactlyForLaggingGroupAndAfterRestart(t *testing.T) {
	k1, k2 := kafkatest.Shared(t, 0), kafkatest.Shared(t, 1)
	src, dst := k1.Settings(cluster.Plaintext, ""), k2.Settings(cluster.Plaintext, "")
	topic := kafkatest.NewTopic(t, k1, 2, nil)
	const n = 6000
	var msgs []*sarama.ProducerMessage
	for i := 0; i < n; i++ {
		p := int32(i % 2)
		m := &sarama.ProducerMessage{Topic: topic, Partition: p, Key: sarama.StringEncoder(fmt.Sprintf("k%d", i)), Value: sarama.StringEncoder("v")}
		if i%5 == 3 { // came from B: never copied back to B, an upstream gap
			m.Headers = []sarama.RecordHeader{{Key: []byte(task.SourceHeader), Value: []byte("B")}}
		}
		msgs = append(msgs, m)
	}
	produce(t, src, msgs...)
	copied := n - n/5 // per both partitions

	tk := newTask("ckpt", task.DirectionPush, []string{topic})
	tk.Rules.SyncConsumerOffsets = true
	flows, err := FlowsOf(tk, src, dst)
	if err != nil {
		t.Fatal(err)
	}
	group := "lagging-" + topic
	// Consumed well behind the end, at records that were copied and at one
	// that was not (its translation is the next copied record).
	positions := map[int32]int64{0: 37, 1: 1203}
	commitOnSource(t, k1, group, topic, positions)

	check := func(r *Replicator, label string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		var res []GroupResult
		targetAdmin := mustAdmin(t, k2)
		waitFor(t, func() error { // the flow must have planned its partitions
			var err error
			// A commit to the target can fail for a moment (a new group's
			// coordinator still loading under load); the next sync retries it.
			res, err = r.SyncGroup(ctx, group)
			if err != nil || len(res) == 0 || len(res[0].Checkpoints) != 2 {
				return fmt.Errorf("%s: sync %+v, %v", label, res, err)
			}
			offsets, err := targetAdmin.ListConsumerGroupOffsets(group, map[string][]int32{topic: {0, 1}})
			if err != nil {
				return err
			}
			for p := int32(0); p < 2; p++ {
				if b := offsets.GetBlock(topic, p); b == nil || b.Offset < 0 {
					return fmt.Errorf("%s: partition %d not committed on the target yet: %v", label, p, res[0].Skipped)
				}
			}
			return nil
		})
		srcKeys := map[int32]map[int64]string{}
		for p := int32(0); p < 2; p++ {
			srcKeys[p] = map[int64]string{}
			for _, m := range readAll(t, src, topic, p, n/2) {
				srcKeys[p][m.Offset] = string(m.Key)
			}
			dstOffsets := keyOffsets(t, dst, topic, p, copied/2)
			// The first copied record at or after the group's position.
			want := int64(-1)
			for off := positions[p]; off < n/2; off++ {
				if d, ok := dstOffsets[srcKeys[p][off]]; ok {
					want = d
					break
				}
			}
			got := targetGroupOffset(t, k2, group, topic, p)
			if got != want {
				t.Fatalf("%s: partition %d: group at %d translated to %d on the target, want %d", label, p, positions[p], got, want)
			}
		}
		t.Logf("%s: %+v", label, res[0].Checkpoints)
	}

	ctx, cancel := context.WithCancel(context.Background())
	r := New(flows[0], Options{RefreshInterval: time.Second, CommitInterval: 100 * time.Millisecond, CheckpointInterval: time.Hour}, nil)
	done := make(chan struct{})
	go func() { defer close(done); _ = r.Run(ctx) }()
	waitFor(t, func() error {
		if st := dataOnly(r.Status()); st.Records != int64(copied) || st.LagRecords != 0 {
			return fmt.Errorf("records %d lag %d", st.Records, st.LagRecords)
		}
		return nil
	})
	check(r, "running")
	// Apache Kafka's own MM2 client reads kmirror's checkpoints and returns
	// the offsets kmirror committed.
	mm2Offsets := translateWithMM2(t, k2.Bootstrap(cluster.Plaintext), "A", group)
	for p := int32(0); p < 2; p++ {
		want := targetGroupOffset(t, k2, group, topic, p)
		if got, ok := mm2Offsets[fmt.Sprintf("%s %d", topic, p)]; !ok || got != want {
			t.Fatalf("RemoteClusterUtils.translateOffsets gave %d (found %v) for partition %d, kmirror committed %d; all: %v", got, ok, p, want, mm2Offsets)
		}
	}

	// Restart: a new Replicator reads the history back from the topic.
	cancel()
	<-done
	// Reset the target group so the restarted flow has to commit again.
	if err := mustAdmin(t, k2).DeleteConsumerGroup(group); err != nil {
		t.Fatal(err)
	}
	positions = map[int32]int64{0: 2001, 1: 77}
	commitOnSource(t, k1, group, topic, positions)
	ctx2, cancel2 := context.WithCancel(context.Background())
	defer cancel2()
	r2 := New(flows[0], Options{RefreshInterval: time.Second, CheckpointInterval: time.Hour}, nil)
	go func() { _ = r2.Run(ctx2) }()
	check(r2, "after restart")

	// The checkpoints topic holds MM2 checkpoints for the group.
	found := 0
	for _, m := range readAll(t, dst, "A.checkpoints.internal", 0, 1) {
		if cp, err := mm2.DecodeCheckpoint(m.Key, m.Value); err == nil && cp.Group == group {
			found++
		}
	}
	if found == 0 {
		t.Fatal("no checkpoint for the group in A.checkpoints.internal")
	}
}

// A group with active members on the target is never overwritten.
func TestCheckpointsLeaveActiveTargetGroupsAlone(t *testing.T) {
	k1, k2 := kafkatest.Shared(t, 0), kafkatest.Shared(t, 1)
	src, dst := k1.Settings(cluster.Plaintext, ""), k2.Settings(cluster.Plaintext, "")
	topic := kafkatest.NewTopic(t, k1, 1, nil)
	var msgs []*sarama.ProducerMessage
	for i := 0; i < 100; i++ {
		msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Partition: 0, Key: sarama.StringEncoder(fmt.Sprint(i))})
	}
	produce(t, src, msgs...)
	tk := newTask("ckpt-active", task.DirectionPush, []string{topic})
	tk.Rules.SyncConsumerOffsets, tk.Rules.Tasks = true, 1
	flows, _ := FlowsOf(tk, src, dst)
	r := New(flows[0], Options{RefreshInterval: time.Second, CheckpointInterval: time.Hour}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = r.Run(ctx) }()
	waitFor(t, func() error {
		if st := dataOnly(r.Status()); st.Records != 100 {
			return fmt.Errorf("records %d", st.Records)
		}
		return nil
	})
	group := "active-" + topic
	commitOnSource(t, k1, group, topic, map[int32]int64{0: 60})

	// A live consumer-group member on the target.
	cfg, _ := dst.Config("active-member")
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cg, err := sarama.NewConsumerGroup(dst.BootstrapServers, group, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer cg.Close()
	joined := make(chan struct{}, 1)
	gctx, gcancel := context.WithCancel(context.Background())
	defer gcancel()
	go func() {
		for gctx.Err() == nil {
			_ = cg.Consume(gctx, []string{topic}, holdHandler{joined})
		}
	}()
	select {
	case <-joined:
	case <-time.After(60 * time.Second):
		t.Fatal("consumer never joined the target group")
	}
	res, err := r.SyncGroup(ctx, group)
	if err != nil {
		t.Fatal(err)
	}
	if len(res) != 1 || len(res[0].Committed) != 0 || len(res[0].Skipped) == 0 {
		t.Fatalf("active group was not left alone: %+v", res)
	}
	t.Logf("skipped: %v", res[0].Skipped)
}

type holdHandler struct{ joined chan struct{} }

func (h holdHandler) Setup(sarama.ConsumerGroupSession) error {
	select {
	case h.joined <- struct{}{}:
	default:
	}
	return nil
}
func (holdHandler) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (holdHandler) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for range c.Messages() { // read but never commit
	}
	return nil
}

// translateWithMM2 runs testdata/Translate.java (Java's single-file source
// mode) on the Kafka jars: RemoteClusterUtils.translateOffsets.
func translateWithMM2(t *testing.T, bootstrap, alias, group string) map[string]int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	jars, err := kafkatest.EnsureJars(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(ctx, "java", "-cp", jars.Classpath(), "testdata/Translate.java", bootstrap, alias, group).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("RemoteClusterUtils.translateOffsets: %v\n%s", err, stderr)
	}
	offsets := map[string]int64{}
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		f := strings.Fields(line)
		if len(f) != 3 {
			continue
		}
		var off int64
		if _, err := fmt.Sscan(f[2], &off); err != nil {
			t.Fatalf("RemoteClusterUtils.translateOffsets printed %q: %v", line, err)
		}
		offsets[f[0]+" "+f[1]] = off
	}
	return offsets
}

// A real consumer group reads part of a renamed topic on the source, is
// failed over, and reads the rest on the target: every record is seen, none
// twice (translation is exact, so the bound on duplicates is zero here).
func TestFailoverRenamedTopicGroupReadsTheRestOnTheTarget(t *testing.T) {
	k1, k2 := kafkatest.Shared(t, 0), kafkatest.Shared(t, 1)
	src, dst := k1.Settings(cluster.Plaintext, ""), k2.Settings(cluster.SASLSSL, cluster.MechanismSCRAMSHA512)
	topic := kafkatest.TopicName(t.Name())
	const n = 3000
	produceN(t, src, topic, 3, n, 100)

	tk := newTask("failover", task.DirectionPush, []string{topic})
	tk.Rules.RenameTopics, tk.Rules.SyncConsumerOffsets = true, true
	flows, err := FlowsOf(tk, src, dst)
	if err != nil {
		t.Fatal(err)
	}
	r := New(flows[0], Options{RefreshInterval: time.Second, CheckpointInterval: time.Hour}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = r.Run(ctx) }()
	waitFor(t, func() error {
		if st := dataOnly(r.Status()); st.Records != n {
			return fmt.Errorf("records %d", st.Records)
		}
		return nil
	})

	group := "app-" + topic
	seen := map[string]int{}
	firstHalf := consumeGroup(t, src, group, topic, n/2)
	for _, k := range firstHalf {
		seen[k]++
	}
	if _, err := r.SyncGroup(ctx, group); err != nil {
		t.Fatal(err)
	}
	rest := consumeGroup(t, dst, group, "A."+topic, n-len(firstHalf))
	for _, k := range rest {
		seen[k]++
	}
	dups := 0
	for _, c := range seen {
		dups += c - 1
	}
	t.Logf("read %d on the source, %d on the target after failover; %d distinct, %d duplicates", len(firstHalf), len(rest), len(seen), dups)
	if len(seen) != n || dups != 0 {
		t.Fatalf("after failover: %d of %d records seen, %d duplicates", len(seen), n, dups)
	}
}

// consumeGroup reads want records as a member of group, commits and
// leaves (e2e.ConsumeGroup); it returns the keys in the order read.
func consumeGroup(t *testing.T, s cluster.Settings, group, topic string, want int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	keys, err := e2e.ConsumeGroup(ctx, s, group, topic, want)
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// Deleting an internal topic while a task runs: kmirror says so and
// recreates it, and replication goes on.
func TestDeletedInternalTopicsAreRecreatedAndReported(t *testing.T) {
	k1, k2 := kafkatest.Shared(t, 0), kafkatest.Shared(t, 1)
	src, dst := k1.Settings(cluster.Plaintext, ""), k2.Settings(cluster.Plaintext, "")
	topic := kafkatest.TopicName(t.Name())
	produceN(t, src, topic, 1, 100, 50)
	// Aliases of its own, so its internal topics are not other tests'.
	tk := newTask("internal-topics", task.DirectionPush, []string{topic})
	tk.Current.Alias, tk.Peer.Alias = "Y", "Z"
	tk.Rules.SyncConsumerOffsets = true
	reps := startTask(t, tk, src, dst)
	waitFor(t, func() error {
		if st := dataOnly(reps[0].Status()); st.Records != 100 {
			return fmt.Errorf("records %d", st.Records)
		}
		return nil
	})
	for _, it := range []struct {
		c     *kafkatest.Cluster
		topic string
	}{{k1, "mm2-offset-syncs.Z.internal"}, {k2, "Y.checkpoints.internal"}} {
		if err := mustAdmin(t, it.c).DeleteTopic(it.topic); err != nil {
			t.Fatal(err)
		}
		waitFor(t, func() error {
			st := reps[0].Status()
			if !strings.Contains(st.LastError, it.topic+" was deleted; kmirror recreated it") {
				return fmt.Errorf("last error %q", st.LastError)
			}
			return nil
		})
	}
	// Still replicating.
	produceN(t, src, topic, 1, 50, 50)
	verifyCopy(t, src, topic, dst, topic, 150, e2e.VerifyOptions{})
	// And translating exactly: a group at 120 (after the deletions) reads
	// on at the copy of record 120 (one partition, copied one to one).
	group := "after-internal-deleted-" + topic
	commitOnSource(t, k1, group, topic, map[int32]int64{0: 120})
	waitFor(t, func() error {
		res, err := reps[0].SyncGroup(context.Background(), group)
		if err != nil || len(res) == 0 {
			return fmt.Errorf("sync %+v, %v", res, err)
		}
		if got := targetGroupOffset(t, k2, group, topic, 0); got != 120 {
			return fmt.Errorf("translated to %d, want 120", got)
		}
		return nil
	})
}

package replicator

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/e2e"
	"github.com/kmirror/kmirror/internal/engine"
	"github.com/kmirror/kmirror/internal/kafkatest"
	"github.com/kmirror/kmirror/internal/task"
)

// exactlyOnce is tk with exactly-once delivery.
func exactlyOnce(tk task.Task) task.Task {
	tk.Rules.Delivery = task.DeliveryExactlyOnce
	return tk
}

// committedRecords sums the flow's stored progress over topic's partitions.
func committedRecords(t *testing.T, tk task.Task, current, peer cluster.Settings, topic string) int64 {
	t.Helper()
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

// verifyExactlyOnce checks that the target holds every source record
// exactly once, in order, as read_committed consumers see it, and returns
// how many aborted copies a read_uncommitted reader sees besides.
func verifyExactlyOnce(t *testing.T, src cluster.Settings, dst cluster.Settings, topic string, total int64) (aborted int) {
	t.Helper()
	rep := verifyExactlyOnceTo(t, src, topic, dst, topic, int(total))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	all, err := e2e.Verify(ctx, src, topic, dst, topic, e2e.VerifyOptions{ReadUncommitted: true, AllowDuplicates: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("read_committed: %s; read_uncommitted: %d aborted copies", rep.String(), all.Duplicated)
	return all.Duplicated
}

// verifyExactlyOnceTo waits until read_committed readers see at least
// total records of srcTopic in dstTopic, then checks that they see each
// source record exactly once, in order (a stream that retried a chunk
// wrote more than total). A partition's read ends after 5 s without a
// record (the target ends with transaction markers, never delivered).
func verifyExactlyOnceTo(t *testing.T, src cluster.Settings, srcTopic string, dst cluster.Settings, dstTopic string, total int) e2e.Report {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	waitForLong(t, 2*time.Minute, func() error {
		rep, err := e2e.Verify(ctx, src, srcTopic, dst, dstTopic, e2e.VerifyOptions{AllowDuplicates: true})
		if err != nil {
			return err
		}
		if rep.Replicated < total {
			return fmt.Errorf("read_committed: %d of %d records on the target", rep.Replicated, total)
		}
		return nil
	})
	rep, err := e2e.Verify(ctx, src, srcTopic, dst, dstTopic, e2e.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Replicated != rep.Produced || rep.Produced < total {
		t.Fatalf("read_committed: the copy is not exactly once: %s\n%v", rep.String(), rep.Problems)
	}
	return rep
}

// A kmirror killed with SIGKILL mid-stream, with transactions open, then
// started again: read_committed readers of the target see every source
// record exactly once and in order; the aborted transaction's records are
// there for a read_uncommitted reader only (the kill landed mid-transaction).
func TestExactlyOnceKilledMidStreamCopiesNothingTwice(t *testing.T) {
	t.Parallel() // its own topics and task on the shared clusters
	k1, k2 := kafkatest.Shared(t, 0), kafkatest.Shared(t, 1)
	current := k1.Settings(cluster.Plaintext, "")
	peer := k2.Settings(cluster.SASLSSL, cluster.MechanismSCRAMSHA512)
	topic := kafkatest.NewTopic(t, k1, 4, nil)
	tk := exactlyOnce(newTask("eos-crash", task.DirectionPush, []string{topic}))
	// Transactions of 5 s, not 1: the kill follows the check below by the
	// time the check takes, and on a loaded machine (ci79) a 1 s
	// transaction was committed in that time, or was already committing
	// when seen open: nothing was aborted. A longer transaction makes that
	// stretch a small part of it.
	tk.Rules.TransactionIntervalMs = 5000
	const total = 30000
	killed := make(chan struct{})
	produced := streamInBackground(current, topic, 4, total, killed, 50*time.Millisecond, 3*time.Minute)
	first := startChild(t, childSpec{Task: tk, Current: current, Peer: peer})
	waitForLong(t, 2*time.Minute, func() error {
		if n := committedRecords(t, tk, current, peer, topic); n < 5000 {
			return fmt.Errorf("progress committed for %d records, want 5000", n)
		}
		return nil
	})
	// Inside a transaction: the target holds records past its last stable
	// offset (a loaded machine can leave the copy caught up between
	// commits for a while).
	waitForLong(t, time.Minute, func() error {
		if !openTransaction(t, peer, topic) {
			return errors.New("no open transaction on the target")
		}
		return nil
	})
	err := first.Process.Signal(syscall.SIGKILL)
	close(killed)
	if err != nil {
		t.Fatal(err)
	}
	_ = first.Wait()
	{
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		atKill, _ := e2e.Count(ctx, peer, topic)
		cancel()
		t.Logf("at the kill: %d offsets on the target, progress committed for %d records", atKill, committedRecords(t, tk, current, peer, topic))
	}
	reps := startTask(t, tk, current, peer)
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	aborted := verifyExactlyOnce(t, current, peer, topic, total)
	if st := dataOnly(reps[0].Status()); st.Recopied != 0 {
		t.Errorf("the restart reports %d records copied again; exactly once copies none", st.Recopied)
	}
	if aborted == 0 {
		t.Errorf("no aborted copy on the target: the kill did not land inside a transaction, so this run proves nothing")
	}
}

// openTransaction says whether a partition of topic holds records past its
// last stable offset: a transaction is open there.
func openTransaction(t *testing.T, s cluster.Settings, topic string) bool {
	t.Helper()
	client, admin, err := adminClient(s, "test-open-txn")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close() // closes client too
	parts, err := client.Partitions(topic)
	if err != nil {
		return false
	}
	for _, p := range parts {
		leader, err := client.Leader(topic, p)
		if err != nil {
			return false
		}
		var ends [2]int64
		for i, level := range []sarama.IsolationLevel{sarama.ReadUncommitted, sarama.ReadCommitted} {
			req := &sarama.OffsetRequest{Version: 2, IsolationLevel: level}
			req.AddBlock(topic, p, sarama.OffsetNewest, 1)
			resp, err := leader.GetAvailableOffsets(req)
			if err != nil {
				return false
			}
			if b := resp.GetBlock(topic, p); b != nil && errors.Is(b.Err, sarama.ErrNoError) {
				ends[i] = b.Offset
			}
		}
		if ends[0] > ends[1] {
			return true
		}
	}
	return false
}

// A second kmirror started on the same exactly-once task fences the first
// (same transactional ids): the first stops, FAILED with the reason, and is
// not restarted (the two would fence each other in turn); the second copies
// on, every record once.
func TestExactlyOnceSecondKmirrorFencesTheFirst(t *testing.T) {
	t.Parallel() // its own topics and task on the shared clusters
	k1, k2 := kafkatest.Shared(t, 0), kafkatest.Shared(t, 1)
	current, peer := k1.Settings(cluster.Plaintext, ""), k2.Settings(cluster.Plaintext, "")
	topic := kafkatest.NewTopic(t, k1, 2, nil)
	tk := exactlyOnce(newTask("eos-fence", task.DirectionPush, []string{topic}))
	tk.Current.Alias, tk.Peer.Alias = "FA", "FB"
	tk.Rules.Tasks = 1
	produceN(t, current, topic, 2, 1000, 100)
	first, _ := runStoppable(t, tk, testOpts, current, peer)
	verifyExactlyOnce(t, current, peer, topic, 1000)
	second, _ := runStoppable(t, tk, testOpts, current, peer)
	// The second's start fences the first; the first notices at its next
	// write (an idle fenced kmirror shows nothing until then).
	waitState(t, second, time.Minute, func(st engine.FlowStatus) error {
		if st.State != task.StateRunning {
			return fmt.Errorf("the second kmirror does not run")
		}
		return nil
	})
	time.Sleep(3 * time.Second) // its workers started: the fence is in
	produceN(t, current, topic, 2, 1000, 100)
	st, _ := waitState(t, first, time.Minute, func(st engine.FlowStatus) error {
		if st.State != task.StateFailed || !strings.Contains(st.Reason, "another kmirror") {
			return fmt.Errorf("the first kmirror is not stopped as fenced")
		}
		return nil
	})
	t.Logf("first kmirror: %s: %s", st.State, st.Reason)
	produceN(t, current, topic, 2, 1000, 100)
	verifyExactlyOnce(t, current, peer, topic, 3000)
	if again := first.Status(); again.State != task.StateFailed || again.Restarts != st.Restarts {
		t.Fatalf("the fenced kmirror did not stay stopped: %s (%s), %d restarts, was %d", again.State, again.Reason, again.Restarts, st.Restarts)
	}
	if s2 := second.Status(); s2.State != task.StateRunning {
		t.Fatalf("the second kmirror is %s (%s), want RUNNING", s2.State, s2.Reason)
	}
}

// Without WRITE on the task's transactional ids on the target, an
// exactly-once flow says so (the right and the id); once granted, it copies
// every record once.
func TestExactlyOnceWithoutTransactionalIDRightSaysSo(t *testing.T) {
	t.Parallel() // its ACLs are on a cluster of its own
	k := kafkatest.Lazy(t, "acls", kafkatest.ACLs(true))
	admin := k.Settings(cluster.Plaintext, "") // the anonymous listener is a super user
	dst := k.Settings(cluster.SASLPlaintext, cluster.MechanismSCRAMSHA512)
	src := kafkatest.Shared(t, 0).Settings(cluster.Plaintext, "")
	topic := kafkatest.NewTopic(t, kafkatest.Shared(t, 0), 2, nil)
	produceN(t, src, topic, 2, 500, 50)
	tk := exactlyOnce(newTask("eos-denied", task.DirectionPush, []string{topic}))
	tk.Current.Alias, tk.Peer.Alias = "TDA", "TDB"
	a, err := k.Admin()
	if err != nil {
		t.Fatal(err)
	}
	prefix := task.TransactionalIDPrefix(tk.Name)
	res := sarama.Resource{ResourceType: sarama.AclResourceTransactionalID, ResourceName: prefix, ResourcePatternType: sarama.AclPatternPrefixed}
	deny := sarama.Acl{Principal: "User:" + kafkatest.Alice.Name, Host: "*", Operation: sarama.AclOperationWrite, PermissionType: sarama.AclPermissionDeny}
	if err := a.CreateACLs([]*sarama.ResourceAcls{{Resource: res, Acls: []*sarama.Acl{&deny}}}); err != nil {
		t.Fatal(err)
	}
	reps, stop := runUntilStopped(t, tk, src, dst)
	defer stop()
	st, _ := waitState(t, reps[0], time.Minute, func(st engine.FlowStatus) error {
		if st.State != task.StateFailed || !strings.Contains(st.Reason, "WRITE and DESCRIBE on transactional id "+prefix) {
			return fmt.Errorf("the missing right is not named")
		}
		return nil
	})
	t.Logf("without the right: %s: %s", st.State, st.Reason)
	name, principal, host := prefix, "User:"+kafkatest.Alice.Name, "*"
	if _, err := a.DeleteACL(sarama.AclFilter{ResourceType: sarama.AclResourceTransactionalID, ResourceName: &name,
		ResourcePatternTypeFilter: sarama.AclPatternPrefixed, Principal: &principal, Host: &host,
		Operation: sarama.AclOperationWrite, PermissionType: sarama.AclPermissionDeny}, false); err != nil {
		t.Fatal(err)
	}
	verifyExactlyOnce(t, src, admin, topic, 500)
}

// Consumer-group failover from an exactly-once copy: the copy is written in
// many transactions (each leaves a marker per partition, so target offsets
// drift from the source's), a group reads half on the source, is
// translated, and reads the rest on the target: every record once.
func TestExactlyOnceFailoverIsExactAcrossTransactions(t *testing.T) {
	t.Parallel() // its own topics and task on the shared clusters
	k1, k2 := kafkatest.Shared(t, 0), kafkatest.Shared(t, 1)
	src, dst := k1.Settings(cluster.Plaintext, ""), k2.Settings(cluster.Plaintext, "")
	topic := kafkatest.NewTopic(t, k1, 3, nil)
	tk := exactlyOnce(newTask("eos-failover", task.DirectionPush, []string{topic}))
	tk.Current.Alias, tk.Peer.Alias = "XA", "XB"
	tk.Rules.RenameTopics, tk.Rules.SyncConsumerOffsets = true, true
	tk.Rules.TransactionIntervalMs = 200
	flows, err := FlowsOf(tk, src, dst)
	if err != nil {
		t.Fatal(err)
	}
	r := New(flows[0], Options{RefreshInterval: time.Second, CheckpointInterval: time.Hour}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() { _ = r.Run(ctx) }()
	const chunks, per = 6, 500
	for i := range chunks {
		produceN(t, src, topic, 3, per, 100)
		waitFor(t, func() error {
			if st := dataOnly(r.Status()); st.Records != int64((i+1)*per) {
				return fmt.Errorf("records %d", st.Records)
			}
			return nil
		})
		time.Sleep(300 * time.Millisecond) // the next chunk in a later transaction
	}
	const n = chunks * per
	target := "XA." + topic
	verifyExactlyOnceTo(t, src, topic, dst, target, n)
	offsets, err := e2e.Count(ctx, dst, target)
	if err != nil {
		t.Fatal(err)
	}
	if offsets < n+2*chunks {
		t.Fatalf("the target holds %d offsets for %d records: too few transaction markers to test across them", offsets, n)
	}

	group := "app-" + topic
	seen := map[string]int{}
	for _, k := range consumeGroup(t, src, group, topic, n/2+7) {
		seen[k]++
	}
	if _, err := r.SyncGroup(ctx, group); err != nil {
		t.Fatal(err)
	}
	for _, k := range consumeGroup(t, dst, group, target, n-len(seen)) {
		seen[k]++
	}
	dups := 0
	for _, c := range seen {
		dups += c - 1
	}
	t.Logf("%d records in %d offsets on the target; after failover %d distinct, %d read twice", n, offsets, len(seen), dups)
	if len(seen) != n || dups != 0 {
		t.Fatalf("after failover: %d of %d records seen, %d read twice", len(seen), n, dups)
	}
}

// Twenty kill -9 at random moments while 200,000 records stream in (at
// most 5,000/s), each run started afresh from what the last committed:
// read_committed readers see every record exactly once, in order.
func TestExactlyOnceThroughTwentyKills(t *testing.T) {
	t.Parallel() // mostly waiting for children to start
	k1, k2 := kafkatest.Shared(t, 0), kafkatest.Shared(t, 1)
	current, peer := k1.Settings(cluster.Plaintext, ""), k2.Settings(cluster.Plaintext, "")
	topic := kafkatest.NewTopic(t, k1, 4, nil)
	tk := exactlyOnce(newTask("eos-kills", task.DirectionPush, []string{topic}))
	tk.Current.Alias, tk.Peer.Alias = "KA", "KB"
	const total, kills = 200000, 20
	done := make(chan struct{})
	close(done) // the stream ends at total
	// 1,250 records/s: the kills land while it streams
	produced := streamInBackground(current, topic, 4, total, done, 200*time.Millisecond, 5*time.Minute)
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 20))
	var copiedAtKills []int64
	for i := range kills {
		before := committedRecords(t, tk, current, peer, topic)
		child := startChild(t, childSpec{Task: tk, Current: current, Peer: peer})
		// Each run copies something (its progress moves) before it dies,
		// at a random moment within the next 1.5 s.
		waitForLong(t, 2*time.Minute, func() error {
			if n := committedRecords(t, tk, current, peer, topic); n <= before && n < total {
				return fmt.Errorf("run %d: progress %d, not past %d yet", i, n, before)
			}
			return nil
		})
		time.Sleep(time.Duration(rng.IntN(1500)) * time.Millisecond)
		if err := child.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		_ = child.Wait()
		copiedAtKills = append(copiedAtKills, committedRecords(t, tk, current, peer, topic))
	}
	startTask(t, tk, current, peer)
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	t.Logf("progress committed at each of %d kills: %v", kills, copiedAtKills)
	aborted := verifyExactlyOnce(t, current, peer, topic, total)
	if aborted == 0 {
		t.Errorf("no aborted copy on the target: no kill landed inside a transaction")
	}
}

// The broker leading the transaction coordinator's partition of the
// flow's transactional id is killed mid-copy (3 brokers, RF 3,
// min.insync.replicas 2): the coordinator moves, the flow rides it out or
// starts again from its last commit, and read_committed readers see every
// record once.
func TestExactlyOnceCoordinatorBrokerKilled(t *testing.T) {
	k := rf3Away(t, "rf3-away-2")
	s := k.Settings(cluster.Plaintext, "")
	topic := kafkatest.NewTopic(t, k, 3, nil)
	tk := exactlyOnce(rf3Task("eos-coordinator", "CA", "CB", topic))
	tk.Rules.Tasks = 1
	const total = 30000
	done := make(chan struct{})
	close(done) // the stream ends at total
	produced := streamInBackground(s, topic, 3, total, done, 50*time.Millisecond, 5*time.Minute)
	reps, _ := runUntilStopped(t, tk, s)
	waitForLong(t, 2*time.Minute, func() error {
		if n := dataOnly(reps[0].Status()).Records; n < 5000 {
			return fmt.Errorf("%d records copied", n)
		}
		return nil
	})
	client, admin, err := adminClient(s, "test-coordinator")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close() // closes client too
	id := task.TransactionalID(tk.Flows()[0].Group, 0)
	coord, err := client.TransactionCoordinator(id)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("transaction coordinator of %s: broker %d; killed", id, coord.ID())
	back := brokerAway(t, k, coord.ID(), true)
	waitForLong(t, 2*time.Minute, func() error {
		if n := dataOnly(reps[0].Status()).Records; n < 15000 {
			return fmt.Errorf("%d records copied with the coordinator's broker away", n)
		}
		return nil
	})
	back()
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	st := reps[0].Status()
	t.Logf("flow after the coordinator's broker came back: %s, %d restarts, last error %q", st.State, st.Restarts, st.LastError)
	verifyExactlyOnceTo(t, s, topic, s, "CA."+topic, total)
}

// A task's delivery changes by deleting it and creating it again: the
// exactly-once task created over the at-least-once one's progress (same
// name, so the same progress) goes on from it and copies nothing twice.
func TestExactlyOnceTaskOverAtLeastOnceProgressCopiesNothingTwice(t *testing.T) {
	t.Parallel() // its own topics and task on the shared clusters
	k1, k2 := kafkatest.Shared(t, 0), kafkatest.Shared(t, 1)
	src, dst := k1.Settings(cluster.Plaintext, ""), k2.Settings(cluster.Plaintext, "")
	topic := kafkatest.NewTopic(t, k1, 3, nil)
	tk := newTask("eos-switch", task.DirectionPush, []string{topic})
	tk.Current.Alias, tk.Peer.Alias = "SA", "SB"
	produceN(t, src, topic, 3, 1500, 100)
	_, stop := runUntilStopped(t, tk, src, dst)
	verifyCopy(t, src, topic, dst, topic, 1500, e2e.VerifyOptions{})
	stop()
	produceN(t, src, topic, 3, 1500, 100)
	reps, _ := runUntilStopped(t, exactlyOnce(tk), src, dst)
	verifyExactlyOnce(t, src, dst, topic, 3000)
	if st := dataOnly(reps[0].Status()); st.Recopied != 0 || st.Records != 1500 {
		t.Fatalf("the exactly-once task copied %d records (want the 1,500 new ones), %d again", st.Records, st.Recopied)
	}
}

// kill -9 at each point of a commit: with the records in the transaction
// and no progress yet, with the progress in and no commit, and between the
// commit and the source group's commit. A restart copies on: read_committed
// readers see every record once.
func TestExactlyOnceKilledAtEachPointOfACommit(t *testing.T) {
	for _, point := range []string{crashBeforeProgress, crashBeforeCommit, crashBeforeGroup} {
		t.Run(point, func(t *testing.T) {
			t.Parallel()
			k1, k2 := kafkatest.Shared(t, 0), kafkatest.Shared(t, 1)
			current, peer := k1.Settings(cluster.Plaintext, ""), k2.Settings(cluster.Plaintext, "")
			topic := kafkatest.NewTopic(t, k1, 3, nil)
			tk := exactlyOnce(newTask("eos-at-"+point, task.DirectionPush, []string{topic}))
			tk.Current.Alias, tk.Peer.Alias = "PA", "PB-"+point[:4]
			const total = 15000
			done := make(chan struct{})
			close(done) // the stream ends at total
			// 1,250 records/s: records still come at the kill
			produced := streamInBackground(current, topic, 3, total, done, 200*time.Millisecond, 3*time.Minute)
			child := startChild(t, childSpec{Task: tk, Current: current, Peer: peer}, "KMIRROR_TEST_CRASH_AT="+point)
			exited := make(chan error, 1)
			go func() { exited <- child.Wait() }()
			select {
			case err := <-exited:
				var ee *exec.ExitError
				if !errors.As(err, &ee) || !strings.Contains(ee.String(), "killed") {
					t.Fatalf("the child ended with %v, not killed at %s", err, point)
				}
			case <-time.After(2 * time.Minute):
				t.Fatalf("the child never reached %s", point)
			}
			atKill := committedRecords(t, tk, current, peer, topic)
			startTask(t, tk, current, peer)
			if err := <-produced; err != nil {
				t.Fatal(err)
			}
			aborted := verifyExactlyOnce(t, current, peer, topic, total)
			t.Logf("killed at %s with progress committed for %d records; %d aborted copies", point, atKill, aborted)
			if point != crashBeforeGroup && aborted == 0 {
				t.Errorf("killed at %s inside a transaction, yet no aborted copy on the target", point)
			}
			if atKill == 0 {
				t.Errorf("killed at %s before any commit with records: the kill proves less than it should", point)
			}
		})
	}
}

// Exactly once, a record too large for the target stops its partition
// alone, with the reason: the records before it are committed once, the
// other partition copies on, nothing after it is skipped into the target.
func TestExactlyOnceOversizeRecordStopsOnlyItsPartition(t *testing.T) {
	t.Parallel() // its own topics and task on the shared clusters
	k1, k2 := kafkatest.Shared(t, 0), kafkatest.Shared(t, 1)
	current, peer := k1.Settings(cluster.Plaintext, ""), k2.Settings(cluster.Plaintext, "")
	topic := kafkatest.NewTopic(t, k1, 2, nil)
	small := "4096"
	if err := mustAdmin(t, k2).CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 2, ReplicationFactor: 1,
		ConfigEntries: map[string]*string{"max.message.bytes": &small}}, false); err != nil {
		t.Fatal(err)
	}
	var msgs []*sarama.ProducerMessage
	for p := range int32(2) {
		for i := range 10 {
			v := strings.Repeat("x", 100)
			if p == 0 && i == 5 {
				v = strings.Repeat("y", 20000)
			}
			msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Partition: p, Key: sarama.StringEncoder(fmt.Sprintf("%d-%d", p, i)), Value: sarama.StringEncoder(v)})
		}
	}
	produce(t, current, msgs...)
	tk := exactlyOnce(newTask("eos-oversize", task.DirectionPush, []string{topic}))
	tk.Current.Alias, tk.Peer.Alias = "OA", "OB"
	tk.Rules.Tasks = 1
	reps := startTask(t, tk, current, peer)
	st, _ := waitState(t, reps[0], time.Minute, func(st engine.FlowStatus) error {
		if !strings.Contains(st.Reason, "offset 5") || !strings.Contains(st.Reason, "max.message.bytes") {
			return fmt.Errorf("the oversize record is not named")
		}
		for _, p := range dataOnly(st).Partitions {
			if want := map[int32]int64{0: 5, 1: 10}[p.Partition]; p.NextOffset != want {
				return fmt.Errorf("partition %d at %d, want %d", p.Partition, p.NextOffset, want)
			}
		}
		return nil
	})
	t.Logf("%s: %s", st.State, st.Reason)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	waitForLong(t, time.Minute, func() error {
		rep, err := e2e.Verify(ctx, current, topic, peer, topic, e2e.VerifyOptions{Idle: time.Second})
		if err != nil {
			return err
		}
		if rep.Replicated != 15 || rep.Missing != 5 || rep.Duplicated != 0 || rep.Unexpected != 0 {
			return fmt.Errorf("read_committed: %s; want the 15 records before the oversize one and the other partition's, once", rep.String())
		}
		return nil
	})
}

// A transaction outlives its timeout: the leader of one target partition
// (its only replica) is frozen while records come, so a produce request
// stays unanswered and the transaction cannot commit; the coordinator
// aborts it (timeout shortened to 15 s). The flow says why meanwhile
// (never RUNNING without a reason), and after the thaw it copies on from
// its last commit: read_committed readers see every record once.
func TestExactlyOnceTransactionTimeout(t *testing.T) {
	k := rf3Away(t, "rf3-away-1")
	dst := k.Settings(cluster.Plaintext, "")
	src := kafkatest.Shared(t, 1).Settings(cluster.Plaintext, "")
	topic := kafkatest.NewTopic(t, kafkatest.Shared(t, 1), 2, nil)
	tk := exactlyOnce(newTask("eos-timeout", task.DirectionPush, []string{topic}))
	tk.Current.Alias, tk.Peer.Alias = "TA", "TB"
	tk.Rules.RenameTopics, tk.Rules.Tasks = true, 1
	tk.Rules.ReplicationFactor = task.DefaultReplicationFactor
	target := "TA." + topic

	// The frozen broker leads neither the transaction's coordinator nor
	// the other partition.
	client, admin, err := adminClient(dst, "test-timeout")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close() // closes client too
	coord, err := client.TransactionCoordinator(task.TransactionalID(tk.Flows()[0].Group, 0))
	if err != nil {
		t.Fatal(err)
	}
	var others []int32
	for _, id := range k.BrokerIDs() {
		if id != coord.ID() {
			others = append(others, id)
		}
	}
	frozen, other := others[0], others[1]
	one := "1"
	if err := mustAdmin(t, k).CreateTopic(target, &sarama.TopicDetail{NumPartitions: -1, ReplicationFactor: -1,
		ReplicaAssignment: map[int32][]int32{0: {frozen}, 1: {other}},
		ConfigEntries:     map[string]*string{"min.insync.replicas": &one}}, false); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if a, err := k.Admin(); err == nil {
			_ = a.DeleteTopic(target)
		}
	})
	produceN(t, src, topic, 2, 1000, 100)
	opts := testOpts
	opts.DegradedAfter = 10 * time.Second
	opts.TransactionTimeout = 15 * time.Second
	r, _ := runStoppable(t, tk, opts, src, dst)
	verifyExactlyOnceTo(t, src, topic, dst, target, 1000)
	steady := produceSteadily(t, src, topic, 2, 50*time.Millisecond)
	time.Sleep(time.Second)
	if err := k.FreezeBroker(frozen); err != nil {
		t.Fatal(err)
	}
	froze := time.Now()
	thawed := false
	thaw := func() {
		if !thawed {
			thawed = true
			if err := k.ThawBroker(frozen); err != nil {
				t.Error(err)
			}
		}
	}
	t.Cleanup(thaw)
	st, _ := waitState(t, r, 2*time.Minute, func(st engine.FlowStatus) error {
		if st.State == task.StateRunning || st.Reason == "" {
			return fmt.Errorf("want the stuck transaction said")
		}
		return nil
	})
	t.Logf("%s after the freeze: %s: %s", time.Since(froze).Round(time.Second), st.State, st.Reason)
	// Past the timeout and the coordinator's abort round (every 10 s).
	time.Sleep(time.Until(froze.Add(opts.TransactionTimeout + 15*time.Second)))
	thaw()
	sent := steady()
	t.Cleanup(func() {
		if t.Failed() {
			dumpBatches(t, dst, target, 0)
		}
	})
	rep := verifyExactlyOnceTo(t, src, topic, dst, target, 1000+sent)
	st = r.Status()
	t.Logf("after the thaw: %s; %s, %d restarts, last error %q", rep.String(), st.State, st.Restarts, st.LastError)
}

// dumpBatches logs partition p of topic batch by batch, read uncommitted:
// for a failing exactly-once test, what each producer wrote and how its
// transactions ended.
func dumpBatches(t *testing.T, s cluster.Settings, topic string, p int32) {
	t.Helper()
	client, admin, err := adminClient(s, "test-dump")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close() // closes client too
	leader, err := client.Leader(topic, p)
	if err != nil {
		t.Fatal(err)
	}
	for from := int64(0); ; {
		req := &sarama.FetchRequest{Version: 11, MaxBytes: 1 << 20, Isolation: sarama.ReadUncommitted, SessionEpoch: -1}
		req.AddBlock(topic, p, from, 1<<20, -1)
		resp, err := leader.Fetch(req)
		if err != nil {
			t.Fatal(err)
		}
		blk := resp.GetBlock(topic, p)
		if blk == nil || len(blk.RecordsSet) == 0 {
			return
		}
		for _, rs := range blk.RecordsSet {
			b := rs.RecordBatch
			if b == nil {
				continue
			}
			first := ""
			if len(b.Records) > 0 {
				first = string(b.Records[0].Key)
			}
			t.Logf("%s-%d @%d: %d records, pid %d epoch %d seq %d txn %v control %v first key %q",
				topic, p, b.FirstOffset, len(b.Records), b.ProducerID, b.ProducerEpoch, b.FirstSequence, b.IsTransactional, b.Control, first)
			from = b.FirstOffset + int64(b.LastOffsetDelta) + 1
		}
	}
}

// The progress topic's only replica on a broker that dies mid-copy: an
// exactly-once flow cannot put its progress into a transaction, so nothing
// commits; it says so, naming the progress topic, and once the broker is
// back it commits again, every record once on the target.
func TestExactlyOnceProgressLeaderDownSaysSoAndCopiesNothingTwice(t *testing.T) {
	k := rf3Away(t, "rf3-away-1")
	s := k.Settings(cluster.Plaintext, "")
	topic := kafkatest.NewTopic(t, k, 3, nil)
	tk := exactlyOnce(rf3Task("eos-progress-away", "PA", "PB", topic))
	tk.Rules.Tasks = 1
	fs := tk.Flows()[0]
	target := "PA." + topic
	client, admin, err := adminClient(s, "test-progress-away")
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close() // closes client too
	away := progressOnOneBroker(t, k, client, fs)
	_, r, _, steady := copyingSteadily(t, tk, s, s, topic, target)
	killed := time.Now()
	back := brokerAway(t, k, away, true)
	st, _ := waitState(t, r, 2*time.Minute, func(st engine.FlowStatus) error {
		if st.State == task.StateRunning || !strings.Contains(st.Reason, fs.ProgressTopic) {
			return fmt.Errorf("want a state naming %s", fs.ProgressTopic)
		}
		return nil
	})
	t.Logf("%s %s after the kill: %s", st.State, time.Since(killed).Round(time.Millisecond), st.Reason)
	time.Sleep(time.Until(killed.Add(20 * time.Second)))
	back()
	st, waited := waitState(t, r, 2*time.Minute, func(st engine.FlowStatus) error {
		if st.State != task.StateRunning {
			return fmt.Errorf("want RUNNING")
		}
		return nil
	})
	t.Logf("RUNNING %s after broker %d was back (%d restarts)", waited.Round(time.Millisecond), away, st.Restarts)
	sent := steady()
	verifyExactlyOnceTo(t, s, topic, s, target, 300+sent)
	if n := dataOnly(r.Status()).Recopied; n != 0 {
		t.Errorf("%d records copied twice", n)
	}
}

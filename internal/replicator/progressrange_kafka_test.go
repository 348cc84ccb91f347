package replicator

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/clustercheck"
	"github.com/kmirror/kmirror/internal/kafkatest"
	"github.com/kmirror/kmirror/internal/task"
)

// Kafka skips a transaction marker meant for a partition without a leader
// (progressrange.go). A worker is killed with its progress written and the
// transaction open; its progress partition's only broker goes away; the
// transaction then ends there without a marker — aborted by a fence (what a
// restart's first act does) or committed (a commit whose marker missed that
// partition). After the broker is back the progress is still open, which
// failed every start for good before; a start now closes it as the target's
// records say, and read_committed readers see every record once.
func TestExactlyOnceProgressLeftOpenIsClosedAtStart(t *testing.T) {
	for _, outcome := range []string{"aborted", "committed"} {
		t.Run(outcome, func(t *testing.T) {
			f := newAwayFlow(t, "eos-open-"+outcome, "OA", "OB"+outcome[:2])
			k, src, dst, topic, tk, fs, target, client := f.k, f.src, f.dst, f.topic, f.tk, f.fs, f.target, f.client
			id := task.TransactionalID(fs.Group, 0)

			const total = 15000
			done := make(chan struct{})
			close(done) // the stream ends at total
			produced := streamInBackground(src, topic, 3, total, done, 200*time.Millisecond, 3*time.Minute)
			child := startChild(t, childSpec{Task: tk, Current: src, Peer: dst}, "KMIRROR_TEST_CRASH_AT="+crashBeforeCommit)
			var ee *exec.ExitError
			if err := child.Wait(); !errors.As(err, &ee) || !strings.Contains(ee.String(), "killed") {
				t.Fatalf("the child ended with %v, not killed with its progress written", err)
			}

			back := brokerAway(t, k, f.away, true)
			waitForLong(t, time.Minute, func() error {
				if _, err := k.Leader(fs.ProgressTopic, 0); err == nil {
					return errors.New("the progress partition still has a leader")
				}
				return nil
			})
			endWithoutLeader(t, client, id, outcome == "committed")
			back()
			waitForLong(t, 2*time.Minute, func() error {
				_, err := k.Leader(fs.ProgressTopic, 0)
				return err
			})
			// The premise: the transaction ended, and the progress
			// partition holds it open (its marker skipped).
			time.Sleep(2 * time.Second)
			if err := client.RefreshMetadata(fs.ProgressTopic); err != nil {
				t.Fatal(err)
			}
			lso, end, err := openRange(client, tp{fs.ProgressTopic, 0})
			if err != nil {
				t.Fatal(err)
			}
			if lso >= end {
				t.Fatalf("premise: the progress partition holds nothing open (last stable offset %d, end %d): Kafka wrote the marker after the broker came back, and the test proves nothing", lso, end)
			}
			t.Logf("progress partition open at offsets %d-%d after its broker came back", lso, end-1)

			flows, err := FlowsOf(tk, src, dst)
			if err != nil {
				t.Fatal(err)
			}
			log, kept := keptLog(t)
			r := New(flows[0], testOpts, log)
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			wg.Go(func() { _ = r.Run(ctx) })
			t.Cleanup(func() { cancel(); wg.Wait() })
			if err := <-produced; err != nil {
				t.Fatal(err)
			}
			verifyExactlyOnceTo(t, src, topic, dst, target, total)
			said := ""
			for _, l := range kept() {
				if strings.Contains(l, "held this flow's progress") {
					said = l
				}
			}
			if !strings.Contains(said, ": "+outcome) {
				t.Errorf("the start did not say it closed the progress as %s; it said %q", outcome, said)
			}
			if n := dataOnly(r.Status()).Recopied; n != 0 && outcome == "committed" {
				t.Errorf("%d records copied twice after a committed transaction", n)
			}
		})
	}
}

// endWithoutLeader ends transactional id's open transaction: committed with
// its producer's own id and epoch, or aborted by a fence, as a restart's
// InitProducerId does. The coordinator may be busy a moment.
func endWithoutLeader(t *testing.T, client sarama.Client, id string, commit bool) {
	t.Helper()
	waitForLong(t, time.Minute, func() error {
		coord, err := client.TransactionCoordinator(id)
		if err != nil {
			return err
		}
		if !commit {
			_, _, err := clustercheck.InitTransactions(client, id, time.Minute)
			return err
		}
		desc, err := coord.DescribeTransactions(&sarama.DescribeTransactionsRequest{TransactionalIDs: []string{id}})
		if err != nil {
			return err
		}
		st := desc.TransactionStates[0]
		if st.TransactionState != "Ongoing" {
			t.Fatalf("transaction %s is %s, want Ongoing: it ended before the test could commit it", id, st.TransactionState)
		}
		resp, err := coord.EndTxn(&sarama.EndTxnRequest{Version: txnVersion(client.Config().Version),
			TransactionalID: id, ProducerID: st.ProducerID, ProducerEpoch: st.ProducerEpoch, TransactionResult: true})
		if err != nil {
			return err
		}
		if !errors.Is(resp.Err, sarama.ErrNoError) {
			return fmt.Errorf("commit %s: %w", id, resp.Err)
		}
		return nil
	})
}

// The same skipped marker in a running worker: a commit's marker misses
// the progress partition (its only broker killed while the commit is held
// with the progress written). The worker's next transaction must not add
// that partition while the range is open — the next marker there would
// close the committed progress with that transaction's outcome, aborted by
// the kill that follows — so it starts again and closes the range as
// committed; it is then killed at its next commit, and a new run copies the
// rest: read_committed readers see every record once.
func TestExactlyOnceProgressMarkerSkippedMidRun(t *testing.T) {
	f := newAwayFlow(t, "eos-open-midrun", "OM", "OMB")
	k, src, dst, topic, tk, fs, target := f.k, f.src, f.dst, f.topic, f.tk, f.fs, f.target

	const total = 20000
	done := make(chan struct{})
	close(done) // the stream ends at total
	produced := streamInBackground(src, topic, 3, total, done, 200*time.Millisecond, 4*time.Minute)
	hold := t.TempDir()
	child := startChild(t, childSpec{Task: tk, Current: src, Peer: dst}, "KMIRROR_TEST_CRASH_AT="+crashBeforeCommit, "KMIRROR_TEST_HOLD_DIR="+hold)
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()
	waitForLong(t, 2*time.Minute, func() error {
		_, err := os.Stat(filepath.Join(hold, "held"))
		return err
	})
	back := brokerAway(t, k, f.away, true)
	waitForLong(t, time.Minute, func() error {
		if _, err := k.Leader(fs.ProgressTopic, 0); err == nil {
			return errors.New("the progress partition still has a leader")
		}
		return nil
	})
	if err := os.WriteFile(filepath.Join(hold, "go"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2 * time.Second) // the commit ends without the progress partition's marker
	back()
	select {
	case err := <-exited:
		var ee *exec.ExitError
		if !errors.As(err, &ee) || !strings.Contains(ee.String(), "killed") {
			t.Fatalf("the child ended with %v, not killed at its next commit", err)
		}
	case <-time.After(3 * time.Minute):
		t.Fatal("the child never reached its next commit after the broker was back")
	}
	startTask(t, tk, src, dst)
	if err := <-produced; err != nil {
		t.Fatal(err)
	}
	verifyExactlyOnceTo(t, src, topic, dst, target, total)
}

// awayFlow is an exactly-once flow of one worker from a new topic of shared
// cluster 1 to the rf3-away-2 cluster (renamed with its alias), its
// progress topic's partition on one broker, away, that is not the
// transactional id's coordinator (min ISR 1: one replica takes acks=all
// writes); its topics on the target are deleted when the test ends.
type awayFlow struct {
	k             *kafkatest.Cluster
	src, dst      cluster.Settings
	topic, target string
	tk            task.Task
	fs            task.FlowSpec
	client        sarama.Client // on the target
	away          int32
}

func newAwayFlow(t *testing.T, name, alias, peerAlias string) awayFlow {
	t.Helper()
	f := awayFlow{k: rf3Away(t, "rf3-away-2")}
	f.dst = f.k.Settings(cluster.Plaintext, "")
	sk := kafkatest.Shared(t, 1)
	f.src = sk.Settings(cluster.Plaintext, "")
	f.topic = kafkatest.NewTopic(t, sk, 3, nil)
	f.tk = exactlyOnce(rf3Task(name, alias, peerAlias, f.topic))
	f.tk.Rules.Tasks = 1
	f.fs = f.tk.Flows()[0]
	f.target = alias + "." + f.topic
	client, admin, err := adminClient(f.dst, "test-open-progress")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = admin.Close() }) // closes client too
	f.client = client
	f.away = progressOnOneBroker(t, f.k, client, f.fs)
	t.Cleanup(func() {
		if a, err := f.k.Admin(); err == nil {
			_ = a.DeleteTopic(f.target)
		}
	})
	return f
}

// progressOnOneBroker creates the flow's progress topic with its partition
// on one broker that is not the transactional id's coordinator (min ISR 1:
// one replica takes acks=all writes), deleted when the test ends, and
// returns that broker.
func progressOnOneBroker(t *testing.T, k *kafkatest.Cluster, client sarama.Client, fs task.FlowSpec) int32 {
	t.Helper()
	coord, err := client.TransactionCoordinator(task.TransactionalID(fs.Group, 0))
	if err != nil {
		t.Fatal(err)
	}
	var away int32 = -1
	for _, b := range k.BrokerIDs() {
		if b != coord.ID() {
			away = b
		}
	}
	configs := map[string]*string{"cleanup.policy": ptr("compact"), "min.insync.replicas": ptr("1")}
	for k, v := range progressTopicConfig {
		configs[k] = ptr(v)
	}
	if err := mustAdmin(t, k).CreateTopic(fs.ProgressTopic, &sarama.TopicDetail{NumPartitions: -1, ReplicationFactor: -1,
		ReplicaAssignment: map[int32][]int32{0: {away}}, ConfigEntries: configs}, false); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if a, err := k.Admin(); err == nil {
			_ = a.DeleteTopic(fs.ProgressTopic)
		}
	})
	return away
}

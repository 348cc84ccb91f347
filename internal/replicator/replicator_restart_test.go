package replicator

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/e2e"
	"github.com/kmirror/kmirror/internal/kafkatest"
	"github.com/kmirror/kmirror/internal/task"
)

// A broker of either side restarted while records flow: the flow recovers
// on its own and every record arrives, in order per partition; at-least-once
// allows duplicates, which are logged with the flow's restarts.
//
// The restarts take brokers down: the test has two clusters of its own
// and runs in parallel with the package's other parallel tests; Restart
// returns only once every partition has a leader again, so each case
// finds whole clusters.
func TestBrokerRestartedMidStreamLosesNothing(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		target bool // restart the target's broker, else the source's
		kill   bool // SIGKILL, else a clean stop
	}{
		{"target", true, false},
		{"target-killed", true, true},
		{"source", false, false},
		{"source-killed", false, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			restartMidStream(t, tc.target, tc.kill)
		})
	}
}

func restartMidStream(t *testing.T, target, kill bool) {
	k1, k2 := kafkatest.Lazy(t, "restart-current"), kafkatest.Lazy(t, "restart-peer")
	current := k1.Settings(cluster.Plaintext, "")
	// The target through TLS and SCRAM: reconnecting redoes both.
	peer := k2.Settings(cluster.SASLSSL, cluster.MechanismSCRAMSHA512)
	restarted := k1
	if target {
		restarted = k2
	}
	const partitions, total = 4, 40000
	// NewTopic waits for the leaders, so the producer's first requests do
	// not meet a topic the broker does not serve yet.
	topic := kafkatest.NewTopic(t, k1, partitions, nil)
	tk := newTask("restart", task.DirectionPush, []string{topic})

	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	restartDone := make(chan struct{})
	type streamed struct {
		acked    int64
		failures int
		last     error
	}
	result := make(chan streamed, 1)
	go func() {
		var s streamed
		s.acked, s.failures, s.last = stream(ctx, current, topic, partitions, total, restartDone)
		result <- s
	}()
	reps := startTask(t, tk, current, peer)

	if _, err := e2e.WaitFor(ctx, peer, topic, 5000, nil); err != nil {
		close(restartDone)
		t.Fatal(err)
	}
	atRestart, _ := e2e.Count(ctx, peer, topic)
	began := time.Now()
	if kill {
		if err := restarted.Kill(); err != nil {
			t.Fatal(err)
		}
	}
	err := restarted.Restart(ctx)
	close(restartDone)
	if err != nil {
		t.Fatal(err)
	}
	down := time.Since(began)
	s := <-result
	if s.acked < total {
		t.Fatalf("produced %d of %d records: %v", s.acked, total, s.last)
	}
	if s.failures > 0 {
		t.Logf("the producer retried %d chunk(s) while the source was down; last error: %v", s.failures, s.last)
	}

	want := waitCaughtUp(t, reps[0], current, topic, 3*time.Minute)
	rep := verifyCopy(t, current, topic, peer, topic, want, e2e.VerifyOptions{AllowDuplicates: true})
	st := reps[0].Status()
	t.Logf("%s broker restarted (killed: %v) with %d records on the target, down and back in %s; %s; duplicates %d (%.2f%% of %d); flow restarts %d, last error: %s",
		restarted.Name(), kill, atRestart, down.Round(time.Millisecond), rep.String(), rep.Duplicated,
		100*float64(rep.Duplicated)/float64(want), want, st.Restarts, st.LastError)
	if rep.Missing != 0 || int64(rep.Replicated) != want {
		t.Fatalf("records lost: %s", rep.String())
	}
	waitFor(t, func() error {
		if st := reps[0].Status(); st.State != task.StateRunning {
			return fmt.Errorf("flow is %s after the restart: %s", st.State, st.Reason)
		}
		return nil
	})
}

// stream produces to topic in small chunks at a bounded pace until at least
// total records are acknowledged and done is closed, so records flow before,
// during and after the restart. A chunk's batches are sent again for up to
// a minute (idempotent: written once); a chunk that fails even so is
// followed by the next, whose keys continue from the partitions' end
// offsets. It returns the records acknowledged, the failed chunks and the
// last failure.
func stream(ctx context.Context, s cluster.Settings, topic string, partitions, total int, done <-chan struct{}) (int64, int, error) {
	return streamEvery(ctx, s, topic, partitions, total, done, 50*time.Millisecond) // at most 5,000 records/s
}

// streamInBackground runs streamEvery in a goroutine of its own for at
// most limit; the channel says whether all total records were
// acknowledged.
func streamInBackground(s cluster.Settings, topic string, partitions, total int, done <-chan struct{}, every, limit time.Duration) <-chan error {
	produced := make(chan error, 1)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), limit)
		defer cancel()
		acked, _, last := streamEvery(ctx, s, topic, partitions, total, done, every)
		if acked < int64(total) {
			produced <- fmt.Errorf("produced %d of %d records: %w", acked, total, last)
			return
		}
		produced <- nil
	}()
	return produced
}

// streamEvery is stream at 250 records every interval at most.
func streamEvery(ctx context.Context, s cluster.Settings, topic string, partitions, total int, done <-chan struct{}, every time.Duration) (int64, int, error) {
	const chunk = 250
	tick := time.NewTicker(every)
	defer tick.Stop()
	var (
		acked    int64
		failures int
		last     error
	)
	for {
		if acked >= int64(total) {
			select {
			case <-done:
				return acked, failures, last
			default:
			}
		}
		// Retries ride out a broker's death: a chunk given up on could be
		// written later, and the next chunk's keys would repeat it.
		res, err := e2e.Produce(ctx, s, topic, partitions, chunk, 200, e2e.RetryFor(time.Minute))
		acked += res.Records
		if err != nil {
			if ctx.Err() != nil {
				return acked, failures, err
			}
			failures++
			last = err
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return acked, failures, ctx.Err()
		}
	}
}

// waitCaughtUp waits until the flow's progress reached the source's end
// offset on every partition (the target acknowledged every record) and
// returns the source's record count. Counting the target's offsets would
// not do: duplicates make the count reach the total before the last
// records are copied.
func waitCaughtUp(t *testing.T, r *Replicator, s cluster.Settings, topic string, timeout time.Duration) int64 {
	t.Helper()
	cfg, err := s.Config("kmirror-test-ends")
	if err != nil {
		t.Fatal(err)
	}
	client, err := sarama.NewClient(s.BootstrapServers, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	ends := map[int32]int64{}
	var records int64
	ps, err := client.Partitions(topic)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps {
		end, err := client.GetOffset(topic, p, sarama.OffsetNewest)
		if err != nil {
			t.Fatal(err)
		}
		start, err := client.GetOffset(topic, p, sarama.OffsetOldest)
		if err != nil {
			t.Fatal(err)
		}
		ends[p] = end
		records += end - start
	}
	deadline := time.Now().Add(timeout)
	for {
		st := dataOnly(r.Status())
		err := errors.New("no partitions yet")
		if len(st.Partitions) == len(ends) {
			err = nil
			for _, p := range st.Partitions {
				if p.NextOffset != ends[p.Partition] {
					err = fmt.Errorf("partition %d at %d of %d", p.Partition, p.NextOffset, ends[p.Partition])
					break
				}
			}
		}
		if err == nil {
			return records
		}
		if time.Now().After(deadline) {
			t.Fatalf("the flow did not catch up in %s: %v; state %s, restarts %d, last error: %s",
				timeout, err, st.State, st.Restarts, st.LastError)
		}
		time.Sleep(100 * time.Millisecond) // polling interval
	}
}

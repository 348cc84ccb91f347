package replicator

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/embedded"
	"github.com/kmirror/kmirror/internal/task"
)

// Records the source deletes (retention) before they are copied are
// counted as expired in the status, not only mentioned in the last error.
func TestRecordsExpiredOnTheSourceAreCounted(t *testing.T) {
	a, b := startFakes(t)
	createTopic(t, a, "orders", 1)
	produceKeys(t, a, "orders", 1, 0, 10)
	f := pushFlow(t, a, b, task.Rules{Direction: task.DirectionPush, Topics: []string{"orders"}, Tasks: 1,
		ReplicationFactor: 1, StartOffset: task.StartEarliest})
	r, stop := startStoppable(f)
	waitProgress(t, r, 10)
	stop()
	// While the task is stopped, 30 more records arrive and retention
	// deletes the source up to offset 25: 10..24 are gone uncopied.
	produceKeys(t, a, "orders", 1, 10, 30)
	_, srcAdmin := admin(t, a)
	if err := srcAdmin.DeleteRecords("orders", map[int32]int64{0: 25}); err != nil {
		t.Fatal(err)
	}
	r, stop = startStoppable(f)
	defer stop()
	waitProgress(t, r, 40)
	st := r.Status()
	if st.ExpiredOnSource != 15 || st.Partitions[0].ExpiredOnSource != 15 {
		t.Fatalf("expired on source: flow %d, partition %d; want 15", st.ExpiredOnSource, st.Partitions[0].ExpiredOnSource)
	}
	if got := targetTotal(t, b, "orders", 1); got != 10+15 {
		t.Fatalf("target holds %d, want 25 (10 before, 25..39 after)", got)
	}
}

// A target partition whose end went back before what it acknowledged lost
// those records: counted and reported with the range, as loss.
func TestTargetThatLostAcknowledgedRecordsIsReportedAsLoss(t *testing.T) {
	_, b := startFakes(t)
	createTopic(t, b, "orders", 1)
	produceKeys(t, b, "orders", 1, 0, 40) // the target holds 0..39
	dst, _ := admin(t, b)
	state := newFlowState("A->B")
	ps := state.partition(Partition{Source: "orders", Target: "orders", Partition: 0})
	ps.lastUp.Store(1099)
	ps.lastDown.Store(99) // it had acknowledged up to 99
	c := &partitionCopy{w: &worker{dst: dst, state: state, log: slog.Default()}, ps: ps}
	c.checkTargetLoss(sarama.ErrOutOfOrderSequenceNumber)
	st := state.snapshot(time.Now())
	if st.LostOnTarget != 60 {
		t.Fatalf("lost on target %d, want 60 (offsets 40-99)", st.LostOnTarget)
	}
	if !strings.Contains(st.LastError, "lost 60 records it had acknowledged (target offsets 40-99") {
		t.Fatalf("last error %q", st.LastError)
	}
	// A target that still holds everything acknowledged lost nothing.
	ps.lastDown.Store(39)
	c.checkTargetLoss(sarama.ErrOutOfOrderSequenceNumber)
	if st := state.snapshot(time.Now()); st.LostOnTarget != 60 {
		t.Fatalf("lost on target %d after a check with nothing lost, want still 60", st.LostOnTarget)
	}
}

// A flow that restarts (after errors, or a stop) resumes from progress
// committed at a downstream position the target no longer reaches: the
// target lost records it had acknowledged while nothing was copying to
// it. They are counted as lost and the copy goes on at the end; a target
// that ends later holds records copied again; one that ends there, none.
// (Found in CI: an unclean election during the flow's restart passed
// 100 lost records over.)
func TestResumeCountsWhatTheTargetLostSinceTheProgress(t *testing.T) {
	_, b := startFakes(t)
	createTopic(t, b, "orders", 1)
	produceKeys(t, b, "orders", 1, 0, 40) // the target holds 0..39
	dst, _ := admin(t, b)
	state := newFlowState("A->B")
	ps := state.partition(Partition{Source: "orders", Target: "orders", Partition: 0})
	w := &worker{dst: dst, state: state, log: slog.Default()}
	for _, tc := range []struct {
		progDown, want, lost, recopied int64
	}{
		{progDown: 100, want: 40, lost: 60},              // committed after offset 99, the target ends at 40
		{progDown: 40, want: 40, lost: 60},               // exactly there: nothing more lost
		{progDown: 30, want: 30, lost: 60, recopied: 10}, // the target holds 10 more: copied again
	} {
		if got := w.reconcileResume(dst, ps, 1100, tc.progDown); got != tc.want {
			t.Errorf("progress at %d: resumes at %d, want %d", tc.progDown, got, tc.want)
		}
		st := state.snapshot(time.Now())
		if st.LostOnTarget != tc.lost || st.Recopied != tc.recopied {
			t.Errorf("progress at %d: lost %d, recopied %d; want %d, %d", tc.progDown, st.LostOnTarget, st.Recopied, tc.lost, tc.recopied)
		}
	}
	if st := state.snapshot(time.Now()); !strings.Contains(st.LastError, "lost 60 records it had acknowledged (target offsets 40-99") {
		t.Errorf("last error %q", st.LastError)
	}

	// Found while copying (a sequence error), then again at the restart
	// that error caused, from progress committed before it: counted once.
	state = newFlowState("A->B")
	ps = state.partition(Partition{Source: "orders", Target: "orders", Partition: 0})
	w = &worker{dst: dst, state: state, log: slog.Default()}
	ps.lastUp.Store(1099)
	ps.lastDown.Store(99)
	(&partitionCopy{w: w, ps: ps}).checkTargetLoss(sarama.ErrOutOfOrderSequenceNumber)
	if got := w.reconcileResume(dst, ps, 1100, 100); got != 40 {
		t.Errorf("resumes at %d after the loss found while copying, want 40", got)
	}
	if st := state.snapshot(time.Now()); st.LostOnTarget != 60 {
		t.Errorf("lost on target %d after the restart, want the 60 found while copying, once", st.LostOnTarget)
	}

	// New records acknowledged over those offsets (40..149), then lost in
	// turn down to 60: a new loss, counted in full.
	ps.mu.Lock()
	ps.forgetRewrittenLoss(150)
	ps.mu.Unlock()
	if n := ps.countTargetLoss(60, 150); n != 90 {
		t.Errorf("a second loss of rewritten offsets 60-149 counted %d, want 90", n)
	}
}

// One partition the target refuses to let kmirror write (no rights) stops
// only itself: it waits, retrying, with its reason in the status
// (DEGRADED), while the flow's other partition copies everything; once
// rights are granted it catches up, nothing lost or copied twice.
func TestDeniedPartitionWaitsAloneAndCatchesUp(t *testing.T) {
	const n = 300
	cs, a, b := startFaultyPair(t, n)
	denied := cs[1].Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: "A.orders", Partitions: []int32{0},
		Err: kerr.TopicAuthorizationFailed, Count: -1})
	f := pushFlow(t, a, b, task.Rules{Direction: task.DirectionPush, Topics: []string{"orders"}, Tasks: 1,
		RenameTopics: true, ReplicationFactor: 1, StartOffset: "earliest", Compression: "none"})
	r := New(f, Options{RefreshInterval: 500 * time.Millisecond, CommitInterval: 100 * time.Millisecond, DegradedAfter: time.Second}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = r.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()
	waitFor(t, func() error {
		st := r.Status()
		var p1 int64
		for _, p := range st.Partitions {
			if p.Partition == 1 {
				p1 = p.NextOffset
			}
		}
		if p1 != n || st.State != task.StateDegraded || !strings.Contains(st.Reason, "A.orders-0") || !strings.Contains(st.Reason, "WRITE") {
			return fmt.Errorf("partition 1 at %d; state %s (%s)", p1, st.State, st.Reason)
		}
		return nil
	})
	checkExactCopy(t, b, 1, n)
	denied.Remove() // the operator grants the rights
	waitFor(t, func() error {
		if st := r.Status(); st.Records != 2*n || st.LagRecords != 0 || st.State != task.StateRunning {
			return fmt.Errorf("status %s records=%d lag=%d reason=%q", st.State, st.Records, st.LagRecords, st.Reason)
		}
		return nil
	})
	checkExactCopy(t, b, 0, n)
	if st := r.Status(); st.Restarts != 0 || st.Recopied != 0 {
		t.Fatalf("flow restarted %d times, %d records copied again: the denied partition should have waited alone", st.Restarts, st.Recopied)
	}
}

// A target topic that cannot be created stops only its own copy, from the
// first planning round on: the other topic is copied in full, the flow is
// DEGRADED naming the topic and why, and once the target allows it the
// topic is created and copied.
func TestTopicThatCannotBeCreatedWaitsAlone(t *testing.T) {
	cs, err := embedded.StartAll([]string{"A", "B"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cs.Close)
	a, b := cs[0].Settings(), cs[1].Settings()
	createTopic(t, a, "good", 1)
	createTopic(t, a, "bad", 1)
	produceKeys(t, a, "good", 1, 0, 50)
	produceKeys(t, a, "bad", 1, 0, 30)
	refused := cs[1].Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.CreateTopics}, Topic: "A.bad",
		Err: kerr.PolicyViolation, Count: -1})
	f := pushFlow(t, a, b, task.Rules{Direction: task.DirectionPush, TopicsRegex: "good|bad", Tasks: 1,
		RenameTopics: true, ReplicationFactor: 1, StartOffset: task.StartEarliest})
	r := runFlow(t, f)
	waitFor(t, func() error {
		st := r.Status()
		if st.State != task.StateDegraded || !strings.Contains(st.Reason, "A.bad") || targetTotal(t, b, "A.good", 1) != 50 {
			return fmt.Errorf("state %s (%s), A.good has %d", st.State, st.Reason, targetTotal(t, b, "A.good", 1))
		}
		return nil
	})
	refused.Remove()
	waitFor(t, func() error {
		if st := r.Status(); st.State != task.StateRunning || targetTotal(t, b, "A.bad", 1) != 30 {
			return fmt.Errorf("state %s (%s), A.bad has %d", st.State, st.Reason, targetTotal(t, b, "A.bad", 1))
		}
		return nil
	})
}

// A batch written before the position the last acknowledged record left
// (a producer id new since then, after a worker started again, writes its
// first batch wherever the partition ends, after an unclean election too,
// with no error): the target lost what lay between. Counted as lost and
// reported with the range; counted once when a sequence error found it
// first; a batch landing there or later loses nothing.
func TestAcknowledgedBelowTheLastPositionCountsTheGapAsLost(t *testing.T) {
	state := newFlowState("A->B")
	ps := state.partition(Partition{Source: "orders", Target: "A.orders", Partition: 0})
	ps.exactlyOnce = true // its syncs wait for a commit: none are sent here
	w := &worker{opts: Options{SyncInterval: time.Hour}, state: state, log: slog.Default()}
	c := &partitionCopy{w: w, ps: ps}
	ack := func(up, base int64) {
		t.Helper()
		var b batch
		b.reset(up)
		for i := range int64(10) {
			b.add(msgAt(up+i, time.UnixMilli(1000)), nil, 10)
		}
		for i := range b.recs {
			b.ptrs = append(b.ptrs, &b.recs[i])
		}
		c.acknowledge(context.Background(), &b, 0, 10, base)
	}
	lost := func(want int64) {
		t.Helper()
		if st := state.snapshot(time.Now()); st.LostOnTarget != want {
			t.Fatalf("lost on target %d, want %d (last error %q)", st.LostOnTarget, want, st.LastError)
		}
	}
	// A fresh start's position is the target's end, other writers'
	// records included: a batch below it is no loss of kmirror's.
	ps.progDown = 200
	ack(990, 150)
	lost(0)

	ps.progDown, ps.resumed = 200, true // resumed from progress committed at target offset 200
	ack(1000, 200)                      // where it left: 200..209
	ack(1010, 215)                      // later (another writer, transaction markers): nothing lost
	lost(0)
	ack(1020, 125) // the target ends at 125: 125..224 were lost
	lost(100)
	if st := state.snapshot(time.Now()); !strings.Contains(st.LastError, "lost 100 records it had acknowledged (target offsets 125-224; found when the next copied record, source offset 1020 of orders-0, landed at target offset 125)") {
		t.Fatalf("last error %q", st.LastError)
	}
	if ps.progDown != 135 {
		t.Fatalf("position after the batch %d, want 135", ps.progDown)
	}

	// Found first by a sequence error, then where the batch written under
	// a new producer id lands: counted once.
	ps.countTargetLoss(100, 135) // as checkTargetLoss counts it on the error
	ack(1030, 100)
	lost(135)

	// The target topic created again under the copy (another id than the
	// one the copy started on): not an election's loss, counted when the
	// copy starts again (targetReplaced).
	_, b := startFakes(t)
	createTopic(t, b, "A.orders", 1)
	w.dst, _ = admin(t, b)
	ps.targetTopicID = "the old topic's id"
	ack(1040, 0)
	lost(135)
}

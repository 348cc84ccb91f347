package replicator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/task"
)

// startStoppable runs a flow until the returned stop (graceful: progress
// committed), so a test can stop it and start it again.
func startStoppable(f Flow) (*Replicator, func()) {
	r := New(f, Options{RefreshInterval: 500 * time.Millisecond, CommitInterval: 100 * time.Millisecond}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = r.Run(ctx) })
	return r, func() { cancel(); wg.Wait() }
}

// waitProgress waits until the flow's progress, summed over its partitions,
// is want and nothing is left to copy.
func waitProgress(t testing.TB, r *Replicator, want int64) {
	t.Helper()
	waitFor(t, func() error {
		st := r.Status()
		var next int64
		for _, p := range st.Partitions {
			next += p.NextOffset
		}
		if next != want || st.LagRecords != 0 {
			return fmt.Errorf("progress %d of %d, lag %d (%s)", next, want, st.LagRecords, st.LastError)
		}
		return nil
	})
}

// targetTotal sums the end offsets of a topic's partitions on s.
func targetTotal(t *testing.T, s cluster.Settings, topic string, partitions int32) int64 {
	t.Helper()
	c, _ := admin(t, s)
	var n int64
	for p := int32(0); p < partitions; p++ {
		end, err := c.GetOffset(topic, p, sarama.OffsetNewest)
		if err != nil {
			return -1
		}
		n += end
	}
	return n
}

func produceKeys(t testing.TB, s cluster.Settings, topic string, partitions int32, from, n int) {
	t.Helper()
	var msgs []*sarama.ProducerMessage
	for i := from; i < from+n; i++ {
		msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Partition: int32(i) % partitions,
			Key: sarama.StringEncoder(fmt.Sprintf("k%d", i)), Value: sarama.StringEncoder("v")})
	}
	produce(t, s, msgs...)
}

// The flow's consumer group expires on the broker while the task is
// stopped (offsets.retention.minutes): the restart continues from the
// progress topic on the target and copies nothing twice.
func TestProgressOutlivesAnExpiredGroup(t *testing.T) {
	a, b := startFakes(t)
	createTopic(t, a, "orders", 2)
	produceKeys(t, a, "orders", 2, 0, 100)
	f := pushFlow(t, a, b, task.Rules{Direction: task.DirectionPush, Topics: []string{"orders"}, Tasks: 2,
		ReplicationFactor: 1, StartOffset: task.StartEarliest})

	r, stop := startStoppable(f)
	waitProgress(t, r, 100)
	stop()

	// What offsets.retention.minutes does to a group with no members.
	_, srcAdmin := admin(t, a)
	if err := srcAdmin.DeleteConsumerGroup(f.Group()); err != nil {
		t.Fatalf("delete group %s: %v", f.Group(), err)
	}
	produceKeys(t, a, "orders", 2, 100, 50)
	r, stop = startStoppable(f)
	defer stop()
	waitProgress(t, r, 150)
	if got := targetTotal(t, b, "orders", 2); got != 150 {
		t.Fatalf("target holds %d records after the restart, want 150 (%d copied twice)", got, got-150)
	}
	if st := dataOnly(r.Status()); st.Recopied != 0 {
		t.Fatalf("restart reports %d records copied again", st.Recopied)
	}
}

// With start offset latest, only the partitions there at the flow's first
// start begin at their end: a topic found later was written after the task
// began, so it is copied from its first record.
func TestLatestAppliesOnlyToPartitionsThereAtTheFirstStart(t *testing.T) {
	a, b := startFakes(t)
	createTopic(t, a, "early", 1)
	produceKeys(t, a, "early", 1, 0, 10) // before the task: not copied
	f := pushFlow(t, a, b, task.Rules{Direction: task.DirectionPush, TopicsRegex: "early|late", Tasks: 1,
		ReplicationFactor: 1, StartOffset: task.StartLatest})
	r := New(f, Options{RefreshInterval: 2 * time.Second, CommitInterval: 100 * time.Millisecond}, nil)
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = r.Run(ctx) })
	defer func() { cancel(); wg.Wait() }()
	waitProgress(t, r, 10)
	produceKeys(t, a, "early", 1, 10, 5)
	// Created and written between two planning rounds.
	createTopic(t, a, "late", 1)
	produceKeys(t, a, "late", 1, 0, 20)
	waitProgress(t, r, 15+20)
	if got := targetTotal(t, b, "early", 1); got != 5 {
		t.Fatalf("early: %d records copied, want the 5 written after the start", got)
	}
	if got := targetTotal(t, b, "late", 1); got != 20 {
		t.Fatalf("late: %d records copied, want all 20 (written after the task began)", got)
	}
}

// A source topic deleted and created again under the same name has a new
// topic id: progress stored for the old one does not apply, the new topic is
// copied from its first record and the status says so.
func TestRecreatedSourceTopicIsCopiedFromItsStart(t *testing.T) {
	a, b := startFakes(t)
	createTopic(t, a, "orders", 1)
	produceKeys(t, a, "orders", 1, 0, 30)
	f := pushFlow(t, a, b, task.Rules{Direction: task.DirectionPush, Topics: []string{"orders"}, Tasks: 1,
		ReplicationFactor: 1, StartOffset: task.StartEarliest})
	r, stop := startStoppable(f)
	waitProgress(t, r, 30)
	stop()
	_, srcAdmin := admin(t, a)
	if err := srcAdmin.DeleteTopic("orders"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() error { // deletion is asynchronous
		return srcAdmin.CreateTopic("orders", &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false)
	})
	produceKeys(t, a, "orders", 1, 100, 40) // more than the stored 30: resuming there would skip 30
	r, stop = startStoppable(f)
	defer stop()
	waitProgress(t, r, 40)
	if got := targetTotal(t, b, "orders", 1); got != 30+40 {
		t.Fatalf("target holds %d records, want 70 (30 of the old topic, all 40 of the new)", got)
	}
	if st := r.Status(); !strings.Contains(st.LastError, "deleted and created again") {
		t.Fatalf("status does not report the recreated topic: %q", st.LastError)
	}
}

// A stop does not wait for a group coordinator that does not answer: the
// commit returns within groupStopWait of the stop, saying so; the next
// commit, while that one is still unanswered, writes the log only; once it
// is answered the group is committed again.
func TestGroupCommitWaitIsBoundedByTheStop(t *testing.T) {
	answer := make(chan struct{})
	defer func() {
		select {
		case <-answer:
		default:
			close(answer)
		}
	}()
	var calls atomic.Int32
	p := &progress{group: "g", log: &progressLog{last: map[*partState]storedProgress{}}}
	p.commitGroupFn = func([]*partState) error {
		calls.Add(1)
		<-answer // a coordinator that does not answer until told to
		return nil
	}
	ctx, stop := context.WithCancel(context.Background())
	returned := make(chan error, 1)
	go func() { returned <- p.commit(ctx, nil, true) }()
	stop()
	var err error
	select {
	case err = <-returned:
	case <-time.After(time.Minute): // a hang detector, far above groupStopWait
		t.Fatal("commit did not return after the stop")
	}
	if err == nil || !strings.Contains(err.Error(), "no answer within") || !strings.Contains(err.Error(), "group g") {
		t.Fatalf("commit after the stop: %v; want an error saying group g did not answer", err)
	}
	if !errors.As(err, new(storedOnce)) || !strings.Contains(err.Error(), "the progress log on the target holds every position, so nothing is copied again") {
		t.Fatalf("final commit with the log written: %v; want it to say the log holds the position", err)
	}
	err = p.commit(context.Background(), nil, false)
	if err == nil || !strings.Contains(err.Error(), "has not answered the last commit") || calls.Load() != 1 {
		t.Fatalf("commit while the last is unanswered: %v (group commits %d); want the log only", err, calls.Load())
	}
	close(answer)
	for p.groupCommits.busy() { // the answered commit ends
		time.Sleep(time.Millisecond)
	}
	if err := p.commit(context.Background(), nil, false); err != nil || calls.Load() != 2 {
		t.Fatalf("commit once answered: %v (group commits %d)", err, calls.Load())
	}
}

// Only a final commit that reached one of the two stores says nothing is
// copied again: a periodic log write may not have been due, and a failed
// one stored nothing.
func TestCommitSaysStoredOnlyWhenAFinalWriteSucceeded(t *testing.T) {
	group, logErr := errors.New("group down"), errors.New("log down")
	for _, c := range []struct {
		name            string
		groupErr, logEr error
		final, stored   bool
	}{
		{"final, log written", group, nil, true, true},
		{"final, group written", nil, logErr, true, true},
		{"final, log failed too", group, logErr, true, false},
		{"periodic, group written", nil, logErr, false, false},
		{"periodic, log maybe not due", group, nil, false, false},
		{"final, all written", nil, nil, true, false},
	} {
		err := joinCommit(c.groupErr, c.logEr, c.final)
		if got := errors.As(err, new(storedOnce)); got != c.stored {
			t.Errorf("%s: %v: stored once %v, want %v", c.name, err, got, c.stored)
		}
		if c.groupErr != nil && !errors.Is(err, c.groupErr) {
			t.Errorf("%s: %v does not carry the group's error", c.name, err)
		}
		if c.logEr != nil && !errors.Is(err, c.logEr) {
			t.Errorf("%s: %v does not carry the log's error", c.name, err)
		}
	}
}

// Workers started again while the progress log cannot be read go on from
// what this process copied, not from the group's position, which may lag
// it and knows no target topic id: here the target topic was replaced and
// its copy started over at 0 while the group still says 1000, and the
// group's position would resume ahead of what the new topic holds. A
// partition without progress in this process, or exactly-once (no known),
// waits for the log.
func TestLoadWithoutTheLogTakesWhatThisProcessCopied(t *testing.T) {
	a, b := startFakes(t)
	createTopic(t, a, "orders", 1)
	src, _ := admin(t, a)
	dst, _ := admin(t, b)
	f := Flow{Task: "t", Source: Endpoint{Alias: "A"}, Target: Endpoint{Alias: "B"}}
	part := Partition{Source: "orders", Target: "A.orders", Partition: 0}
	plog, err := newProgressLog(dst, "no-progress-topic", f, time.Hour) // never created: unreadable
	if err != nil {
		t.Fatal(err)
	}
	defer plog.close()
	p, err := newProgress(src, "kmirror.t", plog)
	if err != nil {
		t.Fatal(err)
	}
	committed := &partState{Partition: part}
	committed.next.Store(1000)
	committed.progDown = 1000
	if err := p.commitGroup([]*partState{committed}); err != nil {
		t.Fatal(err)
	}
	memory := storedProgress{offset: 0, down: 0, targetTopicID: "new-target-id"}
	known := func(Partition) (storedProgress, bool) { return memory, true }
	stored, logErr, err := p.load([]Partition{part}, known)
	if err != nil || logErr == nil {
		t.Fatalf("load without the log: err %v, log error %v; want the log's error only", err, logErr)
	}
	if got := stored[part]; got != memory {
		t.Fatalf("resumed from %+v, want what this process copied, %+v", got, memory)
	}
	for name, k := range map[string]func(Partition) (storedProgress, bool){
		"no progress in this process": func(Partition) (storedProgress, bool) { return noProgress, false },
		"exactly once":                nil,
	} {
		if _, _, err := p.load([]Partition{part}, k); err == nil {
			t.Errorf("%s: load without the log succeeded; want it to wait for the log", name)
		}
	}
}

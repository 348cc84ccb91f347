package replicator

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/clustercheck"
	"github.com/kmirror/kmirror/internal/task"
)

// transaction is an exactly-once worker's writing on the target
// (docs/DESIGN.md, "Exactly once"): the records its partitions copy and the
// progress records that cover them go to the target in one Kafka
// transaction, committed every interval. sarama's transactional producer is
// not used for the copy (it is its AsyncProducer, whose per-record overhead
// the copy path avoids, copy.go); the protocol's requests are sarama's, the
// sequencing is ours:
//
//   - a partition holds the gate (read) from the first produce attempt of a
//     batch until the batch is acknowledged; between attempts it lets go
//     only while every attempt so far was refused (none is left without an
//     answer). A commit holds it (write), so it never commits while a
//     batch's outcome is unknown (a committed transaction holding records
//     its progress does not cover would copy them twice after a crash);
//   - a partition is added to the open transaction before its first batch
//     in it (AddPartitionsToTxn), the progress topic's partition before
//     the progress records; neither while this producer's last marker
//     there has not landed (settle, progressrange.go);
//   - the transactional id is stable per worker (task.TransactionalID), so
//     the InitProducerId of a restarted worker aborts what its predecessor
//     left open and fences it: a zombie can never commit after its
//     successor started.
type transaction struct {
	id      string
	client  sarama.Client // the target
	timeout time.Duration
	pid     int64
	epoch   int16

	gate sync.RWMutex
	// spoiled, once set, says why the open transaction may hold records
	// its progress does not cover: it is never committed (the next start
	// aborts it).
	spoiled atomic.Pointer[error]

	mu sync.Mutex
	// added are the partitions in the open transaction; openedAt is when
	// the first was added (zero: none open).
	added    map[tp]bool
	openedAt time.Time
	// addMu lets one AddPartitionsToTxn out at a time.
	addMu sync.Mutex
	// settled are the target partitions whose last transaction's marker
	// was seen (or that hold nothing open of ours); a partition outside it
	// is checked before it joins a transaction (settle; the progress
	// topic's partition by progressClosed). Guarded by addMu.
	settled map[tp]bool

	task, flow    string // the progress records' keys
	progressTopic string
	progressSeq   int32 // sequence on the progress topic's partition 0; commit's alone
}

func newTransaction(target sarama.Client, id string, f Flow) *transaction {
	return &transaction{id: id, client: target, timeout: task.TransactionTimeout(f.TransactionInterval), task: f.Task, flow: f.Name(),
		progressTopic: f.ProgressTopic,
		added:         map[tp]bool{}, settled: map[tp]bool{}, pid: -1, epoch: -1}
}

// txnVersion is the version sarama's transaction manager uses for
// AddPartitionsToTxn and EndTxn (2 adds PRODUCER_FENCED).
func txnVersion(v sarama.KafkaVersion) int16 {
	switch {
	case v.IsAtLeast(sarama.V2_8_0_0):
		return 3
	case v.IsAtLeast(sarama.V2_7_0_0):
		return 2
	case v.IsAtLeast(sarama.V2_0_0_0):
		return 1
	}
	return 0
}

// txnBusy says whether a transaction request may succeed when asked again
// shortly: the coordinator loading, moving, or still completing the last
// transaction (CONCURRENT_TRANSACTIONS right after a commit), or the
// connection to it broken.
func txnBusy(err error) bool {
	return coordinatorBusy(err) || errors.Is(err, sarama.ErrConcurrentTransactions) ||
		connBroken(err) ||
		errors.Is(err, sarama.ErrRequestTimedOut) || errors.Is(err, sarama.ErrOutOfBrokers)
}

// coordinatorCall calls f with the transaction coordinator until it
// succeeds, fails for good, or stays busy for coordinatorWait (or ctx
// ends). A coordinator that moved or broke is looked up again.
//
// There is always one attempt, and an attempt under way when ctx ends is
// waited for at most answerWait (as a produce answer in flight is): sarama's
// calls take no context, and one to a frozen broker waits for its read
// timeout, looking the coordinator up again several times that (over two
// minutes seen, ci42) — a produce adding its partition held the
// transaction's gate that long, and a stop waited for it. A healthy
// coordinator answers well within answerWait, so a stop does not lose the
// commit it interrupts. An attempt given up on finishes in the background:
// f writes its results only into variables the caller reads after a nil
// error. answerWait < 0 waits for every answer (init: an InitProducerId
// left behind could fence the worker that starts next).
func (t *transaction) coordinatorCall(ctx context.Context, pause, answerWait time.Duration, f func(*sarama.Broker) error) error {
	deadline := time.Now().Add(coordinatorWait)
	for {
		var coord *sarama.Broker
		var err error
		if !interruptible(ctx, answerWait, func() {
			if coord, err = t.client.TransactionCoordinator(t.id); err == nil {
				err = f(coord)
			}
		}) {
			return fmt.Errorf("the transaction coordinator gave no answer within %s of the stop: given up (%w)", answerWait, context.Cause(ctx))
		}
		if err == nil || !txnBusy(err) || time.Now().After(deadline) || ctx.Err() != nil {
			return err
		}
		if connBroken(err) {
			closeIfBroken(coord, err)
		}
		if connBroken(err) || errors.Is(err, sarama.ErrNotCoordinatorForConsumer) || errors.Is(err, sarama.ErrConsumerCoordinatorNotAvailable) {
			if !interruptible(ctx, answerWait, func() { _ = t.client.RefreshTransactionCoordinator(t.id) }) {
				return err
			}
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(pause):
		}
	}
}

// init fences every earlier producer of the transactional id (aborting the
// transaction it left open) and takes the id's producer id and epoch.
func (t *transaction) init(ctx context.Context) error {
	var pid int64
	var epoch int16
	err := t.coordinatorCall(ctx, 100*time.Millisecond, -1, func(*sarama.Broker) (err error) {
		pid, epoch, err = clustercheck.InitTransactions(t.client, t.id, t.timeout)
		return err
	})
	if err != nil {
		return fmt.Errorf("start exactly-once transactions on the target: %w", clustercheck.ExplainTransactions(err, t.id, t.timeout))
	}
	t.pid, t.epoch = pid, epoch
	return nil
}

// progressSettled waits until the progress topic holds no transaction
// that was open when it was called: the fence (init) ended this worker's
// predecessor's, but the flow's other workers share the partition, and a
// predecessor of theirs killed inside its commit (its progress written, not
// yet committed) holds read_committed readers before it, this worker's
// newer committed progress included, until that worker's own fence or the
// transaction timeout ends it (seen: 415 records copied again after a
// kill -9 at a commit). Bounded by the transaction timeout.
func (t *transaction) progressSettled(ctx context.Context) error {
	part := tp{t.progressTopic, 0}
	lso, end, err := openRange(t.client, part)
	if err != nil || lso >= end {
		return nil // nothing open, or not there yet (checked before its first write)
	}
	deadline := time.Now().Add(t.timeout + 10*time.Second)
	for lso < end {
		if time.Now().After(deadline) {
			return fmt.Errorf("progress topic %s holds a transaction open at offset %d past the transaction timeout (%s): its progress cannot be read; the flow starts again", t.progressTopic, lso, t.timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(100 * time.Millisecond):
		}
		if lso, err = lastStableOffset(t.client, part.topic, part.partition); err != nil {
			return fmt.Errorf("last stable offset of %s: %w", t.progressTopic, err)
		}
	}
	return nil
}

// endOver runs an empty transaction over tps and ends it (commit or
// abort): its markers close what the producer id left open there (see
// worker.closeLeftovers). Partitions that do not exist are left out.
func (t *transaction) endOver(ctx context.Context, tps []tp, commit bool) error {
	pending := map[string][]int32{}
	for _, part := range tps {
		pending[part.topic] = append(pending[part.topic], part.partition)
	}
	for len(pending) > 0 {
		unknown, err := t.addPartitions(ctx, pending)
		if err != nil {
			return t.explain("close what an earlier run left open on the target", err)
		}
		if len(unknown) == 0 {
			break
		}
		for _, part := range unknown { // asked again without them
			pending[part.topic] = slices.DeleteFunc(pending[part.topic], func(p int32) bool { return p == part.partition })
			if len(pending[part.topic]) == 0 {
				delete(pending, part.topic)
			}
		}
	}
	if len(pending) == 0 {
		return nil
	}
	return t.end(ctx, commit)
}

// addPartitions adds the partitions to the open transaction
// (AddPartitionsToTxn), asking again while the coordinator is busy. It
// returns those the target does not have (the others were not added then:
// Kafka adds all or none); any other refusal is the error.
func (t *transaction) addPartitions(ctx context.Context, pending map[string][]int32) ([]tp, error) {
	var unknown []tp
	pid, epoch := t.pid, t.epoch
	err := t.coordinatorCall(ctx, 20*time.Millisecond, stopAnswerWait, func(coord *sarama.Broker) error {
		unknown = unknown[:0]
		resp, err := coord.AddPartitionsToTxn(&sarama.AddPartitionsToTxnRequest{Version: txnVersion(t.client.Config().Version),
			TransactionalID: t.id, ProducerID: pid, ProducerEpoch: epoch, TopicPartitions: pending})
		if err != nil {
			return err
		}
		var failed error
		for topic, pes := range resp.Errors {
			for _, pe := range pes {
				switch {
				case errors.Is(pe.Err, sarama.ErrNoError), errors.Is(pe.Err, sarama.ErrOperationNotAttempted):
				case errors.Is(pe.Err, sarama.ErrUnknownTopicOrPartition):
					unknown = append(unknown, tp{topic, pe.Partition})
				case failed == nil:
					failed = pe.Err
				}
			}
		}
		return failed
	})
	if err != nil {
		return nil, err // an attempt given up on may still write unknown
	}
	return unknown, nil
}

// join holds the gate for a produce attempt of a batch of topic-part, with
// the partition in the open transaction. On an error the gate is not held.
func (t *transaction) join(ctx context.Context, topic string, part int32) error {
	t.gate.RLock()
	if why := t.spoiled.Load(); why != nil {
		// Nothing more goes into a transaction that will not commit.
		t.gate.RUnlock()
		return fmt.Errorf("transaction not committed: %w", *why)
	}
	if err := t.add(ctx, tp{topic, part}); err != nil {
		t.gate.RUnlock()
		return err
	}
	return nil
}

// leave lets a commit go ahead of the partition's next batch.
func (t *transaction) leave() { t.gate.RUnlock() }

// add puts part in the open transaction unless it is in already. Adds go one
// at a time: they are rare (a partition's first batch in a transaction).
func (t *transaction) add(ctx context.Context, part tp) error {
	t.mu.Lock()
	in := t.added[part]
	t.mu.Unlock()
	if in {
		return nil
	}
	t.addMu.Lock()
	defer t.addMu.Unlock()
	t.mu.Lock()
	in = t.added[part]
	t.mu.Unlock()
	if in {
		return nil
	}
	if !t.settled[part] {
		var err error
		if part.topic == t.progressTopic {
			err = t.progressClosed(ctx) // shared by the flow's workers: ours alone
		} else {
			err = t.settle(ctx, part)
		}
		if err != nil {
			return err
		}
		t.settled[part] = true
	}
	unknown, err := t.addPartitions(ctx, map[string][]int32{part.topic: {part.partition}})
	if err == nil && len(unknown) > 0 {
		err = sarama.ErrUnknownTopicOrPartition // retried as a produce would be
	}
	if err != nil {
		return t.explain(fmt.Sprintf("add %s-%d to the transaction", part.topic, part.partition), err)
	}
	t.mu.Lock()
	if len(t.added) == 0 {
		t.openedAt = time.Now()
	}
	t.added[part] = true
	t.mu.Unlock()
	return nil
}

// settleWait bounds how long a partition's last marker is waited for
// before it counts as skipped.
const settleWait = 5 * time.Second

// settle waits until nothing of ours is open on part (its last stable offset
// is its end): the last transaction's marker landed. Kafka skips the marker
// of a partition without a leader when the coordinator writes them, and
// records written there in the next transaction would share one open range
// with the last one's, to take a single outcome — committed records aborted
// or aborted ones committed (measured: a record read twice). A marker that
// does not come is an error that restarts the worker, whose start closes
// the range as the progress says (worker.closeLeftovers); a partition that
// cannot be asked (no leader) fails as a produce would, and is retried.
func (t *transaction) settle(ctx context.Context, part tp) error {
	deadline := time.Now().Add(settleWait)
	for pause := 5 * time.Millisecond; ; pause = min(2*pause, 100*time.Millisecond) {
		// Given up a while after a stop, as coordinatorCall's attempts
		// are: a produce holds the gate here.
		var lso, end int64
		var err error
		if !interruptible(ctx, stopAnswerWait, func() { lso, end, err = openRange(t.client, part) }) {
			return fmt.Errorf("target %s-%d gave no answer within %s of the stop: given up (%w)", part.topic, part.partition, stopAnswerWait, context.Cause(ctx))
		}
		if err != nil {
			return err
		}
		if lso >= end {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("target %s-%d holds records of this flow's last transaction still open at offsets %d-%d after %s: Kafka skipped its marker while the partition had no leader; the flow starts again to close them as its progress says", part.topic, part.partition, lso, end-1, settleWait)
		}
		time.Sleep(pause) // the marker is written just after the commit
	}
}

// openRange is where read_committed readers of part stop now (its last
// stable offset) and its end: below the end, a transaction is open there.
func openRange(client sarama.Client, part tp) (lso, end int64, err error) {
	if lso, err = lastStableOffset(client, part.topic, part.partition); err != nil {
		return 0, 0, err
	}
	end, err = client.GetOffset(part.topic, part.partition, sarama.OffsetNewest)
	return lso, end, err
}

// fencedError says another producer took the transactional id over: a
// second kmirror copying the same flow. The flow stops (it is not
// restarted: two kmirrors would fence each other in turn) and says so.
type fencedError struct {
	id  string
	err error
}

func (e *fencedError) Error() string {
	// sarama has no text for PRODUCER_FENCED ("Unknown error ... 90").
	code := "INVALID_PRODUCER_EPOCH"
	if errors.Is(e.err, sarama.ErrProducerFenced) {
		code = "PRODUCER_FENCED"
	}
	return fmt.Sprintf("fenced on the target (%s): another producer started with this flow's transactional id %s — another kmirror is copying this task's flow; this one stops copying it so the two do not take turns: stop the other, then restart this task", code, e.id)
}

func (e *fencedError) Unwrap() error { return e.err }

// fencedBy says whether err means the transactional id's epoch moved on
// past ours.
func fencedBy(err error) bool {
	return errors.Is(err, sarama.ErrProducerFenced) || errors.Is(err, sarama.ErrInvalidProducerEpoch)
}

// explain words a transaction error of what. A fence within the
// transaction's timeout is another producer's (fencedError); past it, the
// coordinator aborted the transaction for its age (it bumps the epoch
// too), and the worker starts again from the last commit.
func (t *transaction) explain(what string, err error) error {
	if errors.As(err, new(*fencedError)) {
		return err // explained already
	}
	if !fencedBy(err) {
		return fmt.Errorf("%s: %w", what, err)
	}
	t.mu.Lock()
	opened := t.openedAt
	t.mu.Unlock()
	if !opened.IsZero() && time.Since(opened) >= t.timeout-time.Second {
		return fmt.Errorf("%s: the transaction was open %s, past its timeout of %s, and the target aborted it (%w): its records are copied again from the last commit (never seen by read_committed readers)",
			what, time.Since(opened).Round(time.Second), t.timeout, err)
	}
	return &fencedError{id: t.id, err: err}
}

// spoil marks the open transaction never to be committed.
func (t *transaction) spoil(why error) { t.spoiled.CompareAndSwap(nil, &why) }

// crashAt, set by tests only, is called at the named points of a commit
// that writes progress, so a test can kill the process exactly there.
var crashAt func(point string)

// The points of a commit crashAt is called at.
const (
	crashBeforeProgress = "records-written"  // the records are in the transaction, their progress not yet
	crashBeforeCommit   = "progress-written" // records and progress are in, not committed
	crashBeforeGroup    = "committed"        // committed, the source group not yet
)

func crashPoint(point string) {
	if crashAt != nil {
		crashAt(point)
	}
}

// committedSyncs are a partition's offset syncs released by a commit.
type committedSyncs struct {
	ps    *partState
	syncs []pendingSync
}

// commit writes the progress of every partition of states whose
// acknowledged position moved since the last commit and commits the
// transaction with it. It returns the offset syncs the commit released
// (decided when their records were acknowledged, written only now that
// the records are committed). An error leaves the transaction to be
// aborted: the worker starts again from the last commit.
func (t *transaction) commit(ctx context.Context, states []*partState) ([]committedSyncs, error) {
	t.gate.Lock()
	defer t.gate.Unlock()
	if why := t.spoiled.Load(); why != nil {
		return nil, fmt.Errorf("transaction not committed: %w, so it may hold records its progress does not cover; the next start aborts it and copies them again", *why)
	}
	type moved struct {
		ps *partState
		sp storedProgress
	}
	var ms []moved
	for _, ps := range states {
		if sp, changed := ps.uncommitted(); changed {
			ms = append(ms, moved{ps, sp})
		}
	}
	t.mu.Lock()
	open := len(t.added) > 0
	t.mu.Unlock()
	if len(ms) == 0 && !open {
		return nil, nil
	}
	if len(ms) > 0 {
		recs := make([]*sarama.Record, 0, len(ms))
		for i, m := range ms {
			kb, vb := progressBytes(progressKey{t.task, t.flow, m.ps.Source, m.ps.Partition.Partition},
				progressValue{Next: m.sp.offset, Down: m.sp.down, TopicID: m.sp.topicID, TargetTopicID: m.sp.targetTopicID})
			recs = append(recs, &sarama.Record{Key: kb, Value: vb, OffsetDelta: int64(i)})
		}
		crashPoint(crashBeforeProgress)
		if err := t.writeProgress(ctx, recs); err != nil {
			t.spoil(err) // the progress may be in, in part or not at all
			return nil, err
		}
		crashPoint(crashBeforeCommit)
	}
	if err := t.end(ctx, true); err != nil {
		t.spoil(err)
		return nil, err
	}
	if len(ms) > 0 {
		crashPoint(crashBeforeGroup)
	}
	t.addMu.Lock()
	t.mu.Lock()
	for part := range t.added {
		delete(t.settled, part) // its marker is on its way: seen before its next write
	}
	clear(t.added)
	t.openedAt = time.Time{}
	t.mu.Unlock()
	t.addMu.Unlock()
	out := make([]committedSyncs, 0, len(ms))
	for _, m := range ms {
		if syncs := m.ps.committed(m.sp); len(syncs) > 0 {
			out = append(out, committedSyncs{m.ps, syncs})
		}
	}
	return out, nil
}

// writeProgress produces progress records into the open transaction.
func (t *transaction) writeProgress(ctx context.Context, recs []*sarama.Record) error {
	if err := t.add(ctx, tp{t.progressTopic, 0}); err != nil {
		return err
	}
	now := time.Now().Truncate(time.Millisecond)
	rb := &sarama.RecordBatch{Version: 2, FirstTimestamp: now, MaxTimestamp: now, LastOffsetDelta: int32(len(recs) - 1),
		Records: recs, ProducerID: t.pid, ProducerEpoch: t.epoch, FirstSequence: t.progressSeq, IsTransactional: true,
		Codec: sarama.CompressionNone, CompressionLevel: sarama.CompressionLevelDefault}
	req := &sarama.ProduceRequest{RequiredAcks: sarama.WaitForAll, Timeout: int32(produceTimeout / time.Millisecond),
		Version: produceVersion(t.client.Config().Version), TransactionalID: &t.id}
	req.AddBatch(t.progressTopic, 0, rb)
	deadline := time.Now().Add(progressWriteWait)
	for attempt := 0; ; attempt++ {
		_, err := produceOnce(ctx, t.client, req, t.progressTopic, 0)
		if err == nil {
			t.progressSeq = nextSequence(t.progressSeq, len(recs))
			return nil
		}
		if !retriable(err) || time.Now().After(deadline) || ctx.Err() != nil {
			return t.explain(fmt.Sprintf("write progress to %s on the target", t.progressTopic), err)
		}
		if !interruptible(ctx, stopAnswerWait, func() { _ = t.client.RefreshMetadata(t.progressTopic) }) {
			return t.explain(fmt.Sprintf("write progress to %s on the target", t.progressTopic), err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(retryBackoff(attempt, 0)):
		}
	}
}

// end commits (or aborts) the open transaction.
func (t *transaction) end(ctx context.Context, commit bool) error {
	pid, epoch := t.pid, t.epoch
	err := t.coordinatorCall(ctx, 20*time.Millisecond, stopAnswerWait, func(coord *sarama.Broker) error {
		resp, err := coord.EndTxn(&sarama.EndTxnRequest{Version: txnVersion(t.client.Config().Version),
			TransactionalID: t.id, ProducerID: pid, ProducerEpoch: epoch, TransactionResult: commit})
		if err != nil {
			return err
		}
		if !errors.Is(resp.Err, sarama.ErrNoError) {
			return resp.Err
		}
		return nil
	})
	if err != nil {
		what := "commit the transaction on the target"
		if !commit {
			what = "abort the transaction on the target"
		}
		return t.explain(what, err)
	}
	return nil
}

package replicator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/task"
)

// worker runs one assignment: it consumes its source partitions and produces
// to the target, committing progress for acknowledged records only.
type worker struct {
	flow   Flow
	asg    Assignment
	opts   Options
	state  *flowState
	syncs  *syncWriter
	log    *slog.Logger
	header []byte        // source alias, for the kmirror.source header
	src    sarama.Client // source client: the consumer's, and tail checks (tail.go)
	dst    sarama.Client // target client: metadata, offset lookups, the progress log, transaction control (never the copy's produces: produceDst)
	ident  *producerIdentity
	// unstoredFrom is where a partition without stored progress starts:
	// the task\'s start offset in the flow\'s first round, else earliest.
	unstoredFrom task.StartOffset
	// tailCheck is held by the one partition whose idle-tail check
	// (tail.go) runs: each check fetches up to tailFetchBytes on the
	// consumer's source connection, and a thousand idle partitions
	// checking at once starve the consumer, so more of them go quiet.
	tailCheck sync.Mutex
	// sizes are the worker's buffers, from its partitions' budget share.
	sizes bufferSizes
	// guarantee is what each of its partitions may hold whatever others
	// hold (budget.go).
	guarantee int64
	// budget is the process's: its partitions hold copied records in it.
	budget *Budget
	// produceDst are the target clients partitions produce through, dealt
	// out in turn: one and, for many partitions, more (produceConns).
	produceDst []sarama.Client
	// lines gather the partitions' batches into one request per broker
	// connection (produceline.go).
	lines produceLines
	// txn is the exactly-once transaction (nil: at least once).
	txn *transaction
}

// partitionsPerConn and maxProduceConns set how many target clients a
// worker produces through: one per partitionsPerConn partitions, at most
// maxProduceConns, so connections grow with brokers x workers, not with
// partitions.
const (
	partitionsPerConn = 128
	maxProduceConns   = 4
)

func produceConns(partitions int) int {
	return min(1+(partitions-1)/partitionsPerConn, maxProduceConns)
}

// batchOverhead is kept free below the target's max.message.bytes for the
// record batch header, which the record sizes below do not count.
const batchOverhead = 128

// recordOverhead approximates a record's framing in a batch (length, attributes,
// deltas, header counts) for the size check against the target's limit.
const recordOverhead = 64

// maxBatchBytes caps one produce request's batch: big enough to amortise a
// round trip, small enough to keep a retry cheap.
const maxBatchBytes = 1 << 20

// sourceConfig is the source client's. A worker's clients ask metadata for
// the topics they use only (sarama's Metadata.Full = false), not for every
// topic of the cluster at their start and every refresh: a worker has
// three to six clients, and a production cluster's metadata can be
// thousands of topics the flow does not copy. The flow's planner, which
// matches the task's topics against the cluster's, keeps the full view.
// (Without a first full fetch, a client connects at its first request,
// not at its creation: the planner's clients, created first, are what
// says a cluster is unreachable.)
func (w *worker) sourceConfig() (*sarama.Config, error) {
	c, err := w.flow.Source.Settings.Config(fmt.Sprintf("kmirror-%s-%s-%d", w.flow.Task, w.flow.Name(), w.asg.ID))
	if err != nil {
		return nil, err
	}
	c.Consumer.Return.Errors = true
	c.Metadata.Full = false
	// A partition's fetch takes whole record batches; what a response
	// carries in all follows the partitions' budget shares, so a thousand
	// partitions fetch no more at once than six (budget.go). A batch
	// larger than the fetch size still comes whole (Kafka returns the
	// first batch of a partition however large).
	c.Consumer.Fetch.Default = w.sizes.fetch
	c.Consumer.Fetch.Max = 0
	c.Consumer.Fetch.MaxBytes = int32(min(max(int64(w.sizes.response)*int64(len(w.asg.Partitions)), int64(w.sizes.fetch)), 50<<20))
	c.Consumer.MaxWaitTime = 250 * time.Millisecond
	c.ChannelBufferSize = w.sizes.queue
	return c, nil
}

// targetConfig is the target client's: produce requests are built and
// retried by the worker itself (copy.go), so the client serves metadata,
// leader connections and offset lookups. Metadata retries are few because
// the produce loop retries (and watches for a stop) around them.
func (w *worker) targetConfig() (*sarama.Config, error) {
	c, err := w.flow.Target.Settings.Config(fmt.Sprintf("kmirror-%s-%s-%d", w.flow.Task, w.flow.Name(), w.asg.ID))
	if err != nil {
		return nil, err
	}
	c.Metadata.Retry.Max = 2
	c.Metadata.Full = false // as sourceConfig says
	// One request in flight per partition, several partitions per leader
	// connection.
	c.Net.MaxOpenRequests = min(64, len(w.asg.Partitions)+1)
	// Bounded waits, so a stop or a dead target is noticed within seconds:
	// a read outlasts the broker's produce timeout (acks=all), no more.
	c.Net.DialTimeout = 10 * time.Second
	c.Net.ReadTimeout = produceTimeout + 10*time.Second
	c.Metadata.Timeout = 15 * time.Second
	// The progress log's producer (progresslog.go) writes through this
	// client: durable writes, answered.
	c.Producer.RequiredAcks = sarama.WaitForAll
	c.Producer.Return.Successes = true
	c.Producer.Partitioner = sarama.NewManualPartitioner
	return c, nil
}

// partitionTopics is the source and the target topics of parts, each once.
func partitionTopics(parts []Partition) (src, dst []string) {
	for _, p := range parts {
		if !slices.Contains(src, p.Source) {
			src = append(src, p.Source)
		}
		if !slices.Contains(dst, p.Target) {
			dst = append(dst, p.Target)
		}
	}
	return src, dst
}

// workerClient is a worker's client (cfg's Metadata.Full is off, see
// sourceConfig), made to know the cluster's live brokers from the metadata
// of topics before its first request: one that has asked for nothing sends
// its first requests to a bootstrap address, which may be a broker that is
// down (CI: an InitProducerID sent to a killed broker failed the flow).
// Only an answer from no broker fails it: what a topic's answer says (a
// partition without a leader, a topic it may not read) is for the requests
// that use the topic to report, as with sarama's own first fetch.
func workerClient(addrs []string, cfg *sarama.Config, topics []string) (sarama.Client, error) {
	c, err := sarama.NewClient(addrs, cfg)
	if err != nil {
		return nil, err
	}
	if err := c.RefreshMetadata(topics...); err != nil && len(c.Brokers()) == 0 {
		_ = c.Close()
		return nil, err
	}
	return c, nil
}

// run copies until ctx ends (returns nil after a clean stop with progress
// committed) or a non-partition error occurs.
func (w *worker) run(ctx context.Context) error {
	w.budget = w.opts.Budget
	if w.budget == nil {
		w.budget = processBudget
	}
	w.sizes = sizesFor(w.budget.share())
	w.guarantee = w.budget.guarantee()
	srcCfg, err := w.sourceConfig()
	if err != nil {
		return err
	}
	srcTopics, dstTopics := partitionTopics(w.asg.Partitions)
	src, err := workerClient(w.flow.Source.Settings.BootstrapServers, srcCfg, srcTopics)
	if err != nil {
		return fmt.Errorf("connect to source %s: %w", w.flow.Source.Alias, err)
	}
	defer src.Close()
	w.src = src
	dstCfg, err := w.targetConfig()
	if err != nil {
		return err
	}
	dst, err := workerClient(w.flow.Target.Settings.BootstrapServers, dstCfg, dstTopics)
	if err != nil {
		return fmt.Errorf("connect to target %s: %w", w.flow.Target.Alias, err)
	}
	defer dst.Close()
	w.dst = dst
	// The copy produces on clients of its own, never dst: a broker serves
	// a connection's requests one at a time, so the progress log's writes
	// and the transaction's control requests on dst would hold the
	// batches behind them. More partitions, more connections: a thousand
	// partitions' requests queued on one connection wait for each other.
	for range produceConns(len(w.asg.Partitions)) {
		prod, err := workerClient(w.flow.Target.Settings.BootstrapServers, dstCfg, dstTopics)
		if err != nil {
			return fmt.Errorf("connect to target %s: %w", w.flow.Target.Alias, err)
		}
		defer prod.Close()
		w.produceDst = append(w.produceDst, prod)
	}

	w.ident = &producerIdentity{}
	if w.flow.ExactlyOnce {
		// First: fence the worker's predecessor and abort what it left
		// open, so the progress read next is the last committed.
		w.txn = newTransaction(dst, task.TransactionalID(w.flow.Group(), w.asg.ID), w.flow)
		if w.opts.TransactionTimeout > 0 {
			w.txn.timeout = w.opts.TransactionTimeout
		}
		if err := w.txn.init(ctx); err != nil {
			return err
		}
		if err := w.closeOwnProgress(ctx, dst); err != nil {
			return err
		}
		if err := w.txn.progressSettled(ctx); err != nil {
			return err
		}
		w.ident.id, w.ident.epoch = w.txn.pid, w.txn.epoch
	} else if warning, err := w.ident.first(ctx, dst); err != nil {
		return err
	} else if warning != "" {
		w.state.setError(warning)
		w.log.Warn(warning)
	}
	plog, err := newProgressLog(dst, w.flow.ProgressTopic, w.flow, w.opts.ProgressLogInterval)
	if err != nil {
		return err
	}
	plog.byTxn = w.txn != nil
	defer plog.close()
	// Progress commits go on a connection of their own: sarama holds a
	// broker's connection for a whole round trip, so a commit to a group
	// coordinator that also leads partitions this worker fetches stopped
	// their fetching for the commit's time, every commit interval.
	// (Its admin needs the controller, which workerClient's first
	// metadata answer names.)
	commits, err := workerClient(w.flow.Source.Settings.BootstrapServers, srcCfg, srcTopics)
	if err != nil {
		return fmt.Errorf("connect to source %s: %w", w.flow.Source.Alias, err)
	}
	defer commits.Close()
	prog, err := newProgress(commits, w.flow.Group(), plog)
	if err != nil {
		return fmt.Errorf("progress store on source %s: %w", w.flow.Source.Alias, err)
	}
	var known func(Partition) (storedProgress, bool)
	if w.txn == nil {
		known = w.copied
	}
	stored, logErr, err := prog.load(w.asg.Partitions, known)
	if err != nil {
		return err
	}
	if logErr != nil {
		msg := fmt.Sprintf("%v; the flow goes on from what this kmirror copied (a restart of kmirror waits for the topic)", logErr)
		w.state.setError(msg)
		w.log.Warn(msg)
	}
	if w.txn != nil {
		if err := w.closeLeftovers(ctx, dst, stored); err != nil {
			return err
		}
	}
	// The start round's offset lookups, learned in a few requests (see
	// knownOffsets); the consumer asks through it too.
	srcAt, dstAt := newKnownOffsets(src), newKnownOffsets(dst)
	srcAt.learn(w.parts(sourceTopic), sarama.OffsetNewest, sarama.OffsetOldest)
	dstAt.learn(w.parts(targetTopic), sarama.OffsetNewest)
	consumer, err := sarama.NewConsumerFromClient(srcAt)
	if err != nil {
		return fmt.Errorf("consumer on source %s: %w", w.flow.Source.Alias, err)
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	var pcs []sarama.PartitionConsumer
	var states []*partState
	cleanup := func() {
		for _, pc := range pcs {
			pc.AsyncClose()
		}
		// The stop has ended ctx: the last commit gets a context of its
		// own, bounded, as the coordinator's calls give up when theirs ends.
		fctx, fcancel := context.WithTimeout(context.WithoutCancel(ctx), finalTxnWait)
		err := w.commitTxn(fctx, states)
		fcancel()
		if err != nil {
			w.state.setError(err.Error())
			w.log.Warn("final transaction commit failed; what was copied since the last commit is aborted and copied again (never seen by read_committed readers)", "error", err)
		}
		awaitSyncs(states, syncFlushWait)
		if err := prog.commit(ctx, states, true); err != nil {
			w.state.setError(err.Error())
			msg := "final progress commit failed; records since the last commit will be copied again"
			if errors.As(err, new(storedOnce)) {
				msg = "final progress commit reached one of its two stores; that one holds the position"
			}
			w.log.Warn(msg, "error", err)
		}
		consumer.Close()
	}

	type started struct {
		p  Partition
		ps *partState
		pc sarama.PartitionConsumer
	}
	var runs []started
	// waiting are partitions the source cannot serve yet (no leader, read
	// denied, a topic being created): each waits alone, tried again every
	// partitionRetry, while the others copy.
	var waiting []Partition
	var storedMu sync.Mutex
	// Partitions start startParallel at a time: a start is a few offset
	// lookups on the source and the target, and a thousand partitions
	// started one after another spent most of their start-up waiting.
	type attempt struct {
		ps  *partState
		pc  sarama.PartitionConsumer
		err error
	}
	attempts := make([]attempt, len(w.asg.Partitions))
	var starting sync.WaitGroup
	slots := make(chan struct{}, startParallel)
	for i, p := range w.asg.Partitions {
		ps := w.state.partition(p)
		if failed, _ := ps.failure(); failed {
			continue // stays stopped until the task is restarted
		}
		ps.mu.Lock()
		// Records from the start offset on are copied (and synced) again,
		// so syncs still pending from before no longer hold progress back.
		ps.syncPending = nil
		ps.stalled = "" // a stall belongs to the run whose writes were retried
		ps.mu.Unlock()
		attempts[i].ps = ps
		slots <- struct{}{}
		starting.Go(func() {
			defer func() { <-slots }()
			attempts[i].pc, attempts[i].err = w.startPartition(srcAt, dstAt, consumer, p, ps, stored, &storedMu)
		})
	}
	starting.Wait()
	srcAt.forget()
	dstAt.forget()
	var startErr error
	for i, p := range w.asg.Partitions {
		a := attempts[i]
		switch {
		case a.ps == nil: // failed for good before
		case partitionLocal(a.err):
			w.wait(a.ps, a.err)
			waiting = append(waiting, p)
		case a.err != nil:
			startErr = cmp.Or(startErr, a.err)
		default:
			pcs = append(pcs, a.pc)
			states = append(states, a.ps)
			runs = append(runs, started{p: p, ps: a.ps, pc: a.pc})
		}
	}
	if startErr != nil {
		cleanup()
		return startErr
	}
	// The resolved start positions are stored at once, so a restart before
	// the first record does not move "latest" past records produced since.
	if err := w.commitTxn(ctx, states); err != nil {
		cleanup()
		return err
	}
	if err := prog.commit(ctx, states, true); err != nil {
		if !errors.As(err, new(storedOnce)) {
			cleanup()
			return err
		}
		// One store has them (the other is away: an internal topic
		// without a leader, a group coordinator moving): enough.
		w.state.setError(err.Error())
		w.log.Warn("start positions stored in one place only", "error", err)
	}

	var copiers sync.WaitGroup
	copies := 0
	copyPartition := func(p Partition, ps *partState, pc sarama.PartitionConsumer) {
		c := newPartitionCopy(w, ps, p.MaxBytes, w.produceDst[copies%len(w.produceDst)])
		copies++
		copiers.Add(2)
		go func() {
			defer copiers.Done()
			if err := c.consume(ctx, pc); err != nil {
				cancel(err)
			}
		}()
		go func() {
			defer copiers.Done()
			if err := c.send(ctx); err != nil {
				cancel(err)
			}
		}()
	}
	for _, r := range runs {
		copyPartition(r.p, r.ps, r.pc)
	}
	every := w.opts.CommitInterval
	if w.txn != nil {
		every = w.flow.TransactionInterval
	}
	tick := time.NewTicker(every)
	defer tick.Stop()
	retry := time.NewTicker(partitionRetry)
	defer retry.Stop()
	lastCommitErr := ""
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-tick.C:
			if err := w.commitTxn(ctx, states); err != nil {
				// The transaction is left to be aborted: the worker starts
				// again from the last commit.
				cancel(err)
				break loop
			}
			err := prog.commit(ctx, states, false)
			if err != nil {
				w.state.setError(err.Error())
				// Once per cause, not every interval (a partition whose
				// topic is denied fails each commit until it is allowed).
				if err.Error() != lastCommitErr {
					w.log.Warn("progress commit failed; will retry", "error", err)
				}
				lastCommitErr = err.Error()
			} else {
				lastCommitErr = ""
			}
		case <-retry.C:
			still := waiting[:0]
			for _, p := range waiting {
				ps := w.state.partition(p)
				pc, err := w.startPartition(src, dst, consumer, p, ps, stored, &storedMu)
				if partitionLocal(err) {
					w.wait(ps, err)
					still = append(still, p)
					continue
				}
				if err != nil {
					cancel(err)
					break loop
				}
				ps.unstall()
				w.log.Info("partition no longer waits; copying", "topic", p.Source, "partition", p.Partition)
				pcs = append(pcs, pc)
				states = append(states, ps)
				// Its start position is stored at once, as the others' were.
				if err := prog.commit(ctx, []*partState{ps}, true); err != nil {
					w.state.setError(err.Error())
				}
				copyPartition(p, ps, pc)
			}
			waiting = still
		}
	}
	copiers.Wait() // every batch handed to the target acknowledged or failed, held bytes given back
	cleanup()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// copied is the progress this process made on p, for a restart that
// cannot read the progress log (progress.load); false when it made none.
// A partition stopped for good is not started, so it needs none.
func (w *worker) copied(p Partition) (storedProgress, bool) {
	ps := w.state.partition(p)
	if failed, _ := ps.failure(); failed {
		return noProgress, true
	}
	sp := ps.committable()
	return sp, sp.offset >= 0
}

// parts are the worker's partitions on one side: topic is Partition's
// source or target topic.
func (w *worker) parts(topic func(Partition) string) []tp {
	parts := make([]tp, len(w.asg.Partitions))
	for i, p := range w.asg.Partitions {
		parts[i] = tp{topic(p), p.Partition}
	}
	return parts
}

func sourceTopic(p Partition) string { return p.Source }
func targetTopic(p Partition) string { return p.Target }

// startParallel is how many partitions of a worker start at once.
const startParallel = 16

// partitionRetry is how often a partition the source cannot serve yet is
// tried again.
const partitionRetry = 5 * time.Second

// partitionLocal reports whether err, from starting one partition, is the
// source's answer about that partition (no leader, not authorized, unknown
// yet): the partition waits alone and the rest of the assignment copies.
// Other errors (the cluster unreachable) end the worker, which is retried
// as a whole with backoff and shown as the flow's state.
func partitionLocal(err error) bool {
	var kerr sarama.KError
	return err != nil && errors.As(err, &kerr)
}

// wait marks ps as waiting for the source, with why, for the status: the
// flow shows DEGRADED with the reason once it has waited DegradedAfter
// (a leader election of a few seconds does not flap the state).
func (w *worker) wait(ps *partState, err error) {
	reason := fmt.Sprintf("%s-%d waits for the source: %v (tried again every %s; the flow's other partitions go on)",
		ps.Source, ps.Partition.Partition, err, partitionRetry)
	ps.mu.Lock()
	since, was := ps.stalledSince, ps.stalled != ""
	ps.mu.Unlock()
	if !was {
		since = time.Now()
		w.log.Warn("partition waits for the source", "topic", ps.Source, "partition", ps.Partition.Partition, "error", err)
	}
	ps.stall(reason, since)
}

// startPartition resolves where p starts (stored progress, the task's start
// offset, or the source's oldest when progress expired) and starts its
// consumer there, setting ps for the copy.
// st is p's stored progress; stored[p] is set to what it becomes (none,
// when the source topic was created again). Partitions start in parallel:
// stored is guarded by mu.
func (w *worker) startPartition(src, dst sarama.Client, consumer sarama.Consumer, p Partition, ps *partState, stored map[Partition]storedProgress, mu *sync.Mutex) (sarama.PartitionConsumer, error) {
	mu.Lock()
	st := stored[p]
	mu.Unlock()
	if st.offset >= 0 && st.topicID != "" && p.TopicID != "" && st.topicID != p.TopicID {
		msg := fmt.Sprintf("%s-%d: source topic %s was deleted and created again (topic id %s, progress stored for %s): copying it from its first record", p.Source, p.Partition, p.Source, p.TopicID, st.topicID)
		w.log.Warn(msg)
		w.state.setError(msg)
		st = noProgress
		mu.Lock()
		stored[p] = noProgress
		mu.Unlock()
	}
	var offset int64
	var err error
	replaced := st.offset >= 0 && st.targetTopicID != "" && p.TargetTopicID != "" && st.targetTopicID != p.TargetTopicID
	if replaced {
		w.targetReplaced(dst, p, ps, st)
		if w.flow.ContinueOnTargetReplaced {
			// On from the progress, onto the new topic's end: what the
			// old topic held stays lost (counted).
			st.down = -1
			offset = st.offset
		} else {
			// Made whole again: from the source's first record, whatever
			// the task's start offset.
			st = noProgress
			offset, err = src.GetOffset(p.Source, p.Partition, sarama.OffsetOldest)
			if err != nil {
				return nil, fmt.Errorf("find the oldest offset of %s-%d: %w", p.Source, p.Partition, err)
			}
			// The source no longer holds what came before its oldest:
			// those records cannot be copied again (counted as
			// expired, as at any start before the source's retention).
			ps.expired.Add(offset)
		}
		mu.Lock()
		stored[p] = st
		mu.Unlock()
	} else if offset, err = w.startOffset(src, p, st.offset); err != nil {
		return nil, err
	}
	pc, err := consumer.ConsumePartition(p.Source, p.Partition, offset)
	if errors.Is(err, sarama.ErrOffsetOutOfRange) {
		// Stored progress points before the source's retention: those
		// records expired before they could be copied. Say so and go on.
		oldest, oerr := src.GetOffset(p.Source, p.Partition, sarama.OffsetOldest)
		if oerr != nil {
			return nil, fmt.Errorf("find oldest offset of %s-%d: %w", p.Source, p.Partition, oerr)
		}
		if oldest > offset {
			ps.expired.Add(oldest - offset)
		}
		msg := fmt.Sprintf("%s-%d: progress %d is outside the source's retained offsets; continuing at %d (%d records expired on the source before they were copied)", p.Source, p.Partition, offset, oldest, max(oldest-offset, 0))
		w.log.Warn(msg)
		w.state.setError(msg)
		offset = oldest
		pc, err = consumer.ConsumePartition(p.Source, p.Partition, offset)
	}
	if err != nil {
		return nil, fmt.Errorf("consume %s-%d from offset %d: %w", p.Source, p.Partition, offset, err)
	}
	// Paused until its copy runs (copy.go resumes it): a worker's
	// partitions start one batch at a time, and what the first ones fetched
	// meanwhile would wait in the consumer's queues, holding whole fetch
	// responses, outside the budget. (A consumer subscribes a partition to
	// its broker's fetches after a short batching delay, so this comes
	// before its first fetch.)
	pc.Pause()
	if st.offset >= 0 && st.down >= 0 && st.offset == offset {
		st.down = w.reconcileResume(dst, ps, offset, st.down)
	}
	// The end offset is known before the first record arrives, so
	// lag is right from the start (and an idle partition shows its end).
	if end, err := src.GetOffset(p.Source, p.Partition, sarama.OffsetNewest); err == nil {
		ps.hwm.Store(end)
	}
	// The target position that goes with the start: stored with the
	// progress, or the target partition's end for a fresh start (where
	// the first copied record lands when nothing else writes there).
	// (A replaced target's copy that goes on from its progress lands at
	// the new topic's end too.)
	down := int64(-1)
	if st.offset == offset && !replaced {
		down = st.down
	} else if end, err := dst.GetOffset(p.Target, p.Partition, sarama.OffsetNewest); err == nil {
		down = end
	}
	ps.mu.Lock()
	ps.next.Store(offset)
	ps.progDown = down
	ps.resumed = st.offset == offset && down >= 0
	ps.topicID = p.TopicID
	ps.targetTopicID = p.TargetTopicID
	ps.mu.Unlock()
	if w.txn != nil {
		ps.startExactlyOnce(st)
	}
	return pc, nil
}

// closeLeftovers ends what this worker's producer left open on its target
// partitions. Kafka skips a transaction's marker for a partition that has
// no leader when the coordinator writes them ("likely deleted"): the
// records there stay open until the producer id's next marker on that
// partition — the id is kept across epochs — and would take its outcome,
// whatever their own transaction's was (measured: 610 records read twice
// by read_committed readers after a transaction was aborted while its
// partition's only replica was away). After the fence every transaction of
// the id is complete, so a partition whose last stable offset is behind its
// end holds such a range: committed again where the committed progress is
// past its start (their transaction committed: else the progress would not
// be), aborted where it is not, committed where the progress does not say
// (a duplicate can be counted; a loss could not be undone).
func (w *worker) closeLeftovers(ctx context.Context, dst sarama.Client, stored map[Partition]storedProgress) error {
	var commit, abort []tp
	parts := w.parts(targetTopic)
	lsos, ends := make(map[tp]int64, len(parts)), make(map[tp]int64, len(parts))
	// One request per broker for every partition; one not learned is not
	// there yet, or unavailable: checked before its first write
	// (transaction.settle).
	_, _ = listOffsetsOnce(dst, parts, sarama.OffsetNewest, sarama.ReadCommitted, lsos)
	_, _ = listOffsetsOnce(dst, parts, sarama.OffsetNewest, sarama.ReadUncommitted, ends)
	for _, p := range w.asg.Partitions {
		part := tp{p.Target, p.Partition}
		lso, ok := lsos[part]
		end, known := ends[part]
		if !ok || !known || lso >= end {
			continue // nothing open, or not learned
		}
		outcome := "committed (the flow's progress covers it)"
		if sp := stored[p]; sp.down >= 0 && sp.down <= lso {
			abort = append(abort, part)
			outcome = "aborted (the flow's progress does not cover it)"
		} else {
			commit = append(commit, part)
		}
		msg := fmt.Sprintf("target %s-%d held an open transaction of this flow from an earlier run at offsets %d-%d (Kafka skipped its marker while the partition had no leader): %s",
			p.Target, p.Partition, lso, end-1, outcome)
		w.log.Warn(msg)
		w.state.setError(msg)
	}
	if err := w.txn.endOver(ctx, commit, true); err != nil {
		return err
	}
	return w.txn.endOver(ctx, abort, false)
}

// commitTxn commits an exactly-once worker's transaction with the progress
// of states (nothing to do at least once) and writes the offset syncs it
// released.
func (w *worker) commitTxn(ctx context.Context, states []*partState) error {
	if w.txn == nil {
		return nil
	}
	released, err := w.txn.commit(ctx, states)
	if err != nil {
		return err
	}
	// The stop's context has ended by the final commit: its syncs still
	// go out, within the stop's bound for syncs (awaitSyncs).
	sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), syncFlushWait)
	defer cancel()
	for _, r := range released {
		for _, s := range r.syncs {
			w.syncs.emit(sctx, r.ps, s)
		}
	}
	return nil
}

// targetReplaced handles p's target topic found deleted or created again
// (its id is not the one p's progress was made on): what kmirror had copied
// there is gone, counted as lost on the target (up to the progress's
// target position); the partition's sync history starts again with its
// next sync, and the checkpoints written for the old topic are forgotten,
// so no group is translated into the old topic's offsets; the status says
// so until the copy, started again from the source's first record, is back
// where it was.
func (w *worker) targetReplaced(dst sarama.Client, p Partition, ps *partState, st storedProgress) {
	lost := max(st.down, 0)
	ps.lost.Add(lost)
	ps.mu.Lock()
	ps.hist.Reset() // its next sync is marked checkpoint.TargetReset
	ps.sync = syncState{}
	ps.progDown = -1
	ps.resumed = false
	ps.lostFrom, ps.lostTo = 0, 0 // offsets of the old topic
	ps.mu.Unlock()
	ps.lastUp.Store(-1)
	ps.lastDown.Store(-1)
	ps.targetGen.Add(1)
	now := time.Now()
	r := replacedTarget{target: p.Target, partition: p.Partition, at: now, lost: lost, until: st.offset, ps: ps}
	what := "copying the partition again from the source's first record"
	if w.flow.ContinueOnTargetReplaced {
		// Nothing to catch up: the loss is shown for a while instead.
		r.until, r.holdUntil = -1, now.Add(replacedShownFor)
		what = "going on from the progress (the task's on_target_topic_replaced is continue): they stay lost"
	}
	w.state.targetReplaced(r, p.TargetTopicID)
	msg := fmt.Sprintf("%s-%d: target topic %s was deleted or created again (topic id %s, progress made on %s): up to %d records kmirror had copied there are gone; %s",
		p.Target, p.Partition, p.Target, p.TargetTopicID, st.targetTopicID, lost, what)
	// A topic created again by someone else before a planning round saw
	// it may hold records already (that writer's, or a retried produce of
	// the copy's that landed there): they stay ahead of the copy. Said,
	// never hidden.
	if end, err := dst.GetOffset(p.Target, p.Partition, sarama.OffsetNewest); err == nil && end > 0 {
		msg += fmt.Sprintf("; the new topic held %d records before this copy, which stay ahead of it", end)
	}
	w.log.Warn(msg)
	w.state.setError(msg)
}

// finalTxnWait bounds a stopping exactly-once worker's last commit (a
// frozen target's coordinator would otherwise hold the stop for its read
// timeouts).
const finalTxnWait = 15 * time.Second

// syncFlushWait bounds how long a stopping worker waits for its offset syncs.
const syncFlushWait = 5 * time.Second

// awaitSyncs waits, up to limit, until no distance-change sync of states is
// on its way to the offset-syncs topic, so the final commit covers every
// acknowledged record: progress is held back before a pending sync, and a
// worker stopping (or failing) right after copying would otherwise copy
// those records again after its restart.
func awaitSyncs(states []*partState, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for {
		pending := false
		for _, ps := range states {
			ps.mu.Lock()
			pending = pending || len(ps.syncPending) > 0
			ps.mu.Unlock()
		}
		if !pending || time.Now().After(deadline) {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// reconcileResume compares the target partition's end with progDown, the
// downstream position the stored progress was committed at, and returns
// where the copy goes on. A later end: the records after progDown were
// copied before an unclean stop (a crash, a failed produce) and are
// copied again, counted as recopied. An earlier end: the target lost
// records it had acknowledged while this flow was not copying them (an
// unclean leader election, a broker lost without replicas, during a
// restart after the errors that caused): counted as lost on the target
// and reported with their range, as the copy path does (checkTargetLoss),
// never passed over; the copy goes on at the end. Exact when nothing else
// writes to the target partition.
func (w *worker) reconcileResume(dst sarama.Client, ps *partState, from, progDown int64) int64 {
	end, err := dst.GetOffset(ps.Target, ps.Partition.Partition, sarama.OffsetNewest)
	switch {
	case err != nil || end == progDown:
		return progDown
	case end > progDown && w.txn != nil:
		// Aborted copies and transaction markers: a committed record
		// after progDown would have its progress in the same transaction.
		return progDown
	case end > progDown:
		n := end - progDown
		ps.recopied.Add(n)
		w.log.Warn("records copied before an unclean stop are copied again (duplicates on the target)",
			"topic", ps.Source, "partition", ps.Partition.Partition, "from", from, "records", n)
		return progDown
	}
	// Found while copying, before the restart, is counted then, once.
	lost := ps.countTargetLoss(end, progDown)
	w.targetLost(ps, lost, end, progDown,
		fmt.Sprintf("progress was committed after them at source offset %d of %s-%d", from, ps.Source, ps.Partition.Partition))
	return end
}

// targetLost reports lost acknowledged records newly counted at target
// offsets [from, to) of ps's target partition, with detail saying how they
// were found; nothing when lost is 0 (counted already).
func (w *worker) targetLost(ps *partState, lost, from, to int64, detail string) {
	if lost == 0 {
		return
	}
	msg := fmt.Sprintf("target %s-%d lost %d records it had acknowledged (target offsets %d-%d; %s) — the target had an unclean leader election or lost a broker without replicas; those records are not on the target",
		ps.Target, ps.Partition.Partition, lost, from, to-1, detail)
	w.state.setError(msg)
	w.log.Error(msg)
}

// startOffset resolves where a partition starts: stored progress, else,
// on a way back, where the forward copy ended at the switchover, else
// w.unstoredFrom.
func (w *worker) startOffset(src sarama.Client, p Partition, stored int64) (int64, error) {
	if stored >= 0 {
		return stored, nil
	}
	if fb := w.flow.Failback; fb != nil {
		if pt, ok := fb.point(p); ok {
			// The way back copies only what was written after the
			// switchover.
			return pt.TargetEnd, nil
		}
	}
	which := sarama.OffsetOldest
	if w.unstoredFrom == task.StartLatest {
		which = sarama.OffsetNewest
	}
	off, err := src.GetOffset(p.Source, p.Partition, which)
	if err != nil {
		return 0, fmt.Errorf("find %s offset of %s-%d: %w", w.unstoredFrom, p.Source, p.Partition, err)
	}
	return off, nil
}

package replicator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/checkpoint"
	"github.com/kmirror/kmirror/internal/mm2"
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
	dst    sarama.Client // target client for offset lookups, or nil
}

// outRecord carries a produced record with what its acknowledgement needs;
// Metadata points back to it, so one allocation serves both.
type outRecord struct {
	msg      sarama.ProducerMessage
	ps       *partState
	upstream int64
	size     int
}

// batchOverhead is kept free below the target's max.message.bytes for the
// record batch header, which sarama does not count when it sizes batches.
const batchOverhead = 128

// recordOverhead approximates a record's framing in a batch (length, attributes,
// deltas, header counts) for the size check against the target's limit.
const recordOverhead = 64

func (w *worker) sourceConfig() (*sarama.Config, error) {
	c, err := w.flow.Source.Settings.Config(fmt.Sprintf("kmirror-%s-%s-%d", w.flow.Task, w.flow.Name(), w.asg.ID))
	if err != nil {
		return nil, err
	}
	c.Consumer.IsolationLevel = sarama.ReadCommitted
	c.Consumer.Return.Errors = true
	c.Consumer.Fetch.Default = 1 << 20
	c.Consumer.Fetch.Max = 0
	c.Consumer.MaxWaitTime = 250 * time.Millisecond
	c.ChannelBufferSize = 1024
	return c, nil
}

func (w *worker) targetConfig(maxBytes int) (*sarama.Config, error) {
	c, err := w.flow.Target.Settings.Config(fmt.Sprintf("kmirror-%s-%s-%d", w.flow.Task, w.flow.Name(), w.asg.ID))
	if err != nil {
		return nil, err
	}
	p := &c.Producer
	p.Partitioner = sarama.NewManualPartitioner
	p.RequiredAcks = sarama.WaitForAll
	// Order first: sarama's idempotent producer, when a broker comes back,
	// fails a batch without using its retries, rolls the producer epoch and
	// delivers the partition's later batches, so the failed records land
	// after their successors (seen on a target broker restart). The plain
	// producer with one request in flight per broker retries in order
	// (newer records wait while older ones are retried), and a retry budget
	// of minutes rides out a broker restart; the price is that a retried
	// request whose first answer was lost is written twice (at-least-once).
	p.Idempotent = false
	c.Net.MaxOpenRequests = 1
	p.Retry.Max = 600
	p.Retry.BackoffFunc = retryBackoff
	c.Metadata.Retry.Max = 600
	c.Metadata.Retry.BackoffFunc = retryBackoff
	p.Return.Successes = true
	p.Return.Errors = true
	p.Compression = w.flow.Compression
	p.MaxMessageBytes = maxBytes - batchOverhead
	p.Flush.Bytes = 1 << 20
	p.Flush.Frequency = 5 * time.Millisecond
	c.ChannelBufferSize = 256 * max(1, len(w.asg.Partitions))
	return c, nil
}

// run copies until ctx ends (returns nil after a clean stop with progress
// committed) or a non-partition error occurs.
func (w *worker) run(ctx context.Context) error {
	srcCfg, err := w.sourceConfig()
	if err != nil {
		return err
	}
	src, err := sarama.NewClient(w.flow.Source.Settings.BootstrapServers, srcCfg)
	if err != nil {
		return fmt.Errorf("connect to source %s: %w", w.flow.Source.Alias, err)
	}
	defer src.Close()
	prog, err := newProgress(src, w.flow.Group())
	if err != nil {
		return fmt.Errorf("progress store on source %s: %w", w.flow.Source.Alias, err)
	}
	stored, err := prog.load(w.asg.Partitions)
	if err != nil {
		return err
	}
	consumer, err := sarama.NewConsumerFromClient(src)
	if err != nil {
		return fmt.Errorf("consumer on source %s: %w", w.flow.Source.Alias, err)
	}

	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)

	// One producer per distinct target limit, so a topic with a small
	// max.message.bytes sizes only its own batches.
	producers := map[int]sarama.AsyncProducer{}
	var acks sync.WaitGroup
	var pcs []sarama.PartitionConsumer
	var states []*partState
	defer w.closeTargetClient()
	cleanup := func() {
		for _, pc := range pcs {
			pc.AsyncClose()
		}
		for _, p := range producers {
			p.AsyncClose()
		}
		acks.Wait() // every in-flight record acknowledged or failed
		if err := prog.commit(states); err != nil {
			w.state.setError(err.Error())
			w.log.Warn("final progress commit failed; records since the last commit will be copied again", "error", err)
		}
		consumer.Close()
	}

	type started struct {
		ps  *partState
		pc  sarama.PartitionConsumer
		out sarama.AsyncProducer
	}
	var runs []started
	for _, p := range w.asg.Partitions {
		ps := w.state.partition(p)
		if failed, _ := ps.failure(); failed {
			continue // stays stopped until the task is restarted
		}
		ps.mu.Lock()
		// Records from the start offset on are copied (and synced) again,
		// so syncs still pending from before no longer hold progress back.
		ps.stopAt, ps.inflight, ps.pendingSkip, ps.syncPending = math.MaxInt64, 0, 0, nil
		ps.mu.Unlock()
		prod, ok := producers[p.MaxBytes]
		if !ok {
			cfg, err := w.targetConfig(p.MaxBytes)
			if err == nil {
				prod, err = sarama.NewAsyncProducer(w.flow.Target.Settings.BootstrapServers, cfg)
			}
			if err != nil {
				cleanup()
				return fmt.Errorf("connect producer to target %s: %w", w.flow.Target.Alias, err)
			}
			producers[p.MaxBytes] = prod
			acks.Add(2)
			go func() { defer acks.Done(); w.acknowledge(prod) }()
			go func() { defer acks.Done(); w.failures(prod, cancel) }()
		}
		offset, err := w.startOffset(src, p, stored[p].offset)
		if err != nil {
			cleanup()
			return err
		}
		pc, err := consumer.ConsumePartition(p.Source, p.Partition, offset)
		if errors.Is(err, sarama.ErrOffsetOutOfRange) {
			// Stored progress points before the source's retention: those
			// records expired before they could be copied. Say so and go on.
			oldest, oerr := src.GetOffset(p.Source, p.Partition, sarama.OffsetOldest)
			if oerr != nil {
				cleanup()
				return fmt.Errorf("find oldest offset of %s-%d: %w", p.Source, p.Partition, oerr)
			}
			msg := fmt.Sprintf("%s-%d: progress %d is outside the source's retained offsets; continuing at %d (records before it expired on the source before they were copied)", p.Source, p.Partition, offset, oldest)
			w.log.Warn(msg)
			w.state.setError(msg)
			offset = oldest
			pc, err = consumer.ConsumePartition(p.Source, p.Partition, offset)
		}
		if err != nil {
			cleanup()
			return fmt.Errorf("consume %s-%d from offset %d: %w", p.Source, p.Partition, offset, err)
		}
		if st := stored[p]; st.offset >= 0 && st.down >= 0 && st.offset == offset {
			if dst, err := w.targetClient(); err == nil {
				w.reportRecopy(dst, ps, offset, st.down)
			}
		}
		// The end offset is known before the first record arrives, so
		// lag is right from the start (and an idle partition shows its end).
		if end, err := src.GetOffset(p.Source, p.Partition, sarama.OffsetNewest); err == nil {
			ps.hwm.Store(end)
		}
		pcs = append(pcs, pc)
		// The target position that goes with the start: stored with the
		// progress, or the target partition's end for a fresh start (where
		// the first copied record lands when nothing else writes there).
		down := int64(-1)
		if st := stored[p]; st.offset == offset {
			down = st.down
		} else if dst, err := w.targetClient(); err == nil {
			if end, err := dst.GetOffset(p.Target, p.Partition, sarama.OffsetNewest); err == nil {
				down = end
			}
		}
		ps.mu.Lock()
		ps.next.Store(offset)
		ps.progDown = down
		ps.mu.Unlock()
		states = append(states, ps)
		runs = append(runs, started{ps: ps, pc: pc, out: prod})
	}
	// The resolved start positions are stored at once, so a restart before
	// the first record does not move "latest" past records produced since.
	if err := prog.commit(states); err != nil {
		cleanup()
		return err
	}

	var copiers sync.WaitGroup
	for _, r := range runs {
		copiers.Add(1)
		go func() {
			defer copiers.Done()
			if err := w.copyPartition(ctx, r.ps, r.pc, r.out); err != nil {
				cancel(err)
			}
		}()
	}
	tick := time.NewTicker(w.opts.CommitInterval)
	defer tick.Stop()
loop:
	for {
		select {
		case <-ctx.Done():
			break loop
		case <-tick.C:
			if err := prog.commit(states); err != nil {
				w.state.setError(err.Error())
				w.log.Warn("progress commit failed; will retry", "error", err)
			}
		}
	}
	copiers.Wait()
	cleanup()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// reportRecopy counts and logs the records a restart copies again: progress
// committed at downstream position progDown, but the target partition ends
// later, so the records after it were copied before an unclean stop (a
// crash, a failed produce) and are copied again. Exact when nothing else
// writes to the target partition; other writers make it an overestimate.
func (w *worker) reportRecopy(dst sarama.Client, ps *partState, from, progDown int64) {
	end, err := dst.GetOffset(ps.Target, ps.Partition.Partition, sarama.OffsetNewest)
	if err != nil || end <= progDown {
		return
	}
	n := end - progDown
	ps.recopied.Add(n)
	w.log.Warn("records copied before an unclean stop are copied again (duplicates on the target)",
		"topic", ps.Source, "partition", ps.Partition.Partition, "from", from, "records", n)
}

// targetClient is a client of the target for offset lookups, made on first
// use.
func (w *worker) targetClient() (sarama.Client, error) {
	if w.dst != nil {
		return w.dst, nil
	}
	cfg, err := w.flow.Target.Settings.Config(fmt.Sprintf("kmirror-%s-%s-%d", w.flow.Task, w.flow.Name(), w.asg.ID))
	if err != nil {
		return nil, err
	}
	w.dst, err = sarama.NewClient(w.flow.Target.Settings.BootstrapServers, cfg)
	return w.dst, err
}

func (w *worker) closeTargetClient() {
	if w.dst != nil {
		w.dst.Close()
		w.dst = nil
	}
}

// startOffset resolves where a partition starts: stored progress, else the
// task's start offset.
func (w *worker) startOffset(src sarama.Client, p Partition, stored int64) (int64, error) {
	if stored >= 0 {
		return stored, nil
	}
	which := sarama.OffsetOldest
	if w.flow.StartOffset == task.StartLatest {
		which = sarama.OffsetNewest
	}
	off, err := src.GetOffset(p.Source, p.Partition, which)
	if err != nil {
		return 0, fmt.Errorf("find %s offset of %s-%d: %w", w.flow.StartOffset, p.Source, p.Partition, err)
	}
	return off, nil
}

// copyPartition is the hot loop: one goroutine per partition, no goroutine
// or channel hop per record beyond sarama's own.
func (w *worker) copyPartition(ctx context.Context, ps *partState, pc sarama.PartitionConsumer, out sarama.AsyncProducer) error {
	in := out.Input()
	for {
		select {
		case <-ctx.Done():
			return nil
		case cerr, ok := <-pc.Errors():
			if !ok {
				return nil
			}
			w.state.setError(fmt.Sprintf("consume %s-%d: %v", ps.Source, ps.Partition.Partition, cerr.Err))
			if errors.Is(cerr.Err, sarama.ErrOffsetOutOfRange) {
				return fmt.Errorf("consume %s-%d: %w", ps.Source, ps.Partition.Partition, cerr.Err)
			}
		case m, ok := <-pc.Messages():
			if !ok {
				return fmt.Errorf("consumer of %s-%d stopped", ps.Source, ps.Partition.Partition)
			}
			ps.hwm.Store(pc.HighWaterMarkOffset())
			r, skip := w.convert(ps, m)
			if skip {
				ps.skipped.Add(1)
				ps.mu.Lock()
				if ps.inflight == 0 && m.Offset < ps.stopAt {
					ps.next.Store(m.Offset + 1)
				} else {
					ps.pendingSkip = m.Offset + 1
				}
				ps.mu.Unlock()
				continue
			}
			if r.size > ps.MaxBytes-batchOverhead {
				reason := fmt.Sprintf("record at offset %d of %s-%d is %d bytes; target topic %s accepts at most %d (max.message.bytes): raise max.message.bytes on the target topic, then restart the task",
					m.Offset, ps.Source, ps.Partition.Partition, r.size, ps.Target, ps.MaxBytes)
				ps.fail(m.Offset, reason)
				w.log.Error("partition stopped", "topic", ps.Source, "partition", ps.Partition.Partition, "reason", reason)
				return nil // this partition stops; the others go on
			}
			ps.mu.Lock()
			ps.inflight++
			ps.mu.Unlock()
			r.msg.Metadata = r
			r.ps = ps
			select {
			case in <- &r.msg:
			case <-ctx.Done():
				ps.mu.Lock()
				ps.inflight--
				ps.mu.Unlock()
				return nil
			}
		}
	}
}

// convert builds the target record; skip is true for a record that came
// from the target cluster (its kmirror.source header names the target).
func (w *worker) convert(ps *partState, m *sarama.ConsumerMessage) (*outRecord, bool) {
	n := len(m.Headers)
	if w.flow.AddSourceHeader {
		n++
	}
	size := len(m.Key) + len(m.Value) + recordOverhead
	var headers []sarama.RecordHeader
	if n > 0 {
		headers = make([]sarama.RecordHeader, 0, n)
	}
	for _, h := range m.Headers {
		if string(h.Key) == task.SourceHeader && w.flow.Policy.LoopsBack(h.Value) {
			return nil, true
		}
		headers = append(headers, sarama.RecordHeader{Key: h.Key, Value: h.Value})
		size += len(h.Key) + len(h.Value) + 8
	}
	if w.flow.AddSourceHeader {
		headers = append(headers, sarama.RecordHeader{Key: sourceHeaderKey, Value: w.header})
		size += len(task.SourceHeader) + len(w.header) + 8
	}
	r := &outRecord{upstream: m.Offset, size: size}
	r.msg = sarama.ProducerMessage{
		Topic:     ps.Target,
		Partition: m.Partition,
		Headers:   headers,
		Timestamp: m.Timestamp,
	}
	if m.Key != nil {
		r.msg.Key = sarama.ByteEncoder(m.Key)
	}
	if m.Value != nil {
		r.msg.Value = sarama.ByteEncoder(m.Value)
	}
	return r, false
}

// sourceHeaderKey is shared by every record (sarama only reads header
// keys): one allocation less per record with the source header on.
var sourceHeaderKey = []byte(task.SourceHeader)

// acknowledge turns target acknowledgements into progress, counters and
// offset syncs.
func (w *worker) acknowledge(prod sarama.AsyncProducer) {
	for m := range prod.Successes() {
		r := m.Metadata.(*outRecord)
		ps := r.ps
		now := time.Now()
		ps.mu.Lock()
		ps.inflight--
		if r.upstream < ps.stopAt {
			next := r.upstream + 1
			if ps.inflight == 0 && ps.pendingSkip > next && ps.pendingSkip <= ps.stopAt {
				next = ps.pendingSkip
			}
			ps.next.Store(next)
			ps.progDown = m.Offset + 1
			if shouldSync(ps.sync, r.upstream, m.Offset, now, w.opts.SyncInterval) {
				changed := !ps.sync.have || m.Offset-r.upstream != ps.sync.down-ps.sync.up
				if changed {
					ps.hist.Add(checkpoint.SyncPoint{Upstream: r.upstream, Downstream: m.Offset})
					ps.syncPending = append(ps.syncPending, checkpoint.SyncPoint{Upstream: r.upstream, Downstream: m.Offset})
				}
				ps.sync = syncState{have: true, up: r.upstream, down: m.Offset, at: now}
				w.syncs.emit(ps, mm2.OffsetSync{Topic: ps.Source, Partition: ps.Partition.Partition, UpstreamOffset: r.upstream, DownstreamOffset: m.Offset}, changed)
			}
		}
		ps.mu.Unlock()
		ps.records.Add(1)
		ps.bytes.Add(int64(r.size))
		ps.lastUp.Store(r.upstream)
		ps.lastDown.Store(m.Offset)
		ps.lastTS.Store(r.msg.Timestamp.UnixMilli())
	}
}

// failures handles records the target refused after sarama's retries. The
// partition's progress stops at the failed record (later acknowledgements
// of it do not move it); a too-large record stops the partition for good,
// anything else restarts the worker from committed progress.
func (w *worker) failures(prod sarama.AsyncProducer, cancel context.CancelCauseFunc) {
	for e := range prod.Errors() {
		r := e.Msg.Metadata.(*outRecord)
		ps := r.ps
		ps.mu.Lock()
		ps.inflight--
		ps.mu.Unlock()
		if errors.Is(e.Err, sarama.ErrMessageSizeTooLarge) || errors.Is(e.Err, sarama.ErrMessageSetSizeTooLarge) {
			reason := fmt.Sprintf("record at offset %d of %s-%d (%d bytes) was refused by target topic %s as too large: raise max.message.bytes on the target topic, then restart the task",
				r.upstream, ps.Source, ps.Partition.Partition, r.size, ps.Target)
			ps.fail(r.upstream, reason)
			w.log.Error("partition stopped", "topic", ps.Source, "partition", ps.Partition.Partition, "reason", reason)
			continue
		}
		msg := fmt.Sprintf("produce to %s-%d failed at source offset %d: %v", ps.Target, ps.Partition.Partition, r.upstream, e.Err)
		ps.freeze(r.upstream)
		cancel(errors.New(msg))
	}
}

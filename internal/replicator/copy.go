package replicator

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/checkpoint"
	"github.com/kmirror/kmirror/internal/mm2"
	"github.com/kmirror/kmirror/internal/task"
)

// The copy path of one partition is two goroutines and two batches:
// consume fills a batch from the source while send writes the other to the
// target (in one produce request with the worker's other partitions'
// batches for that broker: produceline.go) and waits for its answer. So
// each partition has at most one batch in flight — order is kept through
// retries without an idempotent producer — and a batch grows to whatever
// arrives during one round trip (capped by the target's record batch
// limit). Acknowledgement,
// progress and offset syncs are per batch, not per record, and the batches'
// records are reused, so the hot loop allocates nothing of its own.
//
// Against sarama's AsyncProducer this removes four goroutine hops and a
// channel send per record and the per-record ProducerMessage, which were
// most of the copy's CPU (bench/results).

// batch is records of one partition on their way to the target, with what
// their acknowledgement needs.
type batch struct {
	recs  []sarama.Record  // reused across cycles (header slices too)
	ptrs  []*sarama.Record // &recs[i], built at send time
	ups   []int64          // source offset of each record
	sizes []int32          // estimated bytes of each record
	first time.Time        // timestamp the records' deltas are relative to
	size  int              // estimated bytes, checked against the target's limit
	// next is the source progress once the batch is acknowledged: after
	// its last record, or later when loop records were skipped after it.
	next int64
	// buf and hdrs hold the records' bytes and headers, copied out of
	// the fetch responses: a record kept from a response keeps the whole
	// response (every partition's part of it) in memory, so without the
	// copy a thousand partitions' batches pin up to a response each.
	buf  []byte
	hdrs []sarama.RecordHeader
}

func (b *batch) reset(next int64) {
	// The records' and headers' slices are cleared, not only cut: a
	// cleared slot no longer keeps an earlier chunk of bytes alive.
	clear(b.recs)
	clear(b.hdrs)
	b.recs, b.ups, b.sizes, b.size, b.next = b.recs[:0], b.ups[:0], b.sizes[:0], 0, next
	b.buf, b.hdrs = b.buf[:0], b.hdrs[:0]
}

// Bytes are copied into chunks: a full chunk is left to the records that
// point into it and a new one taken, never copied into a bigger one (which
// would keep both alive while the batch lives).
const (
	minChunk = 4 << 10
	maxChunk = 256 << 10
)

// own copies p into the batch's buffer; nil stays nil and empty stays
// empty (Kafka tells a null key or value from an empty one).
func (b *batch) own(p []byte) []byte {
	switch {
	case p == nil:
		return nil
	case len(p) == 0:
		return []byte{}
	}
	if len(b.buf)+len(p) > cap(b.buf) {
		b.buf = make([]byte, 0, max(len(p), min(max(2*cap(b.buf), minChunk), maxChunk)))
	}
	n := len(b.buf)
	b.buf = append(b.buf, p...)
	return b.buf[n:len(b.buf):len(b.buf)]
}

// add appends a source record; extra is the kmirror.source header or nil.
func (b *batch) add(m *sarama.ConsumerMessage, extra *sarama.RecordHeader, size int) {
	ts := m.Timestamp // whole milliseconds, as Kafka stores them
	if ts.IsZero() {
		ts = time.Now().Truncate(time.Millisecond) // as sarama's producer does for a record without one
	}
	n := len(b.recs)
	if n == 0 {
		b.first = ts
	}
	if n < cap(b.recs) {
		b.recs = b.recs[:n+1]
	} else {
		b.recs = append(b.recs, sarama.Record{})
	}
	r := &b.recs[n]
	r.Key, r.Value = b.own(m.Key), b.own(m.Value)
	r.Headers = r.Headers[:0]
	for _, h := range m.Headers {
		b.hdrs = append(b.hdrs, sarama.RecordHeader{Key: b.own(h.Key), Value: b.own(h.Value)})
	}
	// Pointers are taken after the appends (which may move hdrs).
	for i := len(b.hdrs) - len(m.Headers); i < len(b.hdrs); i++ {
		r.Headers = append(r.Headers, &b.hdrs[i])
	}
	if extra != nil {
		r.Headers = append(r.Headers, extra)
	}
	r.Attributes = 0
	r.TimestampDelta = ts.Sub(b.first)
	b.ups = append(b.ups, m.Offset)
	b.sizes = append(b.sizes, int32(size))
	b.size += size
	b.next = m.Offset + 1
}

// recordBatch is recs[lo:hi] as one record batch (ptrs must be built).
func (b *batch) recordBatch(lo, hi int, codec sarama.CompressionCodec) *sarama.RecordBatch {
	maxDelta := b.recs[lo].TimestampDelta
	for i := lo; i < hi; i++ {
		r := &b.recs[i]
		r.OffsetDelta = int64(i - lo)
		maxDelta = max(maxDelta, r.TimestampDelta)
	}
	return &sarama.RecordBatch{
		Version:          2,
		Codec:            codec,
		CompressionLevel: sarama.CompressionLevelDefault,
		FirstTimestamp:   b.first,
		MaxTimestamp:     b.first.Add(maxDelta),
		LastOffsetDelta:  int32(hi - lo - 1),
		Records:          b.ptrs[lo:hi],
		// producer id and sequence: partitionCopy.stamp
	}
}

// recordSize estimates a record's bytes in the target batch, as checked
// against max.message.bytes.
func recordSize(m *sarama.ConsumerMessage, extra *sarama.RecordHeader) int {
	size := len(m.Key) + len(m.Value) + recordOverhead
	for _, h := range m.Headers {
		size += len(h.Key) + len(h.Value) + 8
	}
	if extra != nil {
		size += len(extra.Key) + len(extra.Value) + 8
	}
	return size
}

// partitionCopy is the copy path of one partition.
type partitionCopy struct {
	w      *worker
	ps     *partState
	header *sarama.RecordHeader // kmirror.source, or nil when off
	limit  int                  // most batch bytes the target takes
	ready  chan *batch          // consume -> send, unbuffered: a hand-off happens when send is free
	free   chan *batch          // send -> consume, an acknowledged batch to refill
	done   chan struct{}        // closed when send stops
	// held is the bytes this partition copied and has not seen
	// acknowledged, charged to the process's budget.
	held atomic.Int64
	// under is signalled when an acknowledgement brings held under the
	// partition's guarantee.
	under chan struct{}
	// running counts consume and send until they return (exited).
	running atomic.Int32

	// The idempotent producer id this partition writes under (see
	// producerIdentity), and its next sequence number; send's alone.
	pid   int64
	epoch int16
	gen   int
	seq   int32
	syncs []pendingSync // acknowledge's scratch
	// maxBytes is the target topic's max.message.bytes as planned for this
	// run (the partition's assignment; partState keeps only its identity).
	maxBytes int
	// dst is the target client this partition produces through.
	dst sarama.Client
	// Exactly once (w.txn): holding says send holds the transaction's
	// gate, unsure that a produce attempt of the batch in hand may have
	// been written without an answer saying so (the gate is then kept until
	// a later attempt succeeds).
	holding bool
	unsure  bool
}

func newPartitionCopy(w *worker, ps *partState, maxBytes int, dst sarama.Client) *partitionCopy {
	c := &partitionCopy{w: w, ps: ps, maxBytes: maxBytes, dst: dst,
		limit: min(maxBytes-batchOverhead, maxBatchBytes),
		ready: make(chan *batch), free: make(chan *batch, 1), done: make(chan struct{}), under: make(chan struct{}, 1)}
	if w.flow.AddSourceHeader {
		c.header = &sarama.RecordHeader{Key: sourceHeaderKey, Value: w.header}
	}
	c.pid, c.epoch, c.gen = w.ident.current()
	c.running.Store(2)
	return c
}

// maxQueued is how many full batches a partition keeps waiting for send
// before it stops fetching. A partition has one batch in flight and a
// produce request carries one batch of it, so batches queued past the next
// few add no throughput: at 16 a 6-partition task with a slower target
// filled the budget's whole held part, and the held records (their
// structs cost more than their bytes at 100 B) made most of its heap.
const maxQueued = 4

// fresh is an empty batch continuing at next: one send gave back, else new.
func (c *partitionCopy) fresh(next int64) *batch {
	var b *batch
	select {
	case b = <-c.free:
	default:
		b = new(batch)
	}
	b.reset(next)
	return b
}

// heldExtra is what a held record costs the budget beyond its recordSize
// (which counts recordOverhead of framing): its sarama.Record, its
// pointer, source offset and size, and a header slot. At 100 B these cost
// more than the bytes: a heap profile of the 100 B bench put 59 of 110 MB
// of held batches in the record structs, which recordSize alone
// undercounted.
const heldExtra = int(unsafe.Sizeof(sarama.Record{})) + 8 + 8 + 4 + 8 - recordOverhead

// heldBytes is what the batch's records were charged (consume charges
// each record its size plus heldExtra).
func (b *batch) heldBytes() int { return b.size + len(b.recs)*heldExtra }

// hold charges copied records' memory to the partition and the budget.
func (c *partitionCopy) hold(size int) {
	c.w.budget.charge(&c.held, c.w.guarantee, int64(size))
}

// spent says whether the partition holds more than its guarantee while the
// budget's pool is full: it stops fetching until there is room.
func (c *partitionCopy) spent() bool {
	return c.held.Load() >= c.w.guarantee && c.w.budget.spent()
}

// acknowledged gives an acknowledged batch's bytes back to the budget and
// the batch to consume for reuse, unless it grew past what is kept.
func (c *partitionCopy) acknowledged(b *batch) {
	if c.w.budget.charge(&c.held, c.w.guarantee, -int64(b.heldBytes())) {
		// Under its guarantee again: a partition paused for the pool
		// may fetch.
		select {
		case c.under <- struct{}{}:
		default:
		}
	}
	if b.size > c.w.sizes.keep {
		return
	}
	select {
	case c.free <- b:
	default:
	}
}

// exited is called by consume and send as they return. The second gives
// back what the copy still holds (batches never acknowledged): nothing more
// of it is acknowledged, and a partition stopped for good (the others go
// on) must not keep the budget spent and every other partition paused.
func (c *partitionCopy) exited() {
	if c.running.Add(-1) == 0 {
		c.w.budget.charge(&c.held, c.w.guarantee, -c.held.Load())
	}
}

// sourceHeaderKey is shared by every record (sarama only reads header keys).
var sourceHeaderKey = []byte(task.SourceHeader)

// loopsBack says whether a record came from the target cluster (its
// kmirror.source header names the target), so copying it would loop.
func (c *partitionCopy) loopsBack(m *sarama.ConsumerMessage) bool {
	for _, h := range m.Headers {
		if string(h.Key) == task.SourceHeader && c.w.flow.Policy.LoopsBack(h.Value) {
			return true
		}
	}
	return false
}

// consume is the hot loop: it reads the partition and fills batches, handing
// one to send whenever send is free. It returns nil when ctx ends, the
// partition stops for good, or send stops.
func (c *partitionCopy) consume(ctx context.Context, pc sarama.PartitionConsumer) error {
	defer c.exited()
	defer close(c.ready)
	ps := c.ps
	cur := c.fresh(ps.next.Load())
	// queued are full batches waiting for send, oldest first: records are
	// copied out of the consumer's queue as they come, not left there to
	// pin their fetch responses, until the budget is spent (budget.go).
	var queued []*batch
	handed := cur.next // progress of the last batch handed off
	// offered is the batch send takes next.
	offered := func() *batch {
		if len(queued) > 0 {
			return queued[0]
		}
		return cur
	}
	// handedOff moves on after the offered batch went to send.
	handedOff := func() {
		ps.hwm.Store(pc.HighWaterMarkOffset()) // the lag shown follows each hand-off
		if len(queued) > 0 {
			handed = queued[0].next
			queued[0] = nil
			queued = queued[1:]
			return
		}
		handed = cur.next
		cur = c.fresh(handed)
	}
	// Copied bytes are charged to the budget a step at a time, not per
	// record, and always before a batch holding them is handed off (its
	// acknowledgement gives them back).
	unheld, step := 0, int(min(max(c.w.guarantee/8, 1<<10), 16<<10))
	charge := func() {
		if unheld > 0 {
			c.hold(unheld)
			unheld = 0
		}
	}
	// handOff gives the offered batch to send, waiting until it is free;
	// false when the copy stops instead.
	handOff := func() bool {
		charge()
		select {
		case c.ready <- offered():
			handedOff()
			return true
		case <-ctx.Done():
		case <-c.done:
		}
		return false
	}
	// paused is whether the partition's fetching is paused: while the
	// budget is spent or it queued all it may. Records already fetched
	// are still taken. The worker started it paused (startPartition).
	paused := true
	// An idle partition's end is looked at now and then: the lag shown
	// follows it, and a tail of transaction markers is passed (tail.go).
	idle := time.NewTicker(tailCheckInterval)
	defer idle.Stop()
	quiet := true // no record arrived since the last tick
	// deniedSince is when the source refused to let us read, until a record
	// arrives or no refusal came for deniedClears; lastDenied the latest.
	var deniedSince, lastDenied time.Time
	msgs := pc.Messages()
	for {
		if hold := len(queued) >= maxQueued || c.spent(); hold != paused {
			if hold {
				pc.Pause()
			} else {
				pc.Resume()
			}
			paused = hold
		}
		// Take what the consumer already holds before handing off, so a
		// batch carries everything that arrived during the last round trip.
		var m *sarama.ConsumerMessage
		var ok bool
		select {
		case m, ok = <-msgs:
		default:
			var out chan<- *batch
			if len(queued) > 0 || len(cur.recs) > 0 || cur.next > handed {
				out = c.ready
			}
			var room <-chan struct{} // paused for the budget: woken when it has room
			if paused && len(queued) < maxQueued {
				room = c.w.budget.roomFreed()
			}
			charge()
			select {
			case <-ctx.Done():
				return nil
			case <-c.done:
				return nil
			case cerr, open := <-pc.Errors():
				if !open {
					return nil
				}
				msg := fmt.Sprintf("consume %s-%d: %v", ps.Source, ps.Partition.Partition, cerr.Err)
				if errors.Is(cerr.Err, sarama.ErrOffsetOutOfRange) {
					c.w.state.setError(msg)
					return fmt.Errorf("consume %s-%d: %w", ps.Source, ps.Partition.Partition, cerr.Err)
				}
				if authDenied(cerr.Err) {
					lastDenied = time.Now()
					// The consumer fetches again on its own: this partition
					// waits for the right, the flow's others go on, and
					// the status says so instead of a silent stall.
					msg = fmt.Sprintf("consume %s-%d: %v: grant this task's user READ on topic %s on the source; the partition goes on once allowed (the flow's other partitions go on)",
						ps.Source, ps.Partition.Partition, cerr.Err, ps.Source)
					if deniedSince.IsZero() {
						deniedSince = lastDenied
						ps.stall(msg, deniedSince)
						c.w.log.Warn(msg)
					}
				}
				c.w.state.setError(msg)
				continue
			case out <- offered():
				handedOff()
				continue
			case <-room:
				continue
			case <-c.under: // an acknowledgement took it under its guarantee
				continue
			case <-idle.C:
				if !deniedSince.IsZero() && time.Since(lastDenied) > deniedClears {
					// Fetches succeed again on an idle partition.
					deniedSince = time.Time{}
					ps.unstall()
				}
				hwm := pc.HighWaterMarkOffset()
				ps.hwm.Store(hwm)
				// Only after a whole quiet interval (the check's fetch
				// shares the consumer's connection, so it must not delay
				// records that flow), and when everything handed off is
				// acknowledged and nothing is being built.
				wasQuiet := quiet
				quiet = true
				// One check at a time per worker; a partition that finds
				// another checking tries again at its next tick.
				if wasQuiet && len(queued) == 0 && len(cur.recs) == 0 && cur.next == handed && ps.next.Load() == handed && hwm > handed && c.w.tailCheck.TryLock() {
					end, ok, err := SettledTail(c.w.src, ps.Source, ps.Partition.Partition, handed)
					c.w.tailCheck.Unlock()
					if err == nil && ok {
						cur.next = end
					}
				}
				continue
			case m, ok = <-msgs:
			}
		}
		if !ok {
			return fmt.Errorf("consumer of %s-%d stopped", ps.Source, ps.Partition.Partition)
		}
		quiet = false
		if !deniedSince.IsZero() { // reading is allowed again
			deniedSince = time.Time{}
			ps.unstall()
			c.w.log.Info("partition readable again; copying", "topic", ps.Source, "partition", ps.Partition.Partition)
		}
		if c.loopsBack(m) {
			ps.skipped.Add(1)
			cur.next = m.Offset + 1
			continue
		}
		size := recordSize(m, c.header)
		if size > c.maxBytes-batchOverhead {
			// What came before is still copied; this partition then stops
			// (the others go on) until the task is restarted.
			for len(queued) > 0 || len(cur.recs) > 0 {
				if !handOff() {
					return nil
				}
			}
			reason := fmt.Sprintf("record at offset %d of %s-%d is %d bytes; target topic %s accepts at most %d (max.message.bytes): raise max.message.bytes on the target topic, then restart the task",
				m.Offset, ps.Source, ps.Partition.Partition, size, ps.Target, c.maxBytes)
			ps.fail(reason)
			pc.AsyncClose() // stop fetching for a partition that copies no more (idempotent)
			c.w.log.Error("partition stopped", "topic", ps.Source, "partition", ps.Partition.Partition, "reason", reason)
			return nil
		}
		if len(cur.recs) > 0 && cur.size+size > c.limit {
			for len(queued) >= maxQueued {
				if !handOff() {
					return nil
				}
			}
			queued = append(queued, cur)
			cur = c.fresh(cur.next)
		}
		cur.add(m, c.header, size)
		if unheld += size + heldExtra; unheld >= step {
			charge()
		}
	}
}

// tailCheckInterval is how often an idle partition's end is looked at.
const tailCheckInterval = 2 * time.Second

// deniedClears is how long a partition whose reads were refused must go
// without a refusal (the consumer fetches again every couple of seconds)
// to count as readable when no record comes to prove it.
const deniedClears = 10 * time.Second

// errPartitionStopped ends send after the partition failed for good.
var errPartitionStopped = errors.New("partition stopped")

// send writes the handed-off batches in order, one at a time.
func (c *partitionCopy) send(ctx context.Context) error {
	defer c.exited()
	defer close(c.done)
	for b := range c.ready {
		if err := c.sendBatch(ctx, b); err != nil {
			if errors.Is(err, errPartitionStopped) {
				return nil
			}
			return err
		}
		c.acknowledged(b)
	}
	return nil
}

func (c *partitionCopy) sendBatch(ctx context.Context, b *batch) error {
	ps := c.ps
	if n := len(b.recs); n > 0 {
		b.ptrs = b.ptrs[:0]
		for i := range b.recs {
			b.ptrs = append(b.ptrs, &b.recs[i])
		}
		err := c.sendRange(ctx, b, 0, n)
		if c.holding && err != nil && c.unsure {
			// Left without an answer: the open transaction may hold
			// records its progress does not cover, so it must not commit
			// (the next start aborts it).
			c.w.txn.spoil(fmt.Errorf("a produce request to %s-%d was left without an answer", ps.Target, ps.Partition.Partition))
		}
		c.leaveTxn()
		if err != nil {
			return err
		}
	}
	// Loop records skipped after the last copied one count as done.
	ps.mu.Lock()
	ps.next.Store(b.next)
	ps.mu.Unlock()
	return nil
}

// sendRange produces recs[lo:hi] and acknowledges them. A batch the target
// refuses as too large is split (our size estimate can be off for records
// near the limit); a single record refused stops the partition.
func (c *partitionCopy) sendRange(ctx context.Context, b *batch, lo, hi int) error {
	ps := c.ps
	rb := b.recordBatch(lo, hi, c.w.flow.Compression)
	c.stamp(rb)
	if c.w.txn != nil {
		rb.IsTransactional = true
	}
	base, err := c.produce(ctx, rb, b.size)
	if errors.Is(err, sarama.ErrMessageSizeTooLarge) || errors.Is(err, sarama.ErrMessageSetSizeTooLarge) {
		if hi-lo > 1 {
			mid := (lo + hi) / 2
			if err := c.sendRange(ctx, b, lo, mid); err != nil {
				return err
			}
			return c.sendRange(ctx, b, mid, hi)
		}
		reason := fmt.Sprintf("record at offset %d of %s-%d was refused by target topic %s as too large: raise max.message.bytes on the target topic, then restart the task",
			b.ups[lo], ps.Source, ps.Partition.Partition, ps.Target)
		ps.fail(reason)
		c.w.log.Error("partition stopped", "topic", ps.Source, "partition", ps.Partition.Partition, "reason", reason)
		return errPartitionStopped
	}
	if err != nil {
		return fmt.Errorf("produce to %s-%d failed at source offset %d: %w", ps.Target, ps.Partition.Partition, b.ups[lo], err)
	}
	c.seq = nextSequence(c.seq, hi-lo)
	c.acknowledge(ctx, b, lo, hi, base)
	return nil
}

// checkTargetLoss compares the target partition's end with the last offset
// it acknowledged: an end before it means acknowledged records are gone
// (an unclean leader election, a crash of a broker holding the only
// replica). They are counted and reported with their range, never passed
// off as duplicates. Exact when nothing else writes to the partition.
func (c *partitionCopy) checkTargetLoss(cause error) {
	ps := c.ps
	lastDown := ps.lastDown.Load()
	if lastDown < 0 {
		return
	}
	end, err := c.w.dst.GetOffset(ps.Target, ps.Partition.Partition, sarama.OffsetNewest)
	if err != nil || end > lastDown {
		return
	}
	lost := ps.countTargetLoss(end, lastDown+1)
	c.w.targetLost(ps, lost, end, lastDown+1,
		fmt.Sprintf("the last of them is source offset %d of %s-%d; found on %v", ps.lastUp.Load(), ps.Source, ps.Partition.Partition, cause))
}

// stamp puts the partition's producer id and sequence on a batch.
func (c *partitionCopy) stamp(rb *sarama.RecordBatch) {
	rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence = -1, -1, -1
	if c.pid >= 0 {
		rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence = c.pid, c.epoch, c.seq
	}
}

// leaveTxn lets go of the transaction's gate if send holds it.
func (c *partitionCopy) leaveTxn() {
	if c.holding {
		c.holding = false
		c.w.txn.leave()
	}
}

// produceTimeout is the broker's time to gather acks=all for a request.
const produceTimeout = 10 * time.Second

// produceRetryFor bounds one request's retries (a broker restart, a leader
// move): after it the worker restarts from committed progress, with the
// reason in the flow's status.
const produceRetryFor = 2 * time.Minute

// produce sends rb (size bytes) to the partition's leader, retrying in
// place — later batches of the partition wait — until it is written, the
// error is not retriable, the retry time is up, or ctx ends. A retry of a
// request the broker wrote but whose answer was lost is dropped by the
// broker (same producer id and sequence), so it is not written twice.
func (c *partitionCopy) produce(ctx context.Context, rb *sarama.RecordBatch, size int) (int64, error) {
	ps, dst := c.ps, c.dst
	topic, part := ps.Target, ps.Partition.Partition
	var since, joinFrom time.Time // joinFrom: the join this produce waits in, shown as its stall
	for attempt := 0; ; attempt++ {
		var base int64
		var err error
		if c.w.txn != nil && !c.holding {
			// Shown (DEGRADED after DegradedAfter) if it lasts: a target
			// coordinator that does not answer holds the join, or the
			// commit it waits behind, for its client's retries, minutes
			// with no error to report while the flow looked RUNNING.
			var waiting string // set while this join is the partition's shown stall
			if since.IsZero() {
				now := time.Now()
				reason := fmt.Sprintf("produce to %s-%d waits for the target's transaction coordinator (joining the open transaction, or behind its commit)", topic, part)
				if ps.stallUnlessStalled(reason, now) {
					waiting, joinFrom = reason, cmp.Or(joinFrom, now)
				}
			}
			if err = c.w.txn.join(ctx, topic, part); err == nil {
				c.holding = true
				if waiting != "" {
					ps.unstallIf(waiting)
				}
				joinFrom = time.Time{}
			}
		}
		if err == nil {
			base, err = c.produceLined(ctx, rb, size)
			// Only a success settles an attempt left without an answer
			// (the broker answers a resend of a batch it wrote as written,
			// by its sequence): a refusal of a later attempt does not — the
			// earlier one may still sit in a frozen broker's socket and be
			// written after the next commit, which its progress would not
			// cover.
			switch {
			case err == nil:
				c.unsure = false
			case errors.As(err, new(answered)), errors.As(err, new(notSent)):
			default:
				c.unsure = true
			}
		}
		if err == nil {
			if !since.IsZero() {
				ps.unstall()
			}
			return base, nil
		}
		if c.w.txn != nil && (sequenceLost(err) || fencedBy(err)) {
			// Under a transactional id a new identity is a new epoch,
			// which would abort the open transaction: the worker starts
			// again from the last commit (or stops, fenced).
			c.checkTargetLoss(err)
			return -1, c.w.txn.explain(fmt.Sprintf("produce to %s-%d", topic, part), err)
		}
		renewed := false
		if sequenceLost(err) && c.pid >= 0 && ctx.Err() == nil {
			// The broker lost this partition's producer state: write the
			// batch again under a fresh identity (a duplicate if the lost
			// state held it). If the partition also lost records it had
			// acknowledged, that is loss, and it is counted as such.
			c.checkTargetLoss(err)
			warning, rerr := c.w.ident.renew(dst, c.gen)
			if rerr != nil {
				err = rerr
			} else {
				renewed = true
				c.pid, c.epoch, c.gen = c.w.ident.current()
				c.seq = 0
				c.stamp(rb)
				msg := fmt.Sprintf("produce to %s-%d: %v; writing again under a new producer id (records may be duplicated)", topic, part, err)
				if warning != "" {
					msg += "; " + warning
				}
				c.w.state.setError(msg)
				c.w.log.Warn(msg)
			}
		}
		denied := authDenied(err)
		if !(renewed || denied || retriable(err)) || ctx.Err() != nil {
			return -1, err
		}
		if since.IsZero() {
			// A join waited on already counts: DEGRADED does not start
			// over at its error.
			since = cmp.Or(joinFrom, time.Now())
			msg := fmt.Sprintf("produce to %s-%d: %v; retrying for up to %s", topic, part, err, produceRetryFor)
			if denied {
				// Rights are an operator's fix: this partition waits for
				// them, retrying, and the flow's others go on copying.
				msg = fmt.Sprintf("produce to %s-%d: %v: grant this task's user WRITE on topic %s on the target; retrying until then (the flow's other partitions go on)", topic, part, err, topic)
			}
			ps.stall(msg, since)
			c.w.state.setError(msg)
			c.w.log.Warn(msg)
		} else if time.Since(since) > produceRetryFor && !denied {
			return -1, fmt.Errorf("still failing after %s: %w", produceRetryFor, err)
		}
		if !c.unsure {
			// Not written: a commit may go ahead meanwhile; the next
			// attempt joins the transaction then open.
			c.leaveTxn()
		}
		// Not waited for past a stop: a broker that does not answer holds
		// a metadata refresh for as long as the client's retries last.
		if !interruptible(ctx, 0, func() { _ = dst.RefreshMetadata(topic) }) {
			return -1, err
		}
		select {
		case <-ctx.Done():
			return -1, err
		case <-time.After(retryBackoff(attempt, 0)):
		}
	}
}

// answerWait bounds the wait for a produce answer. The client's read
// timeout does not: sarama moves a connection's read deadline on at every
// request written to it, so a broker that stops answering (a hung JVM, a
// frozen host) held a partition's request for as long as the flow's other
// requests kept coming, minutes without an error or a stall in the status.
const answerWait = produceTimeout + 10*time.Second

// stopAnswerWait is how long a stop waits for the answer to a produce
// request in flight.
const stopAnswerWait = 5 * time.Second

// StopBound is the longest a flow's stop takes, whatever its clusters do
// (dead, leaderless, hung): the bounded waits a stop goes through, taken
// one after another at worst (a produce answer in flight, pending syncs,
// the sync producer's close, the progress write, an exactly-once flow's
// last transaction commit, the group's final commit, heartbeats;
// docs/DESIGN.md lists them), and 8 s for the rest (closing clients). A
// pause, delete or shutdown is never held longer.
const StopBound = stopAnswerWait + syncFlushWait + syncCloseWait + progressWriteWait + finalTxnWait + groupStopWait + heartbeatStopWait + 8*time.Second

// produceOnce sends req to the partition's leader on a request of its own
// and waits for its answer as awaitProduce says.
func produceOnce(ctx context.Context, dst sarama.Client, req *sarama.ProduceRequest, topic string, part int32) (int64, error) {
	leader, err := dst.Leader(topic, part)
	if err != nil {
		return -1, notSent{err}
	}
	got := make(chan produceAnswer, 1)
	// The callback runs on the broker's response reader: hand over only.
	if err := leader.AsyncProduce(req, func(r *sarama.ProduceResponse, err error) { got <- produceAnswer{r, err} }); err != nil {
		closeIfBroken(leader, err)
		return -1, err
	}
	return awaitProduce(ctx, leader, got, nil, topic, part)
}

// produceLined hands rb to the line of the partition's leader
// (produceline.go), to go with the worker's other partitions' batches for
// that broker in one request, and waits for its answer as awaitProduce
// says.
func (c *partitionCopy) produceLined(ctx context.Context, rb *sarama.RecordBatch, size int) (int64, error) {
	topic, part := c.ps.Target, c.ps.Partition.Partition
	leader, err := c.dst.Leader(topic, part)
	if err != nil {
		return -1, notSent{err}
	}
	header := sarama.ProduceRequest{RequiredAcks: sarama.WaitForAll, Timeout: int32(produceTimeout / time.Millisecond),
		Version: produceVersion(c.w.dst.Config().Version)}
	if c.w.txn != nil {
		header.TransactionalID = &c.w.txn.id // the broker authorizes transactional writes by it
	}
	p := &producePiece{topic: topic, part: part, rb: rb, size: size, got: make(chan produceAnswer, 1)}
	c.w.lines.line(leader).send(p, header)
	return awaitProduce(ctx, leader, p.got, p.abandon, topic, part)
}

// awaitProduce waits for the answer to a produce request to leader, at most
// answerWait, and at most stopAnswerWait past ctx: a stop does not wait for
// a broker that does not answer. A request left unanswered may still be
// written; it was not acknowledged, so its records are sent again
// (deduplicated by the broker under the same producer id, else copied
// again and counted). abandon, when not nil, withdraws a batch still
// waiting in its line: true means it was never sent.
//
// AsyncProduce, not Produce: sarama's Produce holds the broker's lock for
// the whole round trip, so requests sharing a connection would take turns
// on our side too.
func awaitProduce(ctx context.Context, leader *sarama.Broker, got <-chan produceAnswer, abandon func() bool, topic string, part int32) (int64, error) {
	// One timer, stopped on the answer: this runs for every batch.
	wait := time.NewTimer(answerWait)
	defer wait.Stop()
	stopping := ctx.Done()
	var a produceAnswer
	for waiting := true; waiting; {
		select {
		case a = <-got:
			waiting = false
		case <-stopping:
			// A stop still waits a little for the answer: a batch the
			// target wrote is then acknowledged and committed, not copied
			// again at the next start; a broker that does not answer holds
			// the stop no more.
			stopping = nil
			wait.Reset(stopAnswerWait)
		case <-wait.C:
			if stopping == nil {
				if abandon != nil && abandon() {
					return -1, notSent{ctx.Err()}
				}
				return -1, ctx.Err()
			}
			// The connection answers nothing: closed (the retry opens a
			// new one).
			err := fmt.Errorf("broker %d gave no answer to a produce request in %s: %w", leader.ID(), answerWait, os.ErrDeadlineExceeded)
			closeIfBroken(leader, err)
			if abandon != nil && abandon() {
				return -1, notSent{err}
			}
			return -1, err
		}
	}
	if a.err != nil {
		closeIfBroken(leader, a.err)
		return -1, a.err
	}
	blk := a.resp.GetBlock(topic, part)
	if blk == nil {
		return -1, sarama.ErrIncompleteResponse
	}
	if !errors.Is(blk.Err, sarama.ErrNoError) {
		return -1, answered{blk.Err}
	}
	return blk.Offset, nil
}

// answered is a produce request's refusal by the broker: this attempt was
// not written. notSent is an error before the request went out. Any other
// error of produceOnce leaves the attempt's fate unknown.
type (
	answered struct{ error }
	notSent  struct{ error }
)

func (e answered) Unwrap() error { return e.error }
func (e notSent) Unwrap() error  { return e.error }

// connBroken says whether err means the connection to a broker is gone
// (as opposed to an answer from the broker, or a request we could not
// encode).
func connBroken(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) || errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.Is(err, net.ErrClosed) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE) ||
		errors.Is(err, sarama.ErrNotConnected)
}

// closeIfBroken closes a broker whose connection broke under an async
// request (sarama closes it itself only for synchronous ones); the next
// Leader call opens it again. In the background: Close waits for the
// broker's lock, which a request to a broker that does not answer holds.
func closeIfBroken(b *sarama.Broker, err error) {
	if connBroken(err) && !errors.Is(err, sarama.ErrNotConnected) {
		go func() { _ = b.Close() }()
	}
}

// authDenied says whether the target refused a write for lack of rights:
// the partition waits for an operator to grant them (produce), without
// failing the rest of the flow.
func authDenied(err error) bool {
	return errors.Is(err, sarama.ErrTopicAuthorizationFailed) || errors.Is(err, sarama.ErrClusterAuthorizationFailed)
}

// retriable says whether a produce error may clear up by itself: a broken
// connection, leadership trouble, a broker short of replicas. Authorization,
// invalid records, requests that cannot be encoded and the like fail at once.
func retriable(err error) bool {
	var kerr sarama.KError
	if !errors.As(err, &kerr) {
		return connBroken(err) || errors.Is(err, sarama.ErrOutOfBrokers) || errors.Is(err, sarama.ErrIncompleteResponse)
	}
	switch kerr {
	case sarama.ErrNotLeaderForPartition, sarama.ErrLeaderNotAvailable, sarama.ErrUnknownTopicOrPartition,
		sarama.ErrRequestTimedOut, sarama.ErrNotEnoughReplicas, sarama.ErrNotEnoughReplicasAfterAppend,
		sarama.ErrKafkaStorageError, sarama.ErrNetworkException, sarama.ErrBrokerNotAvailable,
		sarama.ErrReplicaNotAvailable, sarama.ErrInvalidMessage, sarama.ErrFencedLeaderEpoch,
		sarama.ErrUnknownLeaderEpoch, sarama.ErrThrottlingQuotaExceeded:
		return true
	default:
		return false
	}
}

// produceVersion is the Produce request version sarama's own producer uses
// for a protocol version (record batches need 3 or later).
func produceVersion(v sarama.KafkaVersion) int16 {
	switch {
	case v.IsAtLeast(sarama.V3_7_0_0):
		return 10
	case v.IsAtLeast(sarama.V2_8_0_0):
		return 9
	case v.IsAtLeast(sarama.V2_4_0_0):
		return 8
	case v.IsAtLeast(sarama.V2_1_0_0):
		return 7
	case v.IsAtLeast(sarama.V2_0_0_0):
		return 6
	case v.IsAtLeast(sarama.V1_0_0_0):
		return 5
	}
	return 3
}

// acknowledge turns a written range (its first record at target offset base)
// into progress and offset syncs: one on the partition's first record,
// wherever the upstream/downstream distance changes, and at least every
// SyncInterval (see shouldSync).
func (c *partitionCopy) acknowledge(ctx context.Context, b *batch, lo, hi int, base int64) {
	ps, now := c.ps, time.Now()
	c.syncs = c.syncs[:0]
	// Written before the position the last acknowledged record left: the
	// target lost acknowledged records that no produce error told of — a
	// producer id new since then (a worker started again) writes its
	// first batch wherever the partition ends, after an unclean election
	// too. Counted as lost, as checkTargetLoss and reconcileResume do.
	// (progDown is written only by this goroutine and the start before it.)
	lost, lostTo := int64(0), ps.progDown
	gap := lostTo >= 0 && base < lostTo && c.ownPosition() && !c.targetCreatedAgain()
	ps.mu.Lock()
	if gap {
		lost = ps.countTargetLossLocked(base, lostTo)
	}
	for i := lo; i < hi; i++ {
		up, down := b.ups[i], base+int64(i-lo)
		if !shouldSync(ps.sync, up, down, now, c.w.opts.SyncInterval) {
			continue
		}
		changed := !ps.sync.have || down-up != ps.sync.down-ps.sync.up
		var point *checkpoint.SyncPoint
		if changed {
			p := checkpoint.SyncPoint{Upstream: up, Downstream: down, Prev: ps.prevFor(up)}
			point = &p
		}
		ps.sync = syncState{have: true, up: up, down: down, at: now}
		s := pendingSync{sync: mm2.OffsetSync{Topic: ps.Source, Partition: ps.Partition.Partition, UpstreamOffset: up, DownstreamOffset: down}, change: point}
		if ps.exactlyOnce {
			// Only committed records are synced: recorded and written
			// when the transaction commits (partState.committed).
			ps.txnSyncs = append(ps.txnSyncs, s)
			continue
		}
		if point != nil {
			s.forget = ps.hist.Add(*point)
			ps.syncPending = append(ps.syncPending, heldSync{*point, now})
		}
		c.syncs = append(c.syncs, s)
	}
	last := b.ups[hi-1]
	ps.next.Store(last + 1)
	ps.progDown = base + int64(hi-lo)
	ps.forgetRewrittenLoss(ps.progDown)
	ps.mu.Unlock()
	if lost > 0 {
		c.w.targetLost(ps, lost, base, lostTo,
			fmt.Sprintf("found when the next copied record, source offset %d of %s-%d, landed at target offset %d", b.ups[lo], ps.Source, ps.Partition.Partition, base))
	}
	// Queued outside the lock: emit waits while the sync queue is full,
	// and the syncs' acknowledgements need the lock (syncDurable).
	for _, s := range c.syncs {
		c.w.syncs.emit(ctx, ps, s)
	}
	var bytes int64
	for _, n := range b.sizes[lo:hi] {
		bytes += int64(n)
	}
	ps.records.Add(int64(hi - lo))
	ps.bytes.Add(bytes)
	ps.lastUp.Store(last)
	ps.lastDown.Store(base + int64(hi-lo-1))
	ps.lastTS.Store(b.first.Add(b.recs[hi-1].TimestampDelta).UnixMilli())
}

// ownPosition says whether the partition's downstream position is one
// kmirror's own records left: stored progress, or a record acknowledged in
// this process. A fresh start's is the target's end, which other writers'
// records may make, and their loss is not kmirror's.
func (c *partitionCopy) ownPosition() bool {
	c.ps.mu.Lock()
	defer c.ps.mu.Unlock()
	return c.ps.resumed || c.ps.lastDown.Load() >= 0
}

// targetCreatedAgain says whether the target topic now has another id than
// the one its copy started on: deleted and created again between two
// planning rounds, a retried produce lands at the new topic's start. That
// is not an election's loss: the next round restarts the copy, which
// counts what the old topic held (worker.targetReplaced). Asked only when
// a batch lands below the position (rare); unknown ids say no.
func (c *partitionCopy) targetCreatedAgain() bool {
	c.ps.mu.Lock()
	want := c.ps.targetTopicID
	c.ps.mu.Unlock()
	if want == "" {
		return false
	}
	ids, err := topicIDs(c.w.dst, []string{c.ps.Target})
	if id, ok := ids[c.ps.Target]; err == nil && ok && id != want {
		c.w.log.Warn("target topic was created again under the copy; what the old topic held is counted when the copy starts again", "topic", c.ps.Target, "partition", c.ps.Partition.Partition, "id", id, "was", want)
		return true
	}
	return false
}

// pendingSync is an offset sync decided under the partition's lock, queued
// after it.
type pendingSync struct {
	sync   mm2.OffsetSync
	change *checkpoint.SyncPoint // a distance change, for the sync history; nil for a periodic sync
	// forget are the history's points the change pushed out of its bound
	// (checkpoint.History.Add): deleted from the history topic.
	forget []checkpoint.SyncPoint
}

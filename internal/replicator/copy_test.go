package replicator

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"os"
	"runtime"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/IBM/sarama/mocks"

	"github.com/kmirror/kmirror/internal/checkpoint"
	"github.com/kmirror/kmirror/internal/mm2"
)

func msgAt(off int64, ts time.Time, headers ...*sarama.RecordHeader) *sarama.ConsumerMessage {
	return &sarama.ConsumerMessage{Offset: off, Timestamp: ts, Key: []byte("k"), Value: []byte("v"), Headers: headers}
}

func TestBatchRecordBatchOfARange(t *testing.T) {
	t0 := time.UnixMilli(1_700_000_000_000)
	var b batch
	b.reset(10)
	// Out-of-order timestamps: deltas may be negative, MaxTimestamp is the
	// largest of the range, not the last.
	for i, d := range []int{0, 5, -3, 9, 2} {
		b.add(msgAt(int64(10+i), t0.Add(time.Duration(d)*time.Millisecond)), nil, 80)
	}
	for i := range b.recs {
		b.ptrs = append(b.ptrs, &b.recs[i])
	}
	if b.next != 15 || b.size != 400 {
		t.Fatalf("next %d size %d, want 15 and 400", b.next, b.size)
	}
	cases := []struct {
		lo, hi  int
		maxDiff time.Duration
	}{
		{0, 5, 9 * time.Millisecond},
		{2, 3, -3 * time.Millisecond}, // a range of one record older than the first
		{1, 3, 5 * time.Millisecond},
		{3, 5, 9 * time.Millisecond},
	}
	for _, c := range cases {
		rb := b.recordBatch(c.lo, c.hi, sarama.CompressionZSTD)
		if len(rb.Records) != c.hi-c.lo || rb.LastOffsetDelta != int32(c.hi-c.lo-1) {
			t.Fatalf("[%d,%d): %d records, last delta %d", c.lo, c.hi, len(rb.Records), rb.LastOffsetDelta)
		}
		for i, r := range rb.Records {
			if r.OffsetDelta != int64(i) {
				t.Fatalf("[%d,%d): record %d has offset delta %d", c.lo, c.hi, i, r.OffsetDelta)
			}
			if got := rb.FirstTimestamp.Add(r.TimestampDelta); !got.Equal(b.first.Add(b.recs[c.lo+i].TimestampDelta)) {
				t.Fatalf("[%d,%d): record %d timestamp %v", c.lo, c.hi, i, got)
			}
		}
		if got := rb.MaxTimestamp.Sub(t0); got != c.maxDiff {
			t.Fatalf("[%d,%d): max timestamp t0%+v, want t0%+v", c.lo, c.hi, got, c.maxDiff)
		}
		if rb.Codec != sarama.CompressionZSTD || rb.Version != 2 {
			t.Fatalf("[%d,%d): codec %v version %d", c.lo, c.hi, rb.Codec, rb.Version)
		}
	}
}

func TestStampPutsProducerIDAndSequenceOnlyWhenIdempotent(t *testing.T) {
	c := &partitionCopy{pid: 7, epoch: 2, seq: 40}
	rb := &sarama.RecordBatch{}
	c.stamp(rb)
	if rb.ProducerID != 7 || rb.ProducerEpoch != 2 || rb.FirstSequence != 40 {
		t.Fatalf("idempotent batch: %d/%d/%d", rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence)
	}
	c.pid = -1 // the target refused idempotence
	c.stamp(rb)
	if rb.ProducerID != -1 || rb.ProducerEpoch != -1 || rb.FirstSequence != -1 {
		t.Fatalf("plain batch: %d/%d/%d", rb.ProducerID, rb.ProducerEpoch, rb.FirstSequence)
	}
}

func TestBatchReuseKeepsNoStaleHeaders(t *testing.T) {
	src := &sarama.RecordHeader{Key: sourceHeaderKey, Value: []byte("A")}
	h := &sarama.RecordHeader{Key: []byte("h"), Value: nil}
	var b batch
	b.reset(0)
	b.add(msgAt(0, time.Now(), h, h), src, 1)
	b.add(msgAt(1, time.Now(), h), src, 1)
	b.reset(2)
	b.add(msgAt(2, time.Time{}), nil, 1) // no headers, no timestamp
	if len(b.recs) != 1 || len(b.recs[0].Headers) != 0 {
		t.Fatalf("reused record has headers %v", b.recs[0].Headers)
	}
	if b.first.IsZero() {
		t.Fatal("a record without timestamp must get the current time, as sarama's producer gives it")
	}
	if b.recs[0].Key == nil || b.recs[0].Value == nil || b.ups[0] != 2 {
		t.Fatalf("record not filled: %+v, upstream %v", b.recs[0], b.ups)
	}
}

// A batch acknowledged at one target offset: syncs go out at the partition's
// first record and wherever the upstream/downstream distance changes inside
// the batch (skipped or compacted source offsets), and only there.
func TestAcknowledgeSyncsEveryDistanceChangeInsideABatch(t *testing.T) {
	cfg := sarama.NewConfig()
	cfg.Producer.Return.Successes = true
	prod := mocks.NewAsyncProducer(t, cfg)
	ps := &partState{Partition: Partition{Source: "orders", Target: "A.orders", Partition: 3}, hist: checkpoint.NewHistory(0), progDown: -1}
	sw := &syncWriter{topic: "syncs", history: "history", prod: prod, log: slog.Default()}
	sw.startFeed()
	t.Cleanup(func() { close(sw.stop); sw.stopFeed(); <-sw.fed })
	w := &worker{opts: Options{SyncInterval: time.Hour}, syncs: sw, log: slog.Default()}
	c := &partitionCopy{w: w, ps: ps}

	var b batch
	b.reset(100)
	for _, off := range []int64{100, 101, 105, 106, 107, 110} {
		b.add(msgAt(off, time.UnixMilli(1000+off)), nil, 10)
	}
	for i := range b.recs {
		b.ptrs = append(b.ptrs, &b.recs[i])
	}
	want := []mm2.OffsetSync{
		{UpstreamOffset: 100, DownstreamOffset: 50},
		{UpstreamOffset: 105, DownstreamOffset: 52},
		{UpstreamOffset: 110, DownstreamOffset: 55},
	}
	// Each is a distance change: MM2's record, then the history record
	// linked to the change before it.
	for range 2 * len(want) {
		prod.ExpectInputAndSucceed()
	}
	c.acknowledge(context.Background(), &b, 0, 3, 50) // split in two ranges, as after a too-large answer
	c.acknowledge(context.Background(), &b, 3, 6, 53)
	prev := checkpoint.ChainStart
	for i, w := range want {
		m := <-prod.Successes()
		k, _ := m.Key.Encode()
		v, _ := m.Value.Encode()
		got, err := mm2.DecodeOffsetSync(k, v)
		if err != nil {
			t.Fatal(err)
		}
		if m.Topic != "syncs" || got.Topic != "orders" || got.Partition != 3 || got.UpstreamOffset != w.UpstreamOffset || got.DownstreamOffset != w.DownstreamOffset {
			t.Fatalf("sync %d: %s %+v, want %+v", i, m.Topic, got, w)
		}
		m = <-prod.Successes()
		k, _ = m.Key.Encode()
		v, _ = m.Value.Encode()
		topic, part, p, err := checkpoint.DecodeHistory(k, v)
		if err != nil || m.Topic != "history" || topic != "orders" || part != 3 ||
			p != (checkpoint.SyncPoint{Upstream: w.UpstreamOffset, Downstream: w.DownstreamOffset, Prev: prev}) {
			t.Fatalf("history record %d: %s %s-%d %+v %v, want %+v linked to %d", i, m.Topic, topic, part, p, err, w, prev)
		}
		prev = w.UpstreamOffset
	}
	if len(ps.syncPending) != 3 || ps.hist.Len() != 3 {
		t.Fatalf("pending %v, history %d: every distance change is tracked until durable", ps.syncPending, ps.hist.Len())
	}
	if ps.next.Load() != 111 || ps.progDown != 56 || ps.lastUp.Load() != 110 || ps.lastDown.Load() != 55 || ps.lastTS.Load() != 1110 {
		t.Fatalf("next %d progDown %d last %d->%d ts %d", ps.next.Load(), ps.progDown, ps.lastUp.Load(), ps.lastDown.Load(), ps.lastTS.Load())
	}
	if ps.records.Load() != 6 || ps.bytes.Load() != 60 {
		t.Fatalf("counted %d records, %d bytes; want 6 and 60 (each range counts its own)", ps.records.Load(), ps.bytes.Load())
	}
	if err := prod.Close(); err != nil {
		t.Fatal(err)
	}
}

func TestRetriableProduceErrors(t *testing.T) {
	cases := []struct {
		err  error
		want bool
	}{
		{sarama.ErrNotLeaderForPartition, true},
		{sarama.ErrNotEnoughReplicas, true},
		{sarama.ErrRequestTimedOut, true},
		{sarama.ErrOutOfBrokers, true},
		{io.EOF, true},
		{fmt.Errorf("read: %w", syscall.ECONNRESET), true},
		{&net.OpError{Op: "dial", Err: syscall.ECONNREFUSED}, true},
		// No answer within answerWait (produceOnce): the connection is
		// closed and the batch retried.
		{fmt.Errorf("broker 1 gave no answer: %w", os.ErrDeadlineExceeded), true},
		{sarama.ErrTopicAuthorizationFailed, false},
		{sarama.PacketEncodingError{Info: "bad"}, false},
		{sarama.ErrUnsupportedVersion, false},
		{sarama.ErrInvalidRecord, false},
		{sarama.ErrClosedClient, false},
	}
	for _, c := range cases {
		if got := retriable(c.err); got != c.want {
			t.Errorf("retriable(%v) = %v, want %v", c.err, got, c.want)
		}
	}
}

func TestNextSequenceWrapsAsTheBroker(t *testing.T) {
	cases := []struct {
		seq  int32
		n    int
		want int32
	}{
		{0, 5, 5},
		{math.MaxInt32 - 2, 2, math.MaxInt32},
		{math.MaxInt32 - 2, 3, 0},
		{math.MaxInt32, 10, 9},
	}
	for _, c := range cases {
		if got := nextSequence(c.seq, c.n); got != c.want {
			t.Errorf("nextSequence(%d, %d) = %d, want %d", c.seq, c.n, got, c.want)
		}
	}
}

func TestOnlyTopicTrouble(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want bool
	}{
		{"a broker unreachable", sarama.ErrOutOfBrokers, false},
		{"one topic without a leader", errors.Join(fmt.Errorf("t: %w", sarama.ErrLeaderNotAvailable)), true},
		{"topics with their own errors", errors.Join(fmt.Errorf("a: %w", sarama.ErrLeaderNotAvailable), fmt.Errorf("b: %w", sarama.ErrTopicAuthorizationFailed)), true},
		{"a topic error and a network one", errors.Join(fmt.Errorf("a: %w", sarama.ErrLeaderNotAvailable), errors.New("EOF")), false},
		{"a bare Kafka error", sarama.ErrLeaderNotAvailable, false},
	} {
		if got := onlyTopicTrouble(c.err); got != c.want {
			t.Errorf("%s: onlyTopicTrouble = %v, want %v", c.name, got, c.want)
		}
	}
	if !partitionLocal(fmt.Errorf("consume: %w", sarama.ErrLeaderNotAvailable)) || partitionLocal(sarama.ErrOutOfBrokers) || partitionLocal(nil) {
		t.Error("partitionLocal: a partition's Kafka error is local, a cluster's unreachability and nil are not")
	}
}

// A held record is charged what it costs in memory, its sarama.Record and
// the batch's bookkeeping included: at 100 B those cost more than the
// bytes, and a charge of the record's wire size alone covered two thirds of
// the heap a batch of them took.
func TestHeldChargeCoversTheBatchsMemory(t *testing.T) {
	const n = 8192 // a power of two: the batch's slices end at their capacity
	extra := &sarama.RecordHeader{Key: sourceHeaderKey, Value: []byte("A")}
	msgs := make([]*sarama.ConsumerMessage, n)
	for i := range msgs {
		msgs[i] = &sarama.ConsumerMessage{Offset: int64(i), Timestamp: time.UnixMilli(1_700_000_000_000), Key: make([]byte, 8), Value: make([]byte, 100)}
	}
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	b := new(batch)
	charged := 0
	for _, m := range msgs {
		size := recordSize(m, extra)
		b.add(m, extra, size)
		charged += size + heldExtra // as consume charges it
	}
	for i := range b.recs {
		b.ptrs = append(b.ptrs, &b.recs[i]) // as send builds them
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	grown := int(after.HeapAlloc) - int(before.HeapAlloc)
	runtime.KeepAlive(b)
	runtime.KeepAlive(msgs) // live across both readings: only the batch is measured
	if charged != b.heldBytes() {
		t.Fatalf("records charged %d, the batch gives back %d", charged, b.heldBytes())
	}
	// An estimate: chunk tails and slice capacity are not charged.
	if charged < grown*9/10 {
		t.Fatalf("%d records of 100 B charged %d bytes, the batch took %d of heap", n, charged, grown)
	}
	t.Logf("%d records of 100 B: charged %d bytes, heap grew %d", n, charged, grown)
}

package replicator

import (
	"bytes"
	"runtime"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

func TestBatchCopiesRecordsOutOfTheResponse(t *testing.T) {
	cases := []struct {
		name       string
		key, value []byte
		header     *sarama.RecordHeader
	}{
		{"bytes", []byte("key"), []byte("value"), &sarama.RecordHeader{Key: []byte("h"), Value: []byte("v")}},
		{"null key and value", nil, nil, &sarama.RecordHeader{Key: []byte("h"), Value: nil}},
		{"empty key and value", []byte{}, []byte{}, &sarama.RecordHeader{Key: []byte("h"), Value: []byte{}}},
	}
	var b batch
	b.reset(0)
	for i, c := range cases {
		m := &sarama.ConsumerMessage{Offset: int64(i), Timestamp: time.UnixMilli(1), Key: c.key, Value: c.value, Headers: []*sarama.RecordHeader{c.header}}
		b.add(m, nil, 100)
	}
	for i, c := range cases {
		r := b.recs[i]
		same := func(got, want []byte) bool { return (got == nil) == (want == nil) && bytes.Equal(got, want) }
		if !same(r.Key, c.key) || !same(r.Value, c.value) || len(r.Headers) != 1 ||
			!same(r.Headers[0].Key, c.header.Key) || !same(r.Headers[0].Value, c.header.Value) {
			t.Fatalf("%s: record %q=%q headers %v", c.name, r.Key, r.Value, r.Headers)
		}
		if r.Headers[0] == c.header {
			t.Fatalf("%s: header not copied", c.name)
		}
	}
	// The response's bytes may change (or be freed) once the batch has them.
	cases[0].key[0], cases[0].value[0], cases[0].header.Value[0] = 'X', 'X', 'X'
	if r := b.recs[0]; string(r.Key) != "key" || string(r.Value) != "value" || string(r.Headers[0].Value) != "v" {
		t.Fatalf("record shares the response's bytes: %q=%q %q", r.Key, r.Value, r.Headers[0].Value)
	}
}

func TestBufferSizesFollowTheShare(t *testing.T) {
	cases := []struct {
		name       string
		total      int64
		partitions int
		want       bufferSizes
	}{
		{"few partitions: the most", DefaultBufferBytes, 6, bufferSizes{fetch: 1 << 20, response: 1 << 20, queue: 1024, keep: 1 << 20}},
		{"a thousand partitions", DefaultBufferBytes, 1000, bufferSizes{fetch: 1 << 20, response: 33554, queue: 65, keep: 67108}},
		{"past the floor", 16 << 20, 10000, bufferSizes{fetch: 1 << 20, response: 16 << 10, queue: 16, keep: 16 << 10}},
	}
	for _, c := range cases {
		b := NewBudget(c.total)
		leave := b.join(c.partitions)
		if got := sizesFor(b.share()); got != c.want {
			t.Errorf("%s: %+v, want %+v", c.name, got, c.want)
		}
		leave()
		leave() // twice gives back once
		if n := b.parts.Load(); n != 0 {
			t.Errorf("%s: %d partitions left after leave", c.name, n)
		}
	}
}

func TestParseBytes(t *testing.T) {
	cases := []struct {
		in   string
		want int64
		ok   bool
	}{
		{"256MiB", 256 << 20, true},
		{"1GiB", 1 << 30, true},
		{"512KiB", 512 << 10, true},
		{"64M", 64 << 20, true},
		{"1000", 1000, true},
		{"0", 0, false},
		{"-5MiB", 0, false},
		{"MiB", 0, false},
		{"1.5GiB", 0, false},
		{"12 MiB", 0, false},
	}
	for _, c := range cases {
		got, err := ParseBytes(c.in)
		if (err == nil) != c.ok || got != c.want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d (ok %v)", c.in, got, err, c.want, c.ok)
		}
	}
}

// hold and release charge bytes held by no partition (all of them past a
// guarantee): as if other flows' partitions held the pool.
func (b *Budget) hold(n int64) {
	var others atomic.Int64
	b.charge(&others, 0, n)
}

func (b *Budget) release(n int64) {
	var others atomic.Int64
	others.Store(n)
	b.charge(&others, 0, -n)
}

// The held part of the budget: spent at its limit, room again when an
// acknowledged batch gives bytes back, and the paused are woken then.
func TestBudgetHoldsCopiedBytesAndWakesWhenRoomIsFreed(t *testing.T) {
	b := NewBudget(1 << 20) // held limit 512 KiB
	b.guaranteed = 0        // all of it the pool, held by no partition
	if b.spent() {
		t.Fatal("spent before anything was held")
	}
	select {
	case <-b.roomFreed():
	default:
		t.Fatal("no room in an empty budget")
	}
	b.hold(300 << 10)
	b.hold(300 << 10)
	if !b.spent() {
		t.Fatalf("not spent at %d held of a 512 KiB limit", b.held.Load())
	}
	room := b.roomFreed()
	select {
	case <-room:
		t.Fatal("room while spent")
	default:
	}
	b.release(50 << 10) // still over the limit
	select {
	case <-room:
		t.Fatal("woken while still spent")
	default:
	}
	b.release(250 << 10)
	select {
	case <-room:
	case <-time.After(10 * time.Second):
		t.Fatal("not woken when room was freed")
	}
	if b.spent() {
		t.Fatalf("spent at %d held", b.held.Load())
	}
	b.release(300 << 10)
	if n := b.held.Load(); n != 0 {
		t.Fatalf("%d bytes held after all were released", n)
	}
}

// A batch's bytes cost about what they are: copies go into chunks, never
// moved into a bigger buffer (which kept both alive, twice the bytes).
func TestBatchBytesAreNotCopiedTwice(t *testing.T) {
	rec := bytes.Repeat([]byte("x"), 1024)
	const n = 1024 // 1 MiB of bytes
	var b batch
	b.reset(0)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	for range n {
		b.own(rec)
	}
	runtime.ReadMemStats(&after)
	allocated := after.TotalAlloc - before.TotalAlloc
	t.Logf("%d KiB allocated for %d KiB of bytes", allocated>>10, n)
	if limit := uint64(n*1024 + maxChunk + 16<<10); allocated > limit { // the last chunk's slack, and a little
		t.Fatalf("%d bytes allocated for %d bytes copied (at most %d)", allocated, n*1024, limit)
	}
}

func TestProduceConnectionsGrowWithPartitionsUpToTheCap(t *testing.T) {
	for _, c := range []struct{ partitions, want int }{
		{1, 1}, {6, 1}, {128, 1}, {129, 2}, {256, 2}, {500, 4}, {5000, 4},
	} {
		if got := produceConns(c.partitions); got != c.want {
			t.Errorf("produceConns(%d) = %d, want %d", c.partitions, got, c.want)
		}
	}
}

// What the budget commits is its total until its partitions' floors pass
// it, what its partitions' buffers can reach when that is less, and the
// soft memory limit is told each change with the partition count (not the
// same values twice): left at the total, the collector ran all the time at
// 10,000 partitions, and a 6-partition task's peak RSS was the collector's
// headroom over a total its buffers never reach.
func TestCommittedFollowsThePartitions(t *testing.T) {
	b := NewBudget(64 * minShare) // floors pass it beyond 64 partitions
	var told, parts []int64
	b.OnCommitted(func(c, n int64) { told, parts = append(told, c), append(parts, n) })
	leave40 := b.join(40)
	leave100 := b.join(100)
	if got, want := b.Committed(), int64(140*minShare); got != want {
		t.Fatalf("140 partitions commit %d, want %d (their floors)", got, want)
	}
	leave100()
	leave100() // a second leave changes nothing
	leave40()
	want := []int64{0, 64 * minShare, 140 * minShare, 64 * minShare, 0}
	if !slices.Equal(told, want) {
		t.Fatalf("told %v, want %v", told, want)
	}
	if want := []int64{0, 40, 140, 40, 0}; !slices.Equal(parts, want) {
		t.Fatalf("told partitions %v, want %v", parts, want)
	}

	big := NewBudget(DefaultBufferBytes)
	leave6 := big.join(6)
	if got, want := big.Committed(), int64(6*partitionMost); got != want || want >= DefaultBufferBytes {
		t.Fatalf("6 partitions of a %d-byte budget commit %d, want %d (what their buffers reach)", DefaultBufferBytes, got, want)
	}
	big.join(600)
	if got := big.Committed(); got != DefaultBufferBytes {
		t.Fatalf("606 partitions commit %d, want the budget %d", got, DefaultBufferBytes)
	}
	leave6()
}

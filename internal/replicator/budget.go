package replicator

import (
	"fmt"
	"sync/atomic"
)

// DefaultBufferBytes is the process-wide budget for buffered records when
// none is given (kmirror serve/run --buffer-memory).
const DefaultBufferBytes = 256 << 20

// Budget is the memory one process spends on records between the source
// and the target: fetched and not yet copied, and copied and not yet
// acknowledged. It is shared by every flow of the process (Options.Budget)
// and split evenly over the partitions they copy, so memory follows the
// configuration, not the partition count: a partition's fetch size, its
// consumer's queue and its two batches are sized from its share when its
// worker starts (bufferSizes).
//
// Each share has a floor (minShare): past Total/minShare partitions the
// process spends more than Total. Sizes are fixed when a worker starts, so
// a flow started later makes only the workers started after it smaller.
type Budget struct {
	total int64
	parts atomic.Int64 // partitions of the flows running now
}

// NewBudget makes a budget of total bytes; total <= 0 takes
// DefaultBufferBytes.
func NewBudget(total int64) *Budget {
	if total <= 0 {
		total = DefaultBufferBytes
	}
	return &Budget{total: total}
}

// Total is the budget's size in bytes.
func (b *Budget) Total() int64 { return b.total }

// processBudget is the budget of flows whose Options name none: one per
// process, as the engine passes the same Options to every flow.
var processBudget = NewBudget(DefaultBufferBytes)

// minShare is the least a partition gets (sizes of 16 KiB each: below that
// a fetch or a produce request carries too little to pay its round trip).
const minShare = 64 << 10

// join counts n more partitions sharing the budget until leave.
func (b *Budget) join(n int) (leave func()) {
	b.parts.Add(int64(n))
	var once atomic.Bool
	return func() {
		if once.CompareAndSwap(false, true) {
			b.parts.Add(-int64(n))
		}
	}
}

// share is one partition's part of the budget now.
func (b *Budget) share() int64 {
	return max(b.total/max(b.parts.Load(), 1), minShare)
}

// bufferSizes is what a partition may buffer, from its share of the
// budget: about a quarter each for its fetch, its consumer's queue and its
// two batches (one filling, one on its way to the target).
type bufferSizes struct {
	fetch int32 // bytes a fetch asks for the partition (Consumer.Fetch.Default)
	queue int   // records its consumer queues (ChannelBufferSize)
	batch int   // most bytes of one batch to the target
}

func sizesFor(share int64) bufferSizes {
	q := min(max(share/4, 16<<10), maxBatchBytes)
	return bufferSizes{
		fetch: int32(q),
		// Records are counted, not bytes: 1 KiB a record makes the queue
		// about a quarter of the share for records of 1 KiB.
		queue: int(min(max(q>>10, 16), 1024)),
		batch: int(q),
	}
}

// ParseBytes reads a size such as 256MiB, 1GiB, 512KiB or a plain number
// of bytes (for --buffer-memory).
func ParseBytes(s string) (int64, error) {
	units := []struct {
		suffix string
		mult   int64
	}{{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10}, {"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1}}
	orig, mult := s, int64(1)
	for _, u := range units {
		if len(s) > len(u.suffix) && s[len(s)-len(u.suffix):] == u.suffix {
			s, mult = s[:len(s)-len(u.suffix)], u.mult
			break
		}
	}
	var n int64
	if _, err := fmt.Sscanf(s, "%d", &n); err != nil || fmt.Sprint(n) != s || n <= 0 {
		return 0, fmt.Errorf("size %q: give a positive number of bytes with an optional unit (KiB, MiB, GiB), such as 256MiB", orig)
	}
	return n * mult, nil
}

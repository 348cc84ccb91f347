package replicator

import (
	"fmt"
	"sync"
	"sync/atomic"
)

// DefaultBufferBytes is the process-wide budget for buffered records when
// none is given (kmirror serve/run --buffer-memory).
const DefaultBufferBytes = 256 << 20

// Budget is the memory one process spends on records between the source
// and the target: fetched and not yet copied, and copied and not yet
// acknowledged. It is shared by every flow of the process (Options.Budget).
//
// Three eighths of it are for records copied out of the fetch responses
// into batches waiting for the target (held): a partition charges the
// records it copies and pauses its fetching while its part is spent (see
// below), and an acknowledged batch gives its bytes back. So a partition drains its consumer at once —
// a record left in sarama's queue keeps its whole fetch response alive —
// while the backlog the process buffers stays bounded whatever the
// partition count. The rest goes to the fetch responses being read (each
// worker's response cap: an eighth of its partitions' shares, a response
// possibly read while the last is dispatched) and to the batches kept for
// reuse (a quarter), sized from a partition's share (bufferSizes) when its
// worker starts.
//
// The held part is shared fairly: half of it is split over the partitions
// as each one's own (its guarantee), the other half is the common pool.
// A partition pauses only once it holds more than its guarantee and the
// bytes held past the guarantees fill the pool. So a task catching up, or
// one whose target stopped answering, fills the pool and its own parts,
// while every other task's partitions go on copying within theirs.
//
// Each share has a floor (minShare): past Total/minShare partitions the
// process spends more than Total. Sizes and guarantees are fixed when a
// worker starts, so a flow started later makes only the workers started
// after it smaller.
type Budget struct {
	total int64
	// guaranteed is the part of the held limit split over the partitions
	// as their guarantees; the rest is the pool.
	guaranteed int64
	parts      atomic.Int64 // partitions of the flows running now
	held       atomic.Int64 // bytes copied out and not yet acknowledged
	over       atomic.Int64 // of held, the bytes past their partition's guarantee

	mu   sync.Mutex
	room chan struct{} // closed when held falls below the limit again
	// onCommitted is told Committed and the partition count when
	// partitions join or leave (OnCommitted); told is what it was told last.
	onCommitted func(committed, partitions int64)
	told        [2]int64
}

// NewBudget makes a budget of total bytes; total <= 0 takes
// DefaultBufferBytes.
func NewBudget(total int64) *Budget {
	if total <= 0 {
		total = DefaultBufferBytes
	}
	b := &Budget{total: total}
	b.guaranteed = b.heldLimit() / 2
	return b
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
	b.tellCommitted()
	var once atomic.Bool
	return func() {
		if once.CompareAndSwap(false, true) {
			b.parts.Add(-int64(n))
			b.tellCommitted()
		}
	}
}

// Committed is what the partitions sharing the budget may take: Total, or
// more once their floors (minShare each) pass it, or less when their
// buffers cannot reach it (partitionMost each): a 6-partition task holds
// at most 48 MiB of a 256 MiB budget, and a soft memory limit set at the
// whole budget let the collector's headroom make its peak RSS instead.
func (b *Budget) Committed() int64 {
	parts := b.parts.Load()
	return max(min(b.total, parts*partitionMost), parts*minShare)
}

// partitionMost is the most one partition's buffers reach: its batches
// (the one filling, the one in flight and maxQueued queued, maxBatchBytes
// each at most), the fetch it asks for and its part of a fetch response
// (bufferSizes, each at most maxBatchBytes).
const partitionMost = (maxQueued + 4) * maxBatchBytes

// OnCommitted calls f with Committed and the partition count now, and
// again whenever partitions joining or leaving change them: the process's
// soft memory limit follows them (embeddedengine.LimitMemory). A limit
// left at Total while the floors took more kept the collector running all
// the time: at 10,000 partitions its work was about two thirds of the
// process's CPU.
func (b *Budget) OnCommitted(f func(committed, partitions int64)) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.onCommitted, b.told = f, [2]int64{b.Committed(), b.parts.Load()}
	f(b.told[0], b.told[1])
}

func (b *Budget) tellCommitted() {
	b.mu.Lock()
	defer b.mu.Unlock()
	if now := [2]int64{b.Committed(), b.parts.Load()}; b.onCommitted != nil && now != b.told {
		b.told = now
		b.onCommitted(now[0], now[1])
	}
}

// share is one partition's part of the budget now.
func (b *Budget) share() int64 {
	return max(b.total/max(b.parts.Load(), 1), minShare)
}

// heldLimit is what copied-out records may hold before partitions pause.
func (b *Budget) heldLimit() int64 { return b.total * 3 / 8 }

// guarantee is what one partition of a worker starting now may hold
// whatever the others hold.
func (b *Budget) guarantee() int64 { return b.guaranteed / max(b.parts.Load(), 1) }

// poolLimit is what the bytes held past the guarantees may reach before
// the partitions past theirs pause.
func (b *Budget) poolLimit() int64 { return b.heldLimit() - b.guaranteed }

// charge moves what a partition holds (*held, against its guarantee) by n
// bytes, given back when negative (its batch was acknowledged, or its copy
// stopped), and wakes the partitions paused for room when the pool has
// some again. below says the partition went under its guarantee with it.
func (b *Budget) charge(held *atomic.Int64, guarantee, n int64) (below bool) {
	now := held.Add(n)
	was := now - n
	b.held.Add(n)
	if d := max(now-guarantee, 0) - max(was-guarantee, 0); d != 0 {
		if over := b.over.Add(d); d < 0 && over < b.poolLimit() {
			b.wake()
		}
	}
	return was >= guarantee && now < guarantee
}

// spent says whether the pool is full: a partition holding more than its
// guarantee stops fetching until there is room.
func (b *Budget) spent() bool { return b.over.Load() >= b.poolLimit() }

// wake wakes the partitions paused for room.
func (b *Budget) wake() {
	b.mu.Lock()
	if b.room != nil {
		close(b.room)
		b.room = nil
	}
	b.mu.Unlock()
}

// closedRoom is what roomFreed returns when there is room already.
var closedRoom = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// roomFreed is closed once the budget has room: at once when it has now.
// A wake-up may find the room taken again; the partition then pauses again.
func (b *Budget) roomFreed() <-chan struct{} {
	b.mu.Lock()
	defer b.mu.Unlock()
	if !b.spent() {
		return closedRoom
	}
	if b.room == nil {
		b.room = make(chan struct{})
	}
	return b.room
}

// bufferSizes is what a partition may buffer besides its held copies,
// from its share of the budget.
type bufferSizes struct {
	// fetch is what a fetch asks for the partition (Consumer.Fetch.Default):
	// a source's record batches come whole in one round (a smaller size
	// gets part of a batch and sarama asks again for the rest).
	fetch int32
	// response is the worker's fetch response cap per partition
	// (Consumer.Fetch.MaxBytes is this times its partitions, capped).
	response int32
	queue    int // records its consumer queues (ChannelBufferSize)
	// keep is the largest batch buffer kept for reuse after its batch is
	// acknowledged; larger ones are left to the collector.
	keep int
}

func sizesFor(share int64) bufferSizes {
	q := min(max(share/4, 16<<10), maxBatchBytes)
	return bufferSizes{
		fetch:    maxBatchBytes,
		response: int32(min(max(share/8, 16<<10), maxBatchBytes)),
		// Records are counted, not bytes: 1 KiB a record makes the queue
		// about a quarter of the share for records of 1 KiB.
		queue: int(min(max(q>>10, 16), 1024)),
		keep:  int(q),
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

// Package checkpoint translates consumer-group offsets from a source cluster
// to a target cluster and keeps them in step (docs/TASKS.md, Consumer-offset sync), MM2-compatible: the
// checkpoint records are MM2's, so RemoteClusterUtils.translateOffsets reads
// them.
//
// How translation is exact. The replicator emits an offset sync (upstream u,
// downstream d) on a partition's first record and whenever the distance d-u
// changes (an upstream gap: skipped, compacted or aborted records,
// transaction markers; other writers on the target; a rewind after a
// restart). So between two consecutive syncs S_i and S_i+1 of one writer
// every copied record has d = u + (d_i - u_i). A group offset g (the next
// record the group will read) with u_i <= g translates to
//
//	min(d_i + (g - u_i), d_i+1)                when S_i+1 is linked to S_i,
//	min(d_i + (g - u_i), next downstream)      for the newest sync, when the
//	                                           flow's live progress is known,
//	min(d_i + (g == u_i ? 0 : 1), d_i+1)       otherwise (MM2's rule: safe,
//	                                           may be behind).
//
// Continuity is proven, never assumed. Each sync carries Prev, the upstream
// offset of the distance change before it as its writer saw it; S_i+1 is
// linked to S_i when S_i+1.Prev == u_i. A sync that was lost, one that
// compaction took, or one written by another tool (MM2's syncs carry no
// Prev) breaks the chain, and across a break only the safe rule is used:
// interpolating across a distance change the history cannot see could
// translate past records that were never copied.
//
// A target that went back. A sync marked TargetReset by its writer (which
// saw the target topic created again, or lost records), or whose downstream
// is below the one before it while its upstream moved on, means the target
// partition no longer holds what the earlier syncs describe. Every earlier
// sync is dropped and the new one becomes the floor: a group
// behind it translates to the floor's downstream (the new topic's first
// copied record), never into offsets of a topic that is gone, and MM2's
// older syncs are not taken in again.
//
// The caps keep the result from ever being ahead of what was copied: a group
// moved to the target never skips a record. Because history is kept for
// every distance change (not MM2's 64 syncs since restart), groups lagging
// far behind translate exactly too; a group older than the known history is
// not translated (reported), never guessed.
package checkpoint

import "sort"

// SyncPoint is one offset sync of a partition.
type SyncPoint struct {
	Upstream   int64
	Downstream int64
	// Prev is the upstream offset of the distance change before this one,
	// as the writer that emitted both saw it: between the two the distance
	// is proven constant. ChainStart for a writer's first sync; Unlinked
	// for a sync that says nothing about what came before (MM2's).
	Prev int64
}

// Prev values that name no earlier sync.
const (
	ChainStart int64 = -1
	Unlinked   int64 = -2
	// TargetReset starts a writer's chain on a target partition that is
	// not the one earlier syncs describe (the target topic was created
	// again, or lost records): every earlier sync is dropped.
	TargetReset int64 = -3
)

// Live is a flow's acknowledged progress on a partition: every upstream
// offset below NextUpstream has been copied, the last to NextDownstream-1.
type Live struct {
	NextUpstream   int64
	NextDownstream int64
}

// History is a partition's syncs in upstream order. It only grows forward;
// a sync that goes back (a re-copy after a restart) drops the syncs it
// supersedes, as the records they describe were copied again after it.
type History struct {
	points []SyncPoint
	max    int
	// floor, when set, is the first sync after the target went back: a
	// group behind it translates to its downstream.
	floor    SyncPoint
	hasFloor bool
	// reset: the target went back (Reset) and its first sync is not here
	// yet; older syncs describe a target that is gone.
	reset bool
}

// Reset forgets every sync when the writer knows the target partition is
// not the one they describe (created again): nothing translates until the
// writer's next sync becomes the floor (PrevFor marks it TargetReset, so
// readers of the history topic see the reset too).
func (h *History) Reset() {
	h.points = h.points[:0]
	h.hasFloor, h.reset = false, true
}

// NewHistory keeps at most limit points (the oldest are dropped first);
// limit <= 0 means 100000.
func NewHistory(limit int) *History {
	if limit <= 0 {
		limit = 100000
	}
	return &History{max: limit}
}

// Add records a sync. bounded are the oldest points it dropped to stay
// within its limit (none until the history is full): their writer deletes
// them from its history topic, which otherwise keeps a point a distance
// change for its whole retention (a transactional source makes one a
// transaction: millions a month a partition, each read at a restart).
// Points a rewind superseded or a reset dropped are not in it (a later
// point may have the same key), nor the first point after a reset or
// after the target went back (see the loop).
func (h *History) Add(p SyncPoint) (bounded []SyncPoint) {
	n := len(h.points)
	if p.Prev == TargetReset || n > 0 && p.Upstream > h.points[n-1].Upstream && p.Downstream < h.points[n-1].Downstream {
		// The target went back: what the earlier syncs map to is gone.
		h.points = h.points[:0]
		h.floor, h.hasFloor, h.reset = p, true, false
		n = 0
	}
	if n > 0 && p.Upstream <= h.points[n-1].Upstream {
		i := sort.Search(n, func(i int) bool { return h.points[i].Upstream >= p.Upstream })
		h.points = h.points[:i]
	}
	h.points = append(h.points, p)
	if len(h.points) > h.max {
		// Resliced, not copied down: a source that commits a transaction
		// a second adds a point a second per partition, and moving the
		// whole history on each was O(limit) per sync. append copies the
		// kept points only when the array's end is reached, about once
		// per limit adds.
		drop := len(h.points) - h.max
		for _, d := range h.points[:drop] {
			// The first point after the target went back stays in the
			// topic: the points before it were never deleted there, and a
			// restart replaying the topic needs it to drop them again.
			if d.Prev != TargetReset && !(h.hasFloor && d == h.floor) {
				bounded = append(bounded, d)
			}
		}
		h.points = h.points[drop:]
	}
	return bounded
}

// PrevFor is the Prev of a new distance-change sync at upstream up by a
// writer whose earlier changes are all in the history: the sync before up,
// unless that one is Unlinked (nothing is known about the stretch between);
// TargetReset for the first sync after Reset.
func (h *History) PrevFor(up int64) int64 {
	if h.reset {
		return TargetReset // the first sync since Reset
	}
	i := sort.Search(len(h.points), func(i int) bool { return h.points[i].Upstream >= up }) - 1
	if i < 0 || h.points[i].Prev == Unlinked {
		return ChainStart
	}
	return h.points[i].Upstream
}

// AddOlder adds syncs from a source that carries no links (MM2's
// offset-syncs topic), in the order written, as Unlinked points: only
// those older than every point already held, so they extend the history
// backwards without overriding what the writer's own history says.
func (h *History) AddOlder(points []SyncPoint) {
	if h.hasFloor || h.reset {
		return // they describe a target partition that is gone
	}
	older := NewHistory(h.max)
	for _, p := range points {
		p.Prev = Unlinked
		older.Add(p)
	}
	if oldest := h.Oldest(); oldest >= 0 {
		n := sort.Search(len(older.points), func(i int) bool { return older.points[i].Upstream >= oldest })
		older.points = older.points[:n]
	}
	h.points = append(older.points, h.points...)
	if len(h.points) > h.max {
		h.points = h.points[len(h.points)-h.max:]
	}
}

// Len is the number of points kept.
func (h *History) Len() int { return len(h.points) }

// Oldest is the first upstream offset the history can translate, or -1;
// 0 once the target went back (every older offset translates to the floor).
func (h *History) Oldest() int64 {
	if h.hasFloor {
		return 0
	}
	if len(h.points) == 0 {
		return -1
	}
	return h.points[0].Upstream
}

// Translate maps group offset g to the target. live may be nil when the
// flow's progress is not known (another process wrote the syncs). ok is
// false when g is older than the history (or there is none).
func (h *History) Translate(g int64, live *Live) (downstream int64, ok bool) {
	t, ok := h.Explain(g, live)
	return t.Downstream, ok
}

// Translation is a translated group offset and how far it can be trusted:
// what a consumer moved to the target may read again there.
type Translation struct {
	Downstream int64
	// Exact: Downstream is the target offset of the record at g (or the
	// next copied one): a consumer moved there reads nothing again and
	// skips nothing.
	Exact bool
	// Behind bounds how far Downstream may be behind the exact position
	// (0 when Exact): records a consumer moved there may read again; -1
	// when nothing bounds it (past the newest sync, the flow's progress
	// not known).
	Behind int64
	// Lost counts source offsets from g on whose records the target no
	// longer holds (it went back, see TargetReset): not read there.
	Lost int64
	// Inflation sums the distance increases after the group's position:
	// target offsets past Downstream that hold no record new to the group
	// (records copied again after a restart, transaction markers, another
	// writer's records). A copy that is not exactly-once counts its
	// duplicates in it.
	Inflation int64
}

// Explain is Translate with how far the answer can be trusted.
func (h *History) Explain(g int64, live *Live) (Translation, bool) {
	n := len(h.points)
	i := sort.Search(n, func(i int) bool { return h.points[i].Upstream > g }) - 1
	if i < 0 && h.hasFloor && g < h.floor.Upstream {
		// Behind the point where the target went back: the records it
		// read there are gone from the target; start at the new first.
		return Translation{Downstream: h.floor.Downstream, Lost: h.floor.Upstream - g, Inflation: h.inflationAfter(-1)}, true
	}
	if i < 0 {
		return Translation{}, false
	}
	s := h.points[i]
	exact := s.Downstream + (g - s.Upstream)
	safe := s.Downstream // MM2's rule: behind by at most the run since s
	if g > s.Upstream {
		safe++
	}
	t := Translation{Inflation: h.inflationAfter(i)}
	// bound is the highest offset the exact position can have, when the
	// answer is not exact.
	var bound int64
	switch {
	case i+1 < n && h.points[i+1].Prev == s.Upstream:
		// Capped: g was not copied (a gap); the next copied record is
		// the next sync's.
		t.Downstream, t.Exact = min(exact, h.points[i+1].Downstream), true
	case i+1 < n:
		t.Downstream, bound = min(safe, h.points[i+1].Downstream), h.points[i+1].Downstream
		t.Exact = g == s.Upstream
	case live != nil && live.NextUpstream >= s.Upstream && s.Prev != Unlinked:
		// Capped: g is not copied yet; it will be at the next offset.
		t.Downstream, t.Exact = min(exact, live.NextDownstream), true
	default:
		// Nothing bounds the run since s: past it, the exact position is
		// not known at all.
		t.Downstream, bound = safe, -1
		t.Exact = g == s.Upstream
		if live != nil {
			bound = max(safe, live.NextDownstream)
		}
	}
	switch {
	case t.Exact:
	case bound < 0:
		t.Behind = -1
	default:
		t.Behind = bound - t.Downstream
	}
	return t, true
}

// InflationFromStart is what a reader of the target partition from its
// first offset may meet that is no record new to it: the offsets before
// the first sync beyond its upstream (earlier copies a restart wrote again),
// and every distance increase after it.
func (h *History) InflationFromStart() int64 {
	if len(h.points) == 0 {
		return 0
	}
	first := h.points[0]
	return max(0, first.Downstream-first.Upstream) + h.inflationAfter(0)
}

// inflationAfter sums the distance increases after point i (i = -1: from
// the floor, or from the first point): each is a stretch of the target
// holding no record new to a group at point i.
func (h *History) inflationAfter(i int) int64 {
	var sum int64
	prev, have := h.floor, h.hasFloor
	if i >= 0 {
		prev, have = h.points[i], true
	}
	for _, p := range h.points[i+1:] {
		if d := (p.Downstream - p.Upstream) - (prev.Downstream - prev.Upstream); have && d > 0 {
			sum += d
		}
		prev, have = p, true
	}
	return sum
}

// Inversion is a target offset mapped back to the source: where a consumer
// of the target that stopped at that offset goes on at the source.
type Inversion struct {
	Upstream int64
	// Exact: every record below Upstream, and none at or past it, was
	// copied below the target offset.
	Exact bool
	// Behind bounds how far Upstream may be behind the exact position
	// (records read again); -1 when nothing bounds it.
	Behind int64
	// Overshoot is how far into a stretch of the target holding no new
	// record (records copied again after a restart, transaction markers,
	// another writer's records) the target offset lay: a copy that is not
	// exactly-once may have shown the consumer that many records again
	// there, which it reads again at the source.
	Overshoot int64
}

// Invert maps target offset d back to the source: failback, where the
// consumers of the target go home. live, when known, is the copy's
// position (every upstream offset below NextUpstream copied, the last to
// NextDownstream-1): a d at or past it maps to NextUpstream. ok is false
// when d lies before the history.
func (h *History) Invert(d int64, live *Live) (Inversion, bool) {
	if live != nil && d >= live.NextDownstream {
		return Inversion{Upstream: live.NextUpstream, Exact: true}, true
	}
	n := len(h.points)
	i := sort.Search(n, func(i int) bool { return h.points[i].Downstream > d }) - 1
	if i < 0 {
		return Inversion{}, false
	}
	s := h.points[i]
	up := s.Upstream + (d - s.Downstream)
	var limit int64 = -1 // the next upstream offset not in s's run
	linked := false
	switch {
	case i+1 < n:
		limit, linked = h.points[i+1].Upstream, h.points[i+1].Prev == s.Upstream
	case live != nil && live.NextUpstream >= s.Upstream && s.Prev != Unlinked:
		limit, linked = live.NextUpstream, true
	}
	switch {
	case linked && up > limit:
		return Inversion{Upstream: limit, Exact: true, Overshoot: up - limit}, true
	case linked:
		return Inversion{Upstream: up, Exact: true}, true
	case d == s.Downstream:
		return Inversion{Upstream: s.Upstream, Exact: true}, true
	case limit >= 0:
		// Unlinked: a hidden gap may lie anywhere in the run; from its
		// start, at most the run is read again.
		return Inversion{Upstream: s.Upstream, Behind: min(up, limit) - s.Upstream}, true
	default:
		return Inversion{Upstream: s.Upstream, Behind: -1}, true
	}
}

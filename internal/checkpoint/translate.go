// Package checkpoint translates consumer-group offsets from a source cluster
// to a target cluster and keeps them in step (SPEC §5), MM2-compatible: the
// checkpoint records are MM2's, so RemoteClusterUtils.translateOffsets reads
// them.
//
// How translation is exact. The replicator emits an offset sync (upstream u,
// downstream d) on a partition's first record and whenever the distance d-u
// changes (an upstream gap: skipped, compacted or aborted records,
// transaction markers; other writers on the target; a rewind after a
// restart). So between two consecutive syncs S_i and S_i+1 every copied
// record has d = u + (d_i - u_i). A group offset g (the next record the
// group will read) with u_i <= g translates to
//
//	min(d_i + (g - u_i), d_i+1)                when S_i+1 exists,
//	min(d_i + (g - u_i), next downstream)      for the newest sync, when the
//	                                           flow's live progress is known,
//	d_i + (g == u_i ? 0 : 1)                   for the newest sync otherwise
//	                                           (MM2's rule: safe, may be behind).
//
// The caps keep the result from ever being ahead of what was copied: a group
// moved to the target never skips a record. Because history is kept for
// every delta change (not MM2's 64 syncs since restart), groups lagging far
// behind translate exactly too; a group older than the known history is not
// translated (reported), never guessed.
package checkpoint

import "sort"

// SyncPoint is one offset sync of a partition.
type SyncPoint struct {
	Upstream   int64
	Downstream int64
}

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
}

// NewHistory keeps at most max points (the oldest are dropped first);
// max <= 0 means 100000.
func NewHistory(max int) *History {
	if max <= 0 {
		max = 100000
	}
	return &History{max: max}
}

// Add records a sync.
func (h *History) Add(p SyncPoint) {
	n := len(h.points)
	if n > 0 && p.Upstream <= h.points[n-1].Upstream {
		i := sort.Search(n, func(i int) bool { return h.points[i].Upstream >= p.Upstream })
		h.points = h.points[:i]
	}
	h.points = append(h.points, p)
	if len(h.points) > h.max {
		drop := len(h.points) - h.max
		h.points = append(h.points[:0], h.points[drop:]...)
	}
}

// Len is the number of points kept.
func (h *History) Len() int { return len(h.points) }

// Oldest is the first upstream offset the history can translate, or -1.
func (h *History) Oldest() int64 {
	if len(h.points) == 0 {
		return -1
	}
	return h.points[0].Upstream
}

// Translate maps group offset g to the target. live may be nil when the
// flow's progress is not known (another process wrote the syncs). ok is
// false when g is older than the history (or there is none).
func (h *History) Translate(g int64, live *Live) (downstream int64, ok bool) {
	n := len(h.points)
	i := sort.Search(n, func(i int) bool { return h.points[i].Upstream > g }) - 1
	if i < 0 {
		return 0, false
	}
	s := h.points[i]
	exact := s.Downstream + (g - s.Upstream)
	switch {
	case i+1 < n:
		return min(exact, h.points[i+1].Downstream), true
	case live != nil && live.NextUpstream >= s.Upstream:
		return min(exact, live.NextDownstream), true
	case g == s.Upstream:
		return s.Downstream, true
	default:
		return s.Downstream + 1, true
	}
}

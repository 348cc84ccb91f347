package checkpoint

import (
	"slices"
	"testing"
)

// history is what one writer emits: each sync linked to the one before.
func history(points ...SyncPoint) *History {
	h := NewHistory(0)
	for _, p := range points {
		p.Prev = h.PrevFor(p.Upstream)
		h.Add(p)
	}
	return h
}

func pt(up, down int64) SyncPoint { return SyncPoint{Upstream: up, Downstream: down} }

func TestTranslate(t *testing.T) {
	// 0..9 copied to 0..9; 10..11 skipped (loop header); 12.. copied from 10;
	// the flow has acknowledged up to upstream 29 (next 30 -> downstream 28).
	h := history(pt(0, 0), pt(12, 10))
	live := &Live{NextUpstream: 30, NextDownstream: 28}
	cases := []struct {
		name string
		g    int64
		live *Live
		want int64
		ok   bool
	}{
		{"at the first sync", 0, live, 0, true},
		{"inside the first run, exact", 7, live, 7, true},
		{"end of the first run", 10, live, 10, true},
		{"in the gap: capped at the next sync", 11, live, 10, true},
		{"at the second sync", 12, live, 10, true},
		{"inside the newest run, exact with live progress", 20, live, 18, true},
		{"caught up", 30, live, 28, true},
		{"ahead of the copy: capped at what was copied", 45, live, 28, true},
		{"newest run without live progress: MM2's rule", 20, nil, 11, true},
		{"at the newest sync without live progress", 12, nil, 10, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := h.Translate(c.g, c.live)
			if got != c.want || ok != c.ok {
				t.Fatalf("Translate(%d) = %d, %v; want %d, %v", c.g, got, ok, c.want, c.ok)
			}
		})
	}
}

func TestTranslateOlderThanHistory(t *testing.T) {
	h := history(pt(100, 50))
	if _, ok := h.Translate(99, nil); ok {
		t.Fatal("translated an offset older than the history")
	}
	if _, ok := NewHistory(0).Translate(5, nil); ok {
		t.Fatal("translated with no history")
	}
}

func TestRewindDropsSupersededSyncs(t *testing.T) {
	// Copied 0..99 to 0..99, crashed, re-copied from 60: 60 -> 100.
	h := history(pt(0, 0), pt(50, 50), pt(90, 90), pt(60, 100))
	if h.Len() != 3 {
		t.Fatalf("len %d, want 3 (the sync at 90 is superseded)", h.Len())
	}
	if got, _ := h.Translate(70, &Live{NextUpstream: 80, NextDownstream: 120}); got != 110 {
		t.Fatalf("Translate(70) = %d, want 110 (the second copy)", got)
	}
	if got, _ := h.Translate(55, nil); got != 55 {
		t.Fatalf("Translate(55) = %d, want 55 (the first copy, still on the target)", got)
	}
}

func TestHistoryBound(t *testing.T) {
	h := NewHistory(3)
	for i := int64(0); i < 10; i++ {
		h.Add(pt(i*10, i*10))
	}
	if h.Len() != 3 || h.Oldest() != 70 {
		t.Fatalf("len %d oldest %d", h.Len(), h.Oldest())
	}
}

// At its bound the history keeps exactly the newest points, through many
// times its limit of adds with rewinds among them (the drop reslices; the
// array is copied only when append reaches its end).
func TestHistoryBoundOverManyAdds(t *testing.T) {
	const limit = 100
	h := NewHistory(limit)
	var model []SyncPoint
	up := int64(0)
	for i := range 50 * limit {
		up += 3
		if i%97 == 96 {
			up -= 30 // a re-copy after a restart supersedes the last points
		}
		p := pt(up, up+int64(i/10))
		bounded := h.Add(p)
		n := len(model)
		for n > 0 && model[n-1].Upstream >= p.Upstream {
			n--
		}
		model = append(model[:n], p)
		var dropped []SyncPoint
		if len(model) > limit {
			dropped = slices.Clone(model[:len(model)-limit])
			model = model[len(model)-limit:]
		}
		if h.Len() != len(model) || h.Oldest() != model[0].Upstream {
			t.Fatalf("add %d: len %d oldest %d, want %d and %d", i, h.Len(), h.Oldest(), len(model), model[0].Upstream)
		}
		// Only what the bound pushed out is returned (its writer deletes
		// it from the history topic), never what a rewind superseded.
		if !slices.Equal(bounded, dropped) {
			t.Fatalf("add %d: dropped by the bound %v, want %v", i, bounded, dropped)
		}
	}
	if cap(h.points) > 3*limit {
		t.Fatalf("history holds an array of %d points for a limit of %d", cap(h.points), limit)
	}
	for _, p := range model {
		if got, ok := h.Translate(p.Upstream, nil); !ok || got != p.Downstream {
			t.Fatalf("translate %d: %d %v, want %d", p.Upstream, got, ok, p.Downstream)
		}
	}
}

// A sync a second per partition from a transactional source keeps the
// history at its bound for hours: an add there must not cost the bound.
func BenchmarkHistoryAddAtItsBound(b *testing.B) {
	h := NewHistory(0)
	for i := range int64(100_000) {
		h.Add(pt(2*i, i))
	}
	up := int64(200_000)
	b.ResetTimer()
	for i := range b.N {
		h.Add(pt(up+2*int64(i), up/2+int64(i)))
	}
}

// randomCopy builds a copy from steps (each copies, 0..1, or skips, 2, an
// upstream record) and the history one writer emits for it: down[u] is the
// downstream offset of upstream u (-1 skipped), d the next downstream.
func randomCopy(steps []byte) (down []int64, h *History, d int64) {
	h = NewHistory(0)
	var last SyncPoint
	have := false
	for u, s := range steps {
		if s%3 == 2 {
			down = append(down, -1)
			continue
		}
		down = append(down, d)
		p := pt(int64(u), d)
		if !have || p.Downstream-p.Upstream != last.Downstream-last.Upstream {
			p.Prev = h.PrevFor(p.Upstream)
			h.Add(p)
			last, have = p, true
		}
		d++
	}
	return down, h, d
}

// firstCopied is where the first record at or after upstream g was copied
// to (next when none was): the exact translation of g.
func firstCopied(down []int64, g, next int64) int64 {
	for u := g; u < int64(len(down)); u++ {
		if down[u] >= 0 {
			return down[u]
		}
	}
	return next
}

// Never ahead: for every offset of a random copy with gaps and rewinds, the
// translation is at most the downstream position of the first record at or
// after g.
func FuzzTranslateNeverAhead(f *testing.F) {
	f.Add([]byte{1, 0, 3, 1, 0, 0, 2}, int64(5))
	f.Fuzz(func(t *testing.T, steps []byte, g int64) {
		down, h, d := randomCopy(steps)
		if len(down) == 0 {
			return
		}
		if g < 0 || g > int64(len(down)) {
			g = int64(len(down)) / 2
		}
		live := &Live{NextUpstream: int64(len(down)), NextDownstream: d}
		got, ok := h.Translate(g, live)
		if !ok {
			return
		}
		// The first copied record at or after g must be at or after got.
		want := firstCopied(down, g, d)
		if got > want {
			t.Fatalf("g=%d translated to %d, ahead of %d", g, got, want)
		}
		if got != want {
			t.Fatalf("g=%d translated to %d, want exactly %d", g, got, want)
		}
	})
}

// A distance change the history cannot see — its sync lost, compacted away,
// or never written (MM2) — is never interpolated across.
func TestTranslateAcrossHiddenChange(t *testing.T) {
	// The copy: 0..49 -> 0..49; 50..69 skipped (an upstream gap, distance
	// -20); 70..209 -> 50..189; 210.. after another gap of 10 -> 190..
	// The sync at 70 (the first change) is lost.
	full := []SyncPoint{pt(0, 0), pt(70, 50), pt(210, 190)}
	linked := history(full...)
	lost := history(full...)
	lost.points = append(lost.points[:1:1], lost.points[2]) // 210 still names 70 as its Prev
	mm2 := NewHistory(0)
	mm2.AddOlder([]SyncPoint{pt(0, 0), pt(210, 190)})
	cases := []struct {
		name string
		h    *History
		g    int64
		want int64
	}{
		{"whole chain: exact", linked, 100, 80},
		{"whole chain: in the gap, the next copied record", linked, 60, 50},
		// Interpolating from 0 would give 100, twenty records past the
		// copy of 100 (at 80): a consumer failing over would skip them.
		{"sync lost: safe rule", lost, 100, 1},
		{"sync lost: at a known sync, exact", lost, 210, 190},
		{"before the hidden change: still safe, not exact", lost, 30, 1},
		{"MM2's syncs only: safe rule", mm2, 100, 1},
		{"MM2's syncs only: at a sync", mm2, 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got, ok := c.h.Translate(c.g, nil); !ok || got != c.want {
				t.Fatalf("Translate(%d) = %d, %v; want %d", c.g, got, ok, c.want)
			}
		})
	}
}

func TestAddOlderExtendsOnlyBackwards(t *testing.T) {
	h := history(pt(100, 100), pt(150, 140))
	// MM2's syncs from before kmirror took over, and one after that
	// contradicts kmirror's own history: only the older ones are added.
	h.AddOlder([]SyncPoint{pt(10, 5), pt(60, 55), pt(120, 500)})
	if h.Len() != 4 || h.Oldest() != 10 {
		t.Fatalf("len %d oldest %d, want 4 points from 10", h.Len(), h.Oldest())
	}
	if got, _ := h.Translate(130, nil); got != 130 {
		t.Fatalf("Translate(130) = %d, want 130 (kmirror's linked run)", got)
	}
	if got, _ := h.Translate(80, nil); got != 56 {
		t.Fatalf("Translate(80) = %d, want 56 (MM2's rule after the sync at 60)", got)
	}
	// A writer continuing after the unlinked syncs does not link to them.
	h2 := NewHistory(0)
	h2.AddOlder([]SyncPoint{pt(0, 0)})
	if prev := h2.PrevFor(40); prev != ChainStart {
		t.Fatalf("PrevFor after an MM2 sync = %d, want ChainStart", prev)
	}
}

// Never ahead, whatever syncs are lost: a random copy with gaps and
// rewinds, its distance-change syncs linked by one writer, then a random
// subset of them dropped (lost writes, compaction).
func FuzzTranslateNeverAheadWithLostSyncs(f *testing.F) {
	f.Add([]byte{1, 0, 2, 2, 1, 0, 2, 1, 1}, uint64(0b0101), int64(4))
	f.Fuzz(func(t *testing.T, steps []byte, drop uint64, g int64) {
		down, h, d := randomCopy(steps)
		if len(down) == 0 {
			return
		}
		kept := h.points[:0:0]
		for i, p := range h.points {
			if i >= 64 || drop&(1<<i) == 0 {
				kept = append(kept, p)
			}
		}
		h.points = kept
		if g < 0 || g > int64(len(down)) {
			g = int64(len(down)) / 2
		}
		got, ok := h.Translate(g, nil)
		if !ok {
			return
		}
		want := firstCopied(down, g, d)
		if got > want {
			t.Fatalf("g=%d translated to %d, ahead of %d (history %v)", g, got, want, h.points)
		}
	})
}

// The target topic deleted and created again while the copy went on from
// its progress: 0..2999 were copied to 0..2999 of the old topic; the new
// topic holds 3500.. from 0. No group translates into the old topic's
// offsets: one behind the replacement goes to the new topic's start.
func TestTargetThatWentBackStartsHistoryAgain(t *testing.T) {
	h := history(pt(0, 0), pt(1000, 1000), pt(2000, 2005))
	// Unmarked: the downstream going back is enough to see it.
	h.Add(SyncPoint{Upstream: 3500, Downstream: 0, Prev: h.PrevFor(3500)})
	live := &Live{NextUpstream: 4000, NextDownstream: 500}
	for _, c := range []struct {
		g, want int64
	}{
		{0, 0},      // was 0 on the old topic
		{1500, 0},   // was 1505: gone with the old topic
		{3499, 0},   // never on the new topic: start there
		{3500, 0},   // the new topic's first record
		{3700, 200}, // exact on the new topic
		{5000, 500}, // capped at what was copied
	} {
		got, ok := h.Translate(c.g, live)
		if !ok || got != c.want {
			t.Errorf("Translate(%d) = %d, %v; want %d", c.g, got, ok, c.want)
		}
	}
	if h.Len() != 1 || h.Oldest() != 0 {
		t.Fatalf("history after the target went back: %d points, oldest %d", h.Len(), h.Oldest())
	}
	// MM2's syncs from before describe the old topic: not taken in.
	h.AddOlder([]SyncPoint{pt(0, 0), pt(100, 100)})
	if h.Len() != 1 {
		t.Fatalf("older MM2 syncs were added after the target went back: %d points", h.Len())
	}
}

// Whatever the copy did before, once the target went back no translation
// is ahead of the first record the new target holds for the group.
func FuzzTranslateNeverAheadAfterTheTargetWentBack(f *testing.F) {
	f.Add([]byte{1, 0, 3, 1, 0, 0, 2}, int64(3), int64(5))
	f.Fuzz(func(t *testing.T, steps []byte, skip, g int64) {
		down, h, d := randomCopy(steps)
		if len(down) == 0 || d <= 0 {
			return
		}
		// The target is replaced; the copy goes on at upstream
		// len(down)+skip, landing at 0 of the new topic.
		skip = max(0, skip%1000)
		restart := int64(len(down)) + skip
		h.Add(SyncPoint{Upstream: restart, Downstream: 0, Prev: TargetReset})
		copied := int64(10)
		live := &Live{NextUpstream: restart + copied, NextDownstream: copied}
		if g < 0 || g > restart+copied {
			g = restart / 2
		}
		got, ok := h.Translate(g, live)
		if !ok {
			t.Fatalf("g=%d not translated after the target went back", g)
		}
		want := max(g-restart, 0) // the new topic holds restart.. at 0..
		if got != want {
			t.Fatalf("g=%d translated to %d, want %d (restart at %d)", g, got, want, restart)
		}
	})
}

// After Reset nothing translates, MM2's older syncs are not taken in, and
// the writer's next sync is marked TargetReset and becomes the floor.
func TestResetMarksTheNextSync(t *testing.T) {
	h := history(pt(0, 0), pt(100, 100))
	h.Reset()
	if _, ok := h.Translate(50, nil); ok {
		t.Fatal("translated after Reset, before any new sync")
	}
	h.AddOlder([]SyncPoint{pt(0, 0)})
	if prev := h.PrevFor(300); prev != TargetReset {
		t.Fatalf("PrevFor after Reset = %d, want TargetReset", prev)
	}
	h.Add(SyncPoint{Upstream: 300, Downstream: 0, Prev: h.PrevFor(300)})
	if got, ok := h.Translate(50, nil); !ok || got != 0 || h.PrevFor(400) != 300 {
		t.Fatalf("after the first sync: Translate(50) = %d, %v; PrevFor(400) = %d", got, ok, h.PrevFor(400))
	}
}

func TestExplain(t *testing.T) {
	// 0..9 copied to 0..9; 10..11 skipped; 12..19 copied from 10; a restart
	// copied 15..19 again from 18 (distance +5); the flow has acknowledged
	// up to upstream 29 (next 30 -> downstream 33).
	linked := history(pt(0, 0), pt(12, 10), pt(15, 18))
	live := &Live{NextUpstream: 30, NextDownstream: 33}
	// The same runs, the syncs MM2's (nothing linked).
	unlinked := NewHistory(0)
	unlinked.AddOlder([]SyncPoint{pt(0, 0), pt(12, 10), pt(15, 18)})
	// A target that went back: a new topic, copied from upstream 40 on.
	reset := history(pt(0, 0))
	reset.Add(SyncPoint{Upstream: 40, Downstream: 0, Prev: TargetReset})
	cases := []struct {
		name string
		h    *History
		g    int64
		live *Live
		want Translation
	}{
		{"linked, inside a run: exact", linked, 7, live, Translation{Downstream: 7, Exact: true, Inflation: 5}},
		{"linked, in a gap: the next copied record", linked, 11, live, Translation{Downstream: 10, Exact: true, Inflation: 5}},
		{"linked, past the re-copy: nothing inflates after it", linked, 16, live, Translation{Downstream: 19, Exact: true}},
		{"newest run, live: exact", linked, 29, live, Translation{Downstream: 32, Exact: true}},
		{"ahead of the copy: the next copied offset", linked, 40, live, Translation{Downstream: 33, Exact: true}},
		{"unlinked, at a sync: exact", unlinked, 12, live, Translation{Downstream: 10, Exact: true, Inflation: 5}},
		{"unlinked, inside a run: behind by at most the run", unlinked, 13, live, Translation{Downstream: 11, Behind: 7, Inflation: 5}},
		{"unlinked, newest run: behind by at most the live progress", unlinked, 20, live, Translation{Downstream: 19, Behind: 14}},
		{"newest run without live progress: unbounded", linked, 20, nil, Translation{Downstream: 19, Behind: -1}},
		{"behind a target that went back: lost there", reset, 25, live, Translation{Downstream: 0, Lost: 15}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := c.h.Explain(c.g, c.live)
			if !ok || got != c.want {
				t.Fatalf("Explain(%d) = %+v, %v; want %+v", c.g, got, ok, c.want)
			}
			if down, _ := c.h.Translate(c.g, c.live); down != got.Downstream {
				t.Errorf("Translate(%d) = %d, Explain says %d", c.g, down, got.Downstream)
			}
		})
	}
}

func TestInvert(t *testing.T) {
	// As TestExplain: 0..9 -> 0..9; 10..11 skipped; 12..19 -> 10..17; a
	// restart copied 15..19 again from 18 (the first copies of 15..17 at
	// 13..15, then 18..19 at 16..17: 18..22 hold 15..19 again); the copy
	// is at upstream 30 -> downstream 33.
	linked := history(pt(0, 0), pt(12, 10), pt(15, 18))
	live := &Live{NextUpstream: 30, NextDownstream: 33}
	unlinked := NewHistory(0)
	unlinked.AddOlder([]SyncPoint{pt(0, 0), pt(12, 10), pt(15, 18)})
	cases := []struct {
		name string
		h    *History
		d    int64
		live *Live
		want Inversion
		ok   bool
	}{
		{"inside the first run", linked, 7, live, Inversion{Upstream: 7, Exact: true}, true},
		{"at the gap: the next copied record", linked, 10, live, Inversion{Upstream: 12, Exact: true}, true},
		{"inside the second run", linked, 12, live, Inversion{Upstream: 14, Exact: true}, true},
		{"in the first copy of what was copied again", linked, 16, live, Inversion{Upstream: 15, Exact: true, Overshoot: 3}, true},
		{"after the re-copy", linked, 20, live, Inversion{Upstream: 17, Exact: true}, true},
		{"caught up", linked, 33, live, Inversion{Upstream: 30, Exact: true}, true},
		{"past the copy", linked, 40, live, Inversion{Upstream: 30, Exact: true}, true},
		{"unlinked, at a sync", unlinked, 10, live, Inversion{Upstream: 12, Exact: true}, true},
		{"unlinked, inside a run: from its start", unlinked, 12, live, Inversion{Upstream: 12, Behind: 2}, true},
		{"unlinked newest run without a bound", unlinked, 20, nil, Inversion{Upstream: 15, Behind: -1}, true},
		{"before the history", history(pt(100, 50)), 20, nil, Inversion{}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, ok := c.h.Invert(c.d, c.live)
			if ok != c.ok || got != c.want {
				t.Fatalf("Invert(%d) = %+v, %v; want %+v, %v", c.d, got, ok, c.want, c.ok)
			}
		})
	}
}

// Translating there and back: a group moved to the target and home again
// lands where it was, for every offset of a linked history.
func TestInvertUndoesTranslate(t *testing.T) {
	h := history(pt(0, 0), pt(12, 10), pt(40, 30), pt(41, 33))
	live := &Live{NextUpstream: 60, NextDownstream: 52}
	for g := int64(0); g <= 60; g++ {
		tr, ok := h.Explain(g, live)
		if !ok || !tr.Exact {
			t.Fatalf("Explain(%d) = %+v, %v", g, tr, ok)
		}
		inv, ok := h.Invert(tr.Downstream, live)
		// Offsets in a gap were never copied: they come back as the next
		// copied one.
		want := g
		if g > 9 && g < 12 {
			want = 12
		}
		if g > 31 && g < 40 {
			want = 40
		}
		if !ok || inv.Upstream != want || !inv.Exact {
			t.Errorf("g %d -> %d -> %+v, %v; want back at %d", g, tr.Downstream, inv, ok, want)
		}
	}
}

// From the first offset: the copies before the first sync (a restart wrote
// 0..9 again from 10) and every increase after it.
func TestInflationFromStart(t *testing.T) {
	h := history(pt(0, 10), pt(12, 20), pt(15, 28))
	if got := h.InflationFromStart(); got != 10+5 {
		t.Fatalf("InflationFromStart = %d, want 15", got)
	}
	if got := NewHistory(0).InflationFromStart(); got != 0 {
		t.Fatalf("empty history: %d", got)
	}
}

// The first point after the target went back is never returned for
// deletion: the topic still holds the points before it (never deleted
// there), and a restart replaying the topic needs it to drop them again.
func TestBoundKeepsTheFloorInTheTopic(t *testing.T) {
	for _, tc := range []struct {
		name  string
		floor SyncPoint
	}{
		{"target created again", SyncPoint{Upstream: 20, Downstream: 0, Prev: TargetReset}},
		{"target went back", pt(20, 5)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := NewHistory(2)
			h.Add(pt(0, 0))
			h.Add(pt(10, 10))
			h.Add(tc.floor)
			h.Add(pt(30, 15))
			if got := h.Add(pt(40, 25)); len(got) != 0 {
				t.Fatalf("the bound pushed out the floor and returned %v for deletion, want none", got)
			}
			if got := h.Add(pt(50, 35)); !slices.Equal(got, []SyncPoint{pt(30, 15)}) {
				t.Fatalf("returned %v, want the point after the floor", got)
			}
		})
	}
}

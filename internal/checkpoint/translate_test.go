package checkpoint

import "testing"

func history(points ...SyncPoint) *History {
	h := NewHistory(0)
	for _, p := range points {
		h.Add(p)
	}
	return h
}

func TestTranslate(t *testing.T) {
	// 0..9 copied to 0..9; 10..11 skipped (loop header); 12.. copied from 10;
	// the flow has acknowledged up to upstream 29 (next 30 -> downstream 28).
	h := history(SyncPoint{0, 0}, SyncPoint{12, 10})
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
	h := history(SyncPoint{100, 50})
	if _, ok := h.Translate(99, nil); ok {
		t.Fatal("translated an offset older than the history")
	}
	if _, ok := NewHistory(0).Translate(5, nil); ok {
		t.Fatal("translated with no history")
	}
}

func TestRewindDropsSupersededSyncs(t *testing.T) {
	// Copied 0..99 to 0..99, crashed, re-copied from 60: 60 -> 100.
	h := history(SyncPoint{0, 0}, SyncPoint{50, 50}, SyncPoint{90, 90}, SyncPoint{60, 100})
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
		h.Add(SyncPoint{i * 10, i * 10})
	}
	if h.Len() != 3 || h.Oldest() != 70 {
		t.Fatalf("len %d oldest %d", h.Len(), h.Oldest())
	}
}

// Never ahead: for every offset of a random copy with gaps and rewinds, the
// translation is at most the downstream position of the first record at or
// after g.
func FuzzTranslateNeverAhead(f *testing.F) {
	f.Add([]byte{1, 0, 3, 1, 0, 0, 2}, int64(5))
	f.Fuzz(func(t *testing.T, steps []byte, g int64) {
		// Build a copy: each step is either copy (0..1) or skip (2) an upstream record.
		var down []int64 // down[u] = downstream offset of upstream u, -1 skipped
		h := NewHistory(0)
		var d int64
		var last SyncPoint
		have := false
		for u, s := range steps {
			if s%3 == 2 {
				down = append(down, -1)
				continue
			}
			down = append(down, d)
			p := SyncPoint{int64(u), d}
			if !have || p.Downstream-p.Upstream != last.Downstream-last.Upstream {
				h.Add(p)
				last, have = p, true
			}
			d++
		}
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
		want := d
		for u := g; u < int64(len(down)); u++ {
			if down[u] >= 0 {
				want = down[u]
				break
			}
		}
		if got > want {
			t.Fatalf("g=%d translated to %d, ahead of %d", g, got, want)
		}
		if got != want {
			t.Fatalf("g=%d translated to %d, want exactly %d", g, got, want)
		}
	})
}

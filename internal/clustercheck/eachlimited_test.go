package clustercheck

import (
	"sync"
	"sync/atomic"
	"testing"
)

// eachLimited, which opens the check's connections, runs every index once
// and never more than limit at a time.
func TestEachLimited(t *testing.T) {
	for _, c := range []struct{ n, limit int }{{0, 3}, {1, 3}, {12, 3}, {12, 1}, {5, 8}} {
		var running, peak atomic.Int32
		var mu sync.Mutex
		seen := map[int]int{}
		release := make(chan struct{})
		go func() {
			// Let the workers pile up before any finishes, so overlap shows.
			for range c.n {
				release <- struct{}{}
			}
		}()
		eachLimited(c.n, c.limit, func(i int) {
			now := running.Add(1)
			for p := peak.Load(); now > p && !peak.CompareAndSwap(p, now); p = peak.Load() {
			}
			<-release
			mu.Lock()
			seen[i]++
			mu.Unlock()
			running.Add(-1)
		})
		if len(seen) != c.n {
			t.Errorf("n %d: ran %d indexes", c.n, len(seen))
		}
		for i, k := range seen {
			if k != 1 {
				t.Errorf("n %d: index %d ran %d times", c.n, i, k)
			}
		}
		if int(peak.Load()) > c.limit {
			t.Errorf("n %d limit %d: %d ran at once", c.n, c.limit, peak.Load())
		}
	}
}

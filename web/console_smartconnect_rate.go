package web

import (
	"sync"
	"time"

	"github.com/kmirror/kmirror/internal/history"
)

// rateSampler remembers, per task, the records counters seen on recent
// looks at the Smart Connect list (each render or refresh is one), and
// turns them into records/s with history.RecordsPerSec, as the dashboard
// and the task page do, so every page shows one rate for one task.
type rateSampler struct {
	mu      sync.Mutex
	now     func() time.Time
	samples map[string][]history.Reading
}

func newRateSampler(now func() time.Time) *rateSampler {
	return &rateSampler{now: now, samples: map[string][]history.Reading{}}
}

// observe records a task's records counter now and returns its rate and
// the time it was measured over.
func (r *rateSampler) observe(task string, records int64) (perSecond float64, over time.Duration, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	h := r.samples[task]
	if n := len(h); n > 0 && records < h[n-1].Records {
		h = nil // restarted: the reads before say nothing any more
	}
	h = append(h, history.Reading{At: now, Records: records})
	// Keep one read at or beyond the window's edge: the rate spans the
	// whole window when it can, and nothing older is needed.
	for len(h) > 2 && now.Sub(h[1].At) >= history.RateWindow {
		h = h[1:]
	}
	r.samples[task] = h
	return history.RecordsPerSec(h, history.RateWindow)
}

// forget drops the history of a task that no longer runs, so a paused or
// deleted task does not keep memory or a stale baseline.
func (r *rateSampler) forget(task string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.samples, task)
}

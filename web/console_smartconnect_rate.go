package web

import (
	"sync"
	"time"
)

// rateWindow is how far back records/s looks: long enough to smooth the
// copy loop's batches, short enough that a stopped flow shows it soon.
const rateWindow = 15 * time.Second

// rateSampler turns the engine's ever-growing records counters into
// records per second by remembering, per task, the counters seen on recent
// looks (each list render or refresh is one). It is honest about what it
// knows: no rate until two looks at least a second apart, and a counter
// that went down (the task restarted) starts the history again.
type rateSampler struct {
	mu      sync.Mutex
	now     func() time.Time
	samples map[string][]rateSample
}

type rateSample struct {
	at      time.Time
	records int64
}

func newRateSampler(now func() time.Time) *rateSampler {
	return &rateSampler{now: now, samples: map[string][]rateSample{}}
}

// observe records a task's records counter now and returns the rate over
// the oldest sample still in the window, and the time between the two.
func (r *rateSampler) observe(task string, records int64) (perSecond float64, over time.Duration, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	now := r.now()
	h := r.samples[task]
	if n := len(h); n > 0 && records < h[n-1].records {
		h = nil // restarted: the counter began again
	}
	h = append(h, rateSample{at: now, records: records})
	// Drop samples older than the window, keeping one at or beyond its
	// edge so the rate spans the whole window when it can.
	for len(h) > 2 && now.Sub(h[1].at) >= rateWindow {
		h = h[1:]
	}
	r.samples[task] = h
	first := h[0]
	over = now.Sub(first.at)
	if over < time.Second {
		return 0, over, false
	}
	return float64(records-first.records) / over.Seconds(), over, true
}

// forget drops the history of a task that no longer runs, so a paused or
// deleted task does not keep memory or a stale baseline.
func (r *rateSampler) forget(task string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.samples, task)
}

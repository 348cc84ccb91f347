// Package history remembers the last minutes of what the engine reports, so
// the console can plot a task's flows (throughput, lag) and list its recent
// errors. The engine only knows the present: counters since start and the
// last error.
//
// A Sampler reads every running task's status at a fixed interval (Run) and
// keeps, per task and flow, the points of the last Keep duration, plus the
// task's last errors as they changed. It lives in memory only: a restart of
// kmirror starts with empty charts, which is what an operator expects from
// "the last minutes".
//
// Invariants: points of a flow are in time order and none is older than
// Keep at the last sample; a throughput is only computed between two samples
// of the same counter that did not go backwards (a task restart resets it),
// otherwise it is absent (null in JSON), never negative. RecordsPerSec is
// the only computation of records/s, here and in the console.
package history

import (
	"context"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kmirror/kmirror/internal/engine"
)

// Source is what the sampler reads; *embeddedengine.Engine is one.
type Source = engine.Source

// Defaults.
const (
	DefaultEvery = 5 * time.Second
	DefaultKeep  = 15 * time.Minute
	// MaxErrors is how many recent errors are kept per task.
	MaxErrors = 20
)

// Point is one sample of a flow.
type Point struct {
	At time.Time
	// Records is the flow's counter (records copied since it started).
	Records int64
	// RecordsPerSec is the throughput since the previous point; nil when
	// unknown (first point, or the counter was reset).
	RecordsPerSec *float64
	LagRecords    int64
	LagSeconds    float64
}

// Error is an error a task reported, first seen at At.
type Error struct {
	At      time.Time `json:"at"`
	Flow    string    `json:"flow"`
	Message string    `json:"message"`
}

// FlowSeries is a flow's recent points, oldest first.
type FlowSeries struct {
	Flow   string
	Points []Point
}

// TaskSeries is what the sampler knows of a task.
type TaskSeries struct {
	Task  string
	Every time.Duration
	Flows []FlowSeries // ordered by flow name
	// Errors are the recent errors, newest first.
	Errors []Error
}

// Sampler samples a Source; see the package doc. Safe for concurrent use.
type Sampler struct {
	src   Source
	every time.Duration
	keep  time.Duration

	mu    sync.RWMutex
	tasks map[string]*taskHistory
}

type taskHistory struct {
	flows  map[string][]Point
	errors []Error           // newest last
	seen   map[string]string // flow -> last error recorded, to record changes only
}

// New returns a sampler of src every every, keeping keep; zero values take
// the defaults.
func New(src Source, every, keep time.Duration) *Sampler {
	if every <= 0 {
		every = DefaultEvery
	}
	if keep <= 0 {
		keep = DefaultKeep
	}
	return &Sampler{src: src, every: every, keep: keep, tasks: map[string]*taskHistory{}}
}

// Run samples until ctx is done.
func (s *Sampler) Run(ctx context.Context) error {
	t := time.NewTicker(s.every)
	defer t.Stop()
	s.Sample(time.Now())
	for {
		select {
		case <-ctx.Done():
			return nil
		case now := <-t.C:
			s.Sample(now)
		}
	}
}

// Sample takes one sample of every running task at now, and forgets what
// is older than Keep. Run calls it; tests call it with their own clock.
func (s *Sampler) Sample(now time.Time) {
	// Read the engine before taking our lock: Status takes the engine's.
	type snap struct {
		name string
		st   engine.TaskStatus
	}
	var snaps []snap
	for _, name := range s.src.Names() {
		if st, ok := s.src.Status(name); ok {
			snaps = append(snaps, snap{name, st})
		}
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	for _, sn := range snaps {
		th := s.tasks[sn.name]
		if th == nil {
			th = &taskHistory{flows: map[string][]Point{}, seen: map[string]string{}}
			s.tasks[sn.name] = th
		}
		if sn.st.Reason != "" {
			th.noteError(now, "", sn.st.Reason)
		}
		for _, f := range sn.st.Flows {
			p := Point{At: now, Records: f.Records, LagRecords: f.LagRecords, LagSeconds: f.LagSeconds}
			pts := th.flows[f.Flow]
			if n := len(pts); n > 0 {
				// The chart's point: the rate since the previous sample.
				prev := pts[n-1]
				if r, _, ok := RecordsPerSec([]Reading{{prev.At, prev.Records}, {now, f.Records}}, s.every); ok {
					p.RecordsPerSec = &r
				}
			}
			th.flows[f.Flow] = append(pts, p)
			msg := f.LastError
			if f.Reason != "" {
				msg = f.Reason
			}
			th.noteError(now, f.Flow, msg)
		}
	}
	cutoff := now.Add(-s.keep)
	for name, th := range s.tasks {
		for flow, pts := range th.flows {
			i := 0
			for i < len(pts) && pts[i].At.Before(cutoff) {
				i++
			}
			if i == len(pts) {
				delete(th.flows, flow)
				continue
			}
			th.flows[flow] = pts[i:] // append reallocates once full, dropping the head
		}
		j := 0
		for j < len(th.errors) && th.errors[j].At.Before(cutoff) {
			j++
		}
		th.errors = th.errors[j:]
		if len(th.flows) == 0 && len(th.errors) == 0 {
			delete(s.tasks, name)
		}
	}
}

// noteError records msg when it differs from the last one of the flow.
func (th *taskHistory) noteError(now time.Time, flow, msg string) {
	if msg == "" || th.seen[flow] == msg {
		return
	}
	th.seen[flow] = msg
	th.errors = append(th.errors, Error{At: now, Flow: flow, Message: msg})
	if n := len(th.errors); n > MaxErrors {
		th.errors = slices.Clone(th.errors[n-MaxErrors:])
	}
}

// Series returns a copy of what is known of task; empty when nothing.
func (s *Sampler) Series(task string) TaskSeries {
	s.mu.RLock()
	defer s.mu.RUnlock()
	out := TaskSeries{Task: task, Every: s.every, Flows: []FlowSeries{}, Errors: []Error{}}
	th := s.tasks[task]
	if th == nil {
		return out
	}
	for flow, pts := range th.flows {
		out.Flows = append(out.Flows, FlowSeries{Flow: flow, Points: slices.Clone(pts)})
	}
	slices.SortFunc(out.Flows, func(a, b FlowSeries) int { return strings.Compare(a.Flow, b.Flow) })
	for i := len(th.errors) - 1; i >= 0; i-- {
		out.Errors = append(out.Errors, th.errors[i])
	}
	return out
}

// Forget drops a task's history (it was deleted).
func (s *Sampler) Forget(task string) {
	s.mu.Lock()
	delete(s.tasks, task)
	s.mu.Unlock()
}

// Columns is a task's series as a chart library wants them: per flow, one
// array per measure, aligned on the time array (uPlot's data layout). It is
// the JSON the task page polls.
type Columns struct {
	Task         string        `json:"task"`
	EverySeconds float64       `json:"every_seconds"`
	Flows        []FlowColumns `json:"flows"`
}

// FlowColumns is one flow's columns; T is in Unix seconds.
type FlowColumns struct {
	Flow          string     `json:"flow"`
	T             []float64  `json:"t"`
	RecordsPerSec []*float64 `json:"records_per_sec"`
	LagRecords    []int64    `json:"lag_records"`
	LagSeconds    []float64  `json:"lag_seconds"`
}

// Columns lays the series out for a chart.
func (ts TaskSeries) Columns() Columns {
	out := Columns{Task: ts.Task, EverySeconds: ts.Every.Seconds(), Flows: make([]FlowColumns, 0, len(ts.Flows))}
	for _, f := range ts.Flows {
		n := len(f.Points)
		fc := FlowColumns{Flow: f.Flow, T: make([]float64, n), RecordsPerSec: make([]*float64, n),
			LagRecords: make([]int64, n), LagSeconds: make([]float64, n)}
		for i, p := range f.Points {
			fc.T[i] = float64(p.At.UnixMilli()) / 1000
			fc.RecordsPerSec[i] = p.RecordsPerSec
			fc.LagRecords[i] = p.LagRecords
			fc.LagSeconds[i] = p.LagSeconds
		}
		out.Flows = append(out.Flows, fc)
	}
	return out
}

// Rate is the flow's current throughput in records/s over RateWindow and
// the time it was measured over, when known.
func (f FlowSeries) Rate() (perSecond float64, over time.Duration, known bool) {
	return RecordsPerSec(readings(f.Points), RateWindow)
}

// Rate is the task's current throughput over its flows and the longest
// time one was measured over, when known: every page that shows a task's
// records/s shows this one.
func (ts TaskSeries) Rate() (perSecond float64, over time.Duration, known bool) {
	for _, f := range ts.Flows {
		if r, o, ok := f.Rate(); ok {
			perSecond, over, known = perSecond+r, max(over, o), true
		}
	}
	return perSecond, over, known
}

// Flow returns the series of one flow.
func (ts TaskSeries) Flow(name string) (FlowSeries, bool) {
	for _, f := range ts.Flows {
		if f.Flow == name {
			return f, true
		}
	}
	return FlowSeries{}, false
}

package history_test

import (
	"sync"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/engine"
	"github.com/kmirror/kmirror/internal/history"
	"github.com/kmirror/kmirror/internal/task"
)

// fakeSource reports what the test sets.
type fakeSource struct {
	mu    sync.Mutex
	tasks map[string]engine.TaskStatus
}

func (f *fakeSource) set(name string, st engine.TaskStatus) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.tasks == nil {
		f.tasks = map[string]engine.TaskStatus{}
	}
	f.tasks[name] = st
}

func (f *fakeSource) stop(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	delete(f.tasks, name)
}

func (f *fakeSource) Names() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for n := range f.tasks {
		out = append(out, n)
	}
	return out
}

func (f *fakeSource) Status(name string) (engine.TaskStatus, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	st, ok := f.tasks[name]
	return st, ok
}

func flow(name string, records, lag int64, lastErr string) engine.FlowStatus {
	return engine.FlowStatus{Flow: name, State: task.StateRunning, Records: records, LagRecords: lag, LastError: lastErr}
}

func TestSamplerRatesLagAndRetention(t *testing.T) {
	src := &fakeSource{}
	s := history.New(src, 5*time.Second, time.Minute)
	t0 := time.Unix(1_700_000_000, 0)
	at := func(i int) time.Time { return t0.Add(time.Duration(i) * 5 * time.Second) }

	src.set("orders", engine.TaskStatus{State: task.StateRunning, Flows: []engine.FlowStatus{flow("A->B", 0, 10, "")}})
	s.Sample(at(0))
	src.set("orders", engine.TaskStatus{State: task.StateRunning, Flows: []engine.FlowStatus{flow("A->B", 500, 4, "")}})
	s.Sample(at(1))
	// A restart resets the counter: no rate, certainly not a negative one.
	src.set("orders", engine.TaskStatus{State: task.StateRunning, Flows: []engine.FlowStatus{flow("A->B", 20, 0, "")}})
	s.Sample(at(2))

	ser := s.Series("orders")
	if len(ser.Flows) != 1 || ser.Flows[0].Flow != "A->B" {
		t.Fatalf("flows %+v", ser.Flows)
	}
	pts := ser.Flows[0].Points
	if len(pts) != 3 {
		t.Fatalf("%d points, want 3", len(pts))
	}
	if pts[0].RecordsPerSec != nil {
		t.Errorf("first point has a rate %v", *pts[0].RecordsPerSec)
	}
	if pts[1].RecordsPerSec == nil || *pts[1].RecordsPerSec != 100 {
		t.Errorf("rate %v, want 100/s", pts[1].RecordsPerSec)
	}
	if pts[2].RecordsPerSec != nil {
		t.Errorf("rate after a counter reset: %v, want none", *pts[2].RecordsPerSec)
	}
	if pts[1].LagRecords != 4 {
		t.Errorf("lag %d", pts[1].LagRecords)
	}

	// After Keep, old points go; a stopped task is forgotten once empty.
	src.stop("orders")
	s.Sample(at(14)) // 70s after t0: the first two points are older than a minute
	if got := len(s.Series("orders").Flows[0].Points); got != 1 {
		t.Errorf("%d points after a minute, want 1", got)
	}
	s.Sample(at(30))
	if got := s.Series("orders"); len(got.Flows) != 0 || len(got.Errors) != 0 {
		t.Errorf("stopped task still has history: %+v", got)
	}
}

func TestSamplerRecordsErrorsAsTheyChange(t *testing.T) {
	src := &fakeSource{}
	s := history.New(src, time.Second, time.Hour)
	t0 := time.Unix(1_700_000_000, 0)
	for i, msg := range []string{"", "broker down", "broker down", "record too large", ""} {
		src.set("t", engine.TaskStatus{State: task.StateRunning, Flows: []engine.FlowStatus{flow("A->B", int64(i), 0, msg)}})
		s.Sample(t0.Add(time.Duration(i) * time.Second))
	}
	errs := s.Series("t").Errors
	if len(errs) != 2 || errs[0].Message != "record too large" || errs[1].Message != "broker down" || errs[0].Flow != "A->B" {
		t.Fatalf("errors %+v, want the two distinct ones, newest first", errs)
	}
	for i := 0; i < history.MaxErrors+5; i++ {
		src.set("t", engine.TaskStatus{State: task.StateFailed, Reason: "r" + string(rune('a'+i))})
		s.Sample(t0.Add(time.Duration(10+i) * time.Second))
	}
	if n := len(s.Series("t").Errors); n != history.MaxErrors {
		t.Errorf("%d errors kept, want %d", n, history.MaxErrors)
	}
}

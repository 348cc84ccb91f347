package web

import (
	"math"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/engine"
	"github.com/kmirror/kmirror/internal/history"
	"github.com/kmirror/kmirror/internal/task"
)

func TestRateSampler(t *testing.T) {
	now := time.Unix(1000, 0)
	r := newRateSampler(func() time.Time { return now })
	if _, _, ok := r.observe("t", 100); ok {
		t.Fatal("a rate from one look")
	}
	now = now.Add(2 * time.Second)
	if rate, over, ok := r.observe("t", 300); !ok || rate != 100 || over != 2*time.Second {
		t.Fatalf("rate %v over %v ok %v, want 100/s over 2s", rate, over, ok)
	}
	// The window slides: 20 s later only the recent looks count.
	for range 10 {
		now = now.Add(2 * time.Second)
		r.observe("t", 300) // stopped copying
	}
	if rate, _, _ := r.observe("t", 300); rate != 0 {
		t.Errorf("rate %v after the flow stopped, want 0", rate)
	}
	if n := len(r.samples["t"]); n > 10 {
		t.Errorf("%d looks kept, want only the window's", n)
	}
	// A counter that went down means a restart: start over.
	now = now.Add(2 * time.Second)
	if _, _, ok := r.observe("t", 5); ok {
		t.Error("a rate across a restart")
	}
	r.forget("t")
	if len(r.samples) != 0 {
		t.Error("forget kept samples")
	}
}

// oneTask is a history.Source of one task whose flows' counters the test sets.
type oneTask struct{ flows []engine.FlowStatus }

func (o *oneTask) Names() []string { return []string{"t"} }
func (o *oneTask) Status(string) (engine.TaskStatus, bool) {
	return engine.TaskStatus{Name: "t", State: task.StateRunning, Flows: o.flows}, true
}

// The Smart Connect list and the task page (history) show the same
// records/s when they read the same counters at the same times.
func TestSmartConnectRateAgreesWithHistory(t *testing.T) {
	t0 := time.Unix(1_700_000_000, 0)
	src := &oneTask{}
	hist := history.New(src, 5*time.Second, 15*time.Minute)
	now := t0
	list := newRateSampler(func() time.Time { return now })
	// Two flows, read at uneven times, copying at changing speeds, then
	// the whole task restarting (its counters begin again).
	steps := []struct {
		after  time.Duration
		ab, ba int64
	}{
		{0, 0, 0},
		{500 * time.Millisecond, 10, 5},
		{5 * time.Second, 600, 100},
		{5 * time.Second, 1600, 100},
		{3 * time.Second, 1700, 400},
		{7 * time.Second, 5000, 400},
		{5 * time.Second, 5000, 400},
		{20 * time.Second, 9000, 900},
		{5 * time.Second, 30, 10},
		{2 * time.Second, 230, 60},
		{5 * time.Second, 730, 60},
	}
	for i, s := range steps {
		now = now.Add(s.after)
		src.flows = []engine.FlowStatus{
			{Flow: "A->B", State: task.StateRunning, Records: s.ab},
			{Flow: "B->A", State: task.StateRunning, Records: s.ba},
		}
		hist.Sample(now)
		want, wantOK := hist.Series("t").Rate()
		got, _, ok := list.observe("t", s.ab+s.ba)
		if ok != wantOK || math.Abs(got-want) > 1e-9 {
			t.Errorf("step %d: Smart Connect list %v/s (known %v), task page %v/s (known %v)", i, got, ok, want, wantOK)
		}
	}
}

package web

import (
	"testing"
	"time"
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

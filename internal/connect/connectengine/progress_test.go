package connectengine

import (
	"log/slog"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/connect"
	"github.com/kmirror/kmirror/internal/connect/connectplan"
)

// The settled-tail look runs once a partition stops moving, once per
// position: a transactional partition at rest is not fetched every sample.
func TestSettledEndLooksOncePerPosition(t *testing.T) {
	p := &progress{tails: map[partitionKey]tail{}}
	key := partitionKey{"t", 0}
	looks := 0
	look := func(end int64, ok bool) func() (int64, bool) {
		return func() (int64, bool) { looks++; return end, ok }
	}
	for i, c := range []struct {
		next, end  int64
		answer     int64
		answerOK   bool
		want       int64
		wantOK     bool
		wantLooked int
	}{
		{next: 10, end: 11, answer: 11, answerOK: true, want: notLooked, wantOK: false, wantLooked: 0}, // first seen: moving?
		{next: 10, end: 11, answer: 11, answerOK: true, want: 11, wantOK: true, wantLooked: 1},         // at rest: looked
		{next: 10, end: 11, answer: 99, answerOK: true, want: 11, wantOK: true, wantLooked: 1},         // same position: kept
		{next: 10, end: 13, answer: unsettled, want: unsettled, wantLooked: 2},                         // new records: looked again
		{next: 10, end: 13, answer: 13, answerOK: true, want: unsettled, wantLooked: 2},                // a record still to copy: kept
		{next: 12, end: 13, answer: 13, answerOK: true, want: notLooked, wantLooked: 2},                // moved: not looked
	} {
		got, ok := p.settledEnd(key, c.next, c.end, look(c.answer, c.answerOK))
		if got != c.want || ok != c.wantOK || looks != c.wantLooked {
			t.Fatalf("step %d: settled %d (%v) after %d looks, want %d (%v) after %d", i, got, ok, looks, c.want, c.wantOK, c.wantLooked)
		}
	}
}

// A first URL that accepts connections and never answers a connector's
// offsets does not blind the lag sampler: the request times out well
// inside the sample's budget, the next URL answers in the same sample,
// and later samples start at the URL that answered.
func TestHungFirstURLDoesNotBlindTheSampler(t *testing.T) {
	old := sampleRequestTimeout
	sampleRequestTimeout = 2 * time.Second
	t.Cleanup(func() { sampleRequestTimeout = old })
	live := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"offsets":[{"partition":{"cluster":"A","topic":"orders","partition":0},"offset":{"offset":41}}]}`))
	}))
	t.Cleanup(live.Close)
	release := make(chan struct{})
	var hung atomic.Int32
	hangs := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		hung.Add(1)
		<-release
	}))
	t.Cleanup(hangs.Close)
	t.Cleanup(func() { close(release) })
	nowhere := cluster.Settings{Name: "A", BootstrapServers: []string{"127.0.0.1:1"}} // lag unknown; positions still read
	conns := []connectplan.Connector{{Name: "c", Flow: "A->B",
		Copy: &connectplan.Copy{Source: nowhere, TargetTopic: func(s string) string { return s }}}}
	dep := &deployment{connectors: conns, progress: newProgress(slog.New(slog.DiscardHandler))}
	cfg := connect.Config{URLs: []string{hangs.URL, live.URL}}
	l := newLagSampler(func() connect.Config { return cfg }, func() []copyOf { return []copyOf{{dep, conns[0]}} },
		100*time.Millisecond, slog.New(slog.DiscardHandler))
	t.Cleanup(l.stop)
	p := dep.progress
	deadline := time.Now().Add(sampleBudget)
	for {
		if fp, ok := p.of("A->B"); ok && len(fp.partitions) == 1 && fp.partitions[0].NextOffset == 42 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no sample within a sample's budget (%s) with the first URL hung", sampleBudget)
		}
		time.Sleep(20 * time.Millisecond)
	}
	time.Sleep(time.Second) // more samples
	if n := hung.Load(); n != 1 {
		t.Errorf("the hung URL got %d requests; want 1: later samples start at the URL that answered", n)
	}
	if old*2 >= sampleBudget {
		t.Errorf("a sample's request may take %s of its %s: the next URL would not be tried", old, sampleBudget)
	}
}

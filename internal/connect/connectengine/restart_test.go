package connectengine

import (
	"errors"
	"strings"
	"testing"
	"time"
)

// A restart that does not hold waits longer before the next (10 s,
// doubling, at most 5 minutes); a connector healthy for restartHealthy
// after its last restart starts again from the first wait; every restart
// is counted on its flow.
func TestAutomaticRestartsBackOff(t *testing.T) {
	for attempt, want := range map[int]time.Duration{1: 10 * time.Second, 2: 20 * time.Second, 3: 40 * time.Second, 6: 5 * time.Minute, 40: 5 * time.Minute} {
		if got := restartBackoff(attempt); got != want {
			t.Errorf("wait after restart %d: %s, want %s", attempt, got, want)
		}
	}
	r := newRestarts()
	t0 := time.Unix(1000, 0)
	restart := func(at time.Time) (int, bool) {
		n, ok := r.due("c", at)
		if ok {
			r.restarted("c", "A->B", at)
		}
		return n, ok
	}
	if n, ok := restart(t0); !ok || n != 1 {
		t.Fatalf("first failure: restart %d %v, want the first", n, ok)
	}
	if _, ok := restart(t0.Add(9 * time.Second)); ok {
		t.Fatal("restarted again within the first wait")
	}
	// A request Connect did not take: tried again at the next poll, not
	// counted, the wait not grown.
	r.failed("c", errors.New("409 rebalancing"))
	if n, ok := r.due("c", t0.Add(10*time.Second)); !ok || n != 2 {
		t.Fatalf("after the first wait: restart %d %v, want the second", n, ok)
	}
	if got := r.note([]string{"c"}, t0.Add(10*time.Second)); !strings.Contains(got, "1 time(s)") || !strings.Contains(got, "409 rebalancing") {
		t.Fatalf("note %q", got)
	}
	if n, ok := restart(t0.Add(11 * time.Second)); !ok || n != 2 {
		t.Fatalf("after a refused request: restart %d %v, want the second", n, ok)
	}
	if _, ok := restart(t0.Add(30 * time.Second)); ok {
		t.Fatal("restarted again within the doubled wait")
	}
	r.healthy("c", t0.Add(time.Minute)) // too soon to start over
	if n, ok := restart(t0.Add(31*time.Second + time.Minute)); !ok || n != 3 {
		t.Fatalf("after the doubled wait: restart %d %v, want the third", n, ok)
	}
	r.healthy("c", t0.Add(time.Hour))
	if n, ok := restart(t0.Add(time.Hour + time.Second)); !ok || n != 1 {
		t.Fatalf("after a healthy stretch: restart %d %v, want the first again", n, ok)
	}
	if got := r.of("A->B"); got != 4 {
		t.Fatalf("flow's restarts %d, want 4", got)
	}
	if got := r.note([]string{"other"}, t0); got != "" {
		t.Fatalf("note for a connector never restarted: %q", got)
	}
}

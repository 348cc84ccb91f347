package connectengine

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/connect"
	"github.com/kmirror/kmirror/internal/connect/connectplan"
	"github.com/kmirror/kmirror/internal/connect/connecttest"
	"github.com/kmirror/kmirror/internal/task"
)

// A Connect cluster that does not answer when a task starts (kmirror
// started while it was away) leaves the task DEGRADED with the reason, not
// failed for good: it is deployed once Connect answers.
func TestStartWaitsForConnect(t *testing.T) {
	var deployed atomic.Int32
	live := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/config"):
			deployed.Add(1)
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"name":"c","config":{},"tasks":[]}`))
		case r.URL.Path == "/connectors":
			_, _ = w.Write([]byte(`{}`))
		case strings.HasSuffix(r.URL.Path, "/offsets"):
			_, _ = w.Write([]byte(`{"offsets":[]}`))
		default: // resume, restart
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	defer live.Close()
	dead := connecttest.DeadURL(t)
	var mu sync.Mutex
	url := dead
	e := New(Deps{
		Cluster: func(context.Context, string) (connectplan.Cluster, error) {
			mu.Lock()
			defer mu.Unlock()
			return connectplan.Cluster{Name: "c1", Client: connect.Config{URLs: []string{url}, DialTimeout: time.Second}}, nil
		},
		Plan: func(task.Task, cluster.Settings, cluster.Settings, connectplan.Cluster) ([]connectplan.Connector, error) {
			return []connectplan.Connector{{Name: "c", Flow: "A->B", Config: map[string]string{"connector.class": "x"}}}, nil
		},
		Names:        func(task.Task) []string { return []string{"c"} },
		PollInterval: 100 * time.Millisecond,
	})
	defer e.Close()
	tk := task.Task{Name: "waits", Engine: task.ConnectEngine("c1")}
	if err := e.Start(tk, cluster.Settings{}, cluster.Settings{}); err != nil {
		t.Fatalf("Start with Connect away: %v, want the task kept waiting", err)
	}
	st, ok := e.Status(tk.Name)
	if !ok || st.State != task.StateDegraded || !strings.Contains(st.Reason, "not deployed on Kafka Connect yet") {
		t.Fatalf("status %+v (%v), want DEGRADED saying it is not deployed yet", st, ok)
	}
	if names := e.Names(); len(names) != 1 || names[0] != tk.Name {
		t.Fatalf("names %v", names)
	}
	mu.Lock()
	url = live.URL
	mu.Unlock()
	deadline := time.Now().Add(30 * time.Second)
	for deployed.Load() == 0 || func() bool { st, _ := e.Status(tk.Name); return strings.Contains(st.Reason, "not deployed") }() {
		if time.Now().After(deadline) {
			st, _ := e.Status(tk.Name)
			t.Fatalf("30 s after Connect came back: %d deploys, status %+v", deployed.Load(), st)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// Stopping a task that waits ends the waiting.
	e.Stop(tk.Name)
	if _, ok := e.Status(tk.Name); ok {
		t.Fatal("a stopped task still runs here")
	}
}

// A refusal is not waited out: Start fails at once.
func TestStartFailsOnRefusal(t *testing.T) {
	refusing := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		_, _ = w.Write([]byte(`{"error_code":400,"message":"connectplan.Connector configuration is invalid"}`))
	}))
	defer refusing.Close()
	e := New(Deps{
		Cluster: func(context.Context, string) (connectplan.Cluster, error) {
			return connectplan.Cluster{Name: "c1", Client: connect.Config{URLs: []string{refusing.URL}}}, nil
		},
		Plan: func(task.Task, cluster.Settings, cluster.Settings, connectplan.Cluster) ([]connectplan.Connector, error) {
			return []connectplan.Connector{{Name: "c", Flow: "A->B", Config: map[string]string{}}}, nil
		},
		Names: func(task.Task) []string { return []string{"c"} },
	})
	defer e.Close()
	tk := task.Task{Name: "refused", Engine: task.ConnectEngine("c1")}
	if err := e.Start(tk, cluster.Settings{}, cluster.Settings{}); err == nil || !strings.Contains(err.Error(), "invalid") {
		t.Fatalf("Start: %v, want Connect's refusal", err)
	}
	if _, ok := e.Status(tk.Name); ok {
		t.Fatal("a refused task is watched as running")
	}
}

// A pause Connect does not take (it is away) is tried again until it does:
// the connectors would go on copying otherwise. Meanwhile the status says
// so; a start in between ends the retries.
func TestPauseRetriedUntilConnectTakesIt(t *testing.T) {
	var away atomic.Bool
	var pauses atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if away.Load() {
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`{"error_code":503,"message":"away"}`))
			return
		}
		switch {
		case r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/config"):
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"name":"c","config":{},"tasks":[]}`))
		case r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/pause"):
			pauses.Add(1)
			w.WriteHeader(http.StatusAccepted)
		case r.URL.Path == "/connectors":
			_, _ = w.Write([]byte(`{}`))
		case strings.HasSuffix(r.URL.Path, "/offsets"):
			_, _ = w.Write([]byte(`{"offsets":[]}`))
		default: // resume, restart
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	defer srv.Close()
	e := New(Deps{
		Cluster: func(context.Context, string) (connectplan.Cluster, error) {
			return connectplan.Cluster{Name: "c1", Client: connect.Config{URLs: []string{srv.URL}, DialTimeout: time.Second}}, nil
		},
		Plan: func(task.Task, cluster.Settings, cluster.Settings, connectplan.Cluster) ([]connectplan.Connector, error) {
			return []connectplan.Connector{{Name: "c", Flow: "A->B", Config: map[string]string{"connector.class": "x"}}}, nil
		},
		Names:        func(task.Task) []string { return []string{"c"} },
		PollInterval: 100 * time.Millisecond,
	})
	defer e.Close()
	tk := task.Task{Name: "pauses", Engine: task.ConnectEngine("c1")}
	pausedAfterAway := func() {
		t.Helper()
		if err := e.Start(tk, cluster.Settings{}, cluster.Settings{}); err != nil {
			t.Fatal(err)
		}
		away.Store(true)
		e.Stop(tk.Name)
		st, ok := e.Status(tk.Name)
		if !ok || st.State != task.StatePaused || !strings.Contains(st.Reason, "has not paused the connectors yet") {
			t.Fatalf("status %+v (%v), want PAUSED saying Connect has not taken the pause", st, ok)
		}
	}

	pausedAfterAway()
	away.Store(false)
	deadline := time.Now().Add(30 * time.Second)
	for pauses.Load() == 0 || func() bool { _, ok := e.Status(tk.Name); return ok }() {
		if time.Now().After(deadline) {
			st, ok := e.Status(tk.Name)
			t.Fatalf("30 s after Connect came back: %d pauses, status %+v (%v)", pauses.Load(), st, ok)
		}
		time.Sleep(50 * time.Millisecond)
	}

	// Started again while the pause waits: the retries end, no pause lands
	// on the running task.
	pausedAfterAway()
	away.Store(false)
	before := pauses.Load()
	if err := e.Start(tk, cluster.Settings{}, cluster.Settings{}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // five poll intervals
	if n := pauses.Load(); n != before {
		t.Fatalf("%d pauses reached Connect after the task was started again", n-before)
	}
	if st, ok := e.Status(tk.Name); !ok || st.State == task.StatePaused {
		t.Fatalf("status %+v (%v), want the task running here", st, ok)
	}
}

package connectengine

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/connect"
	"github.com/kmirror/kmirror/internal/connect/connectplan"
	"github.com/kmirror/kmirror/internal/connect/connecttest"
	"github.com/kmirror/kmirror/internal/task"
)

// fakeConnect answers what deploying a connector asks and lists it with
// its connector and tasks on the given workers (worker ids, host:port).
func fakeConnect(t *testing.T, name string, workers ...string) *httptest.Server {
	t.Helper()
	v := connect.ConnectorView{Info: connect.ConnectorInfo{Name: name, Type: "source"}, Status: connect.ConnectorStatus{
		Name: name, Type: "source", Connector: connect.WorkerState{State: connect.StateRunning, WorkerID: workers[0]}}}
	for i, w := range workers {
		v.Status.Tasks = append(v.Status.Tasks, connect.TaskState{ID: i, State: connect.StateRunning, WorkerID: w})
	}
	listing, err := json.Marshal(map[string]connect.ConnectorView{name: v})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		switch {
		case r.Method == http.MethodPut && strings.HasSuffix(r.URL.Path, "/config"):
			w.WriteHeader(http.StatusCreated)
			_, _ = w.Write([]byte(`{"name":"` + name + `","config":{},"tasks":[]}`))
		case r.URL.Path == "/connectors":
			_, _ = w.Write(listing)
		case r.URL.Path == "/":
			_, _ = w.Write([]byte(`{"version":"4.3.1"}`))
		default: // resume, restart
			w.WriteHeader(http.StatusAccepted)
		}
	}))
	t.Cleanup(srv.Close)
	return srv
}

func engineOn(t *testing.T, cfg connect.Config) (*Engine, task.Task) {
	t.Helper()
	e := New(Deps{
		Cluster: func(context.Context, string) (connectplan.Cluster, error) {
			return connectplan.Cluster{Name: "c1", Client: cfg}, nil
		},
		Plan: func(task.Task, cluster.Settings, cluster.Settings, connectplan.Cluster) ([]connectplan.Connector, error) {
			return []connectplan.Connector{{Name: "c", Flow: "A->B", Config: map[string]string{"connector.class": "x"}}}, nil
		},
		Names:        func(task.Task) []string { return []string{"c"} },
		PollInterval: 100 * time.Millisecond,
	})
	t.Cleanup(e.Close)
	tk := task.Task{Name: "t1", Engine: task.ConnectEngine("c1")}
	if err := e.Start(tk, cluster.Settings{}, cluster.Settings{}); err != nil {
		t.Fatal(err)
	}
	return e, tk
}

// waitFor waits until the task's status is want with reasonPart in its
// reason, and returns the reason.
func waitFor(t *testing.T, e *Engine, name string, want task.State, reasonPart string, limit time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		st, ok := e.Status(name)
		if ok && st.State == want && strings.Contains(st.Reason, reasonPart) {
			return st.Reason
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s: %s (%s), want %s with %q within %s", name, st.State, st.Reason, want, reasonPart, limit)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A Connect cluster reached through one URL (a Kubernetes Service, an
// ingress) whose workers advertise pod names kmirror cannot resolve: its
// tasks are RUNNING, poll after poll, not DEGRADED for workers that "do not
// answer" at addresses kmirror was never given.
func TestStatusIgnoresUnreachableAdvertisedAddresses(t *testing.T) {
	srv := fakeConnect(t, "c", "connect-0.connect.svc:8083", "connect-1.connect.svc:8083", "10.244.1.7:8083")
	e, tk := engineOn(t, connect.Config{URLs: []string{srv.URL}})
	waitFor(t, e, tk.Name, task.StateRunning, "", time.Minute)
	for range 10 { // a probe at those names would fail within a poll or two
		time.Sleep(100 * time.Millisecond)
		if st, _ := e.Status(tk.Name); st.State != task.StateRunning {
			t.Fatalf("status %s (%s), want RUNNING", st.State, st.Reason)
		}
	}
}

// A worker whose advertised address is a registered URL is asked whether
// it answers: dead there, it shows as DEGRADED naming it at the next poll
// (the registered URL is one kmirror is expected to reach).
func TestRegisteredWorkerThatDoesNotAnswerIsDegraded(t *testing.T) {
	dead := connecttest.DeadURL(t)
	deadID := strings.TrimPrefix(dead, "http://")
	live := fakeConnect(t, "c", "connect-0.connect.svc:8083", deadID)
	e, tk := engineOn(t, connect.Config{URLs: []string{live.URL, dead}, DialTimeout: time.Second})
	reason := waitFor(t, e, tk.Name, task.StateDegraded, "worker "+deadID+" does not answer", time.Minute)
	if !strings.Contains(reason, "c task 1 run there") {
		t.Errorf("reason %q does not say what runs there", reason)
	}
}

// A first URL that accepts connections and never answers the listing does
// not blind the poll: the request times out well within the poll's budget
// (the client's default timeout is the budget), the next URL answers in
// the same poll, and later polls start at the URL that answered (the poll
// keeps its client) instead of waiting on the hung one each time.
func TestHungFirstURLDoesNotBlindThePoll(t *testing.T) {
	old := pollRequestTimeout
	pollRequestTimeout = 2 * time.Second
	t.Cleanup(func() { pollRequestTimeout = old })
	live := fakeConnect(t, "c", "connect-0.connect.svc:8083")
	release := make(chan struct{})
	var hungListings atomic.Int32
	hung := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/connectors" {
			live.Config.Handler.ServeHTTP(w, r) // deploys go through: only the poll's listing hangs
			return
		}
		hungListings.Add(1)
		<-release
	}))
	t.Cleanup(hung.Close)
	t.Cleanup(func() { close(release) })
	began := time.Now()
	e, tk := engineOn(t, connect.Config{URLs: []string{hung.URL, live.URL}})
	waitFor(t, e, tk.Name, task.StateRunning, "", time.Minute)
	t.Logf("RUNNING %s after the start, the first URL hung", time.Since(began).Round(time.Millisecond))
	time.Sleep(time.Second) // ten more polls
	if st, _ := e.Status(tk.Name); st.State != task.StateRunning {
		t.Fatalf("status %s (%s), want RUNNING", st.State, st.Reason)
	}
	if n := hungListings.Load(); n != 1 {
		t.Errorf("the hung URL got %d listings; want 1: later polls start at the URL that answered", n)
	}
	if pollRequestTimeout*2 >= pollBudget || old*2 >= pollBudget {
		t.Errorf("a poll request may take %s of the poll's %s: the next URL would not be tried", old, pollBudget)
	}
}

// A Connect group member's metadata (ConnectProtocol v0 and the
// incremental protocol's v1/v2, which add an assignment after the same
// fields) gives the worker id Connect's statuses use.
func TestConnectMemberWorker(t *testing.T) {
	meta := func(version int16, u string, tail ...byte) []byte {
		b := binary.BigEndian.AppendUint16(nil, uint16(version))
		b = binary.BigEndian.AppendUint16(b, uint16(len(u)))
		b = append(b, u...)
		b = binary.BigEndian.AppendUint64(b, 42) // config offset
		return append(b, tail...)
	}
	for _, c := range []struct {
		meta []byte
		want string
		ok   bool
	}{
		{meta(0, "http://connect-0.connect.svc:8083/"), "connect-0.connect.svc:8083", true},
		{meta(2, "https://Connect-1.Connect.SVC:8443/", 0xff, 0xff, 0xff, 0xff), "connect-1.connect.svc:8443", true},
		{meta(1, "http://10.0.0.7/"), "10.0.0.7:80", true},
		{meta(1, ""), "", false},
		{[]byte{0, 1, 0}, "", false},
		{[]byte{0, 1, 0, 200, 'h'}, "", false},
	} {
		got, ok := connectMemberWorker(c.meta)
		if got != c.want || ok != c.ok {
			t.Errorf("%q: %q %v, want %q %v", c.meta, got, ok, c.want, c.ok)
		}
	}
	if u, _ := url.Parse("https://h"); hostPort(u) != "h:443" {
		t.Errorf("https default port: %s", hostPort(u))
	}
}

// A worker URL that redirects (a proxy or an ingress sending elsewhere)
// does not deploy anything: the PUT of a connector's config answered 307
// fails the start naming the Location, and the task is not watched as
// running.
func TestStartRefusesARedirect(t *testing.T) {
	var elsewhere atomic.Int32
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { elsewhere.Add(1) }))
	t.Cleanup(other.Close)
	redirecting := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, http.StatusTemporaryRedirect)
	}))
	t.Cleanup(redirecting.Close)
	e := New(Deps{
		Cluster: func(context.Context, string) (connectplan.Cluster, error) {
			return connectplan.Cluster{Name: "c1", Client: connect.Config{URLs: []string{redirecting.URL}}}, nil
		},
		Plan: func(task.Task, cluster.Settings, cluster.Settings, connectplan.Cluster) ([]connectplan.Connector, error) {
			return []connectplan.Connector{{Name: "c", Flow: "A->B", Config: map[string]string{"connector.class": "x"}}}, nil
		},
		Names: func(task.Task) []string { return []string{"c"} },
	})
	t.Cleanup(e.Close)
	tk := task.Task{Name: "t1", Engine: task.ConnectEngine("c1")}
	err := e.Start(tk, cluster.Settings{}, cluster.Settings{})
	if err == nil || !strings.Contains(err.Error(), "307") || !strings.Contains(err.Error(), "redirected to "+other.URL+"/connectors/c") {
		t.Fatalf("Start through a redirect: %v, want the 307 naming its Location", err)
	}
	if st, ok := e.Status(tk.Name); ok {
		t.Fatalf("a task whose deploy was redirected is watched: %+v", st)
	}
	if n := elsewhere.Load(); n != 0 {
		t.Errorf("the Location got %d requests", n)
	}
}

// Without a Kafka cluster to ask, or one that does not answer, the group
// tells nothing (the poll then relies on the registered URLs), and a
// failed connection is not tried again at every poll: the "cluster" below
// closes every connection it accepts and counts them.
func TestGroupWatchWithoutKafka(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	if _, known := newGroupWatch("c1", cluster.Settings{}, log).members([]string{"w:8083"}, time.Now()); known {
		t.Error("a group read without a Kafka cluster")
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	var dials atomic.Int64
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			dials.Add(1)
			c.Close()
		}
	}()
	g := newGroupWatch("c1", cluster.Settings{Name: "k", BootstrapServers: []string{l.Addr().String()}}, log)
	defer g.close()
	now := time.Now()
	if _, known := g.members([]string{"w:8083"}, now); known {
		t.Fatal("a group read from a Kafka cluster that does not answer")
	}
	tried := dials.Load()
	if tried == 0 {
		t.Fatal("the Kafka cluster was never tried")
	}
	if _, known := g.members([]string{"w:8083"}, now.Add(time.Second)); known {
		t.Error("a group read a second after the cluster failed")
	}
	// A connection accepted by now would have been counted: the watch is
	// synchronous, so anything it dialled was accepted before it returned.
	time.Sleep(50 * time.Millisecond)
	if n := dials.Load(); n != tried {
		t.Errorf("tried Kafka again a second after it failed: %d connections, then %d", tried, n)
	}
}

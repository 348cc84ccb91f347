package connectengine

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/connect"
	"github.com/kmirror/kmirror/internal/task"
)

func view(name, state string, tasks ...connect.TaskState) connect.ConnectorView {
	return connect.ConnectorView{Status: connect.ConnectorStatus{Name: name,
		Connector: connect.WorkerState{State: state, WorkerID: "w1:8083"}, Tasks: tasks}}
}

func ts(id int, state, worker, trace string) connect.TaskState {
	return connect.TaskState{ID: id, State: state, WorkerID: worker, Trace: trace}
}

func TestVerdict(t *testing.T) {
	names := []string{"src", "ckpt"}
	since := time.Date(2026, 1, 2, 6, 10, 0, 0, time.UTC)
	running := map[string]connect.ConnectorView{
		"src":  view("src", "RUNNING", ts(0, "RUNNING", "w1:8083", ""), ts(1, "RUNNING", "w2:8083", "")),
		"ckpt": view("ckpt", "RUNNING", ts(0, "RUNNING", "w2:8083", "")),
	}
	with := func(name string, v connect.ConnectorView) map[string]connect.ConnectorView {
		m := map[string]connect.ConnectorView{}
		for k, x := range running {
			m[k] = x
		}
		m[name] = v
		return m
	}
	for _, c := range []struct {
		name   string
		o      observed
		want   task.State
		reason string // a part of the reason
	}{
		{"all running", observed{views: running}, task.StateRunning, ""},
		{"no tasks yet is running", observed{views: with("ckpt", view("ckpt", "RUNNING"))}, task.StateRunning, ""},
		{"unreachable", observed{err: errors.New("connection refused")}, task.StateDegraded, "does not answer"},
		{"deleted behind our back", observed{views: map[string]connect.ConnectorView{"src": running["src"]}}, task.StateFailed, "connector ckpt is not on"},
		{"task failed", observed{views: with("src", view("src", "RUNNING", ts(0, "RUNNING", "w1:8083", ""),
			ts(1, "FAILED", "w2:8083", "org.apache.kafka.common.errors.TopicAuthorizationException: Not authorized\n\tat x.y(Z.java:1)")))},
			task.StateFailed, "src task 1 failed on worker w2:8083: org.apache.kafka.common.errors.TopicAuthorizationException: Not authorized ("},
		{"connector failed", observed{views: with("ckpt", connect.ConnectorView{Status: connect.ConnectorStatus{
			Connector: connect.WorkerState{State: "FAILED", WorkerID: "w1:8083", Trace: "boom"}}})}, task.StateFailed, "connector ckpt failed"},
		{"paused outside", observed{views: with("src", view("src", "PAUSED", ts(0, "PAUSED", "w1:8083", "")))}, task.StatePaused, "paused outside kmirror"},
		{"unassigned", observed{views: with("src", view("src", "RUNNING", ts(0, "UNASSIGNED", "w1:8083", "")))}, task.StateDegraded, "src task 0 is unassigned"},
		{"a copy task on a dead worker", observed{views: running, deadWorkers: map[string]lostWorker{"w2:8083": {since: since}}, at: since.Add(8 * time.Second)},
			task.StateDegraded, "worker w2:8083 does not answer (since 06:10:00 UTC, 8s): src task 1, ckpt task 0 run there; only the partitions of the other 1 copy tasks are copied until they move. Connect moves them"},
		{"every copy task on a dead worker", observed{views: running, deadWorkers: map[string]lostWorker{"w1:8083": {since: since}, "w2:8083": {since: since.Add(time.Second)}}, at: since.Add(3 * time.Second)},
			task.StateDegraded, "worker w1:8083 does not answer (since 06:10:00 UTC, 3s): connector src, src task 0, connector ckpt run there; worker w2:8083 does not answer (since 06:10:01 UTC, 2s): src task 1, ckpt task 0 run there; no record is copied until they move"},
		{"only checkpoints on a dead worker", observed{views: with("src", view("src", "RUNNING", ts(0, "RUNNING", "w1:8083", ""))), deadWorkers: map[string]lostWorker{"w2:8083": {since: since}}, at: since},
			task.StateDegraded, "ckpt task 0 run there; the records are still copied by the tasks on live workers"},
		{"restarting", observed{views: with("src", view("src", "RUNNING", ts(0, "RESTARTING", "w1:8083", "")))}, task.StateStarting, "restarting"},
		{"failed beats degraded", observed{views: with("src", view("src", "RUNNING", ts(0, "UNASSIGNED", "", ""), ts(1, "FAILED", "w2:8083", "x"))),
			deadWorkers: map[string]lostWorker{"w2:8083": {since: since}}}, task.StateFailed, "src task 1 failed"},
		{"a copy task on a worker that left the group", observed{views: running, deadWorkers: map[string]lostWorker{"w2:8083": {since: since, left: true}}, at: since.Add(12 * time.Second)},
			task.StateDegraded, "worker w2:8083 has left the Connect group (since 06:10:00 UTC, 12s): src task 1, ckpt task 0 run there; only the partitions of the other 1 copy tasks are copied"},
	} {
		t.Run(c.name, func(t *testing.T) {
			got, reason := verdict(names, "src", "c1", nil, nil, c.o, false)
			if got != c.want || !strings.Contains(reason, c.reason) {
				t.Errorf("verdict = %s (%q); want %s with %q", got, reason, c.want, c.reason)
			}
		})
	}
	// Just deployed: the worker that answered has not read the connector
	// from Connect's config topic yet (seen at every deploy on 2 workers).
	got, reason := verdict(names, "src", "c1", nil, nil, observed{views: map[string]connect.ConnectorView{"src": running["src"]}}, true)
	if got != task.StateStarting || !strings.Contains(reason, "connector ckpt is being deployed") {
		t.Errorf("just deployed, not listed yet: %s (%q), want STARTING", got, reason)
	}
}

func TestSummarize(t *testing.T) {
	if got := summarize("  \n"); !strings.Contains(got, "worker's log") {
		t.Errorf("empty trace: %q", got)
	}
	if got := summarize(strings.Repeat("x", 1000)); len(got) > traceSummaryLength+4 {
		t.Errorf("long trace kept %d bytes", len(got))
	}
}

// A connector whose configuration on Connect is not the one kmirror
// deployed makes its flow DRIFTED, naming the settings (never their
// values); anything worse still wins.
func TestDriftedConnectorNamesTheSettings(t *testing.T) {
	planned := map[string]map[string]string{"src": {"connector.class": "x", "tasks.max": "2", "source.cluster.sasl.jaas.config": "secret"}}
	shown := map[string]string{"name": "src", "connector.class": "x", "tasks.max": "4", "source.cluster.sasl.jaas.config": "secret", "extra": "1"}
	view := connect.ConnectorView{Info: connect.ConnectorInfo{Name: "src", Config: shown},
		Status: connect.ConnectorStatus{Name: "src", Connector: connect.WorkerState{State: connect.StateRunning, WorkerID: "w1"},
			Tasks: []connect.TaskState{{ID: 0, State: connect.StateRunning, WorkerID: "w1"}}}}
	got, reason := verdict([]string{"src"}, "src", "c1", planned, nil, observed{views: map[string]connect.ConnectorView{"src": view}}, false)
	if got != task.StateDrifted || !strings.Contains(reason, "(extra, tasks.max)") || strings.Contains(reason, "secret") {
		t.Fatalf("verdict %s (%s), want DRIFTED naming extra and tasks.max only", got, reason)
	}
	shown["tasks.max"], shown["extra"] = "2", ""
	delete(shown, "extra")
	if got, reason := verdict([]string{"src"}, "src", "c1", planned, nil, observed{views: map[string]connect.ConnectorView{"src": view}}, false); got != task.StateRunning {
		t.Fatalf("the same configuration (and Connect's name): %s (%s), want RUNNING", got, reason)
	}
	shown["tasks.max"] = "3"
	view.Status.Tasks[0].State = connect.StateFailed
	if got, _ := verdict([]string{"src"}, "src", "c1", planned, nil, observed{views: map[string]connect.ConnectorView{"src": view}}, false); got != task.StateFailed {
		t.Fatalf("drifted and failed: %s, want FAILED", got)
	}
}

// A connector kmirror holds (the forward copy while a way back runs) is as
// it should be when stopped; running (resumed outside kmirror) its flow is
// DRIFTED, saying why it must stop.
func TestHeldConnectorIsFineStoppedAndDriftedRunning(t *testing.T) {
	planned := map[string]map[string]string{"src": {"connector.class": "x"}}
	held := map[string]bool{"src": true}
	view := connect.ConnectorView{Info: connect.ConnectorInfo{Name: "src", Config: map[string]string{"connector.class": "x"}},
		Status: connect.ConnectorStatus{Name: "src", Connector: connect.WorkerState{State: connect.StateStopped, WorkerID: "w1"}, Tasks: []connect.TaskState{}}}
	o := observed{views: map[string]connect.ConnectorView{"src": view}}
	if got, reason := verdict([]string{"src"}, "src", "c1", planned, held, o, false); got != task.StateRunning {
		t.Fatalf("held and stopped: %s (%s), want RUNNING", got, reason)
	}
	if got, _ := verdict([]string{"src"}, "src", "c1", planned, nil, o, false); got != task.StatePaused {
		t.Fatalf("stopped and not held: %s, want PAUSED", got)
	}
	view.Status.Connector.State = connect.StateRunning
	o.views["src"] = view
	if got, reason := verdict([]string{"src"}, "src", "c1", planned, held, o, false); got != task.StateDrifted || !strings.Contains(reason, "way back") {
		t.Fatalf("held and running: %s (%s), want DRIFTED naming the way back", got, reason)
	}
}

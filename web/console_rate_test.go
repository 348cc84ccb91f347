package web_test

import (
	"net/http"
	"testing"
	"time"
)

// One task, one records/s: the dashboard, the Smart Connect list and the
// task page all read the history sampler, and looking at a page does not
// measure anything (the list measured per look, and showed its own rate).
func TestEveryPageShowsTheSamplersRate(t *testing.T) {
	e := newConsoleEnv(t)
	e.createTask(taskJSON("orders-rate", nil))
	t0 := time.Now().Add(-time.Minute).Truncate(time.Second)
	e.runner.SetRecords("orders-rate", 1000)
	e.sampler.Sample(t0)
	e.runner.SetRecords("orders-rate", 1500)
	e.sampler.Sample(t0.Add(5 * time.Second)) // 100 records/s
	for range 3 {
		if got := e.get(e.client, "/dashboard").testid("dashboard-rate").Text(); got != "100" {
			t.Errorf("dashboard rate %q, want 100", got)
		}
		list := e.get(e.client, "/instances/east/smart-connect").testid("task-rate")
		if got, _ := list.Attr("data-rate"); got != "100.000" {
			t.Errorf("Smart Connect list rate %q, want 100.000", got)
		}
		if got := e.get(e.client, "/tasks/orders-rate").testid("flow-rate").First().Text(); got != "100" {
			t.Errorf("task page flow rate %q, want 100", got)
		}
	}
}

// A task deleted through the API (as the CLI does) loses its charts and
// errors as one deleted in the console does.
func TestDeletedTaskIsForgottenWhoeverDeletesIt(t *testing.T) {
	e := newConsoleEnv(t)
	e.createTask(taskJSON("orders-gone", nil))
	t0 := time.Now().Add(-time.Minute).Truncate(time.Second)
	e.sampler.Sample(t0)
	e.sampler.Sample(t0.Add(5 * time.Second))
	if len(e.sampler.Series("orders-gone").Flows) == 0 {
		t.Fatal("no series sampled")
	}
	if code, _, out := e.api(http.MethodDelete, "/api/v1/tasks/orders-gone", apiToken, ""); code != http.StatusNoContent {
		t.Fatalf("delete: %d %v", code, out)
	}
	if fs := e.sampler.Series("orders-gone").Flows; len(fs) != 0 {
		t.Errorf("deleted task still has %d series", len(fs))
	}
}

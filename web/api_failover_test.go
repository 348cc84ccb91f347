package web_test

import (
	"net/http"
	"testing"
)

func TestAPIFailover(t *testing.T) {
	e := newTaskEnv(t)
	if code, _, body := e.call(http.MethodPost, "/api/v1/tasks", taskJSON("no-offsets", nil)); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, body)
	}
	withSync := taskJSON("with-offsets", func(m map[string]any) {
		sub(m, "rules")["sync_consumer_offsets"] = true
		sub(m, "rules")["topics"] = []string{"payments"}
	})
	if code, _, body := e.call(http.MethodPost, "/api/v1/tasks", withSync); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, body)
	}

	cases := []struct {
		name, task, body string
		code             int
		errCode          string
	}{
		{"group required", "with-offsets", `{"group":" "}`, http.StatusBadRequest, "invalid_request"},
		{"unknown field", "with-offsets", `{"grp":"g"}`, http.StatusBadRequest, "invalid_request"},
		{"task without offset sync", "no-offsets", `{"group":"g"}`, http.StatusBadRequest, "invalid_request"},
		{"unknown task", "nope", `{"group":"g"}`, http.StatusNotFound, "not_found"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, body := e.call(http.MethodPost, "/api/v1/tasks/"+c.task+"/failover", c.body)
			if code != c.code || sub(body, "error")["code"] != c.errCode {
				t.Fatalf("%d %v, want %d %s", code, body, c.code, c.errCode)
			}
		})
	}
	code, _, body := e.call(http.MethodPost, "/api/v1/tasks/with-offsets/failover", `{"group":"billing"}`)
	if code != http.StatusOK || body["group"] != "billing" {
		t.Fatalf("failover: %d %v", code, body)
	}
	results, _ := body["results"].([]any)
	if len(results) != 1 {
		t.Fatalf("results %v", body)
	}
	cps, _ := results[0].(map[string]any)["checkpoints"].([]any)
	if len(cps) != 1 || cps[0].(map[string]any)["downstream_offset"] != float64(7) {
		t.Fatalf("checkpoints %v", results[0])
	}
}

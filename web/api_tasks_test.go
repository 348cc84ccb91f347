package web_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kmirror/kmirror/internal/account"
	"github.com/kmirror/kmirror/internal/metrics"
	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/internal/service/servicetest"
	"github.com/kmirror/kmirror/internal/store"
	"github.com/kmirror/kmirror/web"
)

// peerPassword must never leave the process in clear.
const peerPassword = "peer-pw-Zq8!never-shown"

// lockedBuffer collects log output written from handler goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// taskEnv is a running server with the task API on fake Kafka: east and
// west are reachable (1 and 3 brokers), the peer by address at
// 10.9.9.9:9093 accepts only peerPassword, 10.0.0.1:9 is unreachable.
type taskEnv struct {
	*env
	server *web.Server
	runner *servicetest.Runner
	logs   *lockedBuffer
	bodies []string // every API answer, to search for the password
}

func newTaskEnv(t *testing.T) *taskEnv {
	t.Helper()
	ctx := context.Background()
	dir, db, box := servicetest.OpenStore(t, "")
	logs := &lockedBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	runner := servicetest.NewRunner()
	kafka := &servicetest.Kafka{Clusters: map[string]servicetest.FakeCluster{
		"127.0.0.1:9092": {Brokers: 1, Topics: []string{"orders", "payments", "__consumer_offsets", "mm2-offset-syncs.B.internal"}},
		"127.0.0.1:9192": {Brokers: 3, Topics: []string{"A.orders", "audit"}},
		"10.9.9.9:9093":  {Brokers: 3, Topics: []string{"orders"}, Password: peerPassword},
	}}
	svc, err := service.New(service.Deps{Clusters: db, Users: db, Secrets: box, TaskStore: db, Runner: runner, Kafka: kafka, Logger: log,
		Tokens: db, Audit: db, ConnectClusters: db, ConnectRunner: servicetest.NewRunner(), Policies: db})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := account.EnsureAdmin(ctx, db, adminPassword); err != nil {
		t.Fatal(err)
	}
	s, err := web.New(web.Deps{Service: svc, DataDir: dir, APIToken: apiToken, Logger: log, Ping: db.Ping,
		Metrics: promhttp.HandlerFor(metrics.Registry(runner), promhttp.HandlerOpts{})})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	e := &taskEnv{env: &env{t: t, srv: ts, dataDir: dir, svc: svc}, server: s, runner: runner, logs: logs}
	e.client = e.newBrowser()
	for _, c := range []string{
		`{"name":"east","bootstrap_servers":["127.0.0.1:9092"]}`,
		`{"name":"west","bootstrap_servers":["127.0.0.1:9192"]}`,
	} {
		if code, _, body := e.call(http.MethodPost, "/api/v1/clusters", c); code != http.StatusCreated {
			t.Fatalf("register cluster: %d %v", code, body)
		}
	}
	return e
}

// call is env.api with the test token, keeping the raw answer.
func (e *taskEnv) call(method, path, body string) (int, http.Header, map[string]any) {
	e.t.Helper()
	code, h, out := e.api(method, path, apiToken, body)
	raw, _ := json.Marshal(out)
	e.bodies = append(e.bodies, string(raw))
	return code, h, out
}

// taskJSON is a valid push task to the peer by address, with overrides
// applied to its JSON as a map.
func taskJSON(name string, change func(m map[string]any)) string {
	m := map[string]any{
		"name": name, "type": "kafka-replication",
		"current": map[string]any{"cluster": "east", "alias": "A"},
		"peer": map[string]any{"alias": "B", "config_type": "address", "address": []string{"10.9.9.9:9093"},
			"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "SCRAM-SHA-512", "username": "alice", "password": peerPassword},
		"rules": map[string]any{"direction": "push", "topics": []string{"orders"}, "tasks": 2, "rename_topics": true,
			"add_source_header": false, "sync_consumer_offsets": false, "replication_factor": 1,
			"start_offset": "earliest", "compression": "lz4"},
	}
	if change != nil {
		change(m)
	}
	b, _ := json.Marshal(m)
	return string(b)
}

func sub(m map[string]any, key string) map[string]any { v, _ := m[key].(map[string]any); return v }

func status(body map[string]any) string { s, _ := sub(body, "status")["state"].(string); return s }

func TestAPITaskLifecycle(t *testing.T) {
	e := newTaskEnv(t)
	code, h, body := e.call(http.MethodPost, "/api/v1/tasks", taskJSON("orders-dr", nil))
	if code != http.StatusCreated || h.Get("Location") != "/api/v1/tasks/orders-dr" {
		t.Fatalf("create: %d %q %v", code, h.Get("Location"), body)
	}
	peer := sub(body, "peer")
	if peer["password_set"] != true || peer["password"] != nil || peer["username"] != "alice" {
		t.Fatalf("create answered peer %v", peer)
	}
	if status(body) != "RUNNING" || body["desired_state"] != "running" || sub(body, "last_action")["by"] != "KMIRROR_TOKEN" {
		t.Fatalf("create answered %v", body)
	}
	// The engine got the password opened from its seal.
	if started, ok := e.runner.Started("orders-dr"); !ok || started.Peer.Password != peerPassword {
		t.Fatal("the task was not started with its peer password")
	}

	code, _, body = e.call(http.MethodGet, "/api/v1/tasks/orders-dr", "")
	if code != http.StatusOK || body["name"] != "orders-dr" || len(sub(body, "status")["flows"].([]any)) != 1 {
		t.Fatalf("get: %d %v", code, body)
	}
	code, _, body = e.call(http.MethodGet, "/api/v1/tasks", "")
	if list, _ := body["tasks"].([]any); code != http.StatusOK || len(list) != 1 {
		t.Fatalf("list: %d %v", code, body)
	}
	code, _, body = e.call(http.MethodGet, "/api/v1/clusters/east", "")
	if code != http.StatusOK || body["tasks_used"] != float64(1) {
		t.Fatalf("east tasks_used: %v", body)
	}

	code, _, body = e.call(http.MethodPost, "/api/v1/tasks/orders-dr/pause", "")
	if code != http.StatusOK || status(body) != "PAUSED" || body["desired_state"] != "paused" || sub(body, "last_action")["action"] != "pause" {
		t.Fatalf("pause: %d %v", code, body)
	}
	if _, running := e.runner.Started("orders-dr"); running {
		t.Fatal("a paused task still runs")
	}
	code, _, body = e.call(http.MethodPost, "/api/v1/tasks/orders-dr/resume", "")
	if code != http.StatusOK || status(body) != "RUNNING" || body["desired_state"] != "running" {
		t.Fatalf("resume: %d %v", code, body)
	}
	code, _, body = e.call(http.MethodPost, "/api/v1/tasks/orders-dr/restart", "")
	if code != http.StatusOK || status(body) != "RUNNING" || e.runner.Starts["orders-dr"] != 3 || e.runner.Stops["orders-dr"] != 2 {
		t.Fatalf("restart: %d %v, starts %d stops %d", code, body, e.runner.Starts["orders-dr"], e.runner.Stops["orders-dr"])
	}

	// A cluster a task uses cannot be removed.
	code, _, body = e.call(http.MethodDelete, "/api/v1/clusters/east", "")
	if code != http.StatusConflict || errorCode(body) != "cluster_in_use" {
		t.Fatalf("remove east: %d %v", code, body)
	}

	if code, _, body := e.call(http.MethodDelete, "/api/v1/tasks/orders-dr", ""); code != http.StatusNoContent {
		t.Fatalf("delete: %d %v", code, body)
	}
	if _, running := e.runner.Started("orders-dr"); running {
		t.Fatal("a deleted task still runs")
	}
	code, _, body = e.call(http.MethodGet, "/api/v1/tasks/orders-dr", "")
	if code != http.StatusNotFound || errorCode(body) != "not_found" {
		t.Fatalf("get after delete: %d %v", code, body)
	}
	if code, _, body := e.call(http.MethodDelete, "/api/v1/clusters/east", ""); code != http.StatusNoContent {
		t.Fatalf("remove east once unused: %d %v", code, body)
	}
	e.assertPasswordNowhere()
}

// assertPasswordNowhere checks API answers, the database (WAL included)
// and the log for the peer password.
func (e *taskEnv) assertPasswordNowhere() {
	e.t.Helper()
	for _, b := range e.bodies {
		if strings.Contains(b, peerPassword) {
			e.t.Fatalf("an API answer holds the peer password: %s", b)
		}
	}
	for _, f := range []string{store.FileName, store.FileName + "-wal", store.FileName + "-shm"} {
		raw, err := os.ReadFile(filepath.Join(e.dataDir, f))
		if err != nil && !os.IsNotExist(err) {
			e.t.Fatal(err)
		}
		if bytes.Contains(raw, []byte(peerPassword)) {
			e.t.Fatalf("%s holds the peer password in clear", f)
		}
	}
	if strings.Contains(e.logs.String(), peerPassword) {
		e.t.Fatalf("the log holds the peer password:\n%s", e.logs.String())
	}
	if !strings.Contains(e.logs.String(), "task created") {
		e.t.Fatalf("the log capture saw nothing; is it wired?\n%s", e.logs.String())
	}
}

func TestAPITaskErrors(t *testing.T) {
	e := newTaskEnv(t)
	if code, _, body := e.call(http.MethodPost, "/api/v1/tasks", taskJSON("taken", nil)); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, body)
	}
	cases := []struct {
		name, method, path, body string
		status                   int
		code                     string
		fields                   []string // problem fields expected among the answer's
	}{
		{"empty body", "POST", "/api/v1/tasks", "", 400, "invalid_request", nil},
		{"not JSON", "POST", "/api/v1/tasks", "{", 400, "invalid_request", nil},
		{"wrong type", "POST", "/api/v1/tasks", `{"name": 5}`, 400, "invalid_request", nil},
		{"unknown field", "POST", "/api/v1/tasks", `{"nmae": "x"}`, 400, "invalid_request", nil},
		{"every field rule", "POST", "/api/v1/tasks", `{"name":"a b","current":{"alias":""},"peer":{},"rules":{"direction":"sideways"}}`, 422, "invalid_task",
			[]string{"name", "current.cluster", "current.alias", "peer.alias", "peer.config_type", "rules.direction", "rules.topics"}},
		{"unregistered current", "POST", "/api/v1/tasks", taskJSON("task-x", func(m map[string]any) { sub(m, "current")["cluster"] = "north" }), 422, "invalid_task", []string{"current.cluster"}},
		{"unregistered peer", "POST", "/api/v1/tasks", taskJSON("task-x", func(m map[string]any) {
			m["peer"] = map[string]any{"alias": "B", "config_type": "cluster", "cluster": "south"}
		}), 422, "invalid_task", []string{"peer.cluster"}},
		{"replication factor above brokers", "POST", "/api/v1/tasks", taskJSON("task-x", func(m map[string]any) {
			sub(m, "rules")["replication_factor"] = 4
		}), 422, "invalid_task", []string{"rules.replication_factor"}},
		// Only an omitted number takes its default; a sent one is checked.
		{"explicit tasks 0", "POST", "/api/v1/tasks", taskJSON("task-x", func(m map[string]any) { sub(m, "rules")["tasks"] = 0 }), 422, "invalid_task", []string{"rules.tasks"}},
		{"explicit replication factor 0", "POST", "/api/v1/tasks", taskJSON("task-x", func(m map[string]any) { sub(m, "rules")["replication_factor"] = 0 }), 422, "invalid_task", []string{"rules.replication_factor"}},
		{"tasks too many", "POST", "/api/v1/tasks", taskJSON("task-x", func(m map[string]any) { sub(m, "rules")["tasks"] = 65 }), 422, "invalid_task", []string{"rules.tasks"}},
		// A masked export imported again must get its password back.
		{"masked password", "POST", "/api/v1/tasks", taskJSON("task-x", func(m map[string]any) { sub(m, "peer")["password"] = "********" }), 422, "invalid_task", []string{"peer.password"}},
		{"unreachable target", "POST", "/api/v1/tasks", taskJSON("task-x", func(m map[string]any) {
			sub(m, "peer")["address"] = []string{"10.0.0.1:9"}
		}), 422, "invalid_task", []string{"peer.address"}},
		{"taken name", "POST", "/api/v1/tasks", taskJSON("taken", func(m map[string]any) { sub(m, "rules")["topics"] = []string{"payments"} }), 422, "invalid_task", []string{"name"}},
		{"get unknown", "GET", "/api/v1/tasks/nope", "", 404, "not_found", nil},
		{"delete unknown", "DELETE", "/api/v1/tasks/nope", "", 404, "not_found", nil},
		{"pause unknown", "POST", "/api/v1/tasks/nope/pause", "", 404, "not_found", nil},
		{"resume unknown", "POST", "/api/v1/tasks/nope/resume", "", 404, "not_found", nil},
		{"restart unknown", "POST", "/api/v1/tasks/nope/restart", "", 404, "not_found", nil},
		{"validate not JSON", "POST", "/api/v1/tasks/validate", "[", 400, "invalid_request", nil},
		{"connectivity not JSON", "POST", "/api/v1/connectivity", "", 400, "invalid_request", nil},
		{"connectivity unregistered", "POST", "/api/v1/connectivity", taskJSON("t-conn", func(m map[string]any) { sub(m, "current")["cluster"] = "north" }), 422, "invalid_task", []string{"current.cluster"}},
		{"connectivity no address", "POST", "/api/v1/connectivity", taskJSON("t-conn", func(m map[string]any) { delete(sub(m, "peer"), "address") }), 422, "invalid_task", []string{"peer.address"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			code, _, body := e.call(c.method, c.path, c.body)
			if code != c.status || errorCode(body) != c.code {
				t.Fatalf("%s %s: %d %v, want %d %s", c.method, c.path, code, body, c.status, c.code)
			}
			msg, _ := sub(body, "error")["message"].(string)
			if msg == "" {
				t.Fatalf("no message: %v", body)
			}
			got := problemFields(body)
			for _, f := range c.fields {
				if !slices.Contains(got, f) {
					t.Fatalf("problems %v lack %s: %v", got, f, body)
				}
			}
		})
	}
	// The problem about an unreachable target names it.
	_, _, body := e.call(http.MethodPost, "/api/v1/tasks", taskJSON("task-x", func(m map[string]any) { sub(m, "peer")["address"] = []string{"10.0.0.1:9"} }))
	if !strings.Contains(fmt.Sprint(body), "10.0.0.1:9") {
		t.Fatalf("unreachable target not named: %v", body)
	}
	// Nothing refused was stored.
	_, _, body = e.call(http.MethodGet, "/api/v1/tasks", "")
	if list, _ := body["tasks"].([]any); len(list) != 1 {
		t.Fatalf("refused tasks were stored: %v", body)
	}
	// Every route wants the token.
	for _, op := range [][2]string{{"GET", "/api/v1/tasks"}, {"POST", "/api/v1/tasks"}, {"GET", "/api/v1/tasks/taken"},
		{"DELETE", "/api/v1/tasks/taken"}, {"POST", "/api/v1/tasks/taken/pause"}, {"POST", "/api/v1/tasks/taken/resume"},
		{"POST", "/api/v1/tasks/taken/restart"}, {"POST", "/api/v1/tasks/validate"}, {"POST", "/api/v1/connectivity"}} {
		if code, _, body := e.api(op[0], op[1], "", "{}"); code != http.StatusUnauthorized || errorCode(body) != "unauthorized" {
			t.Fatalf("%s %s without token: %d %v", op[0], op[1], code, body)
		}
	}
	e.assertPasswordNowhere()
}

func TestAPIValidateTask(t *testing.T) {
	e := newTaskEnv(t)
	code, _, body := e.call(http.MethodPost, "/api/v1/tasks/validate", taskJSON("preview", func(m map[string]any) {
		m["peer"] = map[string]any{"alias": "B", "config_type": "cluster", "cluster": "west"}
		sub(m, "rules")["direction"] = "bidirectional"
		sub(m, "rules")["topics"] = nil
		sub(m, "rules")["topics_regex"] = ".*"
	}))
	if code != http.StatusOK || body["ok"] != true {
		t.Fatalf("validate: %d %v", code, body)
	}
	flows, _ := body["flows"].([]any)
	want := map[string]string{
		// A.payments is not on west yet: the flow creates it.
		"A->B": "[map[source:orders target:A.orders] map[new_target:true source:payments target:A.payments]]",
		// A.orders came from A: never copied back to it.
		"B->A": "[map[new_target:true source:audit target:B.audit]]",
	}
	// Bidirectional: both clusters' topics can be picked, internal ones
	// left out.
	if got := fmt.Sprint(body["source_topics"]); got != "[A.orders audit orders payments]" {
		t.Errorf("source topics %s", got)
	}
	if len(flows) != 2 {
		t.Fatalf("flows: %v", body)
	}
	for _, f := range flows {
		fm := f.(map[string]any)
		if got := fmt.Sprint(fm["topics"]); got != want[fm["flow"].(string)] {
			t.Fatalf("flow %v topics %s, want %s", fm["flow"], got, want[fm["flow"].(string)])
		}
	}
	// Invalid: 200 with every problem; the unreachable peer is a warning
	// and the field rules are still reported.
	code, _, body = e.call(http.MethodPost, "/api/v1/tasks/validate", taskJSON("x", func(m map[string]any) {
		sub(m, "peer")["address"] = []string{"10.0.0.1:9"}
		sub(m, "rules")["compression"] = "brotli"
	}))
	if code != http.StatusOK || body["ok"] != false {
		t.Fatalf("validate invalid: %d %v", code, body)
	}
	ps, _ := body["problems"].([]any)
	var fields []string
	for _, p := range ps {
		fields = append(fields, p.(map[string]any)["field"].(string))
	}
	if !slices.Contains(fields, "name") || !slices.Contains(fields, "rules.compression") {
		t.Fatalf("problems %v", fields)
	}
	if !strings.Contains(fmt.Sprint(body["warnings"]), "10.0.0.1:9") {
		t.Fatalf("no warning about the unreachable peer: %v", body["warnings"])
	}
	e.assertPasswordNowhereInBodies()
}

func (e *taskEnv) assertPasswordNowhereInBodies() {
	e.t.Helper()
	for _, b := range e.bodies {
		if strings.Contains(b, peerPassword) {
			e.t.Fatalf("an API answer holds the peer password: %s", b)
		}
	}
}

func TestAPIConnectivity(t *testing.T) {
	e := newTaskEnv(t)
	code, _, body := e.call(http.MethodPost, "/api/v1/connectivity", taskJSON("conn", nil))
	if code != http.StatusOK || body["ok"] != true {
		t.Fatalf("connectivity: %d %v", code, body)
	}
	code, _, body = e.call(http.MethodPost, "/api/v1/connectivity", taskJSON("conn", func(m map[string]any) { sub(m, "peer")["password"] = "wrong" }))
	if code != http.StatusOK || body["ok"] != false {
		t.Fatalf("connectivity with a wrong password: %d %v", code, body)
	}
	clusters, _ := body["clusters"].([]any)
	if len(clusters) != 2 {
		t.Fatalf("clusters: %v", body)
	}
	cur, peer := clusters[0].(map[string]any), clusters[1].(map[string]any)
	if cur["role"] != "current" || cur["ok"] != true || peer["role"] != "peer" || peer["ok"] != false {
		t.Fatalf("clusters: %v", clusters)
	}
	var failed string
	for _, s := range peer["steps"].([]any) {
		sm := s.(map[string]any)
		if sm["ok"] == false && sm["skipped"] == nil {
			failed = sm["name"].(string)
		}
	}
	if failed != "sasl" {
		t.Fatalf("failed step %q, want sasl: %v", failed, peer)
	}
}

func TestAPIMetrics(t *testing.T) {
	e := newTaskEnv(t)
	if code, _, body := e.call(http.MethodPost, "/api/v1/tasks", taskJSON("orders-dr", nil)); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, body)
	}
	resp, err := http.Get(e.srv.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK || !strings.Contains(string(b), `kmirror_replicated_records_total{flow="A->B",task="orders-dr"} 10`) {
		t.Fatalf("metrics: %d\n%s", resp.StatusCode, b)
	}
}

// Of many concurrent creates on one current cluster, exactly the limit
// pass: the cross-task rules run in the insert's transaction.
func TestAPIConcurrentCreatesKeepTheLimit(t *testing.T) {
	e := newTaskEnv(t)
	const tries = service.TasksPerClusterLimit + 7
	codes := make([]int, tries)
	var wg sync.WaitGroup
	for i := range tries {
		wg.Go(func() {
			body := taskJSON(fmt.Sprintf("task-%02d", i), func(m map[string]any) {
				m["peer"] = map[string]any{"alias": "B", "config_type": "cluster", "cluster": "west"}
				sub(m, "rules")["topics"] = []string{fmt.Sprintf("topic-%02d", i)}
			})
			codes[i], _, _ = e.api(http.MethodPost, "/api/v1/tasks", apiToken, body)
		})
	}
	wg.Wait()
	created := 0
	for _, c := range codes {
		switch c {
		case http.StatusCreated:
			created++
		case http.StatusUnprocessableEntity:
		default:
			t.Fatalf("status %d among %v", c, codes)
		}
	}
	_, _, body := e.call(http.MethodGet, "/api/v1/clusters/east", "")
	if created != service.TasksPerClusterLimit || body["tasks_used"] != float64(service.TasksPerClusterLimit) {
		t.Fatalf("%d created, east uses %v; want %d", created, body["tasks_used"], service.TasksPerClusterLimit)
	}
	code, _, body := e.call(http.MethodPost, "/api/v1/tasks", taskJSON("one-more", func(m map[string]any) { sub(m, "rules")["topics"] = []string{"zzz"} }))
	if code != http.StatusUnprocessableEntity || !slices.Contains(problemFields(body), "current.cluster") {
		t.Fatalf("19th task: %d %v", code, body)
	}
}

func TestOpenAPIListsEveryRoute(t *testing.T) {
	e := newTaskEnv(t)
	resp, err := http.Get(e.srv.URL + "/api/v1/openapi.json") // public
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var doc struct {
		OpenAPI string                    `json:"openapi"`
		Paths   map[string]map[string]any `json:"paths"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&doc); err != nil || resp.StatusCode != 200 || !strings.HasPrefix(doc.OpenAPI, "3.") {
		t.Fatalf("openapi.json: %d %v %q", resp.StatusCode, err, doc.OpenAPI)
	}
	documented := map[string]bool{}
	for p, ops := range doc.Paths {
		for m := range ops {
			documented[strings.ToUpper(m)+" "+p] = true
		}
	}
	registered := map[string]bool{}
	for _, r := range e.server.APIRoutes() {
		registered[r] = true
		if !documented[r] {
			t.Errorf("route %s is not in openapi.json", r)
		}
	}
	for r := range documented {
		if !registered[r] {
			t.Errorf("openapi.json documents %s, which is not a route", r)
		}
	}
	if len(registered) < 14 {
		t.Fatalf("only %d routes found: %v", len(registered), registered)
	}
}

package web_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/account"
	"github.com/kmirror/kmirror/internal/history"
	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/internal/service/servicetest"
	"github.com/kmirror/kmirror/web"
)

// consoleEnv is a signed-in console with tasks on fake Kafka (as taskEnv)
// and a history sampler the test drives with its own clock.
type consoleEnv struct {
	*env
	runner  *servicetest.Runner
	sampler *history.Sampler
}

func newConsoleEnv(t *testing.T) *consoleEnv {
	t.Helper()
	ctx := context.Background()
	dir, db, box := servicetest.OpenStore(t, "")
	runner := servicetest.NewRunner()
	kafka := &servicetest.Kafka{Clusters: map[string]servicetest.FakeCluster{
		"127.0.0.1:9092": {Brokers: 1, Topics: []string{"orders", "payments"}},
		"127.0.0.1:9192": {Brokers: 3, Topics: []string{"audit"}},
		"10.9.9.9:9093":  {Brokers: 3, Topics: []string{"orders"}, Password: peerPassword},
	}}
	log := slog.New(slog.DiscardHandler)
	svc, err := service.New(service.Deps{Clusters: db, Users: db, Secrets: box, TaskStore: db, Runner: runner, Kafka: kafka, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := account.EnsureAdmin(ctx, db, adminPassword); err != nil {
		t.Fatal(err)
	}
	sampler := history.New(runner, 5*time.Second, 15*time.Minute)
	s, err := web.New(web.Deps{Service: svc, DataDir: dir, APIToken: apiToken, Logger: log, Ping: db.Ping, History: sampler})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	e := &consoleEnv{env: &env{t: t, srv: ts, dataDir: dir}, runner: runner, sampler: sampler}
	e.client = e.newBrowser()
	for _, c := range []string{
		`{"name":"east","bootstrap_servers":["127.0.0.1:9092"]}`,
		`{"name":"west","bootstrap_servers":["127.0.0.1:9192"]}`,
	} {
		if code, _, body := e.api(http.MethodPost, "/api/v1/clusters", apiToken, c); code != http.StatusCreated {
			t.Fatalf("register cluster: %d %v", code, body)
		}
	}
	if p := e.signIn(e.client, "admin", adminPassword); p.url != "/instances" {
		t.Fatalf("sign-in ended at %s", p.url)
	}
	return e
}

func (e *consoleEnv) createTask(body string) {
	e.t.Helper()
	if code, _, out := e.api(http.MethodPost, "/api/v1/tasks", apiToken, body); code != http.StatusCreated {
		e.t.Fatalf("create task: %d %v", code, out)
	}
}

// post sends a console form with the page's CSRF token.
func (e *consoleEnv) post(from page, path string, form url.Values) page {
	e.t.Helper()
	if form == nil {
		form = url.Values{}
	}
	form.Set("_csrf", from.csrf(e.t))
	return e.postForm(e.client, path, form, nil)
}

func TestTaskPageShowsParametersWithoutPassword(t *testing.T) {
	e := newConsoleEnv(t)
	e.createTask(taskJSON("orders-dr", nil))

	p := e.get(e.client, "/tasks/orders-dr")
	if p.status != http.StatusOK {
		t.Fatalf("status %d", p.status)
	}
	if got, _ := p.testid("task-state").Attr("data-state"); got != "RUNNING" {
		t.Errorf("state %q", got)
	}
	if got := strings.TrimSpace(p.testid("param-password").Text()); got != "password set" {
		t.Errorf("password shown as %q", got)
	}
	if strings.Contains(p.body, peerPassword) {
		t.Fatal("the page contains the peer password")
	}
	if n := p.testid("flow-row").Length(); n != 1 {
		t.Errorf("%d flow rows, want 1 (push)", n)
	}
	if got := p.testid("internal-topic").Text(); !strings.Contains(got, "mm2-offset-syncs.B.internal") {
		t.Errorf("internal topics %q", got)
	}
	if p.testid("task-reason").Length() != 0 {
		t.Error("a running task shows a failure")
	}
	// Only the actions that apply, and who did what last.
	for id, want := range map[string]int{"action-pause": 1, "action-restart": 1, "action-delete": 1, "action-resume": 0} {
		if n := p.testid(id).Length(); n != want {
			t.Errorf("%s: %d, want %d", id, n, want)
		}
	}
	if confirm, _ := p.testid("action-delete").Parent().Attr("hx-confirm"); !strings.Contains(confirm, "orders-dr") {
		t.Errorf("delete is not confirmed: %q", confirm)
	}
	if got := p.testid("task-last-action").Text(); !strings.Contains(got, "Create") || !strings.Contains(got, "KMIRROR_TOKEN") {
		t.Errorf("last action %q", got)
	}
	// The page loads the vendored chart library and embeds its first data.
	if p.doc.Find(`script[src="/static/uPlot-1.6.32.iife.min.js"]`).Length() != 1 || p.doc.Find(`script#task-series`).Length() != 1 {
		t.Error("charts are not set up")
	}
	if p.testid("task-status").AttrOr("hx-trigger", "") != "every 5s" {
		t.Error("the status does not refresh itself")
	}

	// The export is the API's shape, password masked, and downloads.
	resp, err := e.client.Get(e.srv.URL + "/tasks/orders-dr/export.json")
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.HasPrefix(resp.Header.Get("Content-Disposition"), "attachment") {
		t.Errorf("Content-Disposition %q", resp.Header.Get("Content-Disposition"))
	}
	var exported map[string]any
	if err := json.Unmarshal(raw, &exported); err != nil {
		t.Fatalf("export is not JSON: %v\n%s", err, raw)
	}
	if sub(exported, "peer")["password"] != "********" || sub(exported, "rules")["direction"] != "push" || exported["name"] != "orders-dr" {
		t.Errorf("export %s", raw)
	}
	if _, ok := sub(exported, "peer")["password_set"]; ok || exported["status"] != nil {
		t.Errorf("export carries more than the API accepts: %s", raw)
	}
	if strings.Contains(string(raw), peerPassword) {
		t.Fatal("the export contains the peer password")
	}

	if p := e.get(e.client, "/tasks/no-such-task"); p.status != http.StatusNotFound {
		t.Errorf("unknown task: %d", p.status)
	}
}

func TestTaskActionsFromThePage(t *testing.T) {
	e := newConsoleEnv(t)
	e.createTask(taskJSON("orders-dr", nil))
	p := e.get(e.client, "/tasks/orders-dr")

	p = e.post(p, "/tasks/orders-dr/pause", nil)
	if p.url != "/tasks/orders-dr" || p.testid("flash-success").Text() != "Task orders-dr paused." {
		t.Fatalf("after pause at %s, flash %q", p.url, p.testid("flash-success").Text())
	}
	if got, _ := p.testid("task-state").Attr("data-state"); got != "PAUSED" {
		t.Errorf("state %q", got)
	}
	if p.testid("action-pause").Length() != 0 || p.testid("action-resume").Length() != 1 {
		t.Error("a paused task offers pause, or not resume")
	}
	if got := p.testid("task-last-action").Text(); !strings.Contains(got, "Pause by admin") {
		t.Errorf("last action %q", got)
	}
	if _, running := e.runner.Started("orders-dr"); running {
		t.Error("still running")
	}

	p = e.post(p, "/tasks/orders-dr/resume", nil)
	if got, _ := p.testid("task-state").Attr("data-state"); got != "RUNNING" {
		t.Errorf("after resume: %q", got)
	}
	// htmx gets HX-Redirect, not a page.
	resp := e.postForm(e.client, "/tasks/orders-dr/restart", url.Values{"_csrf": {p.csrf(t)}}, http.Header{"Hx-Request": {"true"}})
	if resp.header.Get("HX-Redirect") != "/tasks/orders-dr" {
		t.Errorf("htmx restart: status %d HX-Redirect %q", resp.status, resp.header.Get("HX-Redirect"))
	}

	p = e.post(e.get(e.client, "/tasks/orders-dr"), "/tasks/orders-dr/delete", nil)
	if p.url != "/dashboard" || p.testid("flash-success").Text() != "Task orders-dr deleted." {
		t.Fatalf("after delete at %s, flash %q", p.url, p.testid("flash-success").Text())
	}
	// The polled fragment of a deleted task stops the polling.
	if f := e.get(e.client, "/tasks/orders-dr/status"); f.status != 286 {
		t.Errorf("status fragment of a deleted task: %d, want 286", f.status)
	}
	if f := e.post(p, "/tasks/orders-dr/frobnicate", nil); f.status != http.StatusNotFound {
		t.Errorf("unknown action: %d", f.status)
	}
}

func TestTaskPageShowsWhyItFailed(t *testing.T) {
	e := newConsoleEnv(t)
	e.runner.FailStart = errors.New("SASL authentication failed as alice: wrong user name or password\nbroker said: SASL_AUTHENTICATION_FAILED")
	e.createTask(taskJSON("orders-dr", nil))

	p := e.get(e.client, "/tasks/orders-dr")
	if got, _ := p.testid("task-state").Attr("data-state"); got != "FAILED" {
		t.Fatalf("state %q", got)
	}
	if got := p.testid("task-reason-headline").Text(); got != "could not start: SASL authentication failed as alice: wrong user name or password" {
		t.Errorf("headline %q", got)
	}
	if got := p.testid("task-reason").Find("details pre").Text(); !strings.Contains(got, "SASL_AUTHENTICATION_FAILED") {
		t.Errorf("full cause %q", got)
	}
	// Errors come before the parameters.
	if strings.Index(p.body, `data-testid="task-reason"`) > strings.Index(p.body, `data-testid="task-params"`) {
		t.Error("the failure is not shown first")
	}
}

func TestTaskSeriesEndpointReturnsSamples(t *testing.T) {
	e := newConsoleEnv(t)
	e.createTask(taskJSON("orders-dr", func(m map[string]any) {
		sub(m, "rules")["direction"] = "bidirectional"
		sub(m, "rules")["add_source_header"] = true
	}))
	t0 := time.Now().Add(-time.Minute).Truncate(time.Second)
	e.sampler.Sample(t0)
	e.sampler.Sample(t0.Add(5 * time.Second))

	resp, err := e.client.Get(e.srv.URL + "/tasks/orders-dr/series.json")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var got history.Columns
	if err := json.NewDecoder(resp.Body).Decode(&got); err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != http.StatusOK || got.Task != "orders-dr" || got.EverySeconds != 5 || len(got.Flows) != 2 {
		t.Fatalf("%d %+v", resp.StatusCode, got)
	}
	for _, f := range got.Flows {
		if len(f.T) != 2 || f.T[1]-f.T[0] != 5 || len(f.RecordsPerSec) != 2 || len(f.LagRecords) != 2 {
			t.Errorf("flow %s: %+v", f.Flow, f)
		}
		// The fake's counter stays at 10: no rate first, then 0/s.
		if f.RecordsPerSec[0] != nil || f.RecordsPerSec[1] == nil || *f.RecordsPerSec[1] != 0 {
			t.Errorf("flow %s rates %v", f.Flow, f.RecordsPerSec)
		}
	}
	if got.Flows[0].Flow != "A->B" || got.Flows[1].Flow != "B->A" {
		t.Errorf("flows %s, %s", got.Flows[0].Flow, got.Flows[1].Flow)
	}
	// The page embeds the same data for its first draw.
	p := e.get(e.client, "/tasks/orders-dr")
	var embedded history.Columns
	if err := json.Unmarshal([]byte(p.doc.Find("script#task-series").Text()), &embedded); err != nil || len(embedded.Flows) != 2 {
		t.Errorf("embedded chart data: %v %+v", err, embedded)
	}
	if got := p.testid("flow-rate").First().Text(); got != "0.0" {
		t.Errorf("rate in the flows table %q", got)
	}

	// The charts' script reads errors as the API's JSON, not a page.
	resp, err = e.client.Get(e.srv.URL + "/tasks/nope/series.json")
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = resp.Body.Close() }()
	var body struct {
		Error struct{ Code string } `json:"error"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil || resp.StatusCode != http.StatusNotFound || body.Error.Code != "not_found" {
		t.Errorf("unknown task: %v %v %+v", err, resp.StatusCode, body)
	}
}

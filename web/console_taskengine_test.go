package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/kmirror/kmirror/internal/service"
)

// The create form offers the engines, starting with the instance's Smart
// Connect engine; the chosen one is the task's, shown wherever tasks are.
func TestTaskFormEngine(t *testing.T) {
	e := newTaskEnv(t)
	e.addConnectCluster("west-connect", "west")
	e.signIn(e.client, "admin", adminPassword)
	const base = "/instances/east/smart-connect"

	form := e.get(e.client, base+"/new")
	sel := form.testid("section-advanced").Find(`[data-testid="field-engine"]`)
	if got := optionValues(sel); strings.Join(got, ",") != "embedded,connect:west-connect" {
		t.Fatalf("engine choices %q", got)
	}
	if got := sel.Find("option[selected]").AttrOr("value", ""); got != "embedded" {
		t.Errorf("default engine %q, want the instance's (embedded)", got)
	}
	admin := service.WithActor(context.Background(), service.Actor{Name: "admin", Role: service.RoleAdmin})
	if _, err := e.svc.SetSmartConnect(admin, "east", service.SmartConnect{Enabled: true, Engine: "connect:west-connect"}); err != nil {
		t.Fatal(err)
	}
	form = e.get(e.client, base+"/new")
	if got := form.doc.Find(`#f-engine option[selected]`).AttrOr("value", ""); got != "connect:west-connect" {
		t.Errorf("default engine %q, want the instance's (connect:west-connect)", got)
	}
	csrf := form.csrf(t)

	// An engine the service refuses: the message by the select, the choice kept.
	bad := taskFormValues(csrf, "orders-dr")
	bad.Set("engine", "connect:nowhere")
	p := e.postForm(e.client, base, bad, nil)
	if p.status != http.StatusUnprocessableEntity || !strings.Contains(p.testid("error-engine").Text(), `no Kafka Connect cluster named "nowhere"`) {
		t.Fatalf("unknown engine: %d %q\n%s", p.status, p.testid("error-engine").Text(), p.testid("form-problems").Text())
	}
	if got := p.doc.Find(`#f-engine option[selected]`).AttrOr("value", ""); got != "connect:nowhere" {
		t.Errorf("refused engine not kept: %q", got)
	}

	good := taskFormValues(csrf, "orders-dr")
	good.Set("engine", "connect:west-connect")
	p = e.postForm(e.client, base, good, nil)
	if p.url != base {
		t.Fatalf("create: %d at %s\n%s", p.status, p.url, p.body)
	}
	row := p.doc.Find(`[data-testid="task-row"][data-task="orders-dr"] [data-testid="task-engine"]`)
	if row.AttrOr("data-engine", "") != "connect:west-connect" || !strings.Contains(row.Text(), "west-connect") {
		t.Errorf("list engine %q %q", row.AttrOr("data-engine", ""), row.Text())
	}
	emb := taskFormValues(csrf, "payments-dr")
	emb.Set("rules.topics", "payments")
	emb.Set("engine", "embedded")
	if p := e.postForm(e.client, base, emb, nil); p.url != base {
		t.Fatalf("create on embedded: %d at %s\n%s", p.status, p.url, p.testid("task-form").Text())
	}

	dash := e.get(e.client, "/dashboard")
	for task, want := range map[string]string{"orders-dr": "connect:west-connect", "payments-dr": "embedded"} {
		if got := dash.doc.Find(`[data-testid="dashboard-row"][data-task="`+task+`"] [data-testid="dashboard-engine"]`).AttrOr("data-engine", ""); got != want {
			t.Errorf("dashboard engine of %s %q, want %q", task, got, want)
		}
	}
	tp := e.get(e.client, "/tasks/orders-dr")
	if got := tp.testid("param-engine"); got.AttrOr("data-engine", "") != "connect:west-connect" || !strings.Contains(got.Text(), "Kafka Connect cluster west-connect") {
		t.Errorf("task page engine %q", got.Text())
	}
}

// With Smart Connect off the form and the overview say so, and a create
// posted anyway is refused by the service with its reason.
func TestTaskFormWhileSmartConnectDisabled(t *testing.T) {
	e := newTaskEnv(t)
	e.signIn(e.client, "admin", adminPassword)
	admin := service.WithActor(context.Background(), service.Actor{Name: "admin", Role: service.RoleAdmin})
	if _, err := e.svc.SetSmartConnect(admin, "east", service.SmartConnect{Enabled: false, Engine: "embedded"}); err != nil {
		t.Fatal(err)
	}
	form := e.get(e.client, "/instances/east/smart-connect/new")
	if !strings.Contains(form.testid("form-disabled").Text(), "--enable") || form.doc.Find(`[data-testid="create-now"][disabled]`).Length() != 1 {
		t.Errorf("the form does not say Smart Connect is off, or still offers create:\n%s", form.testid("form-disabled").Text())
	}
	if got := e.get(e.client, "/instances/east").testid("instance-smart-connect").AttrOr("data-enabled", ""); got != "false" {
		t.Errorf("overview says enabled=%q", got)
	}
	csrf := form.csrf(t)
	p := e.postForm(e.client, "/instances/east/smart-connect", taskFormValues(csrf, "orders-dr"), nil)
	if p.status != http.StatusUnprocessableEntity || !strings.Contains(p.testid("form-problem").Text(), "Smart Connect is not enabled") {
		t.Fatalf("create while disabled: %d %q", p.status, p.testid("form-problem").Text())
	}
}

func TestViewerCannotCreateOnAnEngine(t *testing.T) {
	e := newTaskEnv(t)
	e.addConnectCluster("west-connect", "west")
	e.addUser("vera", service.RoleViewer)
	b := e.newBrowser()
	csrf := e.signIn(b, "vera", "vera-password").csrf(t)
	f := taskFormValues(csrf, "orders-dr")
	f.Set("engine", "connect:west-connect")
	if p := e.postForm(b, "/instances/east/smart-connect", f, nil); p.status != http.StatusForbidden {
		t.Errorf("create as viewer: %d, want 403", p.status)
	}
}

// The task page moves a task to another engine: the form offers the
// engines but the task's, the move is made with a banner, a refusal shows
// its reason, and a viewer is offered nothing and refused.
func TestTaskPageMovesBetweenEngines(t *testing.T) {
	e := newTaskEnv(t)
	e.addConnectCluster("west-connect", "west")
	e.signIn(e.client, "admin", adminPassword)
	const base = "/instances/east/smart-connect"
	form := e.get(e.client, base+"/new")
	f := taskFormValues(form.csrf(t), "orders-dr")
	f.Set("engine", "embedded")
	if p := e.postForm(e.client, base, f, nil); p.url != base {
		t.Fatalf("create: %d at %s", p.status, p.url)
	}

	tp := e.get(e.client, "/tasks/orders-dr")
	if got := optionValues(tp.testid("move-engine")); strings.Join(got, ",") != "connect:west-connect" {
		t.Fatalf("move choices %q, want the Connect cluster only", got)
	}
	move := url.Values{"_csrf": {tp.csrf(t)}, "engine": {"connect:west-connect"}}
	p := e.postForm(e.client, "/tasks/orders-dr/move", move, nil)
	if p.url != "/tasks/orders-dr" || !strings.Contains(p.testid("flash-success").Text(), "moved to Kafka Connect cluster west-connect") {
		t.Fatalf("move: %d at %s: %q %q", p.status, p.url, p.testid("flash-success").Text(), p.testid("flash-error").Text())
	}
	if got := p.testid("param-engine").AttrOr("data-engine", ""); got != "connect:west-connect" {
		t.Fatalf("engine after the move %q", got)
	}
	// Moving where it runs: the service's reason in the banner.
	p = e.postForm(e.client, "/tasks/orders-dr/move", move, nil)
	if !strings.Contains(p.testid("flash-error").Text(), "already") {
		t.Fatalf("move to the same engine: %q", p.testid("flash-error").Text())
	}

	e.addUser("vera", service.RoleViewer)
	b := e.newBrowser()
	csrf := e.signIn(b, "vera", "vera-password").csrf(t)
	if e.get(b, "/tasks/orders-dr").testid("task-move").Length() != 0 {
		t.Error("a viewer is offered the move")
	}
	back := url.Values{"_csrf": {csrf}, "engine": {"embedded"}}
	if p := e.postForm(b, "/tasks/orders-dr/move", back, nil); p.status != http.StatusForbidden {
		t.Errorf("move as viewer: %d, want 403", p.status)
	}
}

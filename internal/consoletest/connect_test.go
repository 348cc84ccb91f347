package consoletest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/kmirror/kmirror/internal/connect"
	"github.com/kmirror/kmirror/internal/e2e"
	"github.com/kmirror/kmirror/internal/kafkatest"
)

// TestConnectEngineWalk is the Kafka Connect engine in a real browser, as
// an admin: register a Connect cluster on its page (a bad URL first), make
// it an instance's Smart Connect engine, create a task through the form
// (the engine preselected), see it run on Connect and copy, delete it;
// then disable Smart Connect on another instance. Every new page is checked
// with axe-core and read in Traditional Chinese too.
func TestConnectEngineWalk(t *testing.T) {
	src := axeSource(t)
	// The Connect workers write to west: a task pushing to west is one they
	// carry without producer overrides.
	west, east := kafkatest.Shared(t, 0), kafkatest.Shared(t, 1)
	cc := kafkatest.LazyConnect(t, "console", west)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Connect worker logs:\n%s", cc.LogTails(60))
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	topic := kafkatest.NewTopic(t, east, 1, nil)
	const records = 400
	if _, err := e2e.Produce(ctx, east.Settings("PLAINTEXT", ""), topic, 1, records, 64); err != nil {
		t.Fatal(err)
	}
	base := startConsole(t)
	// The instances through the API: their form has its own walk.
	apiPost(t, base, "/api/v1/clusters", fmt.Sprintf(`{"name":"east","bootstrap_servers":[%q]}`, east.Bootstrap("PLAINTEXT")))
	apiPost(t, base, "/api/v1/clusters", fmt.Sprintf(`{"name":"west","bootstrap_servers":[%q]}`, west.Bootstrap("PLAINTEXT")))
	b := newBrowser(t, base)
	b.signInAs("admin", adminPassword)

	// 1. The Kafka Connect clusters page, from the navigation.
	b.run("open Kafka Connect clusters",
		chromedp.Navigate(base+"/instances"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="nav-connect-clusters"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="nav-connect-clusters"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="connect-clusters-empty"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="add-connect-cluster-form"]`)))
	if got := b.text(`h1`); got != "Kafka Connect clusters" {
		t.Errorf("Connect clusters page title %q", got)
	}
	b.screenshot("connect-clusters-empty")
	b.axeCheck(src, "en /connect-clusters")

	// A URL that is no REST URL: the message comes by the field, swapped in
	// by htmx (the page is not reloaded: the mark set on it stays).
	const name = "wc"
	badURL := func(lang, want string) {
		b.run("add with a bad URL "+lang,
			chromedp.Evaluate[chromedp.Void](`window.kmirrorWalkMark = "still here"`),
			clearValue(`#cc-name`),
			chromedp.SendKeys(chromedp.CSS(`#cc-name`), name),
			clearValue(`#cc-urls`),
			chromedp.SendKeys(chromedp.CSS(`#cc-urls`), "ws://127.0.0.1:8083"),
			setSelect(`#cc-kafka`, "west"),
			chromedp.Click(chromedp.CSS(`[data-testid="add-connect-cluster-submit"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="error-urls"]`)))
		if got := b.text(`[data-testid="error-urls"]`); !strings.Contains(got, want) {
			t.Errorf("%s: URL message %q, want it to say %q", lang, got, want)
		}
		if !b.evalBool(`window.kmirrorWalkMark === "still here"`) {
			t.Errorf("%s: the refused form reloaded the page instead of swapping the form", lang)
		}
		// What was typed is kept, so the user fixes only the URL.
		if !b.evalBool(`document.querySelector("#cc-name").value === "wc" && document.querySelector("#cc-kafka").value === "west"`) {
			t.Errorf("%s: the refused form lost what was typed", lang)
		}
		if b.count(`[data-testid="connect-cluster-row"]`) != 0 {
			t.Errorf("%s: a refused Connect cluster is listed", lang)
		}
	}
	badURL("en", "must start with http:// or https://")
	b.screenshot("connect-clusters-bad-url")
	b.axeCheck(src, "en /connect-clusters (refused)")

	// The same page and message in Traditional Chinese.
	b.switchLang("zh-TW", `[data-testid="add-connect-cluster-form"]`)
	if got := b.text(`h1`); got != "Kafka Connect集群" {
		t.Errorf("zh-TW Connect clusters page title %q", got)
	}
	b.axeCheck(src, "zh-TW /connect-clusters")
	badURL("zh-TW", "必須以 http:// 或 https:// 開頭")
	b.screenshot("zh-TW-connect-clusters-bad-url")
	b.axeCheck(src, "zh-TW /connect-clusters (refused)")
	b.switchLang("en", `[data-testid="add-connect-cluster-form"]`)

	// The real Connect cluster's workers: the new row.
	b.run("add the Connect cluster",
		clearValue(`#cc-name`),
		chromedp.SendKeys(chromedp.CSS(`#cc-name`), name),
		clearValue(`#cc-urls`),
		chromedp.SendKeys(chromedp.CSS(`#cc-urls`), strings.Join(cc.URLs(), "\n")),
		setSelect(`#cc-kafka`, "west"),
		chromedp.Click(chromedp.CSS(`[data-testid="add-connect-cluster-submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="connect-cluster-row"][data-connect-cluster="wc"]`)))
	row := `[data-testid="connect-cluster-row"][data-connect-cluster="wc"]`
	if got := b.text(`[data-testid="flash-success"]`); got != "Kafka Connect cluster wc added." {
		t.Errorf("banner %q", got)
	}
	if got := b.text(row + ` [data-testid="connect-cluster-urls"]`); got != strings.Join(cc.URLs(), ", ") {
		t.Errorf("listed URLs %q, want %q", got, strings.Join(cc.URLs(), ", "))
	}
	if got := b.text(row + ` [data-testid="connect-cluster-kafka"]`); got != "west" {
		t.Errorf("listed Kafka cluster %q", got)
	}
	if b.count(`[data-testid="error-urls"]`) != 0 || b.count(`[data-testid="connect-clusters-empty"]`) != 0 {
		t.Error("the list still shows the refusal or the empty row after adding")
	}
	b.screenshot("connect-clusters-added")
	b.axeCheck(src, "en /connect-clusters (one cluster)")
	b.noNewErrors("Kafka Connect clusters page")

	// 2. east's Smart Connect page: the Connect cluster as its engine.
	b.run("open east's Smart Connect",
		chromedp.Click(chromedp.CSS(`[data-testid="nav-instances"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-cluster="east"] [data-testid="cluster-link"]`)),
		chromedp.Click(chromedp.CSS(`[data-cluster="east"] [data-testid="cluster-link"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="nav-instance-smart-connect"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="nav-instance-smart-connect"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="sc-settings-form"]`)))
	status := `[data-testid="sc-status"]`
	if !b.evalBool(`document.querySelector('[data-testid="sc-status"]').dataset.enabled === "true"`) {
		t.Errorf("east's Smart Connect is not enabled at first: %q", b.text(status))
	}
	if got := b.text(status); !strings.Contains(got, "In-process (kmirror)") {
		t.Errorf("east's engine at first %q, want in-process", got)
	}
	b.choose("Smart Connect enabled", `[data-testid="field-enabled"]`)
	b.run("choose the Connect engine",
		setSelect(`#sc-engine`, "connect:wc"),
		chromedp.Click(chromedp.CSS(`[data-testid="sc-settings-submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="sc-status"][data-engine="connect:wc"]`)))
	if got := b.text(status); !strings.Contains(got, "Smart Connect enabled") || !strings.Contains(got, "New tasks run on: Kafka Connect cluster wc.") {
		t.Errorf("status line %q", got)
	}
	if got := b.text(`[data-testid="flash-success"]`); got != "Smart Connect enabled on east; new tasks run on: Kafka Connect cluster wc." {
		t.Errorf("banner %q", got)
	}
	if got := b.evalBool(`document.querySelector("#sc-engine").value === "connect:wc"`); !got {
		t.Error("the setting form does not show the saved engine")
	}
	b.screenshot("smart-connect-engine-saved")
	b.axeCheck(src, "en /instances/east/smart-connect")
	b.switchLang("zh-TW", `[data-testid="sc-settings-form"]`)
	if got := b.text(status); !strings.Contains(got, "已開通Smart Connect") || !strings.Contains(got, "新任務運行於：Kafka Connect集群 wc。") {
		t.Errorf("zh-TW status line %q", got)
	}
	b.screenshot("zh-TW-smart-connect-engine")
	b.axeCheck(src, "zh-TW /instances/east/smart-connect")
	b.switchLang("en", `[data-testid="sc-settings-form"]`)
	b.noNewErrors("Smart Connect setting")

	// 3. A task through the form: push east's topic to west, renamed, on
	// the engine the setting preselects.
	b.run("open the create form",
		chromedp.Click(chromedp.CSS(`[data-testid="create-task"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="task-form"]`)))
	if got := b.evalString(`document.querySelector("#f-engine").value`); got != "connect:wc" {
		t.Errorf("the Engine select starts on %q, want the instance's Connect engine connect:wc", got)
	}
	b.axeCheck(src, "en /instances/east/smart-connect/new (Connect engine)")
	b.switchLang("zh-TW", `[data-testid="task-form"]`)
	if got := b.text(`label[for="f-engine"]`); got != "運行引擎" {
		t.Errorf("zh-TW engine label %q", got)
	}
	if got := b.evalString(`document.querySelector("#f-engine").selectedOptions[0].textContent`); got != "Kafka Connect集群 wc" {
		t.Errorf("zh-TW chosen engine %q", got)
	}
	b.screenshot("zh-TW-create-on-connect")
	b.axeCheck(src, "zh-TW /instances/east/smart-connect/new")
	b.switchLang("en", `[data-testid="task-form"]`)

	const task = "east-on-connect"
	b.run("fill the form",
		chromedp.SendKeys(chromedp.CSS(`#f-name`), task),
		chromedp.SendKeys(chromedp.CSS(`#f-current-alias`), "A"),
		chromedp.SendKeys(chromedp.CSS(`#f-peer-alias`), "B"))
	b.choose("peer by instance", `[data-testid="field-peer.config_type-cluster"]`)
	b.run("choose west and the topic",
		chromedp.WaitVisible(chromedp.CSS(`#f-peer-cluster`)),
		setSelect(`#f-peer-cluster`, "west"),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="topic-input"]`), topic+kb.Enter),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="topic-chip"]`)))
	b.choose("push", `[data-testid="field-rules.direction-push"]`)
	b.choose("turn rename on", `[data-testid="field-rules.rename_topics"]`)
	// The Connect engine refuses a source header (docs/CONNECT.md).
	b.unchoose("no source header", `[data-testid="field-rules.add_source_header"]`)
	b.waitFor("preview of the renamed topic",
		fmt.Sprintf(`!!document.querySelector('[data-testid="preview-pair"][data-source=%s][data-target=%s]')`, q(topic), q("A."+topic)), 15*time.Second)
	if got := b.evalString(`document.querySelector("#f-engine").value`); got != "connect:wc" {
		t.Errorf("the engine is %q once the form is filled, want connect:wc", got)
	}
	b.screenshot("create-on-connect-filled")
	b.axeCheck(src, "en /instances/east/smart-connect/new (filled)")

	b.run("create now",
		chromedp.Click(chromedp.CSS(`[data-testid="create-now"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="flash-success"]`)))
	if got := b.text(`[data-testid="flash-success"]`); got != "Task "+task+" created successfully" {
		t.Errorf("banner %q", got)
	}
	trow := fmt.Sprintf(`[data-testid="task-row"][data-task=%q]`, task)
	if got := b.text(trow + ` [data-testid="task-engine"]`); got != "Kafka Connect cluster wc" {
		t.Errorf("the list shows engine %q", got)
	}
	b.screenshot("smart-connect-task-on-connect")

	// The task page: engine connect:wc, RUNNING once Connect runs the
	// connectors; the records arrive on west.
	b.run("open the task page",
		chromedp.Click(chromedp.CSS(trow+` [data-testid="task-name"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="task-title"]`)))
	if got := b.evalBool(`document.querySelector('[data-testid="param-engine"]').dataset.engine === "connect:wc"`); !got {
		t.Errorf("task page engine %q", b.text(`[data-testid="param-engine"]`))
	}
	if got := b.text(`[data-testid="param-engine"]`); got != "Kafka Connect cluster wc" {
		t.Errorf("task page engine label %q", got)
	}
	b.waitFor("task RUNNING on Connect", `(function(){var s=document.querySelector('[data-testid="task-state"]'); return !!s && s.dataset.state=="RUNNING"})()`, 3*time.Minute)
	if _, err := e2e.WaitFor(ctx, west.Settings("PLAINTEXT", ""), "A."+topic, records, nil); err != nil {
		b.screenshot("task-on-connect-no-copy")
		t.Fatalf("the records did not arrive on west: %v", err)
	}
	b.screenshot("task-page-on-connect")
	b.axeCheck(src, "en /tasks/"+task)
	b.switchLang("zh-TW", `[data-testid="task-title"]`)
	if got := b.text(`[data-testid="param-engine"]`); got != "Kafka Connect集群 wc" {
		t.Errorf("zh-TW task page engine %q", got)
	}
	b.screenshot("zh-TW-task-page-on-connect")
	b.axeCheck(src, "zh-TW /tasks/"+task)
	b.switchLang("en", `[data-testid="task-title"]`)
	b.noNewErrors("task on Connect")

	// Delete it through the task page: its connectors go.
	client, err := connect.New(connect.Config{URLs: cc.URLs(), Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if n := connectorsOf(ctx, t, client, task); n == 0 {
		t.Errorf("no connector of %s on Connect while it runs", task)
	}
	b.run("delete the task",
		chromedp.Click(chromedp.CSS(`[data-testid="action-delete"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="flash-success"]`)))
	b.waitFor("back on the dashboard without the task", fmt.Sprintf(`location.pathname === "/dashboard" && !document.querySelector('[data-testid="dashboard-row"][data-task=%q]')`, task), 30*time.Second)
	b.screenshot("task-on-connect-deleted")
	deadline := time.Now().Add(time.Minute)
	for connectorsOf(ctx, t, client, task) > 0 {
		if time.Now().After(deadline) {
			t.Errorf("connectors of %s left on Connect after the task was deleted", task)
			break
		}
		time.Sleep(time.Second) // poll Connect
	}
	b.noNewErrors("delete")

	// 4. Smart Connect off on west: its create button gives way to the
	// reason.
	b.run("open west's Smart Connect",
		chromedp.Navigate(base+"/instances/west/smart-connect"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="create-task"]`)))
	b.unchoose("Smart Connect off", `[data-testid="field-enabled"]`)
	b.run("save Smart Connect off",
		chromedp.Click(chromedp.CSS(`[data-testid="sc-settings-submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="create-task-disabled"]`)))
	if b.count(`[data-testid="create-task"]`) != 0 {
		t.Error("the create button stays with Smart Connect off")
	}
	if got := b.text(`[data-testid="flash-success"]`); got != "Smart Connect disabled on west." {
		t.Errorf("banner %q", got)
	}
	if got := b.text(`[data-testid="create-task-disabled"]`); !strings.HasPrefix(got, "Smart Connect is not enabled on instance west") {
		t.Errorf("explanation %q", got)
	}
	if !b.evalBool(`document.querySelector('[data-testid="sc-status"]').dataset.enabled === "false"`) {
		t.Errorf("status line with Smart Connect off: %q", b.text(status))
	}
	b.screenshot("smart-connect-disabled")
	b.axeCheck(src, "en /instances/west/smart-connect (disabled)")
	b.switchLang("zh-TW", `[data-testid="create-task-disabled"]`)
	if got := b.text(`[data-testid="create-task-disabled"]`); !strings.HasPrefix(got, "實例west未開通Smart Connect") {
		t.Errorf("zh-TW explanation %q", got)
	}
	b.screenshot("zh-TW-smart-connect-disabled")
	b.axeCheck(src, "zh-TW /instances/west/smart-connect (disabled)")
	b.switchLang("en", `[data-testid="create-task-disabled"]`)
	b.noNewErrors("Smart Connect off")
}

func (b *browser) evalString(expr string) string {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// switchLang turns the page shown to lang with the layout's language
// switch and waits until sel shows in it.
func (b *browser) switchLang(lang, sel string) {
	b.t.Helper()
	b.run("switch to "+lang,
		chromedp.Click(chromedp.CSS(`a[data-testid="lang-`+lang+`"]`)),
		chromedp.WaitVisible(chromedp.CSS(`html[lang="`+lang+`"] `+sel)))
}

// connectorsOf counts the connectors of a task on Connect.
func connectorsOf(ctx context.Context, t *testing.T, client *connect.Client, task string) int {
	t.Helper()
	views, err := client.Connectors(ctx)
	if err != nil {
		t.Fatalf("list the connectors: %v", err)
	}
	n := 0
	for c := range views {
		if strings.HasPrefix(c, "kmirror."+task+".") {
			n++
		}
	}
	return n
}

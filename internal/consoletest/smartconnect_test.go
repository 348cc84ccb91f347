package consoletest

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/kmirror/kmirror/internal/e2e"
	"github.com/kmirror/kmirror/internal/kafkatest"
)

// TestSmartConnectWalk is the original product's flow in a real browser: sign in, add
// two instances, open the first, Smart Connect, create a task (a wrong name
// first), Start check, Create now, see it replicate; the list and the form
// in Traditional Chinese; the task page with its charts, Restart; the
// dashboard, running then filtered to paused; Pause, Resume, Delete.
func TestSmartConnectWalk(t *testing.T) {
	east, west := kafkatest.Shared(t, 0), kafkatest.Shared(t, 1)
	topic := kafkatest.NewTopic(t, east, 1, nil)
	eastSettings := east.Settings("PLAINTEXT", "")
	if _, err := e2e.Produce(context.Background(), eastSettings, topic, 1, 500, 64); err != nil {
		t.Fatal(err)
	}
	base := startConsole(t)
	b := newBrowser(t, base)

	// Sign in.
	b.run("open sign-in", chromedp.Navigate(base+"/signin"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="signin-form"]`)))
	b.screenshot("signin")
	b.run("sign in",
		chromedp.SendKeys(chromedp.CSS(`#user`), "admin"),
		chromedp.SendKeys(chromedp.CSS(`#password`), adminPassword),
		chromedp.Click(chromedp.CSS(`[data-testid="signin-submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="add-cluster-form"]`)))

	// Add two instances through the form: east in the clear, west with
	// SASL/SCRAM, so the check has a SASL step to pass.
	b.run("add east",
		chromedp.SendKeys(chromedp.CSS(`#name`), "east"),
		chromedp.SendKeys(chromedp.CSS(`#bootstrap_servers`), east.Bootstrap("PLAINTEXT")),
		chromedp.Click(chromedp.CSS(`[data-testid="add-cluster-submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="cluster-row"][data-cluster="east"]`)))
	ws := west.Settings("SASL_PLAINTEXT", "SCRAM-SHA-512")
	b.run("add west",
		chromedp.SendKeys(chromedp.CSS(`#name`), "west"),
		chromedp.SendKeys(chromedp.CSS(`#bootstrap_servers`), ws.BootstrapServers[0]),
		setSelect(`#security_protocol`, "SASL_PLAINTEXT"),
		setSelect(`#sasl_mechanism`, "SCRAM-SHA-512"),
		chromedp.SendKeys(chromedp.CSS(`#username`), ws.Username),
		chromedp.SendKeys(chromedp.CSS(`#password`), ws.Password),
		chromedp.Click(chromedp.CSS(`[data-testid="add-cluster-submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="cluster-row"][data-cluster="west"]`)))
	b.waitFor("both instances reachable", `document.querySelectorAll('[data-testid="cluster-health"] [data-reachable="true"]').length == 2`, 30*time.Second)
	b.screenshot("instances")

	// The instance page, then its Smart Connect section.
	b.run("open east",
		chromedp.Click(chromedp.CSS(`[data-cluster="east"] [data-testid="cluster-link"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="instance-overview"]`)))
	if got := b.text(`[data-testid="instance-health"]`); got != "Reachable, 1 broker(s)" {
		t.Errorf("east health %q", got)
	}
	if got := b.text(`[data-testid="instance-tasks"]`); got[:6] != "0 / 18" {
		t.Errorf("tasks used %q", got)
	}
	b.screenshot("instance-overview")
	b.run("open Smart Connect",
		chromedp.Click(chromedp.CSS(`[data-testid="nav-instance-smart-connect"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="tasks-empty"]`)))
	b.screenshot("smart-connect-empty")
	b.run("open the create form",
		chromedp.Click(chromedp.CSS(`[data-testid="create-task"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="task-form"]`)))

	// A wrong name gets the server's message by the field once left.
	b.run("type a wrong name",
		chromedp.SendKeys(chromedp.CSS(`#f-name`), "bad name!"),
		chromedp.Click(chromedp.CSS(`#f-current-alias`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="error-name"]`)))
	if got := b.text(`[data-testid="error-name"]`); got != "name must be 4 to 64 characters of A-Z, a-z, 0-9, - and _" {
		t.Errorf("name message %q", got)
	}
	b.screenshot("create-invalid-name")

	// Fix it and fill the rest: push east's topic to west, renamed.
	const name = "east-to-west"
	b.run("fill the form",
		clearValue(`#f-name`),
		chromedp.SendKeys(chromedp.CSS(`#f-name`), name),
		chromedp.SendKeys(chromedp.CSS(`#f-current-alias`), "A"),
		chromedp.SendKeys(chromedp.CSS(`#f-peer-alias`), "B"),
		chromedp.Click(chromedp.CSS(`[data-testid="field-peer.config_type-cluster"]`)),
		chromedp.WaitVisible(chromedp.CSS(`#f-peer-cluster`)),
		setSelect(`#f-peer-cluster`, "west"),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="topic-input"]`), topic+kb.Enter),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="topic-chip"]`)))
	// The name's message going shifts the form up: click once it is gone,
	// or the click lands on the box below.
	b.waitFor("name message gone", `document.querySelector('[data-testid="error-name"]') === null`, 15*time.Second)
	b.choose("push", `[data-testid="field-rules.direction-push"]`)
	b.choose("turn rename on", `[data-testid="field-rules.rename_topics"]`)
	b.waitFor("preview of the renamed topic",
		fmt.Sprintf(`!!document.querySelector('[data-testid="preview-pair"][data-source=%s][data-target=%s]')`, strconv.Quote(topic), strconv.Quote("A."+topic)), 15*time.Second)
	if b.evalBool(`document.querySelector("#f-peer-username").checkVisibility()`) {
		t.Error("SASL fields shown for a peer chosen by instance name")
	}
	// Push: east's topics are offered to pick from; the preview says the
	// target is new and shows the source's max.message.bytes.
	b.waitFor("topic offered to pick from", fmt.Sprintf(`!!document.querySelector('datalist#topic-choices option[value=%s]')`, strconv.Quote(topic)), 15*time.Second)
	pair := fmt.Sprintf(`[data-testid="preview-pair"][data-source=%s]`, strconv.Quote(topic))
	if !b.evalBool(fmt.Sprintf(`document.querySelector(%s).dataset.newTarget === "true"`, strconv.Quote(pair))) ||
		!strings.Contains(b.text(pair+` [data-testid="preview-note"]`), "max.message.bytes: source") {
		t.Errorf("preview of %s: %q", topic, b.text(pair))
	}
	if n := b.evalInt(`document.querySelectorAll('[data-testid="constraints"] [data-testid="constraint"]').length`); n != 4 {
		t.Errorf("%d constraints shown, want the original product's 4", n)
	}
	// Bidirectional shows the effective task count live; back to push,
	// without the source header bidirectional turned on.
	b.choose("bidirectional", `[data-testid="field-rules.direction-bidirectional"]`)
	b.run("bidirectional task count", chromedp.WaitVisible(chromedp.CSS(`[data-testid="tasks-effective"]`)))
	if got := b.text(`[data-testid="tasks-effective"]`); got != "2 × 2 = 4 tasks" {
		t.Errorf("effective tasks %q", got)
	}
	b.choose("back to push", `[data-testid="field-rules.direction-push"]`)
	b.run("back to push",
		chromedp.Evaluate[chromedp.Void](`{ const h = document.querySelector('[data-source-header]'); if (h.checked) { h.click(); } }`),
		chromedp.WaitNotVisible(chromedp.CSS(`[data-testid="tasks-effective"]`)))
	b.waitFor("push preview again", `document.querySelectorAll('[data-testid="preview-flow"]').length === 1`, 15*time.Second)
	b.screenshot("create-filled")

	// Start check: every step of both clusters passes.
	b.run("start check",
		chromedp.Click(chromedp.CSS(`[data-testid="start-check"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="check-result"] [data-testid="check-cluster"]`)))
	steps := b.evalInt(`document.querySelectorAll('[data-testid="check-step"]').length`)
	passed := b.evalInt(`document.querySelectorAll('[data-testid="check-step"][data-result="passed"]').length`)
	if steps < 7 || passed != steps { // east: tcp, metadata, permissions; west adds sasl
		t.Errorf("%d of %d check steps passed:\n%s", passed, steps, b.text(`[data-testid="check-result"]`))
	}
	if got := b.text(`[data-testid="check-ok"]`); got == "" {
		t.Error("no success line after the check")
	}
	b.screenshot("create-check-passed")

	// Create now: back to the list with the original product's banner.
	b.run("create now",
		chromedp.Click(chromedp.CSS(`[data-testid="create-now"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="flash-success"]`)))
	if got := b.text(`[data-testid="flash-success"]`); got != "Task "+name+" created successfully" {
		t.Errorf("banner %q", got)
	}
	b.screenshot("smart-connect-created")

	// Data flows: the list (refreshing itself) shows RUNNING and records/s.
	ctx, stop := context.WithCancel(context.Background())
	produced := make(chan error, 1)
	go func() {
		for ctx.Err() == nil {
			if _, err := e2e.Produce(ctx, eastSettings, topic, 1, 300, 64); err != nil && ctx.Err() == nil {
				produced <- err
				return
			}
			time.Sleep(100 * time.Millisecond) // a steady trickle, not a flood
		}
		produced <- nil
	}()
	row := fmt.Sprintf(`[data-testid="task-row"][data-task=%q]`, name)
	b.waitFor("task running with records/s above zero",
		fmt.Sprintf(`(function(){var r=document.querySelector(%s); return !!r && r.dataset.state=="RUNNING" && parseFloat(r.querySelector('[data-testid="task-rate"]').dataset.rate) > 0})()`, q(row)),
		90*time.Second)
	b.screenshot("smart-connect-running")
	if got := b.text(row + ` [data-testid="task-last-action"]`); got[:15] != "Create by admin" {
		t.Errorf("last action %q", got)
	}
	b.noNewErrors("Smart Connect list")

	// While it runs: the list and the create form in Traditional Chinese,
	// then English again.
	walkChinese(b, row)

	// The task page while data flows: status, parameters, partitions,
	// charts; then Restart.
	b.run("open the task page",
		chromedp.Click(chromedp.CSS(row+` [data-testid="task-name"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="task-title"]`)))
	checkTaskPage(b, name, topic, ws.Password)
	b.screenshot("task-page-running")
	b.run("restart",
		chromedp.Click(chromedp.CSS(`[data-testid="action-restart"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="flash-success"]`)))
	if got := b.text(`[data-testid="flash-success"]`); got != "Task "+name+" restarted." {
		t.Errorf("banner after restart %q", got)
	}
	b.waitFor("running again after restart", `(function(){var s=document.querySelector('[data-testid="task-state"]'); var l=document.querySelector('[data-testid="task-last-action"]'); return !!s && s.dataset.state=="RUNNING" && !!l && l.textContent.indexOf("Restart by admin")>=0})()`, 30*time.Second)
	b.screenshot("task-page-restarted")
	b.noNewErrors("task page")

	// The dashboard: one task, running.
	b.run("open the dashboard",
		chromedp.Click(chromedp.CSS(`[data-testid="nav-dashboard"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="dashboard-counters"]`)))
	for id, want := range map[string]string{"count-total": "1", "count-running": "1", "count-paused": "0", "count-failed": "0"} {
		if got := b.text(`[data-testid="` + id + `"] strong`); got != want {
			t.Errorf("dashboard %s = %q, want %s", id, got, want)
		}
	}
	drow := fmt.Sprintf(`[data-testid="dashboard-row"][data-task=%q]`, name)
	if st := b.evalBool(fmt.Sprintf(`(function(){var r=document.querySelector(%s); return !!r && r.dataset.state=="RUNNING"})()`, q(drow))); !st {
		t.Errorf("dashboard has no running row for %s:\n%s", name, b.text(`[data-testid="dashboard-table"]`))
	}
	b.screenshot("dashboard-running")
	stop()
	if err := <-produced; err != nil {
		t.Errorf("background produce: %v", err)
	}

	// Pause from the list (confirmed in the browser's dialog): PAUSED,
	// Resume offered.
	b.run("back to Smart Connect",
		chromedp.Navigate(base+"/instances/east/smart-connect"),
		chromedp.WaitVisible(chromedp.CSS(row)))
	b.run("pause", chromedp.Click(chromedp.CSS(row+` [data-testid="task-pause"]`)))
	b.waitFor("task paused", fmt.Sprintf(`(function(){var r=document.querySelector(%s); return !!r && r.dataset.state=="PAUSED" && !!r.querySelector('[data-testid="task-resume"]')})()`, q(row)), 30*time.Second)
	b.screenshot("smart-connect-paused")

	// The dashboard filtered to paused tasks shows it.
	b.run("filter the dashboard by paused",
		chromedp.Click(chromedp.CSS(`[data-testid="nav-dashboard"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="dashboard-filter"]`)),
		setSelect(`#state`, "paused"),
		chromedp.Click(chromedp.CSS(`[data-testid="filter-submit"]`)))
	// The unfiltered page shows the paused row too: wait for the filtered
	// page itself to have loaded before reading it (reading during the
	// navigation fails with "Cannot find context").
	b.waitFor("the filtered dashboard", `location.search.indexOf("state=paused")>=0 && document.readyState=="complete" && !!document.querySelector('`+drow+`[data-state="PAUSED"]')`, 30*time.Second)
	if got := b.evalInt(`document.querySelectorAll('[data-testid="dashboard-row"]').length`); got != 1 {
		t.Errorf("%d rows for state=paused, want 1", got)
	}
	if got := b.text(drow + ` [data-testid="dashboard-rate"]`); got != "—" {
		t.Errorf("paused task's records/s on the dashboard %q, want —", got)
	}
	if got := b.text(`[data-testid="count-paused"] strong`); got != "1" {
		t.Errorf("dashboard paused counter %q", got)
	}
	if !b.evalBool(`location.search.indexOf("state=paused")>=0 && document.querySelector("#state").value=="paused"`) {
		t.Errorf("filter not kept: %s", b.text(`[data-testid="dashboard-filter"]`))
	}
	b.screenshot("dashboard-paused")

	// Resume from the task page: RUNNING again, Pause offered.
	b.run("open the paused task",
		chromedp.Click(chromedp.CSS(drow+` [data-testid="dashboard-task"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="action-resume"]`)))
	if got := b.evalBool(`document.querySelector('[data-testid="task-state"]').dataset.state=="PAUSED" && !document.querySelector('[data-testid="action-pause"]')`); !got {
		t.Errorf("task page of a paused task: %s", b.text(`[data-testid="task-status"]`))
	}
	b.run("resume",
		chromedp.Click(chromedp.CSS(`[data-testid="action-resume"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="flash-success"]`)))
	if got := b.text(`[data-testid="flash-success"]`); got != "Task "+name+" resumed." {
		t.Errorf("banner after resume %q", got)
	}
	b.waitFor("running after resume", `(function(){var s=document.querySelector('[data-testid="task-state"]'); return !!s && s.dataset.state=="RUNNING" && !!document.querySelector('[data-testid="action-pause"]')})()`, 30*time.Second)
	b.screenshot("task-page-resumed")

	// Delete, from the list.
	b.run("back to Smart Connect again",
		chromedp.Navigate(base+"/instances/east/smart-connect"),
		chromedp.WaitVisible(chromedp.CSS(row+`[data-state="RUNNING"]`)))
	b.run("delete",
		chromedp.Click(chromedp.CSS(row+` [data-testid="task-delete"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="tasks-empty"]`)))
	b.screenshot("smart-connect-deleted")

	b.mu.Lock()
	dialogs := append([]string(nil), b.dialogs...)
	b.mu.Unlock()
	want := []string{"restart", "pause", "resume", "delete"}
	if len(dialogs) != len(want) {
		t.Errorf("confirm dialogs %q, want one for each of %q", dialogs, want)
	}
	b.noNewErrors("end of the walk")
}

// walkChinese switches the list to Traditional Chinese with the layout's
// language switch, checks the original product's words on the Smart Connect list and
// the create-task page, and switches back to English.
func walkChinese(b *browser, row string) {
	t := b.t
	t.Helper()
	b.run("switch to Traditional Chinese",
		chromedp.Click(chromedp.CSS(`a[data-testid="lang-zh-TW"]`)),
		chromedp.WaitVisible(chromedp.CSS(`html[lang="zh-TW"] `+row)))
	body := b.bodyText()
	for _, w := range []string{"創建Smart Connect任務", "Smart Connect任務", "同步方式", "推送"} {
		if !strings.Contains(body, w) {
			t.Errorf("Smart Connect list in zh-TW lacks %q", w)
		}
	}
	if got := b.text(row + ` [data-testid="task-state"]`); got == "Running" {
		t.Errorf("task state not translated: %q", got)
	}
	b.screenshot("zh-TW-smart-connect")
	b.run("open the create form in Chinese",
		chromedp.Click(chromedp.CSS(`[data-testid="create-task"]`)),
		chromedp.WaitVisible(chromedp.CSS(`html[lang="zh-TW"] [data-testid="task-form"]`)))
	body = b.bodyText()
	for _, w := range []string{"創建Smart Connect任務", "開始檢測", "立即創建", "同步方式", "拉取", "推送", "雙向", "重命名Topic", "添加來源header", "同步消費進度",
		"約束與限制", "一個實例最多創建18個Smart Connect任務"} {
		if !strings.Contains(body, w) {
			t.Errorf("create-task page in zh-TW lacks %q", w)
		}
	}
	b.screenshot("zh-TW-create-task")
	b.run("switch back to English",
		chromedp.Click(chromedp.CSS(`a[data-testid="lang-en"]`)),
		chromedp.WaitVisible(chromedp.CSS(`html[lang="en"] [data-testid="task-form"]`)))
	if body := b.bodyText(); !strings.Contains(body, "Start check") || strings.Contains(body, "開始檢測") {
		t.Error("the create-task page is not in English after switching back")
	}
	b.run("back to the list",
		chromedp.Click(chromedp.CSS(`[data-testid="nav-instance-smart-connect"]`)),
		chromedp.WaitVisible(chromedp.CSS(row)))
	b.noNewErrors("pages in Traditional Chinese")
}

// checkTaskPage checks the task page of a running task: state,
// parameters without the peer's password, partitions, and charts uPlot
// actually drew from the sampled series.
func checkTaskPage(b *browser, name, topic, peerPassword string) {
	t := b.t
	t.Helper()
	b.waitFor("task page shows RUNNING", `(function(){var s=document.querySelector('[data-testid="task-state"]'); return !!s && s.dataset.state=="RUNNING"})()`, 15*time.Second)
	if got := b.text(`[data-testid="param-name"]`); got != name {
		t.Errorf("parameter name %q", got)
	}
	if got := b.text(`[data-testid="param-topics"]`); got != topic {
		t.Errorf("parameter topics %q", got)
	}
	if got := b.text(`[data-testid="param-direction"]`); got != "Push" {
		t.Errorf("parameter direction %q", got)
	}
	// The peer is the registered west, with SASL: its password is nowhere
	// in the page, the exported JSON included.
	if strings.Contains(b.html(), peerPassword) {
		t.Error("the task page contains the peer's password")
	}
	if b.evalBool(`!!document.querySelector('[data-testid="param-password"]')`) {
		if got := b.text(`[data-testid="param-password"]`); got != "password set" {
			t.Errorf("password parameter %q", got)
		}
	}
	b.waitFor("partition rows", fmt.Sprintf(`(function(){var r=document.querySelector('[data-testid="partition-row"][data-partition=%s]'); return !!r && parseInt(r.querySelector('[data-testid="partition-next"]').textContent,10) > 0})()`, strconv.Quote(topic+"-0")), 15*time.Second)
	// The row of the test's topic: the flow also copies the heartbeats
	// topics other tests' tasks left on the shared source.
	if got := b.text(fmt.Sprintf(`[data-testid="partition-row"][data-partition=%s] [data-testid="partition-target"]`, strconv.Quote(topic+"-0"))); got != "A."+topic {
		t.Errorf("partition target %q", got)
	}
	// The sampler has a throughput, and uPlot drew the flow's chart: a
	// canvas with a size, not the "no data yet" hint.
	b.waitFor("series with a throughput", fmt.Sprintf(`fetch(%s).then(function(r){return r.json()}).then(function(d){return d.flows.length==1 && d.flows[0].records_per_sec.some(function(v){return v>0})})`,
		strconv.Quote("/tasks/"+name+"/series.json")), 15*time.Second)
	b.waitFor("chart drawn", `(function(){var c=document.querySelector('[data-testid="task-charts"] [data-testid="chart"][data-flow="A->B"] canvas'); return !!c && c.width>0 && c.height>0 && c.getBoundingClientRect().width>0})()`, 15*time.Second)
	if b.evalBool(`!!document.querySelector('[data-testid="task-charts"] .chart-empty')`) {
		t.Error("the charts say there is no data")
	}
}

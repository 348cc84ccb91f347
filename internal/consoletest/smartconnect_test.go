package consoletest

import (
	"context"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/chromedp/chromedp/kb"

	"github.com/kmirror/kmirror/internal/e2e"
	"github.com/kmirror/kmirror/internal/kafkatest"
)

// TestSmartConnectWalk is the seed's flow in a real browser: sign in, add
// two instances, open the first, Smart Connect, create a task (a wrong name
// first), Start check, Create now, see it replicate, pause it, delete it.
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
		chromedp.Click(chromedp.CSS(`[data-testid="field-rules.direction-push"]`)),
		chromedp.SendKeys(chromedp.CSS(`[data-testid="topic-input"]`), topic+kb.Enter),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="topic-chip"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="field-rules.rename_topics"]`)))
	b.waitFor("name message gone", `document.querySelector('[data-testid="error-name"]') === null`, 15*time.Second)
	b.waitFor("preview of the renamed topic",
		fmt.Sprintf(`!!document.querySelector('[data-testid="preview-pair"][data-source=%s][data-target=%s]')`, strconv.Quote(topic), strconv.Quote("A."+topic)), 15*time.Second)
	if b.evalBool(`document.querySelector("#f-peer-username").checkVisibility()`) {
		t.Error("SASL fields shown for a peer chosen by instance name")
	}
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

	// Create now: back to the list with the seed's banner.
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
	stop()
	if err := <-produced; err != nil {
		t.Errorf("background produce: %v", err)
	}
	if got := b.text(row + ` [data-testid="task-last-action"]`); got[:15] != "Create by admin" {
		t.Errorf("last action %q", got)
	}

	// Pause (confirmed in the browser's dialog): PAUSED, Resume offered.
	b.run("pause", chromedp.Click(chromedp.CSS(row+` [data-testid="task-pause"]`)))
	b.waitFor("task paused", fmt.Sprintf(`(function(){var r=document.querySelector(%s); return !!r && r.dataset.state=="PAUSED" && !!r.querySelector('[data-testid="task-resume"]')})()`, q(row)), 30*time.Second)
	b.screenshot("smart-connect-paused")

	// Delete.
	b.run("delete",
		chromedp.Click(chromedp.CSS(row+` [data-testid="task-delete"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="tasks-empty"]`)))
	b.screenshot("smart-connect-deleted")

	b.mu.Lock()
	dialogs := append([]string(nil), b.dialogs...)
	b.mu.Unlock()
	if len(dialogs) != 2 {
		t.Errorf("confirm dialogs %q, want one for pause and one for delete", dialogs)
	}
	for _, e := range b.errors() {
		t.Errorf("browser: %s", e)
	}
}

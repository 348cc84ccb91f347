package consoletest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/e2e"
	"github.com/kmirror/kmirror/internal/kafkatest"
)

// The Switchover page walked in both languages: from the task page, a
// refusal in Traditional Chinese naming the field, then a planned
// switchover of one group started from the form, its checklist followed
// to the end and its report read; the group's consumers then read on the
// target exactly what they had not read on the source.
func TestSwitchoverWalk(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	east, west := kafkatest.Shared(t, 0), kafkatest.Shared(t, 1)
	src, dst := east.Settings(cluster.Plaintext, ""), west.Settings(cluster.Plaintext, "")
	topic := kafkatest.NewTopic(t, east, 2, nil)
	const total, read = 400, 150
	if _, err := e2e.Produce(ctx, src, topic, 2, total, 100); err != nil {
		t.Fatal(err)
	}
	group := topic + "-app"
	before, err := e2e.ConsumeGroup(ctx, src, group, topic, read)
	if err != nil {
		t.Fatal(err)
	}
	base := startConsole(t)
	apiPost(t, base, "/api/v1/clusters", fmt.Sprintf(`{"name":"east","bootstrap_servers":[%q],"security_protocol":"PLAINTEXT"}`, src.BootstrapServers[0]))
	apiPost(t, base, "/api/v1/clusters", fmt.Sprintf(`{"name":"west","bootstrap_servers":[%q],"security_protocol":"PLAINTEXT"}`, dst.BootstrapServers[0]))
	name := "sw-walk"
	apiPost(t, base, "/api/v1/tasks", fmt.Sprintf(`{"name":%q,"type":"kafka-replication","current":{"cluster":"east","alias":"A"},
		"peer":{"alias":"B","config_type":"cluster","cluster":"west"},
		"rules":{"direction":"push","topics":[%q],"tasks":1,"add_source_header":true,"sync_consumer_offsets":true,"replication_factor":1,"start_offset":"earliest"}}`, name, topic))

	b := newBrowser(t, base)
	b.signInAs("admin", adminPassword)
	b.run("open the task page", chromedp.Navigate(base+"/tasks/"+name), chromedp.WaitVisible(chromedp.CSS(`[data-testid="task-switchover"]`)))
	b.run("open its Switchover page", chromedp.Click(chromedp.CSS(`[data-testid="task-switchover"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="switchover-form"]`)))
	if got := b.text(`[data-testid="switchover-title"]`); got != "Switchover: "+name {
		t.Errorf("title %q", got)
	}

	// Refused in zh-TW: no group named. Nothing starts.
	b.switchLang("zh-TW", `[data-testid="switchover-form"]`)
	b.run("submit without groups", chromedp.Click(chromedp.CSS(`[data-testid="switchover-submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="switchover-problem-groups"]`)))
	if got := b.text(`[data-testid="switchover-problem-groups"]`); !strings.Contains(got, "消費組為必填項") {
		t.Errorf("zh-TW refusal says %q", got)
	}
	if n := b.count(`[data-testid="switchover-progress"]`); n != 0 {
		t.Errorf("a refused switchover shows progress (%d)", n)
	}
	b.screenshot("zh-TW-switchover-refused")

	// Started in zh-TW, followed to the end.
	b.run("start the switchover", chromedp.SendKeys(chromedp.CSS(`[data-testid="switchover-groups"]`), group),
		chromedp.Click(chromedp.CSS(`[data-testid="switchover-submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="switchover-progress"]`)))
	b.waitFor("the switchover done", `document.querySelector('[data-testid="switchover-progress"]').dataset.state == "done"`, 2*time.Minute)
	if n := b.count(`[data-testid="switchover-step"][data-state="done"]`); n != 5 {
		t.Errorf("%d of 5 steps done", n)
	}
	if got := b.text(`[data-testid="switchover-state"]`); got != "已完成" {
		t.Errorf("zh-TW state %q", got)
	}
	// A row per partition the group has an offset on, a note for the
	// others.
	rows, exact, notes := b.count(`[data-testid="switchover-row"]`), b.count(`[data-testid="switchover-row"][data-exact="true"]`), b.count(`[data-testid="switchover-note"]`)
	if rows != 2 || exact < 1 || exact < rows && notes < 1 {
		t.Errorf("report: %d rows, %d exact, %d notes; want a row per partition, those the group had no offset on in a note", rows, exact, notes)
	}
	b.screenshot("zh-TW-switchover-done")
	b.switchLang("en", `[data-testid="switchover-progress"][data-state="done"]`)
	if got := b.text(`[data-testid="switchover-state"]`); got != "done" {
		t.Errorf("en state %q", got)
	}
	if n := b.count(`[data-testid="switchover-form"]`); n != 1 {
		t.Errorf("the form is not offered again once the switchover ended (%d)", n)
	}
	b.screenshot("switchover-done")
	if n := b.axeCheck(axeSource(t), "en switchover done"); n > 0 {
		t.Errorf("%d accessibility violations on the done switchover", n)
	}
	b.noNewErrors("switchover")
	// The task says it was switched over, beside the link.
	b.run("back to the task page", chromedp.Navigate(base+"/tasks/"+name), chromedp.WaitVisible(chromedp.CSS(`[data-testid="task-switchover-state"]`)))
	if got := b.text(`[data-testid="task-switchover-state"]`); !strings.Contains(got, "(A->B)") || !strings.Contains(got, "done") {
		t.Errorf("the task page says %q of its switchover", got)
	}

	after, err := e2e.ConsumeGroup(ctx, dst, group, topic, total-read)
	if err != nil {
		t.Fatal(err)
	}
	all := slices.Concat(before, after)
	slices.Sort(all)
	if n := len(slices.Compact(all)); n != total {
		t.Errorf("the group read %d distinct records over both sides, want %d (%d on the source, %d on the target)", n, total, len(before), len(after))
	}
}

package consoletest

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kmirror/kmirror/internal/connect"
	"github.com/kmirror/kmirror/internal/e2e"
	"github.com/kmirror/kmirror/internal/kafkatest"
)

// The MirrorMaker 2 walk: a MirrorMaker 2 connector deployed by hand on a
// real Connect cluster is adopted from its Connect cluster's MirrorMaker 2
// page and goes on copying without copying anything twice; then, in
// Traditional Chinese, one flow of an mm2.properties is imported from the
// dashboard as a task that copies every record.
func TestMM2AdoptAndImportWalk(t *testing.T) {
	src := axeSource(t)
	west, east := kafkatest.Shared(t, 0), kafkatest.Shared(t, 1)
	cc := kafkatest.LazyConnect(t, "console", west)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	es, ws := east.Settings("PLAINTEXT", ""), west.Settings("PLAINTEXT", "")
	topic := kafkatest.NewTopic(t, east, 2, nil)
	suffix := strings.ToLower(topic[len(topic)-6:])
	srcAlias, dstAlias := "ME"+suffix, "MW"+suffix
	mm2 := "hand-mm2-" + suffix

	// MirrorMaker 2 as its users deploy it, straight on Connect.
	client, err := connect.New(connect.Config{URLs: cc.URLs(), Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := client.Create(ctx, mm2, kafkatest.HandMM2Source(east.Bootstrap("PLAINTEXT"), west.Bootstrap("PLAINTEXT"),
		srcAlias, dstAlias, strings.ReplaceAll(topic, ".", `\.`), 1), connect.StateRunning); err != nil {
		t.Fatalf("deploy the MM2 connector: %v", err)
	}
	t.Cleanup(func() { _ = client.Delete(context.Background(), mm2) })
	const n, m = 200, 100
	target := srcAlias + "." + topic
	if _, err := e2e.Produce(ctx, es, topic, 2, n, 100); err != nil {
		t.Fatal(err)
	}
	if _, err := e2e.WaitFor(ctx, ws, target, n, nil); err != nil {
		t.Fatalf("MM2 copy: %v", err)
	}

	base := startConsole(t)
	apiPost(t, base, "/api/v1/clusters", fmt.Sprintf(`{"name":"east","bootstrap_servers":[%q]}`, east.Bootstrap("PLAINTEXT")))
	apiPost(t, base, "/api/v1/clusters", fmt.Sprintf(`{"name":"west","bootstrap_servers":[%q]}`, west.Bootstrap("PLAINTEXT")))
	urls, _ := json.Marshal(cc.URLs())
	apiPost(t, base, "/api/v1/connect-clusters", fmt.Sprintf(`{"name":"wc","urls":%s,"kafka_cluster":"west"}`, urls))
	b := newBrowser(t, base)
	b.signInAs("admin", adminPassword)

	// 1. Adopt: from the Connect clusters list to its MirrorMaker 2 page.
	flow := fmt.Sprintf(`[data-testid="mm2-flow"][data-source-connector=%q]`, mm2)
	b.run("open the MirrorMaker 2 page",
		chromedp.Navigate(base+"/connect-clusters"),
		chromedp.WaitVisible(chromedp.CSS(`[data-connect-cluster="wc"] [data-testid="connect-cluster-mm2"]`)),
		chromedp.Click(chromedp.CSS(`[data-connect-cluster="wc"] [data-testid="connect-cluster-mm2"]`)),
		chromedp.WaitVisible(chromedp.CSS(flow)))
	if got := b.text(`h1`); got != "MirrorMaker 2 on wc" {
		t.Errorf("MirrorMaker 2 page title %q", got)
	}
	if got := b.text(flow + ` [data-testid="mm2-state"]`); got != "RUNNING" {
		t.Errorf("MM2 connector state %q", got)
	}
	b.screenshot("mm2-page")
	b.axeCheck(src, "en /connect-clusters/wc/mm2")
	name := "adopted-" + suffix
	b.run("adopt the flow",
		chromedp.SendKeys(chromedp.CSS(flow+` [data-testid="adopt-name"]`), name),
		chromedp.Click(chromedp.CSS(flow+` [data-testid="adopt-submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="flash-success"]`)))
	if got := b.text(`[data-testid="flash-success"]`); !strings.Contains(got, "Task "+name+" adopted") {
		t.Errorf("banner %q", got)
	}
	if !b.evalBool(fmt.Sprintf(`location.pathname === %q`, "/tasks/"+name)) {
		t.Errorf("after adopting the page is %s, want the task's", b.evalString(`location.pathname`))
	}
	b.noNewErrors("adoption")
	// It goes on from MirrorMaker's offsets: exactly n+m records, in order.
	if _, err := e2e.Produce(ctx, es, topic, 2, m, 100); err != nil {
		t.Fatal(err)
	}
	if _, err := e2e.WaitFor(ctx, ws, target, n+m, nil); err != nil {
		t.Fatalf("after adoption: %v", err)
	}
	time.Sleep(3 * time.Second) // a copy twice would arrive meanwhile; counted below
	if got, err := e2e.Count(ctx, ws, target); err != nil || got != n+m {
		t.Fatalf("target holds %d records (%v), want %d: nothing copied twice", got, err, n+m)
	}
	if rep, err := e2e.Verify(ctx, es, topic, ws, target, e2e.VerifyOptions{}); err != nil || !rep.OK() {
		t.Fatalf("the copy across the console adoption (%v): %s", err, rep)
	}

	// 2. Import, in Traditional Chinese: from the dashboard.
	topic2 := kafkatest.NewTopic(t, east, 1, nil)
	const n2 = 150
	if _, err := e2e.Produce(ctx, es, topic2, 1, n2, 50); err != nil {
		t.Fatal(err)
	}
	a2, b2 := "IE"+suffix, "IW"+suffix
	props := strings.Join([]string{
		"clusters = " + a2 + ", " + b2,
		a2 + ".bootstrap.servers = " + east.Bootstrap("PLAINTEXT"),
		b2 + ".bootstrap.servers = " + west.Bootstrap("PLAINTEXT"),
		a2 + "->" + b2 + ".enabled = true",
		a2 + "->" + b2 + ".topics = " + strings.ReplaceAll(topic2, ".", `\.`),
		"replication.factor = 1",
		// kmirror's offset sync both emits checkpoints and syncs groups.
		"sync.group.offsets.enabled = true",
	}, "\n")
	b.run("open the dashboard", chromedp.Navigate(base+"/dashboard"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="import-mm2-link"]`)))
	b.switchLang("zh-TW", `[data-testid="import-mm2-link"]`)
	b.run("open the import",
		chromedp.Click(chromedp.CSS(`[data-testid="import-mm2-link"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="import-mm2-form"]`)))
	if got := b.text(`h1`); got != "從MirrorMaker 2導入（mm2.properties）" {
		t.Errorf("zh-TW import page title %q", got)
	}
	b.axeCheck(src, "zh-TW /dashboard/import-mm2")
	// A flow the file does not enable: refused by field, in Chinese words
	// around the service's.
	b.run("import a flow the file does not enable",
		chromedp.SetValue(chromedp.CSS(`#mm2-properties`), props),
		chromedp.SendKeys(chromedp.CSS(`#mm2-flow`), b2+"->"+a2),
		chromedp.SendKeys(chromedp.CSS(`#mm2-name`), "imported-"+suffix),
		chromedp.Click(chromedp.CSS(`[data-testid="import-mm2-submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="error-flow"]`)))
	if got := b.text(`[data-testid="error-flow"]`); !strings.Contains(got, a2+"->"+b2) {
		t.Errorf("flow message %q, want it to name the file's flow", got)
	}
	b.screenshot("zh-TW-import-mm2-refused")
	// This MirrorMaker never ran: its offsets topic is not there, and an
	// import that would copy everything again is refused on start_over,
	// naming the topic, until the box is ticked.
	b.run("import the file's flow",
		clearValue(`#mm2-flow`),
		chromedp.SendKeys(chromedp.CSS(`#mm2-flow`), a2+"->"+b2),
		chromedp.Click(chromedp.CSS(`[data-testid="import-mm2-submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="error-start_over"]`)))
	if got := b.text(`[data-testid="error-start_over"]`); !strings.Contains(got, "mm2-offsets."+a2+".internal") || !strings.Contains(got, "從頭開始") {
		t.Errorf("start_over message %q, want the offsets topic named, in Chinese", got)
	}
	b.run("import starting over",
		chromedp.Click(chromedp.CSS(`[data-testid="import-mm2-start-over"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="import-mm2-submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="flash-success"]`)))
	if got := b.text(`[data-testid="flash-success"]`); !strings.Contains(got, "imported-"+suffix) || !strings.Contains(got, "已導入") {
		t.Errorf("zh-TW banner %q", got)
	}
	b.noNewErrors("import")
	if _, err := e2e.WaitFor(ctx, ws, a2+"."+topic2, n2, nil); err != nil {
		t.Fatalf("imported task's copy: %v", err)
	}
	if rep, err := e2e.Verify(ctx, es, topic2, ws, a2+"."+topic2, e2e.VerifyOptions{}); err != nil || !rep.OK() {
		t.Fatalf("the imported task's copy (%v): %s", err, rep)
	}
	b.switchLang("en", `h1`)
}

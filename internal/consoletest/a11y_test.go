package consoletest

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/kmirror/kmirror/internal/kafkatest"
)

// axeVersion is the axe-core release the accessibility checks run; .ci/run
// installs it from npm into the cache, outside the repository.
const axeVersion = "4.14.1"

// axeSource reads axe-core, or fails the test: .ci/run installs it, so in
// CI it is never missing, and a check that silently skips proves nothing.
func axeSource(t *testing.T) string {
	t.Helper()
	path := os.Getenv("KMIRROR_AXE")
	if path == "" {
		cache, err := os.UserCacheDir()
		if err != nil {
			t.Fatal(err)
		}
		path = filepath.Join(cache, "kmirror", "axe-core-"+axeVersion, "node_modules", "axe-core", "axe.min.js")
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("axe-core not found (%v): install it with\n  npm install --prefix %s axe-core@%s\n(.ci/run does), or set KMIRROR_AXE to axe.min.js",
			err, filepath.Join(filepath.Dir(path), "..", ".."), axeVersion)
	}
	return string(b)
}

// axeViolation is what axe reports of one broken rule.
type axeViolation struct {
	ID    string `json:"id"`
	Help  string `json:"help"`
	Nodes []struct {
		Target  []any  `json:"target"`
		Summary string `json:"failureSummary"`
	} `json:"nodes"`
}

// axeRun checks the page the browser shows against WCAG 2.1 A and AA with
// axe-core (injected through DevTools, which the page's CSP does not bind)
// and returns the violations.
func (b *browser) axeRun(src string) []axeViolation {
	b.t.Helper()
	if _, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](`typeof axe === "object" || (function(){`+src+`; return true})()`)); err != nil {
		b.t.Fatalf("inject axe-core: %v", err)
	}
	out, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](
		`axe.run(document, {runOnly: {type: "tag", values: ["wcag2a", "wcag2aa", "wcag21a", "wcag21aa"]}, resultTypes: ["violations"]}).then(function (r) { return JSON.stringify(r.violations) })`,
		chromedp.EvalAwaitPromise))
	if err != nil {
		b.t.Fatalf("run axe-core: %v", err)
	}
	var v []axeViolation
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		b.t.Fatalf("axe-core answer: %v", err)
	}
	return v
}

// axeCheck runs axe-core on the page the browser shows and fails the test
// (without stopping it) with each violation, where naming the page; it
// returns how many rules were broken.
func (b *browser) axeCheck(src, where string) int {
	b.t.Helper()
	vs := b.axeRun(src)
	for _, v := range vs {
		var nodes []string
		for _, n := range v.Nodes {
			nodes = append(nodes, fmt.Sprint(n.Target)+": "+strings.ReplaceAll(n.Summary, "\n", " "))
		}
		b.t.Errorf("%s: %s (%s), %d element(s):\n  %s", where, v.ID, v.Help, len(v.Nodes), strings.Join(nodes, "\n  "))
	}
	return len(vs)
}

// TestEveryPageIsAccessible runs axe-core (WCAG 2.1 A and AA) on every
// console page, in both languages: each must have no violation.
func TestEveryPageIsAccessible(t *testing.T) {
	src := axeSource(t)
	east, west := kafkatest.Shared(t, 0), kafkatest.Shared(t, 1)
	topic := kafkatest.NewTopic(t, east, 1, nil)
	base := startConsole(t)

	// Instances and a task through the API, so every page has content.
	api := func(path string, body any) {
		t.Helper()
		raw, _ := json.Marshal(body)
		req, _ := http.NewRequest(http.MethodPost, base+"/api/v1"+path, bytes.NewReader(raw))
		req.Header.Set("Authorization", "Bearer browser-test-token")
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusCreated {
			t.Fatalf("POST %s: %d", path, resp.StatusCode)
		}
	}
	api("/clusters", map[string]any{"name": "east", "bootstrap_servers": []string{east.Bootstrap("PLAINTEXT")}})
	api("/clusters", map[string]any{"name": "west", "bootstrap_servers": []string{west.Bootstrap("PLAINTEXT")}})
	const task = "a11y-task"
	api("/tasks", map[string]any{"name": task, "current": map[string]any{"cluster": "east", "alias": "A"},
		"peer":  map[string]any{"alias": "B", "config_type": "cluster", "cluster": "west"},
		"rules": map[string]any{"direction": "push", "topics": []string{topic}, "rename_topics": true}})

	b := newBrowser(t, base)
	pages := []string{
		"/instances", "/instances/east", "/instances/east/smart-connect", "/instances/east/smart-connect/new",
		"/instances/east/smart-connect/" + task + "/delete", "/dashboard", "/dashboard/import", "/dashboard/import-mm2", "/tasks/" + task, "/tasks/" + task + "/switchover", "/connect-clusters",
		"/users", "/tokens", "/audit", "/destination-policy", "/account",
		"/no-such-page",
	}
	found := 0
	for _, lang := range []string{"en", "zh-TW"} {
		// Signed out: the sign-in page, in the language chosen there.
		b.run("sign-in page "+lang, chromedp.Navigate(base+"/lang?to="+lang+"&next=/signin"),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="signin-form"]`)))
		visited := []string{"/signin"}
		report := func(path string) { found += b.axeCheck(src, lang+" "+path) }
		report("/signin")
		b.run("sign in "+lang,
			chromedp.SendKeys(chromedp.CSS(`#user`), "admin"),
			chromedp.SendKeys(chromedp.CSS(`#password`), adminPassword),
			chromedp.Click(chromedp.CSS(`[data-testid="signin-submit"]`)),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="add-cluster-form"]`)))
		for _, path := range pages {
			b.run("open "+path, chromedp.Navigate(base+path), chromedp.WaitReady(chromedp.CSS(`main`)))
			if lang == "zh-TW" {
				b.waitFor("zh-TW page", `document.documentElement.lang == "zh-TW"`, 10*time.Second)
			}
			// Polled parts (health, rows) settle first: they are checked too.
			b.waitFor("page settled", `!document.querySelector(".htmx-request")`, 10*time.Second)
			report(path)
			visited = append(visited, path)
			if lang == "zh-TW" && strings.HasSuffix(path, "/new") {
				// The script's topic box takes its words from the page.
				ph, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.querySelector('[data-testid="topic-input"]').placeholder`))
				if err != nil || ph != "輸入Topic名稱後按Enter" {
					t.Errorf("zh-TW topic input placeholder %q (%v)", ph, err)
				}
			}
		}
		// A refused form shows its messages: checked as a user sees them.
		b.run("refused task form "+lang, chromedp.Navigate(base+"/instances/east/smart-connect/new"),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="create-now"]`)),
			chromedp.Click(chromedp.CSS(`[data-testid="create-now"]`)),
			chromedp.WaitVisible(chromedp.CSS(`.error`)))
		report("/instances/east/smart-connect (refused)")
		b.noNewErrors(lang + " pages")
		b.run("sign out "+lang, chromedp.Evaluate[chromedp.Void](`document.querySelector('[data-testid="signout"]') && document.querySelector('[data-testid="signout"]').click()`),
			chromedp.WaitVisible(chromedp.CSS(`[data-testid="signin-form"]`)))
		t.Logf("%s: %d pages checked", lang, len(visited)+1)
	}
	if found > 0 {
		b.screenshot("a11y-violations")
	}
}

package consoletest

import (
	"context"
	"fmt"
	"log/slog"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/kmirror/kmirror/internal/account"
	"github.com/kmirror/kmirror/internal/embeddedengine"
	"github.com/kmirror/kmirror/internal/engine"
	"github.com/kmirror/kmirror/internal/history"
	"github.com/kmirror/kmirror/internal/kafkatest"
	"github.com/kmirror/kmirror/internal/replicator"
	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/internal/service/servicetest"
	"github.com/kmirror/kmirror/internal/switchover"
	"github.com/kmirror/kmirror/web"
)

func TestMain(m *testing.M) { kafkatest.Main(m, 2) }

const adminPassword = "browser-admin-password"

// startConsole runs kmirror's console, API and engine in-process, wired as
// `kmirror serve` wires them, on a fresh data directory and a random
// loopback port, and returns its base URL.
func startConsole(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	dir, db, box := servicetest.OpenStore(t, "")
	tl := &testLog{t: t}
	// Registered first so it runs last: goroutines still logging after the
	// test must not call t.Log.
	t.Cleanup(tl.stop)
	log := slog.New(slog.NewTextHandler(tl, &slog.HandlerOptions{Level: slog.LevelInfo}))
	// A short refresh picks up the test's topic quickly.
	eng := embeddedengine.New(replicator.Options{RefreshInterval: 2 * time.Second}, log)
	t.Cleanup(eng.Close)
	// The Connect engine too, as serve wires it: it does nothing until a
	// task names a Connect cluster.
	svc, onConnect, err := service.NewWithConnect(service.Deps{Clusters: db, Users: db, Secrets: box, TaskStore: db, Runner: eng,
		Logger: log, ConnectClusters: db, Tokens: db, Audit: db, Policies: db, Switchovers: db,
		SwitchoverOptions: switchover.Options{Quiet: 2 * time.Second}, SwitchoverTick: 250 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(onConnect.Close)
	// Switchovers go on in the background, as serve runs them.
	swCtx, stopSwitchovers := context.WithCancel(ctx)
	swDone := make(chan struct{})
	go func() { defer close(swDone); _ = svc.RunSwitchovers(swCtx) }()
	t.Cleanup(func() { stopSwitchovers(); <-swDone })
	if _, err := account.EnsureAdmin(ctx, db, adminPassword); err != nil {
		t.Fatal(err)
	}
	// The task page's charts: sampled as serve samples them, but every
	// second so a few seconds of data make a line.
	hist := history.New(engine.Union(eng, onConnect), time.Second, 0)
	sampling, stopSampling := context.WithCancel(ctx)
	sampled := make(chan struct{})
	go func() { defer close(sampled); _ = hist.Run(sampling) }()
	t.Cleanup(func() { stopSampling(); <-sampled })
	srv, err := web.New(web.Deps{Service: svc, DataDir: dir, APIToken: "browser-test-token", Logger: log, Ping: db.Ping, History: hist})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	return ts.URL
}

// testLog sends the server's log to the test's, until the test ends.
type testLog struct {
	mu   sync.Mutex
	t    *testing.T
	done bool
}

func (l *testLog) stop() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.done = true
}

func (l *testLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if !l.done {
		l.t.Log(strings.TrimRight(string(p), "\n"))
	}
	return len(p), nil
}

// chromiumPath finds Chromium or fails the test: a browser test that
// silently skips proves nothing.
func chromiumPath(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("KMIRROR_CHROMIUM"); p != "" {
		return p
	}
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome", "google-chrome-stable"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Fatal("Chromium not found: install it (Debian: apt-get install -y chromium; .ci/run does) or set KMIRROR_CHROMIUM to its path")
	return ""
}

// browser is one headless Chromium tab whose confirm dialogs are accepted
// and whose JavaScript errors are collected.
type browser struct {
	t    *testing.T
	ctx  context.Context
	base string
	shot int

	mu       sync.Mutex
	jsErrs   []string
	errsSeen int // jsErrs already reported by noNewErrors
	dialogs  []string
}

func newBrowser(t *testing.T, base string) *browser {
	t.Helper()
	opts := []chromedp.ExecAllocatorOption{
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.Flag("headless", true),
		chromedp.Flag("no-sandbox", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("no-first-run", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1280, 1000),
	}
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(), opts...)
	ctx, cancelTab := chromedp.NewContext(actx)
	t.Cleanup(func() { cancelTab(); cancelAlloc() })
	b := &browser{t: t, ctx: ctx, base: base}

	// Subscribing starts Chromium and opens the tab.
	dialogs := chromedp.Events(ctx, page.JavascriptDialogOpening)
	exceptions := chromedp.Events(ctx, runtime.ExceptionThrown)
	console := chromedp.Events(ctx, runtime.ConsoleAPICalled)
	go func() {
		for ev, err := range dialogs {
			if err != nil {
				return
			}
			b.mu.Lock()
			b.dialogs = append(b.dialogs, ev.Message)
			b.mu.Unlock()
			// The dialog holds the page, and the click that opened it,
			// until it is answered: a user pressing OK.
			_, _ = chromedp.Call(ctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
		}
	}()
	go func() {
		for ev, err := range exceptions {
			if err != nil {
				return
			}
			b.addError((&chromedp.ExceptionError{ExceptionDetails: ev.ExceptionDetails}).Error())
		}
	}()
	go func() {
		for ev, err := range console {
			if err != nil {
				return
			}
			if string(ev.Type) == "error" {
				var parts []string
				for _, a := range ev.Args {
					parts = append(parts, a.Value.String())
				}
				b.addError("console.error: " + strings.Join(parts, " "))
			}
		}
	}()
	if err := chromedp.Do(ctx, chromedp.Navigate("about:blank")); err != nil {
		t.Fatalf("start Chromium: %v", err)
	}
	return b
}

func (b *browser) addError(s string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.jsErrs = append(b.jsErrs, s)
}

// run runs actions in order, failing the test with what was being done
// (and a screenshot of where it stopped).
func (b *browser) run(what string, actions ...chromedp.Action[chromedp.Void]) {
	b.t.Helper()
	ctx, cancel := context.WithTimeout(b.ctx, time.Minute)
	defer cancel()
	if err := chromedp.Do(ctx, actions...); err != nil {
		b.screenshot("failed-" + strings.ReplaceAll(what, " ", "-"))
		b.t.Fatalf("%s: %v", what, err)
	}
}

// choose clicks a radio button or checkbox once, when the form has
// settled, and fails unless it is then checked (not at all if it is
// already). The form moves while it is filled (a validation answer adds
// or removes a message above the field), so a click made while an answer
// is on its way could land where the element was a moment before.
func (b *browser) choose(what, selector string) {
	b.t.Helper()
	b.setChecked(what, selector, true)
}

// unchoose clicks a checkbox once to uncheck it, as choose checks one.
func (b *browser) unchoose(what, selector string) {
	b.t.Helper()
	b.setChecked(what, selector, false)
}

func (b *browser) setChecked(what, selector string, want bool) {
	b.t.Helper()
	checked := fmt.Sprintf(`(function(){var e=document.querySelector(%s); return !!e && e.checked === %t})()`, strconv.Quote(selector), want)
	if b.evalBool(checked) {
		return // a click would undo it
	}
	b.settled(what)
	b.run(what, chromedp.Click(chromedp.CSS(selector)))
	b.waitFor(what, checked, 5*time.Second)
}

// settled waits until no htmx request of the page is in flight (htmx marks
// the element that sent one with htmx-request until its answer is
// swapped in), seen twice 100 ms apart.
func (b *browser) settled(what string) {
	b.t.Helper()
	const idle = `document.querySelector('.htmx-request') === null`
	deadline := time.Now().Add(15 * time.Second)
	for quiet := 0; quiet < 2; time.Sleep(100 * time.Millisecond) {
		if b.evalBool(idle) {
			quiet++
			continue
		}
		quiet = 0
		if time.Now().After(deadline) {
			b.screenshot("unsettled-" + strings.ReplaceAll(what, " ", "-"))
			b.t.Fatalf("%s: an htmx request still in flight after 15 s", what)
		}
	}
}

// screenshot saves the whole page as test-output/browser/NN-name.png.
func (b *browser) screenshot(name string) {
	b.t.Helper()
	png, err := chromedp.Run(b.ctx, chromedp.FullScreenshot(100))
	if err != nil {
		b.t.Logf("screenshot %s: %v", name, err)
		return
	}
	b.shot++
	dir := filepath.Join(repoRoot(b.t), "test-output", "browser")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.t.Fatal(err)
	}
	path := filepath.Join(dir, fmt.Sprintf("%02d-%s.png", b.shot, name))
	if err := os.WriteFile(path, png, 0o644); err != nil {
		b.t.Fatal(err)
	}
	b.t.Logf("screenshot %s", path)
}

// text is the trimmed text of the first element matching the CSS selector,
// waiting (up to 30 s) for one. It is read in the page in one step: HTMX
// may swap the element between a DevTools node lookup and its read (ci68:
// "No node with given id found" right after a form's refusal arrived).
func (b *browser) text(sel string) string {
	b.t.Helper()
	const missing = "\x00missing"
	read := fmt.Sprintf(`(function(){var e=document.querySelector(%s); return e ? e.innerText : %q})()`, q(sel), missing)
	deadline := time.Now().Add(30 * time.Second)
	for {
		s, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](read))
		if err != nil {
			b.t.Fatalf("read %s: %v", sel, err)
		}
		if s != missing {
			return strings.TrimSpace(s)
		}
		if time.Now().After(deadline) {
			b.t.Fatalf("read %s: no such element after 30 s", sel)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// evalInt and evalBool run a JavaScript expression in the page (DevTools
// is not bound by the page's CSP).
func (b *browser) evalInt(expr string) int {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[int](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

func (b *browser) evalBool(expr string) bool {
	b.t.Helper()
	v, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](expr))
	if err != nil {
		b.t.Fatalf("evaluate %s: %v", expr, err)
	}
	return v
}

// setSelect chooses an option and fires change, as a user's pick does.
func setSelect(sel, value string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(
		`(function(){var e=document.querySelector(%s); e.value=%s; e.dispatchEvent(new Event("change",{bubbles:true}))})()`,
		strconv.Quote(sel), strconv.Quote(value)))
}

// clearValue empties a text field the way select-all and delete would,
// without events: the change comes when the user types and leaves.
func clearValue(sel string) chromedp.Action[chromedp.Void] {
	return chromedp.Evaluate[chromedp.Void](fmt.Sprintf(`(function(){document.querySelector(%s).value=""})()`, strconv.Quote(sel)))
}

// waitFor polls cond (a JavaScript boolean expression, or a promise of
// one) until it holds.
func (b *browser) waitFor(what, cond string, timeout time.Duration) {
	b.t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, err := chromedp.Run(b.ctx, chromedp.Evaluate[bool](cond, chromedp.EvalAwaitPromise))
		if err == nil && ok {
			return
		}
		if time.Now().After(deadline) {
			b.screenshot("timeout-" + strings.ReplaceAll(what, " ", "-"))
			b.t.Fatalf("%s: not true after %s (%v): %s", what, timeout, err, cond)
		}
		time.Sleep(200 * time.Millisecond) // polling interval, not a wait for an event
	}
}

// noNewErrors fails the test with the JavaScript exceptions and console
// errors since the last call, naming the page they came from.
func (b *browser) noNewErrors(where string) {
	b.t.Helper()
	b.mu.Lock()
	errs := b.jsErrs[b.errsSeen:]
	b.errsSeen = len(b.jsErrs)
	b.mu.Unlock()
	for _, e := range errs {
		b.t.Errorf("browser, %s: %s", where, e)
	}
}

// bodyText is the text of the whole page, hidden parts included.
func (b *browser) bodyText() string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.body.textContent`))
	if err != nil {
		b.t.Fatalf("read the page: %v", err)
	}
	return s
}

// html is the page's whole markup as the browser holds it now.
func (b *browser) html() string {
	b.t.Helper()
	s, err := chromedp.Run(b.ctx, chromedp.Evaluate[string](`document.documentElement.outerHTML`))
	if err != nil {
		b.t.Fatalf("read the page: %v", err)
	}
	return s
}

func repoRoot(t *testing.T) string {
	t.Helper()
	dir, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			t.Fatal("no go.mod above the test's directory")
		}
		dir = parent
	}
}

// q quotes a CSS selector for use inside JavaScript.
func q(sel string) string { return strconv.Quote(sel) }

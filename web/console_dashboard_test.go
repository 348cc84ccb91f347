package web_test

import (
	"errors"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/PuerkitoBio/goquery"
)

func dashboardTasks(p page) []string {
	var out []string
	p.testid("dashboard-row").Each(func(_ int, s *goquery.Selection) {
		out = append(out, s.AttrOr("data-task", ""))
	})
	return out
}

func TestDashboardCountsFailedFirstAndFilters(t *testing.T) {
	e := newConsoleEnv(t)
	e.createTask(taskJSON("alpha-push", nil))
	e.createTask(taskJSON("beta-pull", func(m map[string]any) {
		sub(m, "rules")["direction"] = "pull"
		sub(m, "rules")["topics"] = []string{"payments"}
	}))
	e.runner.FailStart = errors.New("boom")
	e.createTask(taskJSON("zeta-failed", func(m map[string]any) { sub(m, "rules")["topics"] = []string{"audit"} }))
	e.runner.FailStart = nil
	if code, _, out := e.api(http.MethodPost, "/api/v1/tasks/beta-pull/pause", apiToken, ""); code != http.StatusOK {
		t.Fatalf("pause: %d %v", code, out)
	}

	p := e.get(e.client, "/dashboard")
	if p.status != http.StatusOK || !p.testid("nav-dashboard").HasClass("active") {
		t.Fatalf("status %d, nav marked %v", p.status, p.testid("nav-dashboard").HasClass("active"))
	}
	for id, want := range map[string]string{"count-total": "3", "count-running": "1", "count-paused": "1", "count-failed": "1"} {
		if got := p.testid(id).Find("strong").Text(); got != want {
			t.Errorf("%s = %s, want %s", id, got, want)
		}
	}
	if got := strings.Join(dashboardTasks(p), ","); got != "zeta-failed,alpha-push,beta-pull" {
		t.Errorf("order %s, want the failed task first, then by name", got)
	}
	if got := p.testid("dashboard-reason").Text(); !strings.Contains(got, "boom") {
		t.Errorf("reason %q", got)
	}

	// GET parameters: the filter works without JavaScript.
	for query, want := range map[string]string{
		"state=paused":       "beta-pull",
		"state=running":      "alpha-push",
		"q=ALPHA":            "alpha-push",
		"q=a&state=failed":   "zeta-failed",
		"q=nothing-like-it":  "",
		"state=bogus&q=beta": "beta-pull",
	} {
		p := e.get(e.client, "/dashboard?"+query)
		if got := strings.Join(dashboardTasks(p), ","); got != want {
			t.Errorf("%s: %q, want %q", query, got, want)
		}
		if want == "" && p.testid("dashboard-empty").Length() != 1 {
			t.Errorf("%s: no empty notice", query)
		}
	}
	if v, _ := e.get(e.client, "/dashboard?q=beta").doc.Find("#q").Attr("value"); v != "beta" {
		t.Errorf("filter not kept in the form: %q", v)
	}
}

// A paused task's last sampled rate is not its throughput: the dashboard
// shows "—" for it, as the Smart Connect list does.
func TestDashboardRateOnlyForRunningTasks(t *testing.T) {
	e := newConsoleEnv(t)
	e.createTask(taskJSON("orders-dr", nil))
	t0 := time.Now().Add(-time.Minute).Truncate(time.Second)
	e.sampler.Sample(t0)
	e.sampler.Sample(t0.Add(5 * time.Second))
	if got := e.get(e.client, "/dashboard").testid("dashboard-rate").Text(); got != "0.0" {
		t.Errorf("running task's rate %q, want 0.0", got)
	}
	if code, _, out := e.api(http.MethodPost, "/api/v1/tasks/orders-dr/pause", apiToken, ""); code != http.StatusOK {
		t.Fatalf("pause: %d %v", code, out)
	}
	if got := e.get(e.client, "/dashboard").testid("dashboard-rate").Text(); got != "—" {
		t.Errorf("paused task's rate %q, want —", got)
	}
}

func TestImportTaskFromJSON(t *testing.T) {
	e := newConsoleEnv(t)
	p := e.get(e.client, "/dashboard/import")
	if p.status != http.StatusOK || p.testid("import-form").Length() != 1 {
		t.Fatalf("import page: %d", p.status)
	}

	// Invalid JSON: one message.
	r := e.post(p, "/dashboard/import", url.Values{"task_json": {`{"name": "x",`}})
	if r.status != http.StatusUnprocessableEntity || !strings.Contains(r.testid("import-error").Text(), "JSON") {
		t.Errorf("bad JSON: %d %q", r.status, r.testid("import-error").Text())
	}
	// A broken rule: problems by field, the JSON kept.
	bad := taskJSON("orders-dr", func(m map[string]any) { sub(m, "current")["alias"] = "B" })
	r = e.post(p, "/dashboard/import", url.Values{"task_json": {bad}})
	if r.status != http.StatusUnprocessableEntity || r.doc.Find(`[data-testid="import-problem"][data-field="peer.alias"]`).Length() == 0 {
		t.Errorf("same aliases: %d, problems %q", r.status, r.testid("import-problems").Text())
	}
	// The JSON is kept, but never the password in it.
	if want := strings.Replace(bad, `"password":"`+peerPassword+`"`, `"password":""`, 1); r.doc.Find("#task_json").Text() != want {
		t.Errorf("the pasted JSON was not kept, password blanked:\n got %s\nwant %s", r.doc.Find("#task_json").Text(), want)
	}
	if strings.Contains(r.body, peerPassword) || r.testid("import-password-removed").Length() != 1 {
		t.Error("the refused page echoes the pasted password, or does not ask for it again")
	}
	// Broken JSON with a password in it, any spelling of the key.
	for _, raw := range []string{`{"peer": {"password": "` + peerPassword + `",`, `{"peer": {"PassWord" : "a\"` + peerPassword + `"}, "x"}`} {
		r = e.post(p, "/dashboard/import", url.Values{"task_json": {raw}})
		if r.status != http.StatusUnprocessableEntity || strings.Contains(r.body, peerPassword) {
			t.Errorf("%s: %d, the page echoes the password", raw, r.status)
		}
	}
	// An export pasted back as is: the masked password is refused.
	masked := strings.Replace(taskJSON("orders-dr", nil), peerPassword, "********", 1)
	r = e.post(p, "/dashboard/import", url.Values{"task_json": {masked}})
	if r.doc.Find(`[data-testid="import-problem"][data-field="peer.password"]`).Length() != 1 {
		t.Errorf("masked password accepted: %d %q", r.status, r.testid("import-problems").Text())
	}
	if cc := r.header.Get("Cache-Control"); cc != "no-store" {
		t.Errorf("a refused import page has Cache-Control %q, want no-store", cc)
	}
	// htmx gets the form alone.
	r = e.postForm(e.client, "/dashboard/import", url.Values{"_csrf": {p.csrf(t)}, "task_json": {bad}}, http.Header{"Hx-Request": {"true"}})
	if r.status != http.StatusUnprocessableEntity || r.testid("topbar").Length() != 0 || r.testid("import-form").Length() != 1 {
		t.Errorf("htmx 422: %d", r.status)
	}

	r = e.post(p, "/dashboard/import", url.Values{"task_json": {taskJSON("orders-dr", nil)}})
	if r.url != "/tasks/orders-dr" || r.testid("flash-success").Text() != "Task orders-dr created successfully" {
		t.Fatalf("import ended at %s, flash %q", r.url, r.testid("flash-success").Text())
	}
	if started, ok := e.runner.Started("orders-dr"); !ok || started.Peer.Password != peerPassword {
		t.Error("the imported task did not start with its password")
	}
	if got := r.testid("task-last-action").Text(); !strings.Contains(got, "by admin") {
		t.Errorf("last action %q", got)
	}
}

func TestLanguageSwitch(t *testing.T) {
	e := newConsoleEnv(t)
	p := e.get(e.client, "/dashboard?state=failed")
	if p.doc.Find("html").AttrOr("lang", "") != "en" || p.testid("nav-dashboard").Text() != "Dashboard" {
		t.Fatalf("default language: %q %q", p.doc.Find("html").AttrOr("lang", ""), p.testid("nav-dashboard").Text())
	}
	href := p.testid("lang-zh-TW").AttrOr("href", "")
	p = e.get(e.client, href)
	if p.url != "/dashboard" || p.doc.Find("html").AttrOr("lang", "") != "zh-TW" {
		t.Fatalf("after switching: at %s lang %q", p.url, p.doc.Find("html").AttrOr("lang", ""))
	}
	if v, _ := p.doc.Find(`#state option[selected]`).Attr("value"); v != "failed" {
		t.Errorf("the filter was lost across the switch: %q", v)
	}
	if got := p.testid("nav-dashboard").Text(); got != "任務總覽" {
		t.Errorf("nav %q", got)
	}
	if got := e.get(e.client, "/dashboard/import").testid("import-submit").Text(); got != "立即創建" {
		t.Errorf("create-now button %q, want the original product's wording", got)
	}
	// Remembered: a later page is still in Chinese; the current language is
	// not a link.
	if p := e.get(e.client, "/instances"); p.testid("lang-zh-TW").Is("a") || p.doc.Find("h1").Text() != "Kafka實例" {
		t.Errorf("not remembered: %q", p.doc.Find("h1").Text())
	}

	// Accept-Language when nothing was chosen, on the sign-in page too.
	req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/signin", nil)
	req.Header.Set("Accept-Language", "zh-TW,zh;q=0.9,en;q=0.5")
	if p := e.do(e.newBrowser(), req); p.testid("signin-submit").Text() != "登入" {
		t.Errorf("Accept-Language ignored: %q", p.testid("signin-submit").Text())
	}

	// The switch only returns to this site.
	c := e.newBrowser()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for _, next := range []string{"//evil.example/", "https://evil.example/", "/\\evil.example"} {
		p := e.get(c, "/lang?to=en&next="+url.QueryEscape(next))
		if loc := p.header.Get("Location"); loc != "/" {
			t.Errorf("next=%s redirected to %q", next, loc)
		}
	}
	if p := e.get(c, "/lang?to=xx"); p.status != http.StatusBadRequest {
		t.Errorf("unknown language: %d", p.status)
	}
}

// TestPagesAreNeverCached: console pages hold a signed-in user's data, so
// none may stay in a browser's cache after sign-out.
func TestPagesAreNeverCached(t *testing.T) {
	e := newConsoleEnv(t)
	if r := e.post(e.get(e.client, "/dashboard/import"), "/dashboard/import", url.Values{"task_json": {taskJSON("orders-dr", nil)}}); r.url != "/tasks/orders-dr" {
		t.Fatalf("import ended at %s", r.url)
	}
	for _, path := range []string{"/signin", "/dashboard", "/dashboard/import", "/instances", "/tasks/orders-dr", "/tasks/orders-dr/export", "/no-such-page"} {
		if cc := e.get(e.client, path).header.Get("Cache-Control"); cc != "no-store" {
			t.Errorf("GET %s: Cache-Control %q, want no-store", path, cc)
		}
	}
}

// TestLongWarningsDoNotFailACreatedTask: warnings too long for the session
// cookie are shortened; the task is created and the user lands on its page,
// never on an error page that would invite creating it again.
func TestLongWarningsDoNotFailACreatedTask(t *testing.T) {
	e := newConsoleEnv(t)
	// Regexes of about 1000 characters whose overlap the search gives up
	// on at once: every warning about them quotes two of them.
	regex := func(end string) string {
		return "(?:.?){1000}" + end + "|" + strings.Repeat(end, 980)
	}
	withRegex := func(name, end string) string {
		return taskJSON(name, func(m map[string]any) {
			delete(sub(m, "rules"), "topics")
			sub(m, "rules")["topics_regex"] = regex(end)
		})
	}
	for _, name := range []string{"first", "second"} {
		if code, _, body := e.api(http.MethodPost, "/api/v1/tasks", apiToken, withRegex(name+"-task", name[:1])); code != http.StatusCreated {
			t.Fatalf("create %s: %d %v", name, code, body)
		}
	}
	p := e.get(e.client, "/dashboard/import")
	r := e.post(p, "/dashboard/import", url.Values{"task_json": {withRegex("third-task", "t")}})
	if r.status != http.StatusOK || r.url != "/tasks/third-task" {
		t.Fatalf("import answered %d at %s", r.status, r.url)
	}
	if r.testid("flash-success").Length() != 1 || r.testid("flash-error").Length() == 0 {
		t.Fatalf("banners: %d success, %d warnings", r.testid("flash-success").Length(), r.testid("flash-error").Length())
	}
	shown := r.testid("flash-error").Text()
	if !strings.Contains(shown, "could not tell") || !strings.Contains(shown, "…") {
		t.Errorf("the warnings are not the shortened overlap warnings: %.300s", shown)
	}
}

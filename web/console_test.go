package web_test

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestConsoleRedirectsToSignIn(t *testing.T) {
	e := newEnv(t)
	p := e.get(e.client, "/instances")
	if p.url != "/signin" || p.testid("signin-form").Length() != 1 {
		t.Fatalf("GET /instances ended at %s (status %d), want the sign-in page", p.url, p.status)
	}
}

func TestSignInWrongPasswordSaysSoPlainly(t *testing.T) {
	e := newEnv(t)
	p := e.signIn(e.client, "admin", "wrong")
	if p.status != http.StatusUnauthorized {
		t.Fatalf("status %d, want 401", p.status)
	}
	if msg := p.testid("signin-error").Text(); msg != "wrong user name or password" {
		t.Fatalf("error message %q", msg)
	}
	if v, _ := p.doc.Find(`input[name="password"]`).Attr("value"); v != "" {
		t.Fatal("the password was sent back to the browser")
	}
	if p := e.get(e.client, "/instances"); p.url != "/signin" {
		t.Fatal("a wrong password signed in")
	}
}

func TestSignInIsThrottled(t *testing.T) {
	e := newEnv(t)
	var p page
	for i := 0; i < 10 && p.status != http.StatusTooManyRequests; i++ {
		p = e.signIn(e.client, "admin", "wrong")
	}
	if p.status != http.StatusTooManyRequests || p.header.Get("Retry-After") == "" {
		t.Fatalf("after repeated failures status %d Retry-After %q, want 429 with Retry-After", p.status, p.header.Get("Retry-After"))
	}
	if !strings.Contains(p.testid("signin-error").Text(), "too many failed sign-ins") {
		t.Fatalf("message %q", p.testid("signin-error").Text())
	}
}

func TestPostWithoutCSRFTokenIsRefused(t *testing.T) {
	e := newEnv(t)
	e.get(e.client, "/signin") // has the CSRF cookie, but sends no token
	p := e.postForm(e.client, "/signin", url.Values{"user": {"admin"}, "password": {adminPassword}}, nil)
	if p.status < 400 || p.status >= 500 {
		t.Fatalf("status %d, want a 4xx", p.status)
	}
	p = e.postForm(e.client, "/signin", url.Values{"_csrf": {"forged"}, "user": {"admin"}, "password": {adminPassword}}, nil)
	if p.status != http.StatusForbidden {
		t.Fatalf("forged token: status %d, want 403", p.status)
	}
	if p := e.get(e.client, "/instances"); p.url != "/signin" {
		t.Fatal("signed in without a CSRF token")
	}
}

func TestSignInSetsSafeCookiesAndSignOutEnds(t *testing.T) {
	e := newEnv(t)
	// Without following redirects, to see the Set-Cookie of the sign-in POST.
	c := e.newBrowser()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	p := e.signIn(c, "admin", adminPassword)
	if p.status != http.StatusSeeOther || p.header.Get("Location") != "/instances" {
		t.Fatalf("sign-in: status %d location %q, want 303 to /instances", p.status, p.header.Get("Location"))
	}
	var session string
	for _, sc := range p.header.Values("Set-Cookie") {
		if strings.HasPrefix(sc, "kmirror_session=") {
			session = sc
		}
	}
	if !strings.Contains(session, "HttpOnly") || !strings.Contains(session, "SameSite=Lax") {
		t.Fatalf("session cookie %q, want HttpOnly and SameSite=Lax", session)
	}

	p = e.signIn(e.client, "admin", adminPassword)
	if p.url != "/instances" || p.testid("current-user").Text() != "admin" {
		t.Fatalf("after sign-in at %s, user %q", p.url, p.testid("current-user").Text())
	}
	if p.testid("nav-instances").Length() != 1 {
		t.Fatal("no left navigation entry for instances")
	}
	p = e.postForm(e.client, "/signout", url.Values{"_csrf": {p.csrf(t)}}, nil)
	if p.url != "/signin" {
		t.Fatalf("sign-out ended at %s", p.url)
	}
	if p := e.get(e.client, "/instances"); p.url != "/signin" {
		t.Fatal("still signed in after sign-out")
	}
}

func clusterForm(csrf string, kv ...string) url.Values {
	v := url.Values{"_csrf": {csrf}, "security_protocol": {"PLAINTEXT"}}
	for i := 0; i+1 < len(kv); i += 2 {
		v.Set(kv[i], kv[i+1])
	}
	return v
}

func TestAddAndRemoveInstance(t *testing.T) {
	e := newEnv(t)
	p := e.signIn(e.client, "admin", adminPassword)
	if p.testid("clusters-empty").Length() != 1 {
		t.Fatal("empty instance list not shown as such")
	}
	p = e.postForm(e.client, "/instances", clusterForm(p.csrf(t),
		"name", "east", "bootstrap_servers", "127.0.0.1:9092, 127.0.0.1:9093",
		"security_protocol", "SASL_PLAINTEXT", "sasl_mechanism", "SCRAM-SHA-512",
		"username", "alice", "password", "kafka-secret-pw"), nil)
	if p.url != "/instances" || p.status != http.StatusOK {
		t.Fatalf("add: ended at %s with %d", p.url, p.status)
	}
	if got := p.testid("flash-success").Text(); got != "Instance east added." {
		t.Fatalf("flash %q", got)
	}
	row := p.doc.Find(`[data-testid="cluster-row"][data-cluster="east"]`)
	if row.Length() != 1 {
		t.Fatalf("no row for east in\n%s", p.body)
	}
	if got := row.Find(`[data-testid="cluster-bootstrap"]`).Text(); got != "127.0.0.1:9092, 127.0.0.1:9093" {
		t.Fatalf("bootstrap %q", got)
	}
	if got := row.Find(`[data-testid="cluster-tasks"]`).Text(); got != "0 / 18" {
		t.Fatalf("tasks %q", got)
	}
	if got := row.Find(`[data-testid="cluster-auth"]`).Text(); !strings.Contains(got, "SCRAM-SHA-512") || !strings.Contains(got, "alice") {
		t.Fatalf("auth %q", got)
	}
	if strings.Contains(p.body, "kafka-secret-pw") {
		t.Fatal("the Kafka password is in the page")
	}
	// The banner is shown once.
	if p := e.get(e.client, "/instances"); p.testid("flash-success").Length() != 0 {
		t.Fatal("flash shown twice")
	}

	p = e.postForm(e.client, "/instances/east/delete", url.Values{"_csrf": {p.csrf(t)}}, nil)
	if got := p.testid("flash-success").Text(); got != "Instance east removed." {
		t.Fatalf("flash %q", got)
	}
	if p.testid("cluster-row").Length() != 0 {
		t.Fatal("east still listed after removal")
	}
	p = e.postForm(e.client, "/instances/east/delete", url.Values{"_csrf": {p.csrf(t)}}, nil)
	if got := p.testid("flash-error").Text(); !strings.Contains(got, `no cluster named "east"`) {
		t.Fatalf("removing twice: flash %q", got)
	}
}

func TestInvalidInstanceShowsMessagesByFields(t *testing.T) {
	e := newEnv(t)
	p := e.signIn(e.client, "admin", adminPassword)
	form := clusterForm(p.csrf(t), "name", "bad name!", "bootstrap_servers", "kafka1",
		"security_protocol", "SASL_SSL", "password", "typed-password")
	p = e.postForm(e.client, "/instances", form, nil)
	if p.status != http.StatusUnprocessableEntity {
		t.Fatalf("status %d, want 422", p.status)
	}
	for _, field := range []string{"name", "bootstrap_servers", "sasl_mechanism", "username"} {
		if p.testid("error-"+field).Length() == 0 {
			t.Errorf("no message next to %s", field)
		}
	}
	if v, _ := p.doc.Find(`#name`).Attr("value"); v != "bad name!" {
		t.Errorf("name not kept: %q", v)
	}
	if v, _ := p.doc.Find(`#security_protocol option[selected]`).Attr("value"); v != "SASL_SSL" {
		t.Errorf("protocol not kept: %q", v)
	}
	if strings.Contains(p.body, "typed-password") {
		t.Error("the typed password came back in the page")
	}
	if p.testid("cluster-row").Length() != 0 {
		t.Error("an invalid instance was stored")
	}
}

func TestHTMXGetsFragmentOn422AndRedirectOnSuccess(t *testing.T) {
	e := newEnv(t)
	p := e.signIn(e.client, "admin", adminPassword)
	tok, _ := p.doc.Find(`meta[name="csrf-token"]`).Attr("content")
	if tok == "" {
		t.Fatal("no csrf-token meta tag for htmx")
	}
	h := http.Header{"Hx-Request": {"true"}, "X-Csrf-Token": {tok}}
	bad := url.Values{"name": {""}, "bootstrap_servers": {"h:1"}, "security_protocol": {"PLAINTEXT"}}
	p = e.postForm(e.client, "/instances", bad, h)
	if p.status != http.StatusUnprocessableEntity {
		t.Fatalf("status %d, want 422", p.status)
	}
	if p.doc.Find("html").Children().Filter("head").Children().Length() != 0 || strings.Contains(p.body, "<html") {
		t.Fatal("htmx got a whole page, want the form fragment")
	}
	if p.testid("add-cluster-form").Length() != 1 || p.testid("error-name").Length() != 1 {
		t.Fatalf("fragment lacks the form or its message:\n%s", p.body)
	}

	c := e.client
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	defer func() { c.CheckRedirect = nil }()
	good := url.Values{"name": {"west"}, "bootstrap_servers": {"h:1"}, "security_protocol": {"PLAINTEXT"}}
	p = e.postForm(c, "/instances", good, h)
	if p.header.Get("HX-Redirect") != "/instances" {
		t.Fatalf("status %d HX-Redirect %q, want a redirect to /instances", p.status, p.header.Get("HX-Redirect"))
	}
}

func TestLayoutLoadsVendoredAssets(t *testing.T) {
	e := newEnv(t)
	p := e.get(e.client, "/signin")
	src, _ := p.doc.Find(`script[src*="htmx"]`).Attr("src")
	if !strings.HasPrefix(src, "/static/htmx-2.0.") {
		t.Fatalf("htmx script src %q, want the vendored 2.0.x file", src)
	}
	for _, path := range []string{src, "/static/app.css", "/static/app.js"} {
		if s := e.get(e.client, path); s.status != http.StatusOK {
			t.Errorf("GET %s: %d", path, s.status)
		}
	}
	cfg, _ := p.doc.Find(`meta[name="htmx-config"]`).Attr("content")
	if !strings.Contains(cfg, `"422"`) {
		t.Fatalf("htmx config %q does not swap 422 answers", cfg)
	}
}

func TestHealthz(t *testing.T) {
	e := newEnv(t)
	code, _, body := e.api(http.MethodGet, "/healthz", "", "")
	if code != http.StatusOK || body["status"] != "ok" {
		t.Fatalf("healthz: %d %v", code, body)
	}
}

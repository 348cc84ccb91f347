package web_test

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/kmirror/kmirror/internal/account"
	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/internal/service/servicetest"
	"github.com/kmirror/kmirror/web"
)

const (
	adminPassword = "test-admin-password"
	apiToken      = "test-api-token"
)

// env is a running console on a random 127.0.0.1 port with its own data dir.
type env struct {
	t       *testing.T
	srv     *httptest.Server
	dataDir string
	client  *http.Client // with a cookie jar: one browser
	svc     *service.Service
}

func newEnv(t *testing.T) *env { return newEnvWith(t, nil) }

// newEnvWith is newEnv with the server's Deps adjusted by set first.
func newEnvWith(t *testing.T, set func(*web.Deps)) *env { return newEnvWithService(t, nil, set) }

// newEnvWithService is newEnvWith with the service's Deps adjusted by
// setService first.
func newEnvWithService(t *testing.T, setService func(*service.Deps), set func(*web.Deps)) *env {
	t.Helper()
	ctx := context.Background()
	dir, db, box := servicetest.OpenStore(t, "")
	sd := service.Deps{Clusters: db, Users: db, Secrets: box, Tokens: db, Audit: db, ConnectClusters: db, Policies: db}
	if setService != nil {
		setService(&sd)
	}
	svc, err := service.New(sd)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := account.EnsureAdmin(ctx, db, adminPassword); err != nil {
		t.Fatal(err)
	}
	d := web.Deps{Service: svc, DataDir: dir, APIToken: apiToken,
		Logger: slog.New(slog.DiscardHandler), Ping: db.Ping}
	if set != nil {
		set(&d)
	}
	s, err := web.New(d)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	e := &env{t: t, srv: ts, dataDir: dir, svc: svc}
	e.client = e.newBrowser()
	return e
}

func (e *env) newBrowser() *http.Client {
	jar, err := cookiejar.New(nil)
	if err != nil {
		e.t.Fatal(err)
	}
	return &http.Client{Jar: jar}
}

// page is a fetched HTML page.
type page struct {
	status int
	url    string
	header http.Header
	doc    *goquery.Document
	body   string
}

func (e *env) do(c *http.Client, req *http.Request) page {
	e.t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	doc, err := goquery.NewDocumentFromReader(strings.NewReader(string(b)))
	if err != nil {
		e.t.Fatal(err)
	}
	return page{status: resp.StatusCode, url: resp.Request.URL.Path, header: resp.Header, doc: doc, body: string(b)}
}

func (e *env) get(c *http.Client, path string) page {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodGet, e.srv.URL+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	return e.do(c, req)
}

func (e *env) postForm(c *http.Client, path string, form url.Values, header http.Header) page {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.srv.URL+path, strings.NewReader(form.Encode()))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	for k, v := range header {
		req.Header[k] = v
	}
	return e.do(c, req)
}

// csrf reads the token a page put in its forms.
func (p page) csrf(t *testing.T) string {
	t.Helper()
	tok, ok := p.doc.Find(`input[name="_csrf"]`).First().Attr("value")
	if !ok || tok == "" {
		t.Fatalf("page %s has no _csrf field", p.url)
	}
	return tok
}

func (p page) testid(id string) *goquery.Selection {
	return p.doc.Find(`[data-testid="` + id + `"]`)
}

func (e *env) signIn(c *http.Client, user, password string) page {
	e.t.Helper()
	p := e.get(c, "/signin")
	return e.postForm(c, "/signin", url.Values{"_csrf": {p.csrf(e.t)}, "user": {user}, "password": {password}}, nil)
}

// api calls the JSON API with the test token (or none when token is "").
func (e *env) api(method, path, token, body string) (int, http.Header, map[string]any) {
	e.t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.srv.URL+path, r)
	if err != nil {
		e.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	var out map[string]any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			e.t.Fatalf("%s %s: body is not JSON: %v\n%s", method, path, err, raw)
		}
	}
	return resp.StatusCode, resp.Header, out
}

package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/account"
	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/internal/service/servicetest"
	"github.com/kmirror/kmirror/web"
)

// newLoggedEnv is newEnv with the server's log captured as JSON lines.
func newLoggedEnv(t *testing.T) (*env, *lockedBuffer) {
	t.Helper()
	dir, db, box := servicetest.OpenStore(t, "")
	svc, err := service.New(service.Deps{Clusters: db, Users: db, Secrets: box})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := account.EnsureAdmin(context.Background(), db, adminPassword); err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	s, err := web.New(web.Deps{Service: svc, DataDir: dir, APIToken: apiToken,
		Logger: slog.New(slog.NewJSONHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	e := &env{t: t, srv: ts, dataDir: dir}
	e.client = e.newBrowser()
	return e, logs
}

// requestLine is the request log line with the given id. The line is
// written once the answer is sent, so the client can be ahead of it: poll.
func requestLine(t *testing.T, logs *lockedBuffer, id string) map[string]any {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		sc := bufio.NewScanner(strings.NewReader(logs.String()))
		for sc.Scan() {
			var m map[string]any
			if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
				t.Fatalf("log line is not JSON: %v\n%s", err, sc.Text())
			}
			if m["msg"] == "http request" && m["request_id"] == id {
				return m
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no request log line with request_id %q in:\n%s", id, logs.String())
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// Every request gets an id, echoed in X-Request-Id and logged with the
// request's actor, status and duration; an incoming id is kept only when it
// is short and plain.
func TestRequestIDEchoedAndLoggedWithActorStatusDuration(t *testing.T) {
	e, logs := newLoggedEnv(t)
	signedIn := e.newBrowser()
	e.signIn(signedIn, "admin", adminPassword)

	cases := []struct {
		name       string
		client     *http.Client
		path       string
		token      string
		incoming   string
		keep       bool // the incoming id is the one used
		wantStatus int
		wantActor  string
	}{
		{name: "api with token, no id", path: "/api/v1/clusters", token: apiToken, wantStatus: http.StatusOK, wantActor: "api"},
		{name: "api, safe id kept", path: "/api/v1/clusters", token: apiToken, incoming: "proxy-4f2a.9:1", keep: true,
			wantStatus: http.StatusOK, wantActor: "api"},
		{name: "api, wrong token", path: "/api/v1/clusters", token: "wrong", wantStatus: http.StatusUnauthorized},
		{name: "markup in id replaced", path: "/healthz", incoming: "<script>alert(1)</script>", wantStatus: http.StatusOK},
		{name: "spaces in id replaced", path: "/healthz", incoming: "a b", wantStatus: http.StatusOK},
		{name: "long id replaced", path: "/healthz", incoming: strings.Repeat("x", 65), wantStatus: http.StatusOK},
		{name: "console, signed in", client: signedIn, path: "/instances", wantStatus: http.StatusOK, wantActor: "admin"},
		{name: "console, anonymous", path: "/signin", wantStatus: http.StatusOK},
	}
	seen := map[string]bool{}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, e.srv.URL+tc.path, nil)
			if err != nil {
				t.Fatal(err)
			}
			if tc.token != "" {
				req.Header.Set("Authorization", "Bearer "+tc.token)
			}
			if tc.incoming != "" {
				req.Header.Set("X-Request-Id", tc.incoming)
			}
			c := tc.client
			if c == nil {
				c = http.DefaultClient
			}
			resp, err := c.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d, want %d", resp.StatusCode, tc.wantStatus)
			}
			id := resp.Header.Get("X-Request-Id")
			switch {
			case id == "":
				t.Fatal("no X-Request-Id in the answer")
			case tc.keep && id != tc.incoming:
				t.Fatalf("X-Request-Id %q, want the incoming %q", id, tc.incoming)
			case !tc.keep && id == tc.incoming:
				t.Fatalf("the unsafe incoming id %q was kept", tc.incoming)
			case seen[id]:
				t.Fatalf("id %q given twice", id)
			}
			seen[id] = true
			line := requestLine(t, logs, id)
			if line["actor"] != tc.wantActor || line["status"] != float64(tc.wantStatus) || line["path"] != tc.path {
				t.Fatalf("log line %v: want actor %q, status %d, path %s", line, tc.wantActor, tc.wantStatus, tc.path)
			}
			if d, ok := line["duration"].(float64); !ok || d <= 0 {
				t.Fatalf("log line %v has no duration", line)
			}
		})
	}
}

// An error page shows the request id, so a user can quote it and an
// operator can find the request's log lines.
func TestErrorPageShowsRequestID(t *testing.T) {
	e, logs := newLoggedEnv(t)
	e.signIn(e.client, "admin", adminPassword)
	p := e.get(e.client, "/no-such-page")
	if p.status != http.StatusNotFound {
		t.Fatalf("status %d, want 404", p.status)
	}
	id := p.header.Get("X-Request-Id")
	if got := p.testid("error-request-id").Text(); id == "" || got != id {
		t.Fatalf("error page shows request id %q, header has %q", got, id)
	}
	if line := requestLine(t, logs, id); line["actor"] != "admin" {
		t.Fatalf("log line %v: want actor admin", line)
	}
}

package web_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/service"
)

// token makes an API token with role through the API and returns it.
func (e *taskEnv) token(name string, role service.Role) string {
	e.t.Helper()
	code, h, body := e.call(http.MethodPost, "/api/v1/tokens", fmt.Sprintf(`{"name":%q,"role":%q}`, name, role))
	tok, _ := body["token"].(string)
	if code != http.StatusCreated || len(tok) < 32 || h.Get("Cache-Control") != "no-store" {
		e.t.Fatalf("create token %s: %d %v", name, code, body)
	}
	return tok
}

func TestRolesAreEnforcedForAPITokens(t *testing.T) {
	e := newTaskEnv(t)
	if code, _, body := e.call(http.MethodPost, "/api/v1/tasks", taskJSON("orders-dr", nil)); code != http.StatusCreated {
		t.Fatalf("create task: %d %v", code, body)
	}
	viewer, operator, admin := e.token("dash", "viewer"), e.token("ci", "operator"), e.token("ops-admin", "admin")
	for _, tc := range []struct {
		method, path, body string
		want               map[string]int // token name -> status
	}{
		{"GET", "/api/v1/clusters", "", map[string]int{"viewer": 200, "operator": 200, "admin": 200}},
		{"GET", "/api/v1/tasks/orders-dr", "", map[string]int{"viewer": 200, "operator": 200, "admin": 200}},
		{"POST", "/api/v1/tasks/orders-dr/pause", "", map[string]int{"viewer": 403, "operator": 200, "admin": 200}},
		{"POST", "/api/v1/tasks/validate", taskJSON("x", nil), map[string]int{"viewer": 403, "operator": 200, "admin": 200}},
		{"POST", "/api/v1/clusters", `{"name":"north","bootstrap_servers":["127.0.0.1:9092"]}`, map[string]int{"viewer": 403, "operator": 403}},
		{"DELETE", "/api/v1/clusters/west", "", map[string]int{"viewer": 403, "operator": 403}},
		{"GET", "/api/v1/users", "", map[string]int{"viewer": 403, "operator": 403, "admin": 200}},
		{"GET", "/api/v1/tokens", "", map[string]int{"viewer": 403, "operator": 403, "admin": 200}},
		{"GET", "/api/v1/audit", "", map[string]int{"viewer": 403, "operator": 403, "admin": 200}},
		{"POST", "/api/v1/tokens", `{"name":"mine","role":"admin"}`, map[string]int{"viewer": 403, "operator": 403}},
		{"DELETE", "/api/v1/tasks/orders-dr", "", map[string]int{"viewer": 403, "operator": 204}},
	} {
		for role, tok := range map[string]string{"viewer": viewer, "operator": operator, "admin": admin} {
			want, ok := tc.want[role]
			if !ok {
				continue
			}
			code, _, body := e.api(tc.method, tc.path, tok, tc.body)
			if code != want {
				t.Errorf("%s %s as %s: %d, want %d (%v)", tc.method, tc.path, role, code, want, body)
			}
			if code == http.StatusForbidden && sub(body, "error")["code"] != "forbidden" {
				t.Errorf("%s %s as %s: 403 with %v", tc.method, tc.path, role, body)
			}
		}
	}
}

func TestTokensAreListedWithoutSecretAndRevoked(t *testing.T) {
	e := newTaskEnv(t)
	tok := e.token("ci", "operator")
	code, _, body := e.call(http.MethodGet, "/api/v1/tokens", "")
	raw, _ := json.Marshal(body)
	if code != http.StatusOK || !strings.Contains(string(raw), `"name":"ci"`) || strings.Contains(string(raw), tok) {
		t.Fatalf("list: %d %s", code, raw)
	}
	if code, _, body := e.call(http.MethodPost, "/api/v1/tokens", `{"name":"ci","role":"viewer"}`); code != http.StatusUnprocessableEntity {
		t.Fatalf("duplicate name: %d %v", code, body)
	}
	if code, _, body := e.call(http.MethodPost, "/api/v1/tokens", `{"name":"bad name","role":"root"}`); code != http.StatusUnprocessableEntity || len(body["error"].(map[string]any)["problems"].([]any)) != 2 {
		t.Fatalf("bad token settings: %d %v", code, body)
	}
	if code, _, _ := e.api(http.MethodGet, "/api/v1/tasks", tok, ""); code != http.StatusOK {
		t.Fatalf("new token: %d", code)
	}
	if code, _, _ := e.call(http.MethodDelete, "/api/v1/tokens/ci", ""); code != http.StatusNoContent {
		t.Fatalf("revoke: %d", code)
	}
	if code, _, _ := e.api(http.MethodGet, "/api/v1/tasks", tok, ""); code != http.StatusUnauthorized {
		t.Fatalf("revoked token: %d, want 401", code)
	}
}

func TestUsersAPI(t *testing.T) {
	e := newTaskEnv(t)
	code, _, body := e.call(http.MethodPost, "/api/v1/users", `{"name":"olga","role":"operator","password":"olga-password-1"}`)
	if code != http.StatusCreated || body["role"] != "operator" || body["password"] != nil {
		t.Fatalf("create: %d %v", code, body)
	}
	if code, _, body := e.call(http.MethodPost, "/api/v1/users", `{"name":"x y","role":"boss","password":"short"}`); code != http.StatusUnprocessableEntity ||
		len(sub(body, "error")["problems"].([]any)) != 3 {
		t.Fatalf("invalid user: %d %v", code, body)
	}
	code, _, body = e.call(http.MethodGet, "/api/v1/users", "")
	raw, _ := json.Marshal(body)
	if code != http.StatusOK || !strings.Contains(string(raw), `"name":"olga","role":"operator"`) || strings.Contains(string(raw), "$2a$") {
		t.Fatalf("list: %d %s", code, raw)
	}
	// Olga signs in to the console with her role.
	p := e.signIn(e.client, "olga", "olga-password-1")
	if p.testid("current-user").Text() != "olga" {
		t.Fatalf("olga not signed in: %s", p.url)
	}
	if code, _, body := e.call(http.MethodDelete, "/api/v1/users/admin", ""); code != http.StatusBadRequest {
		t.Fatalf("deleting the last admin: %d %v", code, body)
	}
	if code, _, _ := e.call(http.MethodDelete, "/api/v1/users/olga", ""); code != http.StatusNoContent {
		t.Fatalf("delete: %d", code)
	}
	if p := e.get(e.client, "/instances"); p.url != "/signin" {
		t.Fatal("a deleted user's session goes on")
	}
}

func TestAuditLogRecordsChangesAndSignIns(t *testing.T) {
	e := newTaskEnv(t)
	viewer := e.token("dash", "viewer")
	e.api(http.MethodPost, "/api/v1/tasks/none/pause", viewer, "")
	e.signIn(e.newBrowser(), "admin", "wrong")
	e.signIn(e.newBrowser(), "admin", adminPassword)
	e.call(http.MethodPost, "/api/v1/tasks", taskJSON("orders-dr", nil))

	code, _, body := e.call(http.MethodGet, "/api/v1/audit", "")
	if code != http.StatusOK {
		t.Fatalf("audit: %d %v", code, body)
	}
	var got []string
	for _, x := range body["entries"].([]any) {
		m := x.(map[string]any)
		if m["at"] == "" || m["address"] == "" {
			t.Errorf("entry without time or address: %v", m)
		}
		got = append(got, fmt.Sprintf("%s %s %s %s %s", m["actor"], m["role"], m["action"], m["object"], m["outcome"]))
	}
	want := []string{ // newest first
		"KMIRROR_TOKEN admin task.create orders-dr ok",
		"admin admin signin admin ok",
		"admin admin signin admin failed: bad_credentials",
		"token:dash viewer task.pause none denied",
		"KMIRROR_TOKEN admin token.create dash as viewer ok",
	}
	// newTaskEnv registered two clusters first.
	if len(got) < len(want) || strings.Join(got[:len(want)], "\n") != strings.Join(want, "\n") {
		t.Fatalf("audit log:\n%s\nwant it to start with:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if code, _, body := e.call(http.MethodGet, "/api/v1/audit?action=signin&outcome=failed", ""); code != http.StatusOK || len(body["entries"].([]any)) != 1 {
		t.Fatalf("filtered: %d %v", code, body)
	}

	req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/api/v1/audit/export", nil)
	req.Header.Set("Authorization", "Bearer "+apiToken)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("export content type %q", resp.Header.Get("Content-Type"))
	}
	lines := 0
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil || m["action"] == nil {
			t.Fatalf("export line %q: %v", sc.Text(), err)
		}
		lines++
	}
	if lines != len(got) {
		t.Fatalf("export has %d lines, the log %d", lines, len(got))
	}
}

func TestChangeUserRoleAndPassword(t *testing.T) {
	e := newTaskEnv(t)
	e.addUser("olga", "viewer")
	b := e.newBrowser()
	e.signIn(b, "olga", "olga-password")
	if p := e.get(b, "/instances/east/smart-connect/new"); p.status != http.StatusForbidden {
		t.Fatalf("viewer opens the create form: %d", p.status)
	}
	// A new role applies to the session at its next request.
	if code, _, body := e.call(http.MethodPatch, "/api/v1/users/olga", `{"role":"operator"}`); code != http.StatusOK || body["role"] != "operator" {
		t.Fatalf("promote: %d %v", code, body)
	}
	if p := e.get(b, "/instances/east/smart-connect/new"); p.status != http.StatusOK {
		t.Fatalf("operator opens the create form: %d", p.status)
	}
	// A reset password ends the session.
	if code, _, body := e.call(http.MethodPatch, "/api/v1/users/olga", `{"password":"olga-new-password"}`); code != http.StatusOK {
		t.Fatalf("reset: %d %v", code, body)
	}
	if p := e.get(b, "/instances"); p.url != "/signin" {
		t.Fatal("the session outlived a password reset")
	}
	for _, tc := range []struct {
		path, body string
		want       int
	}{
		{"/api/v1/users/olga", `{}`, http.StatusUnprocessableEntity},
		{"/api/v1/users/olga", `{"role":"root"}`, http.StatusUnprocessableEntity},
		{"/api/v1/users/olga", `{"password":"short"}`, http.StatusUnprocessableEntity},
		{"/api/v1/users/nobody", `{"role":"viewer"}`, http.StatusNotFound},
		{"/api/v1/users/admin", `{"role":"viewer"}`, http.StatusBadRequest}, // the last admin
	} {
		if code, _, body := e.call(http.MethodPatch, tc.path, tc.body); code != tc.want {
			t.Errorf("PATCH %s %s: %d, want %d (%v)", tc.path, tc.body, code, tc.want, body)
		}
	}
	viewer := e.token("dash", "viewer")
	if code, _, _ := e.api(http.MethodPatch, "/api/v1/users/olga", viewer, `{"role":"admin"}`); code != http.StatusForbidden {
		t.Fatalf("a viewer promotes: %d", code)
	}
}

// A token made in the console belongs to the account that made it: it
// shows its owner, expiry and last use, stops at its expiry, and ends with
// its owner's account.
func TestTokensHaveAnOwnerAnExpiryAndALastUse(t *testing.T) {
	clk := &clock{t: time.Now()}
	e := newEnvWithService(t, func(d *service.Deps) { d.Now = clk.Now }, nil)
	e.signIn(e.client, "admin", adminPassword)
	p := e.get(e.client, "/tokens")
	bad := e.postForm(e.client, "/tokens", url.Values{"_csrf": {p.csrf(t)}, "name": {"ci"}, "role": {"operator"}, "expires_in": {"forever"}}, nil)
	if bad.status != http.StatusUnprocessableEntity || !strings.Contains(bad.testid("error-expires_in").Text(), "720h") {
		t.Fatalf("an unreadable expiry: %d %q", bad.status, bad.testid("error-expires_in").Text())
	}
	mk := func(name, expires string) string {
		t.Helper()
		p := e.get(e.client, "/tokens")
		made := e.postForm(e.client, "/tokens", url.Values{"_csrf": {p.csrf(t)}, "name": {name}, "role": {"operator"}, "expires_in": {expires}}, nil)
		tok := strings.TrimSpace(made.testid("token-value").Text())
		if made.status != http.StatusCreated || tok == "" {
			t.Fatalf("make token %s: %d", name, made.status)
		}
		return tok
	}
	short, long := mk("short", "1h"), mk("long", "")
	for _, tok := range []string{short, long} {
		if code, _, body := e.api(http.MethodGet, "/api/v1/clusters", tok, ""); code != http.StatusOK {
			t.Fatalf("a fresh token: %d %v", code, body)
		}
	}
	code, _, body := e.api(http.MethodGet, "/api/v1/tokens", apiToken, "")
	raw, _ := json.Marshal(body)
	if code != http.StatusOK || strings.Count(string(raw), `"owner":"admin"`) != 2 || strings.Count(string(raw), `"last_used_at"`) != 2 ||
		strings.Count(string(raw), `"expires_at"`) != 1 {
		t.Fatalf("listing: %d %s", code, raw)
	}
	page := e.get(e.client, "/tokens")
	if page.doc.Find(`[data-token="short"] [data-testid="token-expires"]`).Text() == "" ||
		strings.Contains(page.doc.Find(`[data-token="long"] [data-testid="token-last-used"]`).Text(), "not yet") {
		t.Fatalf("the tokens page: %s", page.testid("tokens-table").Text())
	}

	clk.Add(61 * time.Minute)
	if code, _, _ := e.api(http.MethodGet, "/api/v1/clusters", short, ""); code != http.StatusUnauthorized {
		t.Fatalf("an expired token: %d", code)
	}
	if code, _, _ := e.api(http.MethodGet, "/api/v1/clusters", long, ""); code != http.StatusOK {
		t.Fatalf("a token without expiry after an hour: %d", code)
	}

	root := service.WithActor(context.Background(), service.Actor{Name: "KMIRROR_TOKEN", Role: service.RoleAdmin})
	if _, err := e.svc.CreateUser(root, service.NewUser{Name: "root2", Role: service.RoleAdmin, Password: "root2-password"}); err != nil {
		t.Fatal(err)
	}
	// Its owner demoted to viewer, the operator token acts as a viewer.
	viewer := service.RoleViewer
	if _, err := e.svc.ChangeUser(root, "admin", service.UserChange{Role: &viewer}); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := e.api(http.MethodPost, "/api/v1/tasks/validate", long, `{}`); code != http.StatusForbidden {
		t.Fatalf("an operator token of an owner demoted to viewer: %d, want 403", code)
	}
	if err := e.svc.DeleteUser(root, "admin"); err != nil {
		t.Fatal(err)
	}
	if code, _, _ := e.api(http.MethodGet, "/api/v1/clusters", long, ""); code != http.StatusUnauthorized {
		t.Fatalf("a token of a deleted account: %d", code)
	}
	if code, _, body := e.api(http.MethodPost, "/api/v1/tokens", apiToken, `{"name":"x","role":"viewer","expires_in":"9000h"}`); code != http.StatusUnprocessableEntity ||
		!strings.Contains(fmt.Sprint(body), "expires_in") {
		t.Fatalf("a token for more than 366 days: %d %v", code, body)
	}
}

// A denied request never writes what it sent into the audit log: bodies
// of the account endpoints are capped before anything reads them, and an
// entry's every field is bounded whatever the caller sent.
func TestAViewerCannotFillTheAuditLog(t *testing.T) {
	e := newTaskEnv(t)
	viewer := e.token("dash", "viewer")
	auditBytes := func() int {
		t.Helper()
		code, _, body := e.call(http.MethodGet, "/api/v1/audit?limit=1000", "")
		raw, _ := json.Marshal(body)
		if code != http.StatusOK {
			t.Fatalf("audit: %d", code)
		}
		return len(raw)
	}
	before := auditBytes()
	huge := strings.Repeat("x", 900<<10)
	for range 5 {
		if code, _, _ := e.api(http.MethodPost, "/api/v1/users", viewer, fmt.Sprintf(`{"name":%q,"role":"admin","password":"p"}`, huge)); code != http.StatusRequestEntityTooLarge {
			t.Fatalf("a 900 KB user: %d, want 413", code)
		}
	}
	// Under the cap but far longer than any name: denied, and recorded
	// bounded.
	long := strings.Repeat("y", 12<<10)
	if code, _, _ := e.api(http.MethodPost, "/api/v1/users", viewer, fmt.Sprintf(`{"name":%q,"role":"admin","password":"p"}`, long)); code != http.StatusForbidden {
		t.Fatalf("a viewer's user: %d, want 403", code)
	}
	code, _, body := e.call(http.MethodGet, "/api/v1/audit?action=user.create", "")
	entries, _ := body["entries"].([]any)
	if code != http.StatusOK || len(entries) != 1 {
		t.Fatalf("user.create entries: %d %v", code, body)
	}
	m := entries[0].(map[string]any)
	obj, _ := m["object"].(string)
	if m["outcome"] != "denied" || len(obj) > 160 || !strings.Contains(obj, "bytes, sha256") {
		t.Fatalf("the denied entry: %v", m)
	}
	if grown := auditBytes() - before; grown > 2000 {
		t.Fatalf("the audit log grew by %d bytes for six refused requests", grown)
	}
	// The console's forms are capped the same way.
	c := e.newBrowser()
	p := e.get(c, "/signin")
	if got := e.postForm(c, "/signin", url.Values{"_csrf": {p.csrf(t)}, "user": {huge}, "password": {"x"}}, nil); got.status != http.StatusRequestEntityTooLarge {
		t.Fatalf("a 900 KB sign-in form: %d", got.status)
	}
}

func TestAuditPageSaysHowBigTheLogIs(t *testing.T) {
	e := newEnv(t)
	e.signIn(e.client, "admin", adminPassword)
	p := e.get(e.client, "/audit")
	if got := p.testid("audit-size").Text(); !strings.Contains(got, "audit log: 1 (") || p.testid("audit-size-warning").Length() != 0 {
		t.Fatalf("audit size line %q (warning shown: %v)", got, p.testid("audit-size-warning").Length() > 0)
	}
}

// An admin's destination policy holds operators to registered instances,
// or to addresses inside networks, for a task's create, its dry run and
// its connectivity check; admins are not held; every change is audited.
func TestDestinationPolicyHoldsOperators(t *testing.T) {
	e := newTaskEnv(t)
	operator := e.token("ci", service.RoleOperator)
	if code, _, body := e.call(http.MethodGet, "/api/v1/destination-policy", ""); code != http.StatusOK || body["mode"] != "any" {
		t.Fatalf("the policy at first: %d %v", code, body)
	}
	byAddress := taskJSON("by-address", nil) // peer 10.9.9.9:9093
	byInstance := taskJSON("by-instance", func(m map[string]any) {
		m["peer"] = map[string]any{"alias": "B", "config_type": "cluster", "cluster": "west"}
	})
	if code, _, body := e.api(http.MethodPost, "/api/v1/tasks/validate", operator, byAddress); code != http.StatusOK || body["ok"] != true {
		t.Fatalf("an address under the policy any: %d %v", code, body)
	}
	for _, tc := range []struct {
		body string
		code int
		want string
	}{
		{`{"mode":"everything"}`, 400, "mode"},
		{`{"mode":"networks","networks":[]}`, 400, "networks"},
		{`{"mode":"networks","networks":["10.0.0.0/33"]}`, 400, "not a network"},
		{`{"mode":"registered","networks":["10.0.0.0/8"]}`, 400, "networks"},
	} {
		if code, _, body := e.call(http.MethodPut, "/api/v1/destination-policy", tc.body); code != tc.code || !strings.Contains(fmt.Sprint(body), tc.want) {
			t.Errorf("%s: %d %v", tc.body, code, body)
		}
	}
	if code, _, _ := e.api(http.MethodPut, "/api/v1/destination-policy", operator, `{"mode":"any"}`); code != http.StatusForbidden {
		t.Fatalf("an operator sets the policy: %d", code)
	}

	if code, _, body := e.call(http.MethodPut, "/api/v1/destination-policy", `{"mode":"registered"}`); code != http.StatusOK || body["mode"] != "registered" {
		t.Fatalf("set registered: %d %v", code, body)
	}
	for _, path := range []string{"/api/v1/tasks/validate", "/api/v1/connectivity", "/api/v1/tasks"} {
		code, _, body := e.api(http.MethodPost, path, operator, byAddress)
		refused := code == http.StatusUnprocessableEntity || code == http.StatusOK && body["ok"] == false // the dry run answers 200
		if !refused || !strings.Contains(fmt.Sprint(body), "peer.config_type") || !strings.Contains(fmt.Sprint(body), "registered instances only") {
			t.Errorf("%s by address under registered: %d %v", path, code, body)
		}
	}
	if code, _, body := e.api(http.MethodPost, "/api/v1/tasks", operator, byInstance); code != http.StatusCreated {
		t.Fatalf("by instance under registered: %d %v", code, body)
	}
	if code, _, body := e.call(http.MethodPost, "/api/v1/tasks/validate", byAddress); code != http.StatusOK || body["ok"] != true {
		t.Fatalf("an admin by address under registered: %d %v", code, body)
	}

	if code, _, body := e.call(http.MethodPut, "/api/v1/destination-policy", `{"mode":"networks","networks":["192.168.0.0/16"]}`); code != http.StatusOK {
		t.Fatalf("set networks: %d %v", code, body)
	}
	code, _, body := e.api(http.MethodPost, "/api/v1/tasks/validate", operator, byAddress)
	if code != http.StatusOK || body["ok"] != false || !strings.Contains(fmt.Sprint(body), "peer.address") || !strings.Contains(fmt.Sprint(body), "outside the networks") {
		t.Fatalf("an address outside the networks: %d %v", code, body)
	}
	if code, _, body := e.call(http.MethodPut, "/api/v1/destination-policy", `{"mode":"networks","networks":["10.9.0.0/16"," 192.168.0.0/16"]}`); code != http.StatusOK {
		t.Fatalf("set networks: %d %v", code, body)
	}
	if code, _, body := e.api(http.MethodPost, "/api/v1/tasks/validate", operator, byAddress); code != http.StatusOK || body["ok"] != true {
		t.Fatalf("an address inside the networks: %d %v", code, body)
	}
	// The token endpoint an OAuth peer sends its client secret to is held
	// to the networks too.
	oauthPeer := taskJSON("oauth-peer", func(m map[string]any) {
		m["peer"] = map[string]any{"alias": "B", "config_type": "address", "address": []string{"10.9.9.9:9093"},
			"security_protocol": "SASL_SSL", "sasl_mechanism": "OAUTHBEARER",
			"oauth": map[string]any{"token_endpoint": "https://203.0.113.7/token", "client_id": "kmirror", "client_secret": "s"}}
	})
	if code, _, body := e.api(http.MethodPost, "/api/v1/tasks/validate", operator, oauthPeer); code != http.StatusOK || body["ok"] != false ||
		!strings.Contains(fmt.Sprint(body), "peer.oauth.token_endpoint") {
		t.Fatalf("a token endpoint outside the networks: %d %v", code, body)
	}
	code, _, body = e.call(http.MethodGet, "/api/v1/audit?action=destination-policy", "")
	if code != http.StatusOK || len(body["entries"].([]any)) != 8 {
		t.Fatalf("audit of the policy's changes: %d %v", code, body)
	}
}

func TestDestinationPolicyPage(t *testing.T) {
	e := newEnv(t)
	e.signIn(e.client, "admin", adminPassword)
	p := e.get(e.client, "/destination-policy")
	if p.status != http.StatusOK || p.doc.Find(`[data-testid="policy-mode-any"][checked]`).Length() != 1 {
		t.Fatalf("policy page: %d\n%s", p.status, p.body)
	}
	bad := e.postForm(e.client, "/destination-policy", url.Values{"_csrf": {p.csrf(t)}, "mode": {"networks"}, "networks": {"10.0.0.0/8\nnot-a-net"}}, nil)
	if bad.status != http.StatusUnprocessableEntity || !strings.Contains(bad.testid("error-networks").Text(), "not-a-net") {
		t.Fatalf("a bad network: %d %q", bad.status, bad.testid("error-networks").Text())
	}
	ok := e.postForm(e.client, "/destination-policy", url.Values{"_csrf": {p.csrf(t)}, "mode": {"networks"}, "networks": {"10.0.0.0/8\n192.168.1.0/24"}}, nil)
	if ok.url != "/destination-policy" || ok.doc.Find(`[data-testid="policy-mode-networks"][checked]`).Length() != 1 ||
		ok.testid("policy-networks").Text() != "10.0.0.0/8\n192.168.1.0/24" || !strings.Contains(ok.testid("policy-changed").Text(), "admin") {
		t.Fatalf("after saving: %s %q %q", ok.url, ok.testid("policy-networks").Text(), ok.testid("policy-changed").Text())
	}
}

package web_test

import (
	"context"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/PuerkitoBio/goquery"

	"github.com/kmirror/kmirror/internal/service"
)

// addUser makes an account with role through the service, as kmirror itself.
func (e *taskEnv) addUser(name string, role service.Role) {
	e.t.Helper()
	if _, err := e.svc.CreateUser(context.Background(), service.NewUser{Name: name, Role: role, Password: name + "-password"}); err != nil {
		e.t.Fatal(err)
	}
}

func TestConsoleShowsAndAllowsByRole(t *testing.T) {
	e := newTaskEnv(t)
	if code, _, body := e.call(http.MethodPost, "/api/v1/tasks", taskJSON("orders-dr", nil)); code != http.StatusCreated {
		t.Fatalf("create task: %d %v", code, body)
	}
	e.addUser("vera", service.RoleViewer)
	e.addUser("otto", service.RoleOperator)
	for _, tc := range []struct {
		user                      string
		instanceForms, taskForms  bool
		adminNav                  bool
		addInstance, pause, users int
	}{
		{"vera", false, false, false, http.StatusForbidden, http.StatusForbidden, http.StatusForbidden},
		{"otto", false, true, false, http.StatusForbidden, http.StatusOK, http.StatusForbidden},
		{"admin", true, true, true, http.StatusUnprocessableEntity, http.StatusOK, http.StatusOK},
	} {
		t.Run(tc.user, func(t *testing.T) {
			b := e.newBrowser()
			pw := tc.user + "-password"
			if tc.user == "admin" {
				pw = adminPassword
			}
			p := e.signIn(b, tc.user, pw)
			if p.testid("current-user").Text() != tc.user {
				t.Fatalf("not signed in as %s", tc.user)
			}
			if got := p.testid("add-cluster-form").Length() > 0; got != tc.instanceForms {
				t.Errorf("add-instance form shown = %v", got)
			}
			if got := p.testid("remove-cluster").Length() > 0; got != tc.instanceForms {
				t.Errorf("remove-instance buttons shown = %v", got)
			}
			for _, id := range []string{"nav-users", "nav-tokens", "nav-audit"} {
				if got := p.testid(id).Length() > 0; got != tc.adminNav {
					t.Errorf("%s shown = %v", id, got)
				}
			}
			sc := e.get(b, "/instances/east/smart-connect")
			if got := sc.testid("create-task").Length() > 0; got != tc.taskForms {
				t.Errorf("create-task shown = %v", got)
			}
			if got := sc.testid("task-delete").Length() > 0; got != tc.taskForms {
				t.Errorf("task actions shown = %v", got)
			}
			if got := e.get(b, "/tasks/orders-dr").testid("action-delete").Length() > 0; got != tc.taskForms {
				t.Errorf("task page actions shown = %v", got)
			}
			csrf := sc.csrf(t)
			if p := e.postForm(b, "/instances", clusterForm(csrf, "name", "bad name!"), nil); p.status != tc.addInstance {
				t.Errorf("add instance: %d, want %d", p.status, tc.addInstance)
			}
			if p := e.postForm(b, "/instances/east/smart-connect/orders-dr/pause", url.Values{"_csrf": {csrf}}, nil); p.status != tc.pause {
				t.Errorf("pause: %d, want %d", p.status, tc.pause)
			}
			if p := e.get(b, "/users"); p.status != tc.users {
				t.Errorf("users page: %d, want %d", p.status, tc.users)
			}
			// Pages that only lead to a refused change are refused too.
			for _, path := range []string{"/instances/east/smart-connect/new", "/instances/east/smart-connect/orders-dr/restart", "/dashboard/import"} {
				want := http.StatusOK
				if !tc.taskForms {
					want = http.StatusForbidden
				}
				if p := e.get(b, path); p.status != want {
					t.Errorf("GET %s: %d, want %d", path, p.status, want)
				}
			}
		})
	}
}

func TestConsoleManagesUsersTokensAndShowsAudit(t *testing.T) {
	e := newTaskEnv(t)
	e.signIn(e.client, "admin", adminPassword)
	p := e.get(e.client, "/users")
	p = e.postForm(e.client, "/users", url.Values{"_csrf": {p.csrf(t)}, "name": {"olga"}, "role": {"operator"}, "password": {"short"}}, nil)
	if p.status != http.StatusUnprocessableEntity || p.testid("error-password").Length() == 0 {
		t.Fatalf("short password: %d", p.status)
	}
	p = e.postForm(e.client, "/users", url.Values{"_csrf": {p.csrf(t)}, "name": {"olga"}, "role": {"operator"}, "password": {"olga-password-1"}}, nil)
	if row := p.doc.Find(`[data-testid="user-row"][data-user="olga"]`); row.Length() != 1 || row.Find(`[data-testid="user-role"]`).Text() != "operator" {
		t.Fatalf("olga not listed as operator:\n%s", p.testid("users-table").Text())
	}

	p = e.get(e.client, "/tokens")
	p = e.postForm(e.client, "/tokens", url.Values{"_csrf": {p.csrf(t)}, "name": {"ci"}, "role": {"operator"}}, nil)
	tok := p.testid("token-value").Text()
	if p.status != http.StatusCreated || !strings.HasPrefix(tok, service.TokenPrefix) || p.header.Get("Cache-Control") != "no-store" {
		t.Fatalf("token page after create: %d %q", p.status, tok)
	}
	if code, _, _ := e.api(http.MethodGet, "/api/v1/tasks", tok, ""); code != http.StatusOK {
		t.Fatalf("the console's token does not work: %d", code)
	}
	if again := e.get(e.client, "/tokens"); strings.Contains(again.body, tok) {
		t.Fatal("the token is shown a second time")
	}
	p = e.postForm(e.client, "/tokens/ci/revoke", url.Values{"_csrf": {p.csrf(t)}}, nil)
	if code, _, _ := e.api(http.MethodGet, "/api/v1/tasks", tok, ""); code != http.StatusUnauthorized {
		t.Fatalf("revoked in the console, token still works: %d", code)
	}

	a := e.get(e.client, "/audit?action=token.")
	var actions []string
	a.testid("audit-row").Each(func(_ int, s *goquery.Selection) { actions = append(actions, s.AttrOr("data-action", "")) })
	if strings.Join(actions, ",") != "token.revoke,token.create" {
		t.Fatalf("filtered audit page: %v", actions)
	}
	if href, _ := a.testid("audit-export").Attr("href"); href != "/audit/export?action=token." {
		t.Fatalf("export link %q", href)
	}
	req, _ := http.NewRequest(http.MethodGet, e.srv.URL+"/audit/export?action=token.", nil)
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var body strings.Builder
	if _, err := io.Copy(&body, resp.Body); err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(body.String(), "\n"); n != 2 || resp.Header.Get("Content-Type") != "application/x-ndjson" {
		t.Fatalf("export: %d lines, %q", n, resp.Header.Get("Content-Type"))
	}
}

func TestChangeOwnPasswordInTheConsole(t *testing.T) {
	e := newEnv(t)
	other := e.newBrowser()
	e.signIn(other, "admin", adminPassword)
	e.signIn(e.client, "admin", adminPassword)
	p := e.get(e.client, "/account")
	p = e.postForm(e.client, "/account/password", url.Values{"_csrf": {p.csrf(t)}, "current_password": {"wrong"}, "password": {"brand-new-password"}}, nil)
	if p.status != http.StatusUnprocessableEntity || p.testid("error-current_password").Length() == 0 {
		t.Fatalf("wrong current password: %d", p.status)
	}
	p = e.postForm(e.client, "/account/password", url.Values{"_csrf": {p.csrf(t)}, "current_password": {adminPassword}, "password": {"brand-new-password"}}, nil)
	if p.url != "/signin" {
		t.Fatalf("after the change at %s", p.url)
	}
	if signedIn(e, other) {
		t.Fatal("another session survived the password change")
	}
	e.signIn(e.client, "admin", "brand-new-password")
	if !signedIn(e, e.client) {
		t.Fatal("the new password does not sign in")
	}
}

func TestConsoleChangesARole(t *testing.T) {
	e := newTaskEnv(t)
	e.addUser("olga", service.RoleViewer)
	e.signIn(e.client, "admin", adminPassword)
	p := e.get(e.client, "/users")
	if p.doc.Find(`[data-testid="user-row"][data-user="admin"] [data-testid="user-role-select"]`).Length() != 0 {
		t.Error("the admin is offered to change their own role")
	}
	p = e.postForm(e.client, "/users/olga/role", url.Values{"_csrf": {p.csrf(t)}, "role": {"operator"}}, nil)
	if got := p.doc.Find(`[data-testid="user-row"][data-user="olga"] [data-testid="user-role"]`).Text(); got != "operator" {
		t.Fatalf("olga's role after the change: %q (%s)", got, p.testid("flash-success").Text())
	}
	p = e.postForm(e.client, "/users/olga/role", url.Values{"_csrf": {p.csrf(t)}, "role": {"root"}}, nil)
	if p.testid("flash-error").Length() == 0 {
		t.Fatal("an unknown role was not refused with a message")
	}
}

package consoletest

import (
	"net/http"
	"strings"
	"testing"

	"github.com/chromedp/chromedp"
)

// apiPost calls the console's JSON API with the test's admin token.
func apiPost(t *testing.T, base, path, body string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
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

func (b *browser) signInAs(user, password string) {
	b.t.Helper()
	b.run("sign in as "+user,
		chromedp.Navigate(b.base+"/signin"),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="signin-form"]`)),
		chromedp.SendKeys(chromedp.CSS(`#user`), user),
		chromedp.SendKeys(chromedp.CSS(`#password`), password),
		chromedp.Click(chromedp.CSS(`[data-testid="signin-submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="current-user"]`)))
}

// signOut signs the user out from a freshly loaded page: a click right
// after a form's answer arrived could find the button of the page before
// it ("Could not find node with given id", ci61).
func (b *browser) signOut(user string) {
	b.t.Helper()
	b.run(user+" signs out", chromedp.Navigate(b.base+"/instances"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="signout"]`)),
		chromedp.Click(chromedp.CSS(`[data-testid="signout"]`)), chromedp.WaitVisible(chromedp.CSS(`[data-testid="signin-form"]`)))
}

func (b *browser) count(sel string) int {
	b.t.Helper()
	return b.evalInt(`document.querySelectorAll(` + q(sel) + `).length`)
}

// The console shows each role what it may do, and the server refuses the
// rest: a viewer sees no forms that change anything and gets a 403 page for
// the users page; an operator may create tasks but not instances; an admin
// manages users and can sign out everywhere.
func TestConsoleByRole(t *testing.T) {
	base := startConsole(t)
	apiPost(t, base, "/api/v1/clusters", `{"name":"east","bootstrap_servers":["127.0.0.1:1"]}`)
	apiPost(t, base, "/api/v1/users", `{"name":"vera","role":"viewer","password":"vera-password"}`)
	apiPost(t, base, "/api/v1/users", `{"name":"otto","role":"operator","password":"otto-password"}`)
	b := newBrowser(t, base)

	for _, tc := range []struct {
		user, password                   string
		instanceForms, createTask, admin bool
	}{
		{"vera", "vera-password", false, false, false},
		{"otto", "otto-password", false, true, false},
		{"admin", adminPassword, true, true, true},
	} {
		b.signInAs(tc.user, tc.password)
		b.run("open instances", chromedp.Navigate(base+"/instances"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="clusters-table"]`)))
		b.screenshot("instances-as-" + tc.user)
		if got := b.count(`[data-testid="add-cluster-form"]`) > 0; got != tc.instanceForms {
			t.Errorf("%s: add-instance form shown = %v", tc.user, got)
		}
		if got := b.count(`[data-testid="remove-cluster"]`) > 0; got != tc.instanceForms {
			t.Errorf("%s: remove buttons shown = %v", tc.user, got)
		}
		if got := b.count(`[data-testid="nav-users"]`) > 0; got != tc.admin {
			t.Errorf("%s: Users in the navigation = %v", tc.user, got)
		}
		b.run("open smart connect", chromedp.Navigate(base+"/instances/east/smart-connect"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="tasks-table"]`)))
		if got := b.count(`[data-testid="create-task"]`) > 0; got != tc.createTask {
			t.Errorf("%s: create task shown = %v", tc.user, got)
		}
		b.run("open users", chromedp.Navigate(base+"/users"), chromedp.WaitVisible(chromedp.CSS(`main, body`)))
		if tc.admin {
			if b.count(`[data-testid="user-row"]`) != 3 {
				t.Errorf("admin: users page lists %d users", b.count(`[data-testid="user-row"]`))
			}
		} else if got := b.text(`[data-testid="error-status"]`); got != "Forbidden" {
			t.Errorf("%s: users page says %q, want Forbidden", tc.user, got)
		}
		b.noNewErrors("as " + tc.user)
		if !tc.admin {
			b.signOut(tc.user)
		}
	}

	// The admin adds a user in the console, then signs out everywhere.
	b.run("add a user",
		chromedp.SendKeys(chromedp.CSS(`#user_name`), "ines"),
		setSelect(`#role`, "operator"),
		chromedp.SendKeys(chromedp.CSS(`#user_password`), "ines-password"),
		chromedp.Click(chromedp.CSS(`[data-testid="add-user-submit"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="user-row"][data-user="ines"]`)))
	b.screenshot("users")
	b.run("sign out everywhere",
		chromedp.Navigate(base+"/account"),
		chromedp.Click(chromedp.CSS(`[data-testid="signout-everywhere"]`)),
		chromedp.WaitVisible(chromedp.CSS(`[data-testid="signin-form"]`)))
	b.run("a page after it", chromedp.Navigate(base+"/instances"), chromedp.WaitVisible(chromedp.CSS(`[data-testid="signin-form"]`)))
	b.noNewErrors("admin")
}

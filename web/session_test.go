package web_test

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/web"
)

// clock is a settable time for the server's sessions.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.t }
func (c *clock) Add(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
}

func signedIn(e *env, c *http.Client) bool {
	e.t.Helper()
	return e.get(c, "/instances").url == "/instances"
}

func TestSessionIdleAndAbsoluteLimitsAreEnforced(t *testing.T) {
	clk := &clock{t: time.Now()}
	e := newEnvWith(t, func(d *web.Deps) { d.Now = clk.Now })

	// Idle: a request now and then keeps it; a longer silence ends it.
	e.signIn(e.client, "admin", adminPassword)
	clk.Add(web.SessionIdle - time.Minute)
	if !signedIn(e, e.client) {
		t.Fatal("signed out before the idle limit")
	}
	clk.Add(web.SessionIdle - time.Minute)
	if !signedIn(e, e.client) {
		t.Fatal("a request did not renew the idle limit")
	}
	clk.Add(web.SessionIdle + time.Minute)
	if signedIn(e, e.client) {
		t.Fatal("still signed in after the idle limit")
	}

	// Absolute: even a busy session ends.
	e.signIn(e.client, "admin", adminPassword)
	for elapsed := time.Duration(0); elapsed < web.SessionAbsolute-web.SessionIdle; elapsed += web.SessionIdle / 2 {
		clk.Add(web.SessionIdle / 2)
		if !signedIn(e, e.client) {
			t.Fatalf("signed out after %v of activity, before the absolute limit", elapsed)
		}
	}
	clk.Add(web.SessionIdle)
	if signedIn(e, e.client) {
		t.Fatal("still signed in past the absolute limit")
	}
}

func TestSessionCookieLifetimeIsTheStatedOne(t *testing.T) {
	e := newEnv(t)
	c := e.newBrowser()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	p := e.signIn(c, "admin", adminPassword)
	want := "Max-Age=" + strconv.Itoa(int(web.SessionAbsolute/time.Second))
	for _, sc := range p.header.Values("Set-Cookie") {
		if strings.HasPrefix(sc, "kmirror_session=") && !strings.Contains(sc, want) {
			t.Fatalf("session cookie %q, want %s", sc, want)
		}
	}
}

func TestSignOutEverywhereEndsEverySession(t *testing.T) {
	e := newEnv(t)
	a, b := e.newBrowser(), e.newBrowser()
	p := e.signIn(a, "admin", adminPassword)
	e.signIn(b, "admin", adminPassword)
	if !signedIn(e, b) {
		t.Fatal("second browser not signed in")
	}
	if p.testid("signout-everywhere").Length() == 0 {
		// The button is on the account page.
		p = e.get(a, "/account")
	}
	p = e.postForm(a, "/signout/everywhere", url.Values{"_csrf": {p.csrf(t)}}, nil)
	if p.url != "/signin" {
		t.Fatalf("sign out everywhere ended at %s", p.url)
	}
	if signedIn(e, a) || signedIn(e, b) {
		t.Fatal("a session survived sign out everywhere")
	}
	if !signedIn(e, e.signInAndReturn(b)) {
		t.Fatal("cannot sign in again afterwards")
	}
}

func (e *env) signInAndReturn(c *http.Client) *http.Client {
	e.signIn(c, "admin", adminPassword)
	return c
}

func TestPasswordChangeEndsEverySession(t *testing.T) {
	e := newEnv(t)
	a := e.newBrowser()
	e.signIn(a, "admin", adminPassword)
	if err := e.svc.SetPassword(context.Background(), "admin", "a-new-password-1"); err != nil {
		t.Fatal(err)
	}
	if signedIn(e, a) {
		t.Fatal("a session survived the password change")
	}
	if p := e.signIn(a, "admin", adminPassword); p.status != http.StatusUnauthorized {
		t.Fatalf("old password: %d", p.status)
	}
	e.signIn(a, "admin", "a-new-password-1")
	if !signedIn(e, a) {
		t.Fatal("new password does not sign in")
	}
}

func TestCSRFTokenIsBoundToTheSession(t *testing.T) {
	e := newEnv(t)
	a, b := e.newBrowser(), e.newBrowser()
	pa := e.signIn(a, "admin", adminPassword)
	e.signIn(b, "admin", adminPassword)
	// A's token in B's session: refused, and B stays signed in.
	if p := e.postForm(b, "/signout", url.Values{"_csrf": {pa.csrf(t)}}, nil); p.status != http.StatusForbidden {
		t.Fatalf("another session's token: %d, want 403", p.status)
	}
	if !signedIn(e, b) {
		t.Fatal("signed out by a foreign token")
	}
	// No separate CSRF cookie exists for a sibling site to plant.
	u, _ := url.Parse(e.srv.URL)
	for _, ck := range a.Jar.Cookies(u) {
		if strings.Contains(strings.ToLower(ck.Name), "csrf") {
			t.Fatalf("cookie %q carries a CSRF token", ck.Name)
		}
	}
	// A fresh browser with no session has no token to match.
	if p := e.postForm(e.newBrowser(), "/signin", url.Values{"_csrf": {pa.csrf(t)}, "user": {"admin"}, "password": {adminPassword}}, nil); p.status != http.StatusForbidden {
		t.Fatalf("token without its session: %d, want 403", p.status)
	}
}

func TestSameSiteFormsAreNotTrustedByDefault(t *testing.T) {
	const sibling = "https://other.example.com"
	for _, tc := range []struct {
		name    string
		trusted []string
		header  http.Header
		want    int
	}{
		{"same origin", nil, http.Header{"Sec-Fetch-Site": {"same-origin"}}, http.StatusOK},
		{"no fetch metadata (not a browser)", nil, nil, http.StatusOK},
		{"same site", nil, http.Header{"Sec-Fetch-Site": {"same-site"}, "Origin": {sibling}}, http.StatusForbidden},
		{"cross site", nil, http.Header{"Sec-Fetch-Site": {"cross-site"}, "Origin": {"https://evil.example"}}, http.StatusForbidden},
		{"other origin, old browser", nil, http.Header{"Origin": {sibling}}, http.StatusForbidden},
		{"same site, trusted origin", []string{sibling}, http.Header{"Sec-Fetch-Site": {"same-site"}, "Origin": {sibling}}, http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnvWith(t, func(d *web.Deps) { d.TrustedOrigins = tc.trusted })
			p := e.signIn(e.client, "admin", adminPassword)
			// Adding an instance with a bad name is a harmless change: 422
			// when let through.
			p = e.postForm(e.client, "/instances", url.Values{"_csrf": {p.csrf(t)}, "name": {"x"}}, tc.header)
			got := http.StatusOK
			if p.status == http.StatusForbidden {
				got = http.StatusForbidden
			}
			if got != tc.want {
				t.Fatalf("status %d, want %s", p.status, http.StatusText(tc.want))
			}
		})
	}
}

// copyCookies makes a second browser holding the same cookies as c: a
// stolen or copied session cookie.
func (e *env) copyCookies(c *http.Client) *http.Client {
	e.t.Helper()
	u, _ := url.Parse(e.srv.URL)
	thief := e.newBrowser()
	thief.Jar.SetCookies(u, c.Jar.Cookies(u))
	return thief
}

// A normal sign-out ends the session on the server: a copy of its cookie
// made before stops working.
func TestSignOutEndsACopiedCookie(t *testing.T) {
	e := newEnv(t)
	p := e.signIn(e.client, "admin", adminPassword)
	copied := e.copyCookies(e.client)
	if !signedIn(e, copied) {
		t.Fatal("the copied cookie is not signed in before the sign-out")
	}
	e.postForm(e.client, "/signout", url.Values{"_csrf": {p.csrf(t)}}, nil)
	if signedIn(e, e.client) {
		t.Fatal("still signed in after signing out")
	}
	if signedIn(e, copied) {
		t.Fatal("a cookie copied before the sign-out still works")
	}
}

// A session is bound to its account's identity: an account deleted and
// made again under the same name (with another role) does not take the
// old account's sessions.
func TestDeletedAccountsCookieNeverComesBack(t *testing.T) {
	e := newEnv(t)
	ctx := service.WithActor(context.Background(), service.Actor{Name: "admin", Role: service.RoleAdmin})
	if _, err := e.svc.CreateUser(ctx, service.NewUser{Name: "olga", Role: service.RoleViewer, Password: "olga-password-1"}); err != nil {
		t.Fatal(err)
	}
	olga := e.newBrowser()
	e.signIn(olga, "olga", "olga-password-1")
	copied := e.copyCookies(olga)
	if err := e.svc.DeleteUser(ctx, "olga"); err != nil {
		t.Fatal(err)
	}
	if _, err := e.svc.CreateUser(ctx, service.NewUser{Name: "olga", Role: service.RoleAdmin, Password: "other-password-2"}); err != nil {
		t.Fatal(err)
	}
	if p := e.get(copied, "/account"); p.url != "/signin" {
		t.Fatalf("the deleted account's cookie opened %s as the new olga", p.url)
	}
}

package web_test

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/account"
	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/web"
)

const metricsToken = "metrics-token-0123456789abcdef0123"

func requestWithHost(t *testing.T, c *http.Client, rawURL, host string, header http.Header) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, rawURL, nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Host = host
	for k, v := range header {
		req.Header[k] = v
	}
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	io.Copy(io.Discard, resp.Body) //nolint:errcheck // draining only
	resp.Body.Close()
	return resp
}

func TestHostAllowListStopsRebinding(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "kmirror_up 1\n") }) //nolint:errcheck
	e := newEnvWith(t, func(d *web.Deps) {
		d.PublicURL, _ = web.ParsePublicURL("https://kmirror.example.com")
		d.Metrics = metrics
	})
	noRedirect := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	_, port, _ := net.SplitHostPort(strings.TrimPrefix(e.srv.URL, "http://"))
	for _, tc := range []struct {
		host, path string
		want       int
	}{
		{"evil.example", "/signin", http.StatusMisdirectedRequest},
		{"evil.example:" + port, "/instances", http.StatusMisdirectedRequest},
		{"evil.example", "/metrics", http.StatusMisdirectedRequest},
		{"evil.example", "/api/v1/clusters", http.StatusMisdirectedRequest},
		{"kmirror.example.com.evil.example", "/signin", http.StatusMisdirectedRequest},
		{"evil.example", "/healthz", http.StatusOK},
		{"127.0.0.1:" + port, "/signin", http.StatusOK},
		{"localhost:" + port, "/signin", http.StatusOK},
		{"[::1]:" + port, "/signin", http.StatusOK},
		{"10.1.2.3:8080", "/metrics", http.StatusOK},
		{"kmirror.example.com", "/signin", http.StatusOK},
		{"KMIRROR.example.com.", "/metrics", http.StatusOK},
	} {
		resp := requestWithHost(t, noRedirect, e.srv.URL+tc.path, tc.host, nil)
		if resp.StatusCode != tc.want {
			t.Errorf("Host %q %s: status %d, want %d", tc.host, tc.path, resp.StatusCode, tc.want)
		}
	}
}

func TestMetricsTokenRequiredWhenSet(t *testing.T) {
	metrics := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "kmirror_up 1\n") }) //nolint:errcheck
	e := newEnvWith(t, func(d *web.Deps) { d.Metrics, d.MetricsToken = metrics, metricsToken })
	for _, tc := range []struct {
		auth string
		want int
	}{
		{"", http.StatusUnauthorized},
		{"Bearer wrong", http.StatusUnauthorized},
		{"Bearer " + apiToken, http.StatusUnauthorized},
		{"Bearer " + metricsToken, http.StatusOK},
	} {
		h := http.Header{}
		if tc.auth != "" {
			h.Set("Authorization", tc.auth)
		}
		// With a token, a rebound name learns nothing without it either.
		resp := requestWithHost(t, http.DefaultClient, e.srv.URL+"/metrics", "evil.example", h)
		if resp.StatusCode != tc.want {
			t.Errorf("/metrics with %q: %d, want %d", tc.auth, resp.StatusCode, tc.want)
		}
	}
}

// tlsServer serves web over HTTPS through Server.Serve with httptest's
// certificate and returns its URL and a client that trusts it.
func tlsServer(t *testing.T) (string, *http.Client, *env) {
	t.Helper()
	cert := httptest.NewUnstartedServer(nil)
	cert.StartTLS()
	pair, client := cert.TLS.Certificates[0], cert.Client()
	cert.Close()
	e := newEnv(t) // its store and service; its plain server stays unused
	srv, err := web.New(web.Deps{Service: e.svc, DataDir: e.dataDir, APIToken: apiToken, Logger: slog.New(slog.DiscardHandler),
		TLS: &tls.Config{Certificates: []tls.Certificate{pair}}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("TLS server: %v", err)
			}
		case <-time.After(15 * time.Second):
			t.Error("TLS server did not stop")
		}
	})
	return "https://" + ln.Addr().String(), client, e
}

func TestTLSServesSecureHostCookiesAndHSTS(t *testing.T) {
	base, client, e := tlsServer(t)
	jarClient := e.newBrowser()
	jarClient.Transport = client.Transport
	jarClient.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }

	resp, err := jarClient.Get(base + "/signin")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.TLS == nil || resp.TLS.Version < tls.VersionTLS12 {
		t.Fatalf("not served over TLS 1.2+: %+v", resp.TLS)
	}
	if got := resp.Header.Get("Strict-Transport-Security"); !strings.Contains(got, "max-age=") {
		t.Errorf("HSTS %q", got)
	}
	var session string
	for _, sc := range resp.Header.Values("Set-Cookie") {
		if strings.HasPrefix(sc, "__Host-kmirror_session=") {
			session = sc
		}
		if strings.HasPrefix(sc, "kmirror_") || strings.HasPrefix(sc, "_csrf") {
			t.Errorf("cookie without the __Host- prefix: %q", sc)
		}
	}
	if !strings.Contains(session, "Secure") || !strings.Contains(session, "Path=/") || strings.Contains(session, "Domain=") {
		t.Fatalf("session cookie %q, want __Host- with Secure, Path=/ and no Domain", session)
	}
	tok := strings.SplitN(strings.SplitN(string(body), `name="_csrf" value="`, 2)[1], `"`, 2)[0]
	form := url.Values{"_csrf": {tok}, "user": {"admin"}, "password": {adminPassword}}
	resp, err = jarClient.PostForm(base+"/signin", form)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusSeeOther || resp.Header.Get("Location") != "/instances" {
		t.Fatalf("sign-in over TLS: %d to %q", resp.StatusCode, resp.Header.Get("Location"))
	}

	// TLS 1.1 and older are refused.
	old := client.Transport.(*http.Transport).Clone()
	old.TLSClientConfig.MaxVersion = tls.VersionTLS11
	old.TLSClientConfig.MinVersion = tls.VersionTLS10
	if resp, err := (&http.Client{Transport: old}).Get(base + "/healthz"); err == nil {
		resp.Body.Close()
		t.Fatal("a TLS 1.1 client was served")
	}
}

func TestForwardedForOnlyFromTrustedProxies(t *testing.T) {
	for _, tc := range []struct {
		name    string
		proxies string
		// whether a client sent as 1.2.3.4 trying many names throttles a
		// sign-in sent as 5.6.7.8
		shared bool
	}{
		{"no trusted proxies: the header is ignored", "", true},
		{"loopback trusted: the header names the client", "127.0.0.0/8", false},
		{"another network trusted: the header is ignored", "10.0.0.0/8", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnvWith(t, func(d *web.Deps) {
				nets, err := web.ParseCIDRs(tc.proxies)
				if err != nil {
					t.Fatal(err)
				}
				d.TrustedProxies = nets
			})
			signInFrom := func(addr, user, password string) page {
				p := e.get(e.client, "/signin")
				return e.postForm(e.client, "/signin", url.Values{"_csrf": {p.csrf(t)}, "user": {user}, "password": {password}},
					http.Header{"X-Forwarded-For": {addr}})
			}
			// Many names from one address (spraying) make the address wait.
			var p page
			for i := 0; i < 30 && p.status != http.StatusTooManyRequests; i++ {
				p = signInFrom("1.2.3.4", fmt.Sprintf("sprayed%02d", i), "wrong")
			}
			if p.status != http.StatusTooManyRequests {
				t.Fatalf("never throttled: %d", p.status)
			}
			p = signInFrom("5.6.7.8", "admin", adminPassword)
			if got := p.status == http.StatusTooManyRequests; got != tc.shared {
				t.Fatalf("other forwarded address throttled = %v (status %d), want %v", got, p.status, tc.shared)
			}
		})
	}
}

// Behind a proxy every user may come from one address: the proxy's, when
// kmirror does not trust it, or one forwarded address (a NAT) when it does.
// A hundred wrong passwords for one account through that address — each
// waited for, so every one is checked — slow that account only: another
// user signs in through the same address at once, in a browser of their own.
func TestWrongPasswordsOfOneAccountDoNotLockOutTheAddress(t *testing.T) {
	for _, tc := range []struct {
		name, proxies, forwarded string
	}{
		{"the proxy is not trusted: its address is everyone's", "", ""},
		{"a trusted proxy forwards one client address", "127.0.0.0/8", "203.0.113.50"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := time.Unix(1_000_000, 0)
			clock := func() time.Time { return now }
			e := newEnvWithService(t, func(d *service.Deps) {
				d.Throttle, d.AddressThrottle = account.NewThrottle(), account.NewThrottle()
				d.AddressThrottle.Free = 20
				d.Throttle.Now, d.AddressThrottle.Now = clock, clock
			}, func(d *web.Deps) {
				nets, err := web.ParseCIDRs(tc.proxies)
				if err != nil {
					t.Fatal(err)
				}
				d.TrustedProxies = nets
			})
			if status, _, body := e.api(http.MethodPost, "/api/v1/users", apiToken,
				`{"name": "bob", "role": "viewer", "password": "bob-password"}`); status != http.StatusCreated {
				t.Fatalf("create bob: %d %v", status, body)
			}
			header := http.Header{}
			if tc.forwarded != "" {
				header.Set("X-Forwarded-For", tc.forwarded)
			}
			signIn := func(c *http.Client, user, password string) page {
				p := e.get(c, "/signin")
				return e.postForm(c, "/signin", url.Values{"_csrf": {p.csrf(t)}, "user": {user}, "password": {password}}, header)
			}
			attacker := e.newBrowser()
			for i := range 100 {
				p := signIn(attacker, "admin", "wrong")
				if p.status == http.StatusTooManyRequests {
					wait, err := strconv.Atoi(p.header.Get("Retry-After"))
					if err != nil || wait <= 0 || wait > 300 {
						t.Fatalf("attempt %d: Retry-After %q, want 1 to 300 seconds", i, p.header.Get("Retry-After"))
					}
					now = now.Add(time.Duration(wait) * time.Second)
					p = signIn(attacker, "admin", "wrong")
				}
				if p.status != http.StatusUnauthorized {
					t.Fatalf("wrong password %d, after waiting: status %d, want 401", i, p.status)
				}
			}
			bob := e.newBrowser()
			if p := signIn(bob, "bob", "bob-password"); p.url != "/instances" || p.testid("current-user").Text() != "bob" {
				t.Fatalf("bob after 100 wrong passwords of admin through the same address: at %s with status %d, user %q",
					p.url, p.status, p.testid("current-user").Text())
			}
			// admin's own right password waits (at most 5 minutes), then works.
			admin := e.newBrowser()
			p := signIn(admin, "admin", adminPassword)
			wait, err := strconv.Atoi(p.header.Get("Retry-After"))
			if p.status != http.StatusTooManyRequests || err != nil || wait > 300 {
				t.Fatalf("admin right after the failures: status %d Retry-After %q, want 429 for at most 300 s", p.status, p.header.Get("Retry-After"))
			}
			now = now.Add(time.Duration(wait) * time.Second)
			if p := signIn(admin, "admin", adminPassword); p.url != "/instances" {
				t.Fatalf("admin after the wait: at %s with status %d", p.url, p.status)
			}
		})
	}
}

func TestLanguageSwitchStaysOnSite(t *testing.T) {
	e := newEnv(t)
	c := e.newBrowser()
	c.CheckRedirect = func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }
	for _, tc := range []struct{ rawNext, want string }{
		{"/instances", "/instances"},
		{"/%09/evil.example", "/"},  // a tab browsers drop: //evil.example
		{"/%0A/evil.example", "/"},  // a new line, likewise
		{"%2F%2Fevil.example", "/"}, // scheme-relative
		{"/%5Cevil.example", "/"},   // a backslash browsers read as /
		{"https://evil.example", "/"},
		{"/%00x", "/"},
	} {
		p := e.get(c, "/lang?to=en&next="+tc.rawNext)
		if p.status != http.StatusSeeOther || p.header.Get("Location") != tc.want {
			t.Errorf("next=%s: %d to %q, want %q", tc.rawNext, p.status, p.header.Get("Location"), tc.want)
		}
	}
}

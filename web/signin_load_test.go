package web_test

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/account"
	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/internal/service/servicetest"
	"github.com/kmirror/kmirror/web"
)

// 3,000 refused sign-ins with unique 1 KB names, each from its own
// address (the worst case for the per-address throttle): the throttles stay
// within their bound, no name reaches the log, and the console still
// answers and signs the admin in.
func TestRefusedSignInSprayKeepsMemoryBounded(t *testing.T) {
	// The bound is the throttle's own (account's tests); here the spray
	// goes through the web server three times past a bound lowered to
	// 1,000 keys, which keeps the run short under the race detector on a
	// loaded machine (at the default 10,000, a 20,000-attempt spray made
	// 14,205 in 2 minutes there).
	const maxKeys, attempts = 1000, 3000
	ctx := context.Background()
	dir, db, box := servicetest.OpenStore(t, "")
	perAccount, perAddress := account.NewThrottle(), account.NewThrottle()
	perAddress.Free = 20
	perAddress.MaxKeys = maxKeys
	svc, err := service.New(service.Deps{Clusters: db, Users: db, Secrets: box, Throttle: perAccount, AddressThrottle: perAddress})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := account.EnsureAdmin(ctx, db, adminPassword); err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	s, err := web.New(web.Deps{Service: svc, DataDir: dir, APIToken: apiToken,
		Logger: slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	if err != nil {
		t.Fatal(err)
	}
	h := s.Handler()

	// One anonymous session and its token, reused by every attempt.
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1/signin", nil))
	cookies := rec.Result().Cookies()
	body := rec.Body.String()
	tok := strings.SplitN(strings.SplitN(body, `name="_csrf" value="`, 2)[1], `"`, 2)[0]

	post := func(user, password, addr string) *httptest.ResponseRecorder {
		form := url.Values{"_csrf": {tok}, "user": {user}, "password": {password}}
		req := httptest.NewRequest(http.MethodPost, "http://127.0.0.1/signin", strings.NewReader(form.Encode()))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.RemoteAddr = addr + ":40000"
		for _, c := range cookies {
			req.AddCookie(c)
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	deadline := time.Now().Add(2 * time.Minute) // bounded on a slow machine
	var names []string
	for i := 0; i < attempts; i++ {
		if time.Now().After(deadline) {
			t.Fatalf("only %d attempts in 2 minutes", i)
		}
		name := fmt.Sprintf("%06d", i) + strings.Repeat("n", 1018)
		if i%100 == 0 {
			names = append(names, name)
		}
		addr := fmt.Sprintf("10.%d.%d.%d", i>>16&255, i>>8&255, i&255)
		if rec := post(name, "guess", addr); rec.Code != http.StatusUnauthorized {
			t.Fatalf("attempt %d: status %d, want 401", i, rec.Code)
		}
		if n := perAddress.Len(); n > maxKeys {
			t.Fatalf("after %d attempts the address throttle holds %d keys, more than %d", i+1, n, maxKeys)
		}
	}
	if n := perAccount.Len(); n != 0 {
		t.Errorf("names that cannot exist took %d per-account throttle keys", n)
	}
	if n := perAddress.Len(); n < maxKeys*9/10 {
		t.Errorf("the address throttle holds %d keys after %d addresses: the spray never reached its bound of %d", n, attempts, maxKeys)
	}
	t.Logf("after %d refused sign-ins: %d address keys (bound %d), %d account keys", attempts, perAddress.Len(), maxKeys, perAccount.Len())
	for _, n := range names {
		if strings.Contains(logs.String(), n[:64]) {
			t.Fatal("a refused name is in the log")
		}
	}
	rec = httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "http://127.0.0.1/signin", nil))
	if rec.Code != http.StatusOK {
		t.Fatalf("sign-in page after the spray: %d", rec.Code)
	}
	if rec := post("admin", adminPassword, "192.0.2.10"); rec.Code != http.StatusSeeOther {
		t.Fatalf("admin sign-in after the spray: %d", rec.Code)
	}
}

package service_test

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/account"
	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/internal/service/servicetest"
	"github.com/kmirror/kmirror/internal/store"
)

// watchedUsers counts and can hold lookups of accounts.
type watchedUsers struct {
	*store.DB
	lookups atomic.Int64
	hold    chan struct{} // when set, User waits for it to close
	inside  chan struct{} // receives when a lookup is waiting
}

func (w *watchedUsers) User(ctx context.Context, name string) (store.User, error) {
	w.lookups.Add(1)
	if w.hold != nil {
		w.inside <- struct{}{}
		<-w.hold
	}
	return w.DB.User(ctx, name)
}

func newWatchedService(t *testing.T, maxHashing int) (*service.Service, *watchedUsers) {
	t.Helper()
	_, db, box := servicetest.OpenStore(t, "")
	if _, err := account.EnsureAdmin(context.Background(), db, "admin-password"); err != nil {
		t.Fatal(err)
	}
	users := &watchedUsers{DB: db}
	svc, err := service.New(service.Deps{Clusters: db, Users: users, Secrets: box, MaxConcurrentSignIns: maxHashing})
	if err != nil {
		t.Fatal(err)
	}
	return svc, users
}

func TestSignInRefusesLongNamesBeforeAnyWork(t *testing.T) {
	ctx := context.Background()
	svc, users := newWatchedService(t, 0)
	for _, name := range []string{strings.Repeat("a", service.MaxUserNameLength+1), strings.Repeat("é", 1000), ""} {
		if _, err := svc.SignIn(ctx, name, "whatever", "192.0.2.1"); !service.IsCode(err, service.CodeBadCredentials) {
			t.Errorf("name of %d bytes: err = %v, want bad_credentials", len(name), err)
		}
	}
	if n := users.lookups.Load(); n != 0 {
		t.Fatalf("the store was asked %d times for names that cannot exist", n)
	}
	if _, err := svc.SignIn(ctx, strings.Repeat("a", service.MaxUserNameLength), "whatever", "192.0.2.2"); !service.IsCode(err, service.CodeBadCredentials) {
		t.Fatalf("64-byte name: %v", err)
	}
	if users.lookups.Load() != 1 {
		t.Fatal("a 64-byte name was not looked up")
	}
}

func TestSignInThrottlesPerAddressAcrossNames(t *testing.T) {
	ctx := context.Background()
	svc, users := newWatchedService(t, 0)
	var err error
	i := 0
	for ; i < 100 && !service.IsCode(err, service.CodeTooManyAttempts); i++ {
		// A different name each time: the per-account throttle never trips.
		_, err = svc.SignIn(ctx, strings.Repeat("x", 70)+string(rune('a'+i%26)), "guess", "2001:db8:1:2::7")
	}
	if !service.IsCode(err, service.CodeTooManyAttempts) {
		t.Fatalf("100 failures from one address never throttled: %v", err)
	}
	before := users.lookups.Load()
	// The rest of its /64 waits too, and the right password learns nothing.
	if _, err := svc.SignIn(ctx, "admin", "admin-password", "2001:db8:1:2::8"); !service.IsCode(err, service.CodeTooManyAttempts) {
		t.Fatalf("same /64: %v", err)
	}
	if users.lookups.Load() != before {
		t.Fatal("a throttled attempt reached the store")
	}
	if _, err := svc.SignIn(ctx, "admin", "admin-password", "2001:db8:9::1"); err != nil {
		t.Fatalf("another network: %v", err)
	}
}

// throttledService is a service whose sign-in throttles run on a clock the
// test moves, with the accounts admin and bob.
func throttledService(t *testing.T) (svc *service.Service, now *time.Time) {
	t.Helper()
	ctx := context.Background()
	_, db, box := servicetest.OpenStore(t, "")
	if _, err := account.EnsureAdmin(ctx, db, "admin-password"); err != nil {
		t.Fatal(err)
	}
	hash, err := account.Hash("bob-password")
	if err != nil {
		t.Fatal(err)
	}
	if err := db.CreateUser(ctx, store.User{Name: "bob", PasswordHash: hash, Role: string(service.RoleViewer)}); err != nil {
		t.Fatal(err)
	}
	clock := time.Unix(1_000_000, 0)
	now = &clock
	perAccount, perAddress := account.NewThrottle(), account.NewThrottle()
	perAddress.Free = 20
	perAccount.Now, perAddress.Now = func() time.Time { return *now }, func() time.Time { return *now }
	svc, err = service.New(service.Deps{Clusters: db, Users: db, Secrets: box, Throttle: perAccount, AddressThrottle: perAddress})
	if err != nil {
		t.Fatal(err)
	}
	return svc, now
}

// A hundred wrong passwords for one account from one address, each waited
// for so every one is checked: that account waits (from any address, so
// rotating addresses gains nothing), never more than 5 minutes, and the
// right password works after the wait; another account signs in from the
// same address at once, all along.
func TestSignInThrottlesTheAccountNotTheAddress(t *testing.T) {
	ctx := context.Background()
	svc, now := throttledService(t)
	const shared = "192.0.2.80" // a proxy's, say
	longest := time.Duration(0)
	for i := range 100 {
		_, err := svc.SignIn(ctx, "admin", "wrong", shared)
		if e := service.AsError(err); e.Code == service.CodeTooManyAttempts {
			longest = max(longest, e.RetryAfter)
			*now = now.Add(e.RetryAfter) // wait, then try again
			_, err = svc.SignIn(ctx, "admin", "wrong", shared)
		}
		if !service.IsCode(err, service.CodeBadCredentials) {
			t.Fatalf("wrong password %d, after waiting: %v, want bad_credentials", i, err)
		}
		if i%10 == 0 {
			if _, err := svc.SignIn(ctx, "bob", "bob-password", shared); err != nil {
				t.Fatalf("after %d wrong passwords of admin, bob from the same address: %v", i+1, err)
			}
		}
	}
	if longest != 5*time.Minute {
		t.Errorf("longest wait %v, want the cap, 5m", longest)
	}
	for _, client := range []string{shared, "198.51.100.7"} {
		_, err := svc.SignIn(ctx, "admin", "admin-password", client)
		if e := service.AsError(err); e.Code != service.CodeTooManyAttempts || e.RetryAfter > 5*time.Minute {
			t.Fatalf("admin right after the last failure, from %s: %v (retry after %v), want a wait of at most 5m", client, err, e.RetryAfter)
		}
	}
	if _, err := svc.SignIn(ctx, "bob", "bob-password", shared); err != nil {
		t.Fatalf("bob from the same address: %v", err)
	}
	*now = now.Add(5 * time.Minute)
	if _, err := svc.SignIn(ctx, "admin", "admin-password", shared); err != nil {
		t.Fatalf("admin's right password after the wait: %v", err)
	}
	// The success forgave the account.
	for range 5 {
		if _, err := svc.SignIn(ctx, "admin", "wrong", shared); !service.IsCode(err, service.CodeBadCredentials) {
			t.Fatalf("after a success: %v, want the free failures again", err)
		}
	}
}

// A client trying many names (password spraying) waits after 20 different
// names, whatever their passwords, and the address waiting stops even an
// account with its right password; another address is not slowed.
func TestSignInStopsSprayingFromOneAddress(t *testing.T) {
	ctx := context.Background()
	svc, _ := throttledService(t)
	var err error
	names := 0
	for ; names < 25 && !service.IsCode(err, service.CodeTooManyAttempts); names++ {
		for range 2 { // twice each: a name counts once
			_, err = svc.SignIn(ctx, fmt.Sprintf("user%02d", names), "Summer2026!", "203.0.113.9")
		}
	}
	if !service.IsCode(err, service.CodeTooManyAttempts) || names != 21 {
		t.Fatalf("after %d names: %v, want too_many_attempts at the 21st", names, err)
	}
	if _, err := svc.SignIn(ctx, "bob", "bob-password", "203.0.113.9"); !service.IsCode(err, service.CodeTooManyAttempts) {
		t.Fatalf("bob from the spraying address: %v, want too_many_attempts", err)
	}
	if _, err := svc.SignIn(ctx, "bob", "bob-password", "198.51.100.7"); err != nil {
		t.Fatalf("bob from another address: %v", err)
	}
}

func TestSignInCapsConcurrentPasswordChecks(t *testing.T) {
	ctx := context.Background()
	svc, users := newWatchedService(t, 1)
	users.hold, users.inside = make(chan struct{}), make(chan struct{})
	first := make(chan error, 1)
	go func() {
		_, err := svc.SignIn(ctx, "admin", "admin-password", "192.0.2.1")
		first <- err
	}()
	<-users.inside // the first check holds the only slot
	_, err := svc.SignIn(ctx, "admin", "admin-password", "192.0.2.2")
	e := service.AsError(err)
	if e.Code != service.CodeTooManyAttempts || e.RetryAfter <= 0 || e.Code.HTTPStatus() != 429 {
		t.Fatalf("second check while the slot is taken: %v, want too_many_attempts (429) with Retry-After", err)
	}
	close(users.hold)
	if err := <-first; err != nil {
		t.Fatalf("first check: %v", err)
	}
	users.hold = nil
	if _, err := svc.SignIn(ctx, "admin", "admin-password", "192.0.2.2"); err != nil {
		t.Fatalf("after the slot is free: %v", err)
	}
}

func TestSessionUserSeesRevocation(t *testing.T) {
	ctx := context.Background()
	svc, _ := newService(t)
	p, err := svc.SignIn(ctx, "admin", "admin-password", "192.0.2.1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.SessionUser(ctx, p); err != nil {
		t.Fatalf("fresh session: %v", err)
	}
	if err := svc.RevokeSessions(ctx, "admin"); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.SessionUser(ctx, p); !service.IsCode(err, service.CodeUnauthorized) {
		t.Fatalf("after sign out everywhere: %v, want unauthorized", err)
	}
	p, _ = svc.SignIn(ctx, "admin", "admin-password", "192.0.2.1")
	if err := svc.ChangeOwnPassword(ctx, "admin", "wrong", "another-password"); !service.IsCode(err, service.CodeInvalidUser) {
		t.Fatalf("change with a wrong current password: %v", err)
	}
	if _, err := svc.SessionUser(ctx, p); err != nil {
		t.Fatalf("a refused change revoked the session: %v", err)
	}
	if err := svc.ChangeOwnPassword(ctx, "admin", "admin-password", "short"); !service.IsCode(err, service.CodeInvalidUser) {
		t.Fatalf("short new password: %v", err)
	}
	if err := svc.ChangeOwnPassword(ctx, "admin", "admin-password", "another-password"); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.SessionUser(ctx, p); !service.IsCode(err, service.CodeUnauthorized) {
		t.Fatalf("after a password change: %v, want unauthorized", err)
	}
}

func TestAuditTextIsBounded(t *testing.T) {
	for _, tc := range []struct {
		in         string
		same       bool
		maxLen     int
		mustHold   string
		mustNotSee string
	}{
		{in: "orders-dr", same: true},
		{in: "olga as admin", same: true},
		{in: strings.Repeat("a", 160), same: true},
		{in: strings.Repeat("a", 161), maxLen: 160, mustHold: "(161 bytes, sha256 "},
		{in: strings.Repeat("z", 900<<10), maxLen: 160, mustHold: "(921600 bytes"},
		{in: "line\nbreak", maxLen: 160, mustHold: "line?break", mustNotSee: "\n"},
		{in: "bad \xff utf8", maxLen: 160, mustNotSee: "\xff"},
	} {
		got := service.AuditText(tc.in)
		if tc.same != (got == tc.in) {
			t.Errorf("%.40q: got %.80q, same=%v", tc.in, got, tc.same)
		}
		if tc.maxLen > 0 && len(got) > tc.maxLen {
			t.Errorf("%.40q: %d bytes kept", tc.in, len(got))
		}
		if !strings.Contains(got, tc.mustHold) || tc.mustNotSee != "" && strings.Contains(got, tc.mustNotSee) {
			t.Errorf("%.40q: got %q", tc.in, got)
		}
	}
}

// Throttled and over-long sign-ins are audited as such, bounded: one
// entry a minute per throttled account however often it is tried, and a
// name never longer than the audit's bound.
func TestRefusedSignInsAreAuditedBounded(t *testing.T) {
	ctx := context.Background()
	_, db, box := servicetest.OpenStore(t, "")
	if _, err := account.EnsureAdmin(ctx, db, "admin-password"); err != nil {
		t.Fatal(err)
	}
	clock := time.Unix(1_000_000, 0)
	perAccount := account.NewThrottle()
	perAccount.Now = func() time.Time { return clock }
	svc, err := service.New(service.Deps{Clusters: db, Users: db, Secrets: box, Audit: db, Throttle: perAccount, Now: func() time.Time { return clock }})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.SignIn(ctx, strings.Repeat("n", 5000), "x", "192.0.2.1"); !service.IsCode(err, service.CodeBadCredentials) {
		t.Fatalf("over-long name: %v", err)
	}
	throttledAt := 0
	for i := range 40 {
		_, err := svc.SignIn(ctx, "admin", "wrong", "192.0.2.1")
		if service.IsCode(err, service.CodeTooManyAttempts) && throttledAt == 0 {
			throttledAt = i
		}
	}
	if throttledAt == 0 {
		t.Fatal("never throttled")
	}
	es, err := db.ListAudit(ctx, store.AuditFilter{Action: "signin"})
	if err != nil {
		t.Fatal(err)
	}
	var long, throttled, failed int
	for _, e := range es {
		if len(e.Actor)+len(e.Object)+len(e.Outcome) > 3*160 {
			t.Errorf("an unbounded entry: %+v", e)
		}
		switch {
		case strings.Contains(e.Outcome, "a name of 5000 bytes"):
			long++
		case strings.HasPrefix(e.Outcome, "throttled: "):
			throttled++
		case strings.HasPrefix(e.Outcome, "failed: "):
			failed++
		}
	}
	if long != 1 || throttled != 1 || failed != throttledAt {
		t.Fatalf("over-long %d, throttled %d, failed %d (throttled from attempt %d); want 1, 1, %d", long, throttled, failed, throttledAt, throttledAt)
	}
	// A minute on, a throttled attempt is recorded again.
	clock = clock.Add(61 * time.Second)
	for i := 0; ; i++ {
		if _, err := svc.SignIn(ctx, "admin", "wrong", "192.0.2.1"); service.IsCode(err, service.CodeTooManyAttempts) {
			break
		}
		if i == 20 {
			t.Fatal("not throttled again")
		}
	}
	// Names no account can have, again and again from one address: the
	// address is throttled, and they are recorded once a minute.
	badThrottled := false
	for range 100 {
		if _, err := svc.SignIn(ctx, "", "x", "192.0.2.9"); service.IsCode(err, service.CodeTooManyAttempts) {
			badThrottled = true
			break
		}
	}
	if !badThrottled {
		t.Fatal("100 sign-ins with an empty name from one address were never throttled")
	}
	if es, _ := db.ListAudit(ctx, store.AuditFilter{Outcome: "failed: bad_credentials (a name of 0 bytes)"}); len(es) != 1 {
		t.Fatalf("entries for the empty names: %d, want 1", len(es))
	}
	if es, _ := db.ListAudit(ctx, store.AuditFilter{Outcome: "throttled"}); len(es) != 3 {
		t.Fatalf("throttled entries a minute later: %d, want 2", len(es))
	}
}

// Wrong current passwords count against the account like wrong sign-ins:
// a stolen session cannot guess the password through the password change.
func TestPasswordChangeIsThrottledPerAccount(t *testing.T) {
	ctx := context.Background()
	svc, now := throttledService(t)
	me := service.WithActor(ctx, service.Actor{Name: "bob", Role: service.RoleViewer})
	throttled := false
	for range 30 {
		err := svc.ChangeOwnPassword(me, "bob", "guess", "a-new-password")
		if service.IsCode(err, service.CodeTooManyAttempts) {
			throttled = true
			break
		}
		if !service.IsCode(err, service.CodeInvalidUser) {
			t.Fatalf("a wrong current password: %v", err)
		}
	}
	if !throttled {
		t.Fatal("30 wrong current passwords in a row were never throttled")
	}
	if _, err := svc.SignIn(ctx, "bob", "bob-password", "198.51.100.1"); !service.IsCode(err, service.CodeTooManyAttempts) {
		t.Fatalf("sign-in of the account guessed at: %v", err)
	}
	*now = now.Add(10 * time.Minute)
	if err := svc.ChangeOwnPassword(me, "bob", "bob-password", "a-new-password"); err != nil {
		t.Fatalf("after the wait: %v", err)
	}
}

package service_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

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

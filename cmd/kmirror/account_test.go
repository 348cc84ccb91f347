package main

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/account"
	"github.com/kmirror/kmirror/internal/store"
)

func TestAdminSetPasswordReadsStdin(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := store.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := account.EnsureAdmin(ctx, db, "first-password"); err != nil {
		t.Fatal(err)
	}
	before, _ := db.User(ctx, "admin")
	now := time.Now()
	if err := db.CreateSession(ctx, "a-session", before.AccountID, now, now.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	db.Close()

	old := stdin
	t.Cleanup(func() { stdin = old })
	for _, tc := range []struct {
		in      string
		args    []string
		wantErr string
	}{
		{"", []string{"admin", "set-password", "admin", "--data-dir", dir}, "no password"},
		{"short\n", []string{"admin", "set-password", "admin", "--data-dir", dir}, "at least 8"},
		{"new-password-1\n", []string{"admin", "set-password", "nobody", "--data-dir", dir}, "no user"},
		{"new-password-1\n", []string{"admin", "set-password", "--data-dir", dir}, "exactly one"},
		{"new-password-1\n", []string{"admin", "set-password", "admin", "--data-dir", dir}, ""},
	} {
		stdin = strings.NewReader(tc.in)
		var out, errOut bytes.Buffer
		err := run(ctx, tc.args, func(string) string { return "" }, &out, &errOut)
		if tc.wantErr == "" && err != nil || tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)) {
			t.Errorf("%v with %q: err = %v, want %q", tc.args, tc.in, err, tc.wantErr)
		}
		if strings.Contains(out.String()+errOut.String(), "new-password-1") {
			t.Error("the password was echoed")
		}
	}
	db, err = store.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	after, _ := db.User(ctx, "admin")
	if _, err := db.SessionUser(ctx, "a-session"); !account.Verify(after.PasswordHash, "new-password-1") || !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("password not changed, or sessions not revoked (%v)", err)
	}
	log, _ := db.ListAudit(ctx, store.AuditFilter{Action: "user.set_password", Outcome: "ok"})
	if len(log) != 1 || log[0].Actor != "system" {
		t.Fatalf("audit: %+v", log)
	}
}

// kmirror audit prune removes only entries older than its date, refuses a
// recent date, and the prune is itself in the audit log.
func TestAuditPruneOnTheServer(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := store.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	old := time.Date(2025, 6, 1, 0, 0, 0, 0, time.UTC)
	for i := range 4 {
		if err := db.AppendAudit(ctx, store.AuditEntry{At: old.AddDate(0, i, 0), Actor: "a", Role: "admin", Action: "task.create", Object: "t", Outcome: "ok"}); err != nil {
			t.Fatal(err)
		}
	}
	db.Close()
	var out, errOut bytes.Buffer
	if err := run(ctx, []string{"audit", "prune", "--before", time.Now().Format(time.DateOnly), "--data-dir", dir}, func(string) string { return "" }, &out, &errOut); err == nil ||
		!strings.Contains(err.Error(), "at least a day ago") {
		t.Fatalf("a prune of today: %v", err)
	}
	if err := run(ctx, []string{"audit", "prune", "--before", "June 2025", "--data-dir", dir}, func(string) string { return "" }, &out, &errOut); err == nil ||
		!strings.Contains(err.Error(), "2026-01-31") {
		t.Fatalf("an unreadable date: %v", err)
	}
	if err := run(ctx, []string{"audit", "prune", "--before", "2025-08-01", "--data-dir", dir}, func(string) string { return "" }, &out, &errOut); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(out.String(), "removed 2 audit entries") {
		t.Fatalf("output: %q", out.String())
	}
	db, err = store.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	es, _ := db.ListAudit(ctx, store.AuditFilter{})
	if len(es) != 3 || es[0].Action != "audit.prune" || es[0].Outcome != "ok: 2 entries removed" || es[0].Actor != "system" {
		t.Fatalf("audit after the prune: %+v", es)
	}
}

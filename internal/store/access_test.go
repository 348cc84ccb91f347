package store_test

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"path/filepath"
	"testing"
	"testing/fstest"
	"time"

	"github.com/kmirror/kmirror/internal/store"
	"github.com/kmirror/kmirror/migrations"
)

func TestAuditLogIsAppendOnly(t *testing.T) {
	ctx := context.Background()
	db := open(t, t.TempDir())
	for _, e := range []store.AuditEntry{
		{Actor: "admin", Role: "admin", Address: "192.0.2.1", Action: "signin", Object: "admin", Outcome: "ok"},
		{Actor: "admin", Role: "admin", Address: "192.0.2.1", Action: "task.create", Object: "t1", Outcome: "ok"},
		{Actor: "eve", Role: "viewer", Address: "192.0.2.2", Action: "task.delete", Object: "t1", Outcome: "denied"},
	} {
		if err := db.AppendAudit(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	for _, q := range []string{`UPDATE audit_log SET outcome = 'ok'`, `DELETE FROM audit_log`} {
		if _, err := db.SQL().ExecContext(ctx, q); err == nil {
			t.Errorf("%s succeeded on the audit log", q)
		}
	}
	for _, tc := range []struct {
		f    store.AuditFilter
		want int
	}{
		{store.AuditFilter{}, 3},
		{store.AuditFilter{Actor: "admin"}, 2},
		{store.AuditFilter{Action: "task."}, 2},
		{store.AuditFilter{Outcome: "denied"}, 1},
		{store.AuditFilter{Limit: 1}, 1},
	} {
		got, err := db.ListAudit(ctx, tc.f)
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != tc.want {
			t.Errorf("%+v: %d entries, want %d", tc.f, len(got), tc.want)
		}
	}
	all, _ := db.ListAudit(ctx, store.AuditFilter{})
	if all[0].Action != "task.delete" || all[0].At.IsZero() {
		t.Errorf("newest first: got %+v", all[0])
	}
	older, _ := db.ListAudit(ctx, store.AuditFilter{BeforeID: all[0].ID})
	if len(older) != 2 {
		t.Errorf("paging: %d entries", len(older))
	}
}

func TestTokensAndUsers(t *testing.T) {
	ctx := context.Background()
	db := open(t, t.TempDir())
	tok := store.Token{Name: "ci", Role: "operator", TokenSHA256: "abc", CreatedBy: "admin"}
	if err := db.CreateToken(ctx, tok); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateToken(ctx, tok); !errors.Is(err, store.ErrExists) {
		t.Fatalf("duplicate token: %v", err)
	}
	if got, err := db.TokenByHash(ctx, "abc"); err != nil || got.Name != "ci" || got.Role != "operator" {
		t.Fatalf("TokenByHash = %+v, %v", got, err)
	}
	if err := db.DeleteToken(ctx, "ci"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.TokenByHash(ctx, "abc"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("revoked token still found: %v", err)
	}
	if err := db.CreateToken(ctx, store.Token{Name: "x", Role: "root", TokenSHA256: "d"}); err == nil {
		t.Fatal("a token with an unknown role was stored")
	}

	if err := db.CreateUser(ctx, store.User{Name: "olga", PasswordHash: "h", Role: "operator"}); err != nil {
		t.Fatal(err)
	}
	u, _ := db.User(ctx, "olga")
	if err := db.SetPassword(ctx, "olga", "h2"); err != nil {
		t.Fatal(err)
	}
	if err := db.RevokeSessions(ctx, "olga"); err != nil {
		t.Fatal(err)
	}
	u2, _ := db.User(ctx, "olga")
	if u2.Role != "operator" || u2.PasswordHash != "h2" || u2.AccountID != u.AccountID || len(u.AccountID) != 32 {
		t.Fatalf("after password change and revocation: %+v (before %+v)", u2, u)
	}
	if err := db.DeleteUser(ctx, "olga"); err != nil {
		t.Fatal(err)
	}
	if err := db.SetPassword(ctx, "olga", "h3"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("password of a deleted user: %v", err)
	}
}

// A database made before roles and audit (migrations 0001-0002) keeps its
// accounts as admins with sessions intact when upgraded.
func TestUpgradeKeepsAccountsAsAdmins(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	sqldb, err := sql.Open("sqlite3", "file:"+filepath.Join(dir, store.FileName))
	if err != nil {
		t.Fatal(err)
	}
	old := fstest.MapFS{}
	for _, name := range []string{"0001_init.up.sql", "0002_tasks.up.sql"} {
		body, err := fs.ReadFile(migrations.FS, name)
		if err != nil {
			t.Fatal(err)
		}
		old[name] = &fstest.MapFile{Data: body}
	}
	if err := store.Migrate(ctx, sqldb, old); err != nil {
		t.Fatal(err)
	}
	if _, err := sqldb.ExecContext(ctx, `INSERT INTO users (name, password_hash, created_at) VALUES ('admin', 'h', 1)`); err != nil {
		t.Fatal(err)
	}
	sqldb.Close()

	db := open(t, dir)
	u, err := db.User(ctx, "admin")
	if err != nil || u.Role != "admin" || u.AccountID == "" || u.PasswordHash != "h" {
		t.Fatalf("after the upgrade: %+v, %v", u, err)
	}
	if v, err := db.SchemaVersion(ctx); err != nil || v < 4 {
		t.Fatalf("schema version %d, %v", v, err)
	}
}

// A session belongs to an account's identity: signing out, a password
// change, revoking and deleting the account each end it, and an account
// made again under the same name gets none of the old one's sessions or
// tokens.
func TestSessionsAndTokensBelongToTheAccount(t *testing.T) {
	ctx := context.Background()
	db := open(t, t.TempDir())
	now := time.Now()
	mustCreateUser(t, db, "olga")
	olga, _ := db.User(ctx, "olga")
	for _, id := range []string{"s1", "s2", "s3"} {
		if err := db.CreateSession(ctx, id, olga.AccountID, now, now.Add(-time.Hour)); err != nil {
			t.Fatal(err)
		}
	}
	if u, err := db.SessionUser(ctx, "s1"); err != nil || u.Name != "olga" || u.AccountID != olga.AccountID {
		t.Fatalf("SessionUser = %+v, %v", u, err)
	}
	if err := db.EndSession(ctx, "s1"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SessionUser(ctx, "s1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a session signed out: %v", err)
	}
	if err := db.SetPassword(ctx, "olga", "h2"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SessionUser(ctx, "s2"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a session after a password change: %v", err)
	}
	if err := db.CreateSession(ctx, "s4", olga.AccountID, now, now.Add(-time.Hour)); err != nil {
		t.Fatal(err)
	}
	tok := store.Token{Name: "olgas", Role: "viewer", TokenSHA256: "t-olga", CreatedBy: "olga", OwnerAccountID: olga.AccountID, ExpiresAt: now.Add(time.Hour)}
	if err := db.CreateToken(ctx, tok); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateToken(ctx, store.Token{Name: "ownerless", Role: "viewer", TokenSHA256: "t-none", CreatedBy: "KMIRROR_TOKEN"}); err != nil {
		t.Fatal(err)
	}
	if got, err := db.TokenByHash(ctx, "t-olga"); err != nil || got.OwnerAccountID != olga.AccountID || got.ExpiresAt.Unix() != tok.ExpiresAt.Unix() {
		t.Fatalf("TokenByHash = %+v, %v", got, err)
	}
	if err := db.TouchToken(ctx, "t-olga", now); err != nil {
		t.Fatal(err)
	}
	if got, _ := db.TokenByHash(ctx, "t-olga"); got.LastUsedAt.Unix() != now.Unix() || got.OwnerRole != "viewer" {
		t.Errorf("after a use: last used %v, owner's role %q", got.LastUsedAt, got.OwnerRole)
	}

	if err := db.DeleteUser(ctx, "olga"); err != nil {
		t.Fatal(err)
	}
	mustCreateUser(t, db, "olga")
	again, _ := db.User(ctx, "olga")
	if again.AccountID == olga.AccountID {
		t.Fatal("an account made again under a deleted one's name has its identity")
	}
	if _, err := db.SessionUser(ctx, "s4"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the deleted account's session came back: %v", err)
	}
	if _, err := db.TokenByHash(ctx, "t-olga"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the deleted account's token came back: %v", err)
	}
	if _, err := db.TokenByHash(ctx, "t-none"); err != nil {
		t.Fatalf("a token without an owner ended with someone's account: %v", err)
	}
	if err := db.CreateSession(ctx, "s5", olga.AccountID, now, now); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a session of a deleted account: %v", err)
	}
	// Sessions older than notBefore go when a new one starts.
	if err := db.CreateSession(ctx, "old", again.AccountID, now.Add(-13*time.Hour), now.Add(-24*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateSession(ctx, "new", again.AccountID, now, now.Add(-12*time.Hour)); err != nil {
		t.Fatal(err)
	}
	if _, err := db.SessionUser(ctx, "old"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("an ended session kept: %v", err)
	}
}

func mustCreateUser(t *testing.T, db *store.DB, name string) {
	t.Helper()
	if err := db.CreateUser(context.Background(), store.User{Name: name, PasswordHash: "h", Role: "viewer"}); err != nil {
		t.Fatal(err)
	}
}

// A prune removes only entries older than its date, in one transaction
// with the entry that records it; nothing else can delete.
func TestAuditPruneRemovesOnlyOlderEntriesAndSaysSo(t *testing.T) {
	ctx := context.Background()
	db := open(t, t.TempDir())
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range 5 {
		if err := db.AppendAudit(ctx, store.AuditEntry{At: base.AddDate(0, 0, i), Actor: "a", Role: "admin", Action: "task.create", Object: "t", Outcome: "ok"}); err != nil {
			t.Fatal(err)
		}
	}
	if n, b, err := db.AuditSize(ctx); err != nil || n != 5 || b <= 0 {
		t.Fatalf("AuditSize = %d, %d, %v", n, b, err)
	}
	n, err := db.PruneAudit(ctx, base.AddDate(0, 0, 3), store.AuditEntry{At: base.AddDate(0, 1, 0), Actor: "system", Role: "admin", Action: "audit.prune", Object: "before 2026-01-04"})
	if err != nil || n != 3 {
		t.Fatalf("PruneAudit = %d, %v; want 3", n, err)
	}
	all, _ := db.ListAudit(ctx, store.AuditFilter{})
	if len(all) != 3 || all[0].Action != "audit.prune" || all[0].Outcome != "ok: 3 entries removed" {
		t.Fatalf("after the prune: %+v", all)
	}
	for _, q := range []string{`DELETE FROM audit_log`, `DELETE FROM audit_prune`} {
		if _, err := db.SQL().ExecContext(ctx, q); err == nil {
			t.Errorf("%s succeeded outside a prune", q)
		}
	}
	if left, _ := db.ListAudit(ctx, store.AuditFilter{}); len(left) != 3 {
		t.Fatalf("entries after a refused delete: %d", len(left))
	}
}

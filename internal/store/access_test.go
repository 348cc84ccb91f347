package store_test

import (
	"context"
	"database/sql"
	"errors"
	"io/fs"
	"path/filepath"
	"testing"
	"testing/fstest"

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
	if u2.Role != "operator" || u2.PasswordHash != "h2" || u2.SessionEpoch != u.SessionEpoch+2 {
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
	if err != nil || u.Role != "admin" || u.SessionEpoch != 0 || u.PasswordHash != "h" {
		t.Fatalf("after the upgrade: %+v, %v", u, err)
	}
	if v, err := db.SchemaVersion(ctx); err != nil || v < 4 {
		t.Fatalf("schema version %d, %v", v, err)
	}
}

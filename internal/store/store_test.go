package store_test

import (
	"context"
	"database/sql"
	"errors"
	"path/filepath"
	"testing"
	"testing/fstest"

	_ "github.com/mattn/go-sqlite3"

	"github.com/kmirror/kmirror/internal/store"
)

func open(t *testing.T, dir string) *store.DB {
	t.Helper()
	db, err := store.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

func TestOpenAppliesMigrationsAndSetsPragmas(t *testing.T) {
	ctx := context.Background()
	db := open(t, t.TempDir())
	v, err := db.SchemaVersion(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if v < 1 {
		t.Fatalf("schema version %d, want >= 1", v)
	}
	var mode string
	var fk, busy int
	if err := db.SQL().QueryRowContext(ctx, `PRAGMA journal_mode`).Scan(&mode); err != nil {
		t.Fatal(err)
	}
	if err := db.SQL().QueryRowContext(ctx, `PRAGMA foreign_keys`).Scan(&fk); err != nil {
		t.Fatal(err)
	}
	if err := db.SQL().QueryRowContext(ctx, `PRAGMA busy_timeout`).Scan(&busy); err != nil {
		t.Fatal(err)
	}
	if mode != "wal" || fk != 1 || busy <= 0 {
		t.Fatalf("journal_mode=%s foreign_keys=%d busy_timeout=%d, want wal, 1, > 0", mode, fk, busy)
	}
}

func TestReopenKeepsData(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := store.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	want := store.Cluster{
		Name: "east", BootstrapServers: []string{"a:9092", "b:9092"}, SecurityProtocol: "SASL_SSL",
		SASLMechanism: "SCRAM-SHA-512", Username: "alice", PasswordCiphertext: []byte{1, 2, 3}, CAPEM: "pem",
	}
	if err := db.CreateCluster(ctx, want); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateUser(ctx, store.User{Name: "admin", PasswordHash: "h"}); err != nil {
		t.Fatal(err)
	}
	db.Close()

	db = open(t, dir) // migrations are not applied twice
	got, err := db.Cluster(ctx, "east")
	if err != nil {
		t.Fatal(err)
	}
	if got.Name != want.Name || len(got.BootstrapServers) != 2 || got.BootstrapServers[1] != "b:9092" ||
		got.SASLMechanism != want.SASLMechanism || string(got.PasswordCiphertext) != string(want.PasswordCiphertext) ||
		got.CAPEM != "pem" || got.CreatedAt.IsZero() {
		t.Fatalf("got %+v", got)
	}
	if n, err := db.CountUsers(ctx); err != nil || n != 1 {
		t.Fatalf("CountUsers = %d, %v", n, err)
	}
}

func TestClusterErrors(t *testing.T) {
	ctx := context.Background()
	db := open(t, t.TempDir())
	c := store.Cluster{Name: "east", BootstrapServers: []string{"a:1"}, SecurityProtocol: "PLAINTEXT"}
	if err := db.CreateCluster(ctx, c); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateCluster(ctx, c); !errors.Is(err, store.ErrExists) {
		t.Fatalf("duplicate: err = %v, want ErrExists", err)
	}
	if _, err := db.Cluster(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown: err = %v, want ErrNotFound", err)
	}
	if err := db.DeleteCluster(ctx, "east"); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteCluster(ctx, "east"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("delete twice: err = %v, want ErrNotFound", err)
	}
	list, err := db.ListClusters(ctx)
	if err != nil || len(list) != 0 {
		t.Fatalf("ListClusters = %v, %v", list, err)
	}
}

func TestMigrateIsAtomicAndOrdered(t *testing.T) {
	ctx := context.Background()
	sqldb, err := sql.Open("sqlite3", filepath.Join(t.TempDir(), "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer sqldb.Close()
	fsys := fstest.MapFS{
		"0002_b.up.sql":   {Data: []byte(`CREATE TABLE b (x INTEGER REFERENCES a(x));`)},
		"0001_a.up.sql":   {Data: []byte(`CREATE TABLE a (x INTEGER PRIMARY KEY);`)},
		"0001_a.down.sql": {Data: []byte(`DROP TABLE a;`)},
	}
	if err := store.Migrate(ctx, sqldb, fsys); err != nil {
		t.Fatal(err)
	}
	// A broken third migration leaves neither its table nor its version.
	fsys["0003_c.up.sql"] = &fstest.MapFile{Data: []byte(`CREATE TABLE c (x INTEGER); THIS IS NOT SQL;`)}
	if err := store.Migrate(ctx, sqldb, fsys); err == nil {
		t.Fatal("broken migration applied without error")
	}
	var n int
	if err := sqldb.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE name = 'c'`).Scan(&n); err != nil || n != 0 {
		t.Fatalf("table c exists after failed migration (n=%d, err=%v)", n, err)
	}
	if err := sqldb.QueryRowContext(ctx, `SELECT COUNT(*) FROM schema_migrations`).Scan(&n); err != nil || n != 2 {
		t.Fatalf("schema_migrations has %d rows, want 2 (err=%v)", n, err)
	}
	// A binary that knows fewer migrations than the database refuses to run.
	delete(fsys, "0003_c.up.sql")
	delete(fsys, "0002_b.up.sql")
	if err := store.Migrate(ctx, sqldb, fsys); err == nil {
		t.Fatal("older migration set accepted a newer database")
	}
}

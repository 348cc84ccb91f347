package store_test

import (
	"context"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/kmirror/kmirror/internal/store"
)

// TestOpenMakesTheDataPrivate: a data directory and database readable by
// others (made by hand, or by an older version under a lax umask) are made
// 0700 and 0600 at start, and a new database is private from its creation,
// its WAL and shared-memory files included.
func TestOpenMakesTheDataPrivate(t *testing.T) {
	ctx := context.Background()
	lax := filepath.Join(t.TempDir(), "lax")
	if err := os.Mkdir(lax, 0o755); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(ctx, lax)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	for _, name := range []string{store.FileName, store.FileName + "-wal"} {
		if err := os.Chmod(filepath.Join(lax, name), 0o644); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(lax, 0o755); err != nil {
		t.Fatal(err)
	}

	fresh := filepath.Join(t.TempDir(), "fresh")
	for _, dir := range []string{lax, fresh} {
		db, err := store.Open(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		// A write, so the WAL and shared-memory files exist.
		if _, err := db.SQL().ExecContext(ctx, "CREATE TABLE IF NOT EXISTS private_probe (x)"); err != nil {
			t.Fatal(err)
		}
		checkMode(t, dir, 0o700)
		for _, name := range []string{store.FileName, store.FileName + "-wal", store.FileName + "-shm"} {
			checkMode(t, filepath.Join(dir, name), 0o600)
		}
		db.Close()
	}
}

func checkMode(t *testing.T, path string, want fs.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s: mode %v, want %v", path, got, want)
	}
}

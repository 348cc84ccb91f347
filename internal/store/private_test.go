package store_test

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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

// TestOpenRefusesADataDirectoryItCannotMakePrivate: when the permissions
// cannot be changed (here: an immutable directory, which even root cannot
// chmod), the start is refused with the reason, not run with readable data.
func TestOpenRefusesADataDirectoryItCannotMakePrivate(t *testing.T) {
	chattr, err := exec.LookPath("chattr")
	if err != nil {
		t.Skip("chattr not found (e2fsprogs): it makes a directory whose mode cannot be changed")
	}
	dir := filepath.Join(t.TempDir(), "immutable")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(chattr, "+i", dir).CombinedOutput(); err != nil {
		t.Skipf("this file system cannot make a directory immutable: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command(chattr, "-i", dir).Run() })
	_, err = store.Open(context.Background(), dir)
	if err == nil || !strings.Contains(err.Error(), "cannot be made private") || !strings.Contains(err.Error(), dir) {
		t.Fatalf("open: %v, want a refusal naming the directory", err)
	}
}

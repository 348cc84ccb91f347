package store_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/store"
)

// A backup taken while a writer keeps creating tasks (as a running server
// does) is a database that opens, checks out, and holds every task created
// before the backup began.
func TestBackupWhileWritingHoldsTheTasks(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	db := open(t, dir)
	addClusters(t, db, "east", "west")

	var created atomic.Int64
	stop := make(chan struct{})
	writerDone := make(chan error, 1)
	go func() {
		for i := 0; ; i++ {
			select {
			case <-stop:
				writerDone <- nil
				return
			default:
			}
			if err := db.CreateTask(ctx, storedTask(fmt.Sprintf("t%05d", i), "east", "west"), nil); err != nil {
				writerDone <- err
				return
			}
			created.Add(1)
		}
	}()
	waitCreated := func(n int64) {
		t.Helper()
		for created.Load() < n {
			select {
			case err := <-writerDone:
				t.Fatalf("writer stopped: %v", err)
			case <-ctx.Done():
				t.Fatal("writer too slow")
			case <-time.After(time.Millisecond):
			}
		}
	}

	const copies = 3
	for i := range copies {
		waitCreated(int64(20 * (i + 1)))
		before := created.Load()
		file := filepath.Join(t.TempDir(), "kmirror-backup.db")
		if err := store.Backup(ctx, filepath.Join(dir, store.FileName), file); err != nil {
			t.Fatal(err)
		}
		after := created.Load()
		copyDB, err := store.OpenFile(ctx, file)
		if err != nil {
			t.Fatalf("copy %d does not open: %v", i, err)
		}
		tasks, err := copyDB.ListTasks(ctx)
		copyDB.Close()
		if err != nil {
			t.Fatal(err)
		}
		// A task is counted once committed; one in flight may or may not be
		// in the copy.
		if n := int64(len(tasks)); n < before || n > after+1 {
			t.Fatalf("copy %d holds %d tasks, want between %d and %d", i, n, before, after+1)
		}
		if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
			t.Fatalf("backup file mode %v (err %v), want 0600: it holds password hashes and sealed passwords", fi.Mode(), err)
		}
		for _, f := range []string{file + "-wal", file + ".tmp"} {
			if _, err := os.Stat(f); !errors.Is(err, os.ErrNotExist) {
				t.Fatalf("%s left beside the backup (err %v): the backup must be one file", f, err)
			}
		}
	}
	close(stop)
	if err := <-writerDone; err != nil {
		t.Fatalf("the writer failed during the backups: %v", err)
	}
}

func TestBackupRefusesAMissingSourceAndAnExistingFile(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	open(t, dir)
	exists := filepath.Join(t.TempDir(), "exists.db")
	if err := os.WriteFile(exists, []byte("keep me"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct{ name, src, dst, want string }{
		{"no database", filepath.Join(t.TempDir(), store.FileName), filepath.Join(t.TempDir(), "b.db"), "no database"},
		{"file exists", filepath.Join(dir, store.FileName), exists, "exists"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			err := store.Backup(ctx, tc.src, tc.dst)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one saying %q", err, tc.want)
			}
		})
	}
	if b, _ := os.ReadFile(exists); string(b) != "keep me" {
		t.Fatal("an existing file was overwritten")
	}
}

func TestLockDataDirIsExclusive(t *testing.T) {
	dir := t.TempDir()
	l, err := store.LockDataDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := store.LockDataDir(dir); !errors.Is(err, store.ErrInUse) {
		t.Fatalf("second lock: err = %v, want ErrInUse", err)
	}
	if err := l.Unlock(); err != nil {
		t.Fatal(err)
	}
	l2, err := store.LockDataDir(dir)
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	if err := l2.Unlock(); err != nil {
		t.Fatal(err)
	}
}

// backupWithTasks makes a backup file holding the named tasks.
func backupWithTasks(t *testing.T, names ...string) string {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	db := open(t, dir)
	addClusters(t, db, "east", "west")
	for _, n := range names {
		if err := db.CreateTask(ctx, storedTask(n, "east", "west"), nil); err != nil {
			t.Fatal(err)
		}
	}
	file := filepath.Join(t.TempDir(), "backup.db")
	if err := store.Backup(ctx, filepath.Join(dir, store.FileName), file); err != nil {
		t.Fatal(err)
	}
	return file
}

func taskNames(t *testing.T, dir string) []string {
	t.Helper()
	db, err := store.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	tasks, err := db.ListTasks(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tk := range tasks {
		names = append(names, tk.Name())
	}
	return names
}

// Restore refuses while the data directory is in use, and replaces the
// database (keeping the old one as .bak) once it is not.
func TestRestoreRefusedWhileInUseAndWorksWhenNot(t *testing.T) {
	ctx := context.Background()
	file := backupWithTasks(t, "from-backup")
	dir := t.TempDir()
	db := open(t, dir)
	addClusters(t, db, "east", "west")
	if err := db.CreateTask(ctx, storedTask("current", "east", "west"), nil); err != nil {
		t.Fatal(err)
	}
	db.Close()

	lock, err := store.LockDataDir(dir) // what a running serve holds
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := store.Restore(ctx, file, dir); !errors.Is(err, store.ErrInUse) {
		t.Fatalf("restore while in use: err = %v, want ErrInUse", err)
	}
	if got := fmt.Sprint(taskNames(t, dir)); got != "[current]" {
		t.Fatalf("after a refused restore the tasks are %s, want [current]", got)
	}
	if err := lock.Unlock(); err != nil {
		t.Fatal(err)
	}

	v, changes, err := store.Restore(ctx, file, dir)
	if err != nil {
		t.Fatal(err)
	}
	if v < 1 {
		t.Fatalf("restored schema version %d", v)
	}
	if got := fmt.Sprint(changes.BroughtBack["tasks"], changes.Removed["tasks"]); got != "[from-backup] [current]" {
		t.Fatalf("the restore says it brought back and removed tasks %s, want [from-backup] [current]", got)
	}
	if got := fmt.Sprint(taskNames(t, dir)); got != "[from-backup]" {
		t.Fatalf("after restore the tasks are %s, want [from-backup]", got)
	}
	bak := t.TempDir()
	b, err := os.ReadFile(filepath.Join(dir, store.FileName+".bak"))
	if err != nil {
		t.Fatalf("the replaced database was not kept: %v", err)
	}
	if err := os.WriteFile(filepath.Join(bak, store.FileName), b, 0o600); err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(taskNames(t, bak)); got != "[current]" {
		t.Fatalf("the kept .bak holds %s, want [current]", got)
	}
}

// Restore takes only intact kmirror databases whose schema this binary
// knows, and leaves the data directory as it was otherwise.
func TestRestoreRejectsWhatIsNotAKnownKmirrorDatabase(t *testing.T) {
	ctx := context.Background()
	sqliteFile := func(t *testing.T, stmts ...string) string {
		t.Helper()
		path := filepath.Join(t.TempDir(), "x.db")
		db, err := sql.Open("sqlite3", path)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		for _, s := range stmts {
			if _, err := db.Exec(s); err != nil {
				t.Fatal(err)
			}
		}
		return path
	}
	newer := func(t *testing.T) string {
		file := backupWithTasks(t, "x")
		db, err := sql.Open("sqlite3", file)
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if _, err := db.Exec(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (9999, 'from_the_future', 0)`); err != nil {
			t.Fatal(err)
		}
		return file
	}
	cases := []struct {
		name string
		file func(t *testing.T) string
		want string
	}{
		{"missing file", func(t *testing.T) string { return filepath.Join(t.TempDir(), "none.db") }, "no such file"},
		{"not SQLite", func(t *testing.T) string {
			p := filepath.Join(t.TempDir(), "junk.db")
			if err := os.WriteFile(p, []byte(strings.Repeat("not a database ", 100)), 0o600); err != nil {
				t.Fatal(err)
			}
			return p
		}, "not a readable SQLite database"},
		{"other application's database", func(t *testing.T) string { return sqliteFile(t, `CREATE TABLE notes (x TEXT)`) }, "no schema_migrations"},
		{"unknown migration", func(t *testing.T) string {
			return sqliteFile(t, `CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`,
				`INSERT INTO schema_migrations VALUES (1, 'somebody_else', 0)`)
		}, "not one this kmirror knows"},
		{"no migration applied", func(t *testing.T) string {
			return sqliteFile(t, `CREATE TABLE schema_migrations (version INTEGER PRIMARY KEY, name TEXT NOT NULL, applied_at INTEGER NOT NULL)`)
		}, "no migration applied"},
		{"newer schema", newer, "use a newer kmirror"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			db := open(t, dir)
			addClusters(t, db, "east", "west")
			if err := db.CreateTask(ctx, storedTask("current", "east", "west"), nil); err != nil {
				t.Fatal(err)
			}
			db.Close()
			_, _, err := store.Restore(ctx, tc.file(t), dir)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want one saying %q", err, tc.want)
			}
			if got := fmt.Sprint(taskNames(t, dir)); got != "[current]" {
				t.Fatalf("after a rejected restore the tasks are %s, want [current]", got)
			}
		})
	}
}

package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sort"

	"github.com/mattn/go-sqlite3"

	"github.com/kmirror/kmirror/migrations"
)

// Backup writes a consistent copy of the database at srcPath to dstPath
// with SQLite's online backup API while other connections (a running
// server) keep reading and writing: the copy is taken in one step under a
// read transaction, which WAL mode lets run beside writers. The copy is
// written next to dstPath and renamed into place, so dstPath is either
// absent or complete. dstPath must not exist.
//
// The copy holds sealed secrets but never the key that opens them: that
// stays in the data directory (see internal/secrets).
func Backup(ctx context.Context, srcPath, dstPath string) error {
	if _, err := os.Stat(srcPath); err != nil {
		return fmt.Errorf("backup: no database at %s (is --data-dir the server's?): %w", srcPath, err)
	}
	if _, err := os.Stat(dstPath); err == nil {
		return fmt.Errorf("backup: %s exists: remove it or choose another file", dstPath)
	}
	if _, err := checkDatabase(ctx, srcPath); err != nil {
		return fmt.Errorf("backup: %w", err)
	}
	tmp := dstPath + ".tmp"
	_ = os.Remove(tmp) // left by an interrupted backup
	if err := copyDatabase(ctx, srcPath, tmp); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("backup %s to %s: %w", srcPath, dstPath, err)
	}
	if _, err := checkDatabase(ctx, tmp); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("backup: the copy does not check out: %w", err)
	}
	if err := os.Rename(tmp, dstPath); err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("backup: %w", err)
	}
	return nil
}

// Restore replaces the database of dir's data directory (DataDir) with the
// backup at file. It
// refuses while a server holds the data directory (LockDataDir) and when
// file is not a sound kmirror database with a schema this binary knows.
// The database it replaces is kept as kmirror.db.bak (with its WAL, if
// any). Restore returns the backup's schema version and what it changed
// (Changes); the next start migrates it forward when it is older.
func Restore(ctx context.Context, file, dir string) (int, Changes, error) {
	version, err := checkDatabase(ctx, file)
	if err != nil {
		return 0, Changes{}, fmt.Errorf("restore: %s: %w", file, err)
	}
	after, err := namesIn(ctx, file)
	if err != nil {
		return 0, Changes{}, fmt.Errorf("restore: %s: %w", file, err)
	}
	version, err = restore(ctx, file, dir, version)
	if err != nil {
		return 0, Changes{}, err
	}
	ddir, err := DataDir(dir)
	if err != nil {
		return version, Changes{}, err
	}
	before, err := namesIn(ctx, filepath.Join(ddir, FileName+".bak"))
	if errors.Is(err, fs.ErrNotExist) {
		before, err = map[string]map[string]string{}, nil // nothing was replaced
	}
	if err != nil {
		return version, Changes{}, fmt.Errorf("restored, but the replaced database could not be read to compare: %w", err)
	}
	return version, diffNames(before, after), nil
}

// Changes is what a restore brought back and took away, by kind
// (RestoreKinds): names in the backup the replaced database did not have
// (a deleted user, a revoked token comes back), names the replaced
// database had that the backup does not, and names in both whose secret
// or settings differ (a user's older password, a token made again under
// its name whose older secret works again, a task's older settings).
type Changes struct {
	BroughtBack map[string][]string
	Removed     map[string][]string
	Changed     map[string][]string
}

// RestoreKinds are the kinds of rows a restore reports, in order.
var RestoreKinds = []string{"users", "tokens", "tasks", "clusters"}

// restoreTables say where each kind lives and what tells two rows of the
// same name apart: columns every schema of the table has had.
var restoreTables = map[string]struct{ table, what string }{
	"users":    {"users", "password_hash"},
	"tokens":   {"api_tokens", "token_sha256"},
	"tasks":    {"tasks", "spec"},
	"clusters": {"clusters", "bootstrap_servers || ' ' || security_protocol"},
}

// namesIn reads the names of each kind in the database at path, each with
// what tells it apart (restoreTables); a kind whose table the database's
// schema does not have yet has none.
func namesIn(ctx context.Context, path string) (map[string]map[string]string, error) {
	if _, err := os.Stat(path); err != nil {
		return nil, err
	}
	db, err := sql.Open("sqlite3", "file:"+path+"?_query_only=1&_busy_timeout=5000")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	out := map[string]map[string]string{}
	for _, kind := range RestoreKinds {
		k := restoreTables[kind]
		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, k.table).Scan(&n); err != nil {
			return nil, fmt.Errorf("read the schema: %w", err)
		}
		if n == 0 {
			continue
		}
		rows, err := db.QueryContext(ctx, `SELECT name, `+k.what+` FROM `+k.table)
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", kind, err)
		}
		out[kind] = map[string]string{}
		for rows.Next() {
			var name string
			var what sql.NullString
			if err := rows.Scan(&name, &what); err != nil {
				rows.Close()
				return nil, fmt.Errorf("read %s: %w", kind, err)
			}
			out[kind][name] = what.String
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return nil, fmt.Errorf("read %s: %w", kind, err)
		}
	}
	return out, nil
}

func diffNames(before, after map[string]map[string]string) Changes {
	c := Changes{BroughtBack: map[string][]string{}, Removed: map[string][]string{}, Changed: map[string][]string{}}
	for _, kind := range RestoreKinds {
		for _, name := range sortedKeys(after[kind]) {
			was, ok := before[kind][name]
			switch {
			case !ok:
				c.BroughtBack[kind] = append(c.BroughtBack[kind], name)
			case was != after[kind][name]:
				c.Changed[kind] = append(c.Changed[kind], name)
			}
		}
		for _, name := range sortedKeys(before[kind]) {
			if _, ok := after[kind][name]; !ok {
				c.Removed[kind] = append(c.Removed[kind], name)
			}
		}
	}
	return c
}

func sortedKeys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func restore(ctx context.Context, file, dir string, version int) (int, error) {
	lock, err := LockDataDir(dir)
	if err != nil {
		return 0, fmt.Errorf("restore refused: %w", err)
	}
	defer lock.Unlock() //nolint:errcheck // releasing a lock we hold does not fail in a way we could act on
	dst := filepath.Join(lock.dir, FileName)
	tmp := dst + ".restore"
	_ = os.Remove(tmp)
	if err := copyDatabase(ctx, file, tmp); err != nil {
		_ = os.Remove(tmp)
		return 0, fmt.Errorf("restore %s: %w", file, err)
	}
	// Keep the replaced database and its WAL and shared memory under the
	// .bak name: SQLite finds a WAL by the database's name, so the .bak opens
	// whole, and no stale WAL is left to be read into the restored file.
	for _, suffix := range []string{"", "-wal", "-shm"} {
		err := os.Rename(dst+suffix, dst+".bak"+suffix)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			_ = os.Remove(tmp)
			return 0, fmt.Errorf("restore: keep the current database as %s: %w", dst+".bak", err)
		}
		if errors.Is(err, fs.ErrNotExist) {
			_ = os.Remove(dst + ".bak" + suffix) // an older .bak's leftover must not pair with this one
		}
	}
	if err := os.Rename(tmp, dst); err != nil {
		return 0, fmt.Errorf("restore: put %s in place: %w (the previous database is %s)", tmp, err, dst+".bak")
	}
	return version, nil
}

// checkDatabase opens path read-only and checks it is an intact kmirror
// database whose applied migrations this binary knows by version and name.
// It returns the schema version.
func checkDatabase(ctx context.Context, path string) (int, error) {
	if _, err := os.Stat(path); err != nil {
		return 0, err
	}
	db, err := sql.Open("sqlite3", "file:"+path+"?_query_only=1&_busy_timeout=5000")
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var result string
	if err := db.QueryRowContext(ctx, `PRAGMA quick_check`).Scan(&result); err != nil {
		return 0, fmt.Errorf("not a readable SQLite database: %w", err)
	}
	if result != "ok" {
		return 0, fmt.Errorf("the database is damaged: %s", result)
	}
	known, err := readMigrations(migrations.FS)
	if err != nil {
		return 0, err
	}
	names := map[int]string{}
	for _, m := range known {
		names[m.version] = m.name
	}
	rows, err := db.QueryContext(ctx, `SELECT version, name FROM schema_migrations ORDER BY version`)
	if err != nil {
		return 0, fmt.Errorf("not a kmirror database (no schema_migrations table): %w", err)
	}
	defer rows.Close()
	version := 0
	for rows.Next() {
		var v int
		var name string
		if err := rows.Scan(&v, &name); err != nil {
			return 0, fmt.Errorf("read schema_migrations: %w", err)
		}
		want, ok := names[v]
		switch {
		case !ok && v > known[len(known)-1].version:
			return 0, fmt.Errorf("its schema is at version %d but this kmirror knows only up to %d: use a newer kmirror", v, known[len(known)-1].version)
		case !ok || want != name:
			return 0, fmt.Errorf("its migration %04d_%s is not one this kmirror knows: not a kmirror database, or from another build", v, name)
		}
		version = v
	}
	if err := rows.Err(); err != nil {
		return 0, fmt.Errorf("read schema_migrations: %w", err)
	}
	if version == 0 {
		return 0, errors.New("not a kmirror database: no migration applied")
	}
	return version, nil
}

// copyDatabase copies the whole database at src into a new file dst with
// the online backup API, in one step so the copy is one consistent
// snapshot.
func copyDatabase(ctx context.Context, src, dst string) error {
	srcDB, err := sql.Open("sqlite3", "file:"+src+"?_busy_timeout=5000")
	if err != nil {
		return err
	}
	defer srcDB.Close()
	// Created here, empty (SQLite takes an empty file as an empty database),
	// so the copy of sealed passwords and password hashes is 0600 whatever
	// the umask.
	f, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return fmt.Errorf("create %s: %w", dst, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("create %s: %w", dst, err)
	}
	dstDB, err := sql.Open("sqlite3", "file:"+dst)
	if err != nil {
		return err
	}
	defer dstDB.Close()
	srcConn, err := srcDB.Conn(ctx)
	if err != nil {
		return fmt.Errorf("open %s: %w", src, err)
	}
	defer srcConn.Close()
	dstConn, err := dstDB.Conn(ctx)
	if err != nil {
		return fmt.Errorf("create %s: %w", dst, err)
	}
	defer dstConn.Close()
	err = dstConn.Raw(func(d any) error {
		return srcConn.Raw(func(s any) error {
			dc, ok1 := d.(*sqlite3.SQLiteConn)
			sc, ok2 := s.(*sqlite3.SQLiteConn)
			if !ok1 || !ok2 {
				return errors.New("not a go-sqlite3 connection")
			}
			b, err := dc.Backup("main", sc, "main")
			if err != nil {
				return err
			}
			// -1: every page in one step, so no writer can change the
			// source between steps (which would restart the copy).
			done, err := b.Step(-1)
			if ferr := b.Finish(); err == nil {
				err = ferr
			}
			if err == nil && !done {
				err = errors.New("backup stopped before the last page")
			}
			return err
		})
	})
	if err != nil {
		return err
	}
	// The copy keeps the source's WAL journal mode in its header; leave it
	// in rollback mode as a single self-contained file.
	if _, err := dstConn.ExecContext(ctx, `PRAGMA journal_mode=DELETE`); err != nil {
		return fmt.Errorf("finish %s: %w", dst, err)
	}
	return nil
}

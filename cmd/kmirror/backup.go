package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/kmirror/kmirror/internal/secrets"
	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/internal/store"
)

// parseFileCommand parses `kmirror backup|restore [--data-dir DIR] FILE`.
func parseFileCommand(name string, args []string, stderr io.Writer) (dataDir, file string, err error) {
	fs := flag.NewFlagSet("kmirror "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&dataDir, "data-dir", "./kmirror-data", "the data directory kmirror serve uses")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: kmirror %s [--data-dir DIR] FILE\n", name)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return "", "", err
	}
	if fs.NArg() != 1 {
		return "", "", fmt.Errorf("%s takes one FILE, got %q", name, fs.Args())
	}
	return dataDir, fs.Arg(0), nil
}

// backupCommand is `kmirror backup FILE`: a consistent copy of the database,
// safe to take while kmirror serve runs.
func backupCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	dataDir, file, err := parseFileCommand("backup", args, stderr)
	if err != nil {
		return err
	}
	// Where serve keeps the database; nothing is created if it is not there.
	dataDir, err = store.DataDir(dataDir)
	if err != nil {
		return err
	}
	if err := store.Backup(ctx, filepath.Join(dataDir, store.FileName), file); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "kmirror: database backed up to %s\n", file)
	fmt.Fprintf(stdout, "  the encryption key is not in it: keep %s safe apart from the backup\n", filepath.Join(dataDir, secrets.KeyFile))
	return nil
}

// restoreCommand is `kmirror restore FILE`: replaces the data directory's
// database with a backup while no kmirror uses the directory.
func restoreCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	dataDir, file, err := parseFileCommand("restore", args, stderr)
	if err != nil {
		return err
	}
	version, changes, err := store.Restore(ctx, file, dataDir)
	if err != nil {
		return err
	}
	// Where Restore put it: the data directory of --data-dir.
	if dataDir, err = store.DataDir(dataDir); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "kmirror: restored %s (schema version %d) into %s; the previous database is %s\n",
		file, version, dataDir, filepath.Join(dataDir, store.FileName+".bak"))
	printChanges(stdout, changes)
	if err := recordRestore(ctx, dataDir, file, changes, stdout); err != nil {
		return fmt.Errorf("restored, but %w", err)
	}
	sealed, opened, err := checkKey(ctx, dataDir)
	keyPath := filepath.Join(dataDir, secrets.KeyFile)
	switch {
	case err != nil:
		return fmt.Errorf("restored, but the stored passwords could not be checked: %w", err)
	case opened < sealed:
		fmt.Fprintf(stdout, "  WARNING: %d of %d stored passwords do not open with %s: put the %s of the data directory the backup was taken from there before starting kmirror serve\n",
			sealed-opened, sealed, keyPath, secrets.KeyFile)
	case sealed > 0:
		fmt.Fprintf(stdout, "  all %d stored passwords open with %s\n", sealed, keyPath)
	}
	return nil
}

// checkKey counts the sealed passwords of the restored database and how
// many of them the data directory's key opens. A missing key opens none and
// is not created: the right one is the backed-up directory's.
func checkKey(ctx context.Context, dataDir string) (sealed, opened int, err error) {
	var box *secrets.Box
	if _, err := os.Stat(filepath.Join(dataDir, secrets.KeyFile)); err == nil {
		if box, err = secrets.Load(dataDir); err != nil {
			return 0, 0, err
		}
	} else if !errors.Is(err, fs.ErrNotExist) {
		return 0, 0, err
	}
	db, err := sql.Open("sqlite3", "file:"+filepath.Join(dataDir, store.FileName)+"?_query_only=1")
	if err != nil {
		return 0, 0, err
	}
	defer db.Close()
	// The labels are the service's: a cluster's name, "task/<name>" for a
	// task's peer (internal/service). A backup from before tasks existed
	// has no tasks table.
	query := `SELECT name, password_ciphertext FROM clusters WHERE password_ciphertext IS NOT NULL`
	var tasks int
	if err := db.QueryRowContext(ctx, `SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'tasks'`).Scan(&tasks); err != nil {
		return 0, 0, fmt.Errorf("read the schema: %w", err)
	}
	if tasks > 0 {
		query += ` UNION ALL SELECT 'task/' || name, peer_password_ciphertext FROM tasks WHERE peer_password_ciphertext IS NOT NULL`
	}
	rows, err := db.QueryContext(ctx, query)
	if err != nil {
		return 0, 0, fmt.Errorf("read the stored passwords: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		var label string
		var ct []byte
		if err := rows.Scan(&label, &ct); err != nil {
			return 0, 0, err
		}
		sealed++
		if box != nil {
			if _, err := box.Open(ct, label); err == nil {
				opened++
			}
		}
	}
	return sealed, opened, rows.Err()
}

// printChanges says what the restore brought back (a deleted user, a
// revoked token, a deleted task returns with the backup) and removed.
func printChanges(w io.Writer, c store.Changes) {
	if len(c.BroughtBack)+len(c.Removed)+len(c.Changed) == 0 {
		fmt.Fprintln(w, "  the backup holds the same users, tokens, tasks and clusters as the replaced database")
		return
	}
	for _, what := range []struct {
		verb string
		m    map[string][]string
	}{{"brings back", c.BroughtBack}, {"brings back an older password, secret or settings of", c.Changed}, {"removes", c.Removed}} {
		for _, kind := range store.RestoreKinds {
			if names := what.m[kind]; len(names) > 0 {
				fmt.Fprintf(w, "  %s %d %s: %s\n", what.verb, len(names), kind, strings.Join(names, ", "))
			}
		}
	}
	if len(c.BroughtBack["users"])+len(c.BroughtBack["tokens"])+len(c.Changed["users"])+len(c.Changed["tokens"]) > 0 {
		fmt.Fprintln(w, "  WARNING: users and tokens brought back, and older passwords and tokens, work again: remove or reset those that should stay gone (kmirror user remove, kmirror token revoke, admin set-password)")
	}
}

// recordRestore brings the restored database to this binary's schema,
// signs every console session out (a backup's sessions may have ended
// since), and records the restore in its audit log.
func recordRestore(ctx context.Context, dataDir, file string, c store.Changes, stdout io.Writer) error {
	db, err := store.Open(ctx, dataDir)
	if err != nil {
		return fmt.Errorf("the restored database could not be opened: %w", err)
	}
	defer db.Close()
	n, err := db.EndAllSessions(ctx)
	if err != nil {
		return err
	}
	if n > 0 {
		fmt.Fprintf(stdout, "  signed out the %d console session(s) the backup held: everyone signs in again\n", n)
	}
	svc, err := service.New(service.Deps{Clusters: db, Users: db, Secrets: noSealer{}, Audit: db})
	if err != nil {
		return err
	}
	svc.RecordRestore(ctx, file, c)
	return nil
}

// noSealer stands in for the key when a command only records: the data
// directory's key may not be there yet right after a restore.
type noSealer struct{}

func (noSealer) Seal([]byte, string) ([]byte, error) {
	return nil, errors.New("no secrets are sealed by this command")
}

func (noSealer) Open([]byte, string) ([]byte, error) {
	return nil, errors.New("no secrets are opened by this command")
}

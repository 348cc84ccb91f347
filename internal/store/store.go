// Package store keeps kmirror's durable state in SQLite in the data
// directory: console users, API tokens, the audit log, registered Kafka
// and Kafka Connect clusters, and Smart Connect tasks.
//
// Callers depend on the small interfaces (Users, Clusters, Tasks) rather than on DB,
// so a store shared by several kmirror processes (scale-out) can replace SQLite
// without touching the service layer.
//
// Invariants: the schema is brought up to date by Open before any other call;
// migrations are applied in version order, each in its own transaction
// together with its row in schema_migrations, so a crash never leaves a
// half-applied migration recorded as done.
package store

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/mattn/go-sqlite3"

	"github.com/kmirror/kmirror/migrations"
)

// FileName is the database's name inside the data directory.
const FileName = "kmirror.db"

// Errors callers branch on; the service layer turns them into API codes.
var (
	ErrNotFound = errors.New("not found")
	ErrExists   = errors.New("already exists")
	// ErrReferenced: the row is still used by another (a Connect cluster
	// that tasks run on); remove those first.
	ErrReferenced = errors.New("still in use")
)

// DB is the SQLite implementation of the store interfaces.
type DB struct {
	db *sql.DB // readers
	// w is the one connection every write goes through. SQLite admits one
	// writer at a time, and its busy handler polls with sleeps of up to
	// 100 ms: of many writers at once (25 concurrent API creates on a
	// loaded machine) one could lose every race until the busy timeout
	// failed it. Here they wait for the connection in the process, bounded
	// by their context, and it passes on as soon as it is free; the busy
	// timeout is left for other processes (the CLI on the same file).
	w *sql.DB
}

// Open opens (creating if needed) kmirror.db in the data directory of dir
// (DataDir: dir itself, or dir/kmirror when dir is not kmirror's) and
// applies pending migrations.
func Open(ctx context.Context, dir string) (*DB, error) {
	dataDir, err := makePrivate(dir)
	if err != nil {
		return nil, err
	}
	return OpenFile(ctx, filepath.Join(dataDir, FileName))
}

// OpenFile opens the database at path and applies pending migrations.
func OpenFile(ctx context.Context, path string) (*DB, error) {
	// WAL lets the console read while a replicator writes; foreign keys are
	// off by default in SQLite; the busy timeout turns short write contention
	// with another process into a wait instead of SQLITE_BUSY (this process's
	// writers queue for DB.w); immediate transactions take the write lock up
	// front so two writers cannot deadlock upgrading read locks.
	dsn := "file:" + path + "?_journal_mode=WAL&_foreign_keys=on&_busy_timeout=5000&_txlock=immediate"
	open := func() (*sql.DB, error) {
		db, err := sql.Open("sqlite3", dsn)
		if err != nil {
			return nil, fmt.Errorf("open database %s: %w", path, err)
		}
		if err := db.PingContext(ctx); err != nil {
			db.Close()
			return nil, fmt.Errorf("open database %s: %w (is the data directory writable?)", path, err)
		}
		return db, nil
	}
	w, err := open()
	if err != nil {
		return nil, err
	}
	w.SetMaxOpenConns(1)
	if err := Migrate(ctx, w, migrations.FS); err != nil {
		w.Close()
		return nil, fmt.Errorf("database %s: %w", path, err)
	}
	r, err := open()
	if err != nil {
		w.Close()
		return nil, err
	}
	return &DB{db: r, w: w}, nil
}

// Close closes the database.
func (d *DB) Close() error { return errors.Join(d.db.Close(), d.w.Close()) }

// Ping checks that the database answers; /healthz uses it.
func (d *DB) Ping(ctx context.Context) error { return d.db.PingContext(ctx) }

// SQL exposes the readers' pool to tests, which also seed and corrupt rows
// through it (such writes skip the writers' queue and wait in SQLite's busy
// handler instead); the product never uses it.
func (d *DB) SQL() *sql.DB { return d.db }

// isConstraint reports whether err is a uniqueness violation.
func isConstraint(err error) bool {
	var se sqlite3.Error
	if errors.As(err, &se) {
		return se.ExtendedCode == sqlite3.ErrConstraintPrimaryKey || se.ExtendedCode == sqlite3.ErrConstraintUnique
	}
	return false
}

func unixTime(sec int64) time.Time { return time.Unix(sec, 0).UTC() }

// isForeignKey reports whether err is a foreign-key violation.
func isForeignKey(err error) bool {
	var se sqlite3.Error
	if !errors.As(err, &se) {
		return false
	}
	// A violation found at the end of a statement (deleting a parent row
	// that RESTRICT protects) comes back as a plain SQLITE_CONSTRAINT with
	// no extended code; only its message names the foreign key.
	return se.ExtendedCode == sqlite3.ErrConstraintForeignKey ||
		(se.Code == sqlite3.ErrConstraint && strings.Contains(se.Error(), "FOREIGN KEY"))
}

// queryAll runs a query and scans every row with scan; what names the rows
// in errors ("list clusters").
func queryAll[T any](ctx context.Context, q querier, what string, scan func(scanner) (T, error), query string, args ...any) ([]T, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	defer rows.Close()
	var out []T
	for rows.Next() {
		v, err := scan(rows)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", what, err)
		}
		out = append(out, v)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return out, nil
}

type rowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// queryOne scans the one row a query finds; what names it in errors
// (`task "x"`), wrapping ErrNotFound when there is none.
func queryOne[T any](ctx context.Context, q rowQuerier, what string, scan func(scanner) (T, error), query string, args ...any) (T, error) {
	v, err := scan(q.QueryRowContext(ctx, query, args...))
	if errors.Is(err, sql.ErrNoRows) {
		return v, fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	if err != nil {
		return v, fmt.Errorf("read %s: %w", what, err)
	}
	return v, nil
}

// execOne runs a statement meant for one row: op says what it does in
// errors ("delete"), what names the row (`task "x"`), and ErrNotFound is
// wrapped when it touched none. The statement's own error is wrapped, so
// callers can still ask isForeignKey.
func execOne(ctx context.Context, db execer, op, what, query string, args ...any) error {
	res, err := db.ExecContext(ctx, query, args...)
	if err != nil {
		return fmt.Errorf("%s %s: %w", op, what, err)
	}
	if n, err := res.RowsAffected(); err == nil && n == 0 {
		return fmt.Errorf("%s: %w", what, ErrNotFound)
	}
	return nil
}

// execer is a *sql.DB or a *sql.Tx.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// inTx runs fn in one transaction (BEGIN IMMEDIATE, as the DSN says),
// committed when fn returns nil.
func (d *DB) inTx(ctx context.Context, fn func(*sql.Tx) error) error {
	tx, err := d.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("begin: %w", err)
	}
	defer tx.Rollback() //nolint:errcheck // after Commit this is a no-op
	if err := fn(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("commit: %w", err)
	}
	return nil
}

// newID is a random identity (128 bits, hex) for an account or a session.
func newID() string {
	var b [16]byte
	_, _ = rand.Read(b[:]) // never fails (crypto/rand)
	return hex.EncodeToString(b[:])
}

package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"
)

// Token is an API token as stored: its SHA-256, never the token.
type Token struct {
	Name        string
	Role        string
	TokenSHA256 string // hex
	CreatedBy   string
	CreatedAt   time.Time
}

// Tokens stores API tokens.
type Tokens interface {
	// CreateToken fails with ErrExists when the name or the hash is taken.
	CreateToken(ctx context.Context, t Token) error
	// TokenByHash fails with ErrNotFound for an unknown hash.
	TokenByHash(ctx context.Context, sha256Hex string) (Token, error)
	ListTokens(ctx context.Context) ([]Token, error)
	// DeleteToken fails with ErrNotFound for an unknown name.
	DeleteToken(ctx context.Context, name string) error
}

// AuditEntry is one line of the audit log.
type AuditEntry struct {
	ID      int64     `json:"id"`
	At      time.Time `json:"at"`
	Actor   string    `json:"actor"`
	Role    string    `json:"role"`
	Address string    `json:"address"`
	Action  string    `json:"action"`
	Object  string    `json:"object"`
	Outcome string    `json:"outcome"`
}

// AuditFilter selects audit entries; empty fields match everything.
type AuditFilter struct {
	Actor    string
	Action   string // a prefix: "task." matches every task action
	Outcome  string // a prefix: "failed" matches every failure
	BeforeID int64  // entries older than this id (paging); 0 for the newest
	Limit    int    // at most this many (newest first); 0 means 100
}

// Audit stores the audit log; it can only append and read.
type Audit interface {
	AppendAudit(ctx context.Context, e AuditEntry) error
	ListAudit(ctx context.Context, f AuditFilter) ([]AuditEntry, error)
}

var (
	_ Tokens = (*DB)(nil)
	_ Audit  = (*DB)(nil)
)

// CreateToken implements Tokens.
func (d *DB) CreateToken(ctx context.Context, t Token) error {
	if t.CreatedAt.IsZero() {
		t.CreatedAt = time.Now()
	}
	_, err := d.db.ExecContext(ctx, `INSERT INTO api_tokens (name, role, token_sha256, created_by, created_at) VALUES (?, ?, ?, ?, ?)`,
		t.Name, t.Role, t.TokenSHA256, t.CreatedBy, t.CreatedAt.Unix())
	if isConstraint(err) {
		return fmt.Errorf("token %q: %w", t.Name, ErrExists)
	}
	if err != nil {
		return fmt.Errorf("create token %q: %w", t.Name, err)
	}
	return nil
}

// TokenByHash implements Tokens.
func (d *DB) TokenByHash(ctx context.Context, sha256Hex string) (Token, error) {
	t := Token{TokenSHA256: sha256Hex}
	var created int64
	err := d.db.QueryRowContext(ctx, `SELECT name, role, created_by, created_at FROM api_tokens WHERE token_sha256 = ?`, sha256Hex).
		Scan(&t.Name, &t.Role, &t.CreatedBy, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return Token{}, fmt.Errorf("token: %w", ErrNotFound)
	}
	if err != nil {
		return Token{}, fmt.Errorf("read token: %w", err)
	}
	t.CreatedAt = unixTime(created)
	return t, nil
}

// ListTokens implements Tokens.
func (d *DB) ListTokens(ctx context.Context) ([]Token, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT name, role, created_by, created_at FROM api_tokens ORDER BY name`)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	defer rows.Close()
	var out []Token
	for rows.Next() {
		var t Token
		var created int64
		if err := rows.Scan(&t.Name, &t.Role, &t.CreatedBy, &created); err != nil {
			return nil, fmt.Errorf("list tokens: %w", err)
		}
		t.CreatedAt = unixTime(created)
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	return out, nil
}

// DeleteToken implements Tokens.
func (d *DB) DeleteToken(ctx context.Context, name string) error {
	return execOne(ctx, d.db, "delete", fmt.Sprintf("token %q", name), `DELETE FROM api_tokens WHERE name = ?`, name)
}

// AppendAudit implements Audit.
func (d *DB) AppendAudit(ctx context.Context, e AuditEntry) error {
	if e.At.IsZero() {
		e.At = time.Now()
	}
	_, err := d.db.ExecContext(ctx, `INSERT INTO audit_log (at, actor, role, address, action, object, outcome) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		e.At.UnixMilli(), e.Actor, e.Role, e.Address, e.Action, e.Object, e.Outcome)
	if err != nil {
		return fmt.Errorf("append to the audit log: %w", err)
	}
	return nil
}

// ListAudit implements Audit: newest first.
func (d *DB) ListAudit(ctx context.Context, f AuditFilter) ([]AuditEntry, error) {
	var where []string
	var args []any
	if f.Actor != "" {
		where, args = append(where, "actor = ?"), append(args, f.Actor)
	}
	if f.Action != "" {
		where, args = append(where, "substr(action, 1, ?) = ?"), append(args, len(f.Action), f.Action)
	}
	if f.Outcome != "" {
		where, args = append(where, "substr(outcome, 1, ?) = ?"), append(args, len(f.Outcome), f.Outcome)
	}
	if f.BeforeID > 0 {
		where, args = append(where, "id < ?"), append(args, f.BeforeID)
	}
	if f.Limit <= 0 {
		f.Limit = 100
	}
	q := `SELECT id, at, actor, role, address, action, object, outcome FROM audit_log`
	if len(where) > 0 {
		q += " WHERE " + strings.Join(where, " AND ")
	}
	q += " ORDER BY id DESC LIMIT ?"
	args = append(args, f.Limit)
	rows, err := d.db.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, fmt.Errorf("read the audit log: %w", err)
	}
	defer rows.Close()
	var out []AuditEntry
	for rows.Next() {
		var e AuditEntry
		var at int64
		if err := rows.Scan(&e.ID, &at, &e.Actor, &e.Role, &e.Address, &e.Action, &e.Object, &e.Outcome); err != nil {
			return nil, fmt.Errorf("read the audit log: %w", err)
		}
		e.At = time.UnixMilli(at).UTC()
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("read the audit log: %w", err)
	}
	return out, nil
}

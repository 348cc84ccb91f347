package store

import (
	"context"
	"database/sql"
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
	// OwnerAccountID is the account the token acts for and ends with
	// (deleting the account deletes the token); empty: none (made with
	// KMIRROR_TOKEN), the token lives until revoked or expired.
	OwnerAccountID string
	// ExpiresAt is when the token stops working; zero: never.
	ExpiresAt time.Time
	// LastUsedAt is the last request made with it, to the minute; zero:
	// never used.
	LastUsedAt time.Time
	// OwnerRole is the owner's role now (read, never stored): a token acts
	// with at most its owner's rights. Empty without an owner.
	OwnerRole string
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
	// TouchToken records a use of the token at at.
	TouchToken(ctx context.Context, sha256Hex string, at time.Time) error
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

// Audit stores the audit log; it can only append, read, and prune old
// entries (which itself appends an entry saying so).
type Audit interface {
	AppendAudit(ctx context.Context, e AuditEntry) error
	ListAudit(ctx context.Context, f AuditFilter) ([]AuditEntry, error)
	// AuditSize counts the entries and the bytes their text takes.
	AuditSize(ctx context.Context) (entries, bytes int64, err error)
	// PruneAudit removes the entries made before before and appends
	// record (its Outcome gets the count removed) in the same
	// transaction; it returns how many it removed.
	PruneAudit(ctx context.Context, before time.Time, record AuditEntry) (int64, error)
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
	_, err := d.w.ExecContext(ctx, `INSERT INTO api_tokens (name, role, token_sha256, created_by, created_at, owner_account_id, expires_at)
		VALUES (?, ?, ?, ?, ?, ?, ?)`,
		t.Name, t.Role, t.TokenSHA256, t.CreatedBy, t.CreatedAt.Unix(), nullString(t.OwnerAccountID), nullUnix(t.ExpiresAt))
	if isForeignKey(err) {
		return fmt.Errorf("token %q: its owner's account: %w", t.Name, ErrNotFound)
	}
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
	return queryOne(ctx, d.db, "token", scanToken, `SELECT `+tokenColumns+` FROM `+tokensWithOwners+` WHERE t.token_sha256 = ?`, sha256Hex)
}

const (
	tokenColumns     = `t.name, t.role, t.token_sha256, t.created_by, t.created_at, t.owner_account_id, t.expires_at, t.last_used_at, coalesce(u.role, '')`
	tokensWithOwners = `api_tokens t LEFT JOIN users u ON u.account_id = t.owner_account_id`
)

func scanToken(row scanner) (Token, error) {
	var t Token
	var created int64
	var owner sql.NullString
	var expires, used sql.NullInt64
	if err := row.Scan(&t.Name, &t.Role, &t.TokenSHA256, &t.CreatedBy, &created, &owner, &expires, &used, &t.OwnerRole); err != nil {
		return Token{}, err
	}
	t.CreatedAt = unixTime(created)
	t.OwnerAccountID = owner.String
	if expires.Valid {
		t.ExpiresAt = unixTime(expires.Int64)
	}
	if used.Valid {
		t.LastUsedAt = unixTime(used.Int64)
	}
	return t, nil
}

// ListTokens implements Tokens.
func (d *DB) ListTokens(ctx context.Context) ([]Token, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT `+tokenColumns+` FROM `+tokensWithOwners+` ORDER BY t.name`)
	if err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	defer rows.Close()
	var out []Token
	for rows.Next() {
		t, err := scanToken(rows)
		if err != nil {
			return nil, fmt.Errorf("list tokens: %w", err)
		}
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list tokens: %w", err)
	}
	return out, nil
}

// TouchToken implements Tokens.
func (d *DB) TouchToken(ctx context.Context, sha256Hex string, at time.Time) error {
	_, err := d.w.ExecContext(ctx, `UPDATE api_tokens SET last_used_at = ? WHERE token_sha256 = ?`, at.Unix(), sha256Hex)
	if err != nil {
		return fmt.Errorf("record a token's use: %w", err)
	}
	return nil
}

func nullString(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func nullUnix(t time.Time) any {
	if t.IsZero() {
		return nil
	}
	return t.Unix()
}

// DeleteToken implements Tokens.
func (d *DB) DeleteToken(ctx context.Context, name string) error {
	return execOne(ctx, d.w, "delete", fmt.Sprintf("token %q", name), `DELETE FROM api_tokens WHERE name = ?`, name)
}

// AppendAudit implements Audit.
func (d *DB) AppendAudit(ctx context.Context, e AuditEntry) error {
	return appendAudit(ctx, d.w, e)
}

func appendAudit(ctx context.Context, db execer, e AuditEntry) error {
	if e.At.IsZero() {
		e.At = time.Now()
	}
	_, err := db.ExecContext(ctx, `INSERT INTO audit_log (at, actor, role, address, action, object, outcome) VALUES (?, ?, ?, ?, ?, ?, ?)`,
		e.At.UnixMilli(), e.Actor, e.Role, e.Address, e.Action, e.Object, e.Outcome)
	if err != nil {
		return fmt.Errorf("append to the audit log: %w", err)
	}
	return nil
}

// AuditSize implements Audit.
func (d *DB) AuditSize(ctx context.Context) (entries, bytes int64, err error) {
	err = d.db.QueryRowContext(ctx, `SELECT count(*), coalesce(sum(length(actor) + length(role) + length(address) + length(action) + length(object) + length(outcome) + 16), 0) FROM audit_log`).
		Scan(&entries, &bytes)
	if err != nil {
		return 0, 0, fmt.Errorf("measure the audit log: %w", err)
	}
	return entries, bytes, nil
}

// PruneAudit implements Audit. The table's trigger refuses a DELETE of
// any entry at or past audit_prune.before_id, which is set only here and
// only inside this transaction.
func (d *DB) PruneAudit(ctx context.Context, before time.Time, record AuditEntry) (int64, error) {
	var n int64
	err := d.inTx(ctx, func(tx *sql.Tx) error {
		var bound sql.NullInt64
		if err := tx.QueryRowContext(ctx, `SELECT max(id) + 1 FROM audit_log WHERE at < ?`, before.UnixMilli()).Scan(&bound); err != nil {
			return fmt.Errorf("prune the audit log: %w", err)
		}
		if bound.Valid {
			if _, err := tx.ExecContext(ctx, `UPDATE audit_prune SET before_id = ? WHERE one = 1`, bound.Int64); err != nil {
				return fmt.Errorf("prune the audit log: %w", err)
			}
			res, err := tx.ExecContext(ctx, `DELETE FROM audit_log WHERE id < ? AND at < ?`, bound.Int64, before.UnixMilli())
			if err != nil {
				return fmt.Errorf("prune the audit log: %w", err)
			}
			n, _ = res.RowsAffected()
			if _, err := tx.ExecContext(ctx, `UPDATE audit_prune SET before_id = 0 WHERE one = 1`); err != nil {
				return fmt.Errorf("prune the audit log: %w", err)
			}
		}
		record.Outcome = fmt.Sprintf("ok: %d entries removed", n)
		return appendAudit(ctx, tx, record)
	})
	return n, err
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

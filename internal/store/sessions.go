package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// Sessions keeps console sessions on the server, by the SHA-256 of the
// random id their cookie carries, each bound to an account's AccountID.
type Sessions interface {
	// CreateSession records a session of the account; sessions older than
	// notBefore (of any account) are removed on the way, so the table holds
	// only sessions that may still be used. ErrNotFound when the account
	// is gone.
	CreateSession(ctx context.Context, idSHA256, accountID string, at, notBefore time.Time) error
	// SessionUser returns the account of a session as it is now;
	// ErrNotFound when the session ended or its account is gone.
	SessionUser(ctx context.Context, idSHA256 string) (User, error)
	// EndSession removes one session; ending one that is gone is no error.
	EndSession(ctx context.Context, idSHA256 string) error
}

var _ Sessions = (*DB)(nil)

// CreateSession implements Sessions.
func (d *DB) CreateSession(ctx context.Context, idSHA256, accountID string, at, notBefore time.Time) error {
	return d.inTx(ctx, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, `DELETE FROM console_sessions WHERE created_at < ?`, notBefore.Unix()); err != nil {
			return fmt.Errorf("remove ended sessions: %w", err)
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO console_sessions (id_sha256, account_id, created_at) VALUES (?, ?, ?)`,
			idSHA256, accountID, at.Unix())
		if isForeignKey(err) {
			return fmt.Errorf("session: the account: %w", ErrNotFound)
		}
		if err != nil {
			return fmt.Errorf("record a session: %w", err)
		}
		return nil
	})
}

// SessionUser implements Sessions.
func (d *DB) SessionUser(ctx context.Context, idSHA256 string) (User, error) {
	return queryOne(ctx, d.db, "session", scanUser,
		`SELECT `+userColumns+` FROM console_sessions s JOIN users u ON u.account_id = s.account_id WHERE s.id_sha256 = ?`, idSHA256)
}

// EndSession implements Sessions.
func (d *DB) EndSession(ctx context.Context, idSHA256 string) error {
	if _, err := d.w.ExecContext(ctx, `DELETE FROM console_sessions WHERE id_sha256 = ?`, idSHA256); err != nil {
		return fmt.Errorf("end a session: %w", err)
	}
	return nil
}

// EndAllSessions signs every console session out: a restored database
// must not bring back sessions that had ended since the backup.
func (d *DB) EndAllSessions(ctx context.Context) (int64, error) {
	res, err := d.w.ExecContext(ctx, `DELETE FROM console_sessions`)
	if err != nil {
		return 0, fmt.Errorf("end every session: %w", err)
	}
	n, _ := res.RowsAffected()
	return n, nil
}

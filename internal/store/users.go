package store

import (
	"context"
	"database/sql"
	"fmt"
	"time"
)

// User is a console account. PasswordHash is a bcrypt hash.
type User struct {
	Name         string
	PasswordHash string
	// Role is viewer, operator or admin; empty means admin on create.
	Role string
	// AccountID is the account's immutable identity, set by CreateUser:
	// random and never reused, so an account made again under a deleted
	// one's name is another account. Sessions and tokens belong to it.
	AccountID string
	CreatedAt time.Time
}

// Users stores console accounts.
type Users interface {
	// CreateUser fails with ErrExists when the name is taken.
	CreateUser(ctx context.Context, u User) error
	// User fails with ErrNotFound for an unknown name.
	User(ctx context.Context, name string) (User, error)
	CountUsers(ctx context.Context) (int, error)
	// ListUsers returns every account ordered by name.
	ListUsers(ctx context.Context) ([]User, error)
	// DeleteUser fails with ErrNotFound for an unknown name.
	DeleteUser(ctx context.Context, name string) error
	// SetPassword replaces the hash and ends every session of the account,
	// so none signed in with the old password lasts; ErrNotFound for an
	// unknown name.
	SetPassword(ctx context.Context, name, hash string) error
	// RevokeSessions ends every session of the account; ErrNotFound for an
	// unknown name.
	RevokeSessions(ctx context.Context, name string) error
	// SetRole changes the account's role (its sessions read it on their
	// next request); ErrNotFound for an unknown name.
	SetRole(ctx context.Context, name, role string) error
	// Sessions are the accounts' console sessions.
	Sessions
}

var _ Users = (*DB)(nil)

// CreateUser implements Users.
func (d *DB) CreateUser(ctx context.Context, u User) error {
	if u.CreatedAt.IsZero() {
		u.CreatedAt = time.Now()
	}
	if u.Role == "" {
		u.Role = "admin"
	}
	_, err := d.w.ExecContext(ctx, `INSERT INTO users (name, password_hash, role, account_id, created_at) VALUES (?, ?, ?, ?, ?)`,
		u.Name, u.PasswordHash, u.Role, newID(), u.CreatedAt.Unix())
	if isConstraint(err) {
		return fmt.Errorf("user %q: %w", u.Name, ErrExists)
	}
	if err != nil {
		return fmt.Errorf("create user %q: %w", u.Name, err)
	}
	return nil
}

// User implements Users.
func (d *DB) User(ctx context.Context, name string) (User, error) {
	return queryOne(ctx, d.db, fmt.Sprintf("user %q", name), scanUser, `SELECT `+userColumns+` FROM users u WHERE u.name = ?`, name)
}

// userColumns are what scanUser reads, of users u.
const userColumns = `u.name, u.password_hash, u.role, u.account_id, u.created_at`

func scanUser(row scanner) (User, error) {
	var u User
	var created int64
	if err := row.Scan(&u.Name, &u.PasswordHash, &u.Role, &u.AccountID, &created); err != nil {
		return User{}, err
	}
	u.CreatedAt = unixTime(created)
	return u, nil
}

// CountUsers implements Users.
func (d *DB) CountUsers(ctx context.Context) (int, error) {
	var n int
	if err := d.db.QueryRowContext(ctx, `SELECT COUNT(*) FROM users`).Scan(&n); err != nil {
		return 0, fmt.Errorf("count users: %w", err)
	}
	return n, nil
}

// ListUsers implements Users.
func (d *DB) ListUsers(ctx context.Context) ([]User, error) {
	rows, err := d.db.QueryContext(ctx, `SELECT `+userColumns+` FROM users u ORDER BY u.name`)
	if err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	defer rows.Close()
	var out []User
	for rows.Next() {
		u, err := scanUser(rows)
		if err != nil {
			return nil, fmt.Errorf("list users: %w", err)
		}
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("list users: %w", err)
	}
	return out, nil
}

// DeleteUser implements Users.
func (d *DB) DeleteUser(ctx context.Context, name string) error {
	return d.updateUser(ctx, name, `DELETE FROM users WHERE name = ?`, name)
}

// SetPassword implements Users.
func (d *DB) SetPassword(ctx context.Context, name, hash string) error {
	return d.inTx(ctx, func(tx *sql.Tx) error {
		if err := execOne(ctx, tx, "change", fmt.Sprintf("user %q", name), `UPDATE users SET password_hash = ? WHERE name = ?`, hash, name); err != nil {
			return err
		}
		return endSessionsOf(ctx, tx, name)
	})
}

// RevokeSessions implements Users.
func (d *DB) RevokeSessions(ctx context.Context, name string) error {
	return d.inTx(ctx, func(tx *sql.Tx) error {
		var n int
		if err := tx.QueryRowContext(ctx, `SELECT count(*) FROM users WHERE name = ?`, name).Scan(&n); err != nil {
			return fmt.Errorf("read user %q: %w", name, err)
		}
		if n == 0 {
			return fmt.Errorf("user %q: %w", name, ErrNotFound)
		}
		return endSessionsOf(ctx, tx, name)
	})
}

func endSessionsOf(ctx context.Context, tx *sql.Tx, name string) error {
	if _, err := tx.ExecContext(ctx, `DELETE FROM console_sessions WHERE account_id = (SELECT account_id FROM users WHERE name = ?)`, name); err != nil {
		return fmt.Errorf("end the sessions of user %q: %w", name, err)
	}
	return nil
}

// SetRole implements Users.
func (d *DB) SetRole(ctx context.Context, name, role string) error {
	return d.updateUser(ctx, name, `UPDATE users SET role = ? WHERE name = ?`, role, name)
}

func (d *DB) updateUser(ctx context.Context, name, query string, args ...any) error {
	return execOne(ctx, d.w, "change", fmt.Sprintf("user %q", name), query, args...)
}

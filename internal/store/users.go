package store

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"
)

// User is a console account. PasswordHash is a bcrypt hash.
type User struct {
	Name         string
	PasswordHash string
	CreatedAt    time.Time
}

// Users stores console accounts.
type Users interface {
	// CreateUser fails with ErrExists when the name is taken.
	CreateUser(ctx context.Context, u User) error
	// User fails with ErrNotFound for an unknown name.
	User(ctx context.Context, name string) (User, error)
	CountUsers(ctx context.Context) (int, error)
}

var _ Users = (*DB)(nil)

// CreateUser implements Users.
func (d *DB) CreateUser(ctx context.Context, u User) error {
	if u.CreatedAt.IsZero() {
		u.CreatedAt = time.Now()
	}
	_, err := d.db.ExecContext(ctx, `INSERT INTO users (name, password_hash, created_at) VALUES (?, ?, ?)`,
		u.Name, u.PasswordHash, u.CreatedAt.Unix())
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
	u := User{Name: name}
	var created int64
	err := d.db.QueryRowContext(ctx, `SELECT password_hash, created_at FROM users WHERE name = ?`, name).
		Scan(&u.PasswordHash, &created)
	if errors.Is(err, sql.ErrNoRows) {
		return User{}, fmt.Errorf("user %q: %w", name, ErrNotFound)
	}
	if err != nil {
		return User{}, fmt.Errorf("read user %q: %w", name, err)
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

// Package account is console sign-in: bcrypt password hashes, the admin
// account created on first start, and a throttle that slows down repeated
// wrong passwords.
//
// Invariants: a clear password is never stored, logged or returned, except the
// generated first-start admin password, which EnsureAdmin hands back exactly
// once for the caller to print.
package account

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"

	"golang.org/x/crypto/bcrypt"

	"github.com/kmirror/kmirror/internal/store"
)

// AdminName is the account created on first start.
const AdminName = "admin"

// MinPasswordLength keeps a chosen admin password from being trivially guessed.
const MinPasswordLength = 8

// Hash returns a bcrypt hash of password at bcrypt's default cost: slow enough
// to make offline guessing expensive, fast enough (~50 ms) for sign-in.
func Hash(password string) (string, error) {
	h, err := bcrypt.GenerateFromPassword([]byte(password), hashCost)
	if errors.Is(err, bcrypt.ErrPasswordTooLong) {
		return "", fmt.Errorf("password is longer than 72 bytes, which bcrypt cannot hash: choose a shorter one")
	}
	if err != nil {
		return "", fmt.Errorf("hash password: %w", err)
	}
	return string(h), nil
}

// Verify reports whether password matches hash.
func Verify(hash, password string) bool {
	return bcrypt.CompareHashAndPassword([]byte(hash), []byte(password)) == nil
}

// VerifyNobody takes as long as Verify and matches nothing: what to do for
// an unknown user name, so names cannot be probed by timing.
func VerifyNobody(password string) {
	bcrypt.CompareHashAndPassword(dummyHash, []byte(password)) //nolint:errcheck // timing only
}

// dummyHash is compared against when the user does not exist, so a wrong user
// name takes as long as a wrong password and names cannot be probed by timing.
var dummyHash, _ = bcrypt.GenerateFromPassword([]byte("kmirror-no-such-user"), bcrypt.DefaultCost)

// hashCost is the cost of new hashes: bcrypt's default, except in tests
// that asked for UseTestHashCost.
var hashCost = bcrypt.DefaultCost

// UseTestHashCost makes every hash made from now on, and the unknown-user
// comparison, cost bcrypt's minimum: for a test binary's TestMain only,
// before any test runs (the web package's tests hash about 190 passwords,
// 0.86 s each under the race detector). Never called by kmirror itself.
func UseTestHashCost() {
	hashCost = bcrypt.MinCost
	dummyHash, _ = bcrypt.GenerateFromPassword([]byte("kmirror-no-such-user"), bcrypt.MinCost)
}

// Check verifies name and password against users. It reports false for an
// unknown user and for a wrong password alike.
func Check(ctx context.Context, users store.Users, name, password string) (bool, error) {
	u, err := users.User(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		bcrypt.CompareHashAndPassword(dummyHash, []byte(password)) //nolint:errcheck // timing only
		return false, nil
	}
	if err != nil {
		return false, err
	}
	return Verify(u.PasswordHash, password), nil
}

// EnsureAdmin creates the admin account when no account exists yet. password
// is the operator's choice (KMIRROR_ADMIN_PASSWORD); when empty a random one is
// generated and returned as generated so the caller can print it once. On
// later starts it does nothing and returns "".
func EnsureAdmin(ctx context.Context, users store.Users, password string) (generated string, err error) {
	n, err := users.CountUsers(ctx)
	if err != nil {
		return "", err
	}
	if n > 0 {
		return "", nil
	}
	if password == "" {
		generated = rand.Text() // 26 base32 characters, 130 bits
		password = generated
	} else if len(password) < MinPasswordLength {
		return "", fmt.Errorf("KMIRROR_ADMIN_PASSWORD is shorter than %d characters: choose a longer one or unset it to get a generated one", MinPasswordLength)
	}
	h, err := Hash(password)
	if err != nil {
		return "", err
	}
	if err := users.CreateUser(ctx, store.User{Name: AdminName, PasswordHash: h}); err != nil {
		if errors.Is(err, store.ErrExists) {
			return "", nil // another process created it first
		}
		return "", fmt.Errorf("create the admin account: %w", err)
	}
	return generated, nil
}

package service

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/kmirror/kmirror/internal/account"
	"github.com/kmirror/kmirror/internal/store"
)

// Role is what a user or token may do.
type Role string

// Roles, from least to most rights.
const (
	RoleViewer   Role = "viewer"   // reads everything except secrets
	RoleOperator Role = "operator" // also creates, pauses, resumes, restarts and deletes tasks, runs checks
	RoleAdmin    Role = "admin"    // also instances, Connect clusters, users and tokens
)

// MaxUserNameLength caps account names; a longer name given at sign-in is
// refused before any other work.
const MaxUserNameLength = 64

// Principal is a signed-in account as a session remembers it.
type Principal struct {
	Name string
	Role Role
	// AccountID is the account's immutable identity: a session is bound
	// to it, not to the name, which a new account may take.
	AccountID string
	// SessionID is the session's secret, carried by its cookie; the
	// server keeps only its SHA-256, and signing out removes that.
	SessionID string
}

// MaxSessionAge is the longest a console session lasts; sessions older
// than this are removed from the store when another one starts.
const MaxSessionAge = 12 * time.Hour

var errWrongCredentials = &Error{Code: CodeBadCredentials, Message: "wrong user name or password"}

// SignIn checks a console user's password. client identifies where the
// attempt comes from (the remote address). A throttled attempt is a
// too_many_attempts Error with RetryAfter, answered before the password is
// looked at so a throttled guesser learns nothing. Two throttles, each
// doubling its wait up to 5 minutes, never locking for good:
//
//   - per account, by the name alone (whatever address it comes from, so
//     rotating addresses gains nothing): after 5 failures that account's
//     next attempt waits, the right password included, and works once the
//     wait is over. Other accounts are not slowed.
//   - per address (IPv6 by /64), counting the different names that failed
//     from it (account.Throttle.FailDistinct), not the attempts: after 20
//     names the address waits. That stops a client trying many accounts
//     (password spraying), while failures of one account never stop
//     another account signing in from the same address — which a proxy
//     kmirror does not trust (--trusted-proxies), or a NAT, gives everyone.
//
// A name longer than MaxUserNameLength is refused before any work; at most
// MaxConcurrentSignIns passwords are checked at once, and past that the
// answer is too_many_attempts with a short RetryAfter.
func (s *Service) SignIn(ctx context.Context, name, password, client string) (Principal, error) {
	addrKey := "addr|" + AddressKey(client)
	// Who tried, for the audit log: the name only once it is an account's.
	anon := WithActor(ctx, Actor{Name: "unknown user " + Fingerprint(name), Address: client})
	if wait := s.addrThr.Wait(addrKey); wait > 0 {
		s.auditOnceAMinute(anon, "signin", "throttled|"+addrKey, "throttled: the address waits")
		return Principal{}, throttled(wait)
	}
	if len(name) > MaxUserNameLength || name == "" {
		// No account has such a name: every attempt counts against the
		// address (not once per name), and is recorded once a minute.
		s.addrThr.Fail(addrKey)
		s.auditOnceAMinute(anon, "signin", "badname|"+addrKey, "failed: "+string(CodeBadCredentials)+fmt.Sprintf(" (a name of %d bytes)", len(name)))
		return Principal{}, errWrongCredentials
	}
	key := "user|" + name
	if wait := s.throttle.Wait(key); wait > 0 {
		s.auditOnceAMinute(anon, "signin", "throttled|"+key, "throttled: the account waits")
		return Principal{}, throttled(wait)
	}
	release, err := s.hashSlot()
	if err != nil {
		return Principal{}, err
	}
	defer release()
	u, err := s.users.User(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		account.VerifyNobody(password)
		s.throttle.Fail(key)
		s.addrThr.FailDistinct(addrKey, name)
		// Not the name as typed: it is the caller's text, maybe a password.
		s.appendAudit(anon, "signin", "", "failed: "+string(CodeBadCredentials))
		return Principal{}, errWrongCredentials
	}
	if err != nil {
		return Principal{}, err
	}
	actx := WithActor(ctx, Actor{Name: u.Name, Role: roleOf(u), Address: client})
	if !account.Verify(u.PasswordHash, password) {
		s.throttle.Fail(key)
		s.addrThr.FailDistinct(addrKey, name)
		s.appendAudit(actx, "signin", u.Name, "failed: "+string(CodeBadCredentials))
		return Principal{}, errWrongCredentials
	}
	s.throttle.Succeed(key)
	id := rand.Text()
	now := time.Now()
	if err := s.users.CreateSession(ctx, tokenHash(id), u.AccountID, now, now.Add(-MaxSessionAge)); err != nil {
		return Principal{}, err
	}
	s.appendAudit(actx, "signin", u.Name, "ok")
	return Principal{Name: u.Name, Role: roleOf(u), AccountID: u.AccountID, SessionID: id}, nil
}

// hashSlot takes one of the MaxConcurrentSignIns slots for a password
// check (bcrypt is costly on purpose) or answers too_many_attempts with a
// short RetryAfter when none is free; release gives it back.
func (s *Service) hashSlot() (release func(), err error) {
	select {
	case s.hashing <- struct{}{}:
		return func() { <-s.hashing }, nil
	default:
		return nil, &Error{Code: CodeTooManyAttempts, RetryAfter: time.Second,
			Message: "too many sign-ins at once: try again in a second"}
	}
}

// auditOnceAMinute records a refusal at most once a minute per key: a
// guesser hammering a throttled account, or sending names no account can
// have, adds one entry a minute, not one a request.
func (s *Service) auditOnceAMinute(ctx context.Context, action, key, outcome string) {
	if !s.auditedOnce.first(key, s.now()) {
		return
	}
	s.appendAudit(ctx, action, "", outcome+" (more this minute are not recorded)")
}

// onceAMinute says whether a key was not seen in the last minute; it
// forgets everything past maxKeys, so it never grows without bound.
type onceAMinute struct {
	mu   sync.Mutex
	seen map[string]time.Time
}

func (o *onceAMinute) first(key string, now time.Time) bool {
	const maxKeys = 10_000
	o.mu.Lock()
	defer o.mu.Unlock()
	if o.seen == nil || len(o.seen) >= maxKeys {
		o.seen = map[string]time.Time{}
	}
	if last, ok := o.seen[key]; ok && now.Sub(last) < time.Minute {
		return false
	}
	o.seen[key] = now
	return true
}

// Fingerprint identifies a refused user name in logs without writing it:
// the same name gives the same fingerprint.
func Fingerprint(name string) string {
	sum := sha256.Sum256([]byte(name))
	return hex.EncodeToString(sum[:6])
}

func throttled(wait time.Duration) *Error {
	secs := max(1, int((wait+time.Second-1)/time.Second))
	return &Error{Code: CodeTooManyAttempts, RetryAfter: wait,
		Message: fmt.Sprintf("too many failed sign-ins: wait %d seconds and try again", secs)}
}

// AddressKey is the part of a client address the throttle counts by: the
// address, or its /64 for IPv6, where one holder gets a whole /64.
func AddressKey(client string) string {
	ip := net.ParseIP(client)
	if ip == nil || ip.To4() != nil {
		return client
	}
	return ip.Mask(net.CIDRMask(64, 128)).String() + "/64"
}

func roleOf(u store.User) Role {
	if u.Role == "" {
		return RoleAdmin
	}
	return Role(u.Role)
}

// SessionUser checks that p's session still exists on the server (not
// signed out, revoked, or ended with its account) and belongs to the
// account p signed in as, and returns the account as it is now (its role
// or even its name may have changed). Anything else is an unauthorized
// Error.
func (s *Service) SessionUser(ctx context.Context, p Principal) (Principal, error) {
	if p.SessionID == "" || p.AccountID == "" {
		return Principal{}, &Error{Code: CodeUnauthorized, Message: "this session was signed out: sign in again"}
	}
	u, err := s.users.SessionUser(ctx, tokenHash(p.SessionID))
	if errors.Is(err, store.ErrNotFound) {
		return Principal{}, &Error{Code: CodeUnauthorized, Message: "this session was signed out: sign in again"}
	}
	if err != nil {
		return Principal{}, err
	}
	if u.AccountID != p.AccountID {
		return Principal{}, &Error{Code: CodeUnauthorized, Message: "this session belongs to another account: sign in again"}
	}
	return Principal{Name: u.Name, Role: roleOf(u), AccountID: u.AccountID, SessionID: p.SessionID}, nil
}

// EndSession signs one session out on the server: its cookie, copied or
// not, no longer works.
func (s *Service) EndSession(ctx context.Context, p Principal) error {
	if p.SessionID == "" {
		return nil
	}
	return s.users.EndSession(ctx, tokenHash(p.SessionID))
}

// RevokeSessions signs the account out everywhere: every existing session
// of name ends at its next request.
func (s *Service) RevokeSessions(ctx context.Context, name string) (err error) {
	defer s.audit(ctx, "user.signout_everywhere", name, &err)
	if a, ok := ActorFrom(ctx); ok && a.Name != name {
		if err := s.allow(ctx, RoleAdmin); err != nil {
			return err
		}
	}
	if err := s.users.RevokeSessions(ctx, name); errors.Is(err, store.ErrNotFound) {
		return notFound("no user named %q", name)
	} else if err != nil {
		return err
	}
	return nil
}

// ChangeOwnPassword replaces name's password after checking the current
// one; every session of the account ends, the caller's too. A wrong
// current password counts against the account like a wrong sign-in (the
// same throttle: a stolen session cannot guess the password faster this
// way), and the check takes one of the sign-in's hashing slots.
func (s *Service) ChangeOwnPassword(ctx context.Context, name, current, next string) (err error) {
	if a, ok := ActorFrom(ctx); ok && a.Name != name {
		s.appendAudit(ctx, "user.change_password", name, "denied")
		return &Error{Code: CodeForbidden, Message: "you can change only your own password this way"}
	}
	key := "user|" + name
	if wait := s.throttle.Wait(key); wait > 0 {
		s.auditOnceAMinute(ctx, "user.change_password", "throttled|"+key, "throttled: the account waits")
		return throttled(wait)
	}
	defer s.audit(ctx, "user.change_password", name, &err)
	release, err := s.hashSlot()
	if err != nil {
		return err
	}
	defer release()
	u, err := s.users.User(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return notFound("no user named %q", name)
	}
	if err != nil {
		return err
	}
	if !account.Verify(u.PasswordHash, current) {
		s.throttle.Fail(key)
		var p Problems
		p.Add("current_password", "this is not your current password")
		return &Error{Code: CodeInvalidUser, Message: "the password was not changed", Problems: p}
	}
	s.throttle.Succeed(key)
	return s.setPassword(ctx, name, next)
}

// SetPassword replaces name's password (an admin's reset, or
// `kmirror admin set-password`); every session of the account ends.
func (s *Service) SetPassword(ctx context.Context, name, password string) (err error) {
	defer s.audit(ctx, "user.set_password", name, &err)
	if err := s.allow(ctx, RoleAdmin); err != nil {
		return err
	}
	return s.setPassword(ctx, name, password)
}

func (s *Service) setPassword(ctx context.Context, name, password string) error {
	if p := validatePassword(password); len(p) > 0 {
		return &Error{Code: CodeInvalidUser, Message: "the password was not changed", Problems: p}
	}
	h, err := account.Hash(password)
	if err != nil {
		return err
	}
	if err := s.users.SetPassword(ctx, name, h); errors.Is(err, store.ErrNotFound) {
		return notFound("no user named %q", name)
	} else if err != nil {
		return err
	}
	return nil
}

func validatePassword(pw string) Problems {
	var p Problems
	switch {
	case len(pw) < account.MinPasswordLength:
		p.Add("password", "the password must have at least %d characters", account.MinPasswordLength)
	case len(pw) > 72:
		p.Add("password", "the password must have at most 72 bytes (bcrypt cannot hash more)")
	}
	return p
}

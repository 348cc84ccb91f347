package service

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/kmirror/kmirror/internal/account"
	"github.com/kmirror/kmirror/internal/store"
)

// Actor is who calls the service: a signed-in user, an API token, or
// (none in the context) kmirror itself, such as the demo and the start-up
// that resumes tasks. The web layer always sets one.
type Actor struct {
	Name    string // user name, "token:<name>" or "KMIRROR_TOKEN"
	Role    Role
	Address string // the client's address, for the audit log
	// AccountID is the account acting: the signed-in user's, or the
	// owner's of an API token; empty for KMIRROR_TOKEN and kmirror itself.
	// A token made by this actor belongs to this account.
	AccountID string
}

type actorKey struct{}

// actorName is who a change is recorded as made by: the caller, or
// "system" when kmirror acts on its own.
func actorName(ctx context.Context) string {
	if a, ok := ActorFrom(ctx); ok && a.Name != "" {
		return a.Name
	}
	return "system"
}

// WithActor makes a the caller of every service call made with the result.
func WithActor(ctx context.Context, a Actor) context.Context {
	return context.WithValue(ctx, actorKey{}, a)
}

// ActorFrom returns the caller set by WithActor.
func ActorFrom(ctx context.Context) (Actor, bool) {
	a, ok := ctx.Value(actorKey{}).(Actor)
	return a, ok
}

// roleRank orders the roles; an unknown role ranks below viewer.
func roleRank(role Role) int {
	switch role {
	case RoleViewer:
		return 1
	case RoleOperator:
		return 2
	case RoleAdmin:
		return 3
	}
	return 0
}

// ValidRole reports whether role is one of the three.
func ValidRole(role Role) bool { return roleRank(role) > 0 }

// Allows reports whether role may do what needs the role need; the console
// uses it to hide what a user cannot do.
func Allows(role, need Role) bool { return roleRank(role) >= roleRank(need) }

// allow checks the caller's role against need: a forbidden Error when it
// falls short. Without an actor the caller is kmirror itself.
func (s *Service) allow(ctx context.Context, need Role) error {
	a, ok := ActorFrom(ctx)
	if !ok || Allows(a.Role, need) {
		return nil
	}
	return &Error{Code: CodeForbidden,
		Message: fmt.Sprintf("your role (%s) does not allow this; it needs %s: ask an admin", a.Role, need)}
}

// audit appends one line to the audit log for a change, with the outcome
// *errp holds once the change returns (call it deferred).
func (s *Service) audit(ctx context.Context, action, object string, errp *error) {
	outcome := "ok"
	if errp != nil && *errp != nil {
		e := AsError(*errp)
		outcome = "failed: " + string(e.Code)
		if e.Code == CodeForbidden {
			outcome = "denied"
		}
	}
	s.appendAudit(ctx, action, object, outcome)
}

func (s *Service) appendAudit(ctx context.Context, action, object, outcome string) {
	if s.auditLog == nil {
		return
	}
	e := auditEntry(ctx, action, object, outcome)
	// A cancelled request still leaves its line.
	if err := s.auditLog.AppendAudit(context.WithoutCancel(ctx), e); err != nil {
		s.log.Error("could not write the audit log", "action", action, "object", object, "err", err)
	}
}

// auditEntry is the entry for action on object by ctx's actor, every
// field bounded (auditText): an entry never grows with what a caller sent.
func auditEntry(ctx context.Context, action, object, outcome string) store.AuditEntry {
	a, ok := ActorFrom(ctx)
	if !ok {
		a = Actor{Name: "system", Role: RoleAdmin}
	}
	return store.AuditEntry{At: time.Now().UTC(), Actor: auditText(a.Name), Role: auditText(string(a.Role)), Address: auditText(a.Address),
		Action: auditText(action), Object: auditText(object), Outcome: auditText(outcome)}
}

// maxAuditText bounds each field of an audit entry. Names kmirror accepts
// are at most 64 characters; an object such as "orders group g1" or a
// failure code fits easily.
const maxAuditText = 160

// auditText is s as an audit entry keeps it: unchanged when it is short
// and printable; else its first 48 printable characters with the length
// and a fingerprint of the whole (the same text gives the same one), so an
// entry stays small whatever a caller sent, and still tells texts apart.
func auditText(s string) string {
	clean := len(s) <= maxAuditText && utf8.ValidString(s) && strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) < 0
	if clean {
		return s
	}
	var head strings.Builder
	for _, r := range s {
		if head.Len() >= 48 {
			break
		}
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			r = '?'
		}
		head.WriteRune(r)
	}
	return fmt.Sprintf("%s... (%d bytes, sha256 %s)", head.String(), len(s), Fingerprint(s))
}

// Audit log sizes past which the audit page suggests a prune.
const (
	AuditWarnEntries = 200_000
	AuditWarnBytes   = 64 << 20
)

// AuditSize is how big the audit log is, and whether that is past the
// size at which a prune is worth it.
type AuditSize struct {
	Entries int64 `json:"entries"`
	Bytes   int64 `json:"bytes"`
	Large   bool  `json:"large"`
}

// AuditSize measures the audit log (admin only).
func (s *Service) AuditSize(ctx context.Context) (AuditSize, error) {
	if err := s.allow(ctx, RoleAdmin); err != nil {
		return AuditSize{}, err
	}
	if s.auditLog == nil {
		return AuditSize{}, nil
	}
	n, b, err := s.auditLog.AuditSize(ctx)
	if err != nil {
		return AuditSize{}, err
	}
	return AuditSize{Entries: n, Bytes: b, Large: n >= AuditWarnEntries || b >= AuditWarnBytes}, nil
}

// PruneAudit removes the audit entries made before before (admin only; on
// the server, `kmirror audit prune`), and records that it did, with the
// count, in the same transaction. A date less than a day old is refused:
// a prune is for old entries, never for hiding what just happened.
func (s *Service) PruneAudit(ctx context.Context, before time.Time) (int64, error) {
	if err := s.allow(ctx, RoleAdmin); err != nil {
		s.appendAudit(ctx, "audit.prune", "before "+before.UTC().Format(time.RFC3339), "denied")
		return 0, err
	}
	if s.auditLog == nil {
		return 0, errors.New("service: pruning the audit log needs Deps.Audit")
	}
	if before.After(s.now().Add(-24 * time.Hour)) {
		var p Problems
		p.Add("before", "give a date at least a day ago: a prune removes old entries only")
		return 0, &Error{Code: CodeInvalidRequest, Message: "the audit log was not pruned", Problems: p}
	}
	return s.auditLog.PruneAudit(ctx, before, auditEntry(ctx, "audit.prune", "before "+before.UTC().Format(time.RFC3339), ""))
}

// RecordRestore writes the audit entry of a restore from file (kmirror
// restore, on the server, as kmirror itself): what it brought back and
// what it removed, by kind, bounded like every entry.
func (s *Service) RecordRestore(ctx context.Context, file string, c store.Changes) {
	var parts []string
	for _, what := range []struct {
		verb string
		m    map[string][]string
	}{{"brought back", c.BroughtBack}, {"brought back older", c.Changed}, {"removed", c.Removed}} {
		for _, kind := range store.RestoreKinds {
			if names := what.m[kind]; len(names) > 0 {
				parts = append(parts, fmt.Sprintf("%s %d %s", what.verb, len(names), kind))
			}
		}
	}
	outcome := "ok"
	if len(parts) > 0 {
		outcome += ": " + strings.Join(parts, ", ")
	}
	s.appendAudit(ctx, "restore", filepath.Base(file), outcome)
}

// AuditFilter selects audit entries; see store.AuditFilter.
type AuditFilter = store.AuditFilter

// AuditEntry is one line of the audit log.
type AuditEntry = store.AuditEntry

// Audit returns audit entries, newest first (admin only).
func (s *Service) Audit(ctx context.Context, f AuditFilter) ([]AuditEntry, error) {
	if err := s.allow(ctx, RoleAdmin); err != nil {
		return nil, err
	}
	if s.auditLog == nil {
		return []AuditEntry{}, nil
	}
	if f.Limit <= 0 || f.Limit > 1000 {
		f.Limit = 100
	}
	out, err := s.auditLog.ListAudit(ctx, f)
	if out == nil {
		out = []AuditEntry{}
	}
	return out, err
}

// UserInfo is an account as the console and API show it: never its hash.
type UserInfo struct {
	Name      string    `json:"name"`
	Role      Role      `json:"role"`
	CreatedAt time.Time `json:"created_at"`
}

// NewUser is the body of POST /api/v1/users.
type NewUser struct {
	Name     string `json:"name"`
	Role     Role   `json:"role"`
	Password string `json:"password"`
}

// userName is what an account may be called: it shows in logs and the
// audit log, so no spaces or control characters.
var userName = regexp.MustCompile(`^[A-Za-z0-9._@-]{1,64}$`)

// ListUsers returns every account (admin only).
func (s *Service) ListUsers(ctx context.Context) ([]UserInfo, error) {
	if err := s.allow(ctx, RoleAdmin); err != nil {
		return nil, err
	}
	us, err := s.users.ListUsers(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]UserInfo, 0, len(us))
	for _, u := range us {
		out = append(out, UserInfo{Name: u.Name, Role: roleOf(u), CreatedAt: u.CreatedAt})
	}
	return out, nil
}

// CreateUser adds an account (admin only); every broken rule comes back at
// once.
func (s *Service) CreateUser(ctx context.Context, in NewUser) (_ UserInfo, err error) {
	defer s.audit(ctx, "user.create", in.Name+" as "+string(in.Role), &err)
	if err := s.allow(ctx, RoleAdmin); err != nil {
		return UserInfo{}, err
	}
	var p Problems
	if !userName.MatchString(in.Name) {
		p.Add("name", "a user name has 1 to 64 letters, digits, '.', '_', '@' or '-'")
	}
	if !ValidRole(in.Role) {
		p.Add("role", "role must be viewer, operator or admin")
	}
	p = append(p, validatePassword(in.Password)...)
	if len(p) > 0 {
		return UserInfo{}, &Error{Code: CodeInvalidUser, Message: "the user settings are not valid", Problems: p}
	}
	h, err := account.Hash(in.Password)
	if err != nil {
		return UserInfo{}, err
	}
	u := store.User{Name: in.Name, PasswordHash: h, Role: string(in.Role), CreatedAt: time.Now().UTC().Truncate(time.Second)}
	if err := s.users.CreateUser(ctx, u); errors.Is(err, store.ErrExists) {
		p.Add("name", "a user named %q exists already", in.Name)
		return UserInfo{}, &Error{Code: CodeInvalidUser, Message: "the user settings are not valid", Problems: p}
	} else if err != nil {
		return UserInfo{}, err
	}
	return UserInfo{Name: u.Name, Role: Role(u.Role), CreatedAt: u.CreatedAt}, nil
}

// UserChange is the body of PATCH /api/v1/users/{name}: what to change;
// omitted fields stay.
type UserChange struct {
	Role     *Role   `json:"role,omitempty"`
	Password *string `json:"password,omitempty"`
}

// ChangeUser changes an account's role and/or resets its password (admin
// only). A password reset ends every session of the account; the last admin
// cannot be demoted.
func (s *Service) ChangeUser(ctx context.Context, name string, ch UserChange) (_ UserInfo, err error) {
	what := "user.change"
	if ch.Role != nil {
		what += " role=" + string(*ch.Role)
	}
	if ch.Password != nil {
		what += " password"
	}
	defer s.audit(ctx, what, name, &err)
	if err := s.allow(ctx, RoleAdmin); err != nil {
		return UserInfo{}, err
	}
	u, err := s.users.User(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return UserInfo{}, notFound("no user named %q", name)
	} else if err != nil {
		return UserInfo{}, err
	}
	var p Problems
	if ch.Role == nil && ch.Password == nil {
		p.Add("role", "give a role, a password, or both")
	}
	if ch.Role != nil && !ValidRole(*ch.Role) {
		p.Add("role", "role must be viewer, operator or admin")
	}
	if ch.Password != nil {
		p = append(p, validatePassword(*ch.Password)...)
	}
	if len(p) > 0 {
		return UserInfo{}, &Error{Code: CodeInvalidUser, Message: "the user settings are not valid", Problems: p}
	}
	if ch.Role != nil && *ch.Role != RoleAdmin && roleOf(u) == RoleAdmin {
		if err := s.keepAnAdmin(ctx, name); err != nil {
			return UserInfo{}, err
		}
	}
	if ch.Password != nil {
		if err := s.setPassword(ctx, name, *ch.Password); err != nil {
			return UserInfo{}, err
		}
	}
	if ch.Role != nil {
		if err := s.users.SetRole(ctx, name, string(*ch.Role)); err != nil {
			return UserInfo{}, err
		}
		u.Role = string(*ch.Role)
	}
	return UserInfo{Name: u.Name, Role: roleOf(u), CreatedAt: u.CreatedAt}, nil
}

// keepAnAdmin refuses to remove or demote name when it is the last admin,
// so someone can always manage users.
func (s *Service) keepAnAdmin(ctx context.Context, name string) error {
	us, err := s.users.ListUsers(ctx)
	if err != nil {
		return err
	}
	admins := 0
	for _, o := range us {
		if roleOf(o) == RoleAdmin {
			admins++
		}
	}
	if admins <= 1 {
		return &Error{Code: CodeInvalidRequest, Message: fmt.Sprintf("%q is the last admin: make another admin first", name)}
	}
	return nil
}

// DeleteUser removes an account (admin only); its sessions end with it.
// The last admin cannot be removed, so someone can always manage users.
func (s *Service) DeleteUser(ctx context.Context, name string) (err error) {
	defer s.audit(ctx, "user.delete", name, &err)
	if err := s.allow(ctx, RoleAdmin); err != nil {
		return err
	}
	u, err := s.users.User(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return notFound("no user named %q", name)
	} else if err != nil {
		return err
	}
	if roleOf(u) == RoleAdmin {
		if err := s.keepAnAdmin(ctx, name); err != nil {
			return err
		}
	}
	if err := s.users.DeleteUser(ctx, name); errors.Is(err, store.ErrNotFound) {
		return notFound("no user named %q", name)
	} else if err != nil {
		return err
	}
	return nil
}

// TokenInfo is an API token as listed: never the token.
type TokenInfo struct {
	Name      string    `json:"name"`
	Role      Role      `json:"role"`
	CreatedBy string    `json:"created_by"`
	CreatedAt time.Time `json:"created_at"`
	// Owner is the account the token ends with (the one that made it);
	// empty when made with KMIRROR_TOKEN: it lives until revoked or it
	// expires.
	Owner string `json:"owner,omitempty"`
	// ExpiresAt is when it stops working; absent: never.
	ExpiresAt *time.Time `json:"expires_at,omitempty"`
	// LastUsedAt is its last use, to the minute; absent: never used.
	LastUsedAt *time.Time `json:"last_used_at,omitempty"`
}

// NewToken is the body of POST /api/v1/tokens.
type NewToken struct {
	Name string `json:"name"`
	Role Role   `json:"role"`
	// ExpiresIn is how long the token works, as a Go duration ("720h");
	// empty: until revoked (or its owner is deleted).
	ExpiresIn string `json:"expires_in,omitempty"`
}

// MaxTokenLifetime bounds expires_in: a token meant to last longer is one
// nobody reviews; make a new one instead.
const MaxTokenLifetime = 366 * 24 * time.Hour

func tokenInfo(t store.Token) TokenInfo {
	ti := TokenInfo{Name: t.Name, Role: Role(t.Role), CreatedBy: t.CreatedBy, CreatedAt: t.CreatedAt}
	if t.OwnerAccountID != "" {
		ti.Owner = t.CreatedBy
	}
	if !t.ExpiresAt.IsZero() {
		at := t.ExpiresAt.UTC()
		ti.ExpiresAt = &at
	}
	if !t.LastUsedAt.IsZero() {
		at := t.LastUsedAt.UTC()
		ti.LastUsedAt = &at
	}
	return ti
}

// CreatedToken is the answer to POST /api/v1/tokens: the only time the
// token is shown.
type CreatedToken struct {
	TokenInfo
	Token string `json:"token"`
}

// TokenPrefix starts every generated API token, so a leaked one is easy to
// recognise (and to scan for).
const TokenPrefix = "kmirror_"

// ListTokens returns every API token, without the tokens (admin only).
func (s *Service) ListTokens(ctx context.Context) ([]TokenInfo, error) {
	if err := s.allow(ctx, RoleAdmin); err != nil {
		return nil, err
	}
	if err := s.requireTokens(); err != nil {
		return nil, err
	}
	ts, err := s.tokens.ListTokens(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]TokenInfo, 0, len(ts))
	for _, t := range ts {
		out = append(out, tokenInfo(t))
	}
	return out, nil
}

// CreateToken makes an API token with a role (admin only) and returns it;
// only its SHA-256 is kept.
func (s *Service) CreateToken(ctx context.Context, in NewToken) (_ CreatedToken, err error) {
	defer s.audit(ctx, "token.create", in.Name+" as "+string(in.Role), &err)
	if err := s.allow(ctx, RoleAdmin); err != nil {
		return CreatedToken{}, err
	}
	if err := s.requireTokens(); err != nil {
		return CreatedToken{}, err
	}
	var p Problems
	if !userName.MatchString(in.Name) {
		p.Add("name", "a token name has 1 to 64 letters, digits, '.', '_', '@' or '-'")
	}
	if !ValidRole(in.Role) {
		p.Add("role", "role must be viewer, operator or admin")
	}
	var lifetime time.Duration
	if in.ExpiresIn != "" {
		d, err := time.ParseDuration(in.ExpiresIn)
		switch {
		case len(in.ExpiresIn) > 32 || err != nil:
			p.Add("expires_in", "give a duration such as 720h (30 days), 24h or 90m")
		case d < time.Minute || d > MaxTokenLifetime:
			p.Add("expires_in", "a token lasts from 1m to %s (366 days); leave it out for a token that lasts until revoked", MaxTokenLifetime)
		default:
			lifetime = d
		}
	}
	if len(p) > 0 {
		return CreatedToken{}, &Error{Code: CodeInvalidUser, Message: "the token settings are not valid", Problems: p}
	}
	tok := TokenPrefix + rand.Text() + rand.Text() // 260 random bits
	now := s.now().UTC().Truncate(time.Second)
	a, _ := ActorFrom(ctx)
	rec := store.Token{Name: in.Name, Role: string(in.Role), TokenSHA256: tokenHash(tok), CreatedBy: actorName(ctx), CreatedAt: now,
		OwnerAccountID: a.AccountID}
	if lifetime > 0 {
		rec.ExpiresAt = now.Add(lifetime)
	}
	switch err := s.tokens.CreateToken(ctx, rec); {
	case errors.Is(err, store.ErrExists):
		p.Add("name", "a token named %q exists already: revoke it first", in.Name)
		return CreatedToken{}, &Error{Code: CodeInvalidUser, Message: "the token settings are not valid", Problems: p}
	case errors.Is(err, store.ErrNotFound):
		return CreatedToken{}, &Error{Code: CodeUnauthorized, Message: "your account no longer exists: sign in again"}
	case err != nil:
		return CreatedToken{}, err
	}
	return CreatedToken{TokenInfo: tokenInfo(rec), Token: tok}, nil
}

// RevokeToken deletes an API token (admin only); it stops working at once.
func (s *Service) RevokeToken(ctx context.Context, name string) (err error) {
	defer s.audit(ctx, "token.revoke", name, &err)
	if err := s.allow(ctx, RoleAdmin); err != nil {
		return err
	}
	if err := s.requireTokens(); err != nil {
		return err
	}
	if err := s.tokens.DeleteToken(ctx, name); errors.Is(err, store.ErrNotFound) {
		return notFound("no token named %q", name)
	} else if err != nil {
		return err
	}
	return nil
}

// TokenActor returns the actor an API token stands for, and records its
// use; ok is false for a token that does not exist, was revoked, ended
// with its owner's account, or expired.
func (s *Service) TokenActor(ctx context.Context, token string) (a Actor, ok bool, err error) {
	if s.tokens == nil {
		return Actor{}, false, nil
	}
	h := tokenHash(token)
	t, err := s.tokens.TokenByHash(ctx, h)
	if errors.Is(err, store.ErrNotFound) {
		return Actor{}, false, nil
	}
	if err != nil {
		return Actor{}, false, err
	}
	now := s.now()
	if !t.ExpiresAt.IsZero() && !now.Before(t.ExpiresAt) {
		return Actor{}, false, nil
	}
	// A write at most once a minute, not one per request.
	if now.Sub(t.LastUsedAt) >= time.Minute {
		if err := s.tokens.TouchToken(context.WithoutCancel(ctx), h, now); err != nil {
			s.log.Warn("could not record an API token's use", "token", t.Name, "err", err)
		}
	}
	// A token acts with at most its owner's rights now: an admin demoted
	// to viewer leaves no admin token behind.
	role := Role(t.Role)
	if t.OwnerAccountID != "" && roleRank(Role(t.OwnerRole)) < roleRank(role) {
		role = Role(t.OwnerRole)
	}
	return Actor{Name: "token:" + t.Name, Role: role, AccountID: t.OwnerAccountID}, true, nil
}

func (s *Service) requireTokens() error {
	if s.tokens == nil {
		return errors.New("service: API tokens need Deps.Tokens")
	}
	return nil
}

func tokenHash(tok string) string {
	sum := sha256.Sum256([]byte(tok))
	return hex.EncodeToString(sum[:])
}

package views

import (
	"context"

	"github.com/kmirror/kmirror/internal/i18n"
)

// AccountForm is the change-password form's state: the server's messages
// by field (passwords are never sent back).
type AccountForm struct {
	Errors FieldErrors
}

// RoleLabel names a role in the page's language.
func RoleLabel(ctx context.Context, role string) string {
	switch role {
	case "viewer":
		return i18n.T(ctx, "role.viewer")
	case "operator":
		return i18n.T(ctx, "role.operator")
	case "admin":
		return i18n.T(ctx, "role.admin")
	}
	return role
}

// UserForm is the add-user form's state.
type UserForm struct {
	Name   string
	Role   string
	Errors FieldErrors
	// Roles are the roles to choose from, least first.
	Roles []string
}

// TokenForm is the new-token form's state; Created holds a token just made,
// shown this once.
type TokenForm struct {
	Name      string
	Role      string
	ExpiresIn string
	Errors    FieldErrors
	Created   *CreatedToken
	// Roles are the roles to choose from, least first.
	Roles []string
}

// AuditView is one page of the audit log with its filter.
type AuditView struct {
	Filter  AuditFilter
	Entries []AuditEntry
	// Older links the next page; empty on the last.
	Older string
	// Export is the JSON-lines download of the same filter.
	Export string
	// Entries and MiB are the whole log's size; Large says it is past the
	// size where a prune is worth it.
	Size AuditSize
}

// AuditSize is how big the whole audit log is.
type AuditSize struct {
	Entries int64
	MiB     string
	Large   bool
}

func auditOutcomeLabel(ctx context.Context, o string) string {
	if o == "" {
		return i18n.T(ctx, "audit.outcome_any")
	}
	return o
}

// DestinationPolicyForm is the destination policy's form state.
type DestinationPolicyForm struct {
	Mode string
	// Networks are the CIDRs, one a line.
	Networks  string
	ChangedBy string
	ChangedAt string
	Errors    FieldErrors
}

// policyModeLabel is a destination policy mode's label.
func policyModeLabel(ctx context.Context, mode string) string {
	switch mode {
	case "registered":
		return i18n.T(ctx, "policy.mode.registered")
	case "networks":
		return i18n.T(ctx, "policy.mode.networks")
	}
	return i18n.T(ctx, "policy.mode.any")
}

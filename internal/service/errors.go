package service

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"
)

// Code is a stable error code of the API and console. Clients branch on it;
// never rename one.
type Code string

// The catalogue. Add new codes here with their HTTP status in HTTPStatus.
const (
	CodeInvalidRequest  Code = "invalid_request"   // the request itself is malformed (bad JSON, wrong types)
	CodeInvalidCluster  Code = "invalid_cluster"   // cluster settings break a rule; see problems
	CodeInvalidTask     Code = "invalid_task"      // task parameters break a rule; see problems
	CodeNotFound        Code = "not_found"         // no such cluster, task, page
	CodeClusterInUse    Code = "cluster_in_use"    // a cluster still has tasks
	CodeUnauthorized    Code = "unauthorized"      // missing or wrong API token / session
	CodeBadCredentials  Code = "bad_credentials"   // wrong user name or password
	CodeTooManyAttempts Code = "too_many_attempts" // sign-in throttled or too many at once; see RetryAfter
	CodeForbidden       Code = "forbidden"         // the caller's role does not allow it
	CodeInvalidUser     Code = "invalid_user"      // user or token settings break a rule; see problems
	CodeMoveFailed      Code = "move_failed"       // an engine failed a move; the message says which step and why
	CodeAdoptFailed     Code = "adopt_failed"      // adopting MM2 connectors failed; the message says which step and why
	CodeInternal        Code = "internal"          // our fault; the log says more
)

// HTTPStatus maps a code to the status the API answers with.
func (c Code) HTTPStatus() int {
	switch c {
	case CodeInvalidRequest:
		return http.StatusBadRequest
	case CodeInvalidCluster, CodeInvalidTask, CodeInvalidUser:
		return http.StatusUnprocessableEntity
	case CodeNotFound:
		return http.StatusNotFound
	case CodeClusterInUse:
		return http.StatusConflict
	case CodeUnauthorized, CodeBadCredentials:
		return http.StatusUnauthorized
	case CodeTooManyAttempts:
		return http.StatusTooManyRequests
	case CodeForbidden:
		return http.StatusForbidden
	case CodeMoveFailed, CodeAdoptFailed:
		return http.StatusBadGateway
	default:
		return http.StatusInternalServerError
	}
}

// Problem is one broken rule, with the path of the field it is about
// (`bootstrap_servers`, `rules.topics`), in the API's JSON names.
type Problem struct {
	Field   string `json:"field"`
	Message string `json:"message"`
}

// Problems collects every broken rule of one request, so a user fixes them all
// in one go rather than one per submit.
type Problems []Problem

// Add records a problem for field.
func (p *Problems) Add(field, format string, args ...any) {
	*p = append(*p, Problem{Field: field, Message: fmt.Sprintf(format, args...)})
}

// For returns the messages about field, for showing next to it.
func (p Problems) For(field string) []string {
	var out []string
	for _, pr := range p {
		if pr.Field == field {
			out = append(out, pr.Message)
		}
	}
	return out
}

// Error is what the service returns for anything the caller can act on. The
// web layer renders it as JSON or next to form fields; any other error is
// internal.
type Error struct {
	Code     Code
	Message  string
	Problems Problems
	// RetryAfter is set with CodeTooManyAttempts.
	RetryAfter time.Duration
}

func (e *Error) Error() string {
	if len(e.Problems) == 0 {
		return string(e.Code) + ": " + e.Message
	}
	parts := make([]string, len(e.Problems))
	for i, p := range e.Problems {
		parts[i] = p.Field + ": " + p.Message
	}
	return string(e.Code) + ": " + e.Message + " (" + strings.Join(parts, "; ") + ")"
}

// AsError returns err's *Error, or an internal one that says nothing of the
// cause (the cause goes to the log, not to the client).
func AsError(err error) *Error {
	var e *Error
	if errors.As(err, &e) {
		return e
	}
	return &Error{Code: CodeInternal, Message: "internal error: the server log has the details"}
}

// IsCode reports whether err is an *Error with code c.
func IsCode(err error, c Code) bool {
	var e *Error
	return errors.As(err, &e) && e.Code == c
}

func notFound(format string, args ...any) *Error {
	return &Error{Code: CodeNotFound, Message: fmt.Sprintf(format, args...)}
}

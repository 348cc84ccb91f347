package apiclient

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// Error answers become an *Error that says what the API said: its
// message, code and each problem by field.
func TestDoErrors(t *testing.T) {
	for _, tc := range []struct {
		name   string
		status int
		body   string
		want   []string // in Error()
	}{
		{"problems by field", http.StatusUnprocessableEntity,
			`{"error":{"code":"invalid_task","message":"the task is not valid","problems":[{"field":"engine","message":"runs on embedded already"},{"field":"rules.add_source_header","message":"Connect cannot"}]}}`,
			[]string{"the task is not valid (invalid_task)", "\n  engine: runs on embedded already", "\n  rules.add_source_header: Connect cannot"}},
		{"move failed", http.StatusBadGateway,
			`{"error":{"code":"move_failed","message":"task t not moved to connect:c: hand its progress over failed: boom; the task stays on embedded"}}`,
			[]string{"hand its progress over failed: boom", "stays on embedded", "(move_failed)"}},
		{"not JSON", http.StatusBadGateway, `<html>proxy</html>`, []string{"POST /api/v1/tasks/t/move: 502 Bad Gateway"}},
		{"no token", http.StatusUnauthorized, `{"error":{"code":"unauthorized","message":"a bearer token is required"}}`, []string{"set KMIRROR_TOKEN"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				_, _ = w.Write([]byte(tc.body))
			}))
			defer srv.Close()
			_, err := New(srv.URL, "").Do(context.Background(), http.MethodPost, "/api/v1/tasks/t/move", []byte(`{}`))
			var apiErr *Error
			if !errors.As(err, &apiErr) || apiErr.Status != tc.status {
				t.Fatalf("error %v, want an *Error with status %d", err, tc.status)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("%q does not say %q", err.Error(), w)
				}
			}
		})
	}
}

func TestPathEscapesNames(t *testing.T) {
	if got := Path("/api/v1/tasks/%s/move", "a b/c"); got != "/api/v1/tasks/a%20b%2Fc/move" {
		t.Errorf("Path = %q", got)
	}
}

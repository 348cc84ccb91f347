package web_test

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/kmirror/kmirror/web"
)

// A component that fails halfway leaves the response unwritten, so the
// error handler can still answer with an error page and a status that says so.
func TestRenderWritesNothingWhenTheComponentFails(t *testing.T) {
	for _, tc := range []struct {
		name    string
		comp    templ.Component
		wantErr bool
		body    string
	}{
		{name: "ok", comp: templ.Raw("<p>whole</p>"), body: "<p>whole</p>"},
		{name: "fails halfway", wantErr: true, comp: templ.ComponentFunc(func(_ context.Context, w io.Writer) error {
			_, _ = io.WriteString(w, "<p>half")
			return errors.New("boom")
		})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rec := httptest.NewRecorder()
			c := echo.New().NewContext(httptest.NewRequest(http.MethodGet, "/x", nil), rec)
			err := web.Render(c, http.StatusOK, tc.comp)
			if (err != nil) != tc.wantErr {
				t.Fatalf("Render error = %v, want error %v", err, tc.wantErr)
			}
			if c.Response().Committed != !tc.wantErr || rec.Body.String() != tc.body {
				t.Fatalf("committed %v, body %q; want committed %v, body %q", c.Response().Committed, rec.Body.String(), !tc.wantErr, tc.body)
			}
		})
	}
}

// Package views holds the console's templ components: the layout every page
// shares, and one page per .templ file, which is markup only; its view
// models and helpers live in the .go file beside it. Components render view
// models web/ builds from the service's answers: views import no data plane
// (service, engines, sampler, storage; deps_test.go checks), so they render
// the same in tests as in the server.
//
// Key elements carry data-testid attributes; tests and tools select by them,
// not by CSS classes, so restyling does not break them.
package views

import (
	"context"
	"encoding/json"
	"net/url"

	"github.com/a-h/templ"

	"github.com/kmirror/kmirror/static"
)

// Page is what the layout needs from every handler.
type Page struct {
	Title string
	// CSRF is the token for forms (_csrf field) and htmx requests (header).
	CSRF string
	// User is the signed-in user's name; empty on the sign-in page.
	User string
	// Path is the page's own address, where the language switch returns.
	Path string
	// Nav is the left navigation; nil hides it.
	Nav     []NavItem
	Flashes []Flash
	// Charts loads the chart library (uPlot) on pages that plot.
	Charts bool
}

// Capability is something only some roles may do on a page.
type Capability int

const (
	// Operate is acting on tasks (create, pause, move, ...): operators and
	// admins.
	Operate Capability = iota + 1
	// Administer is changing instances, Connect clusters and access:
	// admins.
	Administer
)

// Access is what the signed-in caller may do. web/ decides it from the
// caller's role by the service's rules and puts it in the request's
// context (WithAccess); views only read it.
type Access struct {
	Operate, Administer bool
}

type accessKey struct{}

// WithAccess returns ctx carrying what the caller may do.
func WithAccess(ctx context.Context, a Access) context.Context {
	return context.WithValue(ctx, accessKey{}, a)
}

// Can reports whether the caller may do what needs c, so pages hide what
// it cannot do. The service refuses it anyway; without a caller (a page
// rendered outside a request) everything shows.
func Can(ctx context.Context, c Capability) bool {
	a, ok := ctx.Value(accessKey{}).(Access)
	switch {
	case !ok:
		return true
	case c == Operate:
		return a.Operate
	case c == Administer:
		return a.Administer
	}
	return false
}

// NavItem is one entry of the left navigation.
type NavItem struct {
	Label  string
	Href   string
	Active bool
	// TestID names the link for tests (data-testid).
	TestID string
}

// Flash kinds.
const (
	FlashSuccess = "success"
	FlashError   = "error"
)

// Flash is a one-time banner shown after a redirect.
type Flash struct {
	Kind    string
	Message string
}

// FieldErrors are messages to show next to form fields, by field name.
type FieldErrors map[string][]string

// Problem is one broken rule with the field it is about (the API's field
// path), "" for none; web/ copies them from the service's answer.
type Problem struct {
	Field   string
	Message string
}

// FieldErrorsFrom groups problems by field.
func FieldErrorsFrom(p []Problem) FieldErrors {
	fe := FieldErrors{}
	for _, pr := range p {
		fe[pr.Field] = append(fe[pr.Field], pr.Message)
	}
	return fe
}

// htmxConfig is set through htmx's meta tag so no inline script is needed.
// 422 answers carry a re-rendered form with field errors and are swapped in
// like successes; other 4xx/5xx are errors and are not swapped.
var htmxConfig = func() string {
	b, err := json.Marshal(map[string]any{
		"includeIndicatorStyles": false, // the CSP forbids inline styles; app.css has them
		"responseHandling": []map[string]any{
			{"code": "204", "swap": false},
			{"code": "[23]..", "swap": true},
			{"code": "422", "swap": true, "error": false},
			{"code": "[45]..", "swap": false, "error": true},
			{"code": "...", "swap": false},
		},
	})
	if err != nil {
		panic(err) // a literal; cannot fail
	}
	return string(b)
}()

func htmxSrc() string { return "/static/" + static.HTMX }

func uplotSrc() string { return "/static/" + static.UPlotJS }

func uplotCSS() string { return "/static/" + static.UPlotCSS }

// langHref is the language switch's link to lang, coming back to path.
func langHref(lang, path string) templ.SafeURL {
	if path == "" {
		path = "/"
	}
	return templ.SafeURL("/lang?" + url.Values{"to": {lang}, "next": {path}}.Encode())
}

// fieldClass marks a field with errors.
func fieldClass(fe FieldErrors, field string) templ.CSSClasses {
	return templ.Classes("field", templ.KV("invalid", len(fe[field]) > 0))
}

// fieldWhen is fieldClass for a field shown only for some choices: when is
// its when-* class, which app.css hides for the others.
func fieldWhen(fe FieldErrors, field, when string) templ.CSSClasses {
	return templ.Classes("field", when, templ.KV("invalid", len(fe[field]) > 0))
}

package web

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/a-h/templ"
	"github.com/labstack/echo/v4"

	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/views"
)

// Render writes a templ component as the response with the given status.
// The component renders into a buffer first: a failed render returns its
// error before anything is written, so the error handler can still answer
// with an error page (and log it) instead of a half page under a 200.
func Render(c echo.Context, status int, comp templ.Component) error {
	var buf bytes.Buffer
	if err := comp.Render(c.Request().Context(), &buf); err != nil {
		return fmt.Errorf("render %s: %w", c.Request().URL.Path, err)
	}
	noStore(c)
	return c.HTMLBlob(status, buf.Bytes())
}

// noStore keeps a page out of every cache, the browser's back-forward and
// disk caches included: console pages show a signed-in user's data, which
// must not be readable from a shared machine after sign-out.
func noStore(c echo.Context) {
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
}

// IsHTMX reports whether the request was made by htmx.
func IsHTMX(c echo.Context) bool { return c.Request().Header.Get("HX-Request") == "true" }

// Redirect sends the user to url after a POST: htmx is told through
// HX-Redirect (it would otherwise swap the target page into the form),
// plain browsers get a 303 so a reload does not repeat the POST.
func Redirect(c echo.Context, url string) error {
	noStore(c)
	if IsHTMX(c) {
		c.Response().Header().Set("HX-Redirect", url)
		return c.NoContent(http.StatusNoContent)
	}
	return c.Redirect(http.StatusSeeOther, url)
}

// CSRFToken is the token to put in forms (_csrf) and the page's meta tag.
func CSRFToken(c echo.Context) string {
	tok, _ := c.Get("csrf").(string)
	return tok
}

// CurrentUser is the signed-in user's name, or "".
func CurrentUser(c echo.Context) string {
	u, _ := c.Get(keyUser).(string)
	return u
}

// PageData prepares what the layout needs: title, CSRF token, user, the left
// navigation with active marked, and the queued flash banners (which it
// consumes, so call it once per page).
func (s *Server) PageData(c echo.Context, title, active string) views.Page {
	p := views.Page{Title: title, CSRF: CSRFToken(c), User: CurrentUser(c), Path: c.Request().URL.Path}
	if c.Request().Method == http.MethodGet {
		p.Path = c.Request().URL.RequestURI() // keep filters across a language switch
	}
	if p.User != "" {
		p.Nav = mainNav(c, active)
		p.Flashes = s.popFlashes(c)
	}
	return p
}

// mainNav is the console's left navigation, labelled in the request's
// language. Add sections here as their pages land.
func mainNav(c echo.Context, active string) []views.NavItem {
	items := []views.NavItem{
		{Label: tr(c, "nav.instances"), Href: "/instances", TestID: "nav-instances"},
		{Label: tr(c, "nav.connect_clusters"), Href: "/connect-clusters", TestID: "nav-connect-clusters"},
		{Label: tr(c, "nav.dashboard"), Href: "/dashboard", TestID: "nav-dashboard"},
	}
	if service.Allows(CurrentRole(c), service.RoleAdmin) {
		items = append(items,
			views.NavItem{Label: tr(c, "nav.users"), Href: "/users", TestID: "nav-users"},
			views.NavItem{Label: tr(c, "nav.tokens"), Href: "/tokens", TestID: "nav-tokens"},
			views.NavItem{Label: tr(c, "nav.audit"), Href: "/audit", TestID: "nav-audit"})
	}
	items = append(items, views.NavItem{Label: tr(c, "nav.account"), Href: "/account", TestID: "nav-account"})
	for i := range items {
		items[i].Active = items[i].Href == active
	}
	return items
}

// instanceNav is an instance page's part of the left navigation, below the
// console's: the original product's instance page with its "Smart Connect" entry.
// section is "" for the overview or "smart-connect".
func instanceNav(c echo.Context, name, section string) []views.NavItem {
	items := []views.NavItem{
		{Label: name + ": " + tr(c, "instance.overview"), Href: views.InstancePath(name, ""), TestID: "nav-instance-overview"},
		{Label: tr(c, "task.smart_connect"), Href: views.InstancePath(name, "smart-connect"), TestID: "nav-instance-smart-connect"},
	}
	for i := range items {
		items[i].Active = items[i].Href == views.InstancePath(name, section)
	}
	return items
}

// apiErrorBody is the JSON shape of every API error (/api/v1/openapi.json).
type apiErrorBody struct {
	Error apiError `json:"error"`
}

type apiError struct {
	Code     service.Code      `json:"code"`
	Message  string            `json:"message"`
	Problems []service.Problem `json:"problems"`
}

// writeAPIError answers err in the API's error shape, with the status
// forced when status > 0 (echo's own errors, such as 405 or 413, keep
// theirs). A *service.Error keeps its code and problems; anything else is
// logged and reported as internal without details.
func (s *Server) writeAPIError(c echo.Context, err error, status int) error {
	e := service.AsError(err)
	if status == 0 {
		status = e.Code.HTTPStatus()
	}
	if e.Code == service.CodeInternal {
		s.log.Error("request failed", "request_id", RequestID(c), "method", c.Request().Method, "path", c.Request().URL.Path, "err", err)
	}
	if e.RetryAfter > 0 {
		c.Response().Header().Set("Retry-After", retryAfterSeconds(e))
	}
	problems := e.Problems
	if problems == nil {
		problems = service.Problems{}
	}
	return c.JSON(status, apiErrorBody{Error: apiError{Code: e.Code, Message: e.Message, Problems: problems}})
}

// keyJSONErrors marks a console route whose errors are JSON (data fetched
// by scripts), as every API route's are.
const keyJSONErrors = "kmirror.json_errors"

// jsonErrors is the route middleware for such console routes.
func jsonErrors(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Set(keyJSONErrors, true)
		return next(c)
	}
}

func wantsJSONError(c echo.Context) bool {
	forced, _ := c.Get(keyJSONErrors).(bool)
	return forced || strings.HasPrefix(c.Request().URL.Path, "/api/")
}

// handleError is echo's one stop for errors handlers return: routing
// errors (404, 405), CSRF rejections, body limits, and errors from the
// service. Handlers return errors rather than write them, so every error
// answer is made here: API paths (and jsonErrors routes) get the API's JSON
// error body, the console an error page.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	var he *echo.HTTPError
	status := 0
	if errors.As(err, &he) {
		err, status = fromHTTPError(he), he.Code
	}
	if wantsJSONError(c) {
		if werr := s.writeAPIError(c, err, status); werr != nil {
			s.log.Warn("could not write error response", "err", werr)
		}
		return
	}
	e := service.AsError(err)
	if e.Code == service.CodeInternal {
		s.log.Error("request failed", "request_id", RequestID(c), "method", c.Request().Method, "path", c.Request().URL.Path, "err", err)
	}
	if status == 0 {
		status = e.Code.HTTPStatus()
	}
	if c.Request().Method == http.MethodHead {
		_ = c.NoContent(status)
		return
	}
	p := s.PageData(c, http.StatusText(status), "")
	if err := Render(c, status, views.ErrorPage(p, http.StatusText(status), e.Message, RequestID(c))); err != nil {
		s.log.Warn("could not render error page", "err", err)
	}
}

// fromHTTPError turns echo's routing and middleware errors into the
// catalogue's codes, keeping the status.
func fromHTTPError(he *echo.HTTPError) error {
	msg, _ := he.Message.(string)
	if msg == "" {
		msg = http.StatusText(he.Code)
	}
	switch {
	case he.Code == http.StatusNotFound:
		return &service.Error{Code: service.CodeNotFound, Message: "no such page or endpoint"}
	case he.Code == http.StatusUnauthorized:
		return &service.Error{Code: service.CodeUnauthorized, Message: msg}
	case he.Code >= 400 && he.Code < 500:
		return &service.Error{Code: service.CodeInvalidRequest, Message: msg}
	default:
		return he
	}
}

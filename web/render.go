package web

import (
	"bytes"
	"fmt"
	"net/http"

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
			views.NavItem{Label: tr(c, "nav.audit"), Href: "/audit", TestID: "nav-audit"},
			views.NavItem{Label: tr(c, "nav.destinations"), Href: "/destination-policy", TestID: "nav-destinations"})
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

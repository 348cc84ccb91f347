package web

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/kmirror/kmirror/internal/i18n"
)

// langCookie remembers the language a user picked in the switch.
const langCookie = "kmirror_lang"

// localize puts the request's localizer in its context, where views and
// handlers find it (i18n.T): the user's pick from the cookie, else the
// browser's Accept-Language, else English.
func (s *Server) localize(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		choice := ""
		if ck, err := r.Cookie(s.langCookie); err == nil {
			choice = ck.Value
		}
		loc := s.i18n.Localizer(choice, r.Header.Get("Accept-Language"))
		c.SetRequest(r.WithContext(i18n.WithLocalizer(r.Context(), loc)))
		c.Response().Header().Add("Vary", "Accept-Language, Cookie")
		return next(c)
	}
}

// setLanguage is the layout's language switch: GET /lang?to=zh-TW&next=/x
// stores the choice for a year and goes back. A plain link works without
// JavaScript and on the sign-in page; changing a display preference needs
// no CSRF token.
func (s *Server) setLanguage(c echo.Context) error {
	l, ok := i18n.Find(c.QueryParam("to"))
	if !ok {
		return echo.NewHTTPError(http.StatusBadRequest, "unknown language")
	}
	c.SetCookie(&http.Cookie{Name: s.langCookie, Value: l.Tag, Path: "/", MaxAge: 365 * 24 * 60 * 60,
		HttpOnly: true, Secure: s.secure, SameSite: http.SameSiteLaxMode})
	return c.Redirect(http.StatusSeeOther, localPath(c.QueryParam("next")))
}

// localPath keeps a redirect target on this site: "/x" stays, anything
// that could leave becomes "/": "//evil", "https://…", "/\evil", and any
// control byte, since browsers drop tabs and new lines from a Location
// ("/\t/evil" is "//evil" to them).
func localPath(p string) string {
	if !strings.HasPrefix(p, "/") {
		return "/"
	}
	for i := 0; i < len(p); i++ {
		if b := p[i]; b < 0x20 || b == 0x7f || b == '\\' {
			return "/"
		}
	}
	if strings.HasPrefix(p, "//") {
		return "/"
	}
	u, err := url.Parse(p)
	if err != nil || u.Scheme != "" || u.Host != "" || u.User != nil {
		return "/"
	}
	return p
}

// tr translates id in the request's language.
func tr(c echo.Context, id string, args ...any) string {
	return i18n.T(c.Request().Context(), id, args...)
}

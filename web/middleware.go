package web

import (
	"crypto/sha256"
	"crypto/subtle"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/kmirror/kmirror/internal/service"
)

// contentSecurityPolicy allows only our own scripts and styles: htmx is
// configured by a meta tag and app.js adds the CSRF header, so no inline
// script is needed.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'self'"

func securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Frame-Options", "DENY")
		return next(c)
	}
}

// csrf protects console forms: a token in the _csrf cookie must come back in
// the _csrf form field or the X-CSRF-Token header (app.js sets it on htmx
// requests). Browsers that send Sec-Fetch-Site: same-origin pass without a
// token (echo >= 4.15). The API is exempt: it uses a bearer token, never
// cookies.
func (s *Server) csrf() echo.MiddlewareFunc {
	return middleware.CSRFWithConfig(middleware.CSRFConfig{
		Skipper: func(c echo.Context) bool {
			p := c.Request().URL.Path
			return strings.HasPrefix(p, "/api/") || strings.HasPrefix(p, "/static/") || p == "/healthz"
		},
		TokenLookup:    "header:" + echo.HeaderXCSRFToken + ",form:_csrf",
		ContextKey:     "csrf",
		CookieName:     "_csrf",
		CookiePath:     "/",
		CookieHTTPOnly: true,
		CookieSecure:   s.secure,
		CookieSameSite: http.SameSiteLaxMode,
		ErrorHandler: func(err error, c echo.Context) error {
			return echo.NewHTTPError(http.StatusForbidden, "This form has expired or did not come from this console: reload the page and try again.").SetInternal(err)
		},
	})
}

// requireUser lets signed-in users through and sends everyone else to the
// sign-in page.
func (s *Server) requireUser(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		user, _ := s.session(c).Values[keyUser].(string)
		if user == "" {
			return Redirect(c, "/signin")
		}
		c.Set(keyUser, user)
		return next(c)
	}
}

// requireToken checks the API's bearer token. Both sides are hashed before
// the constant-time compare so neither the content nor the length leaks.
func (s *Server) requireToken(next echo.HandlerFunc) echo.HandlerFunc {
	want := sha256.Sum256([]byte(s.token))
	return func(c echo.Context) error {
		auth := c.Request().Header.Get(echo.HeaderAuthorization)
		given, ok := strings.CutPrefix(auth, "Bearer ")
		got := sha256.Sum256([]byte(strings.TrimSpace(given)))
		if !ok || subtle.ConstantTimeCompare(got[:], want[:]) != 1 {
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="kmirror"`)
			return &service.Error{Code: service.CodeUnauthorized,
				Message: "missing or wrong API token: send Authorization: Bearer <token> (KMIRROR_TOKEN, or api.token in the data directory)"}
		}
		c.Set(keyActor, apiActor)
		return next(c)
	}
}

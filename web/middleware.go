package web

import (
	"crypto/sha256"
	"crypto/subtle"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/views"
)

// contentSecurityPolicy allows only our own scripts and styles: htmx is
// configured by a meta tag and app.js adds the CSRF header, so no inline
// script is needed.
const contentSecurityPolicy = "default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data:; " +
	"connect-src 'self'; frame-ancestors 'none'; form-action 'self'; base-uri 'self'"

func (s *Server) securityHeaders(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		h := c.Response().Header()
		if s.secure {
			h.Set("Strict-Transport-Security", hstsHeader)
		}
		h.Set("Content-Security-Policy", contentSecurityPolicy)
		h.Set("X-Content-Type-Options", "nosniff")
		h.Set("Referrer-Policy", "same-origin")
		h.Set("X-Frame-Options", "DENY")
		return next(c)
	}
}

// requireUser lets signed-in users through and sends everyone else to the
// sign-in page. A session past its idle or absolute limit, or revoked
// (signed out everywhere, password changed), is signed out here.
func (s *Server) requireUser(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		sess := s.session(c)
		p, ok, err := s.signedIn(c, sess)
		if err != nil {
			return err
		}
		if !ok {
			if _, had := sess.Values[keyUser]; had {
				if err := s.endSession(c, sess); err != nil {
					return err
				}
			}
			return Redirect(c, "/signin")
		}
		c.Set(keyUser, p.Name)
		c.Set(keyRole, p.Role)
		r := c.Request()
		ctx := service.WithActor(r.Context(), service.Actor{Name: p.Name, Role: p.Role, Address: c.RealIP(), AccountID: p.AccountID})
		ctx = views.WithAccess(ctx, views.Access{Operate: service.Allows(p.Role, service.RoleOperator), Administer: service.Allows(p.Role, service.RoleAdmin)})
		c.SetRequest(r.WithContext(ctx))
		return next(c)
	}
}

// requireToken checks the API's bearer token: KMIRROR_TOKEN (or the
// generated api.token) acts as an admin; a token made with POST
// /api/v1/tokens acts with its role. KMIRROR_TOKEN is compared with both
// sides hashed, constant-time, so neither content nor length leaks; other
// tokens are found by their SHA-256, which is all the store keeps.
func (s *Server) requireToken(next echo.HandlerFunc) echo.HandlerFunc {
	want := sha256.Sum256([]byte(s.token))
	return func(c echo.Context) error {
		r := c.Request()
		given, ok := strings.CutPrefix(r.Header.Get(echo.HeaderAuthorization), "Bearer ")
		given = strings.TrimSpace(given)
		got := sha256.Sum256([]byte(given))
		var actor service.Actor
		switch {
		case ok && subtle.ConstantTimeCompare(got[:], want[:]) == 1:
			actor = service.Actor{Name: "KMIRROR_TOKEN", Role: service.RoleAdmin}
		case ok && given != "" && len(given) <= 256:
			a, found, err := s.svc.TokenActor(r.Context(), given)
			if err != nil {
				return err
			}
			ok, actor = found, a
		default:
			ok = false
		}
		if !ok {
			c.Response().Header().Set(echo.HeaderWWWAuthenticate, `Bearer realm="kmirror"`)
			return &service.Error{Code: service.CodeUnauthorized,
				Message: "missing or wrong API token: send Authorization: Bearer <token> (KMIRROR_TOKEN, api.token in the data directory, or one made with POST /api/v1/tokens)"}
		}
		actor.Address = c.RealIP()
		c.SetRequest(r.WithContext(service.WithActor(r.Context(), actor)))
		c.Set(keyActor, actor.Name) // for the request log
		return next(c)
	}
}

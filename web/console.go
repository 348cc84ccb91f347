package web

import (
	"net/http"
	"strconv"
	"strings"
	"unicode"

	"github.com/labstack/echo/v4"

	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/views"
)

// sessionPages are signing in and out. Sign-in answers without a
// session; signing out needs one.
type sessionPages struct{ s *Server }

func (h *sessionPages) routes(g *echo.Group) {
	g.GET("/signin", h.signInPage)
	g.POST("/signin", h.signIn)
	g.POST("/signout", h.signOut, h.s.requireUser)
	g.POST("/signout/everywhere", h.signOutEverywhere, h.s.requireUser)
}

func (h *sessionPages) signInPage(c echo.Context) error {
	if _, ok, err := h.s.signedIn(c, h.s.session(c)); err != nil {
		return err
	} else if ok {
		return c.Redirect(http.StatusSeeOther, "/instances")
	}
	return Render(c, http.StatusOK, views.SignIn(h.s.PageData(c, tr(c, "signin.title"), ""), views.SignInForm{}))
}

func (h *sessionPages) signIn(c echo.Context) error {
	user := strings.TrimSpace(c.FormValue("user"))
	p, err := h.s.svc.SignIn(c.Request().Context(), user, c.FormValue("password"), c.RealIP())
	if err != nil {
		e := service.AsError(err)
		if e.Code == service.CodeInternal || e.Code == service.CodeForbidden {
			return err
		}
		if e.RetryAfter > 0 {
			c.Response().Header().Set("Retry-After", retryAfterSeconds(e))
		}
		// The name as typed is the attacker's text: only a fingerprint of it
		// goes to the log.
		h.s.log.Info("console sign-in refused", "user_fingerprint", service.Fingerprint(user), "user_len", len(user),
			"client", c.RealIP(), "code", e.Code)
		if len(user) > service.MaxUserNameLength {
			user = "" // not worth echoing back
		}
		return Render(c, e.Code.HTTPStatus(), views.SignIn(h.s.PageData(c, tr(c, "signin.title"), ""), views.SignInForm{User: user, Error: e.Message}))
	}
	if err := h.s.startSession(c, h.s.session(c), p); err != nil {
		return err
	}
	h.s.log.Info("console sign-in", "user", p.Name, "role", p.Role, "client", c.RealIP())
	return Redirect(c, "/instances")
}

func (h *sessionPages) signOut(c echo.Context) error {
	if err := h.s.endSession(c, h.s.session(c)); err != nil {
		return err
	}
	return Redirect(c, "/signin")
}

// signOutEverywhere ends every session of the signed-in account, on every
// browser, this one included.
func (h *sessionPages) signOutEverywhere(c echo.Context) error {
	if err := h.s.svc.RevokeSessions(c.Request().Context(), CurrentUser(c)); err != nil {
		return err
	}
	h.s.log.Info("console sign-out everywhere", "user", CurrentUser(c), "client", c.RealIP())
	return h.signOut(c)
}

// splitServers accepts bootstrap servers (and Connect REST URLs) separated
// by commas, spaces or new lines, as people paste them.
func splitServers(v string) []string {
	return strings.FieldsFunc(v, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
}

func retryAfterSeconds(e *service.Error) string {
	return strconv.Itoa(max(1, int((e.RetryAfter.Milliseconds()+999)/1000)))
}

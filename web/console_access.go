package web

import (
	"net/http"
	"net/url"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/views"
)

// registerAccessPages adds the account page (everyone) and the users,
// tokens and audit pages (the service refuses them to non-admins: 403).
func (s *Server) registerAccessPages() {
	s.console.GET("/account", s.accountPage)
	s.console.POST("/account/password", s.changePassword)
	s.console.GET("/users", s.usersPage)
	s.console.POST("/users", s.addUser)
	s.console.POST("/users/:name/delete", s.deleteUser)
	s.console.POST("/users/:name/role", s.changeUserRole)
	s.console.GET("/tokens", s.tokensPage)
	s.console.POST("/tokens", s.addToken)
	s.console.POST("/tokens/:name/revoke", s.revokeToken)
	s.console.GET("/audit", s.auditPage)
	s.console.GET("/audit/export", s.exportAudit)
}

// requireRole answers 403 to a signed-in user whose role falls short of
// need, for pages that only lead to what the service would refuse (a form
// whose submit needs the role).
func (s *Server) requireRole(need string) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if !service.Allows(CurrentRole(c), need) {
				return &service.Error{Code: service.CodeForbidden,
					Message: "your role (" + CurrentRole(c) + ") does not allow this; it needs " + need + ": ask an admin"}
			}
			return next(c)
		}
	}
}

// CurrentRole is the signed-in user's role, or "".
func CurrentRole(c echo.Context) string {
	r, _ := c.Get(keyRole).(string)
	return r
}

func (s *Server) accountPage(c echo.Context) error {
	return Render(c, http.StatusOK, views.AccountPage(s.PageData(c, tr(c, "account.title"), "/account"), CurrentRole(c), views.AccountForm{}))
}

func (s *Server) changePassword(c echo.Context) error {
	err := s.svc.ChangeOwnPassword(c.Request().Context(), CurrentUser(c), c.FormValue("current_password"), c.FormValue("password"))
	if err != nil {
		e := service.AsError(err)
		if e.Code != service.CodeInvalidUser {
			return err
		}
		return Render(c, http.StatusUnprocessableEntity, views.AccountPage(s.PageData(c, tr(c, "account.title"), "/account"), CurrentRole(c),
			views.AccountForm{Errors: fieldErrors(e.Problems)}))
	}
	// Every session ended, this one too: sign in again with the new one.
	if err := s.endSession(c, s.session(c)); err != nil {
		return err
	}
	return Redirect(c, "/signin")
}

func (s *Server) usersPage(c echo.Context) error {
	return s.renderUsers(c, http.StatusOK, views.UserForm{Role: service.RoleViewer})
}

func (s *Server) renderUsers(c echo.Context, status int, f views.UserForm) error {
	us, err := s.svc.ListUsers(c.Request().Context())
	if err != nil {
		return err
	}
	f.Roles = roles
	return Render(c, status, views.UsersPage(s.PageData(c, tr(c, "users.title"), "/users"), userViews(us), f))
}

func (s *Server) addUser(c echo.Context) error {
	in := service.NewUser{Name: c.FormValue("name"), Role: c.FormValue("role"), Password: c.FormValue("password")}
	if _, err := s.svc.CreateUser(c.Request().Context(), in); err != nil {
		e := service.AsError(err)
		if e.Code != service.CodeInvalidUser {
			return err
		}
		return s.renderUsers(c, http.StatusUnprocessableEntity, views.UserForm{Name: in.Name, Role: in.Role, Errors: fieldErrors(e.Problems)})
	}
	if err := s.AddFlash(c, views.FlashSuccess, tr(c, "users.added", "Name", in.Name)); err != nil {
		return err
	}
	return Redirect(c, "/users")
}

func (s *Server) deleteUser(c echo.Context) error {
	name := c.Param("name")
	if err := s.svc.DeleteUser(c.Request().Context(), name); err != nil {
		e := service.AsError(err)
		if e.Code == service.CodeInternal || e.Code == service.CodeForbidden {
			return err
		}
		if err := s.AddFlash(c, views.FlashError, e.Message); err != nil {
			return err
		}
		return Redirect(c, "/users")
	}
	if err := s.AddFlash(c, views.FlashSuccess, tr(c, "users.removed", "Name", name)); err != nil {
		return err
	}
	return Redirect(c, "/users")
}

func (s *Server) changeUserRole(c echo.Context) error {
	name, role := c.Param("name"), c.FormValue("role")
	if _, err := s.svc.ChangeUser(c.Request().Context(), name, service.UserChange{Role: &role}); err != nil {
		e := service.AsError(err)
		if e.Code == service.CodeInternal || e.Code == service.CodeForbidden {
			return err
		}
		msg := e.Message
		if len(e.Problems) > 0 {
			msg = e.Problems[0].Message
		}
		if err := s.AddFlash(c, views.FlashError, msg); err != nil {
			return err
		}
		return Redirect(c, "/users")
	}
	if err := s.AddFlash(c, views.FlashSuccess, tr(c, "users.role_changed", "Name", name, "Role", views.RoleLabel(c.Request().Context(), role))); err != nil {
		return err
	}
	return Redirect(c, "/users")
}

func (s *Server) tokensPage(c echo.Context) error {
	return s.renderTokens(c, http.StatusOK, views.TokenForm{Role: service.RoleViewer})
}

func (s *Server) renderTokens(c echo.Context, status int, f views.TokenForm) error {
	ts, err := s.svc.ListTokens(c.Request().Context())
	if err != nil {
		return err
	}
	// The page may show a new token: keep it out of caches and history.
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	f.Roles = roles
	return Render(c, status, views.TokensPage(s.PageData(c, tr(c, "tokens.title"), "/tokens"), tokenViews(ts), f))
}

func (s *Server) addToken(c echo.Context) error {
	in := service.NewToken{Name: c.FormValue("name"), Role: c.FormValue("role")}
	created, err := s.svc.CreateToken(c.Request().Context(), in)
	if err != nil {
		e := service.AsError(err)
		if e.Code != service.CodeInvalidUser {
			return err
		}
		return s.renderTokens(c, http.StatusUnprocessableEntity, views.TokenForm{Name: in.Name, Role: in.Role, Errors: fieldErrors(e.Problems)})
	}
	// Rendered in the answer, not a flash: the token must not be stored
	// in the session cookie.
	return s.renderTokens(c, http.StatusCreated, views.TokenForm{Role: service.RoleViewer, Created: &views.CreatedToken{TokenInfo: tokenView(created.TokenInfo), Token: created.Token}})
}

func (s *Server) revokeToken(c echo.Context) error {
	name := c.Param("name")
	if err := s.svc.RevokeToken(c.Request().Context(), name); err != nil {
		e := service.AsError(err)
		if e.Code == service.CodeInternal || e.Code == service.CodeForbidden {
			return err
		}
		if err := s.AddFlash(c, views.FlashError, e.Message); err != nil {
			return err
		}
		return Redirect(c, "/tokens")
	}
	if err := s.AddFlash(c, views.FlashSuccess, tr(c, "tokens.revoked", "Name", name)); err != nil {
		return err
	}
	return Redirect(c, "/tokens")
}

func (s *Server) auditPage(c echo.Context) error {
	f := auditFilter(c)
	f.Limit = 100
	es, err := s.svc.Audit(c.Request().Context(), f)
	if err != nil {
		return err
	}
	q := url.Values{}
	for k, v := range map[string]string{"actor": f.Actor, "action": f.Action, "outcome": f.Outcome} {
		if v != "" {
			q.Set(k, v)
		}
	}
	v := views.AuditView{Filter: views.AuditFilter{Actor: f.Actor, Action: f.Action, Outcome: f.Outcome}, Entries: auditViews(es), Export: "/audit/export?" + q.Encode()}
	if len(es) == f.Limit {
		q.Set("before", strconv.FormatInt(es[len(es)-1].ID, 10))
		v.Older = "/audit?" + q.Encode()
	}
	return Render(c, http.StatusOK, views.AuditPage(s.PageData(c, tr(c, "audit.title"), "/audit"), v))
}

package web

import (
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/views"
)

// accessPages are the account page (everyone) and the users, tokens and
// audit pages (the service refuses them to non-admins: 403).
type accessPages struct{ s *Server }

func (h *accessPages) routes(g *echo.Group) {
	g.GET("/account", h.accountPage)
	g.POST("/account/password", h.changePassword)
	g.GET("/users", h.usersPage)
	g.POST("/users", h.addUser)
	g.POST("/users/:name/delete", h.deleteUser)
	g.POST("/users/:name/role", h.changeUserRole)
	g.GET("/tokens", h.tokensPage)
	g.POST("/tokens", h.addToken)
	g.POST("/tokens/:name/revoke", h.revokeToken)
	g.GET("/destination-policy", h.policyPage, h.s.requireRole(service.RoleAdmin))
	g.POST("/destination-policy", h.setPolicy)
	g.GET("/audit", h.auditPage)
	g.GET("/audit/export", h.s.exportAudit)
}

// requireRole answers 403 to a signed-in user whose role falls short of
// need, for pages that only lead to what the service would refuse (a form
// whose submit needs the role).
func (s *Server) requireRole(need service.Role) echo.MiddlewareFunc {
	return func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			if !service.Allows(CurrentRole(c), need) {
				return &service.Error{Code: service.CodeForbidden,
					Message: "your role (" + string(CurrentRole(c)) + ") does not allow this; it needs " + string(need) + ": ask an admin"}
			}
			return next(c)
		}
	}
}

// CurrentRole is the signed-in user's role, or "".
func CurrentRole(c echo.Context) service.Role {
	r, _ := c.Get(keyRole).(service.Role)
	return r
}

func (h *accessPages) accountPage(c echo.Context) error {
	return Render(c, http.StatusOK, views.AccountPage(h.s.PageData(c, tr(c, "account.title"), "/account"), string(CurrentRole(c)), views.AccountForm{}))
}

func (h *accessPages) changePassword(c echo.Context) error {
	var in struct {
		Current string `form:"current_password"`
		New     string `form:"password"`
	}
	if err := decodeForm(c, &in); err != nil {
		return err
	}
	err := h.s.svc.ChangeOwnPassword(c.Request().Context(), CurrentUser(c), in.Current, in.New)
	if err != nil {
		e := service.AsError(err)
		problems := e.Problems
		switch e.Code {
		case service.CodeInvalidUser:
		case service.CodeTooManyAttempts:
			// Throttled like a sign-in: said by the current password.
			c.Response().Header().Set("Retry-After", retryAfterSeconds(e))
			problems = service.Problems{{Field: "current_password", Message: e.Message}}
		default:
			return err
		}
		return Render(c, e.Code.HTTPStatus(), views.AccountPage(h.s.PageData(c, tr(c, "account.title"), "/account"), string(CurrentRole(c)),
			views.AccountForm{Errors: fieldErrors(problems)}))
	}
	// Every session ended, this one too: sign in again with the new one.
	if err := h.s.endSession(c, h.s.session(c)); err != nil {
		return err
	}
	return Redirect(c, "/signin")
}

func (h *accessPages) usersPage(c echo.Context) error {
	return h.renderUsers(c, http.StatusOK, views.UserForm{Role: string(service.RoleViewer)})
}

func (h *accessPages) renderUsers(c echo.Context, status int, f views.UserForm) error {
	us, err := h.s.svc.ListUsers(c.Request().Context())
	if err != nil {
		return err
	}
	f.Roles = roles
	return Render(c, status, views.UsersPage(h.s.PageData(c, tr(c, "users.title"), "/users"), userViews(us), f))
}

// accountFormInput is the add-user and new-token forms as posted (a token
// has no password).
type accountFormInput struct {
	Name      string `form:"name"`
	Role      string `form:"role"`
	Password  string `form:"password"`
	ExpiresIn string `form:"expires_in"`
}

func (h *accessPages) addUser(c echo.Context) error {
	var f accountFormInput
	if err := decodeForm(c, &f); err != nil {
		return err
	}
	in := service.NewUser{Name: f.Name, Role: service.Role(f.Role), Password: f.Password}
	if _, err := h.s.svc.CreateUser(c.Request().Context(), in); err != nil {
		e := service.AsError(err)
		if e.Code != service.CodeInvalidUser {
			return err
		}
		return h.renderUsers(c, http.StatusUnprocessableEntity, views.UserForm{Name: in.Name, Role: string(in.Role), Errors: fieldErrors(e.Problems)})
	}
	if err := h.s.AddFlash(c, views.FlashSuccess, tr(c, "users.added", "Name", in.Name)); err != nil {
		return err
	}
	return Redirect(c, "/users")
}

func (h *accessPages) deleteUser(c echo.Context) error {
	name := c.Param("name")
	if err := h.s.svc.DeleteUser(c.Request().Context(), name); err != nil {
		e := service.AsError(err)
		if e.Code == service.CodeInternal || e.Code == service.CodeForbidden {
			return err
		}
		if err := h.s.AddFlash(c, views.FlashError, e.Message); err != nil {
			return err
		}
		return Redirect(c, "/users")
	}
	if err := h.s.AddFlash(c, views.FlashSuccess, tr(c, "users.removed", "Name", name)); err != nil {
		return err
	}
	return Redirect(c, "/users")
}

func (h *accessPages) changeUserRole(c echo.Context) error {
	name, role := c.Param("name"), service.Role(c.FormValue("role"))
	if _, err := h.s.svc.ChangeUser(c.Request().Context(), name, service.UserChange{Role: &role}); err != nil {
		e := service.AsError(err)
		if e.Code == service.CodeInternal || e.Code == service.CodeForbidden {
			return err
		}
		msg := e.Message
		if len(e.Problems) > 0 {
			msg = e.Problems[0].Message
		}
		if err := h.s.AddFlash(c, views.FlashError, msg); err != nil {
			return err
		}
		return Redirect(c, "/users")
	}
	if err := h.s.AddFlash(c, views.FlashSuccess, tr(c, "users.role_changed", "Name", name, "Role", views.RoleLabel(c.Request().Context(), string(role)))); err != nil {
		return err
	}
	return Redirect(c, "/users")
}

func (h *accessPages) tokensPage(c echo.Context) error {
	return h.renderTokens(c, http.StatusOK, views.TokenForm{Role: string(service.RoleViewer)})
}

func (h *accessPages) renderTokens(c echo.Context, status int, f views.TokenForm) error {
	ts, err := h.s.svc.ListTokens(c.Request().Context())
	if err != nil {
		return err
	}
	// The page may show a new token: keep it out of caches and history.
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	f.Roles = roles
	return Render(c, status, views.TokensPage(h.s.PageData(c, tr(c, "tokens.title"), "/tokens"), tokenViews(ts), f))
}

func (h *accessPages) addToken(c echo.Context) error {
	var f accountFormInput
	if err := decodeForm(c, &f); err != nil {
		return err
	}
	in := service.NewToken{Name: f.Name, Role: service.Role(f.Role), ExpiresIn: f.ExpiresIn}
	created, err := h.s.svc.CreateToken(c.Request().Context(), in)
	if err != nil {
		e := service.AsError(err)
		if e.Code != service.CodeInvalidUser {
			return err
		}
		return h.renderTokens(c, http.StatusUnprocessableEntity, views.TokenForm{Name: in.Name, Role: string(in.Role), ExpiresIn: in.ExpiresIn, Errors: fieldErrors(e.Problems)})
	}
	// Rendered in the answer, not a flash: the token must not be stored
	// in the session cookie.
	return h.renderTokens(c, http.StatusCreated, views.TokenForm{Role: string(service.RoleViewer), Created: &views.CreatedToken{TokenInfo: tokenView(created.TokenInfo), Token: created.Token}})
}

func (h *accessPages) revokeToken(c echo.Context) error {
	name := c.Param("name")
	if err := h.s.svc.RevokeToken(c.Request().Context(), name); err != nil {
		e := service.AsError(err)
		if e.Code == service.CodeInternal || e.Code == service.CodeForbidden {
			return err
		}
		if err := h.s.AddFlash(c, views.FlashError, e.Message); err != nil {
			return err
		}
		return Redirect(c, "/tokens")
	}
	if err := h.s.AddFlash(c, views.FlashSuccess, tr(c, "tokens.revoked", "Name", name)); err != nil {
		return err
	}
	return Redirect(c, "/tokens")
}

func (h *accessPages) auditPage(c echo.Context) error {
	f := auditFilter(c)
	f.Limit = 100
	es, err := h.s.svc.Audit(c.Request().Context(), f)
	if err != nil {
		return err
	}
	q := url.Values{}
	for k, v := range map[string]string{"actor": f.Actor, "action": f.Action, "outcome": f.Outcome} {
		if v != "" {
			q.Set(k, v)
		}
	}
	size, err := h.s.svc.AuditSize(c.Request().Context())
	if err != nil {
		return err
	}
	v := views.AuditView{Filter: views.AuditFilter{Actor: f.Actor, Action: f.Action, Outcome: f.Outcome}, Entries: auditViews(es), Export: "/audit/export?" + q.Encode(),
		Size: views.AuditSize{Entries: size.Entries, MiB: strconv.FormatFloat(float64(size.Bytes)/(1<<20), 'f', 1, 64), Large: size.Large}}
	if len(es) == f.Limit {
		q.Set("before", strconv.FormatInt(es[len(es)-1].ID, 10))
		v.Older = "/audit?" + q.Encode()
	}
	return Render(c, http.StatusOK, views.AuditPage(h.s.PageData(c, tr(c, "audit.title"), "/audit"), v))
}

func (h *accessPages) policyPage(c echo.Context) error {
	pol, err := h.s.svc.DestinationPolicy(c.Request().Context())
	if err != nil {
		return err
	}
	return h.renderPolicy(c, http.StatusOK, policyForm(pol))
}

func policyForm(pol service.DestinationPolicy) views.DestinationPolicyForm {
	f := views.DestinationPolicyForm{Mode: pol.Mode, Networks: strings.Join(pol.Networks, "\n"), ChangedBy: pol.ChangedBy}
	if pol.ChangedAt != nil {
		f.ChangedAt = views.FormatTime(*pol.ChangedAt)
	}
	return f
}

func (h *accessPages) renderPolicy(c echo.Context, status int, f views.DestinationPolicyForm) error {
	return Render(c, status, views.DestinationPolicyPage(h.s.PageData(c, tr(c, "policy.title"), "/destination-policy"), f))
}

func (h *accessPages) setPolicy(c echo.Context) error {
	var in struct {
		Mode     string `form:"mode"`
		Networks string `form:"networks"`
	}
	if err := decodeForm(c, &in); err != nil {
		return err
	}
	pol := service.DestinationPolicy{Mode: in.Mode, Networks: splitServers(in.Networks)}
	if _, err := h.s.svc.SetDestinationPolicy(c.Request().Context(), pol); err != nil {
		e := service.AsError(err)
		if e.Code != service.CodeInvalidRequest {
			return err
		}
		return h.renderPolicy(c, http.StatusUnprocessableEntity, views.DestinationPolicyForm{Mode: in.Mode, Networks: in.Networks, Errors: fieldErrors(e.Problems)})
	}
	if err := h.s.AddFlash(c, views.FlashSuccess, tr(c, "policy.saved")); err != nil {
		return err
	}
	return Redirect(c, "/destination-policy")
}

package web

import (
	"net/http"
	"strconv"
	"strings"
	"unicode"

	"github.com/labstack/echo/v4"

	"github.com/kmirror/kmirror/internal/cluster"
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

// instancePages are the registered Kafka clusters (instances): the list
// with the add form, removal, and an instance's overview and health.
type instancePages struct{ s *Server }

func (h *instancePages) routes(g *echo.Group) {
	g.GET("/instances", h.instancesPage)
	g.POST("/instances", h.addInstance)
	g.POST("/instances/:name/delete", h.removeInstance)
	g.GET("/instances/:name", h.instanceOverview)
	// The fragment the Instances list loads per row.
	g.GET("/instances/:name/health", h.instanceHealth)
}

func (h *instancePages) instancesPage(c echo.Context) error {
	return h.renderInstances(c, http.StatusOK, views.ClusterForm{SecurityProtocol: cluster.Plaintext})
}

func (h *instancePages) renderInstances(c echo.Context, status int, form views.ClusterForm) error {
	clusters, err := h.s.svc.ListClusters(c.Request().Context())
	if err != nil {
		return err
	}
	return Render(c, status, views.Instances(h.s.PageData(c, tr(c, "instances.title"), "/instances"), clusterViews(clusters), form))
}

// clusterFormInput is the add-instance form as posted.
type clusterFormInput struct {
	Name             string `form:"name"`
	BootstrapServers string `form:"bootstrap_servers"` // as pasted: commas, spaces or lines
	SecurityProtocol string `form:"security_protocol"`
	SASLMechanism    string `form:"sasl_mechanism"`
	Username         string `form:"username"`
	Password         string `form:"password"`
	CAPEM            string `form:"ca_pem"`
}

func (h *instancePages) addInstance(c echo.Context) error {
	var f clusterFormInput
	if err := decodeForm(c, &f); err != nil {
		return err
	}
	in := cluster.Settings{
		Name: f.Name, BootstrapServers: splitServers(f.BootstrapServers), SecurityProtocol: f.SecurityProtocol,
		SASLMechanism: f.SASLMechanism, Username: f.Username, Password: f.Password, CAPEM: f.CAPEM,
	}
	info, err := h.s.svc.AddCluster(c.Request().Context(), in)
	if err != nil {
		e := service.AsError(err)
		if e.Code == service.CodeInternal || e.Code == service.CodeForbidden {
			return err
		}
		form := views.ClusterForm{
			Name: in.Name, BootstrapServers: f.BootstrapServers, SecurityProtocol: in.SecurityProtocol,
			SASLMechanism: in.SASLMechanism, Username: in.Username, CAPEM: in.CAPEM,
			Errors: fieldErrors(e.Problems),
		}
		if len(e.Problems) == 0 {
			form.Message = e.Message
		} else if in.Password != "" {
			form.Errors["password"] = append(form.Errors["password"], tr(c, "instances.password_again"))
		}
		// 422 tells htmx (responseHandling) to swap the form with its
		// messages in; a browser without htmx gets the whole page.
		if IsHTMX(c) {
			return Render(c, http.StatusUnprocessableEntity, views.ClusterFormView(CSRFToken(c), form))
		}
		return h.renderInstances(c, http.StatusUnprocessableEntity, form)
	}
	h.s.flash(c, views.Flash{Kind: views.FlashSuccess, Message: tr(c, "instances.added", "Name", info.Name)})
	return Redirect(c, "/instances")
}

func (h *instancePages) removeInstance(c echo.Context) error {
	name := c.Param("name")
	if err := h.s.svc.RemoveCluster(c.Request().Context(), name); err != nil {
		e := service.AsError(err)
		if e.Code == service.CodeInternal || e.Code == service.CodeForbidden {
			return err
		}
		h.s.flash(c, views.Flash{Kind: views.FlashError, Message: e.Message})
		return Redirect(c, "/instances")
	}
	h.s.flash(c, views.Flash{Kind: views.FlashSuccess, Message: tr(c, "instances.removed", "Name", name)})
	return Redirect(c, "/instances")
}

// splitServers accepts bootstrap servers (and Connect REST URLs) separated
// by commas, spaces or new lines, as people paste them.
func splitServers(v string) []string {
	return strings.FieldsFunc(v, func(r rune) bool { return r == ',' || unicode.IsSpace(r) })
}

func retryAfterSeconds(e *service.Error) string {
	return strconv.Itoa(max(1, int((e.RetryAfter.Milliseconds()+999)/1000)))
}

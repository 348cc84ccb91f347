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

func (s *Server) signInPage(c echo.Context) error {
	if _, ok, err := s.signedIn(c, s.session(c)); err != nil {
		return err
	} else if ok {
		return c.Redirect(http.StatusSeeOther, "/instances")
	}
	return Render(c, http.StatusOK, views.SignIn(s.PageData(c, tr(c, "signin.title"), ""), views.SignInForm{}))
}

func (s *Server) signIn(c echo.Context) error {
	user := strings.TrimSpace(c.FormValue("user"))
	p, err := s.svc.SignIn(c.Request().Context(), user, c.FormValue("password"), c.RealIP())
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
		s.log.Info("console sign-in refused", "user_fingerprint", service.Fingerprint(user), "user_len", len(user),
			"client", c.RealIP(), "code", e.Code)
		if len(user) > service.MaxUserNameLength {
			user = "" // not worth echoing back
		}
		return Render(c, e.Code.HTTPStatus(), views.SignIn(s.PageData(c, tr(c, "signin.title"), ""), views.SignInForm{User: user, Error: e.Message}))
	}
	if err := s.startSession(c, s.session(c), p); err != nil {
		return err
	}
	s.log.Info("console sign-in", "user", p.Name, "role", p.Role, "client", c.RealIP())
	return Redirect(c, "/instances")
}

func (s *Server) signOut(c echo.Context) error {
	if err := s.endSession(c, s.session(c)); err != nil {
		return err
	}
	return Redirect(c, "/signin")
}

// signOutEverywhere ends every session of the signed-in account, on every
// browser, this one included.
func (s *Server) signOutEverywhere(c echo.Context) error {
	if err := s.svc.RevokeSessions(c.Request().Context(), CurrentUser(c)); err != nil {
		return err
	}
	s.log.Info("console sign-out everywhere", "user", CurrentUser(c), "client", c.RealIP())
	return s.signOut(c)
}

func (s *Server) instancesPage(c echo.Context) error {
	return s.renderInstances(c, http.StatusOK, views.ClusterForm{SecurityProtocol: cluster.Plaintext})
}

func (s *Server) renderInstances(c echo.Context, status int, form views.ClusterForm) error {
	clusters, err := s.svc.ListClusters(c.Request().Context())
	if err != nil {
		return err
	}
	return Render(c, status, views.Instances(s.PageData(c, tr(c, "instances.title"), "/instances"), clusterViews(clusters), form))
}

func (s *Server) addInstance(c echo.Context) error {
	in := cluster.Settings{
		Name:             c.FormValue("name"),
		BootstrapServers: splitServers(c.FormValue("bootstrap_servers")),
		SecurityProtocol: c.FormValue("security_protocol"),
		SASLMechanism:    c.FormValue("sasl_mechanism"),
		Username:         c.FormValue("username"),
		Password:         c.FormValue("password"),
		CAPEM:            c.FormValue("ca_pem"),
	}
	info, err := s.svc.AddCluster(c.Request().Context(), in)
	if err != nil {
		e := service.AsError(err)
		if e.Code == service.CodeInternal || e.Code == service.CodeForbidden {
			return err
		}
		form := views.ClusterForm{
			Name: in.Name, BootstrapServers: c.FormValue("bootstrap_servers"), SecurityProtocol: in.SecurityProtocol,
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
		return s.renderInstances(c, http.StatusUnprocessableEntity, form)
	}
	s.flash(c, views.Flash{Kind: views.FlashSuccess, Message: tr(c, "instances.added", "Name", info.Name)})
	return Redirect(c, "/instances")
}

func (s *Server) removeInstance(c echo.Context) error {
	name := c.Param("name")
	if err := s.svc.RemoveCluster(c.Request().Context(), name); err != nil {
		e := service.AsError(err)
		if e.Code == service.CodeInternal || e.Code == service.CodeForbidden {
			return err
		}
		s.flash(c, views.Flash{Kind: views.FlashError, Message: e.Message})
		return Redirect(c, "/instances")
	}
	s.flash(c, views.Flash{Kind: views.FlashSuccess, Message: tr(c, "instances.removed", "Name", name)})
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

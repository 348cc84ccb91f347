package web

import (
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/views"
)

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

// clusterFormInput is the add-instance form as posted. Input names are the
// service's field names, so its problems land by their inputs.
type clusterFormInput struct {
	Name               string `form:"name"`
	BootstrapServers   string `form:"bootstrap_servers"` // as pasted: commas, spaces or lines
	SecurityProtocol   string `form:"security_protocol"`
	SASLMechanism      string `form:"sasl_mechanism"`
	Username           string `form:"username"`
	Password           string `form:"password"`
	CAPEM              string `form:"ca_pem"`
	ClientCertPEM      string `form:"client_cert_pem"`
	ClientKeyPEM       string `form:"client_key_pem"`
	ClientKeyPassword  string `form:"client_key_password"`
	OAuthTokenEndpoint string `form:"oauth.token_endpoint"`
	OAuthClientID      string `form:"oauth.client_id"`
	OAuthClientSecret  string `form:"oauth.client_secret"`
	OAuthScope         string `form:"oauth.scope"`
	OAuthAudience      string `form:"oauth.audience"`
}

func (h *instancePages) addInstance(c echo.Context) error {
	var f clusterFormInput
	if err := decodeForm(c, &f); err != nil {
		return err
	}
	// The form hides the fields the chosen protocol and mechanism do not
	// use; what was typed in them before is still sent, and left out here.
	in := securityInUse(cluster.Settings{
		Name: f.Name, BootstrapServers: splitServers(f.BootstrapServers), SecurityProtocol: f.SecurityProtocol,
		SASLMechanism: f.SASLMechanism, Username: f.Username, Password: f.Password, CAPEM: f.CAPEM,
		ClientCertPEM: f.ClientCertPEM, ClientKeyPEM: f.ClientKeyPEM, ClientKeyPassword: f.ClientKeyPassword,
		OAuth: cluster.OAuth{TokenEndpoint: f.OAuthTokenEndpoint, ClientID: f.OAuthClientID, ClientSecret: f.OAuthClientSecret,
			Scope: f.OAuthScope, Audience: f.OAuthAudience},
	})
	info, err := h.s.svc.AddCluster(c.Request().Context(), in)
	if err != nil {
		e := service.AsError(err)
		if e.Code == service.CodeInternal || e.Code == service.CodeForbidden {
			return err
		}
		// What was typed comes back, hidden fields' too (a protocol chosen
		// back shows them again), but never a secret.
		form := views.ClusterForm{
			Name: f.Name, BootstrapServers: f.BootstrapServers, SecurityProtocol: f.SecurityProtocol,
			SASLMechanism: f.SASLMechanism, Username: f.Username, CAPEM: f.CAPEM, ClientCertPEM: f.ClientCertPEM,
			OAuthTokenEndpoint: f.OAuthTokenEndpoint, OAuthClientID: f.OAuthClientID, OAuthScope: f.OAuthScope,
			OAuthAudience: f.OAuthAudience,
			Errors:        fieldErrors(e.Problems),
		}
		if len(e.Problems) == 0 {
			form.Message = e.Message
		} else {
			for _, s := range secretsAgain(in.Secrets(), "") {
				form.Errors[s.Field] = append(form.Errors[s.Field], tr(c, s.Message))
			}
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

// securityInUse is s without the security settings its protocol and
// mechanism do not use: a mechanism without SASL, a user name and password
// but for PLAIN and SCRAM, the OAuth grant but for OAUTHBEARER, the CA and
// client certificate without TLS. The forms only hide those fields, so a
// browser still sends what was typed in them before another choice; the
// service would refuse them on fields the user no longer sees.
func securityInUse(s cluster.Settings) cluster.Settings {
	chosen := cluster.Settings{SecurityProtocol: strings.TrimSpace(s.SecurityProtocol), SASLMechanism: strings.TrimSpace(s.SASLMechanism)}
	if !chosen.UsesSASL() {
		s.SASLMechanism = ""
	}
	if !chosen.UsesPassword() {
		s.Username, s.Password = "", ""
	}
	if !chosen.UsesOAuth() {
		s.OAuth = cluster.OAuth{}
	}
	if !chosen.UsesTLS() {
		s.CAPEM, s.ClientCertPEM, s.ClientKeyPEM, s.ClientKeyPassword = "", "", "", ""
	}
	return s
}

// secretsAgain are the messages asking for each secret that was given to
// be given again, by its field (prefix "peer." for a task's peer): a refused
// form never sends a secret back. Messages are catalogue keys.
func secretsAgain(x cluster.Secrets, prefix string) service.Problems {
	var p service.Problems
	for _, s := range []struct {
		given      bool
		field, key string
	}{
		{x.Password != "", "password", "instances.password_again"},
		{x.ClientKeyPEM != "", "client_key_pem", "instances.key_again"},
		{x.ClientKeyPassword != "", "client_key_password", "instances.key_password_again"},
		{x.OAuthClientSecret != "", "oauth.client_secret", "instances.client_secret_again"},
	} {
		if s.given {
			p = append(p, service.Problem{Field: prefix + s.field, Message: s.key})
		}
	}
	return p
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

func (h *instancePages) instanceOverview(c echo.Context) error {
	ctx := c.Request().Context()
	info, err := h.s.svc.Cluster(ctx, c.Param("name"))
	if err != nil {
		return err
	}
	health, err := h.s.svc.ClusterHealth(ctx, info.Name)
	if err != nil {
		return err
	}
	p := h.s.instancePage(c, info.Name, info.Name, "")
	return Render(c, http.StatusOK, views.InstanceOverview(p, views.InstanceView{Cluster: clusterView(info), Health: healthView(health)}))
}

func (h *instancePages) instanceHealth(c echo.Context) error {
	health, err := h.s.svc.ClusterHealth(c.Request().Context(), c.Param("name"))
	if err != nil {
		return err
	}
	return Render(c, http.StatusOK, views.ClusterHealthBadge(healthView(health)))
}

// instancePage is PageData with the instance's own entries (Overview,
// Smart Connect) under the console's navigation; section is the active one.
func (s *Server) instancePage(c echo.Context, title, name, section string) views.Page {
	p := s.PageData(c, title, "")
	if p.User != "" {
		p.Nav = append(p.Nav, instanceNav(c, name, section)...)
	}
	return p
}

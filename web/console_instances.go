package web

import (
	"net/http"

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

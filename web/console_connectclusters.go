package web

import (
	"context"
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/views"
)

// connectClusterPages are the Kafka Connect clusters page: the list, the
// add form and removal. The service decides who may change them.
type connectClusterPages struct{ s *Server }

func (h *connectClusterPages) routes(g *echo.Group) {
	g.GET("/connect-clusters", h.connectClustersPage)
	g.POST("/connect-clusters", h.addConnectCluster)
	g.POST("/connect-clusters/:name/delete", h.removeConnectCluster)
}

func (h *connectClusterPages) connectClustersPage(c echo.Context) error {
	return h.renderConnectClusters(c, http.StatusOK, views.ConnectClusterForm{})
}

func (h *connectClusterPages) renderConnectClusters(c echo.Context, status int, form views.ConnectClusterForm) error {
	ctx := c.Request().Context()
	list, err := h.s.svc.ListConnectClusters(ctx)
	if err != nil {
		return err
	}
	instances, err := h.s.instanceNames(ctx)
	if err != nil {
		return err
	}
	v := views.ConnectClustersView{Clusters: connectClusterViews(list), Instances: instances, Form: form}
	return Render(c, status, views.ConnectClusters(h.s.PageData(c, tr(c, "connect.title"), "/connect-clusters"), v))
}

// instanceNames are the registered Kafka clusters' names, for selects.
func (s *Server) instanceNames(ctx context.Context) ([]string, error) {
	all, err := s.svc.ListClusters(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(all))
	for i, cl := range all {
		names[i] = cl.Name
	}
	return names, nil
}

// connectClusterNames are the registered Kafka Connect clusters' names,
// for engine selects.
func (s *Server) connectClusterNames(ctx context.Context) ([]string, error) {
	list, err := s.svc.ListConnectClusters(ctx)
	if err != nil {
		return nil, err
	}
	names := make([]string, len(list))
	for i, cc := range list {
		names[i] = cc.Name
	}
	return names, nil
}

// connectClusterFormInput is the add form as posted.
type connectClusterFormInput struct {
	Name           string `form:"name"`
	URLs           string `form:"urls"` // as pasted: commas, spaces or lines
	KafkaCluster   string `form:"kafka_cluster"`
	Username       string `form:"username"`
	Password       string `form:"password"`
	CAPEM          string `form:"ca_pem"`
	ClientCertPEM  string `form:"client_cert_pem"`
	ClientKeyPEM   string `form:"client_key_pem"`
	BearerToken    string `form:"bearer_token"`
	ConfigProvider string `form:"config_provider"`
	AutoRestart    bool   `form:"auto_restart"`
}

func (h *connectClusterPages) addConnectCluster(c echo.Context) error {
	var f connectClusterFormInput
	if err := decodeForm(c, &f); err != nil {
		return err
	}
	in := service.ConnectClusterSettings{
		Name: f.Name, URLs: splitServers(f.URLs), KafkaCluster: f.KafkaCluster, Username: f.Username,
		Password: f.Password, CAPEM: f.CAPEM, ClientCertPEM: f.ClientCertPEM, ClientKeyPEM: f.ClientKeyPEM,
		BearerToken: f.BearerToken, ConfigProvider: f.ConfigProvider, AutoRestart: f.AutoRestart,
	}
	info, err := h.s.svc.AddConnectCluster(c.Request().Context(), in)
	if err != nil {
		e := service.AsError(err)
		if e.Code == service.CodeInternal || e.Code == service.CodeForbidden {
			return err
		}
		form := views.ConnectClusterForm{
			Name: in.Name, URLs: f.URLs, KafkaCluster: in.KafkaCluster, Username: in.Username, CAPEM: in.CAPEM,
			ClientCertPEM: in.ClientCertPEM, ConfigProvider: in.ConfigProvider, AutoRestart: in.AutoRestart, Errors: fieldErrors(e.Problems),
		}
		if len(e.Problems) == 0 {
			form.Message = e.Message
		} else {
			// Secrets are never sent back: say so where one was typed.
			for field, typed := range map[string]bool{"password": in.Password != "", "client_key_pem": in.ClientKeyPEM != "", "bearer_token": in.BearerToken != ""} {
				if typed {
					form.Errors[field] = append(form.Errors[field], tr(c, "connect.secret_again"))
				}
			}
		}
		// 422: htmx swaps the form with its messages in (see addInstance).
		if IsHTMX(c) {
			instances, err := h.s.instanceNames(c.Request().Context())
			if err != nil {
				return err
			}
			return Render(c, http.StatusUnprocessableEntity, views.ConnectClusterFormView(CSRFToken(c), instances, form))
		}
		return h.renderConnectClusters(c, http.StatusUnprocessableEntity, form)
	}
	h.s.flash(c, views.Flash{Kind: views.FlashSuccess, Message: tr(c, "connect.added", "Name", info.Name)})
	return Redirect(c, "/connect-clusters")
}

func (h *connectClusterPages) removeConnectCluster(c echo.Context) error {
	name := c.Param("name")
	if err := h.s.svc.RemoveConnectCluster(c.Request().Context(), name); err != nil {
		e := service.AsError(err)
		if e.Code == service.CodeInternal || e.Code == service.CodeForbidden {
			return err
		}
		h.s.flash(c, views.Flash{Kind: views.FlashError, Message: e.Message})
		return Redirect(c, "/connect-clusters")
	}
	h.s.flash(c, views.Flash{Kind: views.FlashSuccess, Message: tr(c, "connect.removed", "Name", name)})
	return Redirect(c, "/connect-clusters")
}

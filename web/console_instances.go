package web

import (
	"net/http"

	"github.com/labstack/echo/v4"

	"github.com/kmirror/kmirror/views"
)

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

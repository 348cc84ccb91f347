package web

import (
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/kmirror/kmirror/internal/service"
)

// connectClusterList is the body of GET /api/v1/connect-clusters.
type connectClusterList struct {
	ConnectClusters []service.ConnectClusterInfo `json:"connect_clusters"`
}

// connectAPI are the registered Kafka Connect clusters, their check, and
// adopting the MirrorMaker 2 connectors found on them.
type connectAPI struct{ s *Server }

func (h *connectAPI) routes(g *echo.Group) {
	g.GET("/connect-clusters", h.apiListConnectClusters)
	g.POST("/connect-clusters", h.apiAddConnectCluster)
	g.GET("/connect-clusters/:name", h.apiGetConnectCluster)
	g.DELETE("/connect-clusters/:name", h.apiRemoveConnectCluster)
	g.POST("/connect-clusters/:name/check", h.apiCheckConnectCluster)
	g.GET("/connect-clusters/:name/mm2", h.apiListAdoptable)
	g.POST("/connect-clusters/:name/mm2/adopt", h.apiAdoptMM2)
}

func (h *connectAPI) apiListConnectClusters(c echo.Context) error {
	list, err := h.s.svc.ListConnectClusters(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, connectClusterList{ConnectClusters: list})
}

func (h *connectAPI) apiGetConnectCluster(c echo.Context) error {
	info, err := h.s.svc.ConnectCluster(c.Request().Context(), c.Param("name"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, info)
}

func (h *connectAPI) apiAddConnectCluster(c echo.Context) error {
	var in service.ConnectClusterSettings
	if err := DecodeJSON(c, &in); err != nil {
		return err
	}
	info, err := h.s.svc.AddConnectCluster(c.Request().Context(), in)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, "/api/v1/connect-clusters/"+url.PathEscape(info.Name))
	return c.JSON(http.StatusCreated, info)
}

func (h *connectAPI) apiRemoveConnectCluster(c echo.Context) error {
	if err := h.s.svc.RemoveConnectCluster(c.Request().Context(), c.Param("name")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// apiCheckConnectCluster answers 200 whether the check passed or not
// (/api/v1/openapi.json), as the connectivity check does.
func (h *connectAPI) apiCheckConnectCluster(c echo.Context) error {
	res, err := h.s.svc.CheckConnectCluster(c.Request().Context(), c.Param("name"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, res)
}

// adoptableList is the body of GET /api/v1/connect-clusters/{name}/mm2.
type adoptableList struct {
	Candidates []service.AdoptCandidate `json:"candidates"`
}

func (h *connectAPI) apiListAdoptable(c echo.Context) error {
	list, err := h.s.svc.ListAdoptable(c.Request().Context(), c.Param("name"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, adoptableList{Candidates: list})
}

func (h *connectAPI) apiAdoptMM2(c echo.Context) error {
	var in service.AdoptRequest
	if err := DecodeJSON(c, &in); err != nil {
		return err
	}
	res, err := h.s.svc.AdoptMM2(c.Request().Context(), c.Param("name"), in)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, "/api/v1/tasks/"+url.PathEscape(res.Task.Name))
	return c.JSON(http.StatusCreated, res)
}

func (h *clustersAPI) apiSetSmartConnect(c echo.Context) error {
	var in service.SmartConnect
	if err := DecodeJSON(c, &in); err != nil {
		return err
	}
	info, err := h.s.svc.SetSmartConnect(c.Request().Context(), c.Param("name"), in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, info)
}

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

func (s *Server) registerConnectAPI() {
	s.api.GET("/connect-clusters", s.apiListConnectClusters)
	s.api.POST("/connect-clusters", s.apiAddConnectCluster)
	s.api.GET("/connect-clusters/:name", s.apiGetConnectCluster)
	s.api.DELETE("/connect-clusters/:name", s.apiRemoveConnectCluster)
	s.api.POST("/connect-clusters/:name/check", s.apiCheckConnectCluster)
	s.api.GET("/connect-clusters/:name/mm2", s.apiListAdoptable)
	s.api.POST("/connect-clusters/:name/mm2/adopt", s.apiAdoptMM2)
	s.api.PUT("/clusters/:name/smart-connect", s.apiSetSmartConnect)
}

func (s *Server) apiListConnectClusters(c echo.Context) error {
	list, err := s.svc.ListConnectClusters(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, connectClusterList{ConnectClusters: list})
}

func (s *Server) apiGetConnectCluster(c echo.Context) error {
	info, err := s.svc.ConnectCluster(c.Request().Context(), c.Param("name"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, info)
}

func (s *Server) apiAddConnectCluster(c echo.Context) error {
	var in service.ConnectClusterSettings
	if err := DecodeJSON(c, &in); err != nil {
		return err
	}
	info, err := s.svc.AddConnectCluster(c.Request().Context(), in)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, "/api/v1/connect-clusters/"+url.PathEscape(info.Name))
	return c.JSON(http.StatusCreated, info)
}

func (s *Server) apiRemoveConnectCluster(c echo.Context) error {
	if err := s.svc.RemoveConnectCluster(c.Request().Context(), c.Param("name")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// apiCheckConnectCluster answers 200 whether the check passed or not
// (/api/v1/openapi.json), as the connectivity check does.
func (s *Server) apiCheckConnectCluster(c echo.Context) error {
	res, err := s.svc.CheckConnectCluster(c.Request().Context(), c.Param("name"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, res)
}

// adoptableList is the body of GET /api/v1/connect-clusters/{name}/mm2.
type adoptableList struct {
	Candidates []service.AdoptCandidate `json:"candidates"`
}

func (s *Server) apiListAdoptable(c echo.Context) error {
	list, err := s.svc.ListAdoptable(c.Request().Context(), c.Param("name"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, adoptableList{Candidates: list})
}

func (s *Server) apiAdoptMM2(c echo.Context) error {
	var in service.AdoptRequest
	if err := DecodeJSON(c, &in); err != nil {
		return err
	}
	res, err := s.svc.AdoptMM2(c.Request().Context(), c.Param("name"), in)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, "/api/v1/tasks/"+url.PathEscape(res.Task.Name))
	return c.JSON(http.StatusCreated, res)
}

func (s *Server) apiSetSmartConnect(c echo.Context) error {
	var in service.SmartConnect
	if err := DecodeJSON(c, &in); err != nil {
		return err
	}
	info, err := s.svc.SetSmartConnect(c.Request().Context(), c.Param("name"), in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, info)
}

package web

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/labstack/echo/v4"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/service"
)

// clusterList is the body of GET /api/v1/clusters; an object rather than a
// bare array so fields (paging) can be added later.
type clusterList struct {
	Clusters []service.ClusterInfo `json:"clusters"`
}

// clustersAPI are the registered Kafka clusters (instances) and their
// Smart Connect setting.
type clustersAPI struct{ s *Server }

func (h *clustersAPI) routes(g *echo.Group) {
	g.GET("/clusters", h.apiListClusters)
	g.POST("/clusters", h.apiAddCluster)
	g.GET("/clusters/:name", h.apiGetCluster)
	g.DELETE("/clusters/:name", h.apiRemoveCluster)
	g.PUT("/clusters/:name/smart-connect", h.apiSetSmartConnect)
}

func (h *clustersAPI) apiListClusters(c echo.Context) error {
	list, err := h.s.svc.ListClusters(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, clusterList{Clusters: list})
}

func (h *clustersAPI) apiGetCluster(c echo.Context) error {
	info, err := h.s.svc.Cluster(c.Request().Context(), c.Param("name"))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, info)
}

func (h *clustersAPI) apiAddCluster(c echo.Context) error {
	var in cluster.Settings
	if err := DecodeJSON(c, &in); err != nil {
		return err
	}
	info, err := h.s.svc.AddCluster(c.Request().Context(), in)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, "/api/v1/clusters/"+url.PathEscape(info.Name))
	return c.JSON(http.StatusCreated, info)
}

func (h *clustersAPI) apiRemoveCluster(c echo.Context) error {
	if err := h.s.svc.RemoveCluster(c.Request().Context(), c.Param("name")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// DecodeJSON reads a request body into v strictly: unknown fields, wrong
// types, trailing data and an empty body are invalid_request errors that say
// what is wrong, never a 500.
func DecodeJSON(c echo.Context, v any) error {
	dec := json.NewDecoder(c.Request().Body)
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return &service.Error{Code: service.CodeInvalidRequest, Message: describeJSONError(err)}
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return &service.Error{Code: service.CodeInvalidRequest, Message: "the body must hold exactly one JSON object"}
	}
	return nil
}

func describeJSONError(err error) string {
	var syn *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, io.EOF):
		return "the body is empty: send a JSON object"
	case errors.As(err, &syn):
		return fmt.Sprintf("the body is not valid JSON (at byte %d): %v", syn.Offset, err)
	case errors.As(err, &typ):
		if typ.Field != "" {
			return fmt.Sprintf("field %q must be a JSON %s, not %s", typ.Field, jsonKind(typ), typ.Value)
		}
		return fmt.Sprintf("the body must be a JSON object, not %s", typ.Value)
	default:
		// Unknown fields and unexpected EOF read well as they are.
		return "the body could not be read: " + err.Error()
	}
}

func jsonKind(typ *json.UnmarshalTypeError) string {
	switch typ.Type.Kind().String() {
	case "slice", "array":
		return "array"
	case "string":
		return "string"
	case "bool":
		return "boolean"
	case "struct", "map":
		return "object"
	default:
		return "number"
	}
}

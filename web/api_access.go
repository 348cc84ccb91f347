package web

import (
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"

	"github.com/labstack/echo/v4"

	"github.com/kmirror/kmirror/internal/service"
)

// userList is the body of GET /api/v1/users.
type userList struct {
	Users []service.UserInfo `json:"users"`
}

// tokenList is the body of GET /api/v1/tokens.
type tokenList struct {
	Tokens []service.TokenInfo `json:"tokens"`
}

// auditList is the body of GET /api/v1/audit.
type auditList struct {
	Entries []service.AuditEntry `json:"entries"`
}

// accessAPI are the console's users, the API tokens and the audit log
// (admins; the service checks).
type accessAPI struct{ s *Server }

func (h *accessAPI) routes(g *echo.Group) {
	g.GET("/users", h.apiListUsers)
	g.POST("/users", h.apiCreateUser)
	g.PATCH("/users/:name", h.apiChangeUser)
	g.DELETE("/users/:name", h.apiDeleteUser)
	g.GET("/tokens", h.apiListTokens)
	g.POST("/tokens", h.apiCreateToken)
	g.DELETE("/tokens/:name", h.apiRevokeToken)
	g.GET("/destination-policy", h.apiDestinationPolicy)
	g.PUT("/destination-policy", h.apiSetDestinationPolicy)
	g.GET("/audit", h.apiAudit)
	g.GET("/audit/export", h.s.exportAudit)
}

func (h *accessAPI) apiListUsers(c echo.Context) error {
	us, err := h.s.svc.ListUsers(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, userList{Users: us})
}

func (h *accessAPI) apiCreateUser(c echo.Context) error {
	var in service.NewUser
	if err := DecodeJSON(c, &in); err != nil {
		return err
	}
	u, err := h.s.svc.CreateUser(c.Request().Context(), in)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderLocation, "/api/v1/users/"+url.PathEscape(u.Name))
	return c.JSON(http.StatusCreated, u)
}

func (h *accessAPI) apiChangeUser(c echo.Context) error {
	var ch service.UserChange
	if err := DecodeJSON(c, &ch); err != nil {
		return err
	}
	u, err := h.s.svc.ChangeUser(c.Request().Context(), c.Param("name"), ch)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, u)
}

func (h *accessAPI) apiDeleteUser(c echo.Context) error {
	if err := h.s.svc.DeleteUser(c.Request().Context(), c.Param("name")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

func (h *accessAPI) apiListTokens(c echo.Context) error {
	ts, err := h.s.svc.ListTokens(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, tokenList{Tokens: ts})
}

func (h *accessAPI) apiCreateToken(c echo.Context) error {
	var in service.NewToken
	if err := DecodeJSON(c, &in); err != nil {
		return err
	}
	t, err := h.s.svc.CreateToken(c.Request().Context(), in)
	if err != nil {
		return err
	}
	c.Response().Header().Set(echo.HeaderCacheControl, "no-store")
	return c.JSON(http.StatusCreated, t)
}

func (h *accessAPI) apiRevokeToken(c echo.Context) error {
	if err := h.s.svc.RevokeToken(c.Request().Context(), c.Param("name")); err != nil {
		return err
	}
	return c.NoContent(http.StatusNoContent)
}

// auditFilter reads ?actor=&action=&outcome=&before=&limit= (action and
// outcome match as prefixes).
func auditFilter(c echo.Context) service.AuditFilter {
	f := service.AuditFilter{Actor: c.QueryParam("actor"), Action: c.QueryParam("action"), Outcome: c.QueryParam("outcome")}
	f.BeforeID, _ = strconv.ParseInt(c.QueryParam("before"), 10, 64)
	f.Limit, _ = strconv.Atoi(c.QueryParam("limit"))
	return f
}

func (h *accessAPI) apiAudit(c echo.Context) error {
	es, err := h.s.svc.Audit(c.Request().Context(), auditFilter(c))
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, auditList{Entries: es})
}

// exportAudit writes every entry the filter selects as JSON lines, newest
// first, a page at a time so a long log is never held in memory; the API
// and the console's download both answer with it.
func (s *Server) exportAudit(c echo.Context) error {
	f := auditFilter(c)
	f.Limit = 1000
	first, err := s.svc.Audit(c.Request().Context(), f)
	if err != nil {
		return err
	}
	h := c.Response().Header()
	h.Set(echo.HeaderContentType, "application/x-ndjson")
	h.Set(echo.HeaderContentDisposition, `attachment; filename="kmirror-audit.jsonl"`)
	c.Response().WriteHeader(http.StatusOK)
	enc := json.NewEncoder(c.Response())
	for page := first; len(page) > 0; {
		for _, e := range page {
			if err := enc.Encode(e); err != nil {
				return nil // the client went away
			}
		}
		f.BeforeID = page[len(page)-1].ID
		if page, err = s.svc.Audit(c.Request().Context(), f); err != nil {
			s.log.Error("audit export stopped", "err", err)
			return nil
		}
	}
	return nil
}

func (h *accessAPI) apiDestinationPolicy(c echo.Context) error {
	p, err := h.s.svc.DestinationPolicy(c.Request().Context())
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, p)
}

func (h *accessAPI) apiSetDestinationPolicy(c echo.Context) error {
	var in service.DestinationPolicy
	if err := DecodeJSON(c, &in); err != nil {
		return err
	}
	p, err := h.s.svc.SetDestinationPolicy(c.Request().Context(), in)
	if err != nil {
		return err
	}
	return c.JSON(http.StatusOK, p)
}

package web

import (
	"errors"
	"net/http"
	"strings"

	"github.com/labstack/echo/v4"

	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/views"
)

// apiErrorBody is the JSON shape of every API error (/api/v1/openapi.json).
type apiErrorBody struct {
	Error apiError `json:"error"`
}

type apiError struct {
	Code     service.Code      `json:"code"`
	Message  string            `json:"message"`
	Problems []service.Problem `json:"problems"`
}

// writeAPIError answers err in the API's error shape, with the status
// forced when status > 0 (echo's own errors, such as 405 or 413, keep
// theirs). A *service.Error keeps its code and problems; anything else is
// logged and reported as internal without details.
func (s *Server) writeAPIError(c echo.Context, err error, status int) error {
	e := service.AsError(err)
	if status == 0 {
		status = e.Code.HTTPStatus()
	}
	if e.Code == service.CodeInternal {
		s.log.Error("request failed", "request_id", RequestID(c), "method", c.Request().Method, "path", c.Request().URL.Path, "err", err)
	}
	if e.RetryAfter > 0 {
		c.Response().Header().Set("Retry-After", retryAfterSeconds(e))
	}
	problems := e.Problems
	if problems == nil {
		problems = service.Problems{}
	}
	return c.JSON(status, apiErrorBody{Error: apiError{Code: e.Code, Message: e.Message, Problems: problems}})
}

// keyJSONErrors marks a console route whose errors are JSON (data fetched
// by scripts), as every API route's are.
const keyJSONErrors = "kmirror.json_errors"

// jsonErrors is the route middleware for such console routes.
func jsonErrors(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		c.Set(keyJSONErrors, true)
		return next(c)
	}
}

func wantsJSONError(c echo.Context) bool {
	forced, _ := c.Get(keyJSONErrors).(bool)
	return forced || strings.HasPrefix(c.Request().URL.Path, "/api/")
}

// handleError is echo's one stop for errors handlers return: routing
// errors (404, 405), CSRF rejections, body limits, and errors from the
// service. Handlers return errors rather than write them, so every error
// answer is made here: API paths (and jsonErrors routes) get the API's JSON
// error body, the console an error page.
func (s *Server) handleError(err error, c echo.Context) {
	if c.Response().Committed {
		return
	}
	var he *echo.HTTPError
	status := 0
	if errors.As(err, &he) {
		err, status = fromHTTPError(he), he.Code
	}
	if wantsJSONError(c) {
		if werr := s.writeAPIError(c, err, status); werr != nil {
			s.log.Warn("could not write error response", "err", werr)
		}
		return
	}
	e := service.AsError(err)
	if e.Code == service.CodeInternal {
		s.log.Error("request failed", "request_id", RequestID(c), "method", c.Request().Method, "path", c.Request().URL.Path, "err", err)
	}
	if status == 0 {
		status = e.Code.HTTPStatus()
	}
	if c.Request().Method == http.MethodHead {
		_ = c.NoContent(status)
		return
	}
	p := s.PageData(c, http.StatusText(status), "")
	if err := Render(c, status, views.ErrorPage(p, http.StatusText(status), e.Message, RequestID(c))); err != nil {
		s.log.Warn("could not render error page", "err", err)
	}
}

// fromHTTPError turns echo's routing and middleware errors into the
// catalogue's codes, keeping the status.
func fromHTTPError(he *echo.HTTPError) error {
	msg, _ := he.Message.(string)
	if msg == "" {
		msg = http.StatusText(he.Code)
	}
	switch {
	case he.Code == http.StatusNotFound:
		return &service.Error{Code: service.CodeNotFound, Message: "no such page or endpoint"}
	case he.Code == http.StatusUnauthorized:
		return &service.Error{Code: service.CodeUnauthorized, Message: msg}
	case he.Code >= 400 && he.Code < 500:
		return &service.Error{Code: service.CodeInvalidRequest, Message: msg}
	default:
		return he
	}
}

package web

import (
	"log/slog"
	"net/http"
	"regexp"
	"strings"

	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"
)

// keyActor is set by authentication that is not the console session (the
// API token) to the name the request log shows as its actor.
const keyActor = "actor"

// keyRequestID holds the request's id in the echo context.
const keyRequestID = "request_id"

// safeRequestID is what an incoming X-Request-Id must look like to be kept
// (a proxy's or caller's correlation id): short, and nothing that could
// forge a log line or inject markup. Anything else is replaced by our own.
var safeRequestID = regexp.MustCompile(`^[A-Za-z0-9._:-]{1,64}$`)

// requestID gives every request an id, echoed in the X-Request-Id
// response header, kept in the context for error pages and logged with the
// request.
func requestID() []echo.MiddlewareFunc {
	dropUnsafe := func(next echo.HandlerFunc) echo.HandlerFunc {
		return func(c echo.Context) error {
			h := c.Request().Header
			if id := h.Get(echo.HeaderXRequestID); id != "" && !safeRequestID.MatchString(id) {
				h.Del(echo.HeaderXRequestID)
			}
			return next(c)
		}
	}
	return []echo.MiddlewareFunc{dropUnsafe, middleware.RequestIDWithConfig(middleware.RequestIDConfig{
		RequestIDHandler: func(c echo.Context, id string) { c.Set(keyRequestID, id) },
	})}
}

// RequestID is the id of the request being served ("" outside one).
func RequestID(c echo.Context) string {
	id, _ := c.Get(keyRequestID).(string)
	return id
}

// actor is who made the request, as far as it is known once it is served:
// the signed-in user, the API token's name, or "" (anonymous or refused).
func actor(c echo.Context) string {
	if a, _ := c.Get(keyActor).(string); a != "" {
		return a
	}
	return CurrentUser(c)
}

// logRequests logs one line per request with its id, actor, status and
// duration. Errors are handed to the error handler first so the status is
// the one sent. The query string is left out: it is not ours to log.
// Probes, scrapes and static files log at debug: they would drown the rest.
func (s *Server) logRequests() echo.MiddlewareFunc {
	return middleware.RequestLoggerWithConfig(middleware.RequestLoggerConfig{
		HandleError:  true,
		LogLatency:   true,
		LogMethod:    true,
		LogURIPath:   true,
		LogRequestID: true,
		LogStatus:    true,
		LogValuesFunc: func(c echo.Context, v middleware.RequestLoggerValues) error {
			level := slog.LevelInfo
			if v.URIPath == "/healthz" || v.URIPath == "/metrics" || strings.HasPrefix(v.URIPath, "/static/") {
				level = slog.LevelDebug
			}
			if v.Status >= http.StatusInternalServerError {
				level = slog.LevelWarn
			}
			s.log.LogAttrs(c.Request().Context(), level, "http request",
				slog.String("request_id", v.RequestID),
				slog.String("method", v.Method),
				slog.String("path", v.URIPath),
				slog.String("actor", actor(c)),
				slog.Int("status", v.Status),
				slog.Duration("duration", v.Latency))
			return nil
		},
	})
}

// Package web is kmirror's HTTP face: the server-rendered console (templ
// views, htmx, session sign-in, CSRF-protected forms) and the JSON API, both
// thin layers over internal/service.
//
// Each area of the console and of the API is a struct with its handlers
// and a routes method (see area); New lists them. Handlers return errors,
// which handleError answers: the API's JSON error body on /api/ paths, an
// error page in the console. Views render view models built here
// (viewmodels.go), never the service's types.
//
// Invariants: every console route except sign-in, health and static assets
// requires a signed-in session (timed and revocable on the server); every API
// route requires a bearer token; both put the caller (service.Actor) in the
// request context, so the service checks its role; a request for a host name
// that is not this console's is refused; bad input is a 4xx with the
// service's error code, never a 500; a Kafka password is never rendered or
// returned. docs/DESIGN.md ("Access control") has the whole picture.
package web

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/gorilla/sessions"
	"github.com/labstack/echo/v4"
	"github.com/labstack/echo/v4/middleware"

	"github.com/kmirror/kmirror/internal/history"
	"github.com/kmirror/kmirror/internal/i18n"
	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/static"
)

// Deps are what the server needs.
type Deps struct {
	Service *service.Service
	// DataDir holds the session keys (session.key), created on first start
	// so sessions survive restarts.
	DataDir string
	// APIToken is the bearer token of the JSON API.
	APIToken string
	Logger   *slog.Logger
	// SecureCookies marks cookies Secure with __Host- names and sends HSTS;
	// it is implied by TLS and by an https PublicURL (a TLS proxy in front).
	// Plain http on 127.0.0.1 needs it off.
	SecureCookies bool
	// TLS, when set (with its certificates), makes Serve answer HTTPS only.
	TLS *tls.Config
	// PublicURL is where users reach the console, for example through a
	// proxy; optional. Its host joins the Host allow-list and its origin
	// may post forms.
	PublicURL *url.URL
	// TrustedProxies are the networks whose X-Forwarded-For is believed;
	// from anyone else the connection's address is the client's.
	TrustedProxies []*net.IPNet
	// TrustedOrigins (scheme://host[:port]) may post console forms besides
	// the console's own origin; same-site origins are not trusted otherwise.
	TrustedOrigins []string
	// MetricsToken, when set, is the bearer token /metrics requires.
	MetricsToken string
	// Ping reports whether storage answers, for /healthz; optional.
	Ping func(context.Context) error
	// Metrics serves GET /metrics (Prometheus); optional.
	Metrics http.Handler
	// Now is the clock sessions are timed by; optional (time.Now), tests
	// set it.
	Now func() time.Time
	// History feeds the task page's charts and recent errors; optional
	// (without it they stay empty).
	History *history.Sampler
}

// Server is the console and API server.
type Server struct {
	svc      *service.Service
	log      *slog.Logger
	sessions *sessions.CookieStore
	token    string
	ping     func(context.Context) error
	secure   bool
	i18n     *i18n.Catalog
	history  *history.Sampler
	tls      *tls.Config

	allowedHosts map[string]bool
	metricsToken bool // /metrics needs its own token
	sessionName  string
	langCookie   string
	now          func() time.Time
	crossOrigin  *http.CrossOriginProtection

	e *echo.Echo
}

// area is one part of the console or the API (instances, Smart Connect,
// tasks, access, ...): a struct holding what its handlers need, whose
// routes method adds them to the group it is given.
type area interface {
	routes(g *echo.Group)
}

// New builds the server and its routes.
func New(d Deps) (*Server, error) {
	if d.Service == nil {
		return nil, errors.New("web: Service is required")
	}
	if d.APIToken == "" {
		return nil, errors.New("web: APIToken is required: set KMIRROR_TOKEN or let kmirror generate one")
	}
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	secure := d.SecureCookies || d.TLS != nil || (d.PublicURL != nil && d.PublicURL.Scheme == "https")
	store, err := newSessionStore(d.DataDir, secure)
	if err != nil {
		return nil, err
	}
	s := &Server{svc: d.Service, log: d.Logger, sessions: store, token: d.APIToken, ping: d.Ping, secure: secure,
		i18n: i18n.Default(), history: d.History, tls: d.TLS, allowedHosts: map[string]bool{},
		sessionName: cookieName(sessionName, secure), langCookie: cookieName(langCookie, secure), now: d.Now}
	if s.now == nil {
		s.now = time.Now
	}
	if d.History != nil {
		// A deleted task's charts and errors go with it, whoever deleted it.
		d.Service.OnTaskDeleted(d.History.Forget)
	}
	if d.PublicURL != nil {
		s.allowedHosts[strings.ToLower(d.PublicURL.Hostname())] = true
	}
	if s.crossOrigin, err = newCrossOrigin(d.PublicURL, d.TrustedOrigins); err != nil {
		return nil, err
	}

	e := echo.New()
	e.HideBanner, e.HidePort = true, true
	// X-Forwarded-For only from the configured proxies: the sign-in throttle
	// keys on the address, and a forged header would reset it.
	e.IPExtractor = echo.ExtractIPDirect()
	if len(d.TrustedProxies) > 0 {
		opts := []echo.TrustOption{echo.TrustLoopback(false), echo.TrustLinkLocal(false), echo.TrustPrivateNet(false)}
		for _, n := range d.TrustedProxies {
			opts = append(opts, echo.TrustIPRange(n))
		}
		e.IPExtractor = echo.ExtractIPFromXFFHeader(opts...)
	}
	e.HTTPErrorHandler = s.handleError
	// The request id and log wrap everything else, Recover included, so a
	// recovered panic is logged as the 500 it became (web/requestid.go).
	e.Use(requestID()...)
	e.Use(
		s.logRequests(),
		middleware.Recover(),
		s.checkHost,
		middleware.BodyLimit("1M"),
		// Before csrf, which reads the form: the cap holds for every byte.
		middleware.BodyLimitWithConfig(middleware.BodyLimitConfig{Limit: smallBodyLimit, Skipper: notSmallBody}),
		s.securityHeaders,
		s.localize,
		s.csrf,
	)
	e.StaticFS("/static", static.FS)
	e.GET("/healthz", s.healthz)
	// Browsers ask for it on every page; an empty answer keeps 404s out of
	// their consoles and our logs.
	e.GET("/favicon.ico", func(c echo.Context) error { return c.NoContent(http.StatusNoContent) })
	e.GET("/lang", s.setLanguage)

	// Each area of the console and the API is a struct with what its
	// handlers need and the routes it answers (routes); handlers return
	// their errors to handleError, which answers them.
	(&sessionPages{s: s}).routes(e.Group(""))
	console := e.Group("", s.requireUser)
	console.GET("/", func(c echo.Context) error { return c.Redirect(http.StatusSeeOther, "/instances") })
	for _, a := range []area{
		&instancePages{s: s},
		newSmartConnectPages(s),
		&connectClusterPages{s: s},
		&mm2Pages{s: s},
		&dashboardPages{s: s},
		&taskPages{s: s},
		&switchoverPages{s: s},
		&accessPages{s: s},
	} {
		a.routes(console)
	}
	api := e.Group("/api/v1", s.requireToken)
	for _, a := range []area{
		&clustersAPI{s: s},
		&connectAPI{s: s},
		&tasksAPI{s: s},
		&accessAPI{s: s},
	} {
		a.routes(api)
	}
	// Public like /healthz: it describes the API, holds no data, and tools
	// fetch it before they have a token.
	e.GET("/api/v1/openapi.json", s.openAPI)
	if d.Metrics != nil {
		// Prometheus scrapes without the API token: with no metrics token,
		// bind the console to loopback or a private network (the default
		// listen is 127.0.0.1); the Host check keeps rebound names out.
		m := d.Metrics
		if d.MetricsToken != "" {
			m = requireMetricsToken(d.MetricsToken, m)
			s.metricsToken = true
		}
		e.GET("/metrics", echo.WrapHandler(m))
	}

	s.e = e
	return s, nil
}

// Handler is the server's http.Handler, for tests and embedding.
func (s *Server) Handler() http.Handler { return s.e }

// Serve answers on ln until ctx is done, then shuts down gracefully, letting
// requests in flight finish for up to 10 seconds.
func (s *Server) Serve(ctx context.Context, ln net.Listener) error {
	if s.tls != nil {
		cfg := s.tls.Clone()
		cfg.MinVersion = max(cfg.MinVersion, tls.VersionTLS12)
		ln = tls.NewListener(ln, cfg)
	}
	hs := &http.Server{
		Handler:           s.e,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       60 * time.Second,
		IdleTimeout:       120 * time.Second,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
	}
	errc := make(chan error, 1)
	go func() { errc <- hs.Serve(ln) }()
	select {
	case err := <-errc:
		return fmt.Errorf("console server stopped: %w", err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := hs.Shutdown(shutdownCtx); err != nil {
		return fmt.Errorf("shut down console server: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

func (s *Server) healthz(c echo.Context) error {
	if s.ping != nil {
		if err := s.ping(c.Request().Context()); err != nil {
			s.log.Error("health check failed", "err", err)
			return c.JSON(http.StatusServiceUnavailable, map[string]string{"status": "unavailable"})
		}
	}
	return c.JSON(http.StatusOK, map[string]string{"status": "ok"})
}

// smallBodyLimit caps what the account endpoints read: a name, a role, a
// password or two and an expiry fit in far less; a bigger body is refused
// (413) before anything, the audit log included, sees it.
const smallBodyLimit = "16K"

// notSmallBody skips the small cap for every path but the accounts' own:
// signing in, one's password, users and tokens, in the console and the API.
func notSmallBody(c echo.Context) bool {
	p := c.Request().URL.Path
	for _, prefix := range []string{"/signin", "/signout", "/account", "/users", "/tokens", "/api/v1/users", "/api/v1/tokens"} {
		if p == prefix || strings.HasPrefix(p, prefix+"/") {
			return false
		}
	}
	return true
}

package web

import (
	"crypto/rand"
	"crypto/subtle"
	"fmt"
	"net/http"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	"github.com/gorilla/sessions"
	"github.com/labstack/echo/v4"

	"github.com/kmirror/kmirror/internal/secrets"
	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/views"
)

const (
	sessionName = "kmirror_session"
	// SessionKeyFile holds the cookie signing and encryption keys in the data
	// directory, so sign-ins survive a restart.
	SessionKeyFile = "session.key"
	// SessionAbsolute is the longest a sign-in lasts. It and SessionIdle are
	// checked on the server against times the session carries, not left to
	// the browser.
	SessionAbsolute = service.MaxSessionAge
	// SessionIdle is how long a sign-in lasts without a request.
	SessionIdle = 2 * time.Hour
	// seenEvery is how stale the session's last-seen time may get before a
	// request rewrites the cookie, so not every request sets one.
	seenEvery = time.Minute

	keyUser    = "user"
	keyRole    = "role"
	keyAccount = "account" // the account's immutable identity
	keySession = "sid"     // the session's secret; the server keeps its hash
	keyIAT     = "iat"     // unix seconds the session was signed in
	keySeen    = "seen"    // unix seconds of the last request
	keyCSRF    = "csrf"
)

// cookieName gives secure cookies the __Host- prefix, which browsers accept
// only from HTTPS, for path /, without a domain: a sibling site cannot plant
// or overwrite them.
func cookieName(name string, secure bool) string {
	if secure {
		return "__Host-" + name
	}
	return name
}

func newSessionStore(dataDir string, secure bool) (*sessions.CookieStore, error) {
	keys, err := secrets.LoadOrCreate(filepath.Join(dataDir, SessionKeyFile), 64)
	if err != nil {
		return nil, fmt.Errorf("load session keys: %w", err)
	}
	// First half authenticates the cookie (HMAC), second half encrypts it
	// (AES-256), so its content is neither forgeable nor readable.
	st := sessions.NewCookieStore(keys[:32], keys[32:])
	st.Options = &sessions.Options{
		Path:     "/",
		HttpOnly: true,
		Secure:   secure,
		SameSite: http.SameSiteLaxMode,
	}
	// Sets the cookie's Max-Age and, unlike Options alone, the codec's
	// limit too (gorilla's default accepts 30-day-old cookies).
	st.MaxAge(int(SessionAbsolute / time.Second))
	return st, nil
}

// session returns the request's session; an unreadable cookie (for example
// signed with old keys, or older than SessionAbsolute) yields a fresh one,
// which means "signed out".
func (s *Server) session(c echo.Context) *sessions.Session {
	sess, _ := s.sessions.Get(c.Request(), s.sessionName)
	return sess
}

func (s *Server) saveSession(c echo.Context, sess *sessions.Session) error {
	if err := sess.Save(c.Request(), c.Response()); err != nil {
		return fmt.Errorf("save session: %w", err)
	}
	return nil
}

// startSession makes sess a fresh sign-in of p: nothing of the anonymous
// session before it is kept (its CSRF token included), so a planted
// session cannot be carried into a signed-in one.
func (s *Server) startSession(c echo.Context, sess *sessions.Session, p service.Principal) error {
	// A sign-in over a signed-in session ends the old one on the server.
	if old, _ := sess.Values[keySession].(string); old != "" {
		if err := s.svc.EndSession(c.Request().Context(), service.Principal{SessionID: old}); err != nil {
			return err
		}
	}
	now := s.now().Unix()
	for k := range sess.Values {
		delete(sess.Values, k)
	}
	sess.Values[keyUser] = p.Name
	sess.Values[keyRole] = string(p.Role) // gob: a plain string, no registered type
	sess.Values[keyAccount] = p.AccountID
	sess.Values[keySession] = p.SessionID
	sess.Values[keyIAT] = now
	sess.Values[keySeen] = now
	sess.Values[keyCSRF] = rand.Text()
	c.Set("csrf", sess.Values[keyCSRF])
	return s.saveSession(c, sess)
}

// endSession ends the session on the server, so a copy of its cookie
// stops working too, and drops the cookie.
func (s *Server) endSession(c echo.Context, sess *sessions.Session) error {
	sid, _ := sess.Values[keySession].(string)
	if err := s.svc.EndSession(c.Request().Context(), service.Principal{SessionID: sid}); err != nil {
		return err
	}
	for k := range sess.Values {
		delete(sess.Values, k)
	}
	sess.Options.MaxAge = -1
	return s.saveSession(c, sess)
}

// signedIn checks the session's times and epoch and returns its account as
// it is now; ok is false when the session is not (or no longer) signed in.
func (s *Server) signedIn(c echo.Context, sess *sessions.Session) (p service.Principal, ok bool, err error) {
	name, _ := sess.Values[keyUser].(string)
	if name == "" {
		return p, false, nil
	}
	iat, _ := sess.Values[keyIAT].(int64)
	seen, _ := sess.Values[keySeen].(int64)
	account, _ := sess.Values[keyAccount].(string)
	sid, _ := sess.Values[keySession].(string)
	now := s.now()
	if now.Sub(time.Unix(iat, 0)) > SessionAbsolute || now.Sub(time.Unix(seen, 0)) > SessionIdle {
		return p, false, nil
	}
	p, err = s.svc.SessionUser(c.Request().Context(), service.Principal{Name: name, AccountID: account, SessionID: sid})
	if service.IsCode(err, service.CodeUnauthorized) {
		return p, false, nil
	}
	if err != nil {
		return p, false, err
	}
	if now.Sub(time.Unix(seen, 0)) > seenEvery {
		sess.Values[keySeen] = now.Unix()
		if err := s.saveSession(c, sess); err != nil {
			return p, false, err
		}
	}
	return p, true, nil
}

// csrf protects console forms. A state-changing request must come from the
// console's own origin or a configured trusted one (same-site origins are
// not trusted: Go's CrossOriginProtection over Sec-Fetch-Site and Origin),
// and carry the token of its session, in the _csrf form field or the
// X-CSRF-Token header (app.js sets it on htmx requests). The token lives in
// the session, not in a cookie of its own a sibling origin could plant.
// The API is exempt: it uses a bearer token, never cookies.
func (s *Server) csrf(next echo.HandlerFunc) echo.HandlerFunc {
	return func(c echo.Context) error {
		r := c.Request()
		p := r.URL.Path
		if strings.HasPrefix(p, "/api/") || strings.HasPrefix(p, "/static/") || p == "/healthz" || p == "/metrics" {
			return next(c)
		}
		sess := s.session(c)
		tok, _ := sess.Values[keyCSRF].(string)
		switch r.Method {
		case http.MethodGet, http.MethodHead, http.MethodOptions:
		default:
			if err := s.crossOrigin.Check(r); err != nil {
				return echo.NewHTTPError(http.StatusForbidden, "This form did not come from this console: open the console at its own address and try again.").SetInternal(err)
			}
			given := r.Header.Get(echo.HeaderXCSRFToken)
			if given == "" {
				given = c.FormValue("_csrf")
			}
			if tok == "" || subtle.ConstantTimeCompare([]byte(tok), []byte(given)) != 1 {
				return echo.NewHTTPError(http.StatusForbidden, "This form has expired or did not come from this console: reload the page and try again.")
			}
		}
		if tok == "" {
			tok = rand.Text()
			sess.Values[keyCSRF] = tok
			if err := s.saveSession(c, sess); err != nil {
				return err
			}
		}
		c.Set("csrf", tok)
		c.Response().Header().Add(echo.HeaderVary, echo.HeaderCookie)
		return next(c)
	}
}

// newCrossOrigin is the cross-origin check of console forms: the console's
// own origin always passes; publicURL's and trusted's are added.
func newCrossOrigin(publicURL *url.URL, trusted []string) (*http.CrossOriginProtection, error) {
	cop := http.NewCrossOriginProtection()
	if publicURL != nil {
		if err := cop.AddTrustedOrigin(publicURL.Scheme + "://" + publicURL.Host); err != nil {
			return nil, fmt.Errorf("public URL: %w", err)
		}
	}
	for _, o := range trusted {
		if err := cop.AddTrustedOrigin(o); err != nil {
			return nil, fmt.Errorf("trusted origin %q: %w (give it as https://host[:port])", o, err)
		}
	}
	return cop, nil
}

// AddFlash queues a banner for the next page the user sees (after a
// redirect). kind is views.FlashSuccess or views.FlashError.
func (s *Server) AddFlash(c echo.Context, kind, message string) error {
	sess := s.session(c)
	sess.AddFlash(message, "flash_"+kind)
	return s.saveSession(c, sess)
}

// popFlashes takes the queued banners out of the session.
func (s *Server) popFlashes(c echo.Context) []views.Flash {
	sess := s.session(c)
	var out []views.Flash
	for _, kind := range []string{views.FlashSuccess, views.FlashError} {
		for _, f := range sess.Flashes("flash_" + kind) {
			if msg, ok := f.(string); ok {
				out = append(out, views.Flash{Kind: kind, Message: msg})
			}
		}
	}
	if len(out) > 0 {
		if err := s.saveSession(c, sess); err != nil {
			s.log.Warn("could not clear flash messages", "err", err)
		}
	}
	return out
}

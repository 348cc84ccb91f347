package web

import (
	"fmt"
	"net/http"
	"path/filepath"

	"github.com/gorilla/sessions"
	"github.com/labstack/echo/v4"

	"github.com/kmirror/kmirror/internal/secrets"
	"github.com/kmirror/kmirror/views"
)

const (
	sessionName = "kmirror_session"
	// SessionKeyFile holds the cookie signing and encryption keys in the data
	// directory, so sign-ins survive a restart.
	SessionKeyFile = "session.key"
	sessionMaxAge  = 12 * 60 * 60
	keyUser        = "user"
)

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
		MaxAge:   sessionMaxAge,
		HttpOnly: true,
		Secure:   secure,
		SameSite: http.SameSiteLaxMode,
	}
	return st, nil
}

// session returns the request's session; an unreadable cookie (for example
// signed with old keys) yields a fresh one, which means "signed out".
func (s *Server) session(c echo.Context) *sessions.Session {
	sess, _ := s.sessions.Get(c.Request(), sessionName)
	return sess
}

func (s *Server) saveSession(c echo.Context, sess *sessions.Session) error {
	if err := sess.Save(c.Request(), c.Response()); err != nil {
		return fmt.Errorf("save session: %w", err)
	}
	return nil
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

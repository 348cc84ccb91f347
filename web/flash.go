package web

import (
	"unicode/utf8"

	"github.com/labstack/echo/v4"

	"github.com/kmirror/kmirror/internal/i18n"
	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/views"
)

// Banners travel to the next page in the session cookie, which browsers cap
// at 4 KB once signed, encrypted and encoded. maxFlashText bounds the text
// the banners of one response may take, with room left for the rest of the
// session; minFlashText is the least worth showing of a banner.
const (
	maxFlashText = 1500
	minFlashText = 120
)

// flash queues banners for the next page after an action that took place.
// What would not fit the cookie is shortened (a trailing "…"), banners past
// the room are counted in a last one, and should the session refuse them
// anyway they are dropped with a log line: an error page after the change
// was made would say it failed and invite the user to make it again.
func (s *Server) flash(c echo.Context, banners ...views.Flash) {
	left := maxFlashText
	for i, b := range banners {
		if left < minFlashText && i < len(banners)-1 {
			more := tr(c, "flash.more", "Count", len(banners)-i)
			s.addFlash(c, views.Flash{Kind: views.FlashError, Message: more})
			return
		}
		b.Message = shorten(b.Message, max(left, minFlashText))
		left -= len(b.Message)
		if !s.addFlash(c, b) {
			return
		}
	}
}

// createdBanners say a task was created, with its warnings.
func createdBanners(c echo.Context, info service.TaskInfo) []views.Flash {
	out := []views.Flash{{Kind: views.FlashSuccess, Message: tr(c, "task.created", "Name", info.Name)}}
	for _, w := range info.Warnings {
		out = append(out, views.Flash{Kind: views.FlashError, Message: tr(c, "flash.warning", "Text", i18n.Msg(c.Request().Context(), w))})
	}
	return out
}

func (s *Server) addFlash(c echo.Context, b views.Flash) bool {
	if err := s.AddFlash(c, b.Kind, b.Message); err != nil {
		s.log.Warn("a banner for the next page was dropped", "kind", b.Kind, "bytes", len(b.Message), "err", err)
		return false
	}
	return true
}

// shorten cuts s to at most n bytes, on a character boundary, marking the
// cut with "…".
func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	const ellipsis = "…"
	cut := n - len(ellipsis)
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:max(cut, 0)] + ellipsis
}

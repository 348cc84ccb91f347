package web

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestShorten(t *testing.T) {
	for _, c := range []struct {
		in   string
		n    int
		want string
	}{
		{"short", 10, "short"},
		{"exactly10!", 10, "exactly10!"},
		{"a longer message", 10, "a longe…"},
		{"任務創建成功了", 10, "任務…"}, // never half a character
	} {
		got := shorten(c.in, c.n)
		if got != c.want || len(got) > max(c.n, len(c.in)) || !utf8.ValidString(got) {
			t.Errorf("shorten(%q, %d) = %q, want %q", c.in, c.n, got, c.want)
		}
	}
	if got := shorten(strings.Repeat("x", 5000), maxFlashText); len(got) > maxFlashText {
		t.Errorf("shortened to %d bytes, more than %d", len(got), maxFlashText)
	}
}

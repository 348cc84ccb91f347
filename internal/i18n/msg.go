package i18n

import (
	"cmp"
	"context"
	"embed"
	"encoding/json"
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// The service layer speaks English: its messages (validation problems,
// warnings, errors) are made with fmt.Sprintf and go to the API as they
// are. The console translates them on display with Msg, gettext-style: a
// catalogue per language maps each English format to its translation, and
// a message is matched against the formats to recover its arguments. So
// the service needs no knowledge of languages, and a message without a
// translation shows in English rather than not at all.
//
// A translation uses the English format's verbs (%s, %q, %d, %v), in any
// order with explicit indexes (%[2]s). Arguments that are themselves
// messages (a %s or %v) are translated too.

//go:embed service/*.json
var serviceFiles embed.FS

type formatEntry struct {
	re    *regexp.Regexp
	verbs []byte // the English verbs, in argument order
	to    string // the translation, verbs rewritten to %[n]s
	lit   int    // literal length, to try the most specific format first
}

type formatCatalog struct {
	exact   map[string]string
	entries []formatEntry
}

var verbRE = regexp.MustCompile(`%(?:\[(\d+)\])?([sdqv%])`)

// compileFormat turns an English format into a pattern that recovers its
// arguments.
func compileFormat(format string) (*regexp.Regexp, []byte, int) {
	var b strings.Builder
	b.WriteString(`(?s)^`)
	var verbs []byte
	last, lit := 0, 0
	for _, m := range verbRE.FindAllStringSubmatchIndex(format, -1) {
		b.WriteString(regexp.QuoteMeta(format[last:m[0]]))
		lit += m[0] - last
		last = m[1]
		switch v := format[m[4]]; v {
		case '%':
			b.WriteString("%")
			lit++
		case 'd':
			b.WriteString(`(-?\d+)`)
			verbs = append(verbs, v)
		case 'q':
			b.WriteString(`("(?:[^"\\]|\\.)*")`)
			verbs = append(verbs, v)
		default:
			b.WriteString(`(.*?)`)
			verbs = append(verbs, v)
		}
	}
	b.WriteString(regexp.QuoteMeta(format[last:]))
	lit += len(format) - last
	b.WriteString(`$`)
	return regexp.MustCompile(b.String()), verbs, lit
}

// rewriteVerbs makes every verb of a translation a string verb with an
// explicit index, since the arguments come back as text (%q's with their
// quotes). It fails when a verb points past the English arguments.
func rewriteVerbs(to string, n int) (string, error) {
	next := 0
	var err error
	out := verbRE.ReplaceAllStringFunc(to, func(v string) string {
		m := verbRE.FindStringSubmatch(v)
		if m[2] == "%" {
			return "%%"
		}
		i := next
		if m[1] != "" {
			i, _ = strconv.Atoi(m[1])
			i--
		}
		next = i + 1
		if i < 0 || i >= n {
			err = fmt.Errorf("verb %s has no argument (the English format has %d)", v, n)
		}
		return "%[" + strconv.Itoa(i+1) + "]s"
	})
	return out, err
}

func loadFormats(lang string) (*formatCatalog, error) {
	raw, err := serviceFiles.ReadFile("service/" + lang + ".json")
	if err != nil {
		return nil, err
	}
	var m map[string]string
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("service/%s.json: %w", lang, err)
	}
	c := &formatCatalog{exact: map[string]string{}}
	for from, to := range m {
		re, verbs, lit := compileFormat(from)
		if len(verbs) == 0 && !strings.Contains(from, "%") {
			c.exact[from] = to
			continue
		}
		rw, err := rewriteVerbs(to, len(verbs))
		if err != nil {
			return nil, fmt.Errorf("service/%s.json: %q: %w", lang, from, err)
		}
		c.entries = append(c.entries, formatEntry{re: re, verbs: verbs, to: rw, lit: lit})
	}
	slices.SortFunc(c.entries, func(a, b formatEntry) int { return cmp.Compare(b.lit, a.lit) })
	return c, nil
}

var formatCatalogs = sync.OnceValue(func() map[string]*formatCatalog {
	out := map[string]*formatCatalog{}
	for _, l := range Langs[1:] {
		c, err := loadFormats(l.Tag)
		if err != nil {
			panic(err) // embedded files; TestServiceFormats keeps them loadable
		}
		out[l.Tag] = c
	}
	return out
})

// Msg translates a service message into the context's language; one it
// has no translation for stays as it is.
func Msg(ctx context.Context, s string) string {
	c := formatCatalogs()[LangOf(ctx)]
	if c == nil || s == "" {
		return s
	}
	return c.translate(s, 0)
}

func (c *formatCatalog) translate(s string, depth int) string {
	if to, ok := c.exact[s]; ok {
		return to
	}
	if depth > 3 {
		return s
	}
	for _, e := range c.entries {
		m := e.re.FindStringSubmatch(s)
		if m == nil {
			continue
		}
		args := make([]any, len(m)-1)
		for i, a := range m[1:] {
			if v := e.verbs[i]; v == 's' || v == 'v' {
				a = c.translate(a, depth+1)
			}
			args[i] = a
		}
		return fmt.Sprintf(e.to, args...)
	}
	// Messages joined with "; " (a check step's findings) are translated
	// part by part.
	if parts := strings.Split(s, "; "); len(parts) > 1 {
		changed := false
		for i, p := range parts {
			if t := c.translate(p, depth+1); t != p {
				parts[i], changed = t, true
			}
		}
		if changed {
			return strings.Join(parts, "；")
		}
	}
	return s
}

// Package i18n translates the console into its languages: English and
// Traditional Chinese (the original product's language, whose words the zh-TW file uses).
//
// The model: a Catalog holds every message of every language, loaded from
// the JSON files embedded under messages/ (one file per language, named by
// its BCP 47 tag, flat "area.thing" ids). Per request, Catalog.Localizer picks
// the language (the user's choice from a cookie, else Accept-Language, else
// English) and WithLocalizer puts it in the request's context, where views
// find it: T(ctx, "id") in templ and handlers alike.
//
// Invariants: every id exists in every language (a test enforces it, and that
// code uses no unknown ids); T never fails — an unknown id renders as the id
// itself, so a mistake is visible, not a blank or a 500.
package i18n

import (
	"context"
	"embed"
	"fmt"
	"io/fs"
	"path"
	"strings"
	"sync"

	goi18n "github.com/nicksnyder/go-i18n/v2/i18n"
	"golang.org/x/text/language"
)

//go:embed messages/*.json
var messageFiles embed.FS

// Lang is a language the console speaks.
type Lang struct {
	// Tag is the BCP 47 tag: "en", "zh-TW". It is the cookie value and the
	// html lang attribute.
	Tag string
	// Name is the language's own name, shown in the switch.
	Name string
}

// Langs are the console's languages, the default first.
var Langs = []Lang{{Tag: "en", Name: "EN"}, {Tag: "zh-TW", Name: "繁體中文"}}

// Catalog is every message in every language. It is read-only once built
// and safe for concurrent use.
type Catalog struct {
	bundle  *goi18n.Bundle
	tags    []language.Tag // in Langs order, for matching
	matcher language.Matcher
	ids     map[string]map[string]bool // lang tag -> ids, for the tests
}

// New loads the embedded message files.
func New() (*Catalog, error) {
	b := goi18n.NewBundle(language.English)
	c := &Catalog{bundle: b, ids: map[string]map[string]bool{}}
	for _, l := range Langs {
		file := path.Join("messages", l.Tag+".json")
		mf, err := b.LoadMessageFileFS(messageFiles, file)
		if err != nil {
			return nil, fmt.Errorf("i18n: load %s: %w", file, err)
		}
		ids := map[string]bool{}
		for _, m := range mf.Messages {
			ids[m.ID] = true
		}
		c.ids[l.Tag] = ids
		c.tags = append(c.tags, language.MustParse(l.Tag))
	}
	c.matcher = language.NewMatcher(c.tags)
	return c, nil
}

// defaultCatalog serves contexts without a localizer (component tests,
// error pages rendered before the middleware ran). The messages are
// compiled into the binary, so this is a constant, not shared state.
var defaultCatalog = sync.OnceValue(func() *Catalog {
	c, err := New()
	if err != nil {
		panic(err) // embedded files; TestCatalogLoads keeps them loadable
	}
	return c
})

// Default is the catalog of the embedded messages, loaded once.
func Default() *Catalog { return defaultCatalog() }

// IDs returns the message ids of a language, for tests and tools.
func (c *Catalog) IDs(lang string) map[string]bool { return c.ids[lang] }

// Localizer speaks one language.
type Localizer struct {
	lang string
	loc  *goi18n.Localizer
}

// Localizer picks the language: choice (the cookie) when it is one of ours,
// else the best match of acceptLanguage (the header), else English.
func (c *Catalog) Localizer(choice, acceptLanguage string) *Localizer {
	lang := Langs[0].Tag
	if l, ok := Find(choice); ok {
		lang = l.Tag
	} else if prefs, _, err := language.ParseAcceptLanguage(acceptLanguage); err == nil && len(prefs) > 0 {
		// Index, not the returned tag: Match adds extensions (-u-rg-...).
		if _, i, conf := c.matcher.Match(prefs...); conf != language.No {
			lang = Langs[i].Tag
		}
	}
	return &Localizer{lang: lang, loc: goi18n.NewLocalizer(c.bundle, lang)}
}

// Find returns the language with tag, ignoring case ("zh-tw" is zh-TW).
func Find(tag string) (Lang, bool) {
	for _, l := range Langs {
		if strings.EqualFold(l.Tag, tag) {
			return l, true
		}
	}
	return Lang{}, false
}

// Lang is the localizer's language tag.
func (l *Localizer) Lang() string { return l.lang }

// T translates id. args are name/value pairs for the message's template
// ({{.Name}}): T("task.created", "Name", name).
func (l *Localizer) T(id string, args ...any) string {
	var data map[string]any
	if len(args) > 0 {
		data = make(map[string]any, len(args)/2)
		for i := 0; i+1 < len(args); i += 2 {
			data[fmt.Sprint(args[i])] = args[i+1]
		}
	}
	s, err := l.loc.Localize(&goi18n.LocalizeConfig{MessageID: id, TemplateData: data})
	if err != nil || s == "" {
		return id
	}
	return s
}

type ctxKey struct{}

// WithLocalizer returns ctx carrying l.
func WithLocalizer(ctx context.Context, l *Localizer) context.Context {
	return context.WithValue(ctx, ctxKey{}, l)
}

// From returns the context's localizer, or an English one.
func From(ctx context.Context) *Localizer {
	if l, ok := ctx.Value(ctxKey{}).(*Localizer); ok && l != nil {
		return l
	}
	return englishLocalizer()
}

// englishLocalizer is From's fallback, built once.
var englishLocalizer = sync.OnceValue(func() *Localizer { return Default().Localizer(Langs[0].Tag, "") })

// T translates id in the context's language; see Localizer.T.
func T(ctx context.Context, id string, args ...any) string { return From(ctx).T(id, args...) }

// LangOf is the context's language tag, for <html lang> and the switch.
func LangOf(ctx context.Context) string { return From(ctx).Lang() }

// messageFS exposes the raw files to the tests of this package.
func messageFS() fs.FS { return messageFiles }

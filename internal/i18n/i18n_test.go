package i18n

import (
	"context"
	"encoding/json"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

func TestCatalogLoads(t *testing.T) {
	if _, err := New(); err != nil {
		t.Fatal(err)
	}
}

// rawMessages reads a message file as the flat id -> text map it is.
func rawMessages(t *testing.T, lang string) map[string]string {
	t.Helper()
	b, err := fs.ReadFile(messageFS(), "messages/"+lang+".json")
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]string
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("%s.json: %v (keep it a flat map of id to text)", lang, err)
	}
	return m
}

var placeholder = regexp.MustCompile(`\{\{\s*\.(\w+)\s*\}\}`)

func placeholders(s string) []string {
	var out []string
	for _, m := range placeholder.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// TestEveryMessageInEveryLanguage: a message missing in one language would
// fall back to English mid-page; a placeholder missing in a translation
// would silently drop a name or a number.
func TestEveryMessageInEveryLanguage(t *testing.T) {
	base := rawMessages(t, Langs[0].Tag)
	if len(base) == 0 {
		t.Fatal("no messages")
	}
	for _, l := range Langs[1:] {
		other := rawMessages(t, l.Tag)
		for id, text := range base {
			tr, ok := other[id]
			switch {
			case !ok:
				t.Errorf("%s: %q is missing (en: %q)", l.Tag, id, text)
			case strings.TrimSpace(tr) == "":
				t.Errorf("%s: %q is empty", l.Tag, id)
			case !slices.Equal(placeholders(text), placeholders(tr)):
				t.Errorf("%s: %q has placeholders %v, en has %v", l.Tag, id, placeholders(tr), placeholders(text))
			}
		}
		for id := range other {
			if _, ok := base[id]; !ok {
				t.Errorf("%s: %q is not in en.json: add it there or remove it", l.Tag, id)
			}
		}
	}
}

// idUse finds message ids in code: i18n.T(ctx, "id"), loc.T("id") and the
// web package's tr(c, "id").
var idUse = regexp.MustCompile(`\b(?:T|tr)\(\s*(?:[\w.()]+\s*,\s*)?"([^"]+)"`)

// TestCodeUsesKnownIDs scans the module's templates and Go code (generated
// files aside) so a typo in an id fails here, not on a page.
func TestCodeUsesKnownIDs(t *testing.T) {
	known := Default().IDs(Langs[0].Tag)
	root := filepath.Join("..", "..")
	found := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if n := d.Name(); n != "." && n != ".." && (strings.HasPrefix(n, ".") || n == "node_modules" || n == "testdata") {
				return filepath.SkipDir
			}
			return nil
		}
		name := d.Name()
		if !(strings.HasSuffix(name, ".templ") || strings.HasSuffix(name, ".go")) || strings.HasSuffix(name, "_templ.go") || name == "i18n_test.go" {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			if strings.HasPrefix(strings.TrimSpace(line), "//") {
				continue // doc comments show examples
			}
			for _, m := range idUse.FindAllStringSubmatch(line, -1) {
				found++
				if !known[m[1]] {
					t.Errorf("%s:%d uses unknown message id %q: add it to every file in internal/i18n/messages", path, i+1, m[1])
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if found == 0 {
		t.Fatal("no message ids found in code: is the pattern still right?")
	}
}

func TestLocalizerChoosesLanguage(t *testing.T) {
	c := Default()
	for _, tc := range []struct{ cookie, accept, want string }{
		{"", "", "en"},
		{"zh-TW", "en-US", "zh-TW"},
		{"zh-tw", "", "zh-TW"},
		{"en", "zh-TW", "en"},
		{"", "zh-TW,zh;q=0.9,en;q=0.8", "zh-TW"},
		{"", "zh-Hant-HK", "zh-TW"},
		{"", "fr-FR", "en"},
		{"klingon", "garbage;;", "en"},
	} {
		if got := c.Localizer(tc.cookie, tc.accept).Lang(); got != tc.want {
			t.Errorf("cookie %q Accept-Language %q: %s, want %s", tc.cookie, tc.accept, got, tc.want)
		}
	}
}

func TestT(t *testing.T) {
	zh := WithLocalizer(context.Background(), Default().Localizer("zh-TW", ""))
	if got := T(zh, "task.create"); got != "創建Smart Connect任務" {
		t.Errorf("zh-TW task.create = %q", got)
	}
	if got := T(zh, "task.created", "Name", "orders-dr"); got != "創建orders-dr任務成功" {
		t.Errorf("zh-TW task.created = %q", got)
	}
	if got := T(context.Background(), "task.create_now"); got != "Create now" {
		t.Errorf("no localizer: %q, want English", got)
	}
	if got := T(context.Background(), "no.such.id"); got != "no.such.id" {
		t.Errorf("unknown id: %q, want the id", got)
	}
	if got := LangOf(zh); got != "zh-TW" {
		t.Errorf("LangOf = %q", got)
	}
}

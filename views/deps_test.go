package views_test

import (
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// Views render view models that web/ builds; they import only the
// domain's plain types and the message catalogue, never the data plane
// (service, engines, the sampler, storage), so a page cannot reach past
// what its handler gave it.
func TestViewsImportNoDataPlane(t *testing.T) {
	allowed := map[string]bool{
		"github.com/kmirror/kmirror/internal/i18n": true,
		"github.com/kmirror/kmirror/internal/task": true,
		"github.com/kmirror/kmirror/static":        true,
	}
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(token.NewFileSet(), name, nil, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			if strings.HasPrefix(path, "github.com/kmirror/kmirror/") && !allowed[path] {
				t.Errorf("%s imports %s: give the view a view model built in web/ instead", name, path)
			}
		}
	}
}

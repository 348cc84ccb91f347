package views_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestGeneratedCodeIsCurrent fails when a .templ file was edited without
// running `go tool templ generate` (make generate): it generates into a copy
// and compares with the committed *_templ.go files, so the work tree is never
// touched by the test.
func TestGeneratedCodeIsCurrent(t *testing.T) {
	if testing.Short() {
		t.Skip("runs the templ generator")
	}
	sources, err := filepath.Glob("*.templ")
	if err != nil || len(sources) == 0 {
		t.Fatalf("no .templ files found (err=%v)", err)
	}
	tmp := t.TempDir()
	for _, src := range sources {
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(tmp, src), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Run from the module (this directory) so `go tool` finds the templ
	// version pinned in go.mod.
	cmd := exec.Command("go", "tool", "templ", "generate", "-path", tmp)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("templ generate: %v\n%s", err, out)
	}
	for _, src := range sources {
		gen := strings.TrimSuffix(src, ".templ") + "_templ.go"
		want, err := os.ReadFile(filepath.Join(tmp, gen))
		if err != nil {
			t.Fatal(err)
		}
		got, err := os.ReadFile(gen)
		if err != nil {
			t.Fatalf("%s is missing: run `go tool templ generate` and commit it", gen)
		}
		if !bytes.Equal(got, want) {
			t.Errorf("%s is stale: run `go tool templ generate` and commit the result", gen)
		}
	}
	// A generated file whose .templ source is gone is stale too.
	generated, _ := filepath.Glob("*_templ.go")
	for _, gen := range generated {
		if _, err := os.Stat(strings.TrimSuffix(gen, "_templ.go") + ".templ"); err != nil {
			t.Errorf("%s has no .templ source: delete it", gen)
		}
	}
}

package engine_test

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

const module = "github.com/kmirror/kmirror/"

// deps lists a package's kmirror dependencies, direct and indirect, as
// paths under the module.
func deps(t *testing.T, pkg string) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}", module+pkg).Output()
	if err != nil {
		t.Fatalf("go list -deps %s: %v", pkg, err)
	}
	var ds []string
	for _, p := range strings.Fields(string(out)) {
		if rest, ok := strings.CutPrefix(p, module); ok && rest != pkg {
			ds = append(ds, rest)
		}
	}
	return ds
}

// The engine contract stays a leaf, the two engines stay apart, and what
// only reads status reads the contract, not the data plane: a status
// field added for one engine cannot drag the other engine, or the
// replicator, into packages that only show it.
func TestEngineContractDependencies(t *testing.T) {
	for _, tc := range []struct {
		pkg    string
		only   []string // when set, every kmirror dependency is one of these
		denied []string
	}{
		{pkg: "internal/engine", only: []string{"internal/task", "internal/cluster", "internal/policy"}},
		{pkg: "internal/embeddedengine", denied: []string{"internal/connect/connectengine", "internal/connect/connectplan", "internal/connect"}},
		{pkg: "internal/connect/connectengine", denied: []string{"internal/embeddedengine"}},
		// The Connect plan is pure: configs from a task, no engine, no I/O.
		{pkg: "internal/connect/connectplan", denied: []string{"internal/connect/connectengine", "internal/embeddedengine", "internal/replicator", "internal/engine"}},
		{pkg: "internal/metrics", denied: []string{"internal/replicator", "internal/embeddedengine", "internal/connect/connectengine"}},
		{pkg: "internal/history", denied: []string{"internal/replicator", "internal/embeddedengine", "internal/connect/connectengine"}},
	} {
		ds := deps(t, tc.pkg)
		for _, d := range ds {
			if tc.only != nil && !slices.Contains(tc.only, d) {
				t.Errorf("%s depends on %s; it may depend only on %v", tc.pkg, d, tc.only)
			}
			if slices.Contains(tc.denied, d) {
				t.Errorf("%s depends on %s (%v are kept out of it)", tc.pkg, d, tc.denied)
			}
		}
	}
}

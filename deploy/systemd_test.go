package deploy

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

const unitFile = "systemd/kmirror.service"

// TestSystemdUnitVerifiesAndIsHardened checks the unit with systemd-analyze:
// verify (no unknown keys, a valid command) and the offline security
// review (exposure at most 2.0, "OK"). The unit's ExecStart names the
// installed path; the copy checked here names a freshly built kmirror, since
// verify requires the command to exist.
func TestSystemdUnitVerifiesAndIsHardened(t *testing.T) {
	tool(t, "systemd-analyze", ".ci/run installs Debian's systemd package when missing")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	b, err := os.ReadFile(unitFile)
	if err != nil {
		t.Fatal(err)
	}
	const installed = "ExecStart=/usr/local/bin/kmirror "
	if !strings.Contains(string(b), installed) {
		t.Fatalf("%s: ExecStart does not start with %q", unitFile, installed)
	}
	unit := strings.Replace(string(b), installed, "ExecStart="+kmirrorBinary(t)+" ", 1)
	path := filepath.Join(t.TempDir(), "kmirror.service")
	if err := os.WriteFile(path, []byte(unit), 0o644); err != nil {
		t.Fatal(err)
	}
	// verify exits 0 on unknown keys and only says so: any output fails.
	if out := run(t, ctx, "", "systemd-analyze", "verify", path); strings.TrimSpace(out) != "" {
		t.Errorf("systemd-analyze verify: %s", out)
	}
	// --threshold is in tenths: 20 is an exposure of 2.0.
	out, err := runErr(ctx, "", "systemd-analyze", "security", "--offline=true", "--threshold=20", path)
	if err != nil {
		t.Errorf("systemd-analyze security: exposure above 2.0 (%v):\n%s", err, out)
	}
	if i := strings.Index(out, "Overall exposure level"); i >= 0 {
		t.Log(strings.TrimSpace(out[i:]))
	}
}

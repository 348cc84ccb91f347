package deploy

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

// repoRoot is the repository, one level up from this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs("..")
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// tool finds a command or skips the test, saying which command is missing
// and who installs it.
func tool(t *testing.T, name, installedBy string) string {
	t.Helper()
	skipShort(t)
	path, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s is not installed (%s installs it): %v", name, installedBy, err)
	}
	return path
}

// helmBin is helm from $HELM, from PATH, or from the cache .ci/run installs
// it into.
func helmBin(t *testing.T) string {
	t.Helper()
	skipShort(t)
	if p := os.Getenv("HELM"); p != "" {
		return p
	}
	if p, err := exec.LookPath("helm"); err == nil {
		return p
	}
	if home, err := os.UserHomeDir(); err == nil {
		matches, _ := filepath.Glob(filepath.Join(home, ".cache", "kmirror", "tools", "helm-*", "helm"))
		if len(matches) > 0 {
			return matches[len(matches)-1]
		}
	}
	t.Skip("helm is not installed: .ci/run installs it into ~/.cache/kmirror/tools (go install helm.sh/helm/v3/cmd/helm), or set HELM")
	return ""
}

// run runs a command in dir and returns its combined output, failing the
// test with that output when it exits non-zero.
func run(t *testing.T, ctx context.Context, dir string, name string, args ...string) string {
	t.Helper()
	out, err := runErr(ctx, dir, name, args...)
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return out
}

func runErr(ctx context.Context, dir string, name string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	var b bytes.Buffer
	cmd.Stdout, cmd.Stderr = &b, &b
	err := cmd.Run()
	return b.String(), err
}

var (
	kmirrorOnce sync.Once
	kmirrorPath string
	kmirrorErr  error
)

// kmirrorBinary builds cmd/kmirror once for the package's tests.
func kmirrorBinary(t *testing.T) string {
	t.Helper()
	kmirrorOnce.Do(func() {
		dir, err := os.MkdirTemp("", "kmirror-deploytest-")
		if err != nil {
			kmirrorErr = err
			return
		}
		kmirrorPath = filepath.Join(dir, "kmirror")
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		if out, err := runErr(ctx, repoRoot(t), "go", "build", "-o", kmirrorPath, "./cmd/kmirror"); err != nil {
			kmirrorErr = fmt.Errorf("go build ./cmd/kmirror: %w\n%s", err, out)
		}
	})
	if kmirrorErr != nil {
		t.Fatal(kmirrorErr)
	}
	return kmirrorPath
}

// skipShort skips what runs outside tools (images, charts, Prometheus,
// systemd) in -short runs: the race pass's, not these tests'.
func skipShort(t *testing.T) {
	t.Helper()
	if testing.Short() {
		t.Skip("runs external tools: the full run's")
	}
}

func TestMain(m *testing.M) {
	code := m.Run()
	if kmirrorPath != "" {
		os.RemoveAll(filepath.Dir(kmirrorPath))
	}
	os.Exit(code)
}

// syncBuffer is a bytes.Buffer safe to write from a process's output
// goroutines while the test reads it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

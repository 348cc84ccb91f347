package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/replicator"
)

func TestPlainHTTPBeyondLoopbackNeedsTheFlag(t *testing.T) {
	for _, tc := range []struct {
		listen   string
		allow    bool
		wantErr  bool
		wantWarn bool
	}{
		{"127.0.0.1:8080", false, false, false},
		{"localhost:8080", false, false, false},
		{"[::1]:8080", false, false, false},
		{"0.0.0.0:8080", false, true, false},
		{":8080", false, true, false},
		{"10.1.2.3:8080", false, true, false},
		{"0.0.0.0:8080", true, false, true},
		{"127.0.0.1:8080", true, false, false},
	} {
		var stderr bytes.Buffer
		args := []string{"--listen", tc.listen}
		if tc.allow {
			args = append(args, "--allow-insecure-http")
		}
		cfg, err := parseServe(args, func(string) string { return "" }, &stderr)
		if err != nil {
			t.Fatal(err)
		}
		_, err = accessDeps(cfg, &stderr)
		if (err != nil) != tc.wantErr {
			t.Errorf("%v: err = %v, want error %v", args, err, tc.wantErr)
		}
		if err != nil && !strings.Contains(err.Error(), "--allow-insecure-http") {
			t.Errorf("%v: the refusal does not name the way out: %v", args, err)
		}
		if warned := strings.Contains(stderr.String(), "readable by anyone"); warned != tc.wantWarn {
			t.Errorf("%v: warned = %v, want %v (%q)", args, warned, tc.wantWarn, stderr.String())
		}
	}
}

func TestServeFlagsAreChecked(t *testing.T) {
	short := filepath.Join(t.TempDir(), "short-token")
	if err := os.WriteFile(short, []byte("abc\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	good := filepath.Join(t.TempDir(), "token")
	if err := os.WriteFile(good, []byte(testToken+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cfg, err := parseServe([]string{"--metrics-token-file", good, "--trusted-proxies", "10.0.0.0/8, 192.168.1.7", "--public-url", "https://kmirror.example.com",
		"--trusted-origins", "https://other.example.com"}, func(string) string { return "" }, &bytes.Buffer{})
	if err != nil {
		t.Fatal(err)
	}
	d, err := accessDeps(cfg, &bytes.Buffer{})
	if err != nil || d.MetricsToken != testToken || len(d.TrustedProxies) != 2 || d.PublicURL.Host != "kmirror.example.com" || len(d.TrustedOrigins) != 1 {
		t.Fatalf("good flags: %+v, %v", d, err)
	}
	for _, args := range [][]string{
		{"--tls-cert", "cert.pem"},
		{"--tls-key", "key.pem"},
	} {
		if _, err := parseServe(args, func(string) string { return "" }, &bytes.Buffer{}); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
	for _, args := range [][]string{
		{"--tls-cert", "/nonexistent/cert.pem", "--tls-key", "/nonexistent/key.pem"},
		{"--trusted-proxies", "10.0.0.0/33"},
		{"--trusted-proxies", "proxy.example"},
		{"--public-url", "kmirror.example.com"},
		{"--trusted-origins", "not a url"},
		{"--metrics-token-file", "/nonexistent/token"},
		{"--metrics-token-file", short},
	} {
		cfg, err := parseServe(args, func(string) string { return "" }, &bytes.Buffer{})
		if err != nil {
			t.Fatal(err)
		}
		if _, err := accessDeps(cfg, &bytes.Buffer{}); err == nil {
			t.Errorf("%v accepted", args)
		}
	}
}

func TestShortAPITokenRefused(t *testing.T) {
	cfg := serveConfig{APIToken: "tok", DataDir: t.TempDir()}
	if _, _, err := apiToken(cfg); err == nil || !strings.Contains(err.Error(), "32") {
		t.Fatalf("a 3-character KMIRROR_TOKEN: err = %v", err)
	}
	cfg.APIToken = testToken
	if tok, _, err := apiToken(cfg); err != nil || tok != testToken {
		t.Fatalf("a long KMIRROR_TOKEN: %q, %v", tok, err)
	}
}

// startServe runs `kmirror serve` on dir until the returned stop is called,
// and returns what it printed on stdout and stderr by then.
func startServeEnv(t *testing.T, dir string, env map[string]string) (stdout, stderr *syncBuffer, stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	stdout, stderr = &syncBuffer{}, &syncBuffer{}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--listen", "127.0.0.1:0", "--data-dir", dir}, func(k string) string { return env[k] }, stdout, stderr)
	}()
	checkFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		select {
		case err := <-done:
			t.Fatalf("serve ended early: %v\n%s", err, stderr.String())
		default:
		}
		if !strings.Contains(stdout.String(), "kmirror console: http://") {
			return errString("no URL printed yet")
		}
		return nil
	})
	return stdout, stderr, func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("serve: %v", err)
		}
	}
}

func TestIgnoredAdminPasswordIsWarned(t *testing.T) {
	dir := t.TempDir()
	env := map[string]string{"KMIRROR_TOKEN": testToken, "KMIRROR_ADMIN_PASSWORD": "first-password"}
	_, stderr, stop := startServeEnv(t, dir, env)
	stop()
	if strings.Contains(stderr.String(), "KMIRROR_ADMIN_PASSWORD is ignored") {
		t.Fatal("warned on the first start, where the password is used")
	}
	if _, err := os.Stat(filepath.Join(dir, adminPasswordFile)); !os.IsNotExist(err) {
		t.Fatalf("a password file was written although KMIRROR_ADMIN_PASSWORD was set: %v", err)
	}
	env["KMIRROR_ADMIN_PASSWORD"] = "second-password"
	_, stderr, stop = startServeEnv(t, dir, env)
	stop()
	if !strings.Contains(stderr.String(), "KMIRROR_ADMIN_PASSWORD is ignored") {
		t.Fatalf("no warning that KMIRROR_ADMIN_PASSWORD is ignored:\n%s", stderr.String())
	}
}

func TestGeneratedPasswordFileIsPrivateEvenOverAnOldOne(t *testing.T) {
	dir := t.TempDir()
	old := filepath.Join(dir, adminPasswordFile)
	if err := os.WriteFile(old, []byte("stale\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	stdout, _, stop := startServeEnv(t, dir, map[string]string{"KMIRROR_TOKEN": testToken})
	stop()
	st, err := os.Stat(old)
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := os.ReadFile(old)
	if st.Mode().Perm() != 0o600 || strings.TrimSpace(string(raw)) == "stale" {
		t.Fatalf("password file mode %v, content replaced = %v", st.Mode().Perm(), strings.TrimSpace(string(raw)) != "stale")
	}
	if !strings.Contains(stdout.String(), old) {
		t.Fatalf("welcome does not point to %s:\n%s", old, stdout.String())
	}
	// A later start still says where the password is while the file exists.
	stdout, _, stop = startServeEnv(t, dir, map[string]string{"KMIRROR_TOKEN": testToken})
	stop()
	if !strings.Contains(stdout.String(), "generated on the first start into "+old) {
		t.Fatalf("second welcome:\n%s", stdout.String())
	}
}

func TestRefusedStartLeavesNothingBehind(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "data")
	var stdout, stderr bytes.Buffer
	err := run(context.Background(), []string{"serve", "--listen", "0.0.0.0:0", "--data-dir", dir},
		func(k string) string { return map[string]string{"KMIRROR_TOKEN": testToken}[k] }, &stdout, &stderr)
	if err == nil || !strings.Contains(err.Error(), "--allow-insecure-http") {
		t.Fatalf("plain HTTP on all interfaces: %v", err)
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Fatalf("a refused start created %s: %v", dir, err)
	}
}

func TestBufferMemoryFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		want int64
		ok   bool
	}{
		{nil, replicator.DefaultBufferBytes, true},
		{[]string{"--buffer-memory", "1GiB"}, 1 << 30, true},
		{[]string{"--buffer-memory", "64MiB"}, 64 << 20, true},
		{[]string{"--buffer-memory", "lots"}, 0, false},
		{[]string{"--buffer-memory", "0"}, 0, false},
	} {
		cfg, err := parseServe(tc.args, func(string) string { return "" }, &bytes.Buffer{})
		if (err == nil) != tc.ok {
			t.Errorf("%v: err = %v, want ok %v", tc.args, err, tc.ok)
			continue
		}
		if err == nil && cfg.BufferMemory.options().Budget.Total() != tc.want {
			t.Errorf("%v: budget %d, want %d", tc.args, cfg.BufferMemory.options().Budget.Total(), tc.want)
		}
	}
}

package main

import (
	"bytes"
	"context"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

// syncBuffer is a bytes.Buffer safe to write from the server goroutine while
// the test reads it.
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

// checkFor polls f until it succeeds or total passes.
func checkFor(t *testing.T, total, every time.Duration, f func() error) {
	t.Helper()
	deadline := time.Now().Add(total)
	for {
		err := f()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(every)
	}
}

// testToken is a KMIRROR_TOKEN long enough to be accepted.
const testToken = "test-token-0123456789abcdef0123456789"

type errString string

func (e errString) Error() string { return string(e) }

func TestServeStartsPrintsHowToSignInAndStops(t *testing.T) {
	dir := t.TempDir()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	env := map[string]string{"KMIRROR_TOKEN": testToken}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--listen", "127.0.0.1:0", "--data-dir", dir, "--demo"},
			func(k string) string { return env[k] }, &stdout, &stderr)
	}()
	urlRE := regexp.MustCompile(`http://127\.0\.0\.1:\d+/`)
	var url string
	checkFor(t, 10*time.Second, 20*time.Millisecond, func() error {
		select {
		case err := <-done:
			t.Fatalf("serve ended early: %v\n%s", err, stderr.String())
		default:
		}
		if url = urlRE.FindString(stdout.String()); url == "" {
			return errString("no URL printed yet")
		}
		return nil
	})
	out := stdout.String()
	pwFile := filepath.Join(dir, "admin.password")
	if !strings.Contains(out, `sign in as "admin" with the password in `+pwFile) || !strings.Contains(out, "KMIRROR_TOKEN") {
		t.Fatalf("welcome does not say how to sign in:\n%s", out)
	}
	st, err := os.Stat(pwFile)
	if err != nil {
		t.Fatal(err)
	}
	if st.Mode().Perm() != 0o600 {
		t.Fatalf("%s has mode %v, want 0600", pwFile, st.Mode().Perm())
	}
	raw, err := os.ReadFile(pwFile)
	if err != nil {
		t.Fatal(err)
	}
	pw := strings.TrimSpace(string(raw))
	if len(pw) < 20 || strings.Contains(out, pw) {
		t.Fatalf("generated password %q too short or printed on stdout", pw)
	}
	resp, err := http.Get(url + "healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("healthz: %d", resp.StatusCode)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("serve returned %v after cancel", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("serve did not stop after its context was cancelled")
	}
	// The generated admin password is never written to the log.
	if strings.Contains(stderr.String(), pw) {
		t.Fatal("the admin password is in the log")
	}
}

func TestRunRejectsUnknownCommand(t *testing.T) {
	var out, errOut bytes.Buffer
	if err := run(context.Background(), []string{"frobnicate"}, func(string) string { return "" }, &out, &errOut); err == nil {
		t.Fatal("unknown command accepted")
	}
	if err := run(context.Background(), nil, func(string) string { return "" }, &out, &errOut); err == nil {
		t.Fatal("no command accepted")
	}
	if !strings.Contains(errOut.String(), "Usage:") {
		t.Fatal("no usage printed")
	}
}

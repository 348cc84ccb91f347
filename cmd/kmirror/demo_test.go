package main

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestDemoCommandVerifiesTheCopy(t *testing.T) {
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"demo", "-records", "3000", "-size", "200"}, func(string) string { return "" }, &out, &errOut)
	if err != nil {
		t.Fatalf("demo: %v\n%s\n%s", err, out.String(), errOut.String())
	}
	if !strings.Contains(out.String(), "OK: produced 3000, replicated 3000, missing 0") {
		t.Fatalf("demo output lacks the verified counts:\n%s", out.String())
	}
}

// The README's main command: the console with the two demo instances.
func TestServeDemoListsTheDemoInstances(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var stdout, stderr syncBuffer
	env := map[string]string{"KMIRROR_ADMIN_PASSWORD": "demo-password-1", "KMIRROR_TOKEN": testToken}
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"serve", "--listen", "127.0.0.1:0", "--data-dir", t.TempDir(), "--demo"},
			func(k string) string { return env[k] }, &stdout, &stderr)
	}()
	defer func() { cancel(); <-done }()
	var base string
	checkFor(t, 20*time.Second, 20*time.Millisecond, func() error {
		if base = regexp.MustCompile(`http://127\.0\.0\.1:\d+/`).FindString(stdout.String()); base == "" {
			return errString("no URL printed yet")
		}
		return nil
	})
	jar, _ := cookiejar.New(nil)
	client := &http.Client{Jar: jar}
	page := get(t, client, base+"signin")
	csrf := regexp.MustCompile(`name="_csrf" value="([^"]+)"`).FindStringSubmatch(page)
	if csrf == nil {
		t.Fatalf("no CSRF field on the sign-in page:\n%s", page)
	}
	resp, err := client.PostForm(base+"signin", url.Values{"_csrf": {csrf[1]}, "user": {"admin"}, "password": {"demo-password-1"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	page = get(t, client, base+"instances")
	for _, name := range []string{"east", "west"} {
		if !strings.Contains(page, `data-testid="cluster-row" data-cluster="`+name+`"`) {
			t.Fatalf("instances page does not list %s:\n%s", name, page)
		}
	}
}

func get(t *testing.T, c *http.Client, u string) string {
	t.Helper()
	resp, err := c.Get(u)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %d\n%s", u, resp.StatusCode, b)
	}
	return string(b)
}

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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
	base, _ := serveDemo(t)
	base += "/"
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

// The first thing a newcomer does with the demo: check a task between its
// two instances, the demo task itself running meanwhile. Every step of the
// check passes on the embedded clusters.
func TestServeDemoFlowOverTheAPI(t *testing.T) {
	base, _ := serveDemo(t)
	base += "/"
	call := func(method, path string, body any) (int, map[string]any) {
		t.Helper()
		var rd io.Reader
		if body != nil {
			b, _ := json.Marshal(body)
			rd = bytes.NewReader(b)
		}
		req, _ := http.NewRequest(method, base+"api/v1"+path, rd)
		req.Header.Set("Authorization", "Bearer "+testToken)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var out map[string]any
		_ = json.NewDecoder(resp.Body).Decode(&out)
		return resp.StatusCode, out
	}
	code, list := call(http.MethodGet, "/tasks", nil)
	tasks, _ := list["tasks"].([]any)
	if code != http.StatusOK || len(tasks) != 1 {
		t.Fatalf("tasks: %d %v, want the demo task", code, list)
	}
	demoTask, _ := tasks[0].(map[string]any)
	name, _ := demoTask["name"].(string)

	// The check the create form's "Start check" runs, with the demo task's
	// own clusters.
	check := map[string]any{"name": "first-check", "current": demoTask["current"],
		"peer":  map[string]any{"alias": "B", "config_type": "cluster", "cluster": "west"},
		"rules": map[string]any{"direction": "push", "topics": []string{"orders"}}}
	code, res := call(http.MethodPost, "/connectivity", check)
	if code != http.StatusOK || res["ok"] != true {
		t.Fatalf("connectivity check of the demo clusters: %d %v", code, res)
	}
	clusters, _ := res["clusters"].([]any)
	if len(clusters) != 2 {
		t.Fatalf("checked %d clusters, want east and west: %v", len(clusters), res)
	}
	checkFor(t, 30*time.Second, 100*time.Millisecond, func() error {
		_, info := call(http.MethodGet, "/tasks/"+name, nil)
		st, _ := info["status"].(map[string]any)
		if st["state"] != "RUNNING" {
			return errString(fmt.Sprintf("demo task %s is %v", name, st))
		}
		return nil
	})
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

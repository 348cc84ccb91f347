package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/e2e"
	"github.com/kmirror/kmirror/internal/kafkatest"
)

// A connector changed on Kafka Connect outside kmirror (its config PUT by
// hand) makes the task DRIFTED, naming the setting; re-apply puts kmirror's
// configuration back (RUNNING), and writes a connector's configuration only
// where it differs: a re-apply with nothing drifted writes nothing to
// Connect's config topic.
func TestDriftedConnectorIsShownAndReapplied(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	s, west, east, cc := connectServer(t)
	topic := kafkatest.NewTopic(t, east, 2, nil)
	const n = 200
	if _, err := e2e.Produce(ctx, east.Settings(cluster.Plaintext, ""), topic, 2, n, 100); err != nil {
		t.Fatal(err)
	}
	name := "dr-" + strings.ToLower(topic[len(topic)-8:])
	if code, body := s.call(http.MethodPost, "/api/v1/tasks", connectTask(name, topic)); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, body)
	}
	t.Cleanup(func() { s.call(http.MethodDelete, "/api/v1/tasks/"+name, nil) })
	if _, err := e2e.WaitFor(ctx, west.Settings(cluster.Plaintext, ""), "A."+topic, n, nil); err != nil {
		t.Fatal(err)
	}
	status := func() (state, reason string) {
		_, body := s.call(http.MethodGet, "/api/v1/tasks/"+name, nil)
		st, _ := body["status"].(map[string]any)
		state, _ = st["state"].(string)
		reason, _ = st["reason"].(string)
		return state, reason
	}
	waitState := func(want, part string) {
		t.Helper()
		deadline := time.Now().Add(2 * time.Minute)
		for {
			state, reason := status()
			if state == want && strings.Contains(reason, part) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("task %s: %s (%s), want %s with %q", name, state, reason, want, part)
			}
			time.Sleep(300 * time.Millisecond)
		}
	}
	waitState("RUNNING", "")
	source := "kmirror." + name + ".A-B.source"
	configWrites := func() (n int) {
		for _, m := range readRecords(t, west.Settings(cluster.Plaintext, ""), cc.ConfigTopic()) {
			if string(m.Key) == "connector-"+source {
				n++
			}
		}
		return n
	}

	// Nothing drifted: a re-apply writes no configuration.
	before := configWrites()
	if code, body := s.call(http.MethodPost, "/api/v1/tasks/"+name+"/reapply", nil); code != http.StatusOK {
		t.Fatalf("reapply: %d %v", code, body)
	}
	if after := configWrites(); after != before {
		t.Fatalf("a re-apply with nothing drifted wrote the source connector's configuration %d times", after-before)
	}

	// Changed by hand: DRIFTED, naming the setting, never a value.
	cfg := connectorConfig(t, cc.URL(0), source)
	cfg["tasks.max"] = "1"
	put(t, cc.URL(0)+"/connectors/"+source+"/config", cfg)
	waitState("DRIFTED", "(tasks.max)")

	if code, body := s.call(http.MethodPost, "/api/v1/tasks/"+name+"/reapply", nil); code != http.StatusOK {
		t.Fatalf("reapply: %d %v", code, body)
	}
	waitState("RUNNING", "")
	if got := connectorConfig(t, cc.URL(0), source)["tasks.max"]; got != "2" {
		t.Fatalf("after re-apply tasks.max is %q, want kmirror's 2", got)
	}
	if code, body := s.call(http.MethodGet, "/api/v1/tasks/"+name, nil); code != http.StatusOK || body["last_action"].(map[string]any)["action"] != "reapply" {
		t.Fatalf("the task's last action: %d %v", code, body["last_action"])
	}
}

func connectorConfig(t *testing.T, base, name string) map[string]string {
	t.Helper()
	resp, err := http.Get(base + "/connectors/" + name + "/config")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var cfg map[string]string
	if err := json.NewDecoder(resp.Body).Decode(&cfg); err != nil || resp.StatusCode != http.StatusOK {
		t.Fatalf("config of %s: %d %v", name, resp.StatusCode, err)
	}
	return cfg
}

func put(t *testing.T, url string, body any) {
	t.Helper()
	raw, _ := json.Marshal(body)
	req, err := http.NewRequest(http.MethodPut, url, bytes.NewReader(raw))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("PUT %s: %d %s", url, resp.StatusCode, b)
	}
}

package apitest

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/e2e"
	"github.com/kmirror/kmirror/internal/kafkatest"
)

// A Connect cluster registered with a first URL that accepts connections
// and never answers, beside a real worker: a task is deployed and RUNNING,
// its copy complete — the hung URL costs one request's timeout in the
// process (every caller shares one client per Connect cluster that starts
// at the URL that answered last), and one in the status poll.
func TestHungFirstWorkerURLBesideARealOne(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s, west, east, cc := connectServer(t)
	release := make(chan struct{})
	var asked atomic.Int64
	hung := httptest.NewServer(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		asked.Add(1)
		<-release
	}))
	t.Cleanup(hung.Close)
	t.Cleanup(func() { close(release) }) // before Close: it waits for the handlers
	if code, body := s.call(http.MethodPost, "/api/v1/connect-clusters", map[string]any{
		"name": "wch", "urls": append([]string{hung.URL}, cc.URLs()...), "kafka_cluster": "west"}); code != http.StatusCreated {
		t.Fatalf("register: %d %v", code, body)
	}
	topic := kafkatest.NewTopic(t, east, 2, nil)
	const n = 200
	if _, err := e2e.Produce(ctx, east.Settings(cluster.Plaintext, ""), topic, 2, n, 100); err != nil {
		t.Fatal(err)
	}
	name := "hu-" + strings.ToLower(topic[len(topic)-8:])
	spec := connectTask(name, topic)
	spec["engine"] = "connect:wch"
	began := time.Now()
	if code, body := s.call(http.MethodPost, "/api/v1/tasks", spec); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, body)
	}
	t.Cleanup(func() { s.call(http.MethodDelete, "/api/v1/tasks/"+name, nil) })
	created := time.Since(began)
	if _, err := e2e.WaitFor(ctx, west.Settings(cluster.Plaintext, ""), "A."+topic, n, nil); err != nil {
		t.Fatalf("the copy: %v", err)
	}
	for deadline := time.Now().Add(2 * time.Minute); ; time.Sleep(300 * time.Millisecond) {
		_, body := s.call(http.MethodGet, "/api/v1/tasks/"+name, nil)
		st, _ := body["status"].(map[string]any)
		if st["state"] == "RUNNING" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not RUNNING with the first URL hung: %v", st)
		}
	}
	before := asked.Load()
	t.Logf("with the first URL hung: created in %s, RUNNING %s after the create; the hung URL was asked %d times",
		created.Round(time.Millisecond), time.Since(began).Round(time.Millisecond), before)
	// Later actions and polls start at the URL that answered.
	if code, body := s.call(http.MethodPost, "/api/v1/tasks/"+name+"/pause", nil); code != http.StatusOK {
		t.Fatalf("pause: %d %v", code, body)
	}
	if code, body := s.call(http.MethodPost, "/api/v1/tasks/"+name+"/resume", nil); code != http.StatusOK {
		t.Fatalf("resume: %d %v", code, body)
	}
	time.Sleep(3 * time.Second) // polls and samples
	if after := asked.Load(); after != before {
		t.Errorf("the hung URL was asked %d more times after the first answers", after-before)
	}
}

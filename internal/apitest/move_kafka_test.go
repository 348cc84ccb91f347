package apitest

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/connect"
	"github.com/kmirror/kmirror/internal/e2e"
	"github.com/kmirror/kmirror/internal/kafkatest"
)

// A task moves embedded -> Kafka Connect -> embedded through the API and
// copies nothing twice: each engine continues from the other's progress.
// Every record is checked at the end, duplicates counted.
func TestMoveBetweenEnginesCopiesNothingTwice(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	s, west, east, cc := connectServer(t)
	src, dst := east.Settings(cluster.Plaintext, ""), west.Settings(cluster.Plaintext, "")
	topic := kafkatest.NewTopic(t, east, 3, nil)
	name := "mv-" + strings.ToLower(topic[len(topic)-8:])
	spec := map[string]any{
		"name": name, "type": "kafka-replication", "engine": "embedded",
		"current": map[string]any{"cluster": "east", "alias": "A"},
		"peer":    map[string]any{"alias": "B", "config_type": "cluster", "cluster": "west"},
		"rules": map[string]any{"direction": "push", "topics": []string{topic}, "tasks": 2, "rename_topics": true,
			"start_offset": "earliest", "compression": "none"},
	}
	if code, body := s.call(http.MethodPost, "/api/v1/tasks", spec); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, body)
	}
	const batch = 300
	total := int64(0)
	step := func(engine string) {
		t.Helper()
		if _, err := e2e.Produce(ctx, src, topic, 3, batch, 100); err != nil {
			t.Fatal(err)
		}
		total += batch
		if _, err := e2e.WaitFor(ctx, dst, "A."+topic, total, nil); err != nil {
			_, st := s.call(http.MethodGet, "/api/v1/tasks/"+name, nil)
			t.Fatalf("on %s: %v\nstatus: %v", engine, err, st)
		}
		// Wait out the engine's own progress commit so the move starts
		// from settled progress (what is in flight is the move's to keep).
		time.Sleep(2 * time.Second)
	}
	move := func(engine string) {
		t.Helper()
		start := time.Now()
		code, body := s.call(http.MethodPost, "/api/v1/tasks/"+name+"/move", map[string]any{"engine": engine})
		if code != http.StatusOK || body["engine"] != engine {
			t.Fatalf("move to %s: %d %v", engine, code, body)
		}
		t.Logf("moved to %s in %s", engine, time.Since(start).Round(time.Millisecond))
	}
	step("embedded")
	move("connect:wc")
	step("connect:wc")
	move("embedded")
	step("embedded")

	rep, err := e2e.Verify(ctx, src, topic, dst, "A."+topic, e2e.VerifyOptions{AllowDuplicates: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after two moves: %s", rep)
	if !rep.OK() || rep.Duplicated != 0 {
		t.Fatalf("the copy after two moves is not exact (%d duplicated):\n%s", rep.Duplicated, rep)
	}
	// Moving back deleted the task's connectors; moving to the engine it
	// runs on is refused by field.
	client, err := connect.New(connect.Config{URLs: cc.URLs(), Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	views, err := client.Connectors(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for c := range views {
		if strings.HasPrefix(c, "kmirror."+name+".") {
			t.Errorf("connector %s left on Connect after the task moved away", c)
		}
	}
	code, body := s.call(http.MethodPost, "/api/v1/tasks/"+name+"/move", map[string]any{"engine": "embedded"})
	if code != http.StatusUnprocessableEntity || !strings.Contains(problems(body)["engine"], "already") {
		t.Fatalf("move to the engine it runs on: %d %v", code, body)
	}
}

package apitest

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/e2e"
	"github.com/kmirror/kmirror/internal/kafkatest"
)

// A dedicated MirrorMaker 2 (mm2.properties) copies a topic and is
// stopped; importing its flow through the API makes a kmirror task that
// continues from MirrorMaker's offsets: every record once on the target.
// Its offsets topic is named by a top-level offset.storage.topic, which
// MirrorMaker applies over the target's; an offsets topic that is not there
// is refused unless the import asks to start over.
func TestImportMM2PropertiesContinuesWithoutRecopying(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	west, east := kafkatest.Shared(t, 0), kafkatest.Shared(t, 1)
	s := newServer(t)
	s.register("east", east.Settings(cluster.Plaintext, ""))
	s.register("west", west.Settings(cluster.Plaintext, ""))
	src, dst := east.Settings(cluster.Plaintext, ""), west.Settings(cluster.Plaintext, "")
	topic := kafkatest.NewTopic(t, east, 2, nil)
	if _, err := e2e.Produce(ctx, src, topic, 2, 300, 100); err != nil {
		t.Fatal(err)
	}
	suffix := strings.ToLower(topic[len(topic)-8:])
	offsetsTopic := "imported-offsets-" + suffix
	props := fmt.Sprintf(`clusters = A, B
A.bootstrap.servers = %s
B.bootstrap.servers = %s
A->B.enabled = true
A->B.topics = %s
B->A.enabled = false
tasks.max = 2
replication.factor = 1
emit.checkpoints.enabled = false
offset-syncs.topic.replication.factor = 1
heartbeats.topic.replication.factor = 1
checkpoints.topic.replication.factor = 1
offset.storage.replication.factor = 1
status.storage.replication.factor = 1
config.storage.replication.factor = 1
refresh.topics.interval.seconds = 5
offset.storage.topic = %s
`, strings.Join(src.BootstrapServers, ","), strings.Join(dst.BootstrapServers, ","), strings.ReplaceAll(topic, ".", `\\.`), offsetsTopic)
	mm := kafkatest.StartMirrorMaker(t, props)
	if _, err := e2e.WaitFor(ctx, dst, "A."+topic, 300, nil); err != nil {
		t.Fatalf("MirrorMaker's copy: %v\n%s", err, mm.LogTail(40))
	}
	time.Sleep(3 * time.Second) // its offsets flushed (every 10 s by default; SIGTERM flushes too)
	mm.Stop()

	name := "imp-" + suffix
	// An offsets topic that is not there would copy everything again:
	// refused by field, nothing stored, unless the import starts over.
	elsewhere := strings.ReplaceAll(props, offsetsTopic, "no-such-offsets-"+suffix)
	code, body := s.call(http.MethodPost, "/api/v1/tasks/import-mm2", map[string]any{
		"properties": elsewhere, "name": name + "-0", "current": "west", "engine": "embedded"})
	if msg := problems(body)["start_over"]; code != http.StatusUnprocessableEntity || !strings.Contains(msg, "no-such-offsets-"+suffix) {
		t.Fatalf("import from a missing offsets topic: %d %v", code, body)
	}
	if code, _ := s.call(http.MethodGet, "/api/v1/tasks/"+name+"-0", nil); code != http.StatusNotFound {
		t.Fatalf("a refused import stored a task: %d", code)
	}
	code, body = s.call(http.MethodPost, "/api/v1/tasks/import-mm2", map[string]any{
		"properties": props, "name": name, "current": "west", "engine": "embedded"})
	if code != http.StatusCreated || body["offsets_topic"] != offsetsTopic {
		t.Fatalf("import: %d %v (want the offsets read from %s)", code, body, offsetsTopic)
	}
	// The topic's 2, and any heartbeats topic MirrorMaker copied as well.
	if n, _ := body["partitions"].(float64); n < 2 {
		t.Fatalf("import handed over %v partitions, want the topic's 2 at least: %v", body["partitions"], body)
	}
	if _, err := e2e.Produce(ctx, src, topic, 2, 200, 100); err != nil {
		t.Fatal(err)
	}
	if _, err := e2e.WaitFor(ctx, dst, "A."+topic, 500, nil); err != nil {
		_, st := s.call(http.MethodGet, "/api/v1/tasks/"+name, nil)
		t.Fatalf("after the import: %v\nstatus: %v", err, st)
	}
	rep, err := e2e.Verify(ctx, src, topic, dst, "A."+topic, e2e.VerifyOptions{AllowDuplicates: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("MirrorMaker then kmirror: %s", rep)
	if !rep.OK() || rep.Duplicated != 0 {
		t.Fatalf("the copy is not exact (%d duplicated):\n%s", rep.Duplicated, rep)
	}
	// A file naming no enabled flow, or a setting with no equivalent, is
	// refused by field and stores nothing.
	code, body = s.call(http.MethodPost, "/api/v1/tasks/import-mm2", map[string]any{
		"properties": props + "transforms = x\n", "name": name + "-2", "current": "west"})
	if code != http.StatusUnprocessableEntity || problems(body)["transforms"] == "" {
		t.Fatalf("import with transforms: %d %v", code, body)
	}
	if code, _ := s.call(http.MethodGet, "/api/v1/tasks/"+name+"-2", nil); code != http.StatusNotFound {
		t.Fatalf("a refused import stored a task: %d", code)
	}
	// Asked to start over, the import from nowhere makes the task (which
	// copies from the first record: deleted at once, the copy checked
	// above).
	code, body = s.call(http.MethodPost, "/api/v1/tasks/import-mm2", map[string]any{
		"properties": elsewhere, "name": name + "-3", "current": "west", "engine": "embedded", "start_over": true})
	if code != http.StatusCreated || body["partitions"] != float64(0) {
		t.Fatalf("import starting over: %d %v", code, body)
	}
	if code, body := s.call(http.MethodDelete, "/api/v1/tasks/"+name+"-3", nil); code/100 != 2 {
		t.Fatalf("delete: %d %v", code, body)
	}
}

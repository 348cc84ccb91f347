package apitest

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/connect"
	"github.com/kmirror/kmirror/internal/e2e"
	"github.com/kmirror/kmirror/internal/kafkatest"
)

// Exactly once on Kafka Connect (KIP-618). On the shared Connect cluster,
// whose workers do not run exactly-once source connectors, an exactly-once
// task is refused on the engine field, with Connect's words, and nothing is
// stored. On a Connect cluster whose workers do
// (exactly.once.source.support=enabled), a worker killed (SIGKILL)
// mid-copy leaves read_committed readers of the target with every record
// exactly once: Connect at least once duplicated up to what was copied
// since its last offset flush.
func TestExactlyOnceTaskOnConnectThroughAWorkerKill(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	s, west, east, _ := connectServer(t)
	cc := exactlyOnceConnect(t, s, west)
	src, dst := east.Settings(cluster.Plaintext, ""), west.Settings(cluster.Plaintext, "")
	topic := kafkatest.NewTopic(t, east, 3, nil)
	name := "eos-" + strings.ToLower(topic[len(topic)-8:])
	spec := func(engine string) map[string]any {
		return map[string]any{
			"name": name, "type": "kafka-replication", "engine": engine,
			"current": map[string]any{"cluster": "east", "alias": "A"},
			"peer":    map[string]any{"alias": "B", "config_type": "cluster", "cluster": "west"},
			"rules": map[string]any{"direction": "push", "topics": []string{topic}, "tasks": 2, "rename_topics": true,
				"start_offset": "earliest", "compression": "none", "delivery": "exactly_once"},
		}
	}
	code, body := s.call(http.MethodPost, "/api/v1/tasks", spec("connect:wc"))
	if ps := problems(body); code != http.StatusUnprocessableEntity || !strings.Contains(ps["engine"], "exactly.once.source.support=enabled") {
		t.Fatalf("an exactly-once task on workers without support: %d %v", code, body)
	}
	if code, _ := s.call(http.MethodGet, "/api/v1/tasks/"+name, nil); code != http.StatusNotFound {
		t.Fatalf("the refused task was stored: %d", code)
	}

	const batch, batches = 300, 12
	total := 0
	produce := func() {
		t.Helper()
		if _, err := e2e.Produce(ctx, src, topic, 3, batch, 100); err != nil {
			t.Fatal(err)
		}
		total += batch
	}
	produce()
	if code, body := s.call(http.MethodPost, "/api/v1/tasks", spec("connect:ec")); code != http.StatusCreated {
		t.Fatalf("create on the exactly-once Connect cluster: %d %v", code, body)
	}
	t.Cleanup(func() { s.call(http.MethodDelete, "/api/v1/tasks/"+name, nil) })
	if _, err := e2e.WaitFor(ctx, dst, "A."+topic, batch, nil); err != nil {
		t.Fatal(err)
	}
	client, err := connect.New(connect.Config{URLs: cc.URLs(), DialTimeout: 2 * time.Second, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	st, err := client.Status(ctx, "kmirror."+name+".A-B.source")
	if err != nil {
		t.Fatal(err)
	}
	victim := -1
	for _, ts := range st.Tasks {
		if i := cc.WorkerIndex(ts.WorkerID); i >= 0 {
			victim = i
		}
	}
	if victim < 0 {
		t.Fatalf("the source connector's tasks %+v run on none of %v", st.Tasks, cc.URLs())
	}
	// Records keep coming around the kill: half before, half after.
	for range batches / 2 {
		produce()
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("killing worker %d mid-copy", victim)
	if err := cc.KillWorker(victim); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if err := cc.RestartWorker(ctx, victim); err != nil {
			t.Errorf("restart worker %d: %v", victim, err)
		}
	})
	for range batches/2 - 1 {
		produce()
		time.Sleep(100 * time.Millisecond)
	}
	deadline := time.Now().Add(5 * time.Minute)
	for {
		rep, err := e2e.Verify(ctx, src, topic, dst, "A."+topic, e2e.VerifyOptions{Idle: time.Second, AllowDuplicates: true})
		if err != nil {
			t.Fatal(err)
		}
		if rep.Replicated == total {
			if rep.Duplicated != 0 || !rep.OK() {
				t.Fatalf("exactly once on Connect through a worker kill: %s\n%v", rep.String(), rep.Problems)
			}
			all, err := e2e.Verify(ctx, src, topic, dst, "A."+topic, e2e.VerifyOptions{Idle: time.Second, AllowDuplicates: true, ReadUncommitted: true})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("read_committed: %s; read_uncommitted: %d aborted copies", rep.String(), all.Duplicated)
			return
		}
		if time.Now().After(deadline) {
			_, body := s.call(http.MethodGet, "/api/v1/tasks/"+name, nil)
			t.Fatalf("the copy did not complete after the kill: %s; task %v", rep.String(), body)
		}
		time.Sleep(time.Second)
	}
}

// exactlyOnceConnect is the package's Connect cluster whose workers run
// exactly-once source connectors (2 workers writing to west), registered
// on s as "ec".
func exactlyOnceConnect(t *testing.T, s *server, west *kafkatest.Cluster) *kafkatest.ConnectCluster {
	t.Helper()
	cc := kafkatest.LazyConnect(t, "api-eos", west, kafkatest.WorkerProps(map[string]string{"exactly.once.source.support": "enabled"}))
	if code, body := s.call(http.MethodPost, "/api/v1/connect-clusters", map[string]any{
		"name": "ec", "urls": cc.URLs(), "kafka_cluster": "west"}); code != http.StatusCreated {
		t.Fatalf("register the exactly-once Connect cluster: %d %v", code, body)
	}
	return cc
}

// waitCommitted waits until read_committed readers of dstTopic see total
// records of srcTopic (offsets would count transaction markers too).
func waitCommitted(ctx context.Context, t *testing.T, src cluster.Settings, srcTopic string, dst cluster.Settings, dstTopic string, total int) e2e.Report {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		rep, err := e2e.Verify(ctx, src, srcTopic, dst, dstTopic, e2e.VerifyOptions{Idle: time.Second, AllowDuplicates: true})
		if errors.Is(err, sarama.ErrUnknownTopicOrPartition) && time.Now().Before(deadline) {
			time.Sleep(500 * time.Millisecond) // the engine has not created the target topic yet
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		if rep.Replicated >= total || time.Now().After(deadline) {
			return rep
		}
		time.Sleep(500 * time.Millisecond)
	}
}

// An exactly-once task moves embedded -> Kafka Connect (exactly once
// through KIP-618) -> embedded: each engine continues from the other's
// committed progress, and read_committed readers see every record once.
func TestExactlyOnceMoveBetweenEnginesCopiesNothingTwice(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	s, west, east, _ := connectServer(t)
	exactlyOnceConnect(t, s, west)
	src, dst := east.Settings(cluster.Plaintext, ""), west.Settings(cluster.Plaintext, "")
	topic := kafkatest.NewTopic(t, east, 3, nil)
	name := "mve-" + strings.ToLower(topic[len(topic)-8:])
	spec := map[string]any{
		"name": name, "type": "kafka-replication", "engine": "embedded",
		"current": map[string]any{"cluster": "east", "alias": "A"},
		"peer":    map[string]any{"alias": "B", "config_type": "cluster", "cluster": "west"},
		"rules": map[string]any{"direction": "push", "topics": []string{topic}, "tasks": 2, "rename_topics": true,
			"start_offset": "earliest", "compression": "none", "delivery": "exactly_once"},
	}
	if code, body := s.call(http.MethodPost, "/api/v1/tasks", spec); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, body)
	}
	t.Cleanup(func() { s.call(http.MethodDelete, "/api/v1/tasks/"+name, nil) })
	const batch = 300
	total := 0
	step := func(engine string) {
		t.Helper()
		if _, err := e2e.Produce(ctx, src, topic, 3, batch, 100); err != nil {
			t.Fatal(err)
		}
		total += batch
		if rep := waitCommitted(ctx, t, src, topic, dst, "A."+topic, total); rep.Replicated < total {
			_, st := s.call(http.MethodGet, "/api/v1/tasks/"+name, nil)
			t.Fatalf("on %s: %s\nstatus: %v", engine, rep.String(), st)
		}
	}
	move := func(engine string) {
		t.Helper()
		code, body := s.call(http.MethodPost, "/api/v1/tasks/"+name+"/move", map[string]any{"engine": engine})
		if code != http.StatusOK || body["engine"] != engine {
			t.Fatalf("move to %s: %d %v", engine, code, body)
		}
	}
	step("embedded")
	move("connect:ec")
	step("connect:ec")
	move("embedded")
	step("embedded")
	rep, err := e2e.Verify(ctx, src, topic, dst, "A."+topic, e2e.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("after two moves: %s", rep)
	if !rep.OK() || rep.Replicated != total {
		t.Fatalf("the exactly-once copy after two moves is not exact:\n%s", rep)
	}
}

package apitest

import (
	"context"
	"fmt"
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

// A task created through the API on the Kafka Connect engine runs as
// MirrorMaker 2 connectors: every record arrives as it was written (key,
// value, nil value, headers with duplicate keys and nil values, timestamp,
// partition, order), records of aborted transactions do not, its status
// is Connect's, and deleting it deletes the connectors.
func TestTaskOnConnectCopiesFaithfully(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	s, west, east, cc := connectServer(t)

	topic := kafkatest.NewTopic(t, east, 3, nil)
	txnTopic := kafkatest.NewTopic(t, east, 1, nil)
	const n = 600
	if _, err := e2e.Produce(ctx, east.Settings(cluster.Plaintext, ""), topic, 3, n, 200); err != nil {
		t.Fatal(err)
	}
	if err := e2e.ProduceTransactions(east.Settings(cluster.Plaintext, ""), txnTopic); err != nil {
		t.Fatal(err)
	}

	name := "oc-" + strings.ToLower(topic[len(topic)-8:])
	spec := connectTask(name, topic, txnTopic)
	// Options MirrorMaker 2 cannot honour are refused by field, nothing
	// stored.
	bad := map[string]any{}
	for k, v := range spec {
		bad[k] = v
	}
	bad["rules"] = map[string]any{"direction": "push", "topics": []string{topic}, "tasks": 2, "rename_topics": true,
		"add_source_header": true, "compression": "none"}
	code, body := s.call(http.MethodPost, "/api/v1/tasks", bad)
	ps := problems(body)
	if code != http.StatusUnprocessableEntity || !strings.Contains(ps["rules.add_source_header"], "header converter") {
		t.Fatalf("a task Connect cannot run as asked: %d %v", code, ps)
	}
	if code, _ := s.call(http.MethodGet, "/api/v1/tasks/"+name, nil); code != http.StatusNotFound {
		t.Fatalf("the refused task was stored: %d", code)
	}

	if code, body := s.call(http.MethodPost, "/api/v1/tasks", spec); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, body)
	}
	target := west.Settings(cluster.Plaintext, "")
	if _, err := e2e.WaitFor(ctx, target, "A."+topic, n, nil); err != nil {
		_, st := s.call(http.MethodGet, "/api/v1/tasks/"+name, nil)
		t.Fatalf("wait for the copy: %v\nstatus: %v", err, st)
	}
	rep, err := e2e.Verify(ctx, east.Settings(cluster.Plaintext, ""), topic, target, "A."+topic, e2e.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("the copy on Connect differs from the source:\n%s", rep)
	}
	got := readKeys(t, target, "A."+txnTopic, 20)
	for i, k := range got {
		want := fmt.Sprintf("first-%d", i)
		if i >= 10 {
			want = fmt.Sprintf("second-%d", i-10)
		}
		if k != want {
			t.Fatalf("target record %d of the transactional topic is %q, want %q (aborted records must not be copied)", i, k, want)
		}
	}
	time.Sleep(2 * time.Second) // nothing else may arrive: the sampling is the test
	if c, err := e2e.Count(ctx, target, "A."+txnTopic); err != nil || c != 20 {
		t.Fatalf("target holds %d records of the transactional topic (%v), want the 20 committed ones", c, err)
	}

	// The status is Connect's, with the copy's progress per partition:
	// all n records copied, none left behind; the transactional topic's
	// trailing markers are not lag.
	deadline := time.Now().Add(2 * time.Minute)
	for {
		_, body := s.call(http.MethodGet, "/api/v1/tasks/"+name, nil)
		st, _ := body["status"].(map[string]any)
		copied, lag, parts := progressOf(st, topic)
		_, txnLag, txnParts := progressOf(st, txnTopic)
		if st["state"] == "RUNNING" && body["engine"] == "connect:wc" && parts == 3 && copied == n && lag == 0 && txnParts == 1 && txnLag == 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("task status %v, want RUNNING on connect:wc with %d records of 3 partitions copied and no lag, the transactional topic's too", body, n)
		}
		time.Sleep(500 * time.Millisecond)
	}

	client, err := connect.New(connect.Config{URLs: cc.URLs(), Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	views, err := client.Connectors(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, role := range []string{"source", "heartbeat", "checkpoint"} {
		if _, ok := views["kmirror."+name+".A-B."+role]; !ok {
			t.Errorf("no %s connector on Connect: %v", role, keys(views))
		}
	}
	if code, body := s.call(http.MethodDelete, "/api/v1/tasks/"+name, nil); code != http.StatusNoContent {
		t.Fatalf("delete: %d %v", code, body)
	}
	views, err = client.Connectors(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for c := range views {
		if strings.HasPrefix(c, "kmirror."+name+".") {
			t.Errorf("connector %s left on Connect after the task was deleted", c)
		}
	}
}

// progressOf sums the next offsets and lags of topic's partitions in a
// task status as the API shows it.
func progressOf(st map[string]any, topic string) (next, lag, partitions int) {
	flows, _ := st["flows"].([]any)
	for _, f := range flows {
		ps, _ := f.(map[string]any)["partitions"].([]any)
		for _, p := range ps {
			m := p.(map[string]any)
			if m["topic"] == topic {
				next += int(m["next_offset"].(float64))
				lag += int(m["lag"].(float64))
				partitions++
			}
		}
	}
	return next, lag, partitions
}

// connectTask is a push task from east (alias A) to west (B) on Connect
// cluster "wc": renamed topics, consumer-offset sync, from the earliest.
func connectTask(name string, topics ...string) map[string]any {
	return map[string]any{
		"name": name, "type": "kafka-replication", "engine": "connect:wc",
		"current": map[string]any{"cluster": "east", "alias": "A"},
		"peer":    map[string]any{"alias": "B", "config_type": "cluster", "cluster": "west"},
		"rules": map[string]any{"direction": "push", "topics": topics, "tasks": 2, "rename_topics": true,
			"sync_consumer_offsets": true, "start_offset": "earliest", "compression": "none"},
	}
}

// connectServer is the API with east (the source side) and west
// registered, and Connect cluster "wc" (2 workers writing to west)
// registered; the workers' logs are shown when the test fails.
func connectServer(t *testing.T) (s *server, west, east *kafkatest.Cluster, cc *kafkatest.ConnectCluster) {
	t.Helper()
	return connectServerWith(t, kafkatest.Shared(t, 1))
}

// connectServerWith is connectServer with east the given cluster (one a
// test may kill).
func connectServerWith(t *testing.T, east *kafkatest.Cluster) (*server, *kafkatest.Cluster, *kafkatest.Cluster, *kafkatest.ConnectCluster) {
	t.Helper()
	west := kafkatest.Shared(t, 0)
	cc := kafkatest.LazyConnect(t, "api", west)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Connect worker logs:\n%s", cc.LogTails(60))
		}
	})
	s := newServer(t)
	s.register("east", east.Settings(cluster.Plaintext, ""))
	s.register("west", west.Settings(cluster.Plaintext, ""))
	if code, body := s.call(http.MethodPost, "/api/v1/connect-clusters", map[string]any{
		"name": "wc", "urls": cc.URLs(), "kafka_cluster": "west"}); code != http.StatusCreated {
		t.Fatalf("register the Connect cluster: %d %v", code, body)
	}
	return s, west, east, cc
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// readKeys reads the first n records' keys of partition 0, waiting for them.
func readKeys(t *testing.T, s cluster.Settings, topic string, n int) []string {
	t.Helper()
	cfg, err := s.Config("read-keys")
	if err != nil {
		t.Fatal(err)
	}
	c, err := sarama.NewConsumer(s.BootstrapServers, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	deadline := time.Now().Add(3 * time.Minute)
	for {
		pc, err := c.ConsumePartition(topic, 0, sarama.OffsetOldest)
		if err == nil {
			var out []string
			timeout := time.After(time.Until(deadline))
			for len(out) < n {
				select {
				case m := <-pc.Messages():
					out = append(out, string(m.Key))
				case <-timeout:
					pc.Close()
					t.Fatalf("%d of %d records of %s arrived: %v", len(out), n, topic, out)
				}
			}
			pc.Close()
			return out
		}
		if time.Now().After(deadline) {
			t.Fatalf("read %s: %v", topic, err)
		}
		time.Sleep(time.Second) // the target topic is not there yet
	}
}

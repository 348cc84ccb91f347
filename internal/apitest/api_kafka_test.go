package apitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/account"
	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/e2e"
	"github.com/kmirror/kmirror/internal/embeddedengine"
	"github.com/kmirror/kmirror/internal/kafkatest"
	"github.com/kmirror/kmirror/internal/replicator"
	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/internal/service/servicetest"
	"github.com/kmirror/kmirror/internal/store"
	"github.com/kmirror/kmirror/internal/switchover"
	"github.com/kmirror/kmirror/web"
)

func TestMain(m *testing.M) { kafkatest.Main(m, 2) }

const token = "integration-token"

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// server is kmirror's API with a real engine, on a fresh data directory.
type server struct {
	t    *testing.T
	url  string
	tok  string // the API token; token when empty
	dir  string
	eng  *embeddedengine.Engine
	logs *lockedBuffer
}

func newServer(t *testing.T) *server {
	t.Helper()
	ctx := context.Background()
	dir, db, box := servicetest.OpenStore(t, "")
	logs := &lockedBuffer{}
	log := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	// Checkpoints every 2 s: an emergency switchover commits the last ones.
	eng := embeddedengine.New(replicator.Options{RefreshInterval: 2 * time.Second, CheckpointInterval: 2 * time.Second}, log)
	t.Cleanup(eng.Close) // after the server: cleanups run last-in first-out
	// The Connect engine too, as serve wires it: it does nothing until a
	// task names a Connect cluster.
	svc, onConnect, err := service.NewWithConnect(service.Deps{Clusters: db, Users: db, Secrets: box, TaskStore: db, Runner: eng,
		Logger: log, ConnectClusters: db, Switchovers: db,
		// A quiet period of 3 s is enough to see producers stopped here.
		SwitchoverOptions: switchover.Options{Quiet: 3 * time.Second}, SwitchoverTick: 250 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(onConnect.Close)
	swCtx, stopSwitchovers := context.WithCancel(context.Background())
	swDone := make(chan struct{})
	go func() { defer close(swDone); _ = svc.RunSwitchovers(swCtx) }()
	t.Cleanup(func() { stopSwitchovers(); <-swDone })
	if _, err := account.EnsureAdmin(ctx, db, "admin-password-1"); err != nil {
		t.Fatal(err)
	}
	s, err := web.New(web.Deps{Service: svc, DataDir: dir, APIToken: token, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s.Handler())
	t.Cleanup(ts.Close)
	return &server{t: t, url: ts.URL, dir: dir, eng: eng, logs: logs}
}

// callDeployed is call for a task on Kafka Connect, asked again (up to a
// minute) while the API answers that the task is not deployed yet: records
// on the target do not mean every connector's deploy has finished — one
// that met "a rebalance is expected" is tried again every poll, and until
// then a switchover, failover or failback is refused with "try again
// shortly" (ci67, ci69) — as an operator would, asked again.
func (s *server) callDeployed(method, path string, body any) (int, map[string]any) {
	s.t.Helper()
	code, answer := s.call(method, path, body)
	for deadline := time.Now().Add(time.Minute); code == http.StatusBadRequest &&
		strings.Contains(fmt.Sprint(answer["error"]), "not deployed on Kafka Connect yet") && time.Now().Before(deadline); {
		time.Sleep(time.Second)
		code, answer = s.call(method, path, body)
	}
	return code, answer
}

func (s *server) call(method, path string, body any) (int, map[string]any) {
	s.t.Helper()
	var r io.Reader
	if body != nil {
		b, err := json.Marshal(body)
		if err != nil {
			s.t.Fatal(err)
		}
		r = bytes.NewReader(b)
	}
	req, err := http.NewRequest(method, s.url+path, r)
	if err != nil {
		s.t.Fatal(err)
	}
	tok := token
	if s.tok != "" {
		tok = s.tok
	}
	req.Header.Set("Authorization", "Bearer "+tok)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	defer resp.Body.Close()
	raw, _ := io.ReadAll(resp.Body)
	var out map[string]any
	if len(raw) > 0 {
		if err := json.Unmarshal(raw, &out); err != nil {
			s.t.Fatalf("%s %s: %v\n%s", method, path, err, raw)
		}
	}
	return resp.StatusCode, out
}

func (s *server) register(name string, cs cluster.Settings) {
	s.t.Helper()
	cs.Name = name
	if code, body := s.call(http.MethodPost, "/api/v1/clusters", cs); code != http.StatusCreated {
		s.t.Fatalf("register %s: %d %v", name, code, body)
	}
}

// pushTask pushes topic from the registered "east" to a peer by address.
func pushTask(name, topic string, peer cluster.Settings, rf int) map[string]any {
	return map[string]any{
		"name": name, "type": "kafka-replication",
		"current": map[string]any{"cluster": "east", "alias": "A"},
		"peer": map[string]any{"alias": "B", "config_type": "address", "address": peer.BootstrapServers,
			"security_protocol": peer.SecurityProtocol, "sasl_mechanism": peer.SASLMechanism,
			"username": peer.Username, "password": peer.Password, "ca_pem": peer.CAPEM},
		"rules": map[string]any{"direction": "push", "topics": []string{topic}, "tasks": 2, "rename_topics": true,
			"add_source_header": true, "replication_factor": rf, "start_offset": "earliest", "compression": "lz4"},
	}
}

func problems(body map[string]any) map[string]string {
	out := map[string]string{}
	e, _ := body["error"].(map[string]any)
	ps, _ := e["problems"].([]any)
	for _, p := range ps {
		m := p.(map[string]any)
		out[m["field"].(string)] += m["message"].(string)
	}
	return out
}

// A task created through the API replicates between real clusters (the
// peer over SASL_SSL with SCRAM), and deleting it stops it. Its peer
// password is nowhere in clear: not in answers, the database or the log.
func TestTaskCreatedThroughAPIReplicatesAndDeleteStopsIt(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	east, west := kafkatest.Shared(t, 0), kafkatest.Shared(t, 1)
	s := newServer(t)
	s.register("east", east.Settings(cluster.Plaintext, ""))
	peer := west.Settings(cluster.SASLSSL, cluster.MechanismSCRAMSHA512)

	topic := kafkatest.NewTopic(t, east, 3, nil)
	const n = 2000
	if _, err := e2e.Produce(ctx, east.Settings(cluster.Plaintext, ""), topic, 3, n, 100); err != nil {
		t.Fatal(err)
	}
	name := "it-" + strings.ToLower(topic[len(topic)-8:])
	code, body := s.call(http.MethodPost, "/api/v1/tasks", pushTask(name, topic, peer, 1))
	if code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, body)
	}
	var answers []string
	raw, _ := json.Marshal(body)
	answers = append(answers, string(raw))

	if _, err := e2e.WaitFor(ctx, peer, "A."+topic, n, nil); err != nil {
		_, st := s.call(http.MethodGet, "/api/v1/tasks/"+name, nil)
		t.Fatalf("wait for the copy: %v\nstatus: %v", err, st)
	}
	code, body = s.call(http.MethodGet, "/api/v1/tasks/"+name, nil)
	raw, _ = json.Marshal(body)
	answers = append(answers, string(raw))
	st, _ := body["status"].(map[string]any)
	if code != http.StatusOK || st["state"] != "RUNNING" {
		t.Fatalf("status: %d %v", code, body)
	}

	if code, body := s.call(http.MethodDelete, "/api/v1/tasks/"+name, nil); code != http.StatusNoContent {
		t.Fatalf("delete: %d %v", code, body)
	}
	if s.eng.Running(name) {
		t.Fatal("the engine still runs the deleted task")
	}
	// Records produced after the delete are not copied: the copy stays at n
	// while the source grows (checked once the producer is acknowledged, so
	// a still-running task would have had them in flight).
	if _, err := e2e.Produce(ctx, east.Settings(cluster.Plaintext, ""), topic, 3, 500, 100); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(3 * time.Second)
	for time.Now().Before(deadline) {
		got, err := e2e.Count(ctx, peer, "A."+topic)
		if err != nil {
			t.Fatal(err)
		}
		if got != n {
			t.Fatalf("target holds %d records after the delete, want %d", got, n)
		}
		time.Sleep(500 * time.Millisecond)
	}

	for _, a := range answers {
		if strings.Contains(a, peer.Password) {
			t.Fatalf("an API answer holds the peer password: %s", a)
		}
	}
	for _, f := range []string{store.FileName, store.FileName + "-wal"} {
		b, err := os.ReadFile(filepath.Join(s.dir, f))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(peer.Password)) {
			t.Fatalf("%s holds the peer password in clear", f)
		}
	}
	if strings.Contains(s.logs.String(), peer.Password) {
		t.Fatal("the log holds the peer password")
	}
}

func failedStep(t *testing.T, body map[string]any, role string) map[string]any {
	t.Helper()
	cs, _ := body["clusters"].([]any)
	for _, c := range cs {
		cm := c.(map[string]any)
		if cm["role"] != role {
			continue
		}
		for _, st := range cm["steps"].([]any) {
			sm := st.(map[string]any)
			if sm["ok"] == false && sm["skipped"] == nil {
				return sm
			}
		}
	}
	t.Fatalf("no failed step for %s: %v", role, body)
	return nil
}

func TestConnectivityNamesTheFailedStep(t *testing.T) {
	east, west := kafkatest.Shared(t, 0), kafkatest.Shared(t, 1)
	s := newServer(t)
	s.register("east", east.Settings(cluster.Plaintext, ""))

	good := west.Settings(cluster.SASLPlaintext, cluster.MechanismSCRAMSHA512)
	code, body := s.call(http.MethodPost, "/api/v1/connectivity", pushTask("conn-ok", "orders", good, 1))
	if code != http.StatusOK || body["ok"] != true {
		t.Fatalf("good settings: %d %v", code, body)
	}

	wrong := good
	wrong.Password = "not-alice-secret"
	code, body = s.call(http.MethodPost, "/api/v1/connectivity", pushTask("conn-pw", "orders", wrong, 1))
	if code != http.StatusOK || body["ok"] != false {
		t.Fatalf("wrong password: %d %v", code, body)
	}
	if st := failedStep(t, body, "peer"); st["name"] != "sasl" || !strings.Contains(strings.ToLower(st["message"].(string)), "password") {
		t.Fatalf("wrong password: failed step %v", st)
	}

	gone := good
	gone.BootstrapServers = []string{"127.0.0.1:1"}
	code, body = s.call(http.MethodPost, "/api/v1/connectivity", pushTask("conn-tcp", "orders", gone, 1))
	if code != http.StatusOK || body["ok"] != false {
		t.Fatalf("unreachable: %d %v", code, body)
	}
	if st := failedStep(t, body, "peer"); st["name"] != "tcp" || !strings.Contains(st["message"].(string), "127.0.0.1:1") {
		t.Fatalf("unreachable: failed step %v", st)
	}
}

func TestReplicationFactorAboveBrokerCountIsRefused(t *testing.T) {
	east, west := kafkatest.Shared(t, 0), kafkatest.Shared(t, 1)
	s := newServer(t)
	s.register("east", east.Settings(cluster.Plaintext, ""))
	code, body := s.call(http.MethodPost, "/api/v1/tasks", pushTask("rf-too-high", "orders", west.Settings(cluster.Plaintext, ""), 2))
	msg := problems(body)["rules.replication_factor"]
	if code != http.StatusUnprocessableEntity || !strings.Contains(msg, "1 broker") {
		t.Fatalf("rf 2 on a single broker: %d %v", code, body)
	}
	// Unreachable target: refused, naming it.
	gone := west.Settings(cluster.Plaintext, "")
	gone.BootstrapServers = []string{"127.0.0.1:1"}
	code, body = s.call(http.MethodPost, "/api/v1/tasks", pushTask("rf-unreachable", "orders", gone, 1))
	if msg := problems(body)["peer.address"]; code != http.StatusUnprocessableEntity || !strings.Contains(msg, "127.0.0.1:1") {
		t.Fatalf("unreachable target: %d %v", code, body)
	}
	if code, body := s.call(http.MethodGet, "/api/v1/tasks", nil); code != 200 || fmt.Sprint(body["tasks"]) != "[]" {
		t.Fatalf("refused tasks were stored: %v", body)
	}
}

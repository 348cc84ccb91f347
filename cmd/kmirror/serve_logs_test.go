package main

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/e2e"
	"github.com/kmirror/kmirror/internal/kafkatest"
)

// `kmirror serve --log-format json` through a real flow with SASL
// passwords set — an instance registered with one, a task created with a
// peer password, both through the API — logs JSON lines: requests with
// their id, actor, status and duration, flows with their task, and no
// password or token anywhere.
func TestServeJSONLogsRequestsAndFlowsWithoutSecrets(t *testing.T) {
	k1, k2 := realKafka(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	topic := kafkatest.NewTopic(t, k1, 2, nil)
	east := k1.Settings(cluster.SASLPlaintext, cluster.MechanismSCRAMSHA512)
	peer := k2.Settings(cluster.SASLSSL, cluster.MechanismSCRAMSHA256)
	const n = 1000
	if _, err := e2e.Produce(ctx, east, topic, 2, n, 100); err != nil {
		t.Fatal(err)
	}

	s := startServe(t, t.TempDir(), "--log-format", "json", "--log-level", "debug")
	east.Name = "east"
	if code, body := s.apiCall(t, http.MethodPost, "/api/v1/clusters", east); code != http.StatusCreated {
		t.Fatalf("register east: %d %s", code, body)
	}
	tk := map[string]any{
		"name": "logs-task", "type": "kafka-replication",
		"current": map[string]any{"cluster": "east", "alias": "A"},
		"peer": map[string]any{"alias": "B", "config_type": "address", "address": peer.BootstrapServers,
			"security_protocol": peer.SecurityProtocol, "sasl_mechanism": peer.SASLMechanism,
			"username": peer.Username, "password": peer.Password, "ca_pem": peer.CAPEM},
		"rules": map[string]any{"direction": "push", "topics": []string{topic}, "tasks": 1, "rename_topics": true,
			"replication_factor": 1, "start_offset": "earliest"},
	}
	if code, body := s.apiCall(t, http.MethodPost, "/api/v1/tasks", tk); code != http.StatusCreated {
		t.Fatalf("create task: %d %s", code, body)
	}
	if _, err := e2e.WaitFor(ctx, peer, "A."+topic, n, nil); err != nil {
		t.Fatalf("%v\n%s", err, s.stderr.String())
	}
	// A refused request and an unknown one are logged too.
	if code, _ := s.apiCall(t, http.MethodGet, "/api/v1/tasks/no-such-task", nil); code != http.StatusNotFound {
		t.Fatalf("unknown task: %d", code)
	}
	if err := s.stop(); err != nil {
		t.Fatal(err)
	}

	log := s.stderr.String()
	for _, secret := range []string{east.Password, peer.Password, testToken, "backup-admin-password"} {
		checkJSONLog(t, log, secret)
	}
	for _, want := range []string{`"msg":"http request"`, `"request_id":`, `"actor":"KMIRROR_TOKEN"`, `"status":404`, `"duration":`,
		`"task":"logs-task","flow":`} {
		if !strings.Contains(log, want) {
			t.Errorf("the log has no %s", want)
		}
	}
	if t.Failed() {
		t.Log(log)
	}
}

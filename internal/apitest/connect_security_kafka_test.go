package apitest

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

// A task on Kafka Connect reaches its source with a client certificate
// (inline PEM keystore) and its target with OAUTHBEARER (Kafka's own login
// handler, tokens from the test's identity provider): every record copied.
func TestTaskOnConnectOverClientCertificateAndOAuth(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	west, east := kafkatest.Shared(t, 0), kafkatest.Shared(t, 1)
	cc := kafkatest.LazyConnect(t, "api", west)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Connect worker logs:\n%s", cc.LogTails(60))
		}
	})
	eastCert, err := east.SettingsWithCert(cluster.SSL, "")
	if err != nil {
		t.Fatal(err)
	}
	westOAuth, err := west.SettingsOAuth(cluster.SASLSSL, kafkatest.AliceOAuth)
	if err != nil {
		t.Fatal(err)
	}
	westOAuth.OAuth.Audience = "" // Kafka's login handler sends none; the provider's default is "kafka"
	s := newServer(t)
	s.register("east", eastCert)
	s.register("west", westOAuth)
	if code, body := s.call(http.MethodPost, "/api/v1/connect-clusters", map[string]any{
		"name": "wc", "urls": cc.URLs(), "kafka_cluster": "west"}); code != http.StatusCreated {
		t.Fatalf("register the Connect cluster: %d %v", code, body)
	}

	topic := kafkatest.NewTopic(t, east, 3, nil)
	const n = 600
	if _, err := e2e.Produce(ctx, eastCert, topic, 3, n, 200); err != nil {
		t.Fatal(err)
	}
	name := "ocs-" + strings.ToLower(topic[len(topic)-8:])
	spec := map[string]any{
		"name": name, "type": "kafka-replication", "engine": "connect:wc",
		"current": map[string]any{"cluster": "east", "alias": "A"},
		"peer":    map[string]any{"alias": "B", "config_type": "cluster", "cluster": "west"},
		"rules": map[string]any{"direction": "push", "topics": []string{topic}, "tasks": 2, "rename_topics": true,
			"sync_consumer_offsets": true, "start_offset": "earliest", "compression": "none"},
	}
	if code, body := s.call(http.MethodPost, "/api/v1/tasks", spec); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, body)
	}
	t.Cleanup(func() { s.call(http.MethodDelete, "/api/v1/tasks/"+name, nil) })
	if _, err := e2e.WaitFor(ctx, westOAuth, "A."+topic, n, nil); err != nil {
		_, st := s.call(http.MethodGet, "/api/v1/tasks/"+name, nil)
		t.Fatalf("wait for the copy: %v\nstatus: %v", err, st)
	}
	rep, err := e2e.Verify(ctx, eastCert, topic, westOAuth, "A."+topic, e2e.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("the copy on Connect differs from the source:\n%s", rep)
	}
	t.Logf("%v", rep)
}

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
	spec := connectTask(name, topic)
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

// A Connect cluster whose workers serve REST over https and require a
// client certificate (listeners.https.ssl.client.auth=required) is checked
// and runs a task when registered with one; without it the check names the
// refusal.
func TestConnectOverHTTPSWithClientCertificate(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	west, east := kafkatest.Shared(t, 0), kafkatest.Shared(t, 1)
	cc := kafkatest.NewConnect(t, west, kafkatest.ConnectName("mtls"), kafkatest.Workers(1), kafkatest.HTTPSClientAuth())
	cert, err := cc.ClientCert()
	if err != nil {
		t.Fatal(err)
	}
	s := newServer(t)
	s.register("east", east.Settings(cluster.Plaintext, ""))
	s.register("west", west.Settings(cluster.Plaintext, ""))
	for _, u := range cc.URLs() {
		if !strings.HasPrefix(u, "https://") {
			t.Fatalf("worker URL %s: want https", u)
		}
	}
	// Without a client certificate the workers refuse, and the check says so.
	if code, body := s.call(http.MethodPost, "/api/v1/connect-clusters", map[string]any{
		"name": "nocert", "urls": cc.URLs(), "kafka_cluster": "west", "ca_pem": cc.CAPEM()}); code != http.StatusCreated {
		t.Fatalf("register without a certificate: %d %v", code, body)
	}
	if _, body := s.call(http.MethodPost, "/api/v1/connect-clusters/nocert/check", nil); body["ok"] != false {
		t.Fatalf("check without a client certificate passed: %v", body)
	} else {
		t.Logf("without a certificate: %v", body)
	}
	if code, body := s.call(http.MethodPost, "/api/v1/connect-clusters", map[string]any{
		"name": "wc", "urls": cc.URLs(), "kafka_cluster": "west", "ca_pem": cc.CAPEM(),
		"client_cert_pem": cert.ChainPEM, "client_key_pem": cert.KeyPEM}); code != http.StatusCreated {
		t.Fatalf("register with a certificate: %d %v", code, body)
	}
	if _, body := s.call(http.MethodPost, "/api/v1/connect-clusters/wc/check", nil); body["ok"] != true {
		t.Fatalf("check with a client certificate: %v", body)
	}

	topic := kafkatest.NewTopic(t, east, 2, nil)
	const n = 300
	if _, err := e2e.Produce(ctx, east.Settings(cluster.Plaintext, ""), topic, 2, n, 100); err != nil {
		t.Fatal(err)
	}
	name := "https-" + strings.ToLower(topic[len(topic)-8:])
	spec := map[string]any{
		"name": name, "type": "kafka-replication", "engine": "connect:wc",
		"current": map[string]any{"cluster": "east", "alias": "A"},
		"peer":    map[string]any{"alias": "B", "config_type": "cluster", "cluster": "west"},
		"rules": map[string]any{"direction": "push", "topics": []string{topic}, "tasks": 1, "rename_topics": true,
			"start_offset": "earliest", "compression": "none"},
	}
	if code, body := s.call(http.MethodPost, "/api/v1/tasks", spec); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, body)
	}
	t.Cleanup(func() { s.call(http.MethodDelete, "/api/v1/tasks/"+name, nil) })
	target := west.Settings(cluster.Plaintext, "")
	if _, err := e2e.WaitFor(ctx, target, "A."+topic, n, nil); err != nil {
		_, st := s.call(http.MethodGet, "/api/v1/tasks/"+name, nil)
		t.Fatalf("wait for the copy: %v\nstatus: %v\n%s", err, st, cc.LogTails(40))
	}
	rep, err := e2e.Verify(ctx, east.Settings(cluster.Plaintext, ""), topic, target, "A."+topic, e2e.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("copy over https Connect: %v", rep)
	}
	// The status poll reads the workers through the same client.
	deadline := time.Now().Add(time.Minute)
	for {
		_, body := s.call(http.MethodGet, "/api/v1/tasks/"+name, nil)
		st, _ := body["status"].(map[string]any)
		if st["state"] == "RUNNING" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("status on https Connect: %v", body)
		}
		time.Sleep(time.Second)
	}
	t.Logf("%v", rep)
}

package apitest

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/e2e"
	"github.com/kmirror/kmirror/internal/kafkatest"
)

// A Connect cluster registered with a config-provider reference that has a
// path (Kafka's FileConfigProvider, as the workers define it) gets the
// source's SASL password as ${file:<path>:<cluster>.password}: the workers
// resolve it and copy, and neither Connect's REST API nor its config topic
// holds the password.
func TestConfigProviderWithAPathReachesKafkaOnConnect(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s, west, east, cc := connectServer(t)
	src := east.SettingsAs(cluster.SASLPlaintext, cluster.MechanismSCRAMSHA512, kafkatest.Alice)
	s.register("east-sasl", src)

	secrets := filepath.Join(t.TempDir(), "kafka.properties")
	if err := os.WriteFile(secrets, []byte("east-sasl.password="+kafkatest.Alice.Password+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	reference := "${file:" + secrets + ":%s}"
	// A reference without the key's place is refused by field, nothing
	// stored.
	code, body := s.call(http.MethodPost, "/api/v1/connect-clusters", map[string]any{
		"name": "wcp", "urls": cc.URLs(), "kafka_cluster": "west", "config_provider": "${file:" + secrets + ":password}"})
	if code != http.StatusUnprocessableEntity || !strings.Contains(problems(body)["config_provider"], "%s") {
		t.Fatalf("a reference without %%s: %d %v", code, body)
	}
	if code, body := s.call(http.MethodPost, "/api/v1/connect-clusters", map[string]any{
		"name": "wcp", "urls": cc.URLs(), "kafka_cluster": "west", "config_provider": reference}); code != http.StatusCreated {
		t.Fatalf("register the Connect cluster with a provider reference: %d %v", code, body)
	}

	topic := kafkatest.NewTopic(t, east, 2, nil)
	const n = 200
	if _, err := e2e.Produce(ctx, src, topic, 2, n, 100); err != nil {
		t.Fatal(err)
	}
	name := "cp-" + strings.ToLower(topic[len(topic)-8:])
	spec := connectTask(name, topic)
	spec["engine"] = "connect:wcp"
	spec["current"] = map[string]any{"cluster": "east-sasl", "alias": "A"}
	if code, body := s.call(http.MethodPost, "/api/v1/tasks", spec); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, body)
	}
	t.Cleanup(func() { s.call(http.MethodDelete, "/api/v1/tasks/"+name, nil) })
	target := west.Settings(cluster.Plaintext, "")
	if _, err := e2e.WaitFor(ctx, target, "A."+topic, n, nil); err != nil {
		_, st := s.call(http.MethodGet, "/api/v1/tasks/"+name, nil)
		t.Fatalf("wait for the copy through the provider's password: %v\nstatus: %v", err, st)
	}
	if rep, err := e2e.Verify(ctx, src, topic, target, "A."+topic, e2e.VerifyOptions{}); err != nil || !rep.OK() {
		t.Fatalf("the copy differs from the source: %v\n%v", err, rep)
	}

	// What Connect holds and shows is the reference.
	resp, err := http.Get(cc.URLs()[0] + "/connectors/kmirror." + name + ".A-B.source/config")
	if err != nil {
		t.Fatal(err)
	}
	shown, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(shown), "${file:"+secrets+":east-sasl.password}") || strings.Contains(string(shown), kafkatest.Alice.Password) {
		t.Fatalf("the connector's config as Connect shows it: %s", shown)
	}
	var held strings.Builder
	for _, m := range readRecords(t, west.Settings(cluster.Plaintext, ""), cc.ConfigTopic()) {
		held.Write(m.Key)
		held.Write(m.Value)
	}
	if !strings.Contains(held.String(), "kmirror."+name+".A-B.source") || !strings.Contains(held.String(), "east-sasl.password") {
		t.Fatalf("the task's connector configs are not in Connect's config topic %s as read", cc.ConfigTopic())
	}
	if strings.Contains(held.String(), kafkatest.Alice.Password) {
		t.Fatalf("Connect's config topic %s holds the password", cc.ConfigTopic())
	}
}

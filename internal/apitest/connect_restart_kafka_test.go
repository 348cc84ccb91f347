package apitest

import (
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/e2e"
	"github.com/kmirror/kmirror/internal/kafkatest"
)

// On a Connect cluster registered with auto_restart, a connector task that
// FAILED (its target topic denied to the user it writes as) is restarted by
// kmirror with back-off, counted on the flow, and copies everything once the
// topic is allowed again — no operator action.
func TestFailedConnectorTaskIsRestartedAutomatically(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	s, _, east, cc := connectServer(t)
	acl := kafkatest.Lazy(t, "acls", kafkatest.ACLs(true))
	s.register("acl-bob", acl.SettingsAs(cluster.SASLPlaintext, cluster.MechanismSCRAMSHA512, kafkatest.Bob))
	if code, body := s.call(http.MethodPost, "/api/v1/connect-clusters", map[string]any{
		"name": "wcr", "urls": cc.URLs(), "kafka_cluster": "west", "auto_restart": true}); code != http.StatusCreated || body["auto_restart"] != true {
		t.Fatalf("register the Connect cluster with auto_restart: %d %v", code, body)
	}

	topic := kafkatest.NewTopic(t, east, 1, nil)
	target := "A." + topic
	admin, err := acl.Admin()
	if err != nil {
		t.Fatal(err)
	}
	// Bob may do everything but write the target topic: Kafka takes a DENY
	// over any ALLOW.
	allow := sarama.Acl{Principal: "User:" + kafkatest.Bob.Name, Host: "*", Operation: sarama.AclOperationAll, PermissionType: sarama.AclPermissionAllow}
	deny := sarama.Acl{Principal: "User:" + kafkatest.Bob.Name, Host: "*", Operation: sarama.AclOperationWrite, PermissionType: sarama.AclPermissionDeny}
	var ras []*sarama.ResourceAcls
	for _, r := range []struct {
		typ  sarama.AclResourceType
		name string
	}{{sarama.AclResourceTopic, "*"}, {sarama.AclResourceGroup, "*"}, {sarama.AclResourceTransactionalID, "*"}, {sarama.AclResourceCluster, "kafka-cluster"}} {
		ras = append(ras, &sarama.ResourceAcls{Resource: sarama.Resource{ResourceType: r.typ, ResourceName: r.name, ResourcePatternType: sarama.AclPatternLiteral}, Acls: []*sarama.Acl{&allow}})
	}
	denied := sarama.Resource{ResourceType: sarama.AclResourceTopic, ResourceName: target, ResourcePatternType: sarama.AclPatternLiteral}
	ras = append(ras, &sarama.ResourceAcls{Resource: denied, Acls: []*sarama.Acl{&deny}})
	if err := admin.CreateACLs(ras); err != nil {
		t.Fatal(err)
	}
	const n = 100
	if _, err := e2e.Produce(ctx, east.Settings(cluster.Plaintext, ""), topic, 1, n, 100); err != nil {
		t.Fatal(err)
	}
	name := "ar-" + strings.ToLower(topic[len(topic)-8:])
	spec := connectTask(name, topic)
	spec["engine"] = "connect:wcr"
	spec["peer"] = map[string]any{"alias": "B", "config_type": "cluster", "cluster": "acl-bob"}
	spec["rules"].(map[string]any)["tasks"] = 1
	spec["rules"].(map[string]any)["sync_consumer_offsets"] = false
	if code, body := s.call(http.MethodPost, "/api/v1/tasks", spec); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, body)
	}
	t.Cleanup(func() { s.call(http.MethodDelete, "/api/v1/tasks/"+name, nil) })

	restarts := func() (state, reason string, n float64) {
		_, body := s.call(http.MethodGet, "/api/v1/tasks/"+name, nil)
		st, _ := body["status"].(map[string]any)
		state, _ = st["state"].(string)
		reason, _ = st["reason"].(string)
		flows, _ := st["flows"].([]any)
		for _, f := range flows {
			r, _ := f.(map[string]any)["restarts"].(float64)
			n += r
		}
		return state, reason, n
	}
	// Denied: the copy task fails, and kmirror restarts it (it fails again
	// while the topic stays denied; the back-off is restart_test.go's).
	deadline := time.Now().Add(3 * time.Minute)
	for {
		state, reason, n := restarts()
		if n >= 1 && state == "FAILED" && strings.Contains(reason, "restarted automatically") {
			t.Logf("denied: %s, %v automatic restarts: %s", state, n, reason)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("no automatic restart: %s (%s), %v restarts\n%s", state, reason, n, cc.LogTails(20))
		}
		time.Sleep(500 * time.Millisecond)
	}
	// Allowed again: the next automatic restart copies everything.
	if _, err := admin.DeleteACL(sarama.AclFilter{ResourceType: denied.ResourceType, ResourceName: &denied.ResourceName,
		ResourcePatternTypeFilter: sarama.AclPatternLiteral, Operation: sarama.AclOperationWrite, PermissionType: sarama.AclPermissionDeny}, false); err != nil {
		t.Fatal(err)
	}
	alice := acl.SettingsAs(cluster.SASLPlaintext, cluster.MechanismSCRAMSHA512, kafkatest.Alice)
	if _, err := e2e.WaitFor(ctx, alice, target, n, nil); err != nil {
		state, reason, restarted := restarts()
		t.Fatalf("after the topic was allowed: %v (%s: %s, %v restarts)", err, state, reason, restarted)
	}
	if rep, err := e2e.Verify(ctx, east.Settings(cluster.Plaintext, ""), topic, alice, target, e2e.VerifyOptions{AllowDuplicates: true}); err != nil || !rep.OK() {
		t.Fatalf("the copy after the restarts: %v\n%v", err, rep)
	}
	deadline = time.Now().Add(time.Minute)
	for {
		state, reason, n := restarts()
		if state == "RUNNING" {
			t.Logf("RUNNING again after %v automatic restarts", n)
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("not RUNNING after the copy: %s (%s)", state, reason)
		}
		time.Sleep(500 * time.Millisecond)
	}
}

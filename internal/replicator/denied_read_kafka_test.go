package replicator

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/e2e"
	"github.com/kmirror/kmirror/internal/engine"
	"github.com/kmirror/kmirror/internal/kafkatest"
	"github.com/kmirror/kmirror/internal/task"
)

// On real Kafka with ACLs: READ on one source topic taken from the task's
// user while it copies (a DENY ACL) stops only that topic, and says so:
// DEGRADED naming the partition and the right, the other topic copied in
// full; the right given back, it catches up, nothing lost or copied twice
// and nothing restarted.
func TestSourceReadDeniedOnRealKafkaWaitsAlone(t *testing.T) {
	t.Parallel() // its ACLs are on a cluster of its own
	k := kafkatest.Lazy(t, "acls", kafkatest.ACLs(true))
	admin := k.Settings(cluster.Plaintext, "") // the anonymous listener is a super user
	src := k.Settings(cluster.SASLPlaintext, cluster.MechanismSCRAMSHA512)
	dst := kafkatest.Shared(t, 0).Settings(cluster.Plaintext, "")
	denied, open := kafkatest.NewTopic(t, k, 1, nil), kafkatest.NewTopic(t, k, 1, nil)
	const n, more = 200, 100
	produceN(t, admin, denied, 1, n, 50)
	produceN(t, admin, open, 1, n, 50)
	tk := newTask("denied-read", task.DirectionPush, []string{denied, open})
	tk.Current.Alias, tk.Peer.Alias = "DRA", "DRB"
	tk.Rules.RenameTopics = true
	reps, stop := runUntilStopped(t, tk, src, dst)
	defer stop()
	verifyCopy(t, admin, denied, dst, "DRA."+denied, n, e2e.VerifyOptions{})
	verifyCopy(t, admin, open, dst, "DRA."+open, n, e2e.VerifyOptions{})
	// A fresh target may make the first start retry (its coordinator still
	// loading): only restarts from here on count.
	before := reps[0].Status()

	a, err := k.Admin()
	if err != nil {
		t.Fatal(err)
	}
	res := sarama.Resource{ResourceType: sarama.AclResourceTopic, ResourceName: denied, ResourcePatternType: sarama.AclPatternLiteral}
	deny := sarama.Acl{Principal: "User:" + kafkatest.Alice.Name, Host: "*", Operation: sarama.AclOperationRead, PermissionType: sarama.AclPermissionDeny}
	if err := a.CreateACLs([]*sarama.ResourceAcls{{Resource: res, Acls: []*sarama.Acl{&deny}}}); err != nil {
		t.Fatal(err)
	}
	produceN(t, admin, denied, 1, more, 50)
	produceN(t, admin, open, 1, more, 50)
	verifyCopy(t, admin, open, dst, "DRA."+open, n+more, e2e.VerifyOptions{})
	var st engine.FlowStatus
	waitForLong(t, 2*time.Minute, func() error {
		st = reps[0].Status()
		if st.State != task.StateDegraded || !strings.Contains(st.Reason, denied+"-0") || !strings.Contains(st.Reason, "READ") {
			return fmt.Errorf("state %s (%s), last error %q", st.State, st.Reason, st.LastError)
		}
		return nil
	})
	t.Logf("READ denied on %s: %s: %s", denied, st.State, st.Reason)

	name, principal, host := denied, "User:"+kafkatest.Alice.Name, "*"
	if _, err := a.DeleteACL(sarama.AclFilter{ResourceType: sarama.AclResourceTopic, ResourceName: &name,
		ResourcePatternTypeFilter: sarama.AclPatternLiteral, Principal: &principal, Host: &host,
		Operation: sarama.AclOperationRead, PermissionType: sarama.AclPermissionDeny}, false); err != nil {
		t.Fatal(err)
	}
	verifyCopy(t, admin, denied, dst, "DRA."+denied, n+more, e2e.VerifyOptions{})
	waitForLong(t, 2*time.Minute, func() error {
		if st = reps[0].Status(); st.State != task.StateRunning {
			return fmt.Errorf("state %s (%s)", st.State, st.Reason)
		}
		return nil
	})
	if st.Restarts != before.Restarts || st.Recopied != before.Recopied {
		t.Fatalf("flow restarted %d times, %d records copied again while the topic was denied: it should have waited alone",
			st.Restarts-before.Restarts, st.Recopied-before.Recopied)
	}
}

package replicator

import (
	"fmt"
	"strings"
	"testing"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/task"
)

// checkKeysInOrder checks that topic's partition 0 on s holds exactly the
// records k0..k<n-1>, in order: the source's, each once.
func checkKeysInOrder(t *testing.T, s cluster.Settings, topic string, n int) {
	t.Helper()
	for i, m := range readAll(t, s, topic, 0, n) {
		if string(m.Key) != fmt.Sprintf("k%d", i) {
			t.Fatalf("%s offset %d: key %q, want k%d (a record lost, doubled or out of order)", topic, i, m.Key, i)
		}
	}
	dst, _ := admin(t, s)
	if end, err := dst.GetOffset(topic, 0, sarama.OffsetNewest); err != nil || end != int64(n) {
		t.Fatalf("%s holds %d records (%v), want %d", topic, end, err, n)
	}
}

// deleteTargetUnderTheCopy copies k0..k29 of orders to A.orders (with the
// task's on_target_topic_replaced onReplaced), deletes A.orders under the
// running copy and produces k30..k39.
func deleteTargetUnderTheCopy(t *testing.T, onReplaced string) (*Replicator, cluster.Settings) {
	t.Helper()
	a, b := startFakes(t)
	createTopic(t, a, "orders", 1)
	produceKeys(t, a, "orders", 1, 0, 30)
	f := pushFlow(t, a, b, task.Rules{Direction: task.DirectionPush, Topics: []string{"orders"}, Tasks: 1,
		RenameTopics: true, ReplicationFactor: 1, StartOffset: task.StartEarliest, OnTargetTopicReplaced: onReplaced})
	if f.ContinueOnTargetReplaced != (onReplaced == task.TargetReplacedContinue) {
		t.Fatal("the flow does not carry the task's on_target_topic_replaced")
	}
	r := runFlow(t, f)
	waitProgress(t, r, 30)
	_, dstAdmin := admin(t, b)
	if err := dstAdmin.DeleteTopic("A.orders"); err != nil {
		t.Fatal(err)
	}
	produceKeys(t, a, "orders", 1, 30, 10)
	return r, b
}

// The scenario, shrunk: a target topic deleted under a running
// copy is created again and made whole from the source — every source
// record, once, in order — and the status names the topic and the records
// the target lost, counts the replacement, and is RUNNING again after.
func TestReplacedTargetTopicIsCopiedAgainFromTheSource(t *testing.T) {
	r, b := deleteTargetUnderTheCopy(t, "")
	waitFor(t, func() error {
		st := r.Status()
		if st.State != task.StateRunning || st.LostOnTarget != 30 || st.TargetTopicsReplaced != 1 || targetTotal(t, b, "A.orders", 1) != 40 {
			return fmt.Errorf("state %s (%s), lost %d, replaced %d, target holds %d", st.State, st.Reason, st.LostOnTarget,
				st.TargetTopicsReplaced, targetTotal(t, b, "A.orders", 1))
		}
		return nil
	})
	checkKeysInOrder(t, b, "A.orders", 40)
	if st := r.Status(); !strings.Contains(st.LastError, "target topic A.orders was deleted or created again") || !strings.Contains(st.LastError, "up to 30 records") {
		t.Fatalf("last error %q does not name the topic and the loss", st.LastError)
	}
}

// A target topic deleted and created again by hand while kmirror was
// stopped is found by its id (the progress stored names the old one): the
// copy starts over from the source's first record.
func TestTargetTopicCreatedAgainWhileStoppedIsFoundByItsID(t *testing.T) {
	a, b := startFakes(t)
	createTopic(t, a, "orders", 1)
	produceKeys(t, a, "orders", 1, 0, 30)
	f := pushFlow(t, a, b, task.Rules{Direction: task.DirectionPush, Topics: []string{"orders"}, Tasks: 1,
		RenameTopics: true, ReplicationFactor: 1, StartOffset: task.StartEarliest})
	r, stop := startStoppable(f)
	waitProgress(t, r, 30)
	stop()
	_, dstAdmin := admin(t, b)
	if err := dstAdmin.DeleteTopic("A.orders"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() error { // deletion is asynchronous
		return dstAdmin.CreateTopic("A.orders", &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false)
	})
	produceKeys(t, a, "orders", 1, 30, 10)
	r, stop = startStoppable(f)
	defer stop()
	waitFor(t, func() error {
		if n := targetTotal(t, b, "A.orders", 1); n != 40 || r.Status().LostOnTarget != 30 {
			return fmt.Errorf("target holds %d, lost %d", n, r.Status().LostOnTarget)
		}
		return nil
	})
	checkKeysInOrder(t, b, "A.orders", 40)
}

// With on_target_topic_replaced continue, the copy goes on from its
// progress onto the new topic: only what came after is there, the loss is
// counted and the flow says so (DEGRADED) instead of copying again.
func TestReplacedTargetTopicContinuesFromTheProgressWhenAsked(t *testing.T) {
	r, b := deleteTargetUnderTheCopy(t, task.TargetReplacedContinue)
	waitFor(t, func() error {
		st := r.Status()
		if st.State != task.StateDegraded || !strings.Contains(st.Reason, "stay lost") || st.LostOnTarget != 30 || targetTotal(t, b, "A.orders", 1) != 10 {
			return fmt.Errorf("state %s (%s), lost %d, target holds %d", st.State, st.Reason, st.LostOnTarget, targetTotal(t, b, "A.orders", 1))
		}
		return nil
	})
	for i, m := range readAll(t, b, "A.orders", 0, 10) {
		if want := fmt.Sprintf("k%d", 30+i); string(m.Key) != want {
			t.Fatalf("offset %d: key %q, want %s", i, m.Key, want)
		}
	}
}

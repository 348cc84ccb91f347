package replicator

import (
	"context"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/kafkatest"
	"github.com/kmirror/kmirror/internal/mm2"
	"github.com/kmirror/kmirror/internal/policy"
	"github.com/kmirror/kmirror/internal/task"
)

// endOffset is the end of a topic-partition, 0 when the topic is missing.
func endOffset(t *testing.T, s cluster.Settings, topic string, p int32) int64 {
	t.Helper()
	c, _ := admin(t, s)
	off, err := c.GetOffset(topic, p, sarama.OffsetNewest)
	if err != nil {
		return 0
	}
	return off
}

// heartbeatsFrom reads a heartbeats topic from offset from on until it holds
// want heartbeats of flow source -> target (others' are skipped).
func heartbeatsFrom(t *testing.T, s cluster.Settings, topic string, from int64, source, target string, want int) []mm2.Heartbeat {
	t.Helper()
	var out []mm2.Heartbeat
	c, _ := admin(t, s)
	waitFor(t, func() error {
		time.Sleep(300 * time.Millisecond) // a read per beat or so
		out = out[:0]
		err := readTopic(c, topic, func(m *sarama.ConsumerMessage) {
			if m.Offset < from {
				return
			}
			hb, err := mm2.DecodeHeartbeat(m.Key, m.Value)
			if err != nil {
				t.Fatalf("%s offset %d: %v", topic, m.Offset, err)
			}
			if hb.SourceAlias == source && hb.TargetAlias == target {
				out = append(out, hb)
			}
		})
		if err != nil {
			return err
		}
		if len(out) < want {
			return fmt.Errorf("%s: %d heartbeats %s -> %s since offset %d, want %d", topic, len(out), source, target, from, want)
		}
		return nil
	})
	return out
}

// heartbeatsTopics are a cluster's heartbeats topics.
func heartbeatsTopics(t *testing.T, s cluster.Settings) []string {
	t.Helper()
	c, _ := admin(t, s)
	if err := c.RefreshMetadata(); err != nil {
		t.Fatal(err)
	}
	all, err := c.Topics()
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, topic := range all {
		if policy.IsHeartbeats(topic) {
			out = append(out, topic)
		}
	}
	return out
}

// A renaming bidirectional task on real Kafka: each flow writes heartbeats
// to its target (aliases right, time advancing), each replicates the
// other side's heartbeats topic as "<alias>.heartbeats" and none goes
// back round; Apache Kafka's MirrorClient on either cluster then finds the
// other as its upstream cluster, one hop away.
func TestHeartbeatsAreWrittenAndReplicatedForMirrorClient(t *testing.T) {
	k1, k2 := kafkatest.Shared(t, 0), kafkatest.Shared(t, 1)
	a, b := k1.Settings(cluster.Plaintext, ""), k2.Settings(cluster.Plaintext, "")
	topic := kafkatest.TopicName(t.Name())
	produceN(t, a, topic, 1, 10, 10)
	fromA, fromB := endOffset(t, a, policy.HeartbeatsTopic, 0), endOffset(t, b, policy.HeartbeatsTopic, 0)
	replicatedB := endOffset(t, b, "A.heartbeats", 0)

	tk := newTask("heartbeats", task.DirectionBidirectional, []string{topic})
	tk.Rules.RenameTopics = true
	reps := startTask(t, tk, a, b)

	for _, c := range []struct {
		s              cluster.Settings
		from           int64
		source, target string
	}{{b, fromB, "A", "B"}, {a, fromA, "B", "A"}} {
		beats := heartbeatsFrom(t, c.s, policy.HeartbeatsTopic, c.from, c.source, c.target, 3)
		for i := 1; i < len(beats); i++ {
			if beats[i].Timestamp <= beats[i-1].Timestamp {
				t.Fatalf("heartbeats %s -> %s: time %d after %d", c.source, c.target, beats[i].Timestamp, beats[i-1].Timestamp)
			}
		}
	}
	// A's heartbeats topic (B -> A's beats) reaches B as A.heartbeats.
	heartbeatsFrom(t, b, "A.heartbeats", replicatedB, "B", "A", 2)
	waitFor(t, func() error {
		for _, r := range reps {
			st := r.Status()
			found := false
			for _, p := range st.Topics {
				found = found || p.Source == policy.HeartbeatsTopic
			}
			if st.State != task.StateRunning || !found {
				return fmt.Errorf("%s: %s (%s), topics %v", st.Flow, st.State, st.Reason, st.Topics)
			}
		}
		return nil
	})
	// Nothing went round: no heartbeats topic on a cluster names that
	// cluster's own alias in its chain.
	time.Sleep(2 * time.Second) // two more topic refreshes
	for _, c := range []struct {
		s     cluster.Settings
		alias string
	}{{a, "A"}, {b, "B"}} {
		for _, hb := range heartbeatsTopics(t, c.s) {
			if strings.HasPrefix(hb, c.alias+".") || strings.Contains(hb, "."+c.alias+".") {
				t.Fatalf("heartbeats looped back to %s: %s", c.alias, hb)
			}
		}
	}

	upstream, hops := mirrorClient(t, k2.Bootstrap(cluster.Plaintext), "A")
	if !strings.Contains(","+upstream+",", ",A,") || hops != 1 {
		t.Fatalf("MirrorClient on B: upstream clusters %q, hops to A %d; want A among them, 1 hop", upstream, hops)
	}
	t.Logf("MirrorClient on B: upstream clusters %s, hops to A %d", upstream, hops)
}

// mirrorClient runs testdata/Upstream.java on the Kafka jars: MM2's
// RemoteClusterUtils.upstreamClusters and replicationHops(alias).
func mirrorClient(t *testing.T, bootstrap, alias string) (upstream string, hops int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	jars, err := kafkatest.EnsureJars(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.CommandContext(ctx, "java", "-cp", jars.Classpath(), "testdata/Upstream.java", bootstrap, alias).Output()
	if err != nil {
		var stderr []byte
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = ee.Stderr
		}
		t.Fatalf("RemoteClusterUtils: %v\n%s", err, stderr)
	}
	hops = -2
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "upstream "); ok {
			upstream = strings.TrimSpace(v)
		}
		if v, ok := strings.CutPrefix(line, "hops "); ok {
			if _, err := fmt.Sscan(v, &hops); err != nil {
				hops = -3 // not a number: the caller's check fails with it
			}
		}
	}
	return upstream, hops
}

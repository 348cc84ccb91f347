package replicator

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/engine"
	"github.com/kmirror/kmirror/internal/mm2"
	"github.com/kmirror/kmirror/internal/policy"
	"github.com/kmirror/kmirror/internal/task"
)

// A failed heartbeat never fails the flow; it shows as the flow's reason
// only once heartbeats failed for DegradedAfter, and a written one clears it.
func TestHeartbeatFailureDegradesOnlyWhenItPersists(t *testing.T) {
	s := newFlowState("A->B")
	s.degradedAfter = 30 * time.Second
	s.set(task.StateRunning, "")
	t0 := time.Now()
	boom := errors.New("not authorized to write heartbeats")
	cases := []struct {
		name  string
		err   error // nil: a heartbeat written
		at    time.Duration
		state task.State
	}{
		{"first failure", boom, 0, task.StateRunning},
		{"failing, not long yet", boom, 10 * time.Second, task.StateRunning},
		{"failing for DegradedAfter", boom, 31 * time.Second, task.StateDegraded},
		{"written again", nil, 32 * time.Second, task.StateRunning},
		{"a new failure starts its own wait", boom, 40 * time.Second, task.StateRunning},
	}
	for _, c := range cases {
		s.heartbeat(c.err, t0.Add(c.at))
		st := s.snapshot(t0.Add(c.at))
		if st.State != c.state {
			t.Fatalf("%s: state %s (%s), want %s", c.name, st.State, st.Reason, c.state)
		}
		if c.state == task.StateDegraded && (!strings.Contains(st.Reason, "heartbeats") || !strings.Contains(st.Reason, boom.Error())) {
			t.Fatalf("%s: reason %q", c.name, st.Reason)
		}
	}
}

// A flow writes MM2 heartbeats (its aliases, the time) to the heartbeats
// topic on its target, which it creates compacted with one partition.
func TestFlowWritesHeartbeatsToItsTarget(t *testing.T) {
	a, b := startFakes(t)
	createTopic(t, a, "orders", 1)
	f := pushFlow(t, a, b, task.Rules{Direction: task.DirectionPush, Topics: []string{"orders"}, Tasks: 1,
		ReplicationFactor: 1, StartOffset: "earliest", Compression: "none"})
	r := New(f, Options{RefreshInterval: 500 * time.Millisecond, HeartbeatInterval: 50 * time.Millisecond}, nil)
	stop := runUntil(t, r)
	defer stop()
	beats := readAll(t, b, policy.HeartbeatsTopic, 0, 5)
	var last int64
	for i, m := range beats {
		hb, err := mm2.DecodeHeartbeat(m.Key, m.Value)
		if err != nil {
			t.Fatal(err)
		}
		if hb.SourceAlias != "A" || hb.TargetAlias != "B" {
			t.Fatalf("heartbeat %d: %+v, want A -> B", i, hb)
		}
		if hb.Timestamp <= last || m.Timestamp.UnixMilli() != hb.Timestamp {
			t.Fatalf("heartbeat %d: time %d after %d, record time %d", i, hb.Timestamp, last, m.Timestamp.UnixMilli())
		}
		last = hb.Timestamp
	}
	_, adm := admin(t, b)
	cfgs, err := topicConfigs(adm, []string{policy.HeartbeatsTopic}, false)
	if err != nil {
		t.Fatal(err)
	}
	if got := cfgs[policy.HeartbeatsTopic]["cleanup.policy"]; got != "compact" {
		t.Fatalf("heartbeats topic cleanup.policy %q, want compact", got)
	}
	// Heartbeats start before the workers: RUNNING may come later on a
	// starved CPU (seen STARTING under the race detector, ci63).
	waitState(t, r, time.Minute, func(st engine.FlowStatus) error {
		if st.State != task.StateRunning {
			return fmt.Errorf("want RUNNING")
		}
		return nil
	})
}

// A negative interval writes no heartbeats.
func TestHeartbeatsOff(t *testing.T) {
	a, b := startFakes(t)
	createTopic(t, a, "orders", 1)
	produce(t, a, &sarama.ProducerMessage{Topic: "orders", Partition: 0, Value: sarama.StringEncoder("x")})
	f := pushFlow(t, a, b, task.Rules{Direction: task.DirectionPush, Topics: []string{"orders"}, Tasks: 1,
		ReplicationFactor: 1, StartOffset: "earliest", Compression: "none"})
	r := New(f, Options{RefreshInterval: 500 * time.Millisecond, HeartbeatInterval: -1}, nil)
	stop := runUntil(t, r)
	defer stop()
	readAll(t, b, "orders", 0, 1)
	time.Sleep(300 * time.Millisecond)
	c, _ := admin(t, b)
	topics, err := c.Topics()
	if err != nil {
		t.Fatal(err)
	}
	for _, topic := range topics {
		if topic == policy.HeartbeatsTopic {
			t.Fatal("heartbeats topic created with heartbeats off")
		}
	}
}

// runUntil runs r until the returned stop is called.
func runUntil(t *testing.T, r *Replicator) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	var wg sync.WaitGroup
	wg.Go(func() { _ = r.Run(ctx) })
	return func() { cancel(); wg.Wait() }
}

// dataOnly is a flow's status without its heartbeats partitions (and their
// records and lag): on the shared test clusters a flow also replicates the
// heartbeats other tests' flows wrote to its source.
func dataOnly(st engine.FlowStatus) engine.FlowStatus {
	parts := st.Partitions[:0:0]
	st.Records, st.LagRecords, st.LostOnTarget, st.ExpiredOnSource, st.Recopied = 0, 0, 0, 0, 0
	for _, p := range st.Partitions {
		if policy.IsHeartbeats(p.Topic) {
			continue
		}
		parts = append(parts, p)
		st.Records += p.Records
		st.LagRecords += p.Lag
		st.LostOnTarget += p.LostOnTarget
		st.ExpiredOnSource += p.ExpiredOnSource
		st.Recopied += p.Recopied
	}
	st.Partitions = parts
	return st
}

// The target refusing the flow's heartbeats (no rights on the topic) never
// stops the copy: every record arrives, and the flow shows DEGRADED with the
// reason once heartbeats failed for DegradedAfter; granted again, it runs.
func TestRefusedHeartbeatsDegradeButNeverStopTheCopy(t *testing.T) {
	const n = 100
	cs, a, b := startFaultyPair(t, n)
	denied := cs[1].Fault(kfake.Fault{Keys: []kmsg.Key{kmsg.Produce}, Topic: policy.HeartbeatsTopic,
		Err: kerr.TopicAuthorizationFailed, Count: -1})
	f := pushFlow(t, a, b, task.Rules{Direction: task.DirectionPush, Topics: []string{"orders"}, Tasks: 1,
		RenameTopics: true, ReplicationFactor: 1, StartOffset: "earliest", Compression: "none"})
	r := New(f, Options{RefreshInterval: 500 * time.Millisecond, CommitInterval: 100 * time.Millisecond,
		DegradedAfter: time.Second, HeartbeatInterval: 100 * time.Millisecond}, nil)
	stop := runUntil(t, r)
	defer stop()
	checkExactCopy(t, b, 0, n)
	checkExactCopy(t, b, 1, n)
	waitFor(t, func() error {
		if st := r.Status(); st.State != task.StateDegraded || !strings.Contains(st.Reason, "heartbeats not written") || st.Records != 2*n {
			return fmt.Errorf("state %s (%s), records %d", st.State, st.Reason, st.Records)
		}
		return nil
	})
	denied.Remove()
	waitFor(t, func() error {
		if st := r.Status(); st.State != task.StateRunning {
			return fmt.Errorf("state %s (%s) after heartbeats were allowed again", st.State, st.Reason)
		}
		return nil
	})
}

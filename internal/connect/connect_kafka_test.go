package connect_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/connect"
	"github.com/kmirror/kmirror/internal/kafkatest"
)

// Two clusters: the first holds the Connect cluster's topics and is where
// MirrorSourceConnector writes; the second is the source it copies from.
func TestMain(m *testing.M) { kafkatest.Main(m, 2) }

const mirrorSource = "org.apache.kafka.connect.mirror.MirrorSourceConnector"

// setup is the shared Connect cluster, the source cluster and a client
// knowing every worker.
func setup(t *testing.T) (*kafkatest.ConnectCluster, *kafkatest.Cluster, *connect.Client) {
	t.Helper()
	target, source := kafkatest.Shared(t, 0), kafkatest.Shared(t, 1)
	cc := kafkatest.LazyConnect(t, "connect", target)
	c, err := connect.New(connect.Config{URLs: cc.URLs(), DialTimeout: 2 * time.Second, Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Connect worker logs:\n%s", cc.LogTails(40))
		}
	})
	return cc, source, c
}

func TestServerInfoPluginsAndValidation(t *testing.T) {
	cc, source, c := setup(t)
	ctx := context.Background()
	si, err := c.ServerInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if si.Version != cc.Version() || si.KafkaClusterID != cc.Kafka().ID() || si.Commit == "" {
		t.Errorf("server info %+v, want version %s on cluster %s", si, cc.Version(), cc.Kafka().ID())
	}
	plugins, err := c.Plugins(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var classes []string
	for _, p := range plugins {
		classes = append(classes, p.Class)
	}
	for _, want := range []string{mirrorSource,
		"org.apache.kafka.connect.mirror.MirrorCheckpointConnector",
		"org.apache.kafka.connect.mirror.MirrorHeartbeatConnector",
		"org.apache.kafka.connect.transforms.InsertHeader",
	} {
		if !slices.Contains(classes, want) {
			t.Errorf("plugin %s not listed in %v", want, classes)
		}
	}

	// Connect checks the name too, though validation creates nothing.
	good := mirrorConfig(cc, source, "orders", 1)
	good["name"] = "validate-only"
	v, err := c.ValidateConfig(ctx, mirrorSource, good)
	if err != nil {
		t.Fatal(err)
	}
	if v.ErrorCount != 0 || v.Name != mirrorSource || len(v.Configs) == 0 {
		t.Errorf("a valid configuration: %d errors %v, name %q, %d settings", v.ErrorCount, v.Errors(), v.Name, len(v.Configs))
	}
	bad := mirrorConfig(cc, source, "orders", 1)
	bad["name"], bad["tasks.max"] = "validate-only", "many"
	v, err = c.ValidateConfig(ctx, "MirrorSourceConnector", bad)
	if err != nil {
		t.Fatal(err)
	}
	if v.ErrorCount == 0 || len(v.Errors()["tasks.max"]) == 0 {
		t.Errorf("tasks.max=many: %d errors %v, want one on tasks.max", v.ErrorCount, v.Errors())
	}
	// Connect answers 500 (not 404) for an unknown class.
	if _, err = c.ValidateConfig(ctx, "no.such.Connector", map[string]string{"name": "x"}); err == nil || !strings.Contains(err.Error(), "no.such.Connector") {
		t.Fatalf("an unknown plugin: got %v", err)
	}
}

// A MirrorSourceConnector on the Connect cluster copies a topic from the
// source cluster; its offsets, read in MirrorMaker 2's shape, move the copy
// back when altered while stopped; pause, resume, restart and delete work.
func TestMirrorSourceLifecycle(t *testing.T) {
	cc, source, c := setup(t)
	ctx := context.Background()
	topic := kafkatest.NewTopic(t, source, 2, nil)
	perPartition := []int{60, 40}
	produce(t, source, topic, perPartition, "a")
	name := connectorName(t)
	remote := "src." + topic

	info, created, err := c.CreateOrUpdate(ctx, name, mirrorConfig(cc, source, topic, 2))
	if err != nil {
		t.Fatal(err)
	}
	if !created || info.Name != name || info.Config["topics"] != topic {
		t.Fatalf("create: created %v, info %+v", created, info)
	}
	t.Cleanup(func() { _ = c.Delete(context.Background(), name) })
	waitRunning(t, c, name, 2)
	waitCount(t, cc.Kafka(), remote, 100)
	checkValues(t, cc.Kafka(), remote, "a", perPartition)

	views, err := c.Connectors(ctx)
	if err != nil {
		t.Fatal(err)
	}
	view, ok := views[name]
	if !ok || view.Info.Config["connector.class"] != mirrorSource || view.Status.Connector.State != connect.StateRunning || view.Info.Type != "source" {
		t.Fatalf("connectors list: %+v (present %v)", view, ok)
	}

	// The last copied offset of each partition, in MirrorSourceConnector's
	// shape.
	want := map[int32]int64{0: 59, 1: 39}
	waitOffsets(t, c, name, topic, want)

	// Stopped, partition 0 is moved back to its 30th record: resumed, the
	// copy repeats records 30..59 there.
	if err := c.Stop(ctx, name); err != nil {
		t.Fatal(err)
	}
	waitState(t, c, name, connect.StateStopped, 0)
	msg, err := c.AlterOffsets(ctx, name, []connect.Offset{connect.MirrorSourceOffset("src", topic, 0, 29)})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("alter: %s", msg)
	waitOffsets(t, c, name, topic, map[int32]int64{0: 29, 1: 39})
	if err := c.Resume(ctx, name); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, c, name, 2)
	waitCount(t, cc.Kafka(), remote, 130)
	waitOffsets(t, c, name, topic, want)

	// Paused and resumed, it copies what came meanwhile.
	if err := c.Pause(ctx, name); err != nil {
		t.Fatal(err)
	}
	waitState(t, c, name, connect.StatePaused, 2)
	produce(t, source, topic, []int{10, 10}, "b")
	if err := c.Resume(ctx, name); err != nil {
		t.Fatal(err)
	}
	waitRunning(t, c, name, 2)
	waitCount(t, cc.Kafka(), remote, 150)

	st, err := c.Restart(ctx, name, true, false)
	if err != nil {
		t.Fatal(err)
	}
	if st == nil || len(st.Tasks) != 2 {
		t.Fatalf("restart with tasks answered %+v, want the connector and 2 tasks", st)
	}
	waitRunning(t, c, name, 2)

	// Reset while stopped: no offset is left.
	if err := c.Stop(ctx, name); err != nil {
		t.Fatal(err)
	}
	waitState(t, c, name, connect.StateStopped, 0)
	if _, err := c.ResetOffsets(ctx, name); err != nil {
		t.Fatal(err)
	}
	// Connect may still list the partitions, each with an empty offset
	// (the reset's null records), until its offsets topic moves on.
	if o, err := c.Offsets(ctx, name); err != nil || slices.ContainsFunc(o.Offsets, func(p connect.Offset) bool { return len(p.Offset) > 0 }) {
		t.Fatalf("offsets after a reset: %+v, %v", o, err)
	}

	if err := c.Delete(ctx, name); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Connector(ctx, name); !connect.IsNotFound(err) {
		t.Fatalf("deleted connector: got %v, want not found", err)
	}
	if err := c.Pause(ctx, name); !connect.IsNotFound(err) || !strings.Contains(err.Error(), name) {
		t.Fatalf("pause of a deleted connector: got %v", err)
	}
}

// Killing the worker that runs a task with SIGKILL: the client moves to the
// other worker, the tasks are RUNNING there once the group has given up on
// the dead one, and records produced afterwards are copied.
func TestTasksMoveAfterWorkerKill(t *testing.T) {
	cc, source, _ := setup(t)
	ctx := context.Background()
	topic := kafkatest.NewTopic(t, source, 2, nil)
	produce(t, source, topic, []int{20, 20}, "a")
	name := connectorName(t)
	remote := "src." + topic

	c0, err := connect.New(connect.Config{URLs: cc.URLs(), DialTimeout: 2 * time.Second, Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := c0.CreateOrUpdate(ctx, name, mirrorConfig(cc, source, topic, 2)); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c0.Delete(context.Background(), name) })
	st := waitRunning(t, c0, name, 2)
	waitCount(t, cc.Kafka(), remote, 40)
	// With the offsets committed, the tasks resume where they were: no
	// record is copied twice. (Killed before the commit, they would copy
	// again what came after the last one: at least once.)
	waitOffsets(t, c0, name, topic, map[int32]int64{0: 19, 1: 19})

	victim := cc.WorkerIndex(st.Tasks[0].WorkerID)
	if victim < 0 {
		t.Fatalf("task 0 runs on %s, not a worker of %v", st.Tasks[0].WorkerID, cc.URLs())
	}
	// The dead worker first: every request must fail over.
	urls := cc.URLs()
	urls[0], urls[victim] = urls[victim], urls[0]
	c, err := connect.New(connect.Config{URLs: urls, DialTimeout: 2 * time.Second, Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("tasks on %v; killing worker %d (%s)", taskWorkers(st), victim, cc.WorkerID(victim))
	killed := time.Now()
	if err := cc.KillWorker(victim); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if err := cc.RestartWorker(ctx, victim); err != nil {
			t.Errorf("leave the Connect cluster whole: %v", err)
		}
	})
	survivor := cc.WorkerID(1 - victim)
	moved := waitFor(t, 5*time.Minute, "tasks RUNNING on "+survivor, func() (bool, string) {
		st, err := c.Status(ctx, name)
		if err != nil {
			return false, err.Error()
		}
		ok := len(st.Tasks) == 2
		for _, task := range st.Tasks {
			ok = ok && task.State == connect.StateRunning && task.WorkerID == survivor
		}
		return ok, fmt.Sprintf("connector %s on %s, tasks %v", st.Connector.State, st.Connector.WorkerID, taskWorkers(st))
	})
	t.Logf("tasks RUNNING on the surviving worker %s after the kill (session timeout + scheduled.rebalance.max.delay.ms)", moved.Sub(killed).Round(time.Millisecond))
	produce(t, source, topic, []int{5, 5}, "b")
	waitCount(t, cc.Kafka(), remote, 50)
}

func taskWorkers(st connect.ConnectorStatus) []string {
	var s []string
	for _, task := range st.Tasks {
		s = append(s, fmt.Sprintf("%d:%s@%s", task.ID, task.State, task.WorkerID))
	}
	return s
}

// mirrorConfig copies topic from source (alias src) to the Connect
// cluster's own Kafka (alias dst), as src.<topic>.
func mirrorConfig(cc *kafkatest.ConnectCluster, source *kafkatest.Cluster, topic string, tasks int) map[string]string {
	return map[string]string{
		"connector.class":                       mirrorSource,
		"tasks.max":                             fmt.Sprint(tasks),
		"source.cluster.alias":                  "src",
		"target.cluster.alias":                  "dst",
		"source.cluster.bootstrap.servers":      source.Bootstrap(cluster.Plaintext),
		"target.cluster.bootstrap.servers":      cc.Kafka().Bootstrap(cluster.Plaintext),
		"topics":                                topic,
		"replication.factor":                    "1",
		"offset-syncs.topic.replication.factor": "1",
		"sync.topic.acls.enabled":               "false",
		"sync.topic.configs.enabled":            "false",
	}
}

func connectorName(t *testing.T) string {
	n := kafkatest.TopicName(t.Name())
	return "mirror-" + n[max(0, len(n)-40):]
}

// produce writes counts[p] records to each partition p of topic, values
// "<tag>-<p>-<i>".
func produce(t *testing.T, c *kafkatest.Cluster, topic string, counts []int, tag string) {
	t.Helper()
	s := c.Settings(cluster.Plaintext, "")
	cfg, err := s.Config("connect-test")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	p, err := sarama.NewSyncProducer(s.BootstrapServers, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	var msgs []*sarama.ProducerMessage
	for part, n := range counts {
		for i := range n {
			msgs = append(msgs, &sarama.ProducerMessage{Topic: topic, Partition: int32(part),
				Value: sarama.StringEncoder(fmt.Sprintf("%s-%d-%d", tag, part, i))})
		}
	}
	if err := p.SendMessages(msgs); err != nil {
		t.Fatalf("produce to %s: %v", topic, err)
	}
}

// count is the number of records in topic: the sum of its partitions'
// end offsets (MirrorMaker 2 writes without transactions, so every offset
// is a record).
func count(c *kafkatest.Cluster, topic string) (int64, error) {
	cfg, err := c.Settings(cluster.Plaintext, "").Config("connect-test-count")
	if err != nil {
		return 0, err
	}
	client, err := sarama.NewClient(c.BootstrapServers(cluster.Plaintext), cfg)
	if err != nil {
		return 0, err
	}
	defer client.Close()
	ps, err := client.Partitions(topic)
	if err != nil {
		return 0, err
	}
	var n int64
	for _, p := range ps {
		end, err := client.GetOffset(topic, p, sarama.OffsetNewest)
		if err != nil {
			return 0, err
		}
		n += end
	}
	return n, nil
}

func waitCount(t *testing.T, c *kafkatest.Cluster, topic string, want int64) {
	t.Helper()
	var got int64
	waitFor(t, 3*time.Minute, fmt.Sprintf("%d records in %s", want, topic), func() (bool, string) {
		n, err := count(c, topic)
		if err != nil {
			return false, err.Error()
		}
		got = n
		return n >= want, fmt.Sprintf("%d records", n)
	})
	if got != want {
		t.Fatalf("%s holds %d records, want %d", topic, got, want)
	}
}

// checkValues reads every record of topic and finds each value produced
// with tag exactly once, in its partition.
func checkValues(t *testing.T, c *kafkatest.Cluster, topic, tag string, perPartition []int) {
	t.Helper()
	cfg, err := c.Settings(cluster.Plaintext, "").Config("connect-test-read")
	if err != nil {
		t.Fatal(err)
	}
	consumer, err := sarama.NewConsumer(c.BootstrapServers(cluster.Plaintext), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	for part, n := range perPartition {
		pc, err := consumer.ConsumePartition(topic, int32(part), sarama.OffsetOldest)
		if err != nil {
			t.Fatal(err)
		}
		timeout := time.After(time.Minute)
		for i := range n {
			select {
			case m := <-pc.Messages():
				if want := fmt.Sprintf("%s-%d-%d", tag, part, i); string(m.Value) != want {
					t.Fatalf("%s-%d offset %d holds %q, want %q", topic, part, m.Offset, m.Value, want)
				}
			case err := <-pc.Errors():
				t.Fatal(err)
			case <-timeout:
				t.Fatalf("read %d of %d records of %s-%d", i, n, topic, part)
			}
		}
		pc.Close()
	}
}

func waitRunning(t *testing.T, c *connect.Client, name string, tasks int) connect.ConnectorStatus {
	t.Helper()
	return waitState(t, c, name, connect.StateRunning, tasks)
}

// waitState polls until the connector and its tasks (exactly tasks of
// them) are in state.
func waitState(t *testing.T, c *connect.Client, name, state string, tasks int) connect.ConnectorStatus {
	t.Helper()
	var st connect.ConnectorStatus
	waitFor(t, 3*time.Minute, fmt.Sprintf("%s %s with %d tasks", name, state, tasks), func() (bool, string) {
		var err error
		st, err = c.Status(context.Background(), name)
		if err != nil {
			return false, err.Error()
		}
		ok := st.Connector.State == state && len(st.Tasks) == tasks
		for _, task := range st.Tasks {
			ok = ok && task.State == state
			if task.State == connect.StateFailed {
				t.Fatalf("task %d failed: %s", task.ID, task.Trace)
			}
		}
		return ok, fmt.Sprintf("connector %s, tasks %v", st.Connector.State, taskWorkers(st))
	})
	return st
}

// waitOffsets polls until the connector's committed offsets are want (by
// partition of topic, from source src).
func waitOffsets(t *testing.T, c *connect.Client, name, topic string, want map[int32]int64) {
	t.Helper()
	waitFor(t, 2*time.Minute, fmt.Sprintf("offsets %v", want), func() (bool, string) {
		o, err := c.Offsets(context.Background(), name)
		if err != nil {
			return false, err.Error()
		}
		got := map[int32]int64{}
		for _, off := range o.Offsets {
			pos, err := off.MirrorSource()
			if err != nil {
				t.Fatal(err)
			}
			if pos.Cluster != "src" || pos.Topic != topic {
				t.Fatalf("offset of %+v, want cluster src topic %s", pos, topic)
			}
			got[pos.Partition] = pos.Offset
		}
		return fmt.Sprint(got) == fmt.Sprint(want), fmt.Sprint(got)
	})
}

// waitFor polls cond every 250 ms until it holds, failing the test after
// limit with what cond last said; it returns when cond held.
func waitFor(t *testing.T, limit time.Duration, what string, cond func() (bool, string)) time.Time {
	t.Helper()
	deadline := time.Now().Add(limit)
	last := ""
	for {
		ok, state := cond()
		if ok {
			return time.Now()
		}
		last = state
		if time.Now().After(deadline) {
			t.Fatalf("waited %s for %s; last: %s", limit, what, last)
		}
		time.Sleep(250 * time.Millisecond) // polling interval
	}
}

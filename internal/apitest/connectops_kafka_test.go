package apitest

import (
	"context"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/connect"
	"github.com/kmirror/kmirror/internal/e2e"
	"github.com/kmirror/kmirror/internal/kafkatest"
)

// A consumer group of a task on Kafka Connect fails over through the API:
// the group's checkpoints MirrorMaker 2 wrote on the target are committed
// for it there, and a consumer of the group on the target continues where
// it left off on the source with no record skipped (every record counted,
// the few read twice reported).
func TestFailoverOfConnectTaskContinuesOnTheTarget(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	s, west, east, _ := connectServer(t)
	src, dst := east.Settings(cluster.Plaintext, ""), west.Settings(cluster.Plaintext, "")

	topic := kafkatest.NewTopic(t, east, 3, nil)
	const n, onSource = 900, 400
	if _, err := e2e.Produce(ctx, src, topic, 3, n, 100); err != nil {
		t.Fatal(err)
	}
	group := "app-" + strings.ToLower(topic[len(topic)-8:])
	seen := map[string]int{}
	for _, k := range consumeGroup(t, src, group, topic, onSource) {
		seen[k]++
	}

	name := "fo-" + strings.ToLower(topic[len(topic)-8:])
	spec := connectTask(name, topic)
	if code, body := s.call(http.MethodPost, "/api/v1/tasks", spec); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, body)
	}
	t.Cleanup(func() { s.call(http.MethodDelete, "/api/v1/tasks/"+name, nil) })
	if _, err := e2e.WaitFor(ctx, dst, "A."+topic, n, nil); err != nil {
		_, st := s.call(http.MethodGet, "/api/v1/tasks/"+name, nil)
		t.Fatalf("wait for the copy: %v\nstatus: %v", err, st)
	}

	// MM2 writes the group's checkpoints within its interval (10 s) once
	// it has read its offset syncs: fail over until every partition the
	// group committed on the source has one, and none is behind.
	var res map[string]any
	var translated map[string]int64 // "topic/partition" -> the downstream offset
	deadline := time.Now().Add(3 * time.Minute)
	for {
		code, body := s.callDeployed(http.MethodPost, "/api/v1/tasks/"+name+"/failover", map[string]any{"group": group})
		if code != http.StatusOK {
			t.Fatalf("failover: %d %v", code, body)
		}
		res = body
		translated = map[string]int64{}
		waiting := ""
		results, _ := body["results"].([]any)
		for _, r := range results {
			r := r.(map[string]any)
			for _, c := range asList(r["checkpoints"]) {
				c := c.(map[string]any)
				translated[c["topic"].(string)+"/"+itoa(c["partition"])] = int64(c["downstream_offset"].(float64))
			}
			for _, m := range append(asList(r["skipped"]), asList(r["notes"])...) {
				waiting += m.(string) + "; "
			}
		}
		// Skipped names a partition the group committed on the source
		// with no checkpoint yet; notes one whose checkpoint is behind.
		if len(results) == 1 && len(translated) > 0 && waiting == "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("failover found no checkpoint for every partition of the group: %v", body)
		}
		time.Sleep(2 * time.Second)
	}
	t.Logf("failover: %v", res)

	// A group with a member on the target is left alone, as the embedded
	// engine's failover leaves it: said in skipped.
	active := holdGroup(t, dst, group, "A."+topic)
	code, body := s.callDeployed(http.MethodPost, "/api/v1/tasks/"+name+"/failover", map[string]any{"group": group})
	skipped := ""
	for _, r := range asList(body["results"]) {
		for _, m := range asList(r.(map[string]any)["skipped"]) {
			skipped += m.(string)
		}
	}
	if code != http.StatusOK || !strings.Contains(skipped, "active on the target") {
		t.Errorf("failover of a group active on the target: %d %v", code, body)
	}
	active()

	// The group's offsets on the target are the checkpoints' (the
	// failover's commit or MM2's own sync before it: only forward).
	admin := newAdmin(t, dst)
	offs, err := admin.ListConsumerGroupOffsets(group, map[string][]int32{"A." + topic: {0, 1, 2}})
	if err != nil {
		t.Fatal(err)
	}
	var resume int64
	for p := int32(0); p < 3; p++ {
		b := offs.GetBlock("A."+topic, p)
		want, ok := translated["A."+topic+"/"+strconv.Itoa(int(p))]
		if !ok {
			want = -1 // the group read nothing of it on the source
		}
		if b == nil || b.Offset != want {
			t.Fatalf("group %s on the target at %v for partition %d, want the checkpoint's %d", group, b, p, want)
		}
		resume += max(b.Offset, 0)
	}
	for _, k := range consumeGroup(t, dst, group, "A."+topic, int(n-resume)) {
		seen[k]++
	}
	dups := 0
	for _, c := range seen {
		dups += c - 1
	}
	t.Logf("read %d records on the source, %d on the target after failover; %d distinct of %d, %d read twice", onSource, n-resume, len(seen), n, dups)
	if len(seen) != n {
		t.Fatalf("after failover the group saw %d distinct records of %d: records were skipped", len(seen), n)
	}
}

func asList(v any) []any {
	l, _ := v.([]any)
	return l
}

// itoa is a JSON number as the integer it holds.
func itoa(v any) string {
	f, _ := v.(float64)
	return strconv.Itoa(int(f))
}

func newAdmin(t *testing.T, s cluster.Settings) sarama.ClusterAdmin {
	t.Helper()
	cfg, err := s.Config("apitest-admin")
	if err != nil {
		t.Fatal(err)
	}
	a, err := sarama.NewClusterAdmin(s.BootstrapServers, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close() })
	return a
}

// consumeGroup reads want records as a member of group, commits and
// leaves (e2e.ConsumeGroup); it returns the keys in the order read.
func consumeGroup(t *testing.T, s cluster.Settings, group, topic string, want int) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	keys, err := e2e.ConsumeGroup(ctx, s, group, topic, want)
	if err != nil {
		t.Fatal(err)
	}
	return keys
}

// A Connect worker killed (SIGKILL) while a task created through the API
// copies: the other worker takes the task's connectors over, every record
// arrives (duplicates counted and reported: Connect is at least once past
// its last offset flush), and the task's status in kmirror follows: RUNNING,
// then not running with the dead worker named as the reason, then RUNNING
// again. It shares the apitest Connect cluster and leaves it whole (the
// killed worker restarted, the group Stable with both).
func TestConnectWorkerKilledMidCopyTaskCarriesOn(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	s, west, east, cc := connectServer(t)
	src, dst := east.Settings(cluster.Plaintext, ""), west.Settings(cluster.Plaintext, "")
	topic := kafkatest.NewTopic(t, east, 3, nil)
	name := "kill-" + strings.ToLower(topic[len(topic)-8:])
	spec := map[string]any{
		"name": name, "type": "kafka-replication", "engine": "connect:wc",
		"current": map[string]any{"cluster": "east", "alias": "A"},
		"peer":    map[string]any{"alias": "B", "config_type": "cluster", "cluster": "west"},
		"rules": map[string]any{"direction": "push", "topics": []string{topic}, "tasks": 2, "rename_topics": true,
			"start_offset": "earliest", "compression": "none"},
	}
	if code, body := s.call(http.MethodPost, "/api/v1/tasks", spec); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, body)
	}
	t.Cleanup(func() { s.call(http.MethodDelete, "/api/v1/tasks/"+name, nil) })

	// Records keep coming while the worker dies: batches until told to
	// stop, then one last batch after the takeover.
	const batch = 300
	produced := 0
	stopProducing := make(chan struct{})
	producing := make(chan error, 1)
	go func() {
		for {
			if _, err := e2e.Produce(ctx, src, topic, 3, batch, 100); err != nil {
				producing <- err
				return
			}
			produced += batch
			select {
			case <-stopProducing:
				producing <- nil
				return
			case <-time.After(300 * time.Millisecond):
			}
		}
	}()

	status := func() (state, reason string, body map[string]any) {
		_, body = s.call(http.MethodGet, "/api/v1/tasks/"+name, nil)
		st, _ := body["status"].(map[string]any)
		state, _ = st["state"].(string)
		reason, _ = st["reason"].(string)
		return state, reason, body
	}
	waitState := func(what string, ok func(state, reason string) bool) {
		t.Helper()
		deadline := time.Now().Add(4 * time.Minute)
		for {
			state, reason, body := status()
			if ok(state, reason) {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("task status never %s: %v", what, body)
			}
			time.Sleep(300 * time.Millisecond)
		}
	}
	waitState("RUNNING", func(s, _ string) bool { return s == "RUNNING" })
	if _, err := e2e.WaitFor(ctx, dst, "A."+topic, batch, nil); err != nil {
		t.Fatal(err)
	}

	client, err := connect.New(connect.Config{URLs: cc.URLs(), DialTimeout: 2 * time.Second, Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	source := "kmirror." + name + ".A-B.source"
	st, err := client.Status(ctx, source)
	if err != nil {
		t.Fatal(err)
	}
	onWorker := map[string]int{}
	for _, ts := range st.Tasks {
		onWorker[ts.WorkerID]++
	}
	victimID := ""
	for id, n := range onWorker {
		if victimID == "" || n > onWorker[victimID] {
			victimID = id
		}
	}
	victim := cc.WorkerIndex(victimID)
	if victim < 0 {
		t.Fatalf("the source connector's tasks run on %v, not on workers of %v", onWorker, cc.URLs())
	}
	t.Logf("source tasks on %v; killing worker %d (%s) mid-copy", onWorker, victim, victimID)
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

	// What kmirror says, change by change, until the task runs on the
	// survivor: it must name the dead worker (or the unassigned task)
	// while Connect has not moved the task yet.
	var seen []string
	degradedWith := ""
	last := ""
	deadline := time.Now().Add(5 * time.Minute)
	for {
		state, reason, body := status()
		now := state + ": " + reason
		if cs, err := client.Status(ctx, source); err == nil { // what Connect says meanwhile
			now += " | Connect: " + connectorWorkers(cs)
		}
		if now != last {
			seen = append(seen, time.Since(killed).Round(100*time.Millisecond).String()+" "+now)
			last = now
		}
		if state != "RUNNING" && degradedWith == "" {
			degradedWith = reason
		}
		if state == "RUNNING" && degradedWith != "" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("task status after the kill never went back to RUNNING: %v\nseen:\n%s", body, strings.Join(seen, "\n"))
		}
		time.Sleep(300 * time.Millisecond)
	}
	t.Logf("task status after the kill:\n%s", strings.Join(seen, "\n"))
	// The reason names the dead worker and says whether records are still
	// copied meanwhile.
	copying := "only the partitions of the other"
	if onWorker[victimID] == len(st.Tasks) {
		copying = "no record is copied until they move"
	}
	if !strings.Contains(degradedWith, "worker "+victimID+" does not answer") || !strings.Contains(degradedWith, copying) {
		t.Errorf("while worker %s was dead the task showed %q: it should name the dead worker and say %q", victimID, degradedWith, copying)
	}
	st, err = client.Status(ctx, source)
	if err != nil {
		t.Fatal(err)
	}
	for _, ts := range st.Tasks {
		if ts.WorkerID == victimID || ts.State != connect.StateRunning {
			t.Errorf("source task %d is %s on %s after the takeover", ts.ID, ts.State, ts.WorkerID)
		}
	}

	close(stopProducing)
	if err := <-producing; err != nil {
		t.Fatal(err)
	}
	if _, err := e2e.WaitFor(ctx, dst, "A."+topic, int64(produced), nil); err != nil {
		_, _, body := status()
		t.Fatalf("after the takeover: %v\nstatus: %v", err, body)
	}
	time.Sleep(2 * time.Second) // let copies still in flight land before counting
	rep, err := e2e.Verify(ctx, src, topic, dst, "A."+topic, e2e.VerifyOptions{AllowDuplicates: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("worker %s killed %s after the copy began: %s (%d duplicated)", victimID, "mid-copy", rep, rep.Duplicated)
	if !rep.OK() {
		t.Fatalf("records lost or altered after the worker was killed:\n%s", rep)
	}
}

// connectorWorkers is a connector's state and its tasks' as Connect shows
// them, with the workers they are on.
func connectorWorkers(st connect.ConnectorStatus) string {
	out := "connector " + st.Connector.State + "@" + st.Connector.WorkerID + ", tasks"
	for _, ts := range st.Tasks {
		out += " " + strconv.Itoa(ts.ID) + ":" + ts.State + "@" + ts.WorkerID
	}
	return out
}

// holdGroup keeps a member in group on topic, reading and committing
// nothing, until the returned function is called; it returns once the
// group is Stable with it.
func holdGroup(t *testing.T, s cluster.Settings, group, topic string) (release func()) {
	t.Helper()
	cfg, err := s.Config("holder")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cg, err := sarama.NewConsumerGroup(s.BootstrapServers, group, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			_ = cg.Consume(ctx, []string{topic}, idle{})
		}
	}()
	release = func() {
		cancel()
		<-done
		cg.Close()
	}
	admin := newAdmin(t, s)
	deadline := time.Now().Add(time.Minute)
	for {
		ds, err := admin.DescribeConsumerGroups([]string{group})
		if err == nil && len(ds) == 1 && ds[0].State == "Stable" && len(ds[0].Members) == 1 {
			return release
		}
		if time.Now().After(deadline) {
			release()
			t.Fatalf("group %s never Stable with one member on the target: %v %v", group, ds, err)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

// idle is a group member that reads nothing.
type idle struct{}

func (idle) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (idle) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (idle) ConsumeClaim(s sarama.ConsumerGroupSession, _ sarama.ConsumerGroupClaim) error {
	<-s.Context().Done()
	return nil
}

package apitest

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/e2e"
	"github.com/kmirror/kmirror/internal/kafkatest"
)

// drillTask is a push task from "east" to the registered "west" with
// identity names, the source header and consumer-offset sync: the shape a
// team switches over. Topics it creates take the broker's default
// replication factor (3 on a 3-broker cluster, with min.insync.replicas 2).
func drillTask(name, topic, delivery string) map[string]any {
	return map[string]any{
		"name": name, "type": "kafka-replication",
		"current": map[string]any{"cluster": "east", "alias": "A"},
		"peer":    map[string]any{"alias": "B", "config_type": "cluster", "cluster": "west"},
		"rules": map[string]any{"direction": "push", "topics": []string{topic}, "tasks": 2, "add_source_header": true,
			"sync_consumer_offsets": true, "start_offset": "earliest", "delivery": delivery},
	}
}

// The planned switchover, for an at-least-once and an exactly-once task
// with identity names and an at-least-once task that renames topics, at
// once: three groups at different positions on the source (one far
// behind), producers still writing when it starts. It waits for them to
// stop, drains, and commits every group on the target; consumers that
// start there read every record they had not read on the source, none
// skipped, none twice, and the report says so per partition (exact, 0 to
// read again).
func TestPlannedSwitchoverMovesGroupsExactly(t *testing.T) {
	t.Parallel() // its own server, tasks, topics and groups
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	east, west := kafkatest.Shared(t, 0), kafkatest.Shared(t, 1)
	src, dst := east.Settings(cluster.Plaintext, ""), west.Settings(cluster.Plaintext, "")
	s := newServer(t)
	s.register("east", src)
	s.register("west", dst)

	type drill struct {
		name, topic, target, delivery string
		groups                        map[string]int // records each group reads on the source
		read                          map[string][]string
		// written is what the producers wrote after the first records;
		// sawWaiting is set once the switchover said they still write.
		written    atomic.Int64
		sawWaiting atomic.Bool
	}
	const first, chunk = 3000, 50
	var drills []*drill
	for _, shape := range []struct {
		delivery string
		rename   bool
	}{{"at_least_once", false}, {"exactly_once", false}, {"at_least_once", true}} {
		delivery := shape.delivery
		topic := kafkatest.NewTopic(t, east, 3, nil)
		d := &drill{name: "sw-" + strings.ReplaceAll(delivery, "_", "-") + "-" + strings.ToLower(topic[len(topic)-6:]), topic: topic, target: topic, delivery: delivery,
			groups: map[string]int{topic + "-ahead": 2900, topic + "-mid": 1500, topic + "-behind": 40}, read: map[string][]string{}}
		spec := drillTask(d.name, topic, delivery)
		if shape.rename {
			d.name, d.target = "sw-renamed-"+strings.ToLower(topic[len(topic)-6:]), "A."+topic
			spec = drillTask(d.name, topic, delivery)
			spec["rules"].(map[string]any)["rename_topics"] = true
		}
		drills = append(drills, d)
		if _, err := e2e.Produce(ctx, src, topic, 3, first, 100); err != nil {
			t.Fatal(err)
		}
		for g, n := range d.groups {
			keys, err := e2e.ConsumeGroup(ctx, src, g, topic, n)
			if err != nil {
				t.Fatal(err)
			}
			d.read[g] = keys
		}
		if code, body := s.call(http.MethodPost, "/api/v1/tasks", spec); code != http.StatusCreated {
			t.Fatalf("create %s: %d %v", d.name, code, body)
		}
	}

	// Refused up front, nothing stored: no groups; an unknown direction.
	code, body := s.call(http.MethodPost, "/api/v1/tasks/"+drills[0].name+"/switchover", map[string]any{"mode": "planned"})
	if ps := problems(body); code != http.StatusBadRequest || !strings.Contains(ps["groups"], "groups is required") {
		t.Fatalf("switchover without groups: %d %v", code, body)
	}
	code, body = s.call(http.MethodPost, "/api/v1/tasks/"+drills[0].name+"/switchover", map[string]any{"groups": []string{"g"}, "direction": "B->A"})
	if ps := problems(body); code != http.StatusBadRequest || !strings.Contains(ps["direction"], `"B->A" is not a flow of the task: one of A->B`) {
		t.Fatalf("switchover in a direction the task does not copy: %d %v", code, body)
	}
	if code, body := s.call(http.MethodGet, "/api/v1/tasks/"+drills[0].name+"/switchover", nil); code != http.StatusNotFound {
		t.Fatalf("a refused switchover was stored: %d %v", code, body)
	}

	// Producers still write while the switchover starts, a chunk every
	// half second (Produce continues the keys), until the switchover said
	// they still write: on a loaded machine its earlier steps may take
	// longer than any fixed number of chunks (at most a minute of them).
	var wg sync.WaitGroup
	for _, d := range drills {
		wg.Go(func() {
			for range 120 {
				if _, err := e2e.Produce(ctx, src, d.topic, 3, chunk, 100); err != nil {
					t.Error(err)
					return
				}
				d.written.Add(chunk)
				if d.sawWaiting.Load() {
					return
				}
				time.Sleep(500 * time.Millisecond)
			}
		})
	}
	time.Sleep(500 * time.Millisecond)
	for _, d := range drills {
		groups := slices.Sorted(func(yield func(string) bool) {
			for g := range d.groups {
				if !yield(g) {
					return
				}
			}
		})
		code, body := s.call(http.MethodPost, "/api/v1/tasks/"+d.name+"/switchover", map[string]any{"mode": "planned", "groups": groups})
		if code != http.StatusCreated || body["id"] == nil {
			t.Fatalf("start the switchover of %s: %d %v", d.name, code, body)
		}
		if code, body := s.call(http.MethodPost, "/api/v1/tasks/"+d.name+"/switchover", map[string]any{"groups": groups}); code != http.StatusBadRequest ||
			!strings.Contains(fmt.Sprint(body), "has a switchover that has not ended") {
			t.Fatalf("a second switchover while one is open: %d %v", code, body)
		}
	}
	done := map[string]bool{}
	deadline := time.Now().Add(3 * time.Minute)
	for len(done) < len(drills) {
		for _, d := range drills {
			if done[d.name] {
				continue
			}
			_, body := s.call(http.MethodGet, "/api/v1/tasks/"+d.name+"/switchover", nil)
			for _, st := range body["steps"].([]any) {
				st := st.(map[string]any)
				if st["name"] == "producers_stopped" && st["state"] == "waiting" && strings.Contains(st["message"].(string), "still written to") {
					d.sawWaiting.Store(true)
				}
			}
			switch {
			case body["state"] == "done":
				checkReport(t, d.name, body, d.groups, true)
				done[d.name] = true
			case body["state"] == "failed" || time.Now().After(deadline):
				t.Fatalf("switchover of %s: %v", d.name, body)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	wg.Wait()
	for _, d := range drills {
		if !d.sawWaiting.Load() {
			t.Errorf("%s: the switchover never said producers were still writing, though they were when it started", d.name)
		}
	}

	// Consumers move to the target: each reads what it had not read on
	// the source, and nothing it had.
	for _, d := range drills {
		total := first + int(d.written.Load())
		for g, n := range d.groups {
			keys, err := e2e.ConsumeGroup(ctx, dst, g, d.target, total-n)
			if err != nil {
				t.Fatalf("%s: group %s on the target: %v", d.name, g, err)
			}
			seen := map[string]int{}
			for _, k := range append(d.read[g], keys...) {
				seen[k]++
			}
			twice := 0
			for _, c := range seen {
				if c > 1 {
					twice += c - 1
				}
			}
			if len(seen) != total || twice != 0 {
				t.Errorf("%s: group %s read %d distinct records of %d over both sides, %d twice", d.name, g, len(seen), total, twice)
			}
			t.Logf("%s: group %s read %d on the source, %d on the target: all %d once", d.name, g, n, len(keys), total)
		}
	}
}

// checkReport checks a done switchover's report: every selected group,
// the partitions a group has no offset on named in a note and, when
// strict, every other partition exact with nothing to read again or lost
// (a copy killed on the way holds records twice: not strict). It returns
// what each group may read again in all (-1: unbounded).
func checkReport(t *testing.T, name string, body map[string]any, groups map[string]int, strict bool) map[string]int64 {
	t.Helper()
	for _, st := range body["steps"].([]any) {
		st := st.(map[string]any)
		if st["state"] != "done" {
			t.Errorf("%s: step %v not done", name, st)
		}
		t.Logf("%s: %s: %s", name, st["name"], st["message"])
	}
	report := body["report"].(map[string]any)
	gs, _ := report["groups"].([]any)
	if len(gs) != len(groups) {
		t.Fatalf("%s: report of %d groups, want %d: %v", name, len(gs), len(groups), report)
	}
	again := map[string]int64{}
	for _, g := range gs {
		g := g.(map[string]any)
		group := g["group"].(string)
		ps, _ := g["partitions"].([]any)
		for _, p := range ps {
			p := p.(map[string]any)
			t.Logf("%s: group %s: %s-%v: source %v -> target %v, may read again %v", name, group, p["topic"], p["partition"], p["source_offset"], p["target_offset"], p["may_read_again"])
			switch n := int64(p["may_read_again"].(float64)); {
			case n < 0 || again[group] < 0:
				again[group] = -1 // unbounded
			default:
				again[group] += n
			}
			if p["source_offset"] == -1.0 {
				// No offset on the source: not committed, said in a note.
				if notes := fmt.Sprint(g["notes"]); !strings.Contains(notes, "no committed offset on the source") {
					t.Errorf("%s: group %s: %v without a note", name, group, p)
				}
				continue
			}
			if strict && (p["exact"] != true || p["may_read_again"] != 0.0 || p["may_be_lost"] != 0.0) {
				t.Errorf("%s: group %s: %v, want exact with nothing to read again or lost", name, group, p)
			}
		}
	}
	return again
}

// awaitSwitchovers polls each task's newest switchover until every one is
// done, failing the test on a failed one or after limit; it returns the
// done answers by task.
func awaitSwitchovers(t *testing.T, s *server, names []string, limit time.Duration) map[string]map[string]any {
	t.Helper()
	out := map[string]map[string]any{}
	deadline := time.Now().Add(limit)
	for len(out) < len(names) {
		for _, n := range names {
			if out[n] != nil {
				continue
			}
			_, body := s.call(http.MethodGet, "/api/v1/tasks/"+n+"/switchover", nil)
			switch {
			case body["state"] == "done":
				out[n] = body
			case body["state"] == "failed" || time.Now().After(deadline):
				t.Fatalf("switchover of %s: %v", n, body)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	return out
}

// produceKeyed writes n records keyed "<prefix>-<i>" round robin over
// topic's partitions, acknowledged by all replicas.
func produceKeyed(t *testing.T, s cluster.Settings, topic string, partitions int, prefix string, n int) {
	t.Helper()
	cfg, err := s.Config("test-keyed-producer")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	p, err := sarama.NewSyncProducer(s.BootstrapServers, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	msgs := make([]*sarama.ProducerMessage, n)
	for i := range msgs {
		msgs[i] = &sarama.ProducerMessage{Topic: topic, Partition: int32(i % partitions),
			Key: sarama.StringEncoder(fmt.Sprintf("%s-%d", prefix, i)), Value: sarama.StringEncoder("v")}
	}
	if err := p.SendMessages(msgs); err != nil {
		t.Fatal(err)
	}
}

// readOnce checks that keys hold every one of want records once.
func readOnce(t *testing.T, what string, keys []string, want int) {
	t.Helper()
	readAtMostAgain(t, what, keys, want, 0)
}

// readAtMostAgain checks that keys hold every one of want records, at most
// again of them twice (any number when again < 0).
func readAtMostAgain(t *testing.T, what string, keys []string, want int, again int64) {
	t.Helper()
	seen := map[string]int{}
	twice := 0
	var dups []string
	for _, k := range keys {
		if seen[k]++; seen[k] >= 2 {
			twice++
			if len(dups) < 10 {
				dups = append(dups, k)
			}
		}
	}
	if len(seen) != want || again >= 0 && int64(twice) > again {
		t.Errorf("%s: %d distinct records of %d, %d read twice (at most %d said); twice: %v", what, len(seen), want, twice, again, dups)
	}
}

// nothingMore checks that a fresh group finds exactly want records on the
// topic: no record more.
func nothingMore(ctx context.Context, t *testing.T, s cluster.Settings, topic string, want int, what string) {
	t.Helper()
	keys, err := e2e.ConsumeGroup(ctx, s, fmt.Sprintf("%s-check-%d", topic, time.Now().UnixNano()), topic, want)
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	readOnce(t, what, keys, want)
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if extra, err := e2e.ConsumeGroup(short, s, fmt.Sprintf("%s-more-%d", topic, time.Now().UnixNano()), topic, want+1); err == nil {
		t.Errorf("%s: %d records, want %d", what, len(extra), want)
	}
}

// The DR drill there and back, twice in a row, for an at-least-once and an
// exactly-once task with identity names and an at-least-once task that
// renames topics, at once: a planned switchover A->B; consumers go on
// reading on B and producers write there; the way back is prepared; a
// planned switchover B->A moves everyone home; producers write on A again.
// Each time A receives exactly the records written on B (none of its own
// come back), every group reads every record once over A, B and A again,
// and the task copies A->B again from where it was, without copying
// anything twice. The second drill finds groups on both sides.
func TestSwitchoverAndFailbackDrill(t *testing.T) {
	t.Parallel() // its own server, tasks, topics and groups
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	// B, where everyone moves, has 3 brokers: its topics RF 3 with
	// min.insync.replicas 2, as a cluster that takes production traffic.
	east, west := kafkatest.Shared(t, 0), kafkatest.Lazy(t, "drill-b", kafkatest.Brokers(3), kafkatest.MinInsyncReplicas(2))
	src, dst := east.Settings(cluster.Plaintext, ""), west.Settings(cluster.Plaintext, "")
	s := newServer(t)
	s.register("east", src)
	s.register("west", dst)

	type drill struct {
		name, topic string
		target      string // the topic on B
		groups      []string
		read        map[string][]string
		total       int // records on A
	}
	// Each round: what each group (ahead, mid, behind) reads on A, then
	// on B; what producers write on B, then on A once home.
	rounds := []struct {
		onA, onB       [3]int
		writeB, writeA int
	}{
		{onA: [3]int{1450, 700, 20}, onB: [3]int{40, 200, 0}, writeB: 300, writeA: 100},
		{onA: [3]int{80, 60, 0}, onB: [3]int{10, 20, 0}, writeB: 150, writeA: 50},
	}
	const first = 1500
	const txnRecords = 20 // e2e.ProduceTransactions' committed records
	var drills []*drill
	var names []string
	for _, shape := range []struct {
		delivery string
		rename   bool
	}{{"at_least_once", false}, {"exactly_once", false}, {"at_least_once", true}} {
		delivery := shape.delivery
		topic := kafkatest.NewTopic(t, east, 3, nil)
		d := &drill{name: "fb-" + strings.ReplaceAll(delivery, "_", "-") + "-" + strings.ToLower(topic[len(topic)-6:]), topic: topic, target: topic,
			groups: []string{topic + "-ahead", topic + "-mid", topic + "-behind"}, read: map[string][]string{}, total: first}
		spec := drillTask(d.name, topic, delivery)
		if shape.rename {
			// The same drill with renamed topics: B's copy is "A.<topic>",
			// and the way back gives the name back.
			d.name, d.target = "fb-renamed-"+strings.ToLower(topic[len(topic)-6:]), "A."+topic
			spec = drillTask(d.name, topic, delivery)
			spec["rules"].(map[string]any)["rename_topics"] = true
		}
		drills, names = append(drills, d), append(names, d.name)
		// Transactions first (20 committed records, 20 aborted, 4
		// markers): the copy's offsets on B differ from A's, so a group
		// translated back by the wrong offsets shows.
		if _, err := e2e.Produce(ctx, src, topic, 3, 0, 100); err != nil {
			t.Fatal(err)
		}
		if err := e2e.ProduceTransactions(src, topic); err != nil {
			t.Fatal(err)
		}
		if _, err := e2e.Produce(ctx, src, topic, 3, first-txnRecords, 100); err != nil {
			t.Fatal(err)
		}
		if code, body := s.call(http.MethodPost, "/api/v1/tasks", spec); code != http.StatusCreated {
			t.Fatalf("create %s: %d %v", d.name, code, body)
		}
		if code, body := s.call(http.MethodPost, "/api/v1/tasks/"+d.name+"/failback", nil); code != http.StatusBadRequest ||
			!strings.Contains(fmt.Sprint(body), "has had no switchover") {
			t.Fatalf("failback before a switchover: %d %v", code, body)
		}
	}
	// consume has group g of d read n more records on s.
	consume := func(d *drill, s cluster.Settings, topic string, i, n int) {
		if n == 0 {
			return
		}
		keys, err := e2e.ConsumeGroup(ctx, s, d.groups[i], topic, n)
		if err != nil {
			t.Fatal(err)
		}
		d.read[d.groups[i]] = append(d.read[d.groups[i]], keys...)
	}
	groups3 := map[string]int{"a": 0, "b": 0, "c": 0}
	for r, round := range rounds {
		for _, d := range drills {
			for i := range d.groups {
				consume(d, src, d.topic, i, round.onA[i])
			}
			if code, body := s.call(http.MethodPost, "/api/v1/tasks/"+d.name+"/switchover", map[string]any{"groups": d.groups}); code != http.StatusCreated {
				t.Fatalf("round %d: switchover of %s: %d %v", r+1, d.name, code, body)
			}
		}
		for n, body := range awaitSwitchovers(t, s, names, 3*time.Minute) {
			checkReport(t, fmt.Sprintf("%s round %d there", n, r+1), body, groups3, true)
		}
		if r == 0 {
			for _, d := range drills {
				replicasOnB(t, west, d.target, 3)
			}
		}
		// On B: consumers go on, producers write.
		for _, d := range drills {
			for i := range d.groups {
				consume(d, dst, d.target, i, round.onB[i])
			}
			// Keys of their own: e2e.Produce's continue from B's end
			// offsets, which A's records already used.
			produceKeyed(t, dst, d.target, 3, fmt.Sprintf("written-on-B-%d", r+1), round.writeB)
			d.total += round.writeB
			code, body := s.call(http.MethodPost, "/api/v1/tasks/"+d.name+"/failback", nil)
			fb, _ := body["failback"].(map[string]any)
			if code != http.StatusOK || fb["state"] != "prepared" {
				t.Fatalf("round %d: prepare the way back of %s: %d %v", r+1, d.name, code, body)
			}
			if code, body := s.call(http.MethodPost, "/api/v1/tasks/"+d.name+"/failback", nil); code != http.StatusBadRequest ||
				!strings.Contains(fmt.Sprint(body), "is prepared already") {
				t.Fatalf("round %d: the way back prepared twice: %d %v", r+1, code, body)
			}
		}
		// Home: the switchover in the other direction.
		for _, d := range drills {
			code, body := s.call(http.MethodPost, "/api/v1/tasks/"+d.name+"/switchover", map[string]any{"groups": d.groups, "direction": "B->A"})
			if code != http.StatusCreated {
				t.Fatalf("round %d: the way home of %s: %d %v", r+1, d.name, code, body)
			}
		}
		for n, body := range awaitSwitchovers(t, s, names, 3*time.Minute) {
			checkReport(t, fmt.Sprintf("%s round %d home", n, r+1), body, groups3, true)
		}
		for _, d := range drills {
			// A holds its own records and those written on B, each once.
			nothingMore(ctx, t, src, d.topic, d.total, fmt.Sprintf("%s round %d: A after the way home", d.name, r+1))
			for i, g := range d.groups {
				consume(d, src, d.topic, i, d.total-len(d.read[g]))
				readOnce(t, fmt.Sprintf("%s round %d: group %s over A, B and A", d.name, r+1, g), d.read[g], d.total)
			}
			// Producers home: the task copies A->B again from where it was.
			produceKeyed(t, src, d.topic, 3, fmt.Sprintf("home-again-%d", r+1), round.writeA)
			d.total += round.writeA
		}
		for _, d := range drills {
			deadline := time.Now().Add(2 * time.Minute)
			for {
				code, body := s.call(http.MethodGet, "/api/v1/tasks/"+d.name, nil)
				st, _ := body["status"].(map[string]any)
				flows, _ := st["flows"].([]any)
				if code == http.StatusOK && len(flows) == 1 && fmt.Sprint(flows[0].(map[string]any)["lag_records"]) == "0" {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("round %d: %s after the way home: %d %v", r+1, d.name, code, body)
				}
				time.Sleep(250 * time.Millisecond)
			}
			nothingMore(ctx, t, dst, d.target, d.total, fmt.Sprintf("%s round %d: B after the producers came home", d.name, r+1))
		}
	}
}

// replicasOnB checks that every partition of topic on c has want replicas.
func replicasOnB(t *testing.T, c *kafkatest.Cluster, topic string, want int) {
	t.Helper()
	admin, err := c.Admin()
	if err != nil {
		t.Fatal(err)
	}
	md, err := admin.DescribeTopics([]string{topic})
	if err != nil || len(md) != 1 {
		t.Fatalf("describe %s: %v %v", topic, err, md)
	}
	for _, p := range md[0].Partitions {
		if len(p.Replicas) != want {
			t.Errorf("%s-%d has %d replicas on B, want %d", topic, p.ID, len(p.Replicas), want)
		}
	}
}

// The emergency: A dies mid-stream (kill -9). The emergency switchover asks
// nothing of it: the group's last checkpoints are committed on B, and the
// report's may-be-read-again and may-be-lost are never fewer than what
// really happens: the group, moved to B, reads again no more records than
// it said and skips none that B holds; A held no more uncopied records
// than it said.
func TestEmergencySwitchoverReportsNoLessThanReality(t *testing.T) {
	t.Parallel() // its own server, tasks, topics and groups
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	a, west := kafkatest.Lazy(t, "emergency-a"), kafkatest.Shared(t, 1)
	src, dst := a.Settings(cluster.Plaintext, ""), west.Settings(cluster.Plaintext, "")
	s := newServer(t)
	s.register("east", src)
	s.register("west", dst)
	topic := kafkatest.NewTopic(t, a, 3, nil)
	group := topic + "-app"
	const first = 900
	if _, err := e2e.Produce(ctx, src, topic, 3, first, 100); err != nil {
		t.Fatal(err)
	}
	name := "em-" + strings.ToLower(topic[len(topic)-6:])
	if code, body := s.call(http.MethodPost, "/api/v1/tasks", drillTask(name, topic, "at_least_once")); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, body)
	}
	readA, err := e2e.ConsumeGroup(ctx, src, group, topic, 300)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e2e.WaitFor(ctx, dst, topic, first, nil); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second) // a checkpoint of the group at 300
	// The group reads on, and producers write, up to the kill.
	more, err := e2e.ConsumeGroup(ctx, src, group, topic, 250)
	if err != nil {
		t.Fatal(err)
	}
	readA = append(readA, more...)
	produced := first
	for range 5 {
		if _, err := e2e.Produce(ctx, src, topic, 3, 60, 100); err != nil {
			t.Fatal(err)
		}
		produced += 60
	}
	time.Sleep(time.Second) // the copy sees the source's end
	for _, id := range a.BrokerIDs() {
		if err := a.KillBroker(id); err != nil {
			t.Fatal(err)
		}
	}
	t.Logf("A killed: %d records produced there, the group read %d", produced, len(readA))

	code, body := s.call(http.MethodPost, "/api/v1/tasks/"+name+"/switchover", map[string]any{"mode": "emergency", "groups": []string{group}})
	if code != http.StatusCreated {
		t.Fatalf("emergency switchover: %d %v", code, body)
	}
	done := awaitSwitchovers(t, s, []string{name}, 2*time.Minute)[name]
	var again, lost, start int64
	for _, st := range done["steps"].([]any) {
		st := st.(map[string]any)
		t.Logf("%s: %s", st["name"], st["message"])
	}
	gs := done["report"].(map[string]any)["groups"].([]any)
	for _, p := range gs[0].(map[string]any)["partitions"].([]any) {
		p := p.(map[string]any)
		t.Logf("report: %v", p)
		if p["may_read_again"].(float64) < 0 || p["may_be_lost"].(float64) < 0 {
			t.Fatalf("an unbounded report: %v", p)
		}
		again += int64(p["may_read_again"].(float64))
		lost += int64(p["may_be_lost"].(float64))
		// Without a checkpoint the group starts at the earliest
		// (e2e.ConsumeGroup's auto.offset.reset).
		start += max(0, int64(p["target_offset"].(float64)))
	}

	// Reality: B holds what was copied; the group reads on from where the
	// switchover put it (identity offsets: B's partitions hold copies from
	// offset 0).
	copied, err := e2e.Count(ctx, dst, topic)
	if err != nil {
		t.Fatal(err)
	}
	readB, err := e2e.ConsumeGroup(ctx, dst, group, topic, int(copied-start))
	if err != nil {
		t.Fatal(err)
	}
	emergencyHeld(t, readA, readB, int64(produced), copied, again, lost)
}

// emergencyHeld checks an emergency switchover's report against reality:
// the group read readA on the source and readB on the target, which holds
// copied of produced records; the report said at most again read twice and
// lost not copied. Nothing the target holds may be skipped.
func emergencyHeld(t *testing.T, readA, readB []string, produced, copied, again, lost int64) {
	t.Helper()
	seenA := map[string]bool{}
	for _, k := range readA {
		seenA[k] = true
	}
	readAgain := 0
	for _, k := range readB {
		if seenA[k] {
			readAgain++
		}
	}
	lostReal := produced - copied
	t.Logf("reality: %d copied of %d (%d lost), the group read %d again on B; the report said at most %d and %d", copied, produced, lostReal, readAgain, again, lost)
	if int64(readAgain) > again {
		t.Errorf("the group read %d records again, the report said at most %d", readAgain, again)
	}
	if lostReal > lost {
		t.Errorf("%d records were not copied, the report said at most %d", lostReal, lost)
	}
	if int64(len(seenA))+int64(len(readB))-int64(readAgain) != copied {
		t.Errorf("the group read %d on A and %d on B (%d again) of %d copied: some skipped", len(seenA), len(readB), readAgain, copied)
	}
}

package apitest

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/connect"
	"github.com/kmirror/kmirror/internal/e2e"
	"github.com/kmirror/kmirror/internal/kafkatest"
)

// The drill on Kafka Connect, twice on the same clusters: there and back
// through the same resources, MirrorMaker 2 copying both ways. A task A->B
// (identity names) copies; three groups at different positions move to B;
// producers write on B; the way back copies to A exactly what was written
// on B (the forward copy is held meanwhile: MM2 has no source header to
// skip those records by); the way home translates each group back (inside
// the forward copy through its offset syncs inverted, past it through the
// way back's checkpoints); every group has read every record over A, B and
// A, read again no more than the reports said; once producers are home the
// task copies A->B again without copying the way back's records a second
// time (A's first records end in transactions, so a partition's copy stops
// short of A's end by markers), and the way back's connectors are gone.
// The second round finds groups on both sides and the way back's
// connectors created afresh.
func TestFailbackOnConnect(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	s, west, east, cc := connectServer(t)
	src, dst := east.Settings(cluster.Plaintext, ""), west.Settings(cluster.Plaintext, "")
	topic := kafkatest.NewTopic(t, east, 3, nil)
	const first = 900
	total := first
	// Transactions last (20 committed records, 20 aborted, 4 markers, on
	// partition 0): the forward copy's last record is short of A's end
	// there, as MM2 never copies a marker, and offsets differ across the
	// clusters, so a group translated by the wrong offsets shows.
	if _, err := e2e.Produce(ctx, src, topic, 3, first-20, 100); err != nil {
		t.Fatal(err)
	}
	if err := e2e.ProduceTransactions(src, topic); err != nil {
		t.Fatal(err)
	}
	groups := []string{topic + "-ahead", topic + "-mid", topic + "-behind"}
	read := map[string][]string{}
	again := map[string]int64{} // what the reports said may be read again, summed
	consume := func(s cluster.Settings, g string, n int) {
		t.Helper()
		if n == 0 {
			return
		}
		keys, err := e2e.ConsumeGroup(ctx, s, g, topic, n)
		if err != nil {
			t.Fatalf("group %s: %v", g, err)
		}
		read[g] = append(read[g], keys...)
	}
	addAgain := func(report map[string]int64) {
		for g, n := range report {
			if n < 0 || again[g] < 0 {
				again[g] = -1
			} else {
				again[g] += n
			}
		}
	}
	name := "fb-connect-" + strings.ToLower(topic[len(topic)-6:])
	spec := connectTask(name, topic)
	spec["rules"].(map[string]any)["rename_topics"] = false
	if code, body := s.call(http.MethodPost, "/api/v1/tasks", spec); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, body)
	}
	client, err := connect.New(connect.Config{URLs: cc.URLs(), Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	admin, err := east.Admin()
	if err != nil {
		t.Fatal(err)
	}
	// Each round: what each group (ahead, mid, behind) reads on A, then on
	// B; what producers write on B, then on A once home.
	rounds := []struct {
		onA, onB       [3]int
		writeB, writeA int
	}{
		{onA: [3]int{880, 450, 30}, onB: [3]int{120, 60, 0}, writeB: 300, writeA: 120},
		{onA: [3]int{60, 30, 0}, onB: [3]int{40, 10, 0}, writeB: 150, writeA: 60},
	}
	count := map[string]int{groups[0]: 0, groups[1]: 0, groups[2]: 0}
	for r, round := range rounds {
		label := func(what string) string { return fmt.Sprintf("round %d: %s", r+1, what) }
		for i, g := range groups {
			consume(src, g, round.onA[i])
		}
		if _, err := e2e.WaitFor(ctx, dst, topic, int64(total), nil); err != nil {
			t.Fatal(err)
		}
		if code, body := s.callDeployed(http.MethodPost, "/api/v1/tasks/"+name+"/switchover", map[string]any{"groups": groups}); code != http.StatusCreated {
			t.Fatalf("%s: %d %v", label("switchover"), code, body)
		}
		addAgain(checkReport(t, label("there"), awaitSwitchovers(t, s, []string{name}, 4*time.Minute)[name], count, false))

		// On B: producers write, then consumers go on (ahead into what
		// was written on B, past the switchover's point).
		produceKeyed(t, dst, topic, 3, fmt.Sprintf("written-on-B-%d", r+1), round.writeB)
		total += round.writeB
		for i, g := range groups {
			consume(dst, g, round.onB[i])
		}
		code, body := s.callDeployed(http.MethodPost, "/api/v1/tasks/"+name+"/failback", nil)
		if fb, _ := body["failback"].(map[string]any); code != http.StatusOK || fb["state"] != "prepared" {
			t.Fatalf("%s: %d %v", label("prepare the way back"), code, body)
		}
		// The way back copies what was written on B, and nothing comes
		// back to B: the forward copy is held.
		if _, err := e2e.WaitFor(ctx, src, topic, int64(total), nil); err != nil {
			t.Fatalf("%s: %v", label("the way back"), err)
		}
		flowStates(t, s, name, 2)

		code, body = s.callDeployed(http.MethodPost, "/api/v1/tasks/"+name+"/switchover", map[string]any{"groups": groups, "direction": "B->A"})
		if code != http.StatusCreated {
			t.Fatalf("%s: %d %v", label("the way home"), code, body)
		}
		home := awaitSwitchovers(t, s, []string{name}, 4*time.Minute)[name]
		addAgain(checkReport(t, label("home"), home, count, false))
		// Where a group stood on A when it left is reported as what it
		// goes on from, not as a skip past the translation.
		if notes := fmt.Sprint(home["report"]); strings.Contains(notes, "skip") {
			t.Errorf("%s: the way home's report says a group skips records: %s", label("home"), notes)
		}
		nothingMore(ctx, t, src, topic, total, label("A after the way home"))
		nothingMore(ctx, t, dst, topic, total, label("B after the way home"))

		// Home: each group reads on on A from where the way home put it.
		for _, g := range groups {
			consume(src, g, unread(t, src, admin, g, topic))
			readAtMostAgain(t, label("group "+g+" over A, B and A"), read[g], total, again[g])
			t.Logf("%s: group %s: %d records read in all, %d distinct; the reports said at most %d again", label("home"), g, len(read[g]), total, again[g])
		}
		// The way back's connectors are gone from Connect. (Right after
		// the deletes a worker may answer that a rebalance is expected:
		// asked again.)
		for _, role := range []string{"source", "checkpoint"} {
			_, err := client.Connector(ctx, "kmirror."+name+".B-A."+role)
			for deadline := time.Now().Add(time.Minute); connect.IsTransient(err) && time.Now().Before(deadline); {
				time.Sleep(time.Second)
				_, err = client.Connector(ctx, "kmirror."+name+".B-A."+role)
			}
			if !connect.IsNotFound(err) {
				t.Errorf("%s: the way back's %s connector after the way home: %v", label("home"), role, err)
			}
		}

		// Producers home: the forward copy goes on past what the way back
		// wrote to A.
		produceKeyed(t, src, topic, 3, fmt.Sprintf("home-again-%d", r+1), round.writeA)
		total += round.writeA
		if _, err := e2e.WaitFor(ctx, dst, topic, int64(total), nil); err != nil {
			t.Fatal(err)
		}
		nothingMore(ctx, t, dst, topic, total, label("B after the producers came home"))
		flowStates(t, s, name, 1)
	}
}

// unread is how many records group g has left to read in topic on s, from
// its committed offsets (from the start where it has none): records, not
// offsets, which transaction markers and aborted records also take.
func unread(t *testing.T, s cluster.Settings, admin sarama.ClusterAdmin, g, topic string) int {
	t.Helper()
	held, err := admin.ListConsumerGroupOffsets(g, nil)
	if err != nil {
		t.Fatal(err)
	}
	left := 0
	for _, m := range readRecords(t, s, topic) {
		if b := held.GetBlock(topic, m.Partition); b == nil || m.Offset >= b.Offset {
			left++
		}
	}
	return left
}

// flowStates waits until task name runs n flows, all RUNNING.
func flowStates(t *testing.T, s *server, name string, n int) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for {
		_, body := s.call(http.MethodGet, "/api/v1/tasks/"+name, nil)
		st, _ := body["status"].(map[string]any)
		flows, _ := st["flows"].([]any)
		running := 0
		for _, f := range flows {
			if f.(map[string]any)["state"] == "RUNNING" {
				running++
			}
		}
		if st["state"] == "RUNNING" && len(flows) == n && running == n {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s: want %d flows running: %v", name, n, fmt.Sprint(st))
		}
		time.Sleep(500 * time.Millisecond)
	}
}

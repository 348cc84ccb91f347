package apitest

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/e2e"
	"github.com/kmirror/kmirror/internal/kafkatest"
)

// drillTask is a push task from "east" to the registered "west" with
// identity names, the source header and consumer-offset sync: the shape a
// team switches over.
func drillTask(name, topic, delivery string) map[string]any {
	return map[string]any{
		"name": name, "type": "kafka-replication",
		"current": map[string]any{"cluster": "east", "alias": "A"},
		"peer":    map[string]any{"alias": "B", "config_type": "cluster", "cluster": "west"},
		"rules": map[string]any{"direction": "push", "topics": []string{topic}, "tasks": 2, "add_source_header": true,
			"sync_consumer_offsets": true, "replication_factor": 1, "start_offset": "earliest", "delivery": delivery},
	}
}

// The planned switchover, for an at-least-once and an exactly-once task at
// once: three groups at different positions on the source (one far
// behind), producers still writing when it starts. It waits for them to
// stop, drains, and commits every group on the target; consumers that
// start there read every record they had not read on the source, none
// skipped, none twice, and the report says so per partition (exact, 0 to
// read again).
func TestPlannedSwitchoverMovesGroupsExactly(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	east, west := kafkatest.Shared(t, 0), kafkatest.Shared(t, 1)
	src, dst := east.Settings(cluster.Plaintext, ""), west.Settings(cluster.Plaintext, "")
	s := newServer(t)
	s.register("east", src)
	s.register("west", dst)

	type drill struct {
		name, topic, delivery string
		groups                map[string]int // records each group reads on the source
		read                  map[string][]string
	}
	const first, later = 3000, 600
	var drills []*drill
	for _, delivery := range []string{"at_least_once", "exactly_once"} {
		topic := kafkatest.NewTopic(t, east, 3, nil)
		d := &drill{name: "sw-" + strings.ReplaceAll(delivery, "_", "-") + "-" + strings.ToLower(topic[len(topic)-6:]), topic: topic, delivery: delivery,
			groups: map[string]int{topic + "-ahead": 2900, topic + "-mid": 1500, topic + "-behind": 40}, read: map[string][]string{}}
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
		if code, body := s.call(http.MethodPost, "/api/v1/tasks", drillTask(d.name, topic, delivery)); code != http.StatusCreated {
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

	// Producers still write while the switchover starts.
	var wg sync.WaitGroup
	for _, d := range drills {
		wg.Go(func() {
			// later records over about 6 s, in chunks one after another
			// (Produce continues the keys).
			for range 12 {
				if _, err := e2e.Produce(ctx, src, d.topic, 3, later/12, 100); err != nil {
					t.Error(err)
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
	sawWaiting := map[string]bool{}
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
					sawWaiting[d.name] = true
				}
			}
			switch {
			case body["state"] == "done":
				checkReport(t, d.name, body, d.groups)
				done[d.name] = true
			case body["state"] == "failed" || time.Now().After(deadline):
				t.Fatalf("switchover of %s: %v", d.name, body)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	wg.Wait()
	for _, d := range drills {
		if !sawWaiting[d.name] {
			t.Errorf("%s: the switchover never said producers were still writing, though they were when it started", d.name)
		}
	}

	// Consumers move to the target: each reads what it had not read on
	// the source, and nothing it had.
	total := first + later
	for _, d := range drills {
		for g, n := range d.groups {
			keys, err := e2e.ConsumeGroup(ctx, dst, g, d.topic, total-n)
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
// every partition it has an offset on exact with nothing to read again or
// lost, the others named in a note.
func checkReport(t *testing.T, name string, body map[string]any, groups map[string]int) {
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
	for _, g := range gs {
		g := g.(map[string]any)
		ps, _ := g["partitions"].([]any)
		if notes := fmt.Sprint(g["notes"]); len(ps) < 3 && !strings.Contains(notes, "no committed offset on the source") {
			t.Errorf("%s: group %s reports %d partitions and no note on the others: %v", name, g["group"], len(ps), g)
		}
		for _, p := range ps {
			p := p.(map[string]any)
			if p["exact"] != true || p["may_read_again"] != 0.0 || p["may_be_lost"] != 0.0 {
				t.Errorf("%s: group %s: %v, want exact with nothing to read again or lost", name, g["group"], p)
			}
		}
	}
}

package service

import (
	"fmt"
	"strings"
	"testing"

	"github.com/kmirror/kmirror/internal/task"
)

// clusters known to the addrs lookup of the tests.
var testClusters = map[string][]string{
	"east":  {"e1:9092", "e2:9092"},
	"west":  {"w1:9092", "w2:9092"},
	"north": {"n1:9092"},
}

func testAddrs(name string) []string { return testClusters[name] }

// mk builds a valid plaintext task: on current, with peer (a registered
// cluster name, or an address when it holds ':'), direction and topics.
func mk(name, current, peer string, direction task.Direction, topics ...string) task.Task {
	x := task.Task{Name: name, Type: "kafka-replication",
		Current: task.Current{Cluster: current, Alias: strings.ToUpper(current[:1])},
		Rules:   task.Rules{Direction: direction, Tasks: 2, ReplicationFactor: 1, StartOffset: "earliest", Compression: "none"}}
	if strings.Contains(peer, ":") {
		x.Peer = task.Peer{Alias: "W", ConfigType: "address", Address: []string{peer}, SecurityProtocol: "PLAINTEXT"}
	} else {
		x.Peer = task.Peer{Alias: strings.ToUpper(peer[:1]), ConfigType: "cluster", Cluster: peer}
	}
	if len(topics) == 1 && strings.ContainsAny(topics[0], "*|[(") {
		x.Rules.TopicsRegex = topics[0]
	} else {
		x.Rules.Topics = topics
	}
	return x
}

func with(x task.Task, f func(*task.Task)) task.Task { f(&x); return x }

func header(x *task.Task) { x.Rules.AddSourceHeader = true }
func rename(x *task.Task) { x.Rules.RenameTopics = true }
func syncs(x *task.Task)  { x.Rules.SyncConsumerOffsets = true }

func TestCheckAgainstTasks(t *testing.T) {
	eighteen := make([]task.Task, 0, 18)
	for i := range 18 {
		eighteen = append(eighteen, mk(fmt.Sprintf("task-%02d", i), "east", "west", "push", fmt.Sprintf("t%d", i)))
	}
	tests := []struct {
		name     string
		t        task.Task
		existing []task.Task
		want     []fp
		warn     []string // phrases of expected warnings, in any order
	}{
		{"no other tasks", mk("one1", "east", "west", "push", "orders"), nil, nil, nil},

		// name
		{"name unique", mk("orders-dr", "east", "west", "push", "a"), []task.Task{mk("orders-dr", "north", "west", "push", "b")},
			[]fp{{"name", `a task named "orders-dr" already exists`}}, nil},
		{"name differs in case", mk("Orders-DR", "east", "west", "push", "a"), []task.Task{mk("orders-dr", "north", "west", "push", "b")},
			[]fp{{"name", "differ only in case"}}, nil},

		// limit
		{"17 tasks on cluster ok", mk("new1", "east", "west", "push", "x"), eighteen[:17], nil, nil},
		{"18 tasks on cluster", mk("new1", "east", "west", "push", "x"), eighteen, []fp{{"current.cluster", "already has 18 Smart Connect tasks"}}, nil},
		{"tasks on other clusters not counted", mk("new1", "north", "west", "push", "x"), eighteen, nil, nil},

		// the peer is the current cluster
		{"peer address is the current cluster", mk("self", "east", "E2:9092", "push", "x"), nil, []fp{{"peer.address", "current cluster \"east\" itself"}}, nil},

		// pull + push loops (SPEC)
		{"pull and push loop", mk("second", "east", "west", "pull", "orders"), []task.Task{mk("first", "east", "west", "push", "orders")},
			[]fp{{"rules.direction", `replication loop with task "first"`}}, nil},
		{"push from each side loops", mk("second", "west", "east", "push", "orders"), []task.Task{mk("first", "east", "west", "push", "orders")},
			[]fp{{"rules.direction", `replication loop with task "first"`}}, nil},
		{"loop by address and by name", with(mk("second", "west", "east", "push", "orders", "x"), func(x *task.Task) { x.Peer.Alias = "E" }),
			[]task.Task{with(mk("first", "east", "w2:9092", "push", "orders"), func(x *task.Task) { x.Peer.Alias = "W" })},
			[]fp{{"rules.direction", `task "first"`}}, nil},
		{"pull and push on other topics ok", mk("second", "east", "west", "pull", "payments"), []task.Task{mk("first", "east", "west", "push", "orders")}, nil, nil},
		{"pull and push over other clusters ok", mk("second", "east", "north", "pull", "orders"), []task.Task{mk("first", "east", "west", "push", "orders")}, nil, nil},
		{"pull with rename and push ok", with(mk("second", "east", "west", "pull", "orders"), rename), []task.Task{mk("first", "east", "west", "push", "orders")}, nil, nil},
		{"pull and push with rename ok", mk("second", "east", "west", "pull", "orders"), []task.Task{with(mk("first", "east", "west", "push", "orders"), rename)}, nil, nil},
		{"both with headers ok", with(mk("second", "east", "west", "pull", "orders"), header), []task.Task{with(mk("first", "east", "west", "push", "orders"), header)}, nil, nil},
		{"header on this task only echoes", with(mk("second", "east", "west", "pull", "orders"), header), []task.Task{mk("first", "east", "west", "push", "orders")},
			[]fp{{"rules.direction", `recreate task "first" with add source header`}}, nil},
		{"header on the other task only echoes", mk("second", "east", "west", "pull", "orders"), []task.Task{with(mk("first", "east", "west", "push", "orders"), header)},
			[]fp{{"rules.direction", "turn on add source header or rename topics in this task"}}, nil},
		{"headers with different aliases loop", with(mk("second", "west", "east", "push", "orders"), func(x *task.Task) { header(x); x.Peer.Alias = "EAST" }),
			[]task.Task{with(mk("first", "east", "west", "push", "orders"), header)},
			[]fp{{"rules.direction", "same alias"}}, []string{`calls cluster east "EAST" but task "first" calls it "E"`}},

		// bidirectional
		{"bidirectional and plain push echo", mk("second", "east", "west", "push", "orders"),
			[]task.Task{with(mk("first", "east", "west", "bidirectional", "orders"), header)},
			[]fp{{"rules.direction", `task "first"`}}, []string{"replicated twice"}},
		{"plain pull and bidirectional echo", with(mk("second", "west", "east", "bidirectional", "orders"), header),
			[]task.Task{mk("first", "east", "west", "pull", "orders")},
			[]fp{{"rules.direction", `task "first"`}}, []string{"replicated twice"}},
		{"bidirectional and pull with header duplicate only", with(mk("second", "east", "west", "pull", "orders"), header),
			[]task.Task{with(mk("first", "east", "west", "bidirectional", "orders"), header)}, nil, []string{"replicated twice"}},
		{"bidirectional with rename and plain push ok", mk("second", "east", "west", "push", "orders"),
			[]task.Task{with(mk("first", "east", "west", "bidirectional", "orders"), rename)}, nil, nil},

		// regexes
		{"regex and regex loop", mk("second", "east", "west", "pull", ".*"), []task.Task{mk("first", "east", "west", "push", "ord.*")},
			[]fp{{"rules.direction", `"ord"`}}, nil},
		{"regexes overlap", mk("second", "east", "west", "pull", "(a|b)x.*"), []task.Task{mk("first", "east", "west", "push", "bx[0-9]+")},
			[]fp{{"rules.direction", `"bx0"`}}, nil},
		{"regexes disjoint", mk("second", "east", "west", "pull", "orders.*"), []task.Task{mk("first", "east", "west", "push", "pay.*")}, nil, nil},
		{"regexes meet only on internal topics", mk("second", "east", "west", "pull", "x.*"), []task.Task{mk("first", "east", "west", "push", "x.*internal|y.*")}, nil, nil},
		{"regexes meet only on topics from the peer", mk("second", "east", "west", "pull", "W[.].*"), []task.Task{mk("first", "east", "west", "push", ".*")}, nil, nil},
		{"regex and list loop", mk("second", "east", "west", "pull", "ord.*"), []task.Task{mk("first", "east", "west", "push", "orders", "x")},
			[]fp{{"rules.direction", `"orders"`}}, nil},

		// mappings
		{"mappings back and forth loop", with(mk("second", "east", "west", "pull", "copy"), func(x *task.Task) {
			x.Rules.TopicMappings = []task.Mapping{{Source: "copy", Target: "orders"}}
		}), []task.Task{with(mk("first", "east", "west", "push", "orders"), func(x *task.Task) {
			x.Rules.TopicMappings = []task.Mapping{{Source: "orders", Target: "copy"}}
		})}, []fp{{"rules.direction", `topic "copy" from west to east`}}, nil},
		{"mapping elsewhere ok", with(mk("second", "east", "west", "pull", "orders"), func(x *task.Task) {
			x.Rules.TopicMappings = []task.Mapping{{Source: "orders", Target: "orders-from-west"}}
		}), []task.Task{mk("first", "east", "west", "push", "orders")}, nil, nil},

		// duplicates
		{"identical with offset sync refused", with(mk("second", "east", "west", "push", "orders"), syncs), []task.Task{with(mk("first", "east", "west", "push", "orders"), syncs)},
			[]fp{{"rules.topics", `same configuration as task "first"`}}, nil},
		{"identical without offset sync warned", mk("second", "east", "west", "push", "orders"), []task.Task{mk("first", "east", "west", "push", "orders")},
			nil, []string{`same configuration as task "first"`}},
		{"overlap with offset sync on the other refused", with(mk("second", "east", "west", "push", ".*"), func(x *task.Task) { x.Rules.Compression = "zstd" }),
			[]task.Task{with(mk("first", "east", "west", "push", "orders", "payments"), syncs)},
			[]fp{{"rules.topics_regex", `same target topic as task "first"`}}, nil},
		{"same direction from the other side", with(mk("second", "west", "east", "pull", "orders"), syncs), []task.Task{mk("first", "east", "west", "push", "orders")},
			[]fp{{"rules.topics", `task "first"`}}, nil},
		{"same topics renamed differently ok", with(mk("second", "east", "west", "push", "orders"), rename), []task.Task{with(mk("first", "east", "west", "push", "orders"), syncs)}, nil, nil},
		{"bidirectional twice warned", with(mk("second", "west", "east", "bidirectional", "orders"), header),
			[]task.Task{with(mk("first", "east", "west", "bidirectional", "orders"), header)}, nil, []string{"replicated twice"}},

		// aliases
		{"different aliases warned", with(mk("second", "east", "west", "push", "b"), func(x *task.Task) { x.Peer.Alias = "WEST" }),
			[]task.Task{mk("first", "east", "west", "push", "a")}, nil, []string{`calls cluster west "WEST"`}},
		{"peer alias reused for another cluster warned", with(mk("second", "east", "north", "push", "b"), func(x *task.Task) { x.Peer.Alias = "W" }),
			[]task.Task{mk("first", "east", "west", "push", "a")}, nil, []string{`peer alias "W" is also used by task "first"`}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if p := ValidateTask(NormalizeTask(tc.t)); len(p) > 0 {
				t.Fatalf("test task is invalid: %v", p)
			}
			for _, e := range tc.existing {
				if p := ValidateTask(NormalizeTask(e)); len(p) > 0 && !strings.HasPrefix(tc.name, "18") {
					t.Fatalf("existing task %s is invalid: %v", e.Name, p)
				}
			}
			p, warnings := CheckAgainstTasks(tc.t, tc.existing, testAddrs)
			checkProblems(t, p, tc.want)
			used := make([]bool, len(warnings))
			for _, w := range tc.warn {
				found := false
				for i, got := range warnings {
					if !used[i] && strings.Contains(got, w) {
						used[i], found = true, true
						break
					}
				}
				if !found {
					t.Errorf("missing warning ...%s...", w)
				}
			}
			for i, w := range warnings {
				if !used[i] {
					t.Errorf("unexpected warning: %s", w)
				}
			}
		})
	}
}

func TestCheckAgainstTasksWithoutAddrs(t *testing.T) {
	// Without the lookup clusters are told apart by name only.
	p, _ := CheckAgainstTasks(mk("second", "east", "west", "pull", "orders"), []task.Task{mk("first", "east", "west", "push", "orders")}, nil)
	checkProblems(t, p, []fp{{"rules.direction", "replication loop"}})
}

package policy

import (
	"reflect"
	"regexp"
	"strings"
	"testing"
)

func mustCompile(t *testing.T, topics []string, regex string, rename bool, m map[string]string) Policy {
	t.Helper()
	p, err := Compile("A", "B", topics, regex, rename, m)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestIsInternal(t *testing.T) {
	for topic, want := range map[string]bool{
		"orders":                      false,
		"topic.internal":              true,
		"xinternal":                   true,
		"__consumer_offsets":          true,
		"__transaction_state":         true,
		"mm2-offset-syncs.B.internal": true,
		"A.checkpoints.internal":      true,
		"heartbeats":                  true,
		"A.heartbeats":                true,
		"kmirror-progress":            true,
		"internal.orders":             false,
		".hidden":                     true,
		"x.replica":                   false,
	} {
		if got := IsInternal(topic); got != want {
			t.Errorf("IsInternal(%q) = %v, want %v", topic, got, want)
		}
	}
}

func TestSelectAndName(t *testing.T) {
	source := []string{"orders", "payments", "B.orders", "A.orders", "topic.internal", "__consumer_offsets", "logs-1", "logs-2", "other"}
	cases := []struct {
		name      string
		p         Policy
		want      []Pair
		conflicts int
	}{
		{"list identity", mustCompile(t, []string{"orders", "payments", "missing"}, "", false, nil),
			[]Pair{{"orders", "orders"}, {"payments", "payments"}}, 0},
		{"list rename", mustCompile(t, []string{"orders"}, "", true, nil),
			[]Pair{{"orders", "A.orders"}}, 0},
		{"regex is anchored", mustCompile(t, nil, "logs-.", false, nil),
			[]Pair{{"logs-1", "logs-1"}, {"logs-2", "logs-2"}}, 0},
		{"regex never takes internal or came-from-target topics", mustCompile(t, nil, ".*", false, nil),
			[]Pair{{"A.orders", "A.orders"}, {"logs-1", "logs-1"}, {"logs-2", "logs-2"}, {"orders", "orders"}, {"other", "other"}, {"payments", "payments"}}, 0},
		{"mapping", mustCompile(t, []string{"orders"}, "", false, map[string]string{"orders": "orders-copy", "payments": "pay"}),
			[]Pair{{"orders", "orders-copy"}, {"payments", "pay"}}, 0},
		{"mapping collision is reported", mustCompile(t, []string{"orders", "other"}, "", false, map[string]string{"other": "orders"}),
			[]Pair{{"orders", "orders"}}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, conflicts := c.p.Select(source)
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("Select = %v, want %v", got, c.want)
			}
			if len(conflicts) != c.conflicts {
				t.Errorf("conflicts = %v, want %d", conflicts, c.conflicts)
			}
		})
	}
}

// Renamed names carry their chain of aliases: "C.B.orders" came from B
// (through C) and is not copied back to B, as MM2's isCycle walks it.
// Identity names say nothing past their first part.
func TestCycleThroughTheChainOfAliases(t *testing.T) {
	for _, c := range []struct {
		rename bool
		topic  string
		want   bool
	}{
		{true, "C.B.orders", false}, {true, "C.orders", true}, {true, "B.orders", false}, {true, "orders.B", true},
		{false, "C.B.orders", true}, {false, "B.orders", false}, {false, "orders.B", true},
	} {
		if got := mustCompile(t, nil, ".*", c.rename, nil).Selected(c.topic); got != c.want {
			t.Errorf("rename %v: Selected(%q) = %v, want %v", c.rename, c.topic, got, c.want)
		}
	}
}

// The topics a flow never copies, as MM2's topics.exclude lists them,
// exclude exactly what Selected never copies by name.
func TestTopicsExcludeIsTheInternalTopicsAndTheTarget(t *testing.T) {
	p := mustCompile(t, nil, ".*", false, nil)
	re := regexp.MustCompile(AnchoredTopicRegex(strings.Join(TopicsExclude("B"), "|")))
	for _, topic := range []string{"orders", "x.replica", "B.orders", "Borders", "__consumer_offsets", ".hidden", "a-internal",
		"mm2-offsets.A.internal", "kmirror-history", "kmirror.x", "A.orders", "b.orders"} {
		if excluded, selected := re.MatchString(topic), p.Selected(topic); excluded == selected {
			t.Errorf("%q: excluded %v, selected %v", topic, excluded, selected)
		}
	}
}

// Own and tools' groups are never synced, matched on the whole name.
func TestUnsyncedGroup(t *testing.T) {
	for group, unsynced := range map[string]bool{
		"orders-app": false, "connect-sink": true, "console-consumer-1": true, "__internal": true,
		"kmirror.t1.A-B": true, "xconnect-a": false, "kmirrorX": false, "my-console-consumer-2": false,
	} {
		if got := UnsyncedGroup(group) != ""; got != unsynced {
			t.Errorf("UnsyncedGroup(%q) = %v, want %v", group, got, unsynced)
		}
	}
}

func TestLoopsBack(t *testing.T) {
	p := mustCompile(t, []string{"x"}, "", false, nil)
	for v, want := range map[string]bool{"B": true, "A": false, "": false, "BB": false} {
		if got := p.LoopsBack([]byte(v)); got != want {
			t.Errorf("LoopsBack(%q) = %v, want %v", v, got, want)
		}
	}
	if p.LoopsBack(nil) {
		t.Error("LoopsBack(nil) = true")
	}
}

func TestCompileBadRegex(t *testing.T) {
	if _, err := Compile("A", "B", nil, "(", false, nil); err == nil {
		t.Fatal("want error for bad regex")
	}
}

// Heartbeats topics are replicated by every flow, renamed in every naming
// mode, and never into a cluster their chain of aliases already went
// through (MM2's MirrorSourceConnector with either replication policy).
func TestHeartbeats(t *testing.T) {
	modes := map[string]Policy{
		"identity": mustCompile(t, []string{"orders"}, "", false, nil),
		"rename":   mustCompile(t, []string{"orders"}, "", true, nil),
		"regex":    mustCompile(t, nil, "orders.*", false, nil),
		"mapping":  mustCompile(t, nil, "", false, map[string]string{"orders": "o", "heartbeats": "hb"}),
	}
	cases := []struct {
		topic, target string // target "" = not selected
	}{
		{"heartbeats", "A.heartbeats"},
		{"C.heartbeats", "A.C.heartbeats"},
		{"C.D.heartbeats", "A.C.D.heartbeats"},
		{"B.heartbeats", ""},   // came from the target
		{"C.B.heartbeats", ""}, // went through the target
		{"A.heartbeats", ""},   // the source's own heartbeats came back to it
		{"C.A.heartbeats", ""},
		{"BB.heartbeats", "A.BB.heartbeats"},
		{"myheartbeats", ""},
		{".heartbeats", ""},
		{"C..heartbeats", ""},
		{"__x.heartbeats", ""},
		{"mm2-x.heartbeats", ""},
	}
	for name, p := range modes {
		for _, c := range cases {
			if got := p.Selected(c.topic); got != (c.target != "") {
				t.Errorf("%s: Selected(%q) = %v", name, c.topic, got)
				continue
			}
			if c.target != "" {
				if got := p.TargetTopic(c.topic); got != c.target {
					t.Errorf("%s: TargetTopic(%q) = %q, want %q", name, c.topic, got, c.target)
				}
			}
		}
	}
}

// Two identity flows A->B and B->A never pass heartbeats round: what one
// writes under the other's alias the other leaves alone.
func TestHeartbeatsDoNotLoopBidirectional(t *testing.T) {
	ab, err := Compile("A", "B", []string{"x"}, "", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	ba, err := Compile("B", "A", []string{"x"}, "", false, nil)
	if err != nil {
		t.Fatal(err)
	}
	onA, onB := map[string]bool{"heartbeats": true}, map[string]bool{"heartbeats": true}
	for range 5 { // a fixed point is reached after one round
		for topic := range onA {
			if ab.Selected(topic) {
				onB[ab.TargetTopic(topic)] = true
			}
		}
		for topic := range onB {
			if ba.Selected(topic) {
				onA[ba.TargetTopic(topic)] = true
			}
		}
	}
	want := map[string]bool{"heartbeats": true, "B.heartbeats": true}
	if !reflect.DeepEqual(onA, want) {
		t.Errorf("on A: %v, want %v", onA, want)
	}
	want = map[string]bool{"heartbeats": true, "A.heartbeats": true}
	if !reflect.DeepEqual(onB, want) {
		t.Errorf("on B: %v, want %v", onB, want)
	}
}

// A flow whose source and target are one cluster (two aliases for it)
// replicates the heartbeats it writes there once, never its own copy again.
func TestHeartbeatsOnOneClusterStopAfterOneCopy(t *testing.T) {
	p, err := Compile("LA", "LB", []string{"x"}, "", true, nil)
	if err != nil {
		t.Fatal(err)
	}
	topics := map[string]bool{"heartbeats": true}
	for range 5 {
		for topic := range topics {
			if p.Selected(topic) {
				topics[p.TargetTopic(topic)] = true
			}
		}
	}
	if want := map[string]bool{"heartbeats": true, "LA.heartbeats": true}; !reflect.DeepEqual(topics, want) {
		t.Errorf("topics %v, want %v", topics, want)
	}
}

// A topics regex matches whole names, and a broken one is refused rather
// than compiled, once wrapped, into another pattern.
func TestCompileTopicRegex(t *testing.T) {
	for _, tc := range []struct {
		re      string
		matches []string
		misses  []string
		bad     bool
	}{
		{re: "orders.*", matches: []string{"orders", "orders-eu"}, misses: []string{"old-orders"}},
		{re: "a|b", matches: []string{"a", "b"}, misses: []string{"ab", "xa"}},
		{re: "a)|(b", bad: true}, // "^(?:a)|(b)$" would be valid, and mean something else
		{re: "(", bad: true},
	} {
		re, err := CompileTopicRegex(tc.re)
		if tc.bad {
			if err == nil {
				t.Errorf("%q compiled as %q, want an error", tc.re, re)
			}
			if _, err := Compile("A", "B", nil, tc.re, false, nil); err == nil {
				t.Errorf("policy with regex %q compiled, want an error", tc.re)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%q: %v", tc.re, err)
		}
		for _, m := range tc.matches {
			if !re.MatchString(m) {
				t.Errorf("%q does not match %q", tc.re, m)
			}
		}
		for _, m := range tc.misses {
			if re.MatchString(m) {
				t.Errorf("%q matches %q", tc.re, m)
			}
		}
	}
}

// The way back copies exactly the forward flow's target topics to their
// sources, renamed ones too (which a flow to A never copies otherwise).
func TestBackGivesNamesBack(t *testing.T) {
	p := Back("B", "A", map[string]string{"orders": "A.orders", "pay": "pay-copy"})
	cases := []struct {
		topic, target string
		selected      bool
	}{
		{"A.orders", "orders", true},
		{"pay-copy", "pay", true},
		{"orders", "", false},  // B's own topic of that name is not the copy
		{"A.other", "", false}, // not switched over
		{"heartbeats", "B.heartbeats", true},
		{"A.heartbeats", "", false}, // went through A already
	}
	for _, tc := range cases {
		if got := p.Selected(tc.topic); got != tc.selected {
			t.Errorf("Selected(%q) = %v, want %v", tc.topic, got, tc.selected)
		}
		if tc.selected {
			if got := p.TargetTopic(tc.topic); got != tc.target {
				t.Errorf("TargetTopic(%q) = %q, want %q", tc.topic, got, tc.target)
			}
		}
	}
}

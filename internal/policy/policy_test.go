package policy

import (
	"reflect"
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

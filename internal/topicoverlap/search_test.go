package topicoverlap_test

import (
	"regexp"
	"strings"
	"testing"

	"github.com/kmirror/kmirror/internal/topicoverlap"
)

// anyName approves every name the search offers.
func anyName(string) bool { return true }

func TestFind(t *testing.T) {
	tests := []struct {
		name    string
		regexes []string
		ex      topicoverlap.Exclude
		want    func(string) bool
		topic   string
	}{
		{"anything", []string{".*"}, topicoverlap.Exclude{}, anyName, "a"},
		{"literal", []string{"orders"}, topicoverlap.Exclude{}, anyName, "orders"},
		{"internal prefix passed over", []string{"__.*|x"}, topicoverlap.Exclude{}, anyName, "x"},
		{"shortest past an internal prefix", []string{"(__|ab)x"}, topicoverlap.Exclude{}, anyName, "abx"},
		{"internal suffix passed over", []string{".*internal|ok"}, topicoverlap.Exclude{}, anyName, "ok"},
		{"class", []string{"[A-Z]{3}"}, topicoverlap.Exclude{}, anyName, "AAA"},
		{"word boundary", []string{`\bfoo`}, topicoverlap.Exclude{}, anyName, "foo"},
		{"only internal names", []string{"mm2-.*|kmirror-.*|heartbeats"}, topicoverlap.Exclude{}, anyName, ""},
		{"escaped dot", []string{`a\.b`}, topicoverlap.Exclude{}, anyName, "a.b"},
		{"names Kafka refuses", []string{"[.]|[.][.]"}, topicoverlap.Exclude{}, anyName, ""},
		{"long name", []string{"x{200}"}, topicoverlap.Exclude{}, anyName, strings.Repeat("x", 200)},
		{"longer than Kafka allows", []string{"x{250}"}, topicoverlap.Exclude{}, anyName, ""},
		{"not a topic character", []string{"orders list"}, topicoverlap.Exclude{}, anyName, ""},
		{"invalid regex selects nothing", []string{"(orders"}, topicoverlap.Exclude{}, anyName, ""},
		{"two regexes overlap", []string{"orders.*", ".*-eu"}, topicoverlap.Exclude{}, anyName, "orders-eu"},
		{"two regexes disjoint", []string{"a.*", "b.*"}, topicoverlap.Exclude{}, anyName, ""},
		{"excluded exact name", []string{"orders|payments"}, topicoverlap.Exclude{Exact: []string{"orders"}}, anyName, "payments"},
		{"excluded prefix", []string{"B[.]x|x"}, topicoverlap.Exclude{Prefixes: []string{"B."}}, anyName, "x"},
		{"excluded suffix", []string{"x[.]old|xy"}, topicoverlap.Exclude{Suffixes: []string{".old"}}, anyName, "xy"},
		{"want is asked once per class of names", []string{"[ab]{2}"}, topicoverlap.Exclude{}, func(s string) bool { return s != "aa" }, ""},
		{"want refuses all", []string{"[ab]"}, topicoverlap.Exclude{}, func(string) bool { return false }, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			budget := topicoverlap.SearchLimit
			got, decided := topicoverlap.Find(tc.regexes, tc.ex, tc.want, &budget)
			if !decided || got != tc.topic {
				t.Errorf("Find(%q) = %q, %v; want %q, decided", tc.regexes, got, decided, tc.topic)
			}
			if budget < 0 || budget > topicoverlap.SearchLimit {
				t.Errorf("budget left %d, want between 0 and %d", budget, topicoverlap.SearchLimit)
			}
		})
	}
}

// hostile is small alone, but past "__" a state leads on any character to
// any of up to 300 states: two of them make up to 300*300 product states a
// step, and no common topic exists.
func hostile(end string) string { return "(?:__(?:.?){300}|x)" + end }

func TestFindGivesUpWithinItsBudget(t *testing.T) {
	tests := []struct {
		name    string
		regexes []string
		budget  int
	}{
		{"product states", []string{hostile("q"), hostile("r")}, 4_000_000},
		{"more than one search may spend", []string{hostile("q"), hostile("r")}, 10 * topicoverlap.SearchLimit},
		{"small shared budget", []string{hostile("q"), hostile("r")}, 1000},
		{"instructions", []string{strings.Repeat("(a|b|c)?", 120) + "z{900}y"}, topicoverlap.SearchLimit},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			made := 0
			*topicoverlap.ProductStatesMade = func(n int) { made += n }
			defer func() { *topicoverlap.ProductStatesMade = nil }()
			budget := tc.budget
			got, decided := topicoverlap.Find(tc.regexes, topicoverlap.Exclude{}, anyName, &budget)
			if decided || got != "" {
				t.Errorf("Find = %q, %v; want undecided", got, decided)
			}
			limit := min(tc.budget, topicoverlap.SearchLimit)
			if spent := tc.budget - budget; spent < limit || budget < 0 {
				t.Errorf("spent %d of %d (left %d): want the whole of min(budget, SearchLimit) = %d and no more", spent, tc.budget, budget, limit)
			}
			if made > limit {
				t.Errorf("%d product states made, more than the budget %d", made, limit)
			}
		})
	}
}

// FuzzFind: whatever the regexes, Find never panics, spends no more than
// its budget, and any topic it returns is a legal, non-internal topic name
// that every regex accepts (anchored) and want approves.
func FuzzFind(f *testing.F) {
	f.Add("orders.*", ".*-eu", 3, 50_000)
	f.Add("(__|ab)x", "a.*", 0, 50_000)
	f.Add(`\bfoo\b.*`, "[a-z]+", 2, 10_000)
	f.Add(hostile("q"), hostile("r"), 1, 100_000)
	f.Add("x{200}", "x*", 5, 1_000_000)
	f.Add("(?i)Ab|^c$", "(?m)^a.$", 1, 100)
	legal := regexp.MustCompile(`^[a-zA-Z0-9._-]{1,249}$`)
	f.Fuzz(func(t *testing.T, re1, re2 string, mod, budget int) {
		if len(re1) > 200 || len(re2) > 200 || budget < 0 || budget > 2_000_000 {
			return
		}
		// A predicate that refuses some names, so it must be asked.
		want := func(s string) bool { return mod <= 1 || len(s)%mod != 0 }
		ex := topicoverlap.Exclude{Exact: []string{"ab"}, Prefixes: []string{"B."}, Suffixes: []string{".old"}}
		made := 0
		*topicoverlap.ProductStatesMade = func(n int) { made += n }
		defer func() { *topicoverlap.ProductStatesMade = nil }()
		left := budget
		got, decided := topicoverlap.Find([]string{re1, re2}, ex, want, &left)
		if spent := budget - left; left < 0 || spent > min(budget, topicoverlap.SearchLimit) || made > budget {
			t.Fatalf("budget %d: %d left, %d product states made", budget, left, made)
		}
		if got == "" {
			return
		}
		if !decided {
			t.Fatalf("a topic %q with decided false", got)
		}
		for _, re := range []string{re1, re2} {
			if !regexp.MustCompile("^(?:" + re + ")$").MatchString(got) {
				t.Errorf("%q does not match %q", got, re)
			}
		}
		if !want(got) || !legal.MatchString(got) || got == "." || got == ".." || got == "ab" ||
			strings.HasPrefix(got, "B.") || strings.HasSuffix(got, ".old") || isInternal(got) {
			t.Errorf("%q is refused, excluded, internal or not a legal topic name", got)
		}
	})
}

// isInternal is policy.IsInternal, restated so the test does not trust the
// search's own list.
func isInternal(s string) bool {
	return strings.HasSuffix(s, "internal") || strings.HasPrefix(s, "__") || strings.HasPrefix(s, "mm2-") ||
		strings.HasPrefix(s, "kmirror-") || s == "heartbeats" || strings.HasSuffix(s, ".heartbeats")
}

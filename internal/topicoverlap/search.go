// Package topicoverlap decides whether topic regexes can name a common
// topic: it searches, breadth first and within a work budget, for the
// shortest legal Kafka topic name that every regex accepts (anchored, as
// the replicator matches) and a caller's predicate approves. The cross-task
// rules use it to tell whether two tasks' topics_regex overlap, and the
// task rules whether a topics_regex selects any replicable topic at all.
package topicoverlap

import (
	"regexp/syntax"
	"slices"
	"strconv"
	"strings"

	"github.com/kmirror/kmirror/internal/policy"
)

// SearchLimit is the most one Find spends, whatever budget it is given. A
// unit of budget is one regex instruction visited or one product state made
// (a state of every pattern at once), whichever the search does, so that
// hostile regexes cannot stall a request.
const SearchLimit = 1_000_000

// maxNameLength is Kafka's limit on a topic name.
const maxNameLength = 249

// topicAlphabet is every character of a legal topic name, lowercase first so
// examples read naturally.
const topicAlphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_."

// internal are the names kmirror never replicates (policy.IsInternal) and
// the two Kafka refuses ("." and ".."): no search returns them.
var internal = Exclude{
	Exact:    []string{".", "..", "heartbeats"},
	Prefixes: []string{"__", "mm2-", "kmirror-"},
	Suffixes: []string{"internal", ".heartbeats"},
}

// Exclude names topics a search never returns, besides the internal ones:
// exact names, and names with one of the prefixes or suffixes. Unlike want,
// which is asked only about a candidate, exclusions let the search tell
// names apart, so that an excluded name never hides an equivalent one.
type Exclude struct {
	Exact, Prefixes, Suffixes []string
}

// productStatesMade, when set (by tests), is told how many product states
// each search step makes.
var productStatesMade func(n int)

// Find returns the shortest topic name that every regex accepts, that is
// neither internal nor excluded, and that want approves. decided is false
// when the search ran out of budget before it could tell; "" with decided
// true means there is no such name (an invalid regex selects nothing).
//
// want is asked about the shortest name of each class of names the search
// cannot tell apart (same regex states, same standing against the
// exclusions); the others of the class are not tried. So want should refuse
// only for reasons the regexes and exclusions capture, as a policy that
// selects by these regexes and maps the excluded names does.
//
// budget is shared by the searches of one check: Find spends at most
// min(SearchLimit, *budget) units and takes what it spent off *budget.
func Find(regexes []string, ex Exclude, want func(string) bool, budget *int) (topic string, decided bool) {
	ts := topicSearch{
		exact:  append(slices.Clone(internal.Exact), ex.Exact...),
		prefix: append(slices.Clone(internal.Prefixes), ex.Prefixes...),
		suffix: append(slices.Clone(internal.Suffixes), ex.Suffixes...),
	}
	return ts.find(regexes, want, budget)
}

// topicSearch runs the regexes' compiled programs side by side over topic
// characters. Names are told apart only by the program states and by where
// they stand against the excluded exact names, prefixes and suffixes, so a
// name is never pruned in favour of an equivalent excluded one; want has
// the final word.
type topicSearch struct {
	exact, prefix, suffix []string
}

type searchNode struct {
	sets [][]uint32
	prev rune // -1 at the start, 'a' after a word character, '.' after another
	pfx  string
	pst  uint8 // 0: pfx is a prefix of an exact name or excluded prefix, 1: neither, 2: has an excluded prefix
	sfx  string
	s    string
}

func (ts topicSearch) find(regexes []string, want func(string) bool, shared *int) (string, bool) {
	progs := make([]*progRunner, len(regexes))
	for i, re := range regexes {
		if _, err := syntax.Parse(re, syntax.Perl); err != nil {
			return "", true // an invalid regex selects nothing
		}
		tree, err := syntax.Parse(policy.AnchoredTopicRegex(re), syntax.Perl)
		if err != nil {
			return "", true
		}
		prog, err := syntax.Compile(tree.Simplify())
		if err != nil {
			return "", true
		}
		progs[i] = newProgRunner(prog)
	}
	budget := min(SearchLimit, *shared)
	defer func(initial int) { *shared -= initial - budget }(budget)
	start := searchNode{prev: -1, sets: make([][]uint32, len(progs))}
	for i, pr := range progs {
		start.sets[i] = []uint32{uint32(pr.prog.Start)}
	}
	seen := map[string]bool{ts.key(start): true}
	queue := []searchNode{start}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, c := range topicAlphabet {
			// Each program moves on c to any of several states; the search
			// follows every combination (states, not sets of states: a
			// common string exists iff a path in the product does, and this
			// keeps patterns like ".*a.{20}" from blowing up).
			//
			// The product is what costs: n states of one program and m of
			// the other make n*m successors, each stored and searched on.
			// It is charged before any is built, so two patterns that are
			// small alone (".*a.{200}" against ".*b.{200}") cannot make
			// millions of them on a budget meant for instructions.
			nexts := make([][]uint32, len(progs))
			product := 1
			for i, pr := range progs {
				nexts[i] = pr.step(n.sets[i], n.prev, c, &budget)
				product *= len(nexts[i])
				if product > budget { // also keeps the product from overflowing
					budget = 0
					return "", false
				}
			}
			budget -= product
			if productStatesMade != nil {
				productStatesMade(product)
			}
			if budget <= 0 {
				return "", false
			}
			combos := [][]uint32{nil}
			for _, next := range nexts {
				grown := make([][]uint32, 0, len(combos)*len(next))
				for _, cmb := range combos {
					for _, pc := range next {
						grown = append(grown, append(slices.Clone(cmb), pc))
					}
				}
				combos = grown
			}
			prev := rune('.')
			if syntax.IsWordChar(c) {
				prev = 'a'
			}
			pfx, pst := ts.nextPrefix(n.pfx, n.pst, c)
			sfx := ts.nextSuffix(n.sfx, c)
			for _, cmb := range combos {
				child := searchNode{sets: make([][]uint32, len(progs)), prev: prev, pfx: pfx, pst: pst, sfx: sfx, s: n.s + string(c)}
				for i, pc := range cmb {
					child.sets[i] = []uint32{pc}
				}
				k := ts.key(child)
				if seen[k] {
					continue
				}
				seen[k] = true
				if ts.allowed(child) {
					all := true
					for i, pr := range progs {
						if !pr.matchesAtEnd(child.sets[i], child.prev, &budget) {
							all = false
							break
						}
					}
					if budget <= 0 {
						return "", false
					}
					if all && want(child.s) {
						return child.s, true
					}
				}
				if len(child.s) < maxNameLength {
					queue = append(queue, child)
				}
			}
		}
	}
	return "", true
}

func (ts topicSearch) key(n searchNode) string {
	var b strings.Builder
	for _, set := range n.sets {
		for _, pc := range set {
			b.WriteString(strconv.FormatUint(uint64(pc), 36))
			b.WriteByte(',')
		}
		b.WriteByte('|')
	}
	b.WriteRune(n.prev)
	b.WriteByte(n.pst + '0')
	b.WriteString(n.pfx)
	b.WriteByte('|')
	b.WriteString(n.sfx)
	return b.String()
}

func (ts topicSearch) nextPrefix(pfx string, st uint8, c rune) (string, uint8) {
	if st != 0 {
		return "", st
	}
	s := pfx + string(c)
	if slices.Contains(ts.prefix, s) {
		return "", 2
	}
	for _, x := range ts.exact {
		if strings.HasPrefix(x, s) {
			return s, 0
		}
	}
	for _, x := range ts.prefix {
		if strings.HasPrefix(x, s) {
			return s, 0
		}
	}
	return "", 1
}

// nextSuffix keeps the longest end of the name that could still grow into
// an excluded suffix.
func (ts topicSearch) nextSuffix(sfx string, c rune) string {
	s := sfx + string(c)
	for i := 0; i <= len(s); i++ {
		for _, x := range ts.suffix {
			if strings.HasPrefix(x, s[i:]) {
				return s[i:]
			}
		}
	}
	return ""
}

func (ts topicSearch) allowed(n searchNode) bool {
	if n.pst == 2 || (n.pst == 0 && slices.Contains(ts.exact, n.pfx)) {
		return false
	}
	for _, x := range ts.suffix {
		if strings.HasSuffix(n.sfx, x) {
			return false
		}
	}
	return true
}

// progRunner steps one compiled regex over topic characters; marks are
// reused between closures (a generation counter) to keep the search cheap.
type progRunner struct {
	prog  *syntax.Prog
	mark  []uint32
	gen   uint32
	stack []uint32
}

func newProgRunner(prog *syntax.Prog) *progRunner {
	return &progRunner{prog: prog, mark: make([]uint32, len(prog.Inst))}
}

// closure follows the program's empty moves from pcs under the empty-width
// conditions flags; it returns the instructions that consume a rune and
// whether a match is reached.
func (r *progRunner) closure(pcs []uint32, flags syntax.EmptyOp, budget *int) (runes []uint32, match bool) {
	r.gen++
	if r.gen == 0 { // wrapped: clear stale marks
		clear(r.mark)
		r.gen = 1
	}
	stack := append(r.stack[:0], pcs...) //nolint:gocritic // reuses r.stack's array on purpose; stored back below
	for len(stack) > 0 && *budget > 0 {
		pc := stack[len(stack)-1]
		stack = stack[:len(stack)-1]
		if int(pc) >= len(r.prog.Inst) || r.mark[pc] == r.gen {
			continue
		}
		r.mark[pc] = r.gen
		*budget--
		inst := &r.prog.Inst[pc]
		switch inst.Op {
		case syntax.InstAlt, syntax.InstAltMatch:
			stack = append(stack, inst.Arg, inst.Out)
		case syntax.InstCapture, syntax.InstNop:
			stack = append(stack, inst.Out)
		case syntax.InstEmptyWidth:
			if syntax.EmptyOp(inst.Arg)&^flags == 0 {
				stack = append(stack, inst.Out)
			}
		case syntax.InstMatch:
			match = true
		case syntax.InstRune, syntax.InstRune1, syntax.InstRuneAny, syntax.InstRuneAnyNotNL:
			runes = append(runes, pc)
		case syntax.InstFail: // matches nothing: this thread ends
		}
	}
	r.stack = stack
	return runes, match
}

func (r *progRunner) step(pcs []uint32, prev, c rune, budget *int) []uint32 {
	runes, _ := r.closure(pcs, syntax.EmptyOpContext(prev, c), budget)
	var next []uint32
	for _, pc := range runes {
		inst := &r.prog.Inst[pc]
		ok := inst.Op == syntax.InstRuneAny || inst.Op == syntax.InstRuneAnyNotNL || inst.MatchRune(c)
		if ok && !containsPC(next, inst.Out) {
			next = append(next, inst.Out)
		}
	}
	slices.Sort(next)
	return next
}

func (r *progRunner) matchesAtEnd(pcs []uint32, prev rune, budget *int) bool {
	_, m := r.closure(pcs, syntax.EmptyOpContext(prev, -1), budget)
	return m
}

func containsPC(list []uint32, pc uint32) bool { return slices.Contains(list, pc) }

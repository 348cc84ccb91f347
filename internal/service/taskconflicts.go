package service

import (
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"strings"

	"github.com/kmirror/kmirror/internal/policy"
	"github.com/kmirror/kmirror/internal/task"
	"github.com/kmirror/kmirror/internal/topicoverlap"
)

// CheckAgainstTasks returns the rules of docs/TASKS.md, Cross-task rules, that t breaks together with
// the tasks already stored (existing), plus warnings that do not block
// creation. The store calls it in the same transaction as the insert. addrs
// returns a registered cluster's bootstrap servers (nil when unknown; addrs
// may be nil), so that a cluster is recognised whether a task names it or
// gives its addresses. It is pure and never panics; existing tasks are
// assumed valid, and one that is not is checked as far as it goes.
//
// Rules:
//   - the name is unique, compared ignoring case (two tasks that differ only
//     in case are too easily confused on the console and in URLs);
//   - at most TasksPerClusterLimit tasks per current cluster;
//   - the peer is not the current cluster itself;
//   - "the same cluster": two sides are the same cluster when they share a
//     registered cluster name or any bootstrap address (host compared
//     ignoring case). So a pull task on X from Y and a push task on Y to X
//     are over the same two clusters, as are a push on X to Y-by-name and a
//     push on X to Y-by-address.
//   - loops: a task's flows (pull: peer->current, push: current->peer,
//     bidirectional: both) are compared with every flow of every stored
//     task. Two opposite flows that copy some topic back into itself (same
//     clusters, overlapping topics, target names leading back) loop unless
//     the records carry a source header the other flow recognises: a flow
//     drops records whose header names its target alias, so a header only
//     helps when both tasks give that cluster the same alias. Neither side
//     stopped: records loop forever (the SPEC's pull + push rule, and a
//     bidirectional task with header vs a task using another alias). One
//     side stopped: every record of the other comes back once into the
//     topic it came from (a bidirectional task vs a plain pull or push);
//     both are refused, naming the stored task. Flows with rename topics
//     never write back into the source topic.
//   - duplicates: two flows over the same clusters in the same direction that
//     copy some topic into the same target topic replicate it twice. This
//     covers identical configurations and more (different tasks counts or
//     compression still duplicate data). Refused when either task syncs
//     consumer offsets (target progress would be corrupted), warned
//     otherwise.
//   - aliases: tasks over the same two clusters should use the same alias
//     for each (warning otherwise: headers and renamed topics only stop
//     loops when aliases agree); a peer alias already used on the same
//     current cluster for what looks like another cluster is warned about
//     (its renamed topics and MM2 internal topics would mix).
//
// When both tasks select topics by regex, the overlap is decided exactly on
// the regexes (an automaton search for a common topic name) within a work
// budget; past it, equal regexes count as overlapping and different ones
// give a warning.
func CheckAgainstTasks(t task.Task, existing []task.Task, addrs func(cluster string) []string) (Problems, []string) {
	var p Problems
	var warnings []string
	t = NormalizeTask(t)
	tv := viewOf(t, addrs)

	if tv.cur.same(tv.peer) && !(t.Peer.ConfigType == task.PeerByCluster && t.Peer.Cluster == t.Current.Cluster) {
		field := "peer.address"
		if t.Peer.ConfigType == task.PeerByCluster {
			field = "peer.cluster"
		}
		p.Add(field, "the peer is the current cluster %q itself (they share a name or bootstrap address): replicating a cluster into itself copies records forever", t.Current.Cluster)
	}

	used, budget := 0, crossCheckBudget
	for _, e := range existing {
		e = NormalizeTask(e)
		if t.Name != "" && strings.EqualFold(e.Name, t.Name) {
			if e.Name == t.Name {
				p.Add("name", "a task named %q already exists: choose another name", e.Name)
			} else {
				p.Add("name", "task %q already exists, and names may not differ only in case: choose another name", e.Name)
			}
		}
		if e.Current.Cluster == t.Current.Cluster {
			used++
		}
		checkPair(&p, &warnings, t, tv, e, viewOf(e, addrs), &budget)
	}
	if used >= TasksPerClusterLimit {
		p.Add("current.cluster", "cluster %q already has %d Smart Connect tasks, the most one cluster may have: delete one first", t.Current.Cluster, TasksPerClusterLimit)
	}
	return p, warnings
}

// taskView is a task's two sides and flows, resolved for comparison.
type taskView struct {
	cur, peer endpoint
	flows     []flowView
}

// endpoint is one cluster as far as it can be identified without I/O.
type endpoint struct {
	keys  []string // "cluster:<name>", "addr:<host:port>"
	label string
	alias string
}

func (a endpoint) same(b endpoint) bool {
	for _, k := range a.keys {
		if contains(b.keys, k) {
			return true
		}
	}
	return false
}

// flowView is one direction of a task with the replicator's own policy, so
// selection and naming here are exactly what would run.
type flowView struct {
	src, dst endpoint
	header   bool
	rename   bool
	pol      policy.Policy
	regex    string
	explicit []string // listed topics and mapping sources
	mapped   []string // mapping sources
}

func viewOf(t task.Task, addrs func(string) []string) taskView {
	registered := func(name string) endpoint {
		ep := endpoint{label: name}
		if name == "" {
			return ep
		}
		ep.keys = []string{"cluster:" + name}
		if addrs != nil {
			ep.keys = append(ep.keys, addrKeys(addrs(name))...)
		}
		return ep
	}
	v := taskView{cur: registered(t.Current.Cluster)}
	if t.Peer.ConfigType == task.PeerByCluster {
		v.peer = registered(t.Peer.Cluster)
	} else {
		v.peer = endpoint{keys: addrKeys(t.Peer.Address), label: strings.Join(t.Peer.Address, ",")}
	}
	v.cur.alias, v.peer.alias = t.Current.Alias, t.Peer.Alias

	r := t.Rules
	var mappings map[string]string
	var mapped []string
	if len(r.TopicMappings) > 0 {
		mappings = make(map[string]string, len(r.TopicMappings))
		for _, m := range r.TopicMappings {
			mappings[m.Source] = m.Target
			mapped = append(mapped, m.Source)
		}
	}
	mk := func(src, dst endpoint) {
		pol, err := policy.Compile(src.alias, dst.alias, r.Topics, r.TopicsRegex, r.RenameTopics, mappings)
		if err != nil {
			return // an invalid stored task selects nothing we can reason about
		}
		v.flows = append(v.flows, flowView{
			src: src, dst: dst, header: r.AddSourceHeader, rename: r.RenameTopics, pol: pol,
			regex: r.TopicsRegex, explicit: append(append([]string(nil), r.Topics...), mapped...), mapped: mapped,
		})
	}
	ends := map[task.Side]endpoint{task.SideCurrent: v.cur, task.SidePeer: v.peer}
	for _, f := range t.Flows() {
		mk(ends[f.Source], ends[f.Target])
	}
	return v
}

func addrKeys(addrs []string) []string {
	var out []string
	for _, a := range addrs {
		if a = strings.ToLower(strings.TrimSpace(a)); a != "" {
			out = append(out, "addr:"+a)
		}
	}
	return out
}

// stops reports whether g drops the records f writes: f marks them with
// its source alias and g refuses records marked with its target alias.
func stops(f, g flowView) bool { return f.header && f.src.alias == g.dst.alias }

func checkPair(p *Problems, warnings *[]string, t task.Task, tv taskView, e task.Task, ev taskView, budget *int) {
	topicsField := "rules.topics"
	if t.Rules.TopicsRegex != "" {
		topicsField = "rules.topics_regex"
	}
	loopDone, dupDone := false, false
	for _, f := range tv.flows {
		for _, g := range ev.flows {
			switch {
			case !dupDone && f.src.same(g.src) && f.dst.same(g.dst):
				s, decided := sameTargetTopic(f, g, budget)
				if !decided {
					if f.regex == g.regex && f.rename == g.rename {
						s = "matching " + strconv.Quote(f.regex)
					} else {
						*warnings = append(*warnings, fmt.Sprintf("could not tell whether topics_regex %q and task %q's %q select the same topics from %s to %s: check the preview, or records may be replicated twice", f.regex, e.Name, g.regex, f.src.label, f.dst.label))
						dupDone = true
						continue
					}
				} else if s != "" {
					s = strconv.Quote(s)
				}
				if s == "" {
					continue
				}
				dupDone = true
				what := fmt.Sprintf("copies topic %s from %s to %s into the same target topic as task %q", s, f.src.label, f.dst.label, e.Name)
				if sameConfig(t, e) {
					what = fmt.Sprintf("has the same configuration as task %q (both copy topic %s from %s to %s)", e.Name, s, f.src.label, f.dst.label)
				}
				if t.Rules.SyncConsumerOffsets || e.Rules.SyncConsumerOffsets {
					p.Add(topicsField, "this task %s: records would be replicated twice, and with consumer-offset sync on the target's consumer progress would be corrupted; use the existing task or select other topics", what)
				} else {
					*warnings = append(*warnings, fmt.Sprintf("this task %s: every record would be replicated twice", what))
				}
			case !loopDone && f.src.same(g.dst) && f.dst.same(g.src):
				s, decided := roundTripTopic(f, g, budget)
				if !decided {
					if f.regex == g.regex && !f.rename && !g.rename {
						s = "matching " + strconv.Quote(f.regex)
					} else {
						*warnings = append(*warnings, fmt.Sprintf("could not tell whether topics_regex %q and task %q's %q select the same topics between %s and %s in opposite directions: check that records cannot loop", f.regex, e.Name, g.regex, f.src.label, f.dst.label))
						loopDone = true
						continue
					}
				} else if s != "" {
					s = strconv.Quote(s)
				}
				if s == "" {
					continue
				}
				fs, gs := stops(f, g), stops(g, f)
				if fs && gs {
					continue
				}
				loopDone = true
				hint := aliasHint(f, g, e.Name)
				switch {
				case !fs && !gs:
					p.Add("rules.direction", "this task forms a replication loop with task %q: this task copies topic %s from %s to %s and task %q copies it back, and neither marks records in a way the other recognises, so records would be copied back and forth forever; turn on add source header or rename topics (or use one bidirectional task)%s", e.Name, s, f.src.label, f.dst.label, e.Name, hint)
				case !fs:
					p.Add("rules.direction", "task %q would copy the records this task copies from %s to %s (topic %s) back into the same topic on %s, duplicating every record; turn on add source header or rename topics in this task%s", e.Name, f.src.label, f.dst.label, s, f.src.label, hint)
				default:
					p.Add("rules.direction", "this task would copy the records task %q copies from %s to %s (topic %s) back into the same topic on %s, duplicating every record, because task %q adds no source header this task recognises; recreate task %q with add source header on, or select other topics%s", e.Name, g.src.label, g.dst.label, s, g.src.label, e.Name, e.Name, hint)
				}
			}
		}
	}
	aliasWarnings(warnings, tv, e, ev)
}

// aliasHint explains a header that is on but does not help because the two
// tasks call the same cluster differently.
func aliasHint(f, g flowView, other string) string {
	switch {
	case f.header && f.src.alias != g.dst.alias:
		return fmt.Sprintf(" (this task calls %s %q but task %q calls it %q: a source header only stops records when both tasks use the same alias)", f.src.label, f.src.alias, other, g.dst.alias)
	case g.header && g.src.alias != f.dst.alias:
		return fmt.Sprintf(" (task %q calls %s %q but this task calls it %q: a source header only stops records when both tasks use the same alias)", other, g.src.label, g.src.alias, f.dst.alias)
	}
	return ""
}

func aliasWarnings(warnings *[]string, tv taskView, e task.Task, ev taskView) {
	// Match t's sides to e's; warn when a shared cluster is named differently
	// and both clusters are shared (rename and headers rely on the aliases).
	pairs := [][2]endpoint{}
	switch {
	case tv.cur.same(ev.cur) && tv.peer.same(ev.peer):
		pairs = [][2]endpoint{{tv.cur, ev.cur}, {tv.peer, ev.peer}}
	case tv.cur.same(ev.peer) && tv.peer.same(ev.cur):
		pairs = [][2]endpoint{{tv.cur, ev.peer}, {tv.peer, ev.cur}}
	}
	for _, pr := range pairs {
		if pr[0].alias != pr[1].alias {
			*warnings = append(*warnings, fmt.Sprintf("this task calls cluster %s %q but task %q calls it %q: use the same alias for a cluster in every task, or renamed topics and source headers will not stop loops between them", pr[0].label, pr[0].alias, e.Name, pr[1].alias))
		}
	}
	if len(pairs) == 0 && tv.cur.same(ev.cur) && tv.peer.alias != "" && tv.peer.alias == ev.peer.alias && len(tv.peer.keys) > 0 && len(ev.peer.keys) > 0 {
		*warnings = append(*warnings, fmt.Sprintf("peer alias %q is also used by task %q on %s for %s, which looks like another cluster: if it is, their renamed topics (%s.x), offset syncs (mm2-offset-syncs.%s.internal) and checkpoints would mix; use another alias", tv.peer.alias, e.Name, tv.cur.label, ev.peer.label, tv.peer.alias, tv.peer.alias))
	}
}

// sameConfig: identical but for the name (and the password, which stored
// tasks may not carry).
func sameConfig(a, b task.Task) bool {
	a.Name, b.Name = "", ""
	a.Peer.Password, b.Peer.Password = "", ""
	return reflect.DeepEqual(a, b)
}

// sameTargetTopic finds a source topic both same-direction flows copy into
// the same target topic. decided is false when the regex search ran out of
// budget.
func sameTargetTopic(f, g flowView, budget *int) (topic string, decided bool) {
	want := func(s string) bool {
		return checkTopicName(s) == "" && f.pol.Selected(s) && g.pol.Selected(s) && f.pol.TargetTopic(s) == g.pol.TargetTopic(s)
	}
	for _, s := range append(append([]string(nil), f.explicit...), g.explicit...) {
		if want(s) {
			return s, true
		}
	}
	// A listed selection is finite and was covered above; unmapped topics
	// of two regexes share a target only under the same naming.
	if f.regex == "" || g.regex == "" || f.rename != g.rename || (f.rename && f.src.alias != g.src.alias) {
		return "", true
	}
	return commonTopic(f, g, want, budget)
}

// roundTripTopic finds a topic on f's source that f copies to the other
// cluster and g copies back into the same topic.
func roundTripTopic(f, g flowView, budget *int) (topic string, decided bool) {
	want := func(s string) bool {
		if checkTopicName(s) != "" || !f.pol.Selected(s) {
			return false
		}
		y := f.pol.TargetTopic(s)
		return g.pol.Selected(y) && g.pol.TargetTopic(y) == s
	}
	cands := append([]string(nil), f.explicit...)
	for _, y := range g.explicit {
		cands = append(cands, g.pol.TargetTopic(y))
	}
	for _, s := range cands {
		if want(s) {
			return s, true
		}
	}
	// Only identity naming on both sides brings an unmapped topic back to
	// itself.
	if f.regex == "" || g.regex == "" || f.rename || g.rename {
		return "", true
	}
	return commonTopic(f, g, want, budget)
}

// commonTopic searches for a topic both flows' regexes select that want
// approves; names that one of the flows maps, or that carry a target's
// alias (they came from there), are passed over.
func commonTopic(f, g flowView, want func(string) bool, budget *int) (string, bool) {
	ex := topicoverlap.Exclude{
		Exact:    append(slices.Clone(f.mapped), g.mapped...),
		Prefixes: []string{f.dst.alias + ".", g.dst.alias + "."},
	}
	return findTopic([]string{f.regex, g.regex}, ex, want, budget)
}

// crossCheckBudget bounds the work of all regex searches of one
// CheckAgainstTasks (topicoverlap.Find counts it), so hostile regexes cannot
// stall a request. CreateTask runs the searches before it takes the store's
// write lock.
const crossCheckBudget = 4_000_000

// findTopic is topicoverlap.Find; tests wrap it to see when the cross-task
// searches run and what they spend.
var findTopic = topicoverlap.Find

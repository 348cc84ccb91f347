// Package policy is the replication policy of one flow: which source topics
// are replicated, what their target topics are called, and which topics would
// close a replication cycle. It is pure: no I/O, table-tested.
//
// Invariants:
//   - internal topics (ending in "internal", starting with "__" or ".") and
//     kmirror's and MM2's own topics are never selected;
//   - heartbeats topics ("heartbeats", "<alias>.heartbeats", ...) are always
//     selected, whatever the list, regex or mappings say, and always renamed
//     "<source alias>.<topic>", as MM2 does under both its replication
//     policies: MirrorClient finds upstream clusters and hops by them;
//   - a topic named "<target alias>.x" is never copied to the cluster with that
//     alias: it came from there (renamed: the alias anywhere in its chain,
//     "C.B.x"); a heartbeats topic whose chain of aliases names the target
//     (MM2's isCycle) or the source anywhere is not either;
//   - two selected source topics never map to the same target topic;
//   - the offsets of kmirror's own and tools' consumer groups are never
//     synced (GroupsExclude); both engines ask this package, the Connect
//     engine through the MM2 settings it writes from it.
package policy

import (
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// Naming modes.
const (
	Identity = "identity"
	Rename   = "rename"
	Mapping  = "mapping"
)

// Policy decides selection and naming for one flow source -> target.
type Policy struct {
	SourceAlias string
	TargetAlias string
	// Topics lists source topics by name; Regex selects by pattern instead.
	Topics []string
	Regex  *regexp.Regexp
	// Rename prefixes target topics with "<source alias>.".
	Rename bool
	// Mappings name target topics freely (source -> target); a mapped source
	// topic is selected even when the list or regex does not name it.
	Mappings map[string]string
	// Back: the way back of a switched-over flow (Back), which copies
	// exactly the topics Mappings names, their names given back.
	Back bool
}

// Back is the policy of a switched-over flow's way back: it copies the
// forward flow's target topics to their sources (names maps a forward
// source topic to its target topic), also those named after the way
// back's target ("A.orders" back to A's "orders": the records written
// there on the target; those that came from A are skipped by their source
// header, not by name).
func Back(sourceAlias, targetAlias string, names map[string]string) Policy {
	back := make(map[string]string, len(names))
	for src, dst := range names {
		back[dst] = src
	}
	return Policy{SourceAlias: sourceAlias, TargetAlias: targetAlias, Mappings: back, Back: true}
}

// Compile builds a Policy, compiling the regex (anchored: the whole topic name
// must match, as MM2's topic filters do).
func Compile(sourceAlias, targetAlias string, topics []string, regex string, rename bool, mappings map[string]string) (Policy, error) {
	p := Policy{SourceAlias: sourceAlias, TargetAlias: targetAlias, Topics: topics, Rename: rename, Mappings: mappings}
	if regex != "" {
		re, err := CompileTopicRegex(regex)
		if err != nil {
			return Policy{}, fmt.Errorf("topics regex %q: %w", regex, err)
		}
		p.Regex = re
	}
	return p, nil
}

// AnchoredTopicRegex is a topics regex as kmirror and MM2 match it: against
// the whole topic name.
func AnchoredTopicRegex(re string) string { return "^(?:" + re + ")$" }

// CompileTopicRegex compiles a topics regex anchored, the one way every
// part of kmirror reads one. The pattern is compiled alone first: wrapped,
// a broken pattern such as "a)|(b" would compile into another, valid one.
func CompileTopicRegex(re string) (*regexp.Regexp, error) {
	if _, err := regexp.Compile(re); err != nil {
		return nil, err
	}
	return regexp.Compile(AnchoredTopicRegex(re))
}

// HeartbeatsTopic is MM2's heartbeats topic: every flow writes its
// heartbeats there on its target.
const HeartbeatsTopic = "heartbeats"

// IsInternal reports whether a topic is internal to Kafka, MM2 or kmirror and
// so never named by a task's selection. Heartbeats topics are among them:
// a task cannot list them, but every flow replicates them (Selected).
func IsInternal(topic string) bool {
	return ownInternal(topic) || IsHeartbeats(topic)
}

// internalTopics are Kafka's, MM2's and kmirror's topics, never replicated:
// names ending in "internal" (Connect's and MM2's), starting with "__"
// (Kafka's) or "." (which MM2 takes for internal whatever it is told), and
// MM2's and kmirror's own. They are written as regexes both Go and Java read
// alike, so a task on Kafka Connect excludes exactly these (TopicsExclude).
var internalTopics = []string{`.*internal`, `__.*`, `\..*`, `mm2-.*`, `kmirror-.*`}

var internalTopicRe = regexp.MustCompile(AnchoredTopicRegex(strings.Join(internalTopics, "|")))

// ownInternal: Kafka's, MM2's and kmirror's topics that are never replicated.
func ownInternal(topic string) bool { return internalTopicRe.MatchString(topic) }

// TopicsExclude are the patterns of topics a flow to targetAlias never
// copies by its topic filter, as MirrorMaker 2's topics.exclude reads them
// (each matched against the whole name): the internal topics and those that
// came from the target (a cycle, which MM2's identity policy would not
// see). Heartbeats topics pass MM2's filter whatever it says and are judged
// by its cycle check, as Selected judges them.
func TopicsExclude(targetAlias string) []string {
	out := append([]string(nil), internalTopics...)
	if targetAlias != "" {
		out = append(out, regexp.QuoteMeta(targetAlias)+`\..*`)
	}
	return out
}

// GroupsExclude are the consumer groups whose offsets no flow syncs,
// whatever the engine: kmirror's own progress groups and tools' (console
// consumers, Kafka Connect's sink connectors, Kafka's own), as MirrorMaker
// 2's groups.exclude reads them (each matched against the whole name).
var GroupsExclude = []string{`console-consumer-.*`, `connect-.*`, `__.*`, regexp.QuoteMeta(OwnGroupPrefix) + `.*`}

// OwnGroupPrefix starts the names of kmirror's own groups (its flows'
// progress, its transactional ids): task.GroupPrefix.
const OwnGroupPrefix = "kmirror."

var excludedGroupRe = regexp.MustCompile(AnchoredTopicRegex(strings.Join(GroupsExclude, "|")))

// UnsyncedGroup says why a consumer group's offsets are never synced, ""
// when they are.
func UnsyncedGroup(group string) string {
	if excludedGroupRe.MatchString(group) {
		return fmt.Sprintf("kmirror syncs no offsets of its own and tools' groups (%s)", strings.Join(GroupsExclude, ", "))
	}
	return ""
}

// IsHeartbeats reports whether topic is a heartbeats topic or a replica of
// one ("A.heartbeats", "B.A.heartbeats"): MM2's isHeartbeatsTopic.
func IsHeartbeats(topic string) bool {
	return topic == HeartbeatsTopic || strings.HasSuffix(topic, "."+HeartbeatsTopic)
}

// Selected reports whether a source topic is replicated by this flow.
func (p Policy) Selected(topic string) bool {
	if ownInternal(topic) {
		return false
	}
	if IsHeartbeats(topic) {
		// An empty alias (".heartbeats", "A..heartbeats") names no
		// cluster: MM2 takes a leading dot for internal.
		return !strings.HasPrefix(topic, ".") && !strings.Contains(topic, "..") && !p.heartbeatsCycle(topic)
	}
	if p.Back {
		_, ok := p.Mappings[topic]
		return ok
	}
	if p.cameFromTarget(topic) {
		return false
	}
	if _, ok := p.Mappings[topic]; ok {
		return true
	}
	if p.Regex != nil {
		return p.Regex.MatchString(topic)
	}
	for _, t := range p.Topics {
		if t == topic {
			return true
		}
	}
	return false
}

// cameFromTarget: "B.orders" on A was replicated from B; copying it back to B
// would close a cycle. Renamed names carry their whole chain of aliases
// ("C.B.orders": from B through C), which MM2's isCycle walks under its
// default policy; under identity names only the first part says anything.
func (p Policy) cameFromTarget(topic string) bool {
	if p.TargetAlias == "" {
		return false
	}
	if strings.HasPrefix(topic, p.TargetAlias+".") {
		return true
	}
	if !p.Rename {
		return false
	}
	// As MM2 splits a name (Java's split drops trailing empty parts: "C.B."
	// names no cluster after C).
	topic = strings.TrimRight(topic, ".")
	for {
		alias, rest, ok := strings.Cut(topic, ".")
		if !ok {
			return false
		}
		if alias == p.TargetAlias {
			return true
		}
		topic = rest
	}
}

// heartbeatsCycle walks a heartbeats topic's aliases ("C.B.heartbeats":
// C, then B) as MM2's isCycle does with its default policy (which its
// identity policy keeps for heartbeats): one naming the target means the
// heartbeats went through the target already, and copying them there again
// would go round for ever. One naming the source is a cycle too, which MM2
// does not check: the source's heartbeats came back to it, which MM2's own
// check never lets happen between clusters, so only a flow whose source
// and target are one cluster sees it — and would copy "A.heartbeats" to
// "A.A.heartbeats" and so on for ever.
func (p Policy) heartbeatsCycle(topic string) bool {
	for {
		alias, rest, ok := strings.Cut(topic, ".")
		if !ok {
			return false
		}
		if alias == p.TargetAlias || alias == p.SourceAlias {
			return true
		}
		topic = rest
	}
}

// TargetTopic is the name of the target topic for a source topic.
func (p Policy) TargetTopic(source string) string {
	if IsHeartbeats(source) {
		return p.SourceAlias + "." + source
	}
	if t, ok := p.Mappings[source]; ok {
		return t
	}
	if p.Rename {
		return p.SourceAlias + "." + source
	}
	return source
}

// Pair is one replicated topic.
type Pair struct {
	Source string `json:"source"`
	Target string `json:"target"`
}

// Select returns the replicated topics among the source's, sorted, with their
// target names. Source topics whose target name another selected topic
// already has are left out and reported, so no target topic mixes two sources.
func (p Policy) Select(sourceTopics []string) (pairs []Pair, conflicts []string) {
	sorted := append([]string(nil), sourceTopics...)
	sort.Strings(sorted)
	owner := map[string]string{}
	for _, s := range sorted {
		if !p.Selected(s) {
			continue
		}
		t := p.TargetTopic(s)
		if prev, dup := owner[t]; dup {
			conflicts = append(conflicts, fmt.Sprintf("topics %q and %q both map to target topic %q; %q is not replicated", prev, s, t, s))
			continue
		}
		owner[t] = s
		pairs = append(pairs, Pair{Source: s, Target: t})
	}
	return pairs, conflicts
}

// LoopsBack reports whether a record carrying the given source-header value
// must not be copied by this flow: it came from the target cluster.
func (p Policy) LoopsBack(sourceHeader []byte) bool {
	return sourceHeader != nil && string(sourceHeader) == p.TargetAlias
}

// Package policy is the replication policy of one flow: which source topics
// are replicated, what their target topics are called, and which topics would
// close a replication cycle. It is pure: no I/O, table-tested.
//
// Invariants:
//   - internal topics (ending in "internal", starting with "__") and kmirror's
//     and MM2's own topics are never selected;
//   - a topic named "<target alias>.x" is never copied to the cluster with that
//     alias: it came from there;
//   - two selected source topics never map to the same target topic.
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
}

// Compile builds a Policy, compiling the regex (anchored: the whole topic name
// must match, as MM2's topic filters do).
func Compile(sourceAlias, targetAlias string, topics []string, regex string, rename bool, mappings map[string]string) (Policy, error) {
	p := Policy{SourceAlias: sourceAlias, TargetAlias: targetAlias, Topics: topics, Rename: rename, Mappings: mappings}
	if regex != "" {
		re, err := regexp.Compile("^(?:" + regex + ")$")
		if err != nil {
			return Policy{}, fmt.Errorf("topics regex %q: %w", regex, err)
		}
		p.Regex = re
	}
	return p, nil
}

// IsInternal reports whether a topic is internal to Kafka, MM2 or kmirror and
// so never replicated.
func IsInternal(topic string) bool {
	switch {
	case strings.HasSuffix(topic, "internal"),
		strings.HasPrefix(topic, "__"),
		strings.HasPrefix(topic, "mm2-"),
		strings.HasPrefix(topic, "kmirror-"),
		topic == "heartbeats" || strings.HasSuffix(topic, ".heartbeats"):
		return true
	}
	return false
}

// Selected reports whether a source topic is replicated by this flow.
func (p Policy) Selected(topic string) bool {
	if IsInternal(topic) || p.cameFromTarget(topic) {
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
// would close a cycle.
func (p Policy) cameFromTarget(topic string) bool {
	return p.TargetAlias != "" && strings.HasPrefix(topic, p.TargetAlias+".")
}

// TargetTopic is the name of the target topic for a source topic.
func (p Policy) TargetTopic(source string) string {
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

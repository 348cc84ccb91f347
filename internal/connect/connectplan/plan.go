// Package connectplan turns a task into the MirrorMaker 2 connectors that run
// it on a Kafka Connect cluster: per flow a MirrorSourceConnector, a
// MirrorHeartbeatConnector, and a MirrorCheckpointConnector when consumer
// offsets are synced (docs/CONNECT.md). It is pure: no I/O, table-tested.
//
// Invariants:
//   - every task option is mapped faithfully or refused with the field and
//     the reason (task.FieldErrors); none is silently dropped;
//   - records are read read_committed and copied as bytes (keys, values and
//     headers through ByteArrayConverter), as the in-process engine copies;
//   - a flow's records are written to its target: by the workers' own
//     producer when the Connect cluster writes to that target, otherwise by
//     per-connector producer overrides, which the workers must allow.
package connectplan

import (
	"fmt"
	"maps"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/connect"
	"github.com/kmirror/kmirror/internal/policy"
	"github.com/kmirror/kmirror/internal/task"
)

// Roles of a flow's connectors: the last part of their names.
const (
	RoleSource     = "source"
	RoleCheckpoint = "checkpoint"
	RoleHeartbeat  = "heartbeat"
)

// Replication policies: rename prefixes target topics with the source
// alias (MM2's default), identity keeps the names.
const (
	renamePolicy   = "org.apache.kafka.connect.mirror.DefaultReplicationPolicy"
	identityPolicy = "org.apache.kafka.connect.mirror.IdentityReplicationPolicy"
)

const byteArrayConverter = "org.apache.kafka.connect.converters.ByteArrayConverter"

// RefreshSeconds is how often MM2 looks for new topics, partitions and
// groups. MM2's default (10 minutes) would leave a topic created after the
// task uncopied for that long; the in-process engine finds it within
// seconds.
const RefreshSeconds = 10

// topicsExclude is a flow's topics.exclude: the topics the embedded
// engine never copies to targetAlias (policy.TopicsExclude), so both
// engines select the same topics. MM2 copies heartbeats topics whatever the
// filters say, and judges them by its cycle check, as the policy does.
func topicsExclude(targetAlias string) string {
	return strings.Join(policy.TopicsExclude(targetAlias), ",")
}

// groupsExclude leaves the groups alone that the embedded engine's offset
// sync leaves alone (policy.GroupsExclude).
var groupsExclude = strings.Join(policy.GroupsExclude, ",")

// Name is the connector of one role for a flow of a task:
// kmirror.<task>.<source alias>-<target alias>.<role>.
func Name(f task.FlowSpec, role string) string { return f.Group + "." + role }

// Names are every connector Build can make for t, whatever its options, so
// deleting a task removes all of them.
func Names(t task.Task) []string {
	var out []string
	for _, f := range flows(t, true) { // a way back's, whether prepared or not
		out = append(out, Name(f, RoleSource), Name(f, RoleCheckpoint), Name(f, RoleHeartbeat))
	}
	return out
}

// flows are t's own flows and, with back, its way back (a push task's).
func flows(t task.Task, back bool) []task.FlowSpec {
	out := t.Flows()
	if f, ok := t.FailbackFlow(); ok && back {
		out = append(out, f)
	}
	return out
}

// Build is the task's connectors on the Connect cluster on. current and
// peer are the task's clusters, passwords opened. It refuses, naming the
// field and the reason, every option MM2 cannot honour there.
func Build(t task.Task, current, peer cluster.Settings, on Cluster) ([]Connector, error) {
	var refused task.FieldErrors
	refuse := func(field, format string, a ...any) {
		refused = append(refused, task.FieldError{Field: field, Message: fmt.Sprintf(format, a...)})
	}
	r := t.Rules
	if len(r.TopicMappings) > 0 {
		refuse("rules.topic_mappings", "MirrorMaker 2 on Kafka Connect names target topics by its replication policy only (rename or identity), so topic mappings cannot be honoured there: remove them, or run the task on the embedded engine")
	}
	if r.AddSourceHeader {
		refuse("rules.add_source_header", "Kafka Connect cannot add the source header and still copy headers faithfully (its InsertHeader transform writes a string, which the byte-for-byte header converter refuses; the default converter would base64-encode every existing header): turn it off and use rename topics, or run the task on the embedded engine")
	}
	if r.OnTargetTopicReplaced == task.TargetReplacedRecopy {
		refuse("rules.on_target_topic_replaced", "MirrorMaker 2 goes on from its offsets when a target topic is deleted or created again, and cannot copy it again from the source: leave the setting out (MM2's behaviour, without the loss reported) or run the task on the embedded engine")
	}
	if r.ExactlyOnce() && on.ExactlyOnceRefusal != "" {
		refuse("engine", "Kafka Connect cluster %s does not run exactly-once source connectors (%s): set exactly.once.source.support=enabled on every worker (preparing on all of them first, then enabled) and restart them, run the task on the embedded engine, or use at_least_once", on.Name, on.ExactlyOnceRefusal)
	}
	if t.Failback != nil && r.RenameTopics {
		refuse("rules.rename_topics", "the way back of a task on Kafka Connect needs identity topic names: MirrorMaker 2 names a copy's topics by its replication policy only, so it would copy %[2]s's %[1]s.<topic> back to %[1]s as %[2]s.%[1]s.<topic> (or not at all, by its cycle rule) instead of to <topic>; run the task on the embedded engine for a way back with renamed topics", t.Current.Alias, t.Peer.Alias)
	}
	topics, err := topicsFilter(r)
	if err != nil {
		refuse("rules.topics_regex", "%s", err.Error())
	}
	sides := map[task.Side]cluster.Settings{task.SideCurrent: current, task.SidePeer: peer}
	var out []Connector
	for i, f := range flows(t, t.Failback != nil) {
		src, dst := sides[f.Source], sides[f.Target]
		// The topics it copies, as the in-process engine selects them (a
		// regex refused above leaves only the names); a way back copies
		// exactly the forward flow's target topics back to their sources.
		wayBack := i == len(t.Flows())
		topics := topics
		var pol policy.Policy
		if wayBack {
			pol = policy.Back(f.SourceAlias, f.TargetAlias, t.Failback.Topics)
			topics = quoteTopics(slices.Sorted(maps.Keys(pol.Mappings)))
		} else if pol, err = policy.Compile(f.SourceAlias, f.TargetAlias, r.Topics, r.TopicsRegex, r.RenameTopics, nil); err != nil {
			refuse("rules.topics_regex", "%s", err.Error())
		}
		common := map[string]string{
			"source.cluster.alias":            f.SourceAlias,
			"target.cluster.alias":            f.TargetAlias,
			"replication.policy.class":        identityPolicy,
			"key.converter":                   byteArrayConverter,
			"value.converter":                 byteArrayConverter,
			"header.converter":                byteArrayConverter,
			"topics":                          topics,
			"topics.exclude":                  topicsExclude(f.TargetAlias),
			"sync.topic.acls.enabled":         "false",
			"refresh.topics.interval.seconds": strconv.Itoa(RefreshSeconds),
			// kmirror's own internal topics get the broker's default
			// replication factor; MM2's fixed default of 3 fails on
			// smaller clusters.
			"heartbeats.topic.replication.factor":  "-1",
			"checkpoints.topic.replication.factor": "-1",
		}
		// Without offset syncs MM2 refuses any offset-syncs.topic.*
		// setting (MirrorSourceConnector.validate, Kafka 3.9+).
		if r.SyncConsumerOffsets {
			common["offset-syncs.topic.replication.factor"] = "-1"
			common["offset-syncs.topic.location"] = location(f)
		}
		if r.RenameTopics {
			common["replication.policy.class"] = renamePolicy
		}
		for _, side := range []task.Side{f.Source, f.Target} {
			prefix := "source.cluster."
			if side == f.Target {
				prefix = "target.cluster."
			}
			for _, fe := range putClient(common, prefix, sides[side], on.ConfigProvider) {
				refuse(clientField(t, side, fe.Field), "%s", fe.Message)
			}
		}
		// The workers' producer writes the connectors' records: to this
		// flow's target only if that is the cluster the workers use.
		overrides := map[string]string{}
		if r.ExactlyOnce() && !writesTo(t, f.Target, on) {
			// KIP-618 commits a task's source offsets in the transaction
			// of its records: on the workers' own cluster.
			refuse("engine", "exactly once on Kafka Connect needs the workers' Kafka cluster to be the target of every flow (Connect commits the source offsets in the same transaction as the records): Kafka Connect cluster %s writes to %s, not to %s (the target of %s); run the task on a Connect cluster of its target, or on the embedded engine", on.Name, on.KafkaCluster, dst.Name, f.Name())
		}
		if !writesTo(t, f.Target, on) {
			if !on.OverridesAllowed {
				refuse("engine", "Kafka Connect cluster %s writes to %s, not to %s (the target of %s), and its workers do not allow per-connector producer overrides (connector.client.config.override.policy=All): run the task on a Connect cluster that writes to %s, allow overrides, or use the embedded engine", on.Name, on.KafkaCluster, dst.Name, f.Name(), dst.Name)
			}
			_ = putClient(overrides, "producer.override.", dst, on.ConfigProvider) // refused above already
		}
		if on.OverridesAllowed {
			// The producer settings that made MirrorMaker 2 fastest in
			// make bench (bench/results/2026-12-02-mm2.md): 256 KiB
			// batches instead of Connect's 16 KiB, 1.8-3.7 times the
			// records per second at under half the CPU per GB. Workers that
			// refuse overrides copy with their own producer settings.
			for k, v := range ProducerTuning {
				overrides["producer.override."+k] = v
			}
			// Records as large as the embedded engine copies: the
			// producer's default request cap (1 MiB) fails a connector
			// task on a larger record; the target topic's
			// max.message.bytes still decides (MM2 creates it with the
			// source's).
			overrides["producer.override.max.request.size"] = strconv.Itoa(MaxRequestBytes)
		}
		if r.Compression != "" && r.Compression != "none" {
			if !on.OverridesAllowed {
				refuse("rules.compression", "compression %s is set per connector through a producer override, which the workers of Kafka Connect cluster %s do not allow (connector.client.config.override.policy=All): choose none (the workers' own setting applies), allow overrides, or use the embedded engine", r.Compression, on.Name)
			}
			overrides["producer.override.compression.type"] = r.Compression
		}

		source := with(common, overrides, map[string]string{
			"connector.class":    connect.MirrorSourceConnector,
			"tasks.max":          strconv.Itoa(r.Tasks),
			"replication.factor": strconv.Itoa(r.ReplicationFactor),
			// The in-process engine copies committed records only; MM2
			// reads read_uncommitted unless told otherwise and would copy
			// aborted transactions as data.
			"source.consumer.isolation.level":   "read_committed",
			"source.consumer.auto.offset.reset": "earliest",
			"emit.offset-syncs.enabled":         strconv.FormatBool(r.SyncConsumerOffsets),
		})
		if r.ExactlyOnce() {
			// KIP-618: the worker writes each poll's records and their
			// source offsets in one transaction, and refuses to start the
			// connector where it cannot (required, not requested).
			source[connect.ExactlyOnceSupport] = "required"
			source["transaction.boundary"] = "poll"
		}
		copier := Connector{Name: Name(f, RoleSource), Flow: f.Name(), Config: source,
			Copy: &Copy{Source: src, TargetTopic: pol.TargetTopic, Selects: pol.Selected}}
		switch {
		case wayBack:
			copier.StartAt = wayBackStart(t.Failback)
		case t.Failback != nil:
			// While the way back copies to this flow's source, this flow
			// would copy those records back again: MM2 has no source
			// header to skip them by.
			copier.Held = true
		default:
			copier.Skip = returned(t.Returns)
		}
		out = append(out, copier)
		if !wayBack {
			// A way back's heartbeats would only be copied forward again.
			out = append(out, Connector{Name: Name(f, RoleHeartbeat), Flow: f.Name(), Config: with(common, overrides, map[string]string{
				"connector.class":         connect.MirrorHeartbeatConnector,
				"tasks.max":               "1",
				"emit.heartbeats.enabled": "true",
			})})
		}
		if r.SyncConsumerOffsets {
			out = append(out, Connector{Name: Name(f, RoleCheckpoint), Flow: f.Name(), Config: with(common, overrides, map[string]string{
				"connector.class":                     connect.MirrorCheckpointConnector,
				"tasks.max":                           "1",
				"groups":                              ".*",
				"groups.exclude":                      groupsExclude,
				"emit.checkpoints.enabled":            "true",
				"sync.group.offsets.enabled":          "true",
				"refresh.groups.interval.seconds":     strconv.Itoa(RefreshSeconds),
				"emit.checkpoints.interval.seconds":   strconv.Itoa(RefreshSeconds),
				"sync.group.offsets.interval.seconds": strconv.Itoa(RefreshSeconds),
			})})
		}
	}
	if len(refused) > 0 {
		return nil, dedupe(refused)
	}
	return out, nil
}

// wayBackStart is where a way back starts, per source partition: at the
// switchover's point on the forward flow's target, so it copies only what
// was written there after the switchover.
func wayBackStart(fb *task.Failback) map[string]int64 {
	out := make(map[string]int64, len(fb.Points))
	for key, pt := range fb.Points {
		out[task.RenamedKey(key, fb.Topics)] = pt.TargetEnd
	}
	return out
}

// returned is, per source partition of a push flow, the newest stretch a
// way back that went home wrote there (task.Return): the forward copy,
// held while the way back ran, goes on past it.
func returned(rs []task.Return) map[string]Stretch {
	if len(rs) == 0 {
		return nil
	}
	out := map[string]Stretch{}
	for _, r := range rs { // oldest first: the newest wins
		for key, p := range r.Points {
			out[key] = Stretch{From: p.From, To: p.To}
		}
	}
	return out
}

// location says where MM2 keeps a flow's offset syncs, so they land where
// the in-process engine keeps them (task.FlowSpec.OffsetSyncs) under the
// same name: MM2 names the topic after the other cluster's alias.
func location(f task.FlowSpec) string {
	if f.OffsetSyncs == f.Source {
		return "source"
	}
	return "target"
}

// writesTo says whether the Connect cluster's workers write to the task's
// cluster on side s. A peer given by address is never the workers' cluster:
// only registered clusters can be compared.
func writesTo(t task.Task, s task.Side, on Cluster) bool {
	switch s {
	case task.SideCurrent:
		return t.Current.Cluster == on.KafkaCluster
	case task.SidePeer:
		return t.Peer.ConfigType == task.PeerByCluster && t.Peer.Cluster == on.KafkaCluster
	}
	return false
}

func with(maps ...map[string]string) map[string]string {
	out := map[string]string{}
	for _, m := range maps {
		for k, v := range m {
			out[k] = v
		}
	}
	return out
}

// clientField is the task field where a problem with the settings of one
// side belongs: the peer's own field when it is given by address, else the
// registered cluster's name (its settings are the cluster's).
func clientField(t task.Task, side task.Side, settingsField string) string {
	switch {
	case side == task.SidePeer && t.Peer.ConfigType == task.PeerByAddress:
		return "peer." + settingsField
	case side == task.SidePeer:
		return "peer.cluster"
	}
	return "current.cluster"
}

// dedupe keeps one message per field and message (a refusal repeats for
// each flow of a bidirectional task).
func dedupe(fe task.FieldErrors) task.FieldErrors {
	seen := map[task.FieldError]bool{}
	var out task.FieldErrors
	for _, e := range fe {
		if !seen[e] {
			seen[e] = true
			out = append(out, e)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].Field < out[j].Field })
	return out
}

// topicsFilter is MM2's "topics" setting: a comma-separated list of Java
// regexes, each matching a whole topic name.
func topicsFilter(r task.Rules) (string, error) {
	if r.TopicsRegex != "" {
		if err := javaCompatible(r.TopicsRegex); err != nil {
			return "", err
		}
		return r.TopicsRegex, nil
	}
	return quoteTopics(r.Topics), nil
}

// quoteTopics is MM2's "topics" setting for exactly these names.
func quoteTopics(names []string) string {
	quoted := make([]string, len(names))
	for i, name := range names {
		// Topic names hold [a-zA-Z0-9._-]: only the dot means more in a
		// regex.
		quoted[i] = strings.ReplaceAll(name, ".", `\.`)
	}
	return strings.Join(quoted, ",")
}

// javaCompatible refuses the regex syntax that Go and Java read differently
// or that MM2 would split: the task's regex is matched by Java there.
func javaCompatible(re string) error {
	for _, c := range []struct{ syntax, why string }{
		{",", "MirrorMaker 2 splits its topics setting at commas, so a comma cannot be part of the regex on Kafka Connect: use alternation (a|b) instead"},
		{"(?P<", "named groups (?P<name>...) are Go syntax that Java refuses: use (?<name>...) or an unnamed group"},
		{"[[:", "POSIX classes like [[:alpha:]] mean something else to Java: use \\p{Alpha} or an explicit class"},
		{`\z`, `\z is read differently by Java: leave it out (the whole name must match anyway)`},
		{`\C`, `\C is Go syntax that Java refuses: leave it out`},
		{"(?U", "the U flag means ungreedy in Go and Unicode classes in Java: write the quantifiers lazily instead (*?)"},
	} {
		if strings.Contains(re, c.syntax) {
			return fmt.Errorf("this regex runs as Java's on Kafka Connect, and %s", c.why)
		}
	}
	return nil
}

// MaxRequestBytes is the producer's max.request.size kmirror's connectors
// ask for when the workers allow overrides: the largest record they copy
// (a little less: the request's own overhead). The buffer it comes from
// (buffer.memory, 32 MiB) is twice as large.
const MaxRequestBytes = 16 << 20

// ProducerTuning are the producer settings kmirror's connectors ask for
// when the workers allow per-connector overrides.
var ProducerTuning = map[string]string{"batch.size": "262144", "linger.ms": "5"}

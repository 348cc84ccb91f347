package task

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/kmirror/kmirror/internal/policy"
)

// This file is the one place that says what a task implies on the clusters:
// its flows, their aliases, and where each keeps its internal topics and
// progress (as MirrorMaker 2's ReplicationPolicy owns its naming). The
// replicator, the service (internal topics shown to users) and any other
// engine ask it; none derives these on its own.

// Side names one of a task's two clusters.
type Side string

// The two sides: the cluster the task is defined on and its peer.
const (
	SideCurrent Side = "current"
	SidePeer    Side = "peer"
)

// FlowSpec is one direction of a task, source -> target, with the names of
// everything it keeps on the clusters.
type FlowSpec struct {
	Source, Target           Side
	SourceAlias, TargetAlias string
	// OffsetSyncs is where offset syncs go: the current cluster, topic
	// mm2-offset-syncs.<peer alias>.internal. The peer -> current half of a
	// bidirectional task keeps them at its source instead,
	// mm2-offset-syncs.<current alias>.internal on the peer (MM2's default
	// layout): both halves in one topic would key syncs of two different
	// source topics named alike the same way.
	OffsetSyncs      Side
	OffsetSyncsTopic string
	// SyncHistoryTopic, next to OffsetSyncsTopic, keeps every
	// distance-change sync with its link to the one before (kmirror's own;
	// see internal/checkpoint).
	SyncHistoryTopic string
	// CheckpointsTopic, on the target, is written when consumer offsets are
	// synced.
	CheckpointsTopic string
	// ProgressTopic, on the target, keeps the flow's progress where Kafka
	// does not expire it.
	ProgressTopic string
	// HeartbeatsTopic, on the target, takes the flow's MM2 heartbeats
	// (MM2's name, shared with every other flow and MM2 writing there).
	HeartbeatsTopic string
	// Group, on the source, holds the flow's progress as committed offsets.
	Group string
}

// Name is "<source alias>-><target alias>", the flow's stable label.
func (f FlowSpec) Name() string { return f.SourceAlias + "->" + f.TargetAlias }

// GroupPrefix marks kmirror's own progress groups, which consumer-offset
// sync leaves alone.
const GroupPrefix = policy.OwnGroupPrefix

// FlowGroup is the consumer group on the source that holds a flow's
// progress.
func FlowGroup(taskName, sourceAlias, targetAlias string) string {
	return GroupPrefix + taskName + "." + sourceAlias + "-" + targetAlias
}

// TransactionalID is the transactional id an exactly-once flow's worker n
// writes under on the target: stable across restarts, so a restarted or
// second kmirror fences the one before it, and prefixed with
// TransactionalIDPrefix for a prefixed ACL.
func TransactionalID(group string, n int) string { return group + ".txn-" + strconv.Itoa(n) }

// TransactionalIDPrefix is what every transactional id of a task starts
// with: the prefix to grant WRITE and DESCRIBE on.
func TransactionalIDPrefix(taskName string) string { return GroupPrefix + taskName + "." }

// Flows are the task's directions: pull = peer -> current, push = current ->
// peer, bidirectional = both (current -> peer first). An unknown direction
// has none.
func (t Task) Flows() []FlowSpec {
	mk := func(src, dst Side) FlowSpec {
		alias := map[Side]string{SideCurrent: t.Current.Alias, SidePeer: t.Peer.Alias}
		f := FlowSpec{Source: src, Target: dst, SourceAlias: alias[src], TargetAlias: alias[dst],
			OffsetSyncs: SideCurrent, OffsetSyncsTopic: OffsetSyncsTopic(t.Peer.Alias),
			SyncHistoryTopic: SyncHistoryTopic(t.Peer.Alias),
			CheckpointsTopic: CheckpointsTopic(alias[src]),
			ProgressTopic:    ProgressTopic(alias[src]),
			HeartbeatsTopic:  policy.HeartbeatsTopic,
			Group:            FlowGroup(t.Name, alias[src], alias[dst])}
		if t.Rules.Direction == DirectionBidirectional && src == SidePeer {
			f.OffsetSyncs, f.OffsetSyncsTopic = SidePeer, OffsetSyncsTopic(t.Current.Alias)
			f.SyncHistoryTopic = SyncHistoryTopic(t.Current.Alias)
		}
		// Named after the other side's alias, as MirrorMaker 2 names them.
		switch t.Rules.OffsetSyncsAt {
		case OffsetSyncsAtSource:
			f.OffsetSyncs, f.OffsetSyncsTopic, f.SyncHistoryTopic = src, OffsetSyncsTopic(alias[dst]), SyncHistoryTopic(alias[dst])
		case OffsetSyncsAtTarget:
			f.OffsetSyncs, f.OffsetSyncsTopic, f.SyncHistoryTopic = dst, OffsetSyncsTopic(alias[src]), SyncHistoryTopic(alias[src])
		}
		return f
	}
	switch t.Rules.Direction {
	case DirectionPush:
		return []FlowSpec{mk(SideCurrent, SidePeer)}
	case DirectionPull:
		return []FlowSpec{mk(SidePeer, SideCurrent)}
	case DirectionBidirectional:
		return []FlowSpec{mk(SideCurrent, SidePeer), mk(SidePeer, SideCurrent)}
	}
	return nil
}

// Failback is a push task's way back after a switchover
// (docs/SWITCHOVER.md): the reverse of its flow copies to the current
// cluster what was written on the peer after the switchover, and consumer
// groups translate back through the forward flow's syncs before that point
// and the reverse flow's own after it.
type Failback struct {
	// Switchover is the switchover it undoes.
	Switchover int64
	// Points are the switchover's point per partition, keyed
	// "topic/partition" by the forward flow's source topic (the reverse
	// flow's target).
	Points map[string]SwitchPoint
	// Topics maps each forward source topic to its target topic: the way
	// back gives the names back (task.FailbackFlow's policy).
	Topics map[string]string
}

// PartitionKey is how a task's per-partition runtime state (Failback.Points,
// Return.Points) is keyed: "topic/partition".
func PartitionKey(topic string, partition int32) string {
	return topic + "/" + strconv.FormatInt(int64(partition), 10)
}

// SplitPartitionKey is a PartitionKey's topic and partition.
func SplitPartitionKey(key string) (topic string, partition int32, err error) {
	i := strings.LastIndexByte(key, '/')
	if i < 0 {
		return "", 0, fmt.Errorf("partition key %q: want topic/partition", key)
	}
	p, err := strconv.ParseInt(key[i+1:], 10, 32)
	if err != nil {
		return "", 0, fmt.Errorf("partition key %q: %w", key, err)
	}
	return key[:i], int32(p), nil
}

// RenamedKey is key with its topic as names maps it; a topic names does
// not map keeps its name (identity).
func RenamedKey(key string, names map[string]string) string {
	i := strings.LastIndexByte(key, '/')
	if to, ok := names[key[:max(i, 0)]]; ok && i >= 0 && to != "" {
		return to + key[i:]
	}
	return key
}

// SwitchPoint is where a partition stood when a switchover drained it.
type SwitchPoint struct {
	// SourceEnd is the forward flow's source end: the reverse copy appends
	// there. TargetEnd is the forward flow's target end: the reverse copy
	// starts there.
	SourceEnd int64 `json:"source_end"`
	TargetEnd int64 `json:"target_end"`
}

// Return is a way back that went home: per partition, keyed
// "topic/partition" by the current cluster's topic,
// the stretch of the current cluster's partition the way back wrote.
// Consumer groups that stopped inside it translate to the peer through the
// way back's syncs inverted (the records there are copies of the peer's),
// never by the forward flow's distance, which says nothing of them.
type Return struct {
	// Switchover is the switchover whose way back it was.
	Switchover int64
	Points     map[string]ReturnPoint
	// Topics maps each current-cluster topic to the peer's (the forward
	// flow's names).
	Topics map[string]string
}

// ReturnPoint is a partition's stretch written by a way back: the current
// cluster's offsets [From, To) hold the copies of the peer's [PeerFrom,
// PeerTo) (and the way back's transaction markers).
type ReturnPoint struct {
	From, To         int64
	PeerFrom, PeerTo int64
}

// Covers says whether current-cluster offset g lies in the stretch or at
// its end: a group the way home left there goes on at PeerTo, which the
// push flow's own translation cannot say before it copies a newer record.
func (p ReturnPoint) Covers(g int64) bool { return g >= p.From && g <= p.To }

// CoversPeer says whether peer offset g lies in the peer's stretch.
func (p ReturnPoint) CoversPeer(g int64) bool { return g >= p.PeerFrom && g < p.PeerTo }

// FailbackFlow is the reverse of a push task's flow: the peer -> current
// half the task would have were it bidirectional, so its progress, offset
// syncs and checkpoints are apart from the forward flow's. Only push tasks
// have one.
func (t Task) FailbackFlow() (FlowSpec, bool) {
	if t.Rules.Direction != DirectionPush {
		return FlowSpec{}, false
	}
	both := t
	both.Rules.Direction = DirectionBidirectional
	return both.Flows()[1], true
}

// InternalTopic is one of kmirror's topics on a side of a task.
type InternalTopic struct {
	Cluster Side   `json:"cluster"`
	Topic   string `json:"topic"`
}

// InternalTopics lists every topic the task's flows write besides the data:
// offset syncs, progress, checkpoints when consumer offsets are synced, and
// heartbeats. On Kafka Connect, MirrorMaker 2 writes its own set: offset
// syncs and checkpoints only when consumer offsets are synced, heartbeats
// always, and its progress in Connect's offsets topic.
func (t Task) InternalTopics() []InternalTopic {
	var out []InternalTopic
	if _, onConnect := t.ConnectCluster(); onConnect {
		for _, f := range t.Flows() {
			if t.Rules.SyncConsumerOffsets {
				out = append(out, InternalTopic{f.OffsetSyncs, f.OffsetSyncsTopic}, InternalTopic{f.Target, f.CheckpointsTopic})
			}
			out = append(out, InternalTopic{f.Target, f.HeartbeatsTopic})
		}
		return out
	}
	for _, f := range t.Flows() {
		out = append(out, InternalTopic{f.OffsetSyncs, f.OffsetSyncsTopic}, InternalTopic{f.OffsetSyncs, f.SyncHistoryTopic},
			InternalTopic{f.Target, f.ProgressTopic})
		if t.Rules.SyncConsumerOffsets {
			out = append(out, InternalTopic{f.Target, f.CheckpointsTopic})
		}
		out = append(out, InternalTopic{f.Target, f.HeartbeatsTopic})
	}
	return out
}

// OffsetSyncsTopic is MM2's offset-syncs topic name for a cluster alias.
func OffsetSyncsTopic(alias string) string { return "mm2-offset-syncs." + alias + ".internal" }

// SyncHistoryTopic is kmirror's offset-sync history beside MM2's
// offset-syncs topic for the same alias.
func SyncHistoryTopic(alias string) string { return "kmirror-offset-syncs." + alias + ".internal" }

// CheckpointsTopic is the MM2 checkpoints topic for records replicated from
// the cluster with the given alias; it lives on the other cluster.
func CheckpointsTopic(sourceAlias string) string { return sourceAlias + ".checkpoints.internal" }

// ProgressTopic is where kmirror keeps the progress of flows copying from
// the cluster with the given alias: a compacted topic on the flow's target
// (kmirror's own; MM2 keeps its progress in Connect's offsets topic).
func ProgressTopic(sourceAlias string) string { return "kmirror-progress." + sourceAlias + ".internal" }

// Position is a flow's progress in one source partition: the next offset
// to copy. Engines hand positions over when a task moves between them.
type Position struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Next      int64  `json:"next"`
}

// Package replicator copies records from a source cluster to a target
// cluster: one Replicator runs one flow (a direction of a task). It plans
// (topic discovery, target topic creation, config and partition sync) apart
// from the copy loop, as MM2's connector and task are split.
//
// A flow's partitions are run by assignments — sets of source partitions
// handed to a worker — never by hard-wired goroutines, so that several
// processes can later share a flow through a Kafka consumer group (scale-out).
//
// Invariants of the copy loop:
//   - a record is copied with its key, value (nil stays nil), headers,
//     timestamp and partition number, in source order per partition;
//   - progress (the next source offset) is committed only for records the
//     target acknowledged, so a restart or crash never loses a record
//     (at-least-once); duplicates after a crash are bounded by the records
//     acknowledged since the last commit (about one commit interval) and
//     counted exactly at restart (the commit carries the target position);
//   - a retried produce request is not written twice: batches carry an
//     idempotent producer id and per-partition sequence (idempotence.go);
//   - progress is never committed past a distance-change offset sync whose
//     sync history record (checkpoint/record.go) is not acknowledged, so
//     translation after a restart is never ahead of the copy;
//   - progress is stored where it does not expire: the flow's group on the
//     source, re-committed while idle, and a compacted topic on the target
//     (progresslog.go); a start takes the further of the two;
//   - a partition has one produce request in flight at a time (copy.go), so
//     a failed request stops its partition's progress there: nothing behind
//     a failed record is ever skipped, nothing after it overtakes it;
//   - a record the target cannot accept (too large) stops its partition with
//     a reason naming the record and the limit; it is never skipped;
//   - exactly once (Flow.ExactlyOnce): records and the progress covering
//     them are committed in one transaction on the target, so after any
//     crash read_committed readers see each record once (transaction.go;
//     docs/DESIGN.md, "Exactly once").
package replicator

import (
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/policy"
	"github.com/kmirror/kmirror/internal/task"
)

// Endpoint is one side of a flow.
type Endpoint struct {
	Alias    string
	Settings cluster.Settings
}

// Flow is one direction source -> target of a task, fully resolved.
type Flow struct {
	Task   string
	Source Endpoint
	Target Endpoint
	Policy policy.Policy
	// Workers is the task's parallelism: the flow's partitions are spread
	// over this many assignments.
	Workers         int
	AddSourceHeader bool
	StartOffset     task.StartOffset
	// ContinueOnTargetReplaced: a target topic deleted or created again
	// is copied on from the progress, not again from the source's first
	// record (task.TargetReplacedContinue).
	ContinueOnTargetReplaced bool
	Compression              sarama.CompressionCodec
	ReplicationFactor        int16
	// OffsetSyncs is where offset syncs are written (task.FlowSpec says
	// which cluster and topic).
	OffsetSyncs      cluster.Settings
	OffsetSyncsTopic string
	// SyncHistoryTopic, on the OffsetSyncs cluster, keeps every
	// distance-change sync with its link (checkpoint.SyncPoint.Prev).
	SyncHistoryTopic string
	// SyncGroupOffsets turns on checkpoints: consumer-group offsets of the
	// source translated to the target, written as MM2 checkpoints to
	// CheckpointsTopic on the target and committed to idle target groups.
	SyncGroupOffsets bool
	CheckpointsTopic string
	// ProgressTopic, on the target, keeps the flow's progress where it does
	// not expire (progresslog.go).
	ProgressTopic string
	// HeartbeatsTopic, on the target, takes the flow's MM2 heartbeats
	// (heartbeat.go).
	HeartbeatsTopic string
	// ExactlyOnce commits the copied records and their progress in one
	// transaction on the target every TransactionInterval (transaction.go).
	ExactlyOnce         bool
	TransactionInterval time.Duration
	// Failback, when set, makes this the way back of a switched-over push
	// flow (task.FailbackFlow).
	Failback *FailbackFrom
	// Returns, when set, are the ways back that went home (task.Return),
	// keyed "topic/partition" by this flow's source topic: on a push flow,
	// a group inside what one wrote translates through its syncs, read
	// from BackSyncs; on a way back, through this flow's own syncs of that
	// round.
	Returns *ReturnsFrom
}

// ReturnsFrom is what a flow knows of its task's ways back that went home.
type ReturnsFrom struct {
	Points map[string][]task.ReturnPoint
	// Names maps the way back's source topics to this flow's (the push
	// flow's; empty on the way back itself).
	Names map[string]string
	// BackSyncs and BackHistoryTopic hold the way back's sync history, for
	// the push flow (empty on the way back itself).
	BackSyncs        cluster.Settings
	BackHistoryTopic string
}

// FailbackFrom is what the way back of a switched-over flow knows of the
// forward flow: partitions without progress start where the forward copy
// ended at the switchover, and a group behind that point translates back
// through the forward flow's sync history (the forward syncs inverted).
type FailbackFrom struct {
	// Points are the switchover's points, keyed "topic/partition" by this
	// flow's target topic (the forward flow's source).
	Points map[string]task.SwitchPoint
	// Names maps the forward flow's source topics to its target topics
	// (this flow's sources).
	Names map[string]string
	// ForwardSyncs and ForwardHistoryTopic hold the forward flow's sync
	// history; ForwardOffsetSyncsTopic, on the same cluster, its MM2 offset
	// syncs (what a way back MirrorMaker 2 copies inverts).
	ForwardSyncs            cluster.Settings
	ForwardHistoryTopic     string
	ForwardOffsetSyncsTopic string
}

// point is the switchover's point of a partition of this flow.
func (f *FailbackFrom) point(p Partition) (task.SwitchPoint, bool) {
	return f.pointAt(p.Target, p.Partition)
}

// pointAt is the switchover's point of this flow's target partition; none
// when f is nil (not a way back).
func (f *FailbackFrom) pointAt(target string, partition int32) (task.SwitchPoint, bool) {
	if f == nil {
		return task.SwitchPoint{}, false
	}
	pt, ok := f.Points[task.PartitionKey(target, partition)]
	return pt, ok
}

// Name is "<source alias>-><target alias>", the flow's stable label.
func (f Flow) Name() string { return f.Source.Alias + "->" + f.Target.Alias }

// Group is the consumer group on the source cluster that holds the flow's
// progress. Its prefix keeps it out of consumer-offset sync.
func (f Flow) Group() string { return task.FlowGroup(f.Task, f.Source.Alias, f.Target.Alias) }

// Compression maps the task's codec name to sarama's.
func Compression(name string) (sarama.CompressionCodec, error) {
	switch name {
	case "", "none":
		return sarama.CompressionNone, nil
	case "gzip":
		return sarama.CompressionGZIP, nil
	case "snappy":
		return sarama.CompressionSnappy, nil
	case "lz4":
		return sarama.CompressionLZ4, nil
	case "zstd":
		return sarama.CompressionZSTD, nil
	}
	return 0, fmt.Errorf("unknown compression %q: use none, gzip, snappy, lz4 or zstd", name)
}

// FlowsOf resolves a task's flows (task.Task.Flows says which, and their
// names) to the clusters: current and peer are the resolved settings.
func FlowsOf(t task.Task, current, peer cluster.Settings) ([]Flow, error) {
	t = t.WithDefaults()
	codec, err := Compression(t.Rules.Compression)
	if err != nil {
		return nil, err
	}
	var mappings map[string]string
	if len(t.Rules.TopicMappings) > 0 {
		mappings = make(map[string]string, len(t.Rules.TopicMappings))
		for _, m := range t.Rules.TopicMappings {
			mappings[m.Source] = m.Target
		}
	}
	settings := map[task.Side]cluster.Settings{task.SideCurrent: current, task.SidePeer: peer}
	specs := t.Flows()
	if len(specs) == 0 {
		return nil, fmt.Errorf("unknown direction %q: use pull, push or bidirectional", t.Rules.Direction)
	}
	if t.Failback != nil {
		back, ok := t.FailbackFlow()
		if !ok {
			return nil, errors.New("a failback needs a push task")
		}
		specs = append(specs, back)
	}
	flows := make([]Flow, 0, len(specs))
	for i, fs := range specs {
		p, err := policy.Compile(fs.SourceAlias, fs.TargetAlias, t.Rules.Topics, t.Rules.TopicsRegex, t.Rules.RenameTopics, mappings)
		if err != nil {
			return nil, err
		}
		if t.Failback != nil && i == len(specs)-1 {
			// The way back gives the forward flow's names back.
			p = policy.Back(fs.SourceAlias, fs.TargetAlias, t.Failback.Topics)
		}
		flows = append(flows, Flow{
			Task:                     t.Name,
			Source:                   Endpoint{Alias: fs.SourceAlias, Settings: settings[fs.Source]},
			Target:                   Endpoint{Alias: fs.TargetAlias, Settings: settings[fs.Target]},
			Policy:                   p,
			Workers:                  t.Rules.Tasks,
			AddSourceHeader:          t.Rules.AddSourceHeader,
			StartOffset:              t.Rules.StartOffset,
			ContinueOnTargetReplaced: t.Rules.OnTargetTopicReplaced == task.TargetReplacedContinue,
			Compression:              codec,
			ReplicationFactor:        int16(t.Rules.ReplicationFactor),
			OffsetSyncs:              settings[fs.OffsetSyncs],
			OffsetSyncsTopic:         fs.OffsetSyncsTopic,
			SyncHistoryTopic:         fs.SyncHistoryTopic,
			SyncGroupOffsets:         t.Rules.SyncConsumerOffsets,
			CheckpointsTopic:         fs.CheckpointsTopic,
			ProgressTopic:            fs.ProgressTopic,
			HeartbeatsTopic:          fs.HeartbeatsTopic,
			ExactlyOnce:              t.Rules.ExactlyOnce(),
			TransactionInterval:      t.Rules.TransactionInterval(),
		})
		if t.Failback != nil && i == len(specs)-1 {
			fwd := specs[0]
			flows[i].Failback = &FailbackFrom{Points: t.Failback.Points, Names: t.Failback.Topics,
				ForwardSyncs: settings[fwd.OffsetSyncs], ForwardHistoryTopic: fwd.SyncHistoryTopic, ForwardOffsetSyncsTopic: fwd.OffsetSyncsTopic}
		}
	}
	if len(t.Returns) > 0 {
		back, ok := t.FailbackFlow()
		if !ok {
			return nil, errors.New("ways home are kept for push tasks only")
		}
		// Keyed by each flow's source topic: A's names on the push flow,
		// the peer's on a way back.
		points, peerPoints := map[string][]task.ReturnPoint{}, map[string][]task.ReturnPoint{}
		backNames := map[string]string{} // the way back's source topic -> the push flow's
		for _, r := range t.Returns {
			for key, p := range r.Points {
				points[key] = append(points[key], p)
				peerKey := task.RenamedKey(key, r.Topics)
				topic, _, _ := task.SplitPartitionKey(key)
				peer, _, _ := task.SplitPartitionKey(peerKey)
				backNames[peer] = topic
				peerPoints[peerKey] = append(peerPoints[peerKey], p)
			}
		}
		flows[0].Returns = &ReturnsFrom{Points: points, Names: backNames, BackSyncs: settings[back.OffsetSyncs], BackHistoryTopic: back.SyncHistoryTopic}
		if t.Failback != nil {
			flows[len(flows)-1].Returns = &ReturnsFrom{Points: peerPoints}
		}
	}
	return flows, nil
}

// Options tune a Replicator; zero values take the defaults.
type Options struct {
	// RefreshInterval is how often topics are rediscovered and target
	// topics, partitions and configs synced. Default 30s.
	RefreshInterval time.Duration
	// CommitInterval is how often progress is committed. Default 1s.
	CommitInterval time.Duration
	// SyncInterval bounds the age of the newest offset sync of a partition
	// that keeps moving: MM2 readers translate to at most this far behind,
	// and a restart after a crash can count the records it copies again to
	// within this much. Default 1s.
	SyncInterval time.Duration
	// MaxBackoff caps the wait between restarts after errors. Default 30s.
	MaxBackoff time.Duration
	// DegradedAfter is how long a partition's offset sync may wait for its
	// write, or its writes be retried, before the flow shows DEGRADED with
	// the reason. Default 30s.
	DegradedAfter time.Duration
	// ProgressLogInterval is how often a partition's moved progress is also
	// written to the flow's progress topic (every clean stop writes it
	// too). Default 10s.
	ProgressLogInterval time.Duration
	// SyncHistoryLimit is how many distance-change syncs a partition's
	// history keeps (in memory and in the flow's sync-history topic: the
	// oldest are deleted from it). Default 100,000 (checkpoint.NewHistory).
	SyncHistoryLimit int
	// CheckpointInterval is how often consumer-group offsets are translated
	// and synced when the flow syncs them. Default 60s (the original product's "once a
	// minute").
	CheckpointInterval time.Duration
	// HeartbeatInterval is how often the flow writes an MM2 heartbeat to
	// the heartbeats topic on its target (MM2's
	// emit.heartbeats.interval.seconds). Default 1s; negative writes none.
	HeartbeatInterval time.Duration
	// Budget is the process-wide memory for buffered records, shared by
	// every flow given the same one (budget.go). Default: one budget of
	// DefaultBufferBytes for the whole process.
	Budget *Budget
	// TransactionTimeout, for tests, replaces the transaction timeout an
	// exactly-once flow asks (task.TransactionTimeout of its interval).
	TransactionTimeout time.Duration
}

func (o Options) withDefaults() Options {
	if o.RefreshInterval <= 0 {
		o.RefreshInterval = 30 * time.Second
	}
	if o.CommitInterval <= 0 {
		o.CommitInterval = time.Second
	}
	if o.SyncInterval <= 0 {
		o.SyncInterval = time.Second
	}
	if o.MaxBackoff <= 0 {
		o.MaxBackoff = 30 * time.Second
	}
	if o.DegradedAfter <= 0 {
		o.DegradedAfter = defaultDegradedAfter
	}
	if o.ProgressLogInterval <= 0 {
		o.ProgressLogInterval = 10 * time.Second
	}
	if o.CheckpointInterval <= 0 {
		o.CheckpointInterval = time.Minute
	}
	if o.HeartbeatInterval == 0 {
		o.HeartbeatInterval = time.Second
	}
	if o.Budget == nil {
		o.Budget = processBudget
	}
	return o
}

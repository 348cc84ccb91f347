package views

import (
	"time"

	"github.com/kmirror/kmirror/internal/task"
)

// TaskInfo is a task as console pages show it: its settings (never the
// peer password), what it is doing and its last action. web/ builds it from
// the service's answer, so views know nothing of the engines behind it.
type TaskInfo struct {
	Name    string
	Type    string
	Current task.Current
	Peer    PeerInfo
	Rules   task.Rules
	// Engine runs the task: "embedded" (in-process) or "connect:<name>".
	Engine string
	// DesiredState is running or paused: what the operator asked for.
	DesiredState   task.DesiredState
	Status         TaskStatus
	LastAction     LastAction
	InternalTopics []task.InternalTopic
	CreatedAt      time.Time
}

// PeerInfo is the peer without its secrets (password, client key and its
// password; the OAuth client secret is the mask when set), and whether a
// password is set; ClientCert is its client certificate's leaf, nil without
// one, and ClientKeySet says its key is stored.
type PeerInfo struct {
	task.Peer
	PasswordSet  bool
	ClientCert   *CertInfo
	ClientKeySet bool
}

// TaskStatus is what a task is doing, and why when it failed; Flows are
// empty unless an engine reports them.
type TaskStatus struct {
	State  task.State
	Reason string
	Flows  []FlowStatus
}

// LastAction is the operator's last action on a task.
type LastAction struct {
	Action task.Action
	By     string
	At     time.Time
}

// FlowStatus is one flow of a task as its engine reports it.
type FlowStatus struct {
	Flow   string
	State  task.State
	Reason string
	// Records copied since the process started.
	Records    int64
	LagRecords int64
	LagSeconds float64
	Restarts   int64
	// ExpiredOnSource and LostOnTarget are the records lost where kmirror
	// could not prevent it.
	ExpiredOnSource int64
	LostOnTarget    int64
	Partitions      []PartitionStatus
	// Checkpoints is the consumer offset sync's last run; nil when the
	// task does not sync offsets or before the first run.
	Checkpoints *CheckpointStatus
}

// PartitionStatus is one replicated partition.
type PartitionStatus struct {
	Topic     string
	Target    string
	Partition int32
	// NextOffset and EndOffset are negative while not known.
	NextOffset int64
	EndOffset  int64
	Lag        int64
	Records    int64
	Failed     bool
	Reason     string
}

// CheckpointStatus is a flow's consumer offset sync.
type CheckpointStatus struct {
	LastRun   time.Time
	Groups    []string
	Committed []string
	Skipped   []string
	LastError string
}

// RecentError is one of a task's recent errors, newest first.
type RecentError struct {
	At      time.Time
	Flow    string
	Message string
}

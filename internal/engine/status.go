package engine

import (
	"time"

	"github.com/kmirror/kmirror/internal/policy"
	"github.com/kmirror/kmirror/internal/task"
)

// FlowStatus is a snapshot of a flow for the console, API and metrics.
type FlowStatus struct {
	Flow   string     `json:"flow"`
	State  task.State `json:"state"`
	Reason string     `json:"reason,omitempty"`
	// Records and Bytes replicated since the process started.
	Records int64 `json:"records"`
	Bytes   int64 `json:"bytes"`
	// SkippedLoops counts records not copied because their kmirror.source
	// header names the target: they came from there.
	SkippedLoops int64 `json:"skipped_loops"`
	// LagRecords is the sum over partitions of source end offset minus the
	// next offset to copy, as of the last record seen.
	LagRecords int64   `json:"lag_records"`
	LagSeconds float64 `json:"lag_seconds"`
	// Recopied sums the partitions' Recopied: duplicates on the target
	// caused by restarts from older progress.
	Recopied int64 `json:"recopied"`
	// ExpiredOnSource and LostOnTarget sum the partitions' losses kmirror
	// could not prevent (see PartitionStatus).
	ExpiredOnSource int64 `json:"expired_on_source"`
	LostOnTarget    int64 `json:"lost_on_target"`
	// TargetTopicsReplaced counts target topics found deleted or created
	// again under the copy (each copied again from the source), since
	// this process started.
	TargetTopicsReplaced int64 `json:"target_topics_replaced"`
	// Restarts counts recoveries after errors since the process started.
	Restarts int64 `json:"restarts"`
	// ErrorKind says what kind of failure a FAILED flow has when it is one
	// an operator fixes outside kmirror: "certificate" (TLS),
	// "credentials" (SASL) or "authorization" (ACLs); empty otherwise.
	ErrorKind  string            `json:"error_kind,omitempty"`
	LastError  string            `json:"last_error,omitempty"`
	Topics     []policy.Pair     `json:"topics"`
	Conflicts  []string          `json:"conflicts,omitempty"`
	Partitions []PartitionStatus `json:"partitions"`
	// Checkpoints is consumer-offset sync, when the task has it on.
	Checkpoints *CheckpointStatus `json:"checkpoints,omitempty"`
}

// CheckpointStatus is the consumer-offset sync of a flow.
type CheckpointStatus struct {
	// LastRun is when groups were last translated; zero before the first.
	LastRun time.Time `json:"last_run"`
	// Groups translated in the last run, and those committed to the target.
	Groups    []string `json:"groups"`
	Committed []string `json:"committed"`
	// Skipped says why a group or partition was not synced (active on the
	// target, older than the sync history, ...).
	Skipped   []string `json:"skipped,omitempty"`
	LastError string   `json:"last_error,omitempty"`
}

// PartitionStatus is one replicated partition.
type PartitionStatus struct {
	Topic       string `json:"topic"`
	Target      string `json:"target"`
	Partition   int32  `json:"partition"`
	NextOffset  int64  `json:"next_offset"`
	EndOffset   int64  `json:"end_offset"`
	Lag         int64  `json:"lag"`
	Records     int64  `json:"records"`
	Failed      bool   `json:"failed"`
	Reason      string `json:"reason,omitempty"`
	LastCopied  int64  `json:"last_copied_offset"`
	Downstream  int64  `json:"last_downstream_offset"`
	LastRecordT int64  `json:"last_record_timestamp_ms"`
	// Recopied counts records copied again because the flow restarted from
	// progress older than what it had copied (a crash, a failed produce):
	// the duplicates this caused on the target (exact when nothing else
	// writes to the target partition).
	Recopied int64 `json:"recopied"`
	// ExpiredOnSource counts records the source deleted (retention) before
	// they could be copied: the stored progress pointed before its oldest.
	ExpiredOnSource int64 `json:"expired_on_source"`
	// LostOnTarget counts records the target acknowledged and later lost
	// (an unclean leader election, a broker without replicas that crashed),
	// found when the target no longer knew the partition's producer
	// sequence and its end had gone back before the last acknowledged
	// offset.
	LostOnTarget int64 `json:"lost_on_target"`
}

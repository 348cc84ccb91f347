package views

import (
	"context"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kmirror/kmirror/internal/i18n"
	"github.com/kmirror/kmirror/internal/task"
)

// SmartConnectView is an instance's Smart Connect section: its tasks,
// whether another may be created, and its Smart Connect setting.
type SmartConnectView struct {
	Cluster ClusterInfo
	Tasks   []TaskRow
	// ConnectClusters are the registered Kafka Connect clusters' names, the
	// engines the setting may choose besides the in-process one.
	ConnectClusters []string
	// Settings is the setting form's state after a refused change; its
	// zero value shows the instance's current setting.
	Settings SmartConnectSettingsForm
}

// SmartConnectSettingsForm is the Smart Connect setting as submitted and
// the service's messages by field ("engine").
type SmartConnectSettingsForm struct {
	// Submitted is true when Enabled and Engine are what the user chose
	// (shown again after a refusal) rather than the stored setting.
	Submitted bool
	Enabled   bool
	Engine    string
	Errors    FieldErrors
	Message   string
}

// settingsShown is the setting the form shows: the refused submission, or
// the instance's own.
func (v SmartConnectView) settingsShown() SmartConnectSettingsForm {
	if v.Settings.Submitted {
		return v.Settings
	}
	f := v.Settings
	f.Enabled, f.Engine = v.Cluster.SmartConnect.Enabled, v.Cluster.SmartConnect.Engine
	return f
}

// EngineChoices are the engine values a select offers: the in-process
// engine, then each registered Connect cluster. selected is kept even when
// it names no registered cluster, so a refused value shows as chosen.
func EngineChoices(connectClusters []string, selected string) []string {
	out := []string{task.EngineEmbedded}
	for _, n := range connectClusters {
		out = append(out, task.ConnectEngine(n))
	}
	if selected != "" && !slices.Contains(out, selected) {
		out = append(out, selected)
	}
	return out
}

// EngineLabel names an engine value in the user's language: the
// in-process engine, or the Kafka Connect cluster it names.
func EngineLabel(ctx context.Context, engine string) string {
	if name, ok := (task.Task{Engine: engine}).ConnectCluster(); ok {
		return i18n.T(ctx, "engine.connect", "Name", name)
	}
	return i18n.T(ctx, "engine.embedded")
}

// TaskRow is one task of the list with its measured throughput.
type TaskRow struct {
	Info TaskInfo
	// RecordsPerSecond is measured between two looks at the task's
	// counters; RateKnown is false until there are two.
	RecordsPerSecond float64
	RateKnown        bool
	// RateWindow is how far apart the two looks were.
	RateWindow time.Duration
}

// AtLimit reports whether the instance holds as many tasks as it may.
func (v SmartConnectView) AtLimit() bool { return v.Cluster.TasksUsed >= v.Cluster.TasksLimit }

// TaskActionPath is where an action on a task is confirmed (GET) and done
// (POST).
func TaskActionPath(cluster, name, action string) string {
	return InstancePath(cluster, "smart-connect") + "/" + name + "/" + action
}

// TaskTypeLabel names a task type as the console shows it.
func TaskTypeLabel(ctx context.Context, t string) string {
	if t == task.TypeKafkaReplication {
		return i18n.T(ctx, "task.type.kafka-replication")
	}
	return t
}

// PeerLabel is the peer's registered name or its addresses.
func PeerLabel(p PeerInfo) string {
	if p.ConfigType == task.PeerByCluster {
		return p.Cluster
	}
	return strings.Join(p.Address, ", ")
}

// taskRunning reports whether the engine runs the task here, which is when
// throughput and lag mean something.
func taskRunning(t TaskInfo) bool {
	return t.Status.State.Copying()
}

func rateText(ctx context.Context, r TaskRow) string {
	switch {
	case !taskRunning(r.Info):
		return "—"
	case !r.RateKnown:
		return i18n.T(ctx, "sc.measuring")
	default:
		return FormatRate(r.RecordsPerSecond, true)
	}
}

func lagText(t TaskInfo) string {
	if !taskRunning(t) {
		return "—"
	}
	var lag int64
	for _, f := range t.Status.Flows {
		lag += f.LagRecords
	}
	return strconv.FormatInt(lag, 10)
}

func lastActionText(ctx context.Context, a LastAction) string {
	if a.Action == "" {
		return ""
	}
	by := a.By
	if by == "" {
		by = "?"
	}
	return i18n.T(ctx, "sc.last_action", "Action", ActionLabel(ctx, string(a.Action)), "By", by, "At", FormatTime(a.At))
}

package views

import (
	"context"
	"encoding/json"
	"fmt"
	"net/url"
	"strconv"
	"strings"

	"github.com/a-h/templ"

	"github.com/kmirror/kmirror/internal/i18n"
	"github.com/kmirror/kmirror/internal/task"
)

// TaskView is what the task page shows: the task and what the sampler
// recorded of it lately.
type TaskView struct {
	Task TaskInfo
	// CertWarnings are the client certificates of the task's clusters
	// (current, peer) that end within 30 days or have ended.
	CertWarnings []CertWarning
	// Chart is the charts' first data, as series.json answers it, so they
	// draw at once; nil draws none.
	Chart any
	// Rates are the flows' current records/s by flow; a flow whose rate is
	// not known yet is missing.
	Rates map[string]float64
	// Errors are the task's recent errors, newest first.
	Errors []RecentError
	// MoveTo are the engines the caller may move the task to (none for a
	// role that cannot act on tasks).
	MoveTo []string
	// Switchover is the task's newest switchover, shown beside the link to
	// its page (the task says it was switched over); nil when none.
	Switchover *SwitchoverModel
}

// MoveTargets are the engines a task on current may move to: the
// in-process engine and each registered Connect cluster, but current.
func MoveTargets(connectClusters []string, current string) []string {
	if current == "" {
		current = task.EngineEmbedded
	}
	var out []string
	for _, e := range EngineChoices(connectClusters, "") {
		if e != current {
			out = append(out, e)
		}
	}
	return out
}

// TaskPath is a task page's address, or one of its endpoints when sub is
// set ("status", "series.json", "pause", ...).
func TaskPath(name, sub string) string {
	p := "/tasks/" + url.PathEscape(name)
	if sub != "" {
		p += "/" + sub
	}
	return p
}

// PasswordMask stands for a set password in exported JSON; the service
// refuses it so a masked export is never created with "********".
const PasswordMask = task.PasswordMask

// ExportTask is the task as the JSON API accepts it (POST /api/v1/tasks),
// with the peer's secrets masked (the password, the client key, the OAuth
// client secret): the import refuses the mask, asking for the real value.
// The engine goes along: the copy runs where the task runs, not wherever
// the importing instance defaults to.
func ExportTask(info TaskInfo) task.Task {
	t := task.Task{Name: info.Name, Type: info.Type, Current: info.Current, Peer: info.Peer.Peer, Rules: info.Rules, Engine: info.Engine}
	t.Peer.Password, t.Peer.ClientKeyPEM, t.Peer.ClientKeyPassword = "", "", ""
	if info.Peer.PasswordSet {
		t.Peer.Password = PasswordMask
	}
	if info.Peer.ClientKeySet {
		t.Peer.ClientKeyPEM = PasswordMask
	}
	return t
}

// ExportJSON is ExportTask indented, for viewing and download.
func ExportJSON(info TaskInfo) string {
	b, err := json.MarshalIndent(ExportTask(info), "", "  ")
	if err != nil {
		return err.Error() // plain structs; cannot fail
	}
	return string(b)
}

// Task actions an operator can take, in the order the page offers them.
const (
	ActionPause   = string(task.ActionPause)
	ActionResume  = string(task.ActionResume)
	ActionRestart = string(task.ActionRestart)
	ActionReapply = string(task.ActionReapply)
	ActionDelete  = string(task.ActionDelete)
)

// TaskActionsFor is TaskActions for the request's caller: none for a role
// that cannot act on tasks.
func TaskActionsFor(ctx context.Context, info TaskInfo) []string {
	if !Can(ctx, Operate) {
		return nil
	}
	return TaskActions(info)
}

// TaskActions are the actions that apply to a task now: pause a task that
// should run, resume a paused one, restart one that should run (it clears
// failed partitions), re-apply one whose configuration drifted, delete any.
func TaskActions(info TaskInfo) []string {
	if info.DesiredState == task.DesiredPaused {
		return []string{ActionResume, ActionDelete}
	}
	if info.Status.State == task.StateDrifted {
		return []string{ActionReapply, ActionPause, ActionRestart, ActionDelete}
	}
	return []string{ActionPause, ActionRestart, ActionDelete}
}

func tpOnOff(ctx context.Context, b bool) string {
	if b {
		return i18n.T(ctx, "task.yes")
	}
	return i18n.T(ctx, "task.no")
}

// tpPeer is how the peer is known: its registered name or its address.
func tpPeer(p PeerInfo) string {
	if p.ConfigType == task.PeerByCluster {
		return p.Cluster
	}
	return strings.Join(p.Address, ", ")
}

// Headline is the first line of an error, short enough to read at a glance;
// the page shows the full cause behind a <details> when it is longer.
func Headline(msg string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(msg), "\n")
	if r := []rune(line); len(r) > 160 {
		return string(r[:157]) + "…"
	}
	return line
}

func tpItoa(n int64) string { return strconv.FormatInt(n, 10) }

// tpOffset shows a Kafka offset; negative means not known yet.
func tpOffset(n int64) string {
	if n < 0 {
		return "—"
	}
	return tpItoa(n)
}

func tpSeconds(s float64) string { return fmt.Sprintf("%.1f s", s) }

// tpEffectiveTasks is the parallelism users get: x2 for bidirectional.
func tpEffectiveTasks(r task.Rules) string {
	if r.Direction == task.DirectionBidirectional {
		return fmt.Sprintf("%d × 2 = %d", r.Tasks, r.Tasks*2)
	}
	return strconv.Itoa(r.Tasks)
}

func tpMappings(ms []task.Mapping) string {
	parts := make([]string, len(ms))
	for i, m := range ms {
		parts[i] = m.Source + " → " + m.Target
	}
	return strings.Join(parts, ", ")
}

// tpReplicationFactor shows a task's replication factor, or that the
// target's default applies.
func tpReplicationFactor(ctx context.Context, rf int) string {
	if rf == task.DefaultReplicationFactor {
		return i18n.T(ctx, "task.value.replication_factor_default")
	}
	return strconv.Itoa(rf)
}

func tpSide(ctx context.Context, side task.Side) string {
	if side == task.SidePeer {
		return i18n.T(ctx, "task.section.peer")
	}
	return i18n.T(ctx, "task.section.current")
}

// tpChartData is the page's initial chart data (templ.JSONScript), so charts
// draw at once; app.js then polls series.json.
func tpChartData(v TaskView) templ.Component {
	return templ.JSONScript("task-series", v.Chart)
}

func tpFlowRate(rates map[string]float64, flow string) string {
	r, ok := rates[flow]
	return FormatRate(r, ok)
}

func tpFailedPartitions(f FlowStatus) []PartitionStatus {
	var out []PartitionStatus
	for _, p := range f.Partitions {
		if p.Failed {
			out = append(out, p)
		}
	}
	return out
}

// tpDelivery names a task's delivery, with its transaction interval when
// exactly once.
func tpDelivery(ctx context.Context, r task.Rules) string {
	if !r.ExactlyOnce() {
		return i18n.T(ctx, "task.delivery.at_least_once")
	}
	return i18n.T(ctx, "task.delivery.exactly_once") + " · " + i18n.T(ctx, "task.delivery.interval", r.TransactionInterval().String())
}

// tpOnTargetReplaced names what a task does when a target topic is
// deleted or created again.
func tpOnTargetReplaced(ctx context.Context, v string) string {
	if v == task.TargetReplacedContinue {
		return i18n.T(ctx, "task.on_target_topic_replaced.continue")
	}
	return i18n.T(ctx, "task.on_target_topic_replaced.recopy")
}

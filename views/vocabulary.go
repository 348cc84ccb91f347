package views

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/kmirror/kmirror/internal/i18n"
	"github.com/kmirror/kmirror/internal/task"
)

// The console's one display vocabulary: every page names a state, an
// action, a direction, a time and a rate with these, so one task reads the
// same everywhere. The label functions spell every message id out, so the
// i18n test that checks code against the message files sees each one.

// StateLabel names a task or flow state in the page's language.
func StateLabel(ctx context.Context, state task.State) string {
	switch state {
	case task.StateRunning:
		return i18n.T(ctx, "state.RUNNING")
	case task.StateStarting:
		return i18n.T(ctx, "state.STARTING")
	case task.StateDegraded:
		return i18n.T(ctx, "state.DEGRADED")
	case task.StateDrifted:
		return i18n.T(ctx, "state.DRIFTED")
	case task.StatePaused:
		return i18n.T(ctx, "state.PAUSED")
	case task.StateFailed:
		return i18n.T(ctx, "state.FAILED")
	case task.StateStopped:
		return i18n.T(ctx, "state.STOPPED")
	}
	return string(state)
}

// StateClass is a state's badge: its colour comes from state-<state>.
func StateClass(state task.State) string {
	return "badge state state-" + strings.ToLower(string(state))
}

// ActionLabel names an operator action in the page's language.
func ActionLabel(ctx context.Context, action string) string {
	switch action {
	case string(task.ActionCreate):
		return i18n.T(ctx, "action.create")
	case ActionPause:
		return i18n.T(ctx, "action.pause")
	case ActionResume:
		return i18n.T(ctx, "action.resume")
	case ActionRestart:
		return i18n.T(ctx, "action.restart")
	case ActionReapply:
		return i18n.T(ctx, "action.reapply")
	case ActionDelete:
		return i18n.T(ctx, "action.delete")
	}
	return action
}

// ConfirmQuestion is what the user confirms before an action on a task.
func ConfirmQuestion(ctx context.Context, action, name string) string {
	switch action {
	case ActionPause:
		return i18n.T(ctx, "action.pause_confirm", "Name", name)
	case ActionResume:
		return i18n.T(ctx, "action.resume_confirm", "Name", name)
	case ActionRestart:
		return i18n.T(ctx, "action.restart_confirm", "Name", name)
	case ActionReapply:
		return i18n.T(ctx, "action.reapply_confirm", "Name", name)
	}
	return i18n.T(ctx, "action.delete_confirm", "Name", name)
}

// DirectionName names a direction in the page's language.
func DirectionName(ctx context.Context, d task.Direction) string {
	switch d {
	case task.DirectionPull:
		return i18n.T(ctx, "task.direction.pull")
	case task.DirectionPush:
		return i18n.T(ctx, "task.direction.push")
	case task.DirectionBidirectional:
		return i18n.T(ctx, "task.direction.bidirectional")
	}
	return string(d)
}

// DirectionArrow points the way records go between the current cluster
// (written first) and the peer.
func DirectionArrow(d task.Direction) string {
	switch d {
	case task.DirectionPush:
		return "→"
	case task.DirectionPull:
		return "←"
	case task.DirectionBidirectional:
		return "↔"
	}
	return "?"
}

// DirectionLabel says which way a task copies between its aliases, the
// current cluster's first.
func DirectionLabel(ctx context.Context, t TaskInfo) string {
	return DirectionName(ctx, t.Rules.Direction) + ": " + t.Current.Alias + " " + DirectionArrow(t.Rules.Direction) + " " + t.Peer.Alias
}

// FormatTime is how the console writes a moment: to the second, in UTC,
// saying so (operators compare it with broker and Connect logs, which
// the console cannot know the zone of); "—" for none.
func FormatTime(t time.Time) string {
	if t.IsZero() {
		return "—"
	}
	return t.UTC().Format("2006-01-02 15:04:05 UTC")
}

// FormatRate shows records/s: whole numbers from 100 up, one decimal
// below; "—" when not known.
func FormatRate(r float64, known bool) string {
	switch {
	case !known:
		return "—"
	case r >= 100:
		return strconv.FormatFloat(r, 'f', 0, 64)
	default:
		return strconv.FormatFloat(r, 'f', 1, 64)
	}
}

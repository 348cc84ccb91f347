package views

import (
	"context"
	"strconv"

	"github.com/kmirror/kmirror/internal/i18n"
)

// SwitchoverView is a task's Switchover page: its newest switchover, if
// any, and the form that starts one.
type SwitchoverView struct {
	Task string
	// Flows are the task's directions ("A->B"); the form asks for one when
	// there are several.
	Flows []string
	// Current is the newest switchover; nil when the task has had none.
	Current *SwitchoverModel
	// Form is what the form holds (again after a refusal), Error the
	// refusal's reason, Problems its fields' problems.
	Form     SwitchoverForm
	Error    string
	Problems map[string]string
}

// SwitchoverForm is the start form's values.
type SwitchoverForm struct {
	Mode      string // planned or emergency
	Groups    string // one group per line
	AllGroups bool
	Direction string
}

// SwitchoverModel is one switchover as the page shows it.
type SwitchoverModel struct {
	ID        int64
	Mode      string
	Direction string
	State     string
	CreatedBy string
	// Failback is the way back's state after this switchover ("",
	// "prepared", "home"); CanFailback says a way back may be prepared.
	Failback    string
	CanFailback bool
	Steps       []SwitchoverStepModel
	Groups      []SwitchoverGroupModel
}

// Ended says whether the switchover is over (the page stops polling).
func (m SwitchoverModel) Ended() bool { return m.State == "done" || m.State == "failed" }

// SwitchoverStepModel is one step of the checklist.
type SwitchoverStepModel struct {
	Name, State, Message string
}

// SwitchoverGroupModel is one group's report.
type SwitchoverGroupModel struct {
	Group      string
	Partitions []SwitchoverPartitionModel
	Notes      []string
}

// SwitchoverPartitionModel is one row of a group's report.
type SwitchoverPartitionModel struct {
	Topic, TargetTopic         string
	Partition                  int32
	SourceOffset, TargetOffset int64
	Exact                      bool
	MayReadAgain, MayBeLost    int64
}

// CanStart says whether the form is offered: no switchover is open.
func (v SwitchoverView) CanStart() bool { return v.Current == nil || v.Current.Ended() }

// switchoverStateLabel names a switchover's or a step's state.
func switchoverStateLabel(ctx context.Context, state string) string {
	switch state {
	case "pending":
		return i18n.T(ctx, "switchover.state.pending")
	case "running":
		return i18n.T(ctx, "switchover.state.running")
	case "waiting":
		return i18n.T(ctx, "switchover.state.waiting")
	case "done":
		return i18n.T(ctx, "switchover.state.done")
	case "failed":
		return i18n.T(ctx, "switchover.state.failed")
	}
	return state
}

// switchoverStepLabel names a step.
func switchoverStepLabel(ctx context.Context, step string) string {
	switch step {
	case "preflight":
		return i18n.T(ctx, "switchover.step.preflight")
	case "producers_stopped":
		return i18n.T(ctx, "switchover.step.producers_stopped")
	case "drain":
		return i18n.T(ctx, "switchover.step.drain")
	case "translate":
		return i18n.T(ctx, "switchover.step.translate")
	case "switched":
		return i18n.T(ctx, "switchover.step.switched")
	}
	return step
}

// switchoverStateClass styles a state like the task states.
func switchoverStateClass(state string) string {
	switch state {
	case "done":
		return "state state-running"
	case "failed":
		return "state state-failed"
	case "waiting":
		return "state state-degraded"
	case "running":
		return "state state-starting"
	}
	return "state state-paused"
}

// mayReadAgain shows a bound, or that nothing bounds it.
func mayReadAgain(ctx context.Context, n int64) string {
	if n < 0 {
		return i18n.T(ctx, "switchover.unbounded")
	}
	return strconv.FormatInt(n, 10)
}

// exactLabel says whether a translation is exact.
func exactLabel(ctx context.Context, exact bool) string {
	if exact {
		return i18n.T(ctx, "switchover.exact.yes")
	}
	return i18n.T(ctx, "switchover.exact.no")
}

// offsetCell shows an offset, or a dash for none (-1).
func offsetCell(off int64) string {
	if off < 0 {
		return "—"
	}
	return strconv.FormatInt(off, 10)
}

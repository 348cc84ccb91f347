// Package switchover moves a task's consumers (and, by the operator, its
// producers) from the source to the copy as one guided operation
// (docs/SWITCHOVER.md): the request and its rules, the steps and their
// order, and Advance, which works the current step against a running
// flow (Side). It stores nothing and starts nothing: the service keeps a
// switchover and calls Advance until it ends.
package switchover

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"
)

// Mode is how the switchover treats the source.
type Mode string

// Modes.
const (
	// Planned: the source is alive; producers stop, the copy drains, every
	// group is translated exactly.
	Planned Mode = "planned"
	// Emergency: the source is gone; groups translated from the last
	// checkpoints on the target and what the running flow knows, with
	// what may be read again and what may be lost, in numbers.
	Emergency Mode = "emergency"
)

// State is a switchover's or a step's state.
type State string

// States.
const (
	Pending State = "pending" // a step not reached yet
	Running State = "running" // being worked
	// Waiting: on something only the operator can do (stop consumers or
	// producers); the step's message says what.
	Waiting State = "waiting"
	Done    State = "done"
	Failed  State = "failed"
)

// Ended says whether a switchover in state s is over.
func (s State) Ended() bool { return s == Done || s == Failed }

// Step names, in the planned mode's order.
const (
	StepPreflight        = "preflight"
	StepProducersStopped = "producers_stopped"
	StepDrain            = "drain"
	StepTranslate        = "translate"
	StepSwitched         = "switched"
)

// PlannedSteps is the planned mode's order.
var PlannedSteps = []string{StepPreflight, StepProducersStopped, StepDrain, StepTranslate, StepSwitched}

// EmergencySteps is the emergency mode's: nothing is asked of the source.
var EmergencySteps = []string{StepPreflight, StepTranslate, StepSwitched}

// Step is one step of a switchover.
type Step struct {
	Name    string `json:"name"`
	State   State  `json:"state"`
	Message string `json:"message,omitempty"`
	// Since is when the step took its state.
	Since time.Time `json:"since,omitzero"`
}

// Groups are the consumer groups a switchover moves: named, or every group
// of the source ("all" in JSON).
type Groups struct {
	All   bool
	Names []string
}

// MarshalJSON writes "all" or the list of names.
func (g Groups) MarshalJSON() ([]byte, error) {
	if g.All {
		return []byte(`"all"`), nil
	}
	if g.Names == nil {
		return []byte(`[]`), nil
	}
	return json.Marshal(g.Names)
}

// UnmarshalJSON reads "all" or a list of names.
func (g *Groups) UnmarshalJSON(b []byte) error {
	b = bytes.TrimSpace(b)
	if len(b) > 0 && b[0] == '"' {
		var s string
		if err := json.Unmarshal(b, &s); err != nil {
			return err
		}
		if s != "all" {
			return fmt.Errorf(`groups: %q is neither "all" nor a list of group names`, s)
		}
		*g = Groups{All: true}
		return nil
	}
	var names []string
	if err := json.Unmarshal(b, &names); err != nil {
		return errors.New(`groups: want "all" or a list of group names`)
	}
	*g = Groups{Names: names}
	return nil
}

// Request is what starts a switchover.
type Request struct {
	Mode   Mode   `json:"mode"`
	Groups Groups `json:"groups"`
	// Direction names the flow, "<source alias>-><target alias>"; it may
	// be left out when the task has one flow.
	Direction string `json:"direction,omitempty"`
}

// Problem is one field of a request that breaks a rule.
type Problem struct {
	Field   string
	Message string
}

// maxGroupName is Kafka's bound on a group id's length, as for topics.
const maxGroupName = 249

// Check returns the request's problems given the task's flow names (its
// directions), and the request with defaults filled in: planned mode, the
// one flow's direction.
func (r Request) Check(flows []string) (Request, []Problem) {
	var ps []Problem
	switch r.Mode {
	case "":
		r.Mode = Planned
	case Planned:
	case Emergency:
		if r.Groups.All {
			ps = append(ps, Problem{"groups", "name the groups to move: in an emergency the source cannot be asked for its groups"})
		}
	default:
		ps = append(ps, Problem{"mode", fmt.Sprintf("mode must be planned or emergency, not %q", r.Mode)})
	}
	switch {
	case r.Direction == "" && len(flows) == 1:
		r.Direction = flows[0]
	case r.Direction == "":
		ps = append(ps, Problem{"direction", fmt.Sprintf("direction is required for a task with %d flows: one of %s", len(flows), strings.Join(flows, ", "))})
	case !slices.Contains(flows, r.Direction):
		ps = append(ps, Problem{"direction", fmt.Sprintf("direction %q is not a flow of the task: one of %s", r.Direction, strings.Join(flows, ", "))})
	}
	if !r.Groups.All {
		if len(r.Groups.Names) == 0 {
			ps = append(ps, Problem{"groups", `groups is required: a list of consumer group names, or "all"`})
		}
		seen := map[string]bool{}
		for _, g := range r.Groups.Names {
			switch {
			case strings.TrimSpace(g) == "" || g != strings.TrimSpace(g):
				ps = append(ps, Problem{"groups", fmt.Sprintf("group name %q is empty or has spaces around it", g)})
			case len(g) > maxGroupName:
				ps = append(ps, Problem{"groups", fmt.Sprintf("group name %.20q... is longer than %d characters", g, maxGroupName)})
			case seen[g]:
				ps = append(ps, Problem{"groups", fmt.Sprintf("group %s is named twice", g)})
			}
			seen[g] = true
		}
	}
	return r, ps
}

// Switchover is one switchover of a task, as stored and answered.
type Switchover struct {
	ID        int64  `json:"id"`
	Task      string `json:"task"`
	Mode      Mode   `json:"mode"`
	Direction string `json:"direction"`
	Groups    Groups `json:"groups"`
	// Selected are the groups moved: Groups' names, or every group of the
	// source as preflight listed it.
	Selected  []string  `json:"selected,omitempty"`
	State     State     `json:"state"`
	Steps     []Step    `json:"steps"`
	Report    Report    `json:"report"`
	CreatedBy string    `json:"created_by,omitempty"`
	CreatedAt time.Time `json:"created_at"`
	UpdatedAt time.Time `json:"updated_at"`
	// Failback is the way back, once prepared after this switchover.
	Failback *Failback `json:"failback,omitempty"`
	// Ends are the source's end offsets as producers_stopped last saw
	// them ("topic/partition"), still since EndsSince.
	Ends      map[string]int64 `json:"ends,omitempty"`
	EndsSince time.Time        `json:"ends_since,omitzero"`
}

// Failback is a switchover's way back (docs/SWITCHOVER.md): prepared, the
// task also copies back what is written on the target from the switchover
// point on; home once a switchover in the other direction moved everyone
// back.
type Failback struct {
	State      FailbackState `json:"state"`
	PreparedBy string        `json:"prepared_by,omitempty"`
	PreparedAt time.Time     `json:"prepared_at"`
	// Home is the switchover that went home, and HomePoints its points:
	// with the switchover's own, they bound what the way back wrote.
	Home       int64   `json:"home,omitempty"`
	HomePoints []Point `json:"home_points,omitempty"`
}

// FailbackState is where a way back stands.
type FailbackState string

// Failback states.
const (
	FailbackPrepared FailbackState = "prepared"
	FailbackHome     FailbackState = "home"
)

// Report is what the switchover did, per group and partition.
type Report struct {
	// Lag is each source partition's lag at preflight.
	Lag []PartitionLag `json:"lag,omitempty"`
	// Points are where each partition stood on both sides once drained:
	// the switchover's point, where a way back starts.
	Points []Point       `json:"points,omitempty"`
	Groups []GroupReport `json:"groups"`
}

// Point is a partition's switchover point: the source's end and the
// target's end, the copy drained.
type Point struct {
	Topic       string `json:"topic"`
	Partition   int32  `json:"partition"`
	TargetTopic string `json:"target_topic"`
	SourceEnd   int64  `json:"source_end"`
	TargetEnd   int64  `json:"target_end"`
}

// PartitionLag is a partition's distance from the source's end.
type PartitionLag struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	Lag       int64  `json:"lag"`
}

// GroupReport is one group's translation.
type GroupReport struct {
	Group      string            `json:"group"`
	Partitions []PartitionReport `json:"partitions"`
	// Notes say what else an operator should know (a partition the group
	// has no offset on, a target group ahead of the translation).
	Notes []string `json:"notes,omitempty"`
}

// PartitionReport is one partition of a group's move.
type PartitionReport struct {
	Topic        string `json:"topic"`
	Partition    int32  `json:"partition"`
	TargetTopic  string `json:"target_topic"`
	SourceOffset int64  `json:"source_offset"`
	TargetOffset int64  `json:"target_offset"`
	Exact        bool   `json:"exact"`
	// MayReadAgain bounds the records the group reads again on the target
	// (-1: not bounded); MayBeLost the records it will not find there.
	MayReadAgain int64 `json:"may_read_again"`
	MayBeLost    int64 `json:"may_be_lost"`
}

// New is a switchover of task for a checked request, every step pending.
func New(task string, r Request, by string, now time.Time) Switchover {
	s := Switchover{Task: task, Mode: r.Mode, Direction: r.Direction, Groups: r.Groups,
		State: Running, CreatedBy: by, CreatedAt: now, UpdatedAt: now, Report: Report{Groups: []GroupReport{}}}
	if !r.Groups.All {
		s.Selected = slices.Clone(r.Groups.Names)
	}
	steps := PlannedSteps
	if r.Mode == Emergency {
		steps = EmergencySteps
	}
	for _, n := range steps {
		s.Steps = append(s.Steps, Step{Name: n, State: Pending})
	}
	return s
}

// current is the index of the first step not done, or len(Steps).
func (s *Switchover) current() int {
	for i, st := range s.Steps {
		if st.State != Done {
			return i
		}
	}
	return len(s.Steps)
}

// Current is the step being worked ("" once every step is done).
func (s *Switchover) Current() string {
	if i := s.current(); i < len(s.Steps) {
		return s.Steps[i].Name
	}
	return ""
}

// set gives step i a state and message, and the switchover its state.
func (s *Switchover) set(i int, st State, msg string, now time.Time) bool {
	step := &s.Steps[i]
	changed := step.State != st || step.Message != msg
	if step.State != st {
		step.Since = now
	}
	step.State, step.Message = st, msg
	prev := s.State
	switch st {
	case Done:
		s.State = Running
		if i == len(s.Steps)-1 {
			s.State = Done
		}
	default:
		s.State = st
	}
	if changed || prev != s.State {
		s.UpdatedAt = now
		return true
	}
	return false
}

// back returns to step name (the source moved again): it and every step
// after it pending.
func (s *Switchover) back(name, msg string, now time.Time) {
	for i := range s.Steps {
		if s.Steps[i].Name == name {
			for j := i; j < len(s.Steps); j++ {
				s.Steps[j] = Step{Name: s.Steps[j].Name, State: Pending}
			}
			s.set(i, Running, msg, now)
			return
		}
	}
}

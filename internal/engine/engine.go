// Package engine is the contract between kmirror and what runs its tasks:
// the embedded engine (internal/embeddedengine: replicators in this
// process) and the Kafka Connect engine (internal/connect/connectengine: MM2
// connectors on a Connect cluster). Both implement Runner and Handover and
// answer with the status types here, which are also the API's JSON for a
// task's status; neither engine imports the other, and this package
// depends on nothing of kmirror's but task (and what task uses).
package engine

import (
	"sort"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/task"
)

// Runner runs tasks. Stop is graceful: it returns once progress is
// committed.
type Runner interface {
	Start(t task.Task, current, peer cluster.Settings) error
	Stop(name string)
	Status(name string) (TaskStatus, bool)
}

// Remover is a Runner whose tasks outlive a stop (Kafka Connect keeps
// paused connectors): Remove deletes them for good when the task is
// deleted. A Runner without it is stopped instead.
type Remover interface {
	Remove(t task.Task) error
}

// Checker is a Runner that can say, before a task is stored, why the task
// cannot run on it (an option its engine cannot honour). The message names
// the option and the reason.
type Checker interface {
	Check(t task.Task, current, peer cluster.Settings) error
}

// Handover is a Runner a task can move away from and to: Halt stops the
// task with its progress kept where Progress reads it; Seed stores
// progress handed over from another engine before Start. Progress is the
// next offset of every source partition, by flow name ("A->B").
type Handover interface {
	Halt(t task.Task) error
	Progress(t task.Task, current, peer cluster.Settings) (map[string][]task.Position, error)
	Seed(t task.Task, current, peer cluster.Settings, progress map[string][]task.Position) error
}

// TaskStatus is what a task is doing: State is the worst of its flows'
// (RUNNING, STARTING, DEGRADED, FAILED; PAUSED or STOPPED when it does not
// run), Reason says why it is not RUNNING, Flows are the per-flow
// snapshots (empty unless it runs). It is the API's "status" of a task,
// where the task's name is the task's own field.
type TaskStatus struct {
	Name   string       `json:"-"`
	State  task.State   `json:"state"`
	Reason string       `json:"reason,omitempty"`
	Flows  []FlowStatus `json:"flows"`
}

// Source is what reads a set of running tasks: an engine, or several as
// one (Union). Metrics and the task page's history read it.
type Source interface {
	// Names lists the tasks running here.
	Names() []string
	// Status is a task's snapshot; false when it stopped meanwhile.
	Status(name string) (TaskStatus, bool)
}

// Union reads several engines as one: every engine's tasks (a task runs on
// one engine at a time).
func Union(srcs ...Source) Source { return union(srcs) }

type union []Source

func (u union) Names() []string {
	var out []string
	for _, s := range u {
		out = append(out, s.Names()...)
	}
	sort.Strings(out)
	return out
}

func (u union) Status(name string) (TaskStatus, bool) {
	for _, s := range u {
		if st, ok := s.Status(name); ok {
			return st, true
		}
	}
	return TaskStatus{Name: name, State: task.StateStopped}, false
}

package task

// The task vocabulary: what a task or one of its flows is doing (State),
// what the operator asked for (DesiredState) and what the operator did
// (Action). The values are the wire's: the API's JSON and the store's
// columns carry exactly these strings.

// State is what a task or one of its flows is doing.
type State string

const (
	// StateStarting means the flow is connecting and reading where to resume.
	StateStarting State = "STARTING"
	// StateRunning means records are copied.
	StateRunning State = "RUNNING"
	// StateDegraded means copying goes on, but something holds part of it back
	// (the reason says what and since when); kmirror keeps retrying.
	StateDegraded State = "DEGRADED"
	// StateDrifted means copying goes on, but with a configuration changed
	// outside kmirror (a connector edited on Kafka Connect): the reason
	// names the settings; re-applying the task puts kmirror's back.
	StateDrifted State = "DRIFTED"
	// StateFailed means copying stopped on an error the reason names; for a
	// task, also one that should run but could not be started.
	StateFailed State = "FAILED"
	// StateStopped means the flow or task is not running in this process.
	StateStopped State = "STOPPED"
	// StatePaused means the operator paused the task.
	StatePaused State = "PAUSED"
)

// Copying says whether a task or flow in state s copies records (running,
// starting or degraded), which is when throughput and lag mean something.
func (s State) Copying() bool {
	switch s {
	case StateRunning, StateStarting, StateDegraded, StateDrifted:
		return true
	case StateFailed, StateStopped, StatePaused:
		return false
	}
	return false
}

// DesiredState is what the operator asked a task to be; whether it actually
// runs is the engine's to say.
type DesiredState string

// The desired states.
const (
	DesiredRunning DesiredState = "running"
	DesiredPaused  DesiredState = "paused"
)

// Valid says whether d is one of the desired states.
func (d DesiredState) Valid() bool {
	switch d {
	case DesiredRunning, DesiredPaused:
		return true
	}
	return false
}

// Action is what an operator did to a task, recorded with who and when.
type Action string

// The actions.
const (
	ActionCreate  Action = "create"
	ActionPause   Action = "pause"
	ActionResume  Action = "resume"
	ActionRestart Action = "restart"
	// ActionReapply writes kmirror's configuration again where it was
	// changed outside kmirror (a task on Kafka Connect that DRIFTED).
	ActionReapply Action = "reapply"
	ActionDelete  Action = "delete"
)

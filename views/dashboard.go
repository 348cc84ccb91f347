package views

// DashboardFilter is the dashboard's query: a state (running, paused,
// failed; "" for all) and part of a task name.
type DashboardFilter struct {
	State string
	Query string
}

// DashboardCounts are the tasks by state, over every task (not the filter).
// Starting tasks count as running.
type DashboardCounts struct {
	Total, Running, Paused, Failed int
}

// DashboardRow is one task with its current throughput.
type DashboardRow struct {
	Info TaskInfo
	// Rate is records/s over its flows; RateKnown is false before two
	// samples and when the task does not run.
	Rate      float64
	RateKnown bool
}

// LagRecords sums the task's lag over its flows.
func (r DashboardRow) LagRecords() int64 {
	var n int64
	for _, f := range r.Info.Status.Flows {
		n += f.LagRecords
	}
	return n
}

// DashboardView is the dashboard of all tasks across instances.
type DashboardView struct {
	Rows   []DashboardRow
	Counts DashboardCounts
	Filter DashboardFilter
}

// ImportForm is the create-from-JSON form: the JSON as pasted and, after a
// refusal, the service's problems by field or one message.
type ImportForm struct {
	// JSON is what was pasted, any password blanked.
	JSON string
	// PasswordRemoved says a password was blanked and must be typed again.
	PasswordRemoved bool
	Message         string
	Problems        []Problem
}

const importPlaceholder = `{"name": "orders-dr", "type": "kafka-replication",
 "current": {"cluster": "east", "alias": "A"},
 "peer": {"alias": "B", "config_type": "cluster", "cluster": "west"},
 "rules": {"direction": "push", "topics": ["orders"], "tasks": 2, ...}}`

package connectengine

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/kmirror/kmirror/internal/connect"
)

// Automatic restarts (opt-in per Connect cluster, connectplan.Cluster's
// AutoRestart): after each poll, a connector of a deployed task whose
// connector or tasks Connect shows FAILED is restarted, failed instances
// only (POST /connectors/{name}/restart?includeTasks=true&onlyFailed=true).
// A restart that does not hold waits longer before the next: restartFirst,
// doubling up to restartMax; a connector healthy for restartHealthy after
// its last restart starts from restartFirst again. Each restart is counted
// on its flow (FlowStatus.Restarts, kmirror_flow_restarts_total).

// Back-off of automatic restarts. Variables for tests.
var (
	restartFirst   = 10 * time.Second
	restartMax     = 5 * time.Minute
	restartHealthy = 10 * time.Minute
)

// restarts are one deployment's automatic restarts.
type restarts struct {
	mu     sync.Mutex
	byConn map[string]*restartState
	count  map[string]int64 // by flow
}

type restartState struct {
	attempts int
	last     time.Time // of the last restart
	next     time.Time // no restart before
	err      error     // of the last restart request, nil when it was taken
}

func newRestarts() *restarts {
	return &restarts{byConn: map[string]*restartState{}, count: map[string]int64{}}
}

// of is the flow's count of automatic restarts.
func (r *restarts) of(flow string) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.count[flow]
}

// due says whether connector, failed now, is to be restarted at now (its
// back-off has passed), and which restart it would be.
func (r *restarts) due(connector string, now time.Time) (attempt int, ok bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.byConn[connector]
	if st == nil {
		return 1, true
	}
	return st.attempts + 1, !now.Before(st.next)
}

// restarted notes that Connect took a restart of connector at now: counted
// on flow, and the next waits longer.
func (r *restarts) restarted(connector, flow string, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.byConn[connector]
	if st == nil {
		st = &restartState{}
		r.byConn[connector] = st
	}
	st.attempts++
	st.last, st.next, st.err = now, now.Add(restartBackoff(st.attempts)), nil
	r.count[flow]++
}

// healthy notes connector not failed at now: after restartHealthy since its
// last restart, the back-off starts over.
func (r *restarts) healthy(connector string, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if st := r.byConn[connector]; st != nil && now.Sub(st.last) >= restartHealthy {
		delete(r.byConn, connector)
	}
}

// failed notes why a restart request was not taken; the next poll tries
// again (the back-off grows only with restarts Connect took).
func (r *restarts) failed(connector string, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	st := r.byConn[connector]
	if st == nil {
		st = &restartState{}
		r.byConn[connector] = st
	}
	st.err = err
}

// restartBackoff is the wait after the attempt-th restart.
func restartBackoff(attempt int) time.Duration {
	d := restartFirst
	for i := 1; i < attempt && d < restartMax; i++ {
		d *= 2
	}
	return min(d, restartMax)
}

// failedInstances says whether Connect shows a connector, or one of its
// tasks, FAILED.
func failedInstances(v connect.ConnectorView) bool {
	if v.Status.Connector.State == connect.StateFailed {
		return true
	}
	for _, t := range v.Status.Tasks {
		if t.State == connect.StateFailed {
			return true
		}
	}
	return false
}

// restartFailed restarts, on a Connect cluster that allows it, the failed
// connectors of the tasks deployed there, as o saw them, through the poll's
// client.
func (e *Engine) restartFailed(clusterName string, auto bool, client *connect.Client, o observed) {
	if !auto || o.err != nil {
		return
	}
	type due struct {
		name, flow, task string
		attempt          int
		r                *restarts
	}
	var todo []due
	e.mu.Lock()
	for name, dep := range e.tasks {
		if dep.cluster != clusterName {
			continue
		}
		for _, c := range dep.connectors {
			v, listed := o.views[c.Name]
			switch {
			case !listed:
			case !failedInstances(v):
				dep.restarts.healthy(c.Name, o.at)
			default:
				if n, ok := dep.restarts.due(c.Name, o.at); ok {
					todo = append(todo, due{c.Name, c.Flow, name, n, dep.restarts})
				}
			}
		}
	}
	e.mu.Unlock()
	if len(todo) == 0 {
		return
	}
	// Bounded as a poll is: the next poll waits for it.
	ctx, cancel := context.WithTimeout(context.Background(), pollBudget)
	defer cancel()
	for _, d := range todo {
		if _, err := client.Restart(ctx, d.name, true, true); err != nil {
			d.r.failed(d.name, err)
			e.log.Warn("failed connector not restarted", "task", d.task, "connector", d.name, "attempt", d.attempt, "error", err)
			continue
		}
		d.r.restarted(d.name, d.flow, o.at)
		e.log.Info("failed connector restarted automatically", "task", d.task, "connector", d.name, "attempt", d.attempt,
			"next_after", restartBackoff(d.attempt))
	}
}

// note is what a FAILED flow's reason adds about the automatic restarts of
// its failed connectors, "" when there are none.
func (r *restarts) note(connectors []string, now time.Time) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, c := range connectors {
		st := r.byConn[c]
		if st == nil || st.attempts == 0 {
			continue
		}
		msg := fmt.Sprintf("; restarted automatically %d time(s), next no sooner than in %s", st.attempts, max(st.next.Sub(now), 0).Round(time.Second))
		if st.err != nil {
			msg += fmt.Sprintf(" (the last restart request failed: %v)", st.err)
		}
		return msg
	}
	return ""
}

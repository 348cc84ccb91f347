package connectengine

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/kmirror/kmirror/internal/connect"
	"github.com/kmirror/kmirror/internal/task"
)

// traceSummaryLength bounds the part of a stack trace a reason carries.
const traceSummaryLength = 300

// observed is what one poll of a Connect cluster saw of a task's
// connectors.
type observed struct {
	// views are the listed connectors by name; a name missing was not
	// listed (deleted on Connect behind kmirror's back).
	views map[string]connect.ConnectorView
	// deadWorkers are worker ids (host:port) found lost, with since when
	// and how: tasks still shown RUNNING there are not running until
	// Connect moves them.
	deadWorkers map[string]lostWorker
	// at is when the poll was made.
	at time.Time
	// err is why the Connect cluster could not be read, or nil.
	err error
}

// lostWorker is a worker the poll found dead.
type lostWorker struct {
	// since is when a poll first found it lost.
	since time.Time
	// left: it is no longer a member of the workers' group on Kafka (its
	// session timed out); else it does not answer at its registered URL.
	left bool
}

// severity orders states for "the worst wins".
var severity = map[task.State]int{task.StateRunning: 0, task.StateStarting: 1, task.StateDrifted: 2, task.StateDegraded: 3,
	task.StatePaused: 4, task.StateFailed: 5}

// verdict maps the states Connect shows for a flow's connectors to
// kmirror's: the worst wins, with a reason an operator can act on.
// FAILED > PAUSED (not asked for) > DEGRADED > DRIFTED > STARTING >
// RUNNING. copier is the connector whose tasks copy the records (the source
// connector); planned are the configurations kmirror deployed, by
// connector, which a listed one must still have.
//
// held are the connectors kmirror keeps stopped (connectplan.Connector.Held):
// stopped is how they should be.
//
// young says the connectors were deployed moments before the poll: a
// worker answers from its own view of Connect's config topic, which may
// not hold them yet, so one not listed is still being deployed, not gone.
func verdict(connectors []string, copier, clusterName string, planned map[string]map[string]string, held map[string]bool, o observed, young bool) (state task.State, reason string) {
	if o.err != nil {
		// The connectors may well still copy; kmirror cannot tell.
		return task.StateDegraded, fmt.Sprintf("Kafka Connect cluster %s does not answer: %v (its connectors may still be copying; check the workers)", clusterName, o.err)
	}
	state = task.StateRunning
	onDead := stranded{}
	copiers, copiersDead := 0, 0
	worse := func(s task.State, r string) {
		if severity[s] > severity[state] {
			state, reason = s, r
		}
	}
	for _, name := range connectors {
		v, ok := o.views[name]
		if !ok && young {
			worse(task.StateStarting, fmt.Sprintf("connector %s is being deployed on Kafka Connect cluster %s", name, clusterName))
			continue
		}
		if !ok {
			worse(task.StateFailed, fmt.Sprintf("connector %s is not on Kafka Connect cluster %s (deleted outside kmirror?): restart the task to deploy it again", name, clusterName))
			continue
		}
		if keys := configDrift(planned[name], v.Info.Config); v.Info.Config != nil && len(keys) > 0 {
			worse(task.StateDrifted, fmt.Sprintf("connector %s was changed on Kafka Connect cluster %s outside kmirror (%s): re-apply the task to put kmirror's configuration back", name, clusterName, strings.Join(keys, ", ")))
		}
		st := v.Status
		if _, after := planned[name]; held[name] && after && st.Connector.State != connect.StateStopped && st.Connector.State != connect.StateFailed {
			worse(task.StateDrifted, fmt.Sprintf("connector %s is %s on Kafka Connect cluster %s but must stay stopped while the task's way back runs (it would copy the way back's records back again): re-apply the task to stop it", name, strings.ToLower(st.Connector.State), clusterName))
		}
		switch st.Connector.State {
		case connect.StateFailed:
			worse(task.StateFailed, fmt.Sprintf("connector %s failed on worker %s: %s", name, st.Connector.WorkerID, summarize(st.Connector.Trace)))
		case connect.StateStopped:
			if !held[name] {
				worse(task.StatePaused, fmt.Sprintf("connector %s is %s on Kafka Connect (paused outside kmirror?): resume the task", name, strings.ToLower(st.Connector.State)))
			}
		case connect.StatePaused:
			worse(task.StatePaused, fmt.Sprintf("connector %s is %s on Kafka Connect (paused outside kmirror?): resume the task", name, strings.ToLower(st.Connector.State)))
		case connect.StateUnassigned, connect.StateRestarting:
			worse(task.StateStarting, fmt.Sprintf("connector %s is %s", name, strings.ToLower(st.Connector.State)))
		}
		if _, dead := o.deadWorkers[st.Connector.WorkerID]; dead && st.Connector.State == connect.StateRunning {
			onDead.add(st.Connector.WorkerID, "connector "+name)
		}
		tasks := slices.Clone(st.Tasks)
		slices.SortFunc(tasks, func(a, b connect.TaskState) int { return a.ID - b.ID })
		for _, ts := range tasks {
			who := fmt.Sprintf("%s task %d", name, ts.ID)
			switch {
			case ts.State == connect.StateFailed:
				worse(task.StateFailed, fmt.Sprintf("%s failed on worker %s: %s (restart the task once the cause is fixed)", who, ts.WorkerID, summarize(ts.Trace)))
			case ts.State == connect.StatePaused || ts.State == connect.StateStopped:
				worse(task.StatePaused, fmt.Sprintf("%s is %s on Kafka Connect (paused outside kmirror?): resume the task", who, strings.ToLower(ts.State)))
			case ts.State == connect.StateUnassigned:
				worse(task.StateDegraded, fmt.Sprintf("%s is unassigned: no worker runs it (its worker left; Connect assigns it again after scheduled.rebalance.max.delay.ms)", who))
			case ts.State == connect.StateRestarting:
				worse(task.StateStarting, who+" is restarting")
			case o.isDead(ts.WorkerID):
				onDead.add(ts.WorkerID, who)
				if name == copier {
					copiersDead++
				}
			}
		}
		if name == copier {
			copiers = len(st.Tasks)
		}
	}
	if len(onDead) > 0 {
		worse(task.StateDegraded, onDead.reason(o, copiersDead, copiers))
	}
	return state, reason
}

// configDrift are the settings, sorted, in which a connector's configuration
// as Connect holds it differs from planned: changed, added or removed.
// Connect adds the connector's name, which is no difference.
func configDrift(planned, shown map[string]string) []string {
	var keys []string
	for k, v := range planned {
		if got, ok := shown[k]; !ok || got != v {
			keys = append(keys, k)
		}
	}
	for k := range shown {
		if _, ok := planned[k]; !ok && k != "name" {
			keys = append(keys, k)
		}
	}
	sort.Strings(keys)
	return keys
}

func (o observed) isDead(worker string) bool {
	_, dead := o.deadWorkers[worker]
	return dead
}

// stranded are, per lost worker, what of a flow Connect
// still shows running there.
type stranded map[string][]string

func (s stranded) add(worker, what string) { s[worker] = append(s[worker], what) }

// reason says which workers are lost, how and since when, what of the
// flow they held, whether records are still copied meanwhile, and when
// Connect moves the work: what an operator needs to decide whether to
// wait or act.
func (s stranded) reason(o observed, copiersDead, copiers int) string {
	workers := make([]string, 0, len(s))
	for w := range s {
		workers = append(workers, w)
	}
	sort.Strings(workers)
	parts := make([]string, len(workers))
	for i, w := range workers {
		lost := o.deadWorkers[w]
		format := "worker %s does not answer (since %s, %s): %s run there"
		if lost.left {
			format = "worker %s has left the Connect group (since %s, %s): %s run there"
		}
		parts[i] = fmt.Sprintf(format, w, lost.since.UTC().Format("15:04:05 UTC"),
			o.at.Sub(lost.since).Round(time.Second), strings.Join(s[w], ", "))
	}
	copying := "the records are still copied by the tasks on live workers"
	switch {
	case copiersDead > 0 && copiersDead >= copiers:
		copying = "no record is copied until they move"
	case copiersDead > 0:
		copying = fmt.Sprintf("only the partitions of the other %d copy tasks are copied until they move", copiers-copiersDead)
	}
	return strings.Join(parts, "; ") + "; " + copying + ". Connect moves them to a live worker once the worker's session has timed out (session.timeout.ms) and scheduled.rebalance.max.delay.ms has passed (5 minutes unless set); a worker back within that time takes them back"
}

// summarize keeps a stack trace's first line (the exception and its
// message), shortened: the status shows what failed, the worker's log the
// rest.
func summarize(trace string) string {
	line, _, _ := strings.Cut(strings.TrimSpace(trace), "\n")
	line = strings.TrimSpace(line)
	if line == "" {
		return "no reason given (see the worker's log)"
	}
	if len(line) > traceSummaryLength {
		line = line[:traceSummaryLength] + "…"
	}
	return line
}

package service

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/engine"
	"github.com/kmirror/kmirror/internal/store"
	"github.com/kmirror/kmirror/internal/task"
)

// TaskInfo is a task as the console and the API show it: its parameters
// (the peer password never, only whether one is set), what the operator
// asked for, and what it is doing.
type TaskInfo struct {
	Name    string       `json:"name"`
	Type    string       `json:"type"`
	Current task.Current `json:"current"`
	Peer    PeerInfo     `json:"peer"`
	Rules   task.Rules   `json:"rules"`
	// Engine runs the task: "embedded" (in-process) or "connect:<name>".
	Engine string `json:"engine"`
	// DesiredState is running or paused: what the operator asked for.
	DesiredState task.DesiredState `json:"desired_state"`
	Status       engine.TaskStatus `json:"status"`
	LastAction   LastAction        `json:"last_action"`
	// InternalTopics are the topics the task keeps besides the data.
	InternalTopics []InternalTopic `json:"internal_topics"`
	CreatedAt      time.Time       `json:"created_at"`
	// Warnings are set by CreateTask only: rules the task bends without
	// breaking (a duplicate without offset sync, for one).
	Warnings []string `json:"warnings,omitempty"`
}

// PeerInfo is the peer without its password.
type PeerInfo struct {
	task.Peer
	PasswordSet bool `json:"password_set"`
	// ClientCert describes the client certificate; ClientKeySet says its
	// key is sealed. The OAuth client secret shows as the mask when set.
	ClientCert   *cluster.CertInfo `json:"client_cert,omitempty"`
	ClientKeySet bool              `json:"client_key_set,omitempty"`
}

// peerInfo shows a stored peer: no secret, only whether each is set.
func peerInfo(p task.Peer, passwordSet, credentialsSealed bool) PeerInfo {
	p = p.WithSecrets(cluster.Secrets{})
	c := credentialsOf(p.Settings(), credentialsSealed)
	if c.OAuth != nil {
		p.OAuth = *c.OAuth
	}
	return PeerInfo{Peer: p, PasswordSet: passwordSet, ClientCert: c.ClientCert, ClientKeySet: c.ClientKeySet}
}

// Credentials of the peer, as a cluster's are shown.
func (p PeerInfo) Credentials() Credentials {
	c := Credentials{ClientCertPEM: p.ClientCertPEM, ClientCert: p.ClientCert, ClientKeySet: p.ClientKeySet}
	if p.OAuth != (cluster.OAuth{}) {
		o := p.OAuth
		c.OAuth = &o
	}
	return c
}

// LastAction is the operator's last action on a task.
type LastAction struct {
	Action task.Action `json:"action"`
	By     string      `json:"by"`
	At     time.Time   `json:"at"`
}

// InternalTopic is one of a task's internal topics and the side it lives on.
type InternalTopic = task.InternalTopic

// taskLocks serialises state changes of one task (pause, resume, restart,
// delete) without making one task's graceful stop hold up another's.
type taskLocks struct {
	mu    sync.Mutex
	locks map[string]*sync.Mutex
}

func (l *taskLocks) lock(name string) func() {
	l.mu.Lock()
	if l.locks == nil {
		l.locks = map[string]*sync.Mutex{}
	}
	m, ok := l.locks[name]
	if !ok {
		m = &sync.Mutex{}
		l.locks[name] = m
	}
	l.mu.Unlock()
	m.Lock()
	return m.Unlock
}

// passwordLabel binds a task's sealed peer password to the task, so it
// cannot be opened as another task's or a cluster's.
func passwordLabel(name string) string { return "task/" + name }

func peerCredentialsLabel(name string) string { return "task-credentials/" + name }

func invalidTask(p Problems) *Error {
	return &Error{Code: CodeInvalidTask, Message: "the task is not valid", Problems: p}
}

func (s *Service) requireTasks() error {
	if s.taskStore == nil || s.runner == nil {
		return errors.New("service: tasks need Deps.TaskStore and Deps.Runner")
	}
	return nil
}

// CreateTask validates a task against every rule of docs/TASKS.md (Task fields, Cross-task rules), stores it and
// starts it, recorded as done by the caller (ActorFrom). Every broken rule
// comes back at once in an invalid_task Error: the field rules, unregistered
// clusters, a replication factor above the target's broker count (checked
// on the live cluster; an unreachable target is a problem naming it), and
// the rules across tasks, which are checked in the same store transaction as
// the insert. A task that is stored but cannot start is returned with state
// FAILED and the reason.
func (s *Service) CreateTask(ctx context.Context, in task.Task) (_ TaskInfo, err error) {
	defer s.audit(ctx, "task.create", in.Name, &err)
	if err := s.allow(ctx, RoleOperator); err != nil {
		return TaskInfo{}, err
	}
	return s.createTask(ctx, in, nil)
}

// prepareFunc runs once a new task passed every check, before it is
// stored and started: adoption stops the connectors it replaces there and
// seeds the task's engine with their progress. undo (may be nil) reverts
// that when the task is not stored after all.
type prepareFunc func(t task.Task, current, peer cluster.Settings) (undo func(), err error)

// createTask is CreateTask for a caller already allowed, with prepare (may
// be nil) run between the checks and the insert.
func (s *Service) createTask(ctx context.Context, in task.Task, prepare prepareFunc) (TaskInfo, error) {
	if err := s.requireTasks(); err != nil {
		return TaskInfo{}, err
	}
	t := NormalizeTask(in)
	p := ValidateTask(t)
	current, peer, rp, err := s.resolveTask(ctx, t, p)
	if err != nil {
		return TaskInfo{}, err
	}
	p = append(p, rp...)
	if err := s.resolveEngine(ctx, &t, &p); err != nil {
		return TaskInfo{}, err
	}
	if len(p) == 0 {
		s.checkOnEngine(t, current, peer, &p)
	}
	if len(p) > 0 {
		return TaskInfo{}, invalidTask(p)
	}
	if p := s.checkReplicationFactor(ctx, t, current, peer); len(p) > 0 {
		return TaskInfo{}, invalidTask(p)
	}
	addrs, err := s.clusterAddrs(ctx)
	if err != nil {
		return TaskInfo{}, err
	}

	now := time.Now().UTC().Truncate(time.Second)
	rec := store.Task{Spec: t, DesiredState: task.DesiredRunning, LastAction: task.ActionCreate, LastActionBy: actorName(ctx),
		LastActionAt: now, CreatedAt: now}
	if rec.PeerPasswordCiphertext, rec.PeerCredentialsCiphertext, err = s.sealSecrets(t.Peer.Secrets(), passwordLabel(t.Name), peerCredentialsLabel(t.Name)); err != nil {
		return TaskInfo{}, fmt.Errorf("peer of task %q: %w", t.Name, err)
	}
	undo := func() {}
	if prepare != nil {
		// prepare deploys under the task's name: never over a stored
		// task's deployment (the insert below still decides a race).
		if _, err := s.taskStore.Task(ctx, t.Name); err == nil {
			var p Problems
			p.Add("name", "a task named %q already exists: choose another name", t.Name)
			return TaskInfo{}, invalidTask(p)
		} else if !errors.Is(err, store.ErrNotFound) {
			return TaskInfo{}, err
		}
		u, err := prepare(t, current, peer)
		if err != nil {
			return TaskInfo{}, err
		}
		if u != nil {
			undo = u
		}
	}
	warnings, err := s.insertChecked(ctx, t, rec, addrs)
	if err != nil {
		undo()
	}
	switch {
	case errors.Is(err, store.ErrExists):
		var p Problems
		p.Add("name", "a task named %q already exists: choose another name", t.Name)
		return TaskInfo{}, invalidTask(p)
	case errors.Is(err, store.ErrNotFound):
		var p Problems
		p.Add("current.cluster", "a cluster of this task was removed while it was being created: register it again")
		return TaskInfo{}, invalidTask(p)
	case err != nil:
		return TaskInfo{}, err
	}
	s.log.Info("task created", "task", t.Name, "by", actorName(ctx), "current", t.Current.Cluster, "direction", t.Rules.Direction)
	s.startTask(ctx, t, current, peer)
	info, err := s.Task(ctx, t.Name)
	info.Warnings = warnings
	return info, err
}

// errTasksChanged: another task was stored between the checks against the
// other tasks and the insert.
var errTasksChanged = errors.New("the stored tasks changed during the check")

// checkRetries is how often insertChecked checks again when other tasks
// were stored meanwhile, before it checks under the write lock.
const checkRetries = 3

// insertChecked stores rec once t passes the rules across tasks. The checks
// (regex searches among them, bounded but not free) run on a snapshot of
// the stored tasks before the store's write lock is taken; under the lock
// only the snapshot's being current is verified, so slow checks never hold
// up other writers. Should tasks have been stored meanwhile, it starts over,
// and after checkRetries the checks run under the lock.
func (s *Service) insertChecked(ctx context.Context, t task.Task, rec store.Task, addrs func(string) []string) ([]string, error) {
	specsOf := func(recs []store.Task) []task.Task {
		specs := make([]task.Task, len(recs))
		for i, r := range recs {
			specs[i] = r.Spec
		}
		return specs
	}
	for attempt := 0; ; attempt++ {
		underLock := attempt >= checkRetries
		var snapshot []task.Task
		var warnings []string
		if !underLock {
			recs, err := s.taskStore.ListTasks(ctx)
			if err != nil {
				return nil, err
			}
			snapshot = specsOf(recs)
			p, w := CheckAgainstTasks(t, snapshot, addrs)
			if len(p) > 0 {
				return nil, invalidTask(p)
			}
			warnings = w
		}
		err := s.taskStore.CreateTask(ctx, rec, func(others []store.Task) error {
			specs := specsOf(others)
			if !underLock {
				// Fewer tasks only remove problems; any new or changed one
				// needs the checks again.
				if !subsetOf(specs, snapshot) {
					return errTasksChanged
				}
				return nil
			}
			p, w := CheckAgainstTasks(t, specs, addrs)
			if len(p) > 0 {
				return invalidTask(p)
			}
			warnings = w
			return nil
		})
		if errors.Is(err, errTasksChanged) {
			continue
		}
		return warnings, err
	}
}

// subsetOf reports whether every task of a is in b, configuration alike.
func subsetOf(a, b []task.Task) bool {
	byName := make(map[string]task.Task, len(b))
	for _, x := range b {
		byName[x.Name] = x
	}
	for _, x := range a {
		y, ok := byName[x.Name]
		if !ok || !reflect.DeepEqual(x, y) {
			return false
		}
	}
	return true
}

// resolveTask finds the clusters of a normalized task. Unregistered
// clusters are problems; fields that already have problems (p) are not
// looked up again.
func (s *Service) resolveTask(ctx context.Context, t task.Task, p Problems) (current, peer cluster.Settings, rp Problems, err error) {
	lookup := func(field, what, name string) (cluster.Settings, bool, error) {
		if len(p.For(field)) > 0 || name == "" {
			return cluster.Settings{}, false, nil
		}
		cs, err := s.ClusterSettings(ctx, name)
		if IsCode(err, CodeNotFound) {
			rp.Add(field, "%s %q is not registered: add it under Instances first (kmirror instance add)", what, name)
			return cluster.Settings{}, false, nil
		}
		return cs, err == nil, err
	}
	var ok bool
	if current, ok, err = lookup("current.cluster", "current cluster", t.Current.Cluster); err != nil || !ok {
		return current, peer, rp, err
	}
	switch t.Peer.ConfigType {
	case task.PeerByCluster:
		if peer, ok, err = lookup("peer.cluster", "peer cluster", t.Peer.Cluster); err != nil || !ok {
			return current, peer, rp, err
		}
	case task.PeerByAddress:
		_, peer, err = t.Resolve(func(string) (cluster.Settings, bool) { return current, true })
		if err != nil {
			return current, peer, rp, err
		}
		// Addresses already refused by their rules are not looked up.
		if len(p.For("peer.address")) == 0 {
			dp, err := s.checkDestination(ctx, t.Peer.Address, t.Peer.OAuth.TokenEndpoint)
			if err != nil {
				return current, peer, rp, err
			}
			rp = append(rp, dp...)
		}
	}
	return current, peer, rp, nil
}

// side is one cluster of a task, for messages and the checks that need its
// live state.
type side struct {
	role     string // current or peer
	field    string // the field naming it
	label    string // how users know it
	settings cluster.Settings
}

func sides(t task.Task, current, peer cluster.Settings) (cur, per side) {
	cur = side{role: "current", field: "current.cluster", label: fmt.Sprintf("current cluster %q", t.Current.Cluster), settings: current}
	per = side{role: "peer", field: "peer.cluster", label: fmt.Sprintf("peer cluster %q", t.Peer.Cluster), settings: peer}
	if t.Peer.ConfigType != task.PeerByCluster {
		per.field = "peer.address"
		per.label = "the peer at " + strings.Join(t.Peer.Address, ",")
	}
	return cur, per
}

// targets are the sides a task writes topics to.
// The current cluster comes first.
func targets(t task.Task, cur, per side) []side {
	flows := t.Flows()
	var out []side
	for _, sd := range []struct {
		s task.Side
		side
	}{{task.SideCurrent, cur}, {task.SidePeer, per}} {
		if slices.ContainsFunc(flows, func(f task.FlowSpec) bool { return f.Target == sd.s }) {
			out = append(out, sd.side)
		}
	}
	return out
}

// checkReplicationFactor asks each target cluster for its broker count.
// Returned problems are rule violations, then unreachable targets (CreateTask
// refuses both; the dry run describes the clusters itself and only warns
// about those it cannot reach).
func (s *Service) checkReplicationFactor(ctx context.Context, t task.Task, current, peer cluster.Settings) Problems {
	cur, per := sides(t, current, peer)
	var broken, unreachable Problems
	for _, tg := range targets(t, cur, per) {
		d, err := s.kafka.Describe(ctx, tg.settings)
		if err != nil {
			unreachable.Add(tg.field, "cannot reach %s to check the replication factor against its broker count: %v. Run the connectivity check (Start check) and fix what it reports", tg.label, err)
			continue
		}
		checkBrokers(&broken, t, tg, d.Brokers)
	}
	return append(broken, unreachable...)
}

// checkBrokers is the rule that a target has at least replication factor
// brokers: the topics this task creates there could not be made otherwise.
func checkBrokers(p *Problems, t task.Task, target side, brokers int) {
	if t.Rules.ReplicationFactor > brokers {
		p.Add("rules.replication_factor", "replication factor %d is more than the %d broker(s) of %s, where this task creates topics: use at most %d",
			t.Rules.ReplicationFactor, brokers, target.label, brokers)
	}
}

// clusterAddrs lets the cross-task rules tell that a peer by address is a
// registered cluster.
func (s *Service) clusterAddrs(ctx context.Context) (func(string) []string, error) {
	recs, err := s.clusters.ListClusters(ctx)
	if err != nil {
		return nil, err
	}
	m := make(map[string][]string, len(recs))
	for _, r := range recs {
		m[r.Name] = r.BootstrapServers
	}
	return func(name string) []string { return m[name] }, nil
}

// startTask starts a task in the runner and records why when it cannot.
func (s *Service) startTask(ctx context.Context, t task.Task, current, peer cluster.Settings) {
	msg := ""
	r, err := s.runnerFor(t)
	if err == nil {
		err = r.Start(t, current, peer)
	}
	if err != nil {
		msg = err.Error()
		s.log.Error("task could not start", "task", t.Name, "err", err)
	}
	if err := s.taskStore.SetTaskError(ctx, t.Name, msg); err != nil {
		s.log.Error("task error not recorded", "task", t.Name, "err", err)
	}
}

// startStored opens a stored task's password, resolves its clusters and
// starts it.
func (s *Service) startStored(ctx context.Context, rec store.Task) {
	t, current, peer, err := s.openTask(ctx, rec)
	if err != nil {
		s.log.Error("task could not start", "task", rec.Name(), "err", err)
		if err := s.taskStore.SetTaskError(ctx, rec.Name(), err.Error()); err != nil {
			s.log.Error("task error not recorded", "task", rec.Name(), "err", err)
		}
		return
	}
	s.startTask(ctx, t, current, peer)
}

// openTask is a stored task ready to run: its peer password opened and its
// clusters resolved. Never show the result.
func (s *Service) openTask(ctx context.Context, rec store.Task) (task.Task, cluster.Settings, cluster.Settings, error) {
	t := rec.Spec
	x, err := s.openSecrets(rec.PeerPasswordCiphertext, passwordLabel(t.Name), rec.PeerCredentialsCiphertext, peerCredentialsLabel(t.Name))
	if err != nil {
		return t, cluster.Settings{}, cluster.Settings{}, fmt.Errorf("open the peer secrets of task %q: %w (was the data directory's secret.key replaced? delete and create the task again)", t.Name, err)
	}
	t.Peer = t.Peer.WithSecrets(x)
	var lookupErr error
	current, peer, err := t.Resolve(func(name string) (cluster.Settings, bool) {
		cs, err := s.ClusterSettings(ctx, name)
		if err != nil && !IsCode(err, CodeNotFound) {
			lookupErr = err
		}
		return cs, err == nil
	})
	if lookupErr != nil {
		return t, current, peer, lookupErr
	}
	if err != nil {
		return t, current, peer, err
	}
	if t.Failback, err = s.preparedFailback(ctx, t); err != nil {
		return t, current, peer, err
	}
	t.Returns, err = s.returns(ctx, t)
	return t, current, peer, err
}

// StartTasks starts every stored task whose desired state is running and
// that does not run yet; `kmirror serve` calls it once at start. They resume
// from committed progress. A task that cannot start is logged and shows
// FAILED with the reason; only a store failure is returned.
func (s *Service) StartTasks(ctx context.Context) error {
	if err := s.requireTasks(); err != nil {
		return err
	}
	recs, err := s.taskStore.ListTasks(ctx)
	if err != nil {
		return err
	}
	for _, rec := range recs {
		if rec.DesiredState != task.DesiredRunning {
			continue
		}
		if _, running := s.statusOf(rec.Spec); running {
			continue
		}
		s.startStored(ctx, rec)
	}
	return nil
}

// ListTasks returns every task ordered by name, with its status.
func (s *Service) ListTasks(ctx context.Context) ([]TaskInfo, error) {
	if err := s.requireTasks(); err != nil {
		return nil, err
	}
	recs, err := s.taskStore.ListTasks(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]TaskInfo, 0, len(recs))
	for _, r := range recs {
		out = append(out, s.taskInfo(r))
	}
	return out, nil
}

// Task returns one task with its status, or a not_found Error.
func (s *Service) Task(ctx context.Context, name string) (TaskInfo, error) {
	rec, err := s.storedTask(ctx, name)
	if err != nil {
		return TaskInfo{}, err
	}
	return s.taskInfo(rec), nil
}

func (s *Service) storedTask(ctx context.Context, name string) (store.Task, error) {
	if err := s.requireTasks(); err != nil {
		return store.Task{}, err
	}
	rec, err := s.taskStore.Task(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return store.Task{}, notFound("no task named %q", name)
	}
	return rec, err
}

func (s *Service) taskInfo(r store.Task) TaskInfo {
	t := r.Spec
	return TaskInfo{
		Name: t.Name, Type: t.Type, Current: t.Current, Rules: t.Rules, Engine: t.EngineOrDefault(),
		Peer:           peerInfo(t.Peer, r.PeerPasswordCiphertext != nil, r.PeerCredentialsCiphertext != nil),
		DesiredState:   r.DesiredState,
		Status:         s.status(r),
		LastAction:     LastAction{Action: r.LastAction, By: r.LastActionBy, At: r.LastActionAt},
		InternalTopics: t.InternalTopics(),
		CreatedAt:      r.CreatedAt,
	}
}

// status merges what the operator asked for with what the engine does.
func (s *Service) status(r store.Task) engine.TaskStatus {
	st, running := s.statusOf(r.Spec)
	switch {
	case r.DesiredState == task.DesiredPaused:
		paused := engine.TaskStatus{Name: r.Name(), State: task.StatePaused, Flows: []engine.FlowStatus{}}
		if running && st.State == task.StatePaused {
			paused.Reason = st.Reason // an engine whose pause has not taken yet says why
		}
		return paused
	case running:
		if st.Flows == nil {
			st.Flows = []engine.FlowStatus{}
		}
		return st
	case r.LastError != "":
		return engine.TaskStatus{Name: r.Name(), State: task.StateFailed, Reason: "could not start: " + r.LastError, Flows: []engine.FlowStatus{}}
	default:
		return engine.TaskStatus{Name: r.Name(), State: task.StateFailed, Reason: "not running in this kmirror process: restart the task", Flows: []engine.FlowStatus{}}
	}
}

// DeleteTask stops a task (gracefully: its progress is committed) and
// deletes it. Its progress consumer groups and internal topics stay on the
// clusters, so a task created again under the same name resumes.
func (s *Service) DeleteTask(ctx context.Context, name string) (err error) {
	defer s.audit(ctx, "task.delete", name, &err)
	if err := s.allow(ctx, RoleOperator); err != nil {
		return err
	}
	rec, err := s.storedTask(ctx, name)
	if err != nil {
		return err
	}
	defer s.taskLocks.lock(name)()
	if err := s.removeTask(rec.Spec); err != nil {
		return fmt.Errorf("task %q stays: %w", name, err)
	}
	if err := s.taskStore.DeleteTask(ctx, name); errors.Is(err, store.ErrNotFound) {
		return notFound("no task named %q", name)
	} else if err != nil {
		return err
	}
	s.log.Info("task deleted", "task", name, "by", actorName(ctx))
	s.taskDeleted(name)
	return nil
}

// PauseTask stops a task gracefully and keeps it stopped, across restarts
// of kmirror too, until ResumeTask. Pausing a paused task changes nothing.
func (s *Service) PauseTask(ctx context.Context, name string) (TaskInfo, error) {
	return s.changeState(ctx, name, task.ActionPause)
}

// ResumeTask starts a paused task again from its committed progress.
// Resuming a running task changes nothing.
func (s *Service) ResumeTask(ctx context.Context, name string) (TaskInfo, error) {
	return s.changeState(ctx, name, task.ActionResume)
}

// RestartTask stops a task gracefully and starts it again, which clears
// partitions that failed for good (a record too large for the target, for
// one) once their cause is fixed. A paused task is started.
func (s *Service) RestartTask(ctx context.Context, name string) (TaskInfo, error) {
	return s.changeState(ctx, name, task.ActionRestart)
}

// ReapplyTask writes kmirror's configuration again over the connectors of a
// task on Kafka Connect that were changed there outside kmirror (the task
// shows DRIFTED, naming the settings); the others keep their configuration
// (as any start, every connector is resumed and failed instances
// restarted). Operators and admins; audited.
func (s *Service) ReapplyTask(ctx context.Context, name string) (TaskInfo, error) {
	return s.changeState(ctx, name, task.ActionReapply)
}

func (s *Service) changeState(ctx context.Context, name string, action task.Action) (_ TaskInfo, err error) {
	defer s.audit(ctx, "task."+string(action), name, &err)
	if err := s.allow(ctx, RoleOperator); err != nil {
		return TaskInfo{}, err
	}
	if _, err := s.storedTask(ctx, name); err != nil {
		return TaskInfo{}, err
	}
	defer s.taskLocks.lock(name)()
	rec, err := s.storedTask(ctx, name) // again, under the lock
	if err != nil {
		return TaskInfo{}, err
	}
	_, running := s.statusOf(rec.Spec)
	desired := task.DesiredRunning
	switch action {
	case task.ActionPause:
		desired = task.DesiredPaused
		if rec.DesiredState == task.DesiredPaused && !running {
			return s.taskInfo(rec), nil
		}
		s.stopTask(rec.Spec)
	case task.ActionResume:
		if rec.DesiredState == task.DesiredRunning && running {
			return s.taskInfo(rec), nil
		}
	case task.ActionRestart:
		s.stopTask(rec.Spec)
	case task.ActionReapply:
		// Started again as it runs: the Connect engine writes only the
		// connectors whose configuration differs from kmirror's.
		if !onConnect(rec.Spec) {
			return TaskInfo{}, &Error{Code: CodeInvalidRequest, Message: fmt.Sprintf("task %s runs on the embedded engine, whose configuration is kmirror's alone: there is nothing to re-apply", name)}
		}
		if rec.DesiredState != task.DesiredRunning {
			return TaskInfo{}, &Error{Code: CodeInvalidRequest, Message: fmt.Sprintf("task %s is paused: resume it, which deploys kmirror's configuration", name)}
		}
	case task.ActionCreate, task.ActionDelete: // CreateTask's and DeleteTask's
		return TaskInfo{}, fmt.Errorf("%s is not a change of a task's state", action)
	}
	now := time.Now().UTC().Truncate(time.Second)
	if err := s.taskStore.SetTaskState(ctx, name, desired, action, actorName(ctx), now); errors.Is(err, store.ErrNotFound) {
		return TaskInfo{}, notFound("no task named %q", name)
	} else if err != nil {
		return TaskInfo{}, err
	}
	rec.DesiredState = desired
	if desired == task.DesiredRunning {
		if _, running := s.statusOf(rec.Spec); !running || action == task.ActionReapply {
			s.startStored(ctx, rec)
		}
	}
	s.log.Info("task "+string(action), "task", name, "by", actorName(ctx))
	return s.Task(ctx, name)
}

// TasksUsed implements TaskCounter on the task store.
type storeCounter struct{ store.Tasks }

func (c storeCounter) TasksUsed(ctx context.Context, cluster string) (int, error) {
	return c.CountTasks(ctx, cluster)
}

// Package connectengine runs tasks as MirrorMaker 2 connectors on Kafka
// Connect clusters the user operates: kmirror stays the control plane
// (deploy, pause, resume, delete, status) while the data moves on Connect's
// workers, which survive the loss of the machine kmirror runs on.
//
// It answers the same Runner calls as the in-process engine. Status is read
// from one poll per Connect cluster (GET /connectors?expand=status&
// expand=info), never one request per task per look. A worker that dies
// shows as DEGRADED, naming it, before Connect moves its work: once it
// leaves the workers' group on Kafka (its session timed out), or at once
// when it is a registered URL that stops answering. Addresses the workers
// advertise are never needed (poller says why).
//
// Stopping kmirror never stops a connector: Close only ends the polls.
package connectengine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"reflect"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/connect"
	"github.com/kmirror/kmirror/internal/connect/connectplan"
	"github.com/kmirror/kmirror/internal/engine"
	"github.com/kmirror/kmirror/internal/task"
)

// Deps are the engine's collaborators.
type Deps struct {
	// Cluster resolves a Connect cluster by name (its password opened).
	Cluster func(ctx context.Context, name string) (connectplan.Cluster, error)
	// Plan turns a task into its connectors on a Connect cluster, or says
	// why it cannot run there; nil is connectplan.Build (tests plan their
	// own).
	Plan func(t task.Task, current, peer cluster.Settings, on connectplan.Cluster) ([]connectplan.Connector, error)
	// Names are the connectors Plan makes for t, for deleting a task that
	// is not running here; nil is connectplan.Names.
	Names  func(t task.Task) []string
	Logger *slog.Logger
	// PollInterval is how often each Connect cluster's state is read;
	// default 5 s.
	PollInterval time.Duration
}

// Engine runs tasks on Kafka Connect. Safe for concurrent use.
type Engine struct {
	d   Deps
	log *slog.Logger

	mu      sync.Mutex
	tasks   map[string]*deployment // running here, by task name
	waiting map[string]*pending    // to deploy once Connect answers, by task name
	pausing map[string]*pending    // stopped here, to pause on Connect once it answers
	pollers map[string]*poller     // by Connect cluster name
	closed  bool
}

type deployment struct {
	cluster    string
	connectors []connectplan.Connector
	progress   *progress
	at         time.Time // when it was deployed
	// task and its clusters as deployed, for failovers (failover.go).
	task          task.Task
	current, peer cluster.Settings
	// restarts are its automatic restarts (restart.go).
	restarts *restarts
}

// New makes an Engine.
func New(d Deps) *Engine {
	if d.Logger == nil {
		d.Logger = slog.Default()
	}
	if d.PollInterval <= 0 {
		d.PollInterval = 5 * time.Second
	}
	if d.Plan == nil {
		d.Plan = connectplan.Build
	}
	if d.Names == nil {
		d.Names = connectplan.Names
	}
	return &Engine{d: d, log: d.Logger, tasks: map[string]*deployment{}, waiting: map[string]*pending{},
		pausing: map[string]*pending{}, pollers: map[string]*poller{}}
}

// deployGrace is how long after deploying a connector not listed by
// Connect counts as still being deployed (workers catch up with the config
// topic within a poll or two) rather than deleted.
const deployGrace = 30 * time.Second

// requestTimeout bounds one action on Connect (deploying a task's
// connectors, pausing them).
const requestTimeout = 60 * time.Second

// Start deploys the task's connectors (creating them, or bringing their
// configuration up to date) and resumes them if they were paused. Starting
// a task twice is harmless: Connect keeps one copy of each connector.
//
// When Connect cannot be reached or answers that it is busy (a worker
// down, a rebalance: connect.IsTransient), Start does not fail: the task
// shows DEGRADED with the reason and is deployed as soon as Connect
// answers, tried again every poll interval. A kmirror started while its
// Connect cluster is away so takes its tasks back by itself.
func (e *Engine) Start(t task.Task, current, peer cluster.Settings) error {
	e.stopPausing(t.Name)
	err := e.start(t, current, peer)
	if err == nil || !connect.IsTransient(err) {
		return err
	}
	e.log.Warn("task not deployed on Kafka Connect yet; trying again", "task", t.Name, "error", err)
	e.pend(t, current, peer, err)
	return nil
}

// pending is a task waiting for its Connect cluster to deploy it, or to
// pause it.
type pending struct {
	mu     sync.Mutex
	reason error
	quit   chan struct{}
	done   chan struct{} // closed when its retry has returned
}

func (p *pending) why() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.reason
}

// pend watches t as not deployed yet, trying start again until it works,
// the task is stopped or started anew, or the engine closes.
func (e *Engine) pend(t task.Task, current, peer cluster.Settings, why error) {
	// On success deployed() ends the wait.
	e.retry(e.waiting, t.Name, why, func() error { return e.start(t, current, peer) },
		"task deployed on Kafka Connect after waiting for it")
}

// retry keeps try going every poll interval, as name's entry in m (which
// says why meanwhile), until it works, the entry is replaced or removed
// (unretry), or the engine closes.
func (e *Engine) retry(m map[string]*pending, name string, why error, try func() error, done string) {
	p := &pending{reason: why, quit: make(chan struct{}), done: make(chan struct{})}
	e.unretry(m, name)
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return
	}
	m[name] = p
	e.mu.Unlock()
	go func() {
		defer close(p.done)
		tick := time.NewTicker(e.d.PollInterval)
		defer tick.Stop()
		for {
			select {
			case <-p.quit:
				return
			case <-tick.C:
			}
			err := try()
			e.mu.Lock()
			mine := m[name] == p
			if mine && err == nil {
				delete(m, name)
			}
			e.mu.Unlock()
			if err == nil {
				e.log.Info(done, "task", name)
				return
			}
			if !mine {
				return
			}
			p.mu.Lock()
			p.reason = err
			p.mu.Unlock()
		}
	}()
}

// unretry ends name's retry in m, if any, and returns it (its done closes
// once an attempt in flight has returned).
func (e *Engine) unretry(m map[string]*pending, name string) *pending {
	e.mu.Lock()
	defer e.mu.Unlock()
	p, ok := m[name]
	if !ok {
		return nil
	}
	close(p.quit)
	delete(m, name)
	return p
}

// stopPausing ends a pause retry and waits for it, so a pause in flight
// cannot land after the task is started again.
func (e *Engine) stopPausing(name string) {
	if p := e.unretry(e.pausing, name); p != nil {
		<-p.done
	}
}

// unpend stops waiting to deploy a task.
func (e *Engine) unpend(name string) { e.unretry(e.waiting, name) }

func (e *Engine) start(t task.Task, current, peer cluster.Settings) error {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	cc, err := e.resolve(ctx, t)
	if err != nil {
		return fmt.Errorf("task %s: %w", t.Name, err)
	}
	name := cc.Name
	conns, err := e.d.Plan(t, current, peer, cc)
	if err != nil {
		return fmt.Errorf("task %s cannot run on Kafka Connect cluster %s: %w", t.Name, name, err)
	}
	client, err := connect.Shared(cc.Client)
	if err != nil {
		return err
	}
	if err := removeUnplanned(ctx, client, e.d.Names(t), conns); err != nil {
		return fmt.Errorf("task %s: remove the connectors it no longer runs from %s: %w", t.Name, name, err)
	}
	for _, c := range conns {
		if err := e.deployConnector(ctx, client, c, t.Rules.StartOffset == task.StartLatest); err != nil {
			return fmt.Errorf("task %s: connector %s on %s: %w", t.Name, c.Name, name, err)
		}
	}
	if err := e.deployed(t.Name, &deployment{cluster: name, connectors: conns, task: t, current: current, peer: peer}, cc); err != nil {
		return err
	}
	e.log.Info("task deployed on Kafka Connect", "task", t.Name, "connect_cluster", name, "connectors", len(conns))
	return nil
}

// deployConnector brings c on Connect to its plan: created (placed where
// its copy starts, or stopped) or its configuration brought up to date,
// then held stopped, or moved past what a way back wrote and resumed.
// latest: a copy connector created now starts at the source's ends.
func (e *Engine) deployConnector(ctx context.Context, client *connect.Client, c connectplan.Connector, latest bool) error {
	// Written only where it differs: Connect restarts a connector on
	// every configuration written, even the same.
	var have connect.ConnectorInfo
	err := untilSettled(ctx, func() (err error) { have, err = client.Connector(ctx, c.Name); return err })
	missing := connect.IsNotFound(err)
	if err != nil && !missing {
		return fmt.Errorf("read it: %w", err)
	}
	switch {
	case missing && c.Held:
		// Never running, not even for the moment before the stop.
		if err := untilSettled(ctx, func() error { _, err := client.Create(ctx, c.Name, c.Config, connect.StateStopped); return err }); err != nil {
			return fmt.Errorf("deploy it stopped: %w", err)
		}
	case missing && c.StartAt != nil:
		if err := createAt(ctx, client, c, c.StartAt, false); err != nil {
			return fmt.Errorf("deploy it at the switchover's point: %w", err)
		}
	case missing && c.Copy != nil && latest:
		if err := startAtLatest(ctx, client, c); err != nil {
			return fmt.Errorf("deploy it at the source's ends (start offset latest): %w", err)
		}
	case missing || len(configDrift(c.Config, have.Config)) > 0:
		if err := untilSettled(ctx, func() error { _, _, err := client.CreateOrUpdate(ctx, c.Name, c.Config); return err }); err != nil {
			return fmt.Errorf("deploy it: %w", err)
		}
	}
	if !missing && c.StartAt != nil {
		if err := finishStart(ctx, client, c); err != nil {
			return fmt.Errorf("place it at the switchover's point: %w", err)
		}
	}
	if c.Held {
		if err := untilSettled(ctx, func() error { return client.Stop(ctx, c.Name) }); err != nil {
			return fmt.Errorf("stop it while the way back runs: %w", err)
		}
		return nil
	}
	if err := skipReturned(ctx, client, c); err != nil {
		return fmt.Errorf("move it past what the way back wrote: %w", err)
	}
	if err := untilSettled(ctx, func() error { return client.Resume(ctx, c.Name) }); err != nil {
		return fmt.Errorf("resume it: %w", err)
	}
	// A restart of the task restarts what failed on Connect too.
	if _, err := client.Restart(ctx, c.Name, true, true); err != nil && !connect.IsNotFound(err) && !connect.IsConflict(err) {
		e.log.Warn("failed connector instances not restarted", "connector", c.Name, "error", err)
	}
	return nil
}

// conflictWait bounds waiting out a rebalance of the workers during one
// request (Connect answers 409 meanwhile; each connector a task deploys
// starts one).
const conflictWait = 15 * time.Second

// untilSettled runs req until Connect answers other than 409 (a rebalance
// or a concurrent change), at most conflictWait: a deploy half done would
// leave the task waiting for a whole retry.
func untilSettled(ctx context.Context, req func() error) error {
	deadline := time.Now().Add(conflictWait)
	for {
		err := req()
		if !connect.IsConflict(err) || time.Now().After(deadline) {
			return err
		}
		select {
		case <-ctx.Done():
			return err
		case <-time.After(250 * time.Millisecond):
		}
	}
}

// deployed records dep as the task's deployment, starting its Connect
// cluster's poll and lag sampling if they do not run yet. The same
// connectors on the same cluster again (a re-apply) keep their progress:
// its counts and positions go on.
func (e *Engine) deployed(name string, dep *deployment, cc connectplan.Cluster) error {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.closed {
		return errors.New("the Connect engine is closed")
	}
	old := e.tasks[name]
	if w, ok := e.waiting[name]; ok {
		close(w.quit)
		delete(e.waiting, name)
	}
	dep.at = time.Now()
	dep.progress, dep.restarts = newProgress(e.log), newRestarts()
	if old != nil && old.cluster == dep.cluster {
		dep.restarts = old.restarts // the counts and back-off go on
		if sameConnectors(old.connectors, dep.connectors) {
			dep.progress = old.progress
		}
	}
	e.tasks[name] = dep
	p, ok := e.pollers[dep.cluster]
	if !ok {
		cluster := dep.cluster
		p = newPoller(cluster, cc, e.d.PollInterval, e.log, func(client *connect.Client, cc connectplan.Cluster, o observed) {
			e.restartFailed(cluster, cc.AutoRestart, client, o)
		})
		p.lag = newLagSampler(p.config, func() []copyOf { return e.copiesOn(cluster) }, e.d.PollInterval, e.log)
		e.pollers[dep.cluster] = p
	}
	p.setCluster(cc)
	return nil
}

// sameConnectors says whether two plans deploy the same connectors with the
// same configurations.
func sameConnectors(a, b []connectplan.Connector) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Name != b[i].Name || a[i].Flow != b[i].Flow || !maps.Equal(a[i].Config, b[i].Config) {
			return false
		}
	}
	return true
}

// Check says why t cannot run on its Connect cluster (an option MirrorMaker
// 2 cannot honour, a Connect cluster that is not registered), without
// deploying anything.
func (e *Engine) Check(t task.Task, current, peer cluster.Settings) error {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	cc, err := e.resolve(ctx, t)
	if err != nil {
		return err
	}
	conns, err := e.d.Plan(t, current, peer, cc)
	if err != nil {
		return err
	}
	// Connect's own word on each configuration, before anything is stored.
	client, err := connect.Shared(cc.Client)
	if err != nil {
		return err
	}
	for _, c := range conns {
		v, err := client.ValidateConfig(ctx, c.Config["connector.class"], withName(c))
		if err != nil {
			return fmt.Errorf("Kafka Connect cluster %s could not check connector %s: %w", cc.Name, c.Name, err)
		}
		if v.ErrorCount > 0 {
			return fmt.Errorf("Kafka Connect cluster %s refuses connector %s: %s", cc.Name, c.Name, validationErrors(v))
		}
	}
	return nil
}

func withName(c connectplan.Connector) map[string]string {
	m := make(map[string]string, len(c.Config)+1)
	for k, v := range c.Config {
		m[k] = v
	}
	m["name"] = c.Name
	return m
}

// validationErrors lists a validation's errors, setting by setting.
func validationErrors(v connect.Validation) string {
	errs := v.Errors()
	keys := make([]string, 0, len(errs))
	for k := range errs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = k + ": " + strings.Join(errs[k], "; ")
	}
	return strings.Join(parts, "; ")
}

// resolve is the Connect cluster t runs on.
func (e *Engine) resolve(ctx context.Context, t task.Task) (connectplan.Cluster, error) {
	name, ok := t.ConnectCluster()
	if !ok {
		return connectplan.Cluster{}, fmt.Errorf("task %s runs in-process, not on Kafka Connect", t.Name)
	}
	cc, err := e.d.Cluster(ctx, name)
	if err != nil {
		return connectplan.Cluster{}, fmt.Errorf("Kafka Connect cluster %s: %w", name, err)
	}
	cc.Name = name
	return cc, nil
}

// Stop pauses the task's connectors (their offsets stay, so a resume
// continues where they stopped) and forgets the task here.
//
// When Connect does not pause them (it is away), the connectors would go on
// copying: the pause is tried again every poll interval until Connect
// takes it, the task is started again, or the engine closes, and the
// task's status says so meanwhile.
func (e *Engine) Stop(name string) {
	e.unpend(name)
	e.mu.Lock()
	dep, ok := e.tasks[name]
	delete(e.tasks, name)
	var p *poller
	if ok {
		p = e.pollers[dep.cluster]
	}
	e.mu.Unlock()
	if !ok {
		return
	}
	cfg := p.config()
	pause := func() error { return pauseConnectors(cfg, dep.connectors) }
	if err := pause(); err != nil {
		e.log.Error("connectors not paused; they go on copying on Kafka Connect until it takes the pause, tried again every poll",
			"task", name, "connect_cluster", dep.cluster, "error", err)
		e.retry(e.pausing, name, err, pause, "task paused on Kafka Connect after waiting for it")
		return
	}
	e.log.Info("task paused on Kafka Connect", "task", name, "connect_cluster", dep.cluster)
}

// pauseConnectors asks Connect to pause each connector; one it does not
// know is as good as paused.
func pauseConnectors(cfg connect.Config, conns []connectplan.Connector) error {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	client, err := connect.Shared(cfg)
	if err != nil {
		return err
	}
	for _, c := range conns {
		if perr := client.Pause(ctx, c.Name); perr != nil && !connect.IsNotFound(perr) {
			err = errors.Join(err, perr)
		}
	}
	return err
}

// Remove deletes the task's connectors from its Connect cluster. Their
// offsets stay in Connect's offsets topic, and kmirror's internal topics on
// the clusters, so a task created again resumes.
func (e *Engine) Remove(t task.Task) error {
	e.Stop(t.Name)
	if _, ok := t.ConnectCluster(); !ok {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	cc, err := e.resolve(ctx, t)
	if err != nil {
		return err
	}
	name := cc.Name
	client, err := connect.Shared(cc.Client)
	if err != nil {
		return err
	}
	for _, c := range e.d.Names(t) {
		if err := client.Delete(ctx, c); err != nil && !connect.IsNotFound(err) {
			return fmt.Errorf("delete connector %s on %s: %w (delete it there by hand, or try again)", c, name, err)
		}
	}
	return nil
}

// Status is the task's state as its connectors show it; ok is false when it
// does not run here.
func (e *Engine) Status(name string) (engine.TaskStatus, bool) {
	e.mu.Lock()
	dep, ok := e.tasks[name]
	var p *poller
	if ok {
		p = e.pollers[dep.cluster]
	}
	w, waiting := e.waiting[name]
	pw, pausing := e.pausing[name]
	e.mu.Unlock()
	if !ok && pausing {
		return engine.TaskStatus{Name: name, State: task.StatePaused, Flows: []engine.FlowStatus{},
			Reason: fmt.Sprintf("Kafka Connect has not paused the connectors yet, so they may still copy; trying again every %s: %v",
				e.d.PollInterval, pw.why())}, true
	}
	if !ok && waiting {
		return engine.TaskStatus{Name: name, State: task.StateDegraded, Flows: []engine.FlowStatus{},
			Reason: fmt.Sprintf("not deployed on Kafka Connect yet, trying again every %s: %v", e.d.PollInterval, w.why())}, true
	}
	if !ok {
		return engine.TaskStatus{Name: name, State: task.StateStopped}, false
	}
	o, seen := p.last()
	st := engine.TaskStatus{Name: name, State: task.StateStarting, Reason: "reading the connectors' state from Kafka Connect"}
	byFlow := map[string][]string{}
	copiers := map[string]string{} // by flow: the connector whose tasks copy
	planned := map[string]map[string]string{}
	held := map[string]bool{}
	var flows []string
	for _, c := range dep.connectors {
		held[c.Name] = c.Held
		if o.at.After(dep.at) {
			// A poll from before this deployment saw the connectors as
			// they were: drift is judged on the next.
			planned[c.Name] = c.Config
		}
		if c.Copy != nil {
			copiers[c.Flow] = c.Name
		}
		if _, ok := byFlow[c.Flow]; !ok {
			flows = append(flows, c.Flow)
		}
		byFlow[c.Flow] = append(byFlow[c.Flow], c.Name)
	}
	sort.Strings(flows)
	if !seen {
		for _, f := range flows {
			st.Flows = append(st.Flows, engine.FlowStatus{Flow: f, State: task.StateStarting, Partitions: []engine.PartitionStatus{}})
		}
		return st, true
	}
	// The task is as its worst flow, as the in-process engine reports it.
	st.State, st.Reason = task.StateRunning, ""
	for _, f := range flows {
		fs, reason := verdict(byFlow[f], copiers[f], dep.cluster, planned, held, o, o.at.Before(dep.at.Add(deployGrace)))
		if fs == task.StateFailed {
			var failed []string
			for _, c := range byFlow[f] {
				if v, ok := o.views[c]; ok && failedInstances(v) {
					failed = append(failed, c)
				}
			}
			reason += dep.restarts.note(failed, time.Now())
		}
		flow := engine.FlowStatus{Flow: f, State: fs, Reason: reason, Partitions: []engine.PartitionStatus{}, Restarts: dep.restarts.of(f)}
		if fp, ok := dep.progress.of(f); ok {
			flow.Partitions, flow.LagRecords, flow.Records = fp.partitions, fp.lag, fp.records
		}
		st.Flows = append(st.Flows, flow)
		if severity[fs] > severity[st.State] {
			st.State, st.Reason = fs, reason
		}
	}
	return st, true
}

// Names lists the tasks running here, sorted.
func (e *Engine) Names() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	names := make([]string, 0, len(e.tasks)+len(e.waiting))
	for n := range e.tasks {
		names = append(names, n)
	}
	for n := range e.waiting {
		if _, ok := e.tasks[n]; !ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

// Close ends the polls. The connectors go on running on Kafka Connect.
func (e *Engine) Close() {
	e.mu.Lock()
	e.closed = true
	ps := e.pollers
	e.pollers = map[string]*poller{}
	e.tasks = map[string]*deployment{}
	for _, w := range e.waiting {
		close(w.quit)
	}
	e.waiting = map[string]*pending{}
	for _, w := range e.pausing {
		close(w.quit)
	}
	e.pausing = map[string]*pending{}
	e.mu.Unlock()
	for _, p := range ps {
		p.stop()
	}
}

// poller reads one Connect cluster's connectors and tells which workers
// they run on have died.
//
// Connect's own statuses do not tell: a worker killed outright goes on
// being shown as running its connectors and tasks until Connect has moved
// them, session.timeout.ms and then scheduled.rebalance.max.delay.ms later
// (seen on Kafka 4.3.1 after a SIGKILL: RUNNING on the dead worker, then
// RUNNING on the one that took them over, never UNASSIGNED between). So the
// poll adds two signals, each where it means something:
//
//   - the Connect group on the Kafka cluster the workers write to
//     (groupWatch): a worker that stops heartbeating is no longer a member
//     once its session times out. It is what Connect's leader decides on,
//     names workers as the statuses do, and needs no route to any worker.
//   - the registered URLs: a worker whose worker_id is the host:port of a
//     URL the operator registered is asked whether it answers, as kmirror
//     is expected to reach that address (and so sees a dead worker at the
//     next poll, before its session times out).
//
// Any other advertised address is never probed: behind a Kubernetes
// Service or an ingress the workers advertise pod names or pod IPs that
// kmirror cannot resolve or route to, and a probe that fails there says
// nothing about the worker (it made every healthy task DEGRADED for ever).
// Whether a name resolves is no test either: a pod IP "resolves" and still
// cannot be reached from outside the cluster.
type poller struct {
	// lag samples the progress of the tasks deployed on the cluster.
	lag    *lagSampler
	name   string
	log    *slog.Logger
	polled func(*connect.Client, connectplan.Cluster, observed)
	quit   chan struct{}
	done   chan struct{}

	mu   sync.Mutex
	cc   connectplan.Cluster
	obs  observed
	seen bool

	// Kept from poll to poll by the poll's goroutine: the REST client
	// remembers the last URL that answered, so a hung or dead first URL
	// costs one try, not one per poll.
	client    *connect.Client
	clientCfg connect.Config
	group     *groupWatch
}

// newPoller polls a Connect cluster every every; after each poll, polled
// (if not nil) acts on what it saw, through the poll's own client (bounded
// requests, starting at the URL that answered last).
func newPoller(name string, cc connectplan.Cluster, every time.Duration, log *slog.Logger, polled func(*connect.Client, connectplan.Cluster, observed)) *poller {
	p := &poller{name: name, cc: cc, log: log, polled: polled, quit: make(chan struct{}), done: make(chan struct{})}
	go p.run(every)
	return p
}

func (p *poller) setCluster(cc connectplan.Cluster) {
	p.mu.Lock()
	p.cc = cc
	p.mu.Unlock()
}

func (p *poller) config() connect.Config {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cc.Client
}

func (p *poller) cluster() connectplan.Cluster {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cc
}

func (p *poller) last() (observed, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.obs, p.seen
}

func (p *poller) stop() {
	close(p.quit)
	<-p.done
	if p.lag != nil {
		p.lag.stop()
	}
}

func (p *poller) run(every time.Duration) {
	defer close(p.done)
	defer func() {
		p.client.Close()
		if p.group != nil {
			p.group.close()
		}
	}()
	tick := time.NewTicker(every)
	defer tick.Stop()
	var dead map[string]lostWorker
	for {
		o := p.poll(dead)
		dead = o.deadWorkers
		p.mu.Lock()
		p.obs, p.seen = o, true
		p.mu.Unlock()
		if p.polled != nil && p.client != nil {
			p.polled(p.client, p.cluster(), o)
		}
		select {
		case <-p.quit:
			return
		case <-tick.C:
		}
	}
}

const (
	// pollBudget bounds one poll's reading of the connectors.
	pollBudget = 30 * time.Second
	// workerProbeTimeout bounds asking one registered URL whether it
	// answers.
	workerProbeTimeout = 2 * time.Second
)

// pollRequestTimeout bounds one request of the poll to one URL, well under
// the budget: a worker that accepts connections and never answers costs one
// try, and the next URL answers in the same poll. (Connect's own timeout
// for a request waiting on its herder is 90 s; a listing is answered from
// the worker's memory.) A variable for tests.
var pollRequestTimeout = 10 * time.Second

// restClient is the poll's REST client, made again when the cluster's
// settings changed.
func (p *poller) restClient(cfg connect.Config) (*connect.Client, error) {
	if cfg.Timeout <= 0 || cfg.Timeout > pollRequestTimeout {
		cfg.Timeout = pollRequestTimeout
	}
	if p.client != nil && reflect.DeepEqual(cfg, p.clientCfg) {
		return p.client, nil
	}
	c, err := connect.New(cfg)
	if err != nil {
		return nil, err
	}
	p.client.Close()
	p.client, p.clientCfg = c, cfg
	return c, nil
}

// groupOf is the poll's group watch, made again when the Kafka cluster's
// settings changed.
func (p *poller) groupOf(cc connectplan.Cluster) *groupWatch {
	if p.group != nil && reflect.DeepEqual(p.group.kafka, cc.Kafka) {
		return p.group
	}
	if p.group != nil {
		p.group.close()
	}
	p.group = newGroupWatch(p.name, cc.Kafka, p.log)
	return p.group
}

// poll reads the connectors and tells which of the workers they run on
// are lost (see poller). dead are the workers the last poll found lost,
// and since when: a worker still lost keeps its first time, so a reason
// says how long.
func (p *poller) poll(dead map[string]lostWorker) observed {
	cc := p.cluster()
	now := time.Now()
	client, err := p.restClient(cc.Client)
	if err != nil {
		return observed{err: err, at: now, deadWorkers: dead}
	}
	ctx, cancel := context.WithTimeout(context.Background(), pollBudget)
	defer cancel()
	views, err := client.Connectors(ctx)
	if err != nil {
		return observed{err: err, at: now, deadWorkers: dead}
	}
	o := observed{views: views, deadWorkers: map[string]lostWorker{}, at: now}
	var ids []string
	seen := map[string]bool{}
	for _, v := range views {
		for _, id := range append([]string{v.Status.Connector.WorkerID}, taskWorkers(v)...) {
			if id != "" && !seen[id] {
				seen[id] = true
				ids = append(ids, id)
			}
		}
	}
	sort.Strings(ids)
	silent := probeRegistered(ctx, cc.Client, ids)
	members, known := p.groupOf(cc).members(ids, now)
	for _, id := range ids {
		var left bool
		switch {
		case silent[id]:
		case known && !members[workerKey(id)]:
			left = true
		case !known && dead[id].left:
			left = true // the group cannot be read this round (rebalancing): as last seen
		default:
			continue
		}
		since := now
		if d, ok := dead[id]; ok {
			since = d.since
		}
		o.deadWorkers[id] = lostWorker{since: since, left: left}
	}
	return o
}

func taskWorkers(v connect.ConnectorView) []string {
	ids := make([]string, len(v.Status.Tasks))
	for i, t := range v.Status.Tasks {
		ids[i] = t.WorkerID
	}
	return ids
}

// probeRegistered asks, at once, each registered URL that is one of ids
// (a worker_id is its advertised host:port) whether it answers, and
// returns the ids that did not. Other ids are not asked (see poller).
func probeRegistered(ctx context.Context, cfg connect.Config, ids []string) map[string]bool {
	registered := map[string]string{} // by worker key: the URL
	for _, raw := range cfg.URLs {
		if u, err := url.Parse(strings.TrimSpace(raw)); err == nil && u.Host != "" {
			registered[workerKey(hostPort(u))] = strings.TrimRight(u.String(), "/")
		}
	}
	silent := map[string]bool{}
	var mu sync.Mutex
	var wg sync.WaitGroup
	for _, id := range ids {
		u, ok := registered[workerKey(id)]
		if !ok {
			continue
		}
		wg.Go(func() {
			wc := cfg
			wc.URLs = []string{u}
			wc.Timeout, wc.DialTimeout = workerProbeTimeout, workerProbeTimeout
			c, err := connect.New(wc)
			if err == nil {
				_, err = c.ServerInfo(ctx)
				c.Close()
			}
			if err != nil {
				mu.Lock()
				silent[id] = true
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return silent
}

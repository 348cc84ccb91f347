// Package servicetest has in-memory stand-ins for the service's Kafka-facing
// collaborators (the engine and live clusters), so the console and API can
// be tested without brokers. Real behaviour is proven on real Kafka in the
// integration tests.
package servicetest

import (
	"context"
	"errors"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/clustercheck"
	"github.com/kmirror/kmirror/internal/engine"
	"github.com/kmirror/kmirror/internal/mm2"
	"github.com/kmirror/kmirror/internal/replicator"
	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/internal/task"
)

// Runner is a engine.Runner and metrics.Source that runs nothing: a
// started task reports RUNNING with one flow per direction.
type Runner struct {
	mu      sync.Mutex
	running map[string]task.Task
	// Starts and Stops count calls per task.
	Starts, Stops map[string]int
	// FailStart, when set, is returned by Start.
	FailStart error
	// Progress is each task's progress by flow, as Progress hands it over
	// and Seed stores it (a move between two Runners carries it).
	progress map[string]map[string][]task.Position
	// FailSeed, when set, is returned by Seed.
	FailSeed error
	// records is what each flow of a task reports copied (SetRecords);
	// 10 when unset.
	records map[string]int64
}

// SetRecords sets the records every flow of the task reports copied, so
// a test can make a rate.
func (r *Runner) SetRecords(name string, n int64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.records == nil {
		r.records = map[string]int64{}
	}
	r.records[name] = n
}

var (
	_ engine.Runner   = (*Runner)(nil)
	_ engine.Handover = (*Runner)(nil)
)

// NewRunner returns an empty Runner.
func NewRunner() *Runner {
	return &Runner{running: map[string]task.Task{}, Starts: map[string]int{}, Stops: map[string]int{},
		progress: map[string]map[string][]task.Position{}}
}

// Halt implements engine.Handover: the task stops.
func (r *Runner) Halt(t task.Task) error {
	r.Stop(t.Name)
	return nil
}

// Progress implements engine.Handover: what Seed stored for the task.
func (r *Runner) Progress(t task.Task, _, _ cluster.Settings) (map[string][]task.Position, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.progress[t.Name], nil
}

// Seed implements engine.Handover.
func (r *Runner) Seed(t task.Task, _, _ cluster.Settings, p map[string][]task.Position) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.FailSeed != nil {
		return r.FailSeed
	}
	r.progress[t.Name] = p
	return nil
}

// SetProgress is a task's progress as if it had copied that far.
func (r *Runner) SetProgress(name string, p map[string][]task.Position) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.progress[name] = p
}

// Start implements engine.Runner.
func (r *Runner) Start(t task.Task, _, _ cluster.Settings) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.FailStart != nil {
		return r.FailStart
	}
	if _, ok := r.running[t.Name]; ok {
		return errors.New("task " + t.Name + " is already running")
	}
	r.running[t.Name] = t
	r.Starts[t.Name]++
	return nil
}

// Stop implements engine.Runner.
func (r *Runner) Stop(name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.running[name]; ok {
		delete(r.running, name)
		r.Stops[name]++
	}
}

// Status implements engine.Runner.
func (r *Runner) Status(name string) (engine.TaskStatus, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.running[name]
	if !ok {
		return engine.TaskStatus{Name: name, State: task.StateStopped}, false
	}
	st := engine.TaskStatus{Name: name, State: task.StateRunning}
	records, set := r.records[name]
	if !set {
		records = 10
	}
	flow := func(src, dst string) {
		st.Flows = append(st.Flows, engine.FlowStatus{Flow: src + "->" + dst, State: task.StateRunning, Records: records, Bytes: 100 * records})
	}
	switch t.Rules.Direction {
	case task.DirectionPush:
		flow(t.Current.Alias, t.Peer.Alias)
	case task.DirectionPull:
		flow(t.Peer.Alias, t.Current.Alias)
	default:
		flow(t.Current.Alias, t.Peer.Alias)
		flow(t.Peer.Alias, t.Current.Alias)
	}
	return st, true
}

// Names lists the running tasks (metrics.Source).
func (r *Runner) Names() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for n := range r.running {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Started returns the task as last started, password included, and whether
// it runs.
func (r *Runner) Started(name string) (task.Task, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	t, ok := r.running[name]
	return t, ok
}

// Kafka is a service.Kafka over made-up clusters keyed by their first
// bootstrap address. An address not in Clusters is unreachable.
type Kafka struct {
	Clusters map[string]FakeCluster
}

// FakeCluster is what Kafka answers for one address.
type FakeCluster struct {
	Brokers int
	Topics  []string
	// Password, when set, is the only one the cluster accepts.
	Password string
	// Configs are configs set on topics, by topic then name; Defaults are
	// the cluster's defaults, which every topic in Topics has unless set.
	Configs  map[string]map[string]string
	Defaults map[string]string
	// ConfigsErr, when set, is what TopicConfigs answers.
	ConfigsErr error
	// TransactionsErr, when set, is what Transactions answers.
	TransactionsErr error
}

// Transactions implements service.Kafka.
func (k *Kafka) Transactions(_ context.Context, s cluster.Settings, _ string, _ time.Duration) error {
	c, err := k.find(s)
	if err != nil {
		return err
	}
	return c.TransactionsErr
}

var _ service.Kafka = (*Kafka)(nil)

func (k *Kafka) find(s cluster.Settings) (FakeCluster, error) {
	for _, a := range s.BootstrapServers {
		if c, ok := k.Clusters[a]; ok {
			return c, nil
		}
	}
	return FakeCluster{}, errors.New("cannot reach " + strings.Join(s.BootstrapServers, ",") + ": connection refused — check the address and that the broker is running")
}

// Describe implements service.Kafka.
func (k *Kafka) Describe(_ context.Context, s cluster.Settings) (clustercheck.Description, error) {
	c, err := k.find(s)
	if err != nil {
		return clustercheck.Description{}, err
	}
	return clustercheck.Description{Brokers: c.Brokers, Topics: slices.Sorted(slices.Values(c.Topics))}, nil
}

// TopicConfigs implements service.Kafka: topics not in Topics are left out.
func (k *Kafka) TopicConfigs(_ context.Context, s cluster.Settings, topics, names []string) (map[string]map[string]clustercheck.ConfigValue, error) {
	c, err := k.find(s)
	if err != nil {
		return nil, err
	}
	if c.ConfigsErr != nil {
		return nil, c.ConfigsErr
	}
	wanted := func(n string) bool { return len(names) == 0 || slices.Contains(names, n) }
	out := map[string]map[string]clustercheck.ConfigValue{}
	for _, t := range topics {
		if !slices.Contains(c.Topics, t) {
			continue
		}
		m := map[string]clustercheck.ConfigValue{}
		for n, v := range c.Defaults {
			if wanted(n) {
				m[n] = clustercheck.ConfigValue{Value: v}
			}
		}
		for n, v := range c.Configs[t] {
			if wanted(n) {
				m[n] = clustercheck.ConfigValue{Value: v, TopicLevel: true}
			}
		}
		out[t] = m
	}
	return out, nil
}

// Check implements service.Kafka with the real step names.
func (k *Kafka) Check(_ context.Context, s cluster.Settings) clustercheck.Result {
	c, err := k.find(s)
	var r clustercheck.Result
	failed := ""
	for _, step := range clustercheck.Steps(s) {
		switch {
		case failed != "":
			r.Steps = append(r.Steps, clustercheck.Step{Name: step, Skipped: true, Message: "not run: the " + failed + " step failed"})
		case step == clustercheck.StepTCP && err != nil:
			failed = step
			r.Steps = append(r.Steps, clustercheck.Step{Name: step, Message: err.Error()})
		case step == clustercheck.StepSASL && c.Password != "" && s.Password != c.Password:
			failed = step
			r.Steps = append(r.Steps, clustercheck.Step{Name: step, Message: "SASL authentication failed as " + s.Username + ": wrong user name or password"})
		default:
			r.Steps = append(r.Steps, clustercheck.Step{Name: step, OK: true, Message: "ok"})
		}
	}
	r.OK = failed == ""
	return r
}

// SyncGroup implements service.GroupSyncer: it answers one checkpoint per
// call, naming the group, so tests see what the service passed on.
func (r *Runner) SyncGroup(_ context.Context, taskName, group string) ([]replicator.GroupResult, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, ok := r.running[taskName]; !ok {
		return nil, errors.New("task " + taskName + " is not running here: resume it first")
	}
	cp := mm2.Checkpoint{Group: group, Topic: "A.orders", Partition: 0, UpstreamOffset: 10, DownstreamOffset: 7}
	return []replicator.GroupResult{{Group: group, Checkpoints: []mm2.Checkpoint{cp}, Committed: map[string]int64{"A.orders/0": 7}}}, nil
}

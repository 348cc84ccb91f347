// Package embeddedengine runs tasks in-process: each running task is a set of
// replicators, one per flow. It is the single place tasks are started,
// stopped, paused, resumed and restarted, for `kmirror serve`, `kmirror run`
// and `kmirror demo` alike.
//
// Stopping a task is graceful: its replicators stop intake, wait for the
// target to acknowledge what is in flight and commit progress, so a task
// stopped and started again copies nothing twice and misses nothing.
package embeddedengine

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"runtime/debug"
	"sort"
	"sync"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/engine"
	"github.com/kmirror/kmirror/internal/replicator"
	"github.com/kmirror/kmirror/internal/switchover"
	"github.com/kmirror/kmirror/internal/task"
)

// Engine runs tasks. The zero value is not usable; call New.
type Engine struct {
	opts replicator.Options
	log  *slog.Logger

	mu      sync.Mutex
	running map[string]*run
}

type run struct {
	reps   []*replicator.Replicator
	cancel context.CancelFunc
	done   chan struct{}
}

// New makes an Engine; opts apply to every replicator it starts.
func New(opts replicator.Options, log *slog.Logger) *Engine {
	if log == nil {
		log = slog.Default()
	}
	return &Engine{opts: opts, log: log, running: map[string]*run{}}
}

// Start runs a task's flows until Stop. Starting a running task is an error.
func (e *Engine) Start(t task.Task, current, peer cluster.Settings) error {
	flows, err := replicator.FlowsOf(t, current, peer)
	if err != nil {
		return fmt.Errorf("task %s: %w", t.Name, err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if _, ok := e.running[t.Name]; ok {
		return fmt.Errorf("task %s is already running", t.Name)
	}
	ctx, cancel := context.WithCancel(context.Background())
	r := &run{cancel: cancel, done: make(chan struct{})}
	var wg sync.WaitGroup
	for _, f := range flows {
		rep := replicator.New(f, e.opts, e.log)
		r.reps = append(r.reps, rep)
		wg.Go(func() { _ = rep.Run(ctx) })
	}
	go func() { wg.Wait(); close(r.done) }()
	e.running[t.Name] = r
	e.log.Info("task started", "task", t.Name, "flows", len(flows))
	return nil
}

// Stop stops a task gracefully and waits until its progress is committed.
// Stopping a task that is not running does nothing.
func (e *Engine) Stop(name string) {
	e.mu.Lock()
	r, ok := e.running[name]
	delete(e.running, name)
	e.mu.Unlock()
	if !ok {
		return
	}
	r.cancel()
	<-r.done
	e.log.Info("task stopped", "task", name)
}

// Running reports whether a task runs here.
func (e *Engine) Running(name string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	_, ok := e.running[name]
	return ok
}

// Status of a task; ok is false when it does not run here.
func (e *Engine) Status(name string) (engine.TaskStatus, bool) {
	e.mu.Lock()
	r, ok := e.running[name]
	e.mu.Unlock()
	if !ok {
		return engine.TaskStatus{Name: name, State: task.StateStopped}, false
	}
	st := engine.TaskStatus{Name: name, State: task.StateRunning}
	for _, rep := range r.reps {
		fs := rep.Status()
		st.Flows = append(st.Flows, fs)
		switch {
		case fs.State == task.StateFailed && st.State != task.StateFailed:
			st.State, st.Reason = task.StateFailed, fs.Flow+": "+fs.Reason
		case fs.State == task.StateDegraded && (st.State == task.StateRunning || st.State == task.StateStarting):
			st.State, st.Reason = task.StateDegraded, fs.Flow+": "+fs.Reason
		case fs.State == task.StateStarting && st.State == task.StateRunning:
			st.State = task.StateStarting
		}
	}
	return st, true
}

// Names lists the running tasks, sorted.
func (e *Engine) Names() []string {
	e.mu.Lock()
	defer e.mu.Unlock()
	out := make([]string, 0, len(e.running))
	for n := range e.running {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Close stops every task.
func (e *Engine) Close() {
	var wg sync.WaitGroup
	for _, n := range e.Names() {
		wg.Go(func() { e.Stop(n) })
	}
	wg.Wait()
}

// SyncGroup translates one consumer group's offsets of every flow of a
// running task and commits them to the targets now: the failover helper.
func (e *Engine) SyncGroup(ctx context.Context, taskName, group string) ([]replicator.GroupResult, error) {
	e.mu.Lock()
	r, ok := e.running[taskName]
	e.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("task %s is not running here: resume it first", taskName)
	}
	var out []replicator.GroupResult
	for _, rep := range r.reps {
		res, err := rep.SyncGroup(ctx, group)
		if err != nil {
			return out, fmt.Errorf("flow %s: %w", rep.Flow().Name(), err)
		}
		out = append(out, res...)
	}
	return out, nil
}

// SwitchoverSide is a running task's flow (named "<source alias>-><target
// alias>") for a switchover; the caller closes it.
func (e *Engine) SwitchoverSide(taskName, flow string) (switchover.Side, error) {
	e.mu.Lock()
	r, ok := e.running[taskName]
	e.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("task %s is not running here: resume it", taskName)
	}
	for _, rep := range r.reps {
		if rep.Flow().Name() == flow {
			return rep.SwitchoverSide(), nil
		}
	}
	return nil, fmt.Errorf("task %s has no flow %s", taskName, flow)
}

// GCPercent is the garbage-collection target kmirror runs with unless GOGC
// is set. The copy loop's own records are reused (replicator/copy.go), but
// sarama's consumer still allocates per record, so some headroom pays.
// Measured on the batch copy path, runs one after another on the same
// machine (`GOGC=N go run ./bench -only kmirror-typical,kmirror-defaults`):
//   - 100 (the default) against 400: 25–35 % less throughput at 100 B,
//     +20 % CPU per GB, 130 against ~330 MiB peak RSS;
//   - 200 against 400: throughput within the runs' noise (-11 % to +6 %),
//     CPU per GB +0–11 %, peak RSS 180–315 against 284–346 MiB.
//
// 200 keeps nearly all of the speed at well under a fifth of MM2's memory.
const GCPercent = 200

// TuneGC sets GCPercent when the operator did not choose GOGC.
func TuneGC() {
	if os.Getenv("GOGC") == "" {
		debug.SetGCPercent(GCPercent)
	}
}

// memoryLimit is the soft memory limit LimitMemory sets: what the buffer
// budget commits (replicator.Budget.Committed: the budget, more when its
// partitions' floors pass it, less when their buffers cannot reach it)
// plus what the process needs besides records (clients, partition state,
// goroutines, the console) and the collector's slack: 96 MiB and 64 KiB a
// partition up to 2,048 partitions (past that the floors grow the limit).
// Each width was measured (bench/results/2026-12-07-memory-limit.md): the
// bench's 6-partition task (12 partitions with its latency topic) at about
// 200 MiB peaked at 218-220 MiB RSS against 247-273 with 480 MiB; 1,000
// partitions at 416 MiB at 436 against 489-499, both at no cost in
// throughput or CPU beyond the runs' spread; 10,000 partitions at 849 MiB
// stayed under 1 GiB (bench/results/2026-12-05-width.md).
func memoryLimit(committed, partitions int64) int64 {
	return committed + 96<<20 + min(partitions, 2048)*(64<<10)
}

// LimitMemory sets the Go runtime's soft memory limit (memoryLimit) and
// keeps it there as partitions join and leave, when the operator did not
// set GOMEMLIMIT: with GCPercent the heap may grow to three times what is
// live before a collection, and at a thousand partitions that headroom,
// not the records, made most of the peak RSS
// (bench/results/2026-12-02-1000-partitions.md). Past the limit the
// collector runs more often (at most half the CPU, the runtime's cap); it
// never refuses memory.
func LimitMemory(b *replicator.Budget) {
	if os.Getenv("GOMEMLIMIT") == "" {
		b.OnCommitted(func(committed, partitions int64) { debug.SetMemoryLimit(memoryLimit(committed, partitions)) })
	}
}

// Halt stops a task for a move to another engine: gracefully, its
// progress committed.
func (e *Engine) Halt(t task.Task) error {
	e.Stop(t.Name)
	return nil
}

// Progress is a stopped task's stored progress, by flow name ("A->B"),
// for another engine to continue from.
func (e *Engine) Progress(t task.Task, current, peer cluster.Settings) (map[string][]task.Position, error) {
	sides := map[task.Side]cluster.Settings{task.SideCurrent: current, task.SidePeer: peer}
	out := map[string][]task.Position{}
	for _, f := range t.Flows() {
		ps, err := replicator.ReadProgress(t.Name, f, sides[f.Source], sides[f.Target])
		if err != nil {
			return nil, fmt.Errorf("task %s, flow %s: %w", t.Name, f.Name(), err)
		}
		out[f.Name()] = ps
	}
	return out, nil
}

// Seed stores progress handed over by another engine as the task's, by
// flow name, before it starts here.
func (e *Engine) Seed(t task.Task, current, peer cluster.Settings, progress map[string][]task.Position) error {
	sides := map[task.Side]cluster.Settings{task.SideCurrent: current, task.SidePeer: peer}
	for _, f := range t.Flows() {
		if err := replicator.WriteProgress(t.Name, f, sides[f.Source], sides[f.Target], int16(t.Rules.ReplicationFactor), progress[f.Name()]); err != nil {
			return fmt.Errorf("task %s, flow %s: %w", t.Name, f.Name(), err)
		}
	}
	return nil
}

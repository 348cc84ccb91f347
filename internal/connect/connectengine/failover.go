package connectengine

import (
	"context"
	"fmt"

	"github.com/kmirror/kmirror/internal/replicator"
	"github.com/kmirror/kmirror/internal/switchover"
)

// SyncGroup fails one consumer group over now for every flow of a task
// running here: the newest checkpoints MirrorMaker 2's checkpoint connector
// wrote for the group are committed to it on the flow's target, by the rule
// the embedded engine's failover follows (replicator.FailoverFromCheckpoints).
// MM2 itself syncs idle groups' offsets on its interval; this does it at
// once and says what it did.
func (e *Engine) SyncGroup(ctx context.Context, taskName, group string) ([]replicator.GroupResult, error) {
	dep, err := e.running(taskName)
	if err != nil {
		return nil, err
	}
	if !dep.task.Rules.SyncConsumerOffsets {
		return nil, fmt.Errorf("task %s has no checkpoint connector (sync consumer offsets is off)", taskName)
	}
	flows, err := replicator.FlowsOf(dep.task, dep.current, dep.peer)
	if err != nil {
		return nil, err
	}
	var out []replicator.GroupResult
	for _, f := range flows {
		res, err := replicator.FailoverFromCheckpoints(ctx, f, group)
		if err != nil {
			return out, fmt.Errorf("flow %s: %w", f.Name(), err)
		}
		if len(res.Checkpoints) > 0 || len(res.Skipped) > 0 {
			out = append(out, res)
		}
	}
	return out, nil
}

// running is a task's deployment, or why it has none: not deployed yet
// (its deploy is retried), or not running here.
func (e *Engine) running(taskName string) (*deployment, error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if dep, ok := e.tasks[taskName]; ok {
		return dep, nil
	}
	if w, ok := e.waiting[taskName]; ok {
		return nil, fmt.Errorf("task %s is not deployed on Kafka Connect yet (tried again every %s: %v): try again shortly", taskName, e.d.PollInterval, w.why())
	}
	return nil, fmt.Errorf("task %s is not running on Kafka Connect: resume it first", taskName)
}

// SwitchoverSide is a running task's flow (named "<source alias>-><target
// alias>") for a switchover: MirrorMaker 2's copy as sampled when asked,
// its checkpoints as the translation; the caller closes it.
func (e *Engine) SwitchoverSide(taskName, flow string) (switchover.Side, error) {
	dep, err := e.running(taskName)
	if err != nil {
		return nil, err
	}
	e.mu.Lock()
	lag := e.pollers[dep.cluster].lag
	e.mu.Unlock()
	flows, err := replicator.FlowsOf(dep.task, dep.current, dep.peer)
	if err != nil {
		return nil, err
	}
	for _, f := range flows {
		if f.Name() == flow {
			return replicator.NewMM2Side(f, func() ([]switchover.Position, error) { return lag.positions(dep, flow) }), nil
		}
	}
	return nil, fmt.Errorf("task %s has no flow %s", taskName, flow)
}

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
	e.mu.Lock()
	dep, ok := e.tasks[taskName]
	e.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("task %s is not running on Kafka Connect: resume it first", taskName)
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

// SwitchoverSide is a running task's flow (named "<source alias>-><target
// alias>") for a switchover: MirrorMaker 2's copy as the progress sampler
// last saw it, its checkpoints as the translation; the caller closes it.
func (e *Engine) SwitchoverSide(taskName, flow string) (switchover.Side, error) {
	e.mu.Lock()
	dep, ok := e.tasks[taskName]
	e.mu.Unlock()
	if !ok {
		return nil, fmt.Errorf("task %s is not running on Kafka Connect: resume it first", taskName)
	}
	flows, err := replicator.FlowsOf(dep.task, dep.current, dep.peer)
	if err != nil {
		return nil, err
	}
	for _, f := range flows {
		if f.Name() == flow {
			return replicator.NewMM2Side(f, func() ([]switchover.Position, error) { return dep.progress.positions(flow) }), nil
		}
	}
	return nil, fmt.Errorf("task %s has no flow %s", taskName, flow)
}

package service

import (
	"context"
	"errors"
	"fmt"

	"github.com/kmirror/kmirror/internal/engine"
	"github.com/kmirror/kmirror/internal/task"
)

// MoveTask moves a task to another engine without copying again what was
// copied: it stops the task where it runs, hands its progress (the next
// offset of every source partition, per flow) to the new engine, records
// the new engine and starts the task there if it was running. A move that
// fails before the new engine took over leaves the task where it was,
// running again if it ran. Operators and admins only.
func (s *Service) MoveTask(ctx context.Context, name, toEngine string) (_ TaskInfo, err error) {
	defer s.audit(ctx, "task.move", name, &err)
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
	t, current, peer, err := s.openTask(ctx, rec)
	if err != nil {
		return TaskInfo{}, err
	}
	moved := t
	moved.Engine = toEngine
	if moved.Engine == "" {
		moved.Engine = task.EngineEmbedded
	}
	var p Problems
	if _, err := s.checkEngine(ctx, moved.Engine, &p); err != nil {
		return TaskInfo{}, err
	}
	if len(p) == 0 && moved.Engine == t.EngineOrDefault() {
		p.Add("engine", "task %s runs on %s already: name another engine", name, moved.Engine)
	}
	if len(p) == 0 && t.Failback != nil {
		// The way back's progress and its hold on the forward copy live
		// with the engine that runs it.
		p.Add("engine", "task %s runs its way back after switchover #%d: go home first (the switchover in the other direction), then move it", name, t.Failback.Switchover)
	}
	if len(p) == 0 {
		s.checkOnEngine(moved, current, peer, &p)
	}
	if len(p) > 0 {
		return TaskInfo{}, invalidTask(p)
	}
	from, err := s.handover(t)
	if err != nil {
		return TaskInfo{}, err
	}
	to, err := s.handover(moved)
	if err != nil {
		return TaskInfo{}, err
	}
	running := rec.DesiredState == task.DesiredRunning
	// Until the new engine took over, a failure puts the task back.
	stayed := func(step string, err error) (TaskInfo, error) {
		if running {
			s.startTask(ctx, t, current, peer)
		}
		s.log.Error("task not moved", "task", name, "to", moved.Engine, "step", step, "err", err)
		return TaskInfo{}, &Error{Code: CodeMoveFailed, Message: fmt.Sprintf("task %s not moved to %s: %s failed: %v; the task stays on %s: fix the cause and move it again", name, moved.Engine, step, err, t.EngineOrDefault())}
	}
	if err := from.Halt(t); err != nil {
		return stayed("stop it where it runs", err)
	}
	progress, err := from.Progress(t, current, peer)
	if err != nil {
		return stayed("read its progress", err)
	}
	if err := to.Seed(moved, current, peer, progress); err != nil {
		return stayed("hand its progress over", err)
	}
	if err := s.taskStore.SetTaskEngine(ctx, name, moved.Engine); err != nil {
		return stayed("record the new engine", err)
	}
	// The old engine's leftovers go; on Connect the offsets stay in its
	// offsets topic, so moving back later needs nothing from them.
	if old, err := s.runnerFor(t); err == nil {
		if rm, ok := old.(engine.Remover); ok {
			if err := rm.Remove(t); err != nil {
				s.log.Warn("the task's old deployment was not removed", "task", name, "engine", t.EngineOrDefault(), "err", err)
			}
		}
	}
	if running {
		s.startTask(ctx, moved, current, peer)
	}
	s.log.Info("task moved", "task", name, "from", t.EngineOrDefault(), "to", moved.Engine, "partitions", positions(progress), "by", actorName(ctx))
	return s.Task(ctx, name)
}

func (s *Service) handover(t task.Task) (engine.Handover, error) {
	r, err := s.runnerFor(t)
	if err != nil {
		return nil, err
	}
	h, ok := r.(engine.Handover)
	if !ok {
		return nil, errors.New("the engine of " + t.EngineOrDefault() + " cannot hand tasks over")
	}
	return h, nil
}

// unseed takes away what Seed deployed for a task that was then not
// created (a Connect engine's stopped connectors; the embedded engine's
// seeded progress stays in the group of a task that does not exist).
func (s *Service) unseed(t task.Task) {
	r, err := s.runnerFor(t)
	if err != nil {
		return
	}
	if rm, ok := r.(engine.Remover); ok {
		if err := rm.Remove(t); err != nil {
			s.log.Warn("the seeded deployment of a task not created was not removed", "task", t.Name, "err", err)
		}
	}
}

// positions counts the source partitions in a handed-over progress.
func positions(progress map[string][]task.Position) int {
	n := 0
	for _, ps := range progress {
		n += len(ps)
	}
	return n
}

package service

import (
	"context"
	"errors"
	"fmt"

	"github.com/kmirror/kmirror/internal/store"
	"github.com/kmirror/kmirror/internal/switchover"
	"github.com/kmirror/kmirror/internal/task"
)

// PrepareFailback prepares the way back after a task's switchover
// (docs/SWITCHOVER.md): the task also runs the reverse of its flow, which
// copies to the current cluster only what is written on the peer from the
// switchover point on, and translates groups back (through the forward
// syncs inverted before that point, its own after it). A planned
// switchover in the reverse direction then moves everyone home and ends
// it. What its preconditions do not meet is refused with the reason.
func (s *Service) PrepareFailback(ctx context.Context, name string) (_ switchover.Switchover, err error) {
	defer s.audit(ctx, "task.failback", name, &err)
	if err := s.allow(ctx, RoleOperator); err != nil {
		return switchover.Switchover{}, err
	}
	if s.switchoverStore == nil {
		return switchover.Switchover{}, &Error{Code: CodeInternal, Message: "switchovers are not available in this kmirror"}
	}
	if _, err := s.storedTask(ctx, name); err != nil {
		return switchover.Switchover{}, err
	}
	defer s.taskLocks.lock(name)()
	rec, err := s.storedTask(ctx, name) // again, under the lock
	if err != nil {
		return switchover.Switchover{}, err
	}
	refuse := func(format string, args ...any) (switchover.Switchover, error) {
		return switchover.Switchover{}, &Error{Code: CodeInvalidRequest, Message: fmt.Sprintf(format, args...)}
	}
	t := rec.Spec
	back, ok := t.FailbackFlow()
	switch {
	case !ok:
		return refuse("task %s is not a push task: a failback is built for push tasks only (a bidirectional task copies both ways already)", name)
	case !t.Rules.AddSourceHeader && !onConnect(t):
		// On Connect the forward copy is held while the way back runs
		// instead (MirrorMaker 2 has no source header).
		return refuse("task %s does not add the source header: without it the task would copy the records that come back to the target again; create a task with add_source_header on", name)
	case rec.DesiredState != task.DesiredRunning:
		return refuse("task %s is paused: resume it first", name)
	}
	sw, err := s.switchoverStore.LatestSwitchover(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return refuse("task %s has had no switchover: a failback goes back after one", name)
	}
	if err != nil {
		return sw, err
	}
	switch {
	case sw.Direction == back.Name():
		return refuse("task %s's newest switchover went home already (#%d): start a new switchover first", name, sw.ID)
	case sw.State != switchover.Done:
		return refuse("task %s's switchover #%d is %s, not done: a failback goes back after a switchover that is done", name, sw.ID, sw.State)
	case sw.Failback != nil:
		return refuse("the way back of task %s's switchover #%d is %s already", name, sw.ID, sw.Failback.State)
	case len(sw.Report.Points) == 0:
		return refuse("task %s's switchover #%d recorded no switchover point: start a new switchover", name, sw.ID)
	}
	if onConnect(t) {
		// What MirrorMaker 2 cannot do on the task's Connect cluster is
		// refused before anything changes.
		open, current, peer, err := s.openTask(ctx, rec)
		if err != nil {
			return sw, err
		}
		open.Failback = failbackOf(sw)
		var p Problems
		s.checkOnEngine(open, current, peer, &p)
		if len(p) > 0 {
			return sw, &Error{Code: CodeInvalidRequest, Message: fmt.Sprintf("the way back of task %s cannot run on its Kafka Connect cluster", name), Problems: p}
		}
	}
	sw.Failback = &switchover.Failback{State: switchover.FailbackPrepared, PreparedBy: actorName(ctx), PreparedAt: s.now()}
	if err := s.switchoverStore.UpdateSwitchover(ctx, sw); err != nil {
		return sw, err
	}
	// Started again with the way back (openTask attaches it): the forward
	// flow resumes from its progress.
	s.stopTask(t)
	s.startStored(ctx, rec)
	s.log.Info("failback prepared", "task", name, "switchover", sw.ID, "flow", back.Name(), "by", actorName(ctx))
	return sw, nil
}

// preparedFailback is the way back to attach to a task that starts, if one
// is prepared.
func (s *Service) preparedFailback(ctx context.Context, t task.Task) (*task.Failback, error) {
	if s.switchoverStore == nil {
		return nil, nil
	}
	sw, err := s.switchoverStore.PreparedFailback(ctx, t.Name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	// A way home that is done ended the way back; one kmirror stopped
	// right after (before wentHome) is ended now, or the task would keep
	// running its way back (on Connect: holding its forward copy).
	if back, ok := t.FailbackFlow(); ok {
		home, err := s.switchoverStore.LatestSwitchover(ctx, t.Name)
		if err != nil {
			return nil, err
		}
		if home.ID > sw.ID && home.State == switchover.Done && home.Direction == back.Name() {
			return nil, s.endWayBack(ctx, sw, home)
		}
	}
	return failbackOf(sw), nil
}

// endWayBack records that the way back prepared after switchover prepared
// went home with switchover home.
func (s *Service) endWayBack(ctx context.Context, prepared, home switchover.Switchover) error {
	prepared.Failback.State, prepared.Failback.Home, prepared.Failback.HomePoints = switchover.FailbackHome, home.ID, home.Report.Points
	if err := s.switchoverStore.UpdateSwitchover(ctx, prepared); err != nil {
		return fmt.Errorf("end the way back of switchover #%d: %w", prepared.ID, err)
	}
	s.appendAudit(context.WithoutCancel(ctx), "task.failback.home", fmt.Sprintf("%s #%d", home.Task, prepared.ID), "ok")
	return nil
}

// failbackOf is the way back of switchover sw: from its points.
func failbackOf(sw switchover.Switchover) *task.Failback {
	fb := &task.Failback{Switchover: sw.ID, Points: map[string]task.SwitchPoint{}, Topics: map[string]string{}}
	for _, p := range sw.Report.Points {
		fb.Points[task.PartitionKey(p.Topic, p.Partition)] = task.SwitchPoint{SourceEnd: p.SourceEnd, TargetEnd: p.TargetEnd}
		fb.Topics[p.Topic] = p.TargetTopic
	}
	return fb
}

// returns are the task's ways back that went home, for the flows to
// translate groups inside what they wrote (task.Return).
func (s *Service) returns(ctx context.Context, t task.Task) ([]task.Return, error) {
	if s.switchoverStore == nil {
		return nil, nil
	}
	went, err := s.switchoverStore.WentHome(ctx, t.Name)
	if err != nil {
		return nil, err
	}
	var out []task.Return
	for _, sw := range went {
		r := task.Return{Switchover: sw.ID, Points: map[string]task.ReturnPoint{}, Topics: map[string]string{}}
		there := map[string]switchover.Point{}
		for _, p := range sw.Report.Points {
			there[task.PartitionKey(p.Topic, p.Partition)] = p
			r.Topics[p.Topic] = p.TargetTopic
		}
		// The way home's source is the peer: its target topic is ours.
		for _, h := range sw.Failback.HomePoints {
			key := task.PartitionKey(h.TargetTopic, h.Partition)
			if p, ok := there[key]; ok {
				r.Points[key] = task.ReturnPoint{From: p.SourceEnd, To: h.TargetEnd, PeerFrom: p.TargetEnd, PeerTo: h.SourceEnd}
			}
		}
		if len(r.Points) > 0 {
			out = append(out, r)
		}
	}
	return out, nil
}

// wentHome ends the way back once a switchover in the reverse direction is
// done: the task runs its forward flow alone again.
func (s *Service) wentHome(ctx context.Context, home switchover.Switchover) {
	prepared, err := s.switchoverStore.PreparedFailback(ctx, home.Task)
	if err != nil {
		if !errors.Is(err, store.ErrNotFound) {
			s.log.Error("cannot end the way back", "task", home.Task, "error", err)
		}
		return
	}
	if err := s.endWayBack(ctx, prepared, home); err != nil {
		s.log.Error("cannot end the way back; the task's next start ends it", "task", home.Task, "error", err)
		return
	}
	defer s.taskLocks.lock(home.Task)()
	rec, err := s.taskStore.Task(ctx, home.Task)
	if err != nil {
		s.log.Error("cannot restart the task after its way home", "task", home.Task, "error", err)
		return
	}
	s.stopTask(rec.Spec)
	if rec.DesiredState == task.DesiredRunning {
		s.startStored(ctx, rec)
	}
	s.log.Info("home: the way back ended", "task", home.Task, "switchover", prepared.ID, "home", home.ID)
}

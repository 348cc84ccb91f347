package service

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/kmirror/kmirror/internal/store"
	"github.com/kmirror/kmirror/internal/switchover"
	"github.com/kmirror/kmirror/internal/task"
)

// SwitchoverSides gives a running task's flow to a switchover; both
// engines implement it (on Kafka Connect, by MirrorMaker 2's checkpoints).
type SwitchoverSides interface {
	SwitchoverSide(task, flow string) (switchover.Side, error)
}

// switchovers drives the open switchovers: one advance at a time, each
// with the side it opened, kept until the switchover ends.
type switchovers struct {
	mu    sync.Mutex
	sides map[int64]switchover.Side
	opts  switchover.Options
	tick  time.Duration
}

// StartSwitchover starts a switchover of a task (docs/SWITCHOVER.md): it is
// checked and stored, its first step worked at once, and RunSwitchovers
// carries it on. What the request breaks is refused with the field and the
// rule, nothing stored.
func (s *Service) StartSwitchover(ctx context.Context, name string, req switchover.Request) (_ switchover.Switchover, err error) {
	defer s.audit(ctx, "task.switchover", name+" "+string(req.Mode), &err)
	if err := s.allow(ctx, RoleOperator); err != nil {
		return switchover.Switchover{}, err
	}
	if s.switchoverStore == nil {
		return switchover.Switchover{}, &Error{Code: CodeInternal, Message: "switchovers are not available in this kmirror"}
	}
	rec, err := s.storedTask(ctx, name)
	if err != nil {
		return switchover.Switchover{}, err
	}
	choices, err := s.switchoverChoices(ctx, rec.Spec)
	if err != nil {
		return switchover.Switchover{}, err
	}
	req, problems := req.Check(choices.Directions)
	var ps Problems
	for _, p := range problems {
		ps = append(ps, Problem{Field: p.Field, Message: p.Message})
	}
	refuse := func(msg string) (switchover.Switchover, error) {
		return switchover.Switchover{}, &Error{Code: CodeInvalidRequest, Message: msg}
	}
	if len(ps) > 0 {
		return switchover.Switchover{}, &Error{Code: CodeInvalidRequest, Message: "the switchover request breaks a rule: see problems", Problems: ps}
	}
	switch {
	case rec.Spec.Type != task.TypeKafkaReplication:
		return refuse("task " + name + " is not a replication task: nothing to switch over")
	case !rec.Spec.Rules.SyncConsumerOffsets:
		return refuse("task " + name + " does not sync consumer offsets: a switchover translates groups through the offset sync history; create a task with sync consumer offsets on")
	case rec.DesiredState != task.DesiredRunning:
		return refuse("task " + name + " is paused: resume it, so the switchover can drain it")
	}
	side, err := s.switchoverSide(rec.Spec, req.Direction)
	if err != nil {
		return refuse(err.Error())
	}
	sw := switchover.New(name, req, actorName(ctx), s.now())
	id, err := s.switchoverStore.CreateSwitchover(ctx, sw)
	if errors.Is(err, store.ErrExists) {
		_ = side.Close()
		return refuse("task " + name + " has a switchover that has not ended: follow it (GET its switchover), or wait until it is done or failed")
	}
	if err != nil {
		_ = side.Close()
		return switchover.Switchover{}, err
	}
	sw.ID = id
	s.log.Info("switchover started", "task", name, "id", id, "direction", req.Direction, "by", actorName(ctx))
	s.sw.mu.Lock()
	defer s.sw.mu.Unlock()
	s.sw.sides[id] = side
	s.advanceSwitchover(ctx, &sw)
	return sw, nil
}

// SwitchoverChoices is what a task's next switchover or way back may be.
type SwitchoverChoices struct {
	// Directions are the flows a switchover may move: the way home first
	// while a way back is prepared, then the task's own.
	Directions []string
	// CanFailback: the newest switchover is done, went away from home and
	// has no way back yet (PrepareFailback says what else it needs).
	CanFailback bool
}

// SwitchoverChoices says what task name's next switchover may be.
func (s *Service) SwitchoverChoices(ctx context.Context, name string) (SwitchoverChoices, error) {
	if err := s.allow(ctx, RoleViewer); err != nil {
		return SwitchoverChoices{}, err
	}
	rec, err := s.storedTask(ctx, name)
	if err != nil {
		return SwitchoverChoices{}, err
	}
	return s.switchoverChoices(ctx, rec.Spec)
}

func (s *Service) switchoverChoices(ctx context.Context, t task.Task) (SwitchoverChoices, error) {
	var c SwitchoverChoices
	for _, f := range t.Flows() {
		c.Directions = append(c.Directions, f.Name())
	}
	back, hasBack := t.FailbackFlow()
	if !hasBack || s.switchoverStore == nil {
		return c, nil // no way back (PrepareFailback says why)
	}
	if fb, err := s.preparedFailback(ctx, t); err != nil {
		return c, err
	} else if fb != nil {
		c.Directions = append([]string{back.Name()}, c.Directions...) // the way home
	}
	sw, err := s.switchoverStore.LatestSwitchover(ctx, t.Name)
	switch {
	case errors.Is(err, store.ErrNotFound):
		return c, nil
	case err != nil:
		return c, err
	}
	c.CanFailback = sw.State == switchover.Done && sw.Failback == nil && sw.Direction != back.Name()
	return c, nil
}

// Switchover is a task's newest switchover.
func (s *Service) Switchover(ctx context.Context, name string) (switchover.Switchover, error) {
	if err := s.allow(ctx, RoleViewer); err != nil {
		return switchover.Switchover{}, err
	}
	if s.switchoverStore == nil {
		return switchover.Switchover{}, &Error{Code: CodeInternal, Message: "switchovers are not available in this kmirror"}
	}
	if _, err := s.storedTask(ctx, name); err != nil {
		return switchover.Switchover{}, err
	}
	sw, err := s.switchoverStore.LatestSwitchover(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return sw, &Error{Code: CodeNotFound, Message: "task " + name + " has had no switchover: start one with POST /api/v1/tasks/" + name + "/switchover"}
	}
	return sw, err
}

// RunSwitchovers carries every open switchover on, once a tick, until ctx
// ends: those started since, and those a stopped kmirror left open, from
// their stored step. `kmirror serve` runs it.
func (s *Service) RunSwitchovers(ctx context.Context) error {
	if s.switchoverStore == nil {
		<-ctx.Done()
		return nil
	}
	t := time.NewTicker(s.sw.tick)
	defer t.Stop()
	defer s.closeSides()
	for {
		s.advanceOpen(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
		}
	}
}

func (s *Service) advanceOpen(ctx context.Context) {
	open, err := s.switchoverStore.OpenSwitchovers(ctx)
	if err != nil {
		if ctx.Err() == nil {
			s.log.Error("cannot read the open switchovers; will retry", "error", err)
		}
		return
	}
	s.sw.mu.Lock()
	defer s.sw.mu.Unlock()
	for i := range open {
		if ctx.Err() != nil {
			return
		}
		sw := &open[i]
		if s.sw.sides[sw.ID] == nil {
			var side switchover.Side
			rec, err := s.taskStore.Task(ctx, sw.Task)
			if err == nil {
				side, err = s.switchoverSide(rec.Spec, sw.Direction)
			}
			if err != nil {
				// Paused, or not started yet after a restart: the step
				// says so until the task runs.
				s.holdSwitchover(ctx, sw, err)
				continue
			}
			s.sw.sides[sw.ID] = side
		}
		s.advanceSwitchover(ctx, sw)
	}
}

// onConnect says whether t runs on a Kafka Connect cluster.
func onConnect(t task.Task) bool {
	_, ok := t.ConnectCluster()
	return ok
}

// switchoverSide is the flow of a running task, from the engine it runs on.
func (s *Service) switchoverSide(t task.Task, flow string) (switchover.Side, error) {
	runner := s.runner
	if onConnect(t) {
		runner = s.connectRunner
	}
	sides, ok := runner.(SwitchoverSides)
	if !ok {
		return nil, errors.New("this kmirror's engine cannot switch tasks over")
	}
	return sides.SwitchoverSide(t.Name, flow)
}

// advanceSwitchover works sw's current step (under s.sw.mu) and stores
// what changed; its side is closed once it ends.
func (s *Service) advanceSwitchover(ctx context.Context, sw *switchover.Switchover) {
	side := s.sw.sides[sw.ID]
	before := sw.Current()
	actx, cancel := context.WithTimeout(ctx, 30*time.Second)
	changed := switchover.Advance(actx, sw, side, s.sw.opts, s.now())
	cancel()
	if !changed {
		return
	}
	s.storeSwitchover(ctx, sw, before)
	if sw.State.Ended() {
		_ = side.Close()
		delete(s.sw.sides, sw.ID)
		if sw.State == switchover.Done && s.isWayHome(ctx, *sw) {
			s.wentHome(ctx, *sw)
		}
	}
}

// isWayHome says whether sw went home: it switched over the task's way
// back.
func (s *Service) isWayHome(ctx context.Context, sw switchover.Switchover) bool {
	rec, err := s.taskStore.Task(ctx, sw.Task)
	if err != nil {
		return false
	}
	back, ok := rec.Spec.FailbackFlow()
	return ok && sw.Direction == back.Name()
}

// holdSwitchover shows why an open switchover cannot go on: its task does
// not run here.
func (s *Service) holdSwitchover(ctx context.Context, sw *switchover.Switchover, why error) {
	for i := range sw.Steps {
		st := &sw.Steps[i]
		if st.State == switchover.Done {
			continue
		}
		msg := fmt.Sprintf("waiting for the task to run: %v", why)
		if st.State == switchover.Waiting && st.Message == msg {
			return
		}
		before := sw.Current()
		st.State, st.Message, st.Since = switchover.Waiting, msg, s.now()
		sw.State, sw.UpdatedAt = switchover.Waiting, s.now()
		s.storeSwitchover(ctx, sw, before)
		return
	}
}

func (s *Service) storeSwitchover(ctx context.Context, sw *switchover.Switchover, before string) {
	if err := s.switchoverStore.UpdateSwitchover(context.WithoutCancel(ctx), *sw); err != nil {
		s.log.Error("cannot store the switchover; it goes on from the stored step", "task", sw.Task, "id", sw.ID, "error", err)
		return
	}
	if now := sw.Current(); now != before || sw.State.Ended() {
		s.log.Info("switchover moved", "task", sw.Task, "id", sw.ID, "from", before, "to", now, "state", sw.State)
		s.appendAudit(context.WithoutCancel(ctx), "task.switchover.step", fmt.Sprintf("%s #%d %s", sw.Task, sw.ID, before), string(sw.State))
	}
}

func (s *Service) closeSides() {
	s.sw.mu.Lock()
	defer s.sw.mu.Unlock()
	for id, side := range s.sw.sides {
		_ = side.Close()
		delete(s.sw.sides, id)
	}
}

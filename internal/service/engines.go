package service

import (
	"context"
	"errors"
	"fmt"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/engine"
	"github.com/kmirror/kmirror/internal/store"
	"github.com/kmirror/kmirror/internal/task"
)

// runnerFor is the engine a task runs on: the in-process runner, or the
// Kafka Connect runner for a task whose engine names a Connect cluster.
func (s *Service) runnerFor(t task.Task) (engine.Runner, error) {
	if _, ok := t.ConnectCluster(); !ok {
		return s.runner, nil
	}
	if s.connectRunner == nil {
		return nil, errors.New("this kmirror runs no Kafka Connect engine (Deps.ConnectRunner)")
	}
	return s.connectRunner, nil
}

// statusOf asks a stored task's engine for its status.
func (s *Service) statusOf(t task.Task) (engine.TaskStatus, bool) {
	r, err := s.runnerFor(t)
	if err != nil {
		return engine.TaskStatus{Name: t.Name, State: task.StateFailed, Reason: err.Error()}, false
	}
	return r.Status(t.Name)
}

// stopTask stops a task on its engine (pausing it on Kafka Connect).
func (s *Service) stopTask(t task.Task) {
	if r, err := s.runnerFor(t); err == nil {
		r.Stop(t.Name)
	}
}

// removeTask takes a task off its engine for good before it is deleted.
func (s *Service) removeTask(t task.Task) error {
	r, err := s.runnerFor(t)
	if err != nil {
		return err
	}
	if rm, ok := r.(engine.Remover); ok {
		return rm.Remove(t)
	}
	r.Stop(t.Name)
	return nil
}

// resolveEngine fills a task's engine from its current cluster's Smart
// Connect setting when it names none, and checks it: Smart Connect must be
// enabled there, and a Connect engine must name a registered Connect
// cluster. Problems are on "engine" or "current.cluster".
func (s *Service) resolveEngine(ctx context.Context, t *task.Task, p *Problems) error {
	if t.Current.Cluster == "" || len(p.For("current.cluster")) > 0 {
		return nil
	}
	r, err := s.clusters.Cluster(ctx, t.Current.Cluster)
	if errors.Is(err, store.ErrNotFound) {
		return nil // resolveTask says so
	}
	if err != nil {
		return err
	}
	if !r.SmartConnect.Enabled {
		p.Add("current.cluster", "Smart Connect is not enabled on instance %q: enable it on the instance's Smart Connect page (or: kmirror instance smart-connect %s --enable) first", t.Current.Cluster, t.Current.Cluster)
		return nil
	}
	if t.Engine == "" {
		t.Engine = smartConnectOf(r).Engine
	}
	if _, onConnect := t.ConnectCluster(); onConnect && s.connectRunner == nil {
		p.Add("engine", "this kmirror cannot run tasks on Kafka Connect: choose embedded")
		return nil
	}
	name, err := s.checkEngine(ctx, t.Engine, p)
	if name == "" && len(p.For("engine")) == 0 {
		t.Engine = task.EngineEmbedded
	}
	return err
}

// checkEngine checks an engine value (see task.ParseEngine) and that a
// Connect engine names a registered Connect cluster, adding problems on
// "engine". It returns the Connect cluster named, "" for the in-process
// engine.
func (s *Service) checkEngine(ctx context.Context, engine string, p *Problems) (string, error) {
	name, perr := task.ParseEngine(engine)
	if perr != nil {
		p.Add("engine", "%s", perr.Error())
		return "", nil
	}
	if name == "" {
		return "", nil
	}
	registered := false
	if s.connectClusters != nil {
		_, err := s.connectClusters.ConnectCluster(ctx, name)
		if err != nil && !errors.Is(err, store.ErrNotFound) {
			return "", err
		}
		registered = err == nil
	}
	if !registered {
		p.Add("engine", "no Kafka Connect cluster named %q is registered: register it first, or choose embedded", name)
	}
	return name, nil
}

// checkOnEngine asks the task's engine whether it can run the task as
// configured: an option it cannot honour is a problem on that option's
// field, anything else a problem on "engine".
func (s *Service) checkOnEngine(t task.Task, current, peer cluster.Settings, p *Problems) {
	r, err := s.runnerFor(t)
	if err != nil {
		p.Add("engine", "%s", err.Error())
		return
	}
	c, ok := r.(engine.Checker)
	if !ok {
		return
	}
	err = c.Check(t, current, peer)
	var fields task.FieldErrors
	switch {
	case errors.As(err, &fields):
		for _, f := range fields {
			p.Add(f.Field, "%s", f.Message)
		}
	case err != nil:
		p.Add("engine", "%s", err.Error())
	}
}

// engineWarnings are what a user should know before a task goes to its
// engine: on a Connect cluster without a config provider, the task's Kafka
// passwords go into Connect's config topic, readable through its REST API.
func (s *Service) engineWarnings(ctx context.Context, t task.Task, current, peer cluster.Settings) ([]string, error) {
	name, ok := t.ConnectCluster()
	if !ok || s.connectClusters == nil || !(current.UsesSASL() || peer.UsesSASL()) {
		return nil, nil
	}
	r, err := s.connectClusters.ConnectCluster(ctx, name)
	if errors.Is(err, store.ErrNotFound) {
		return nil, nil // a problem on "engine" says so
	}
	if err != nil {
		return nil, err
	}
	if r.ConfigProvider != "" {
		return nil, nil
	}
	return []string{fmt.Sprintf("Kafka Connect cluster %s keeps connector configurations in its config topic and shows them through its REST API: this task's Kafka passwords would be stored there as they are. Register the Connect cluster with a config provider its workers define to send references instead (docs/CONNECT.md)", name)}, nil
}

package service

import (
	"context"
	"fmt"
	"maps"
	"sort"
	"time"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/connect"
	"github.com/kmirror/kmirror/internal/connect/connectengine"
	"github.com/kmirror/kmirror/internal/connect/connectplan"
	"github.com/kmirror/kmirror/internal/task"
)

// Adopting MirrorMaker 2 connectors someone deployed on a Connect cluster
// by hand: each MirrorSourceConnector (with the checkpoint and heartbeat
// connectors of its aliases) becomes a kmirror task that goes on from
// MM2's offsets, and the MM2 connectors go (docs/CONNECT.md).

// AdoptCandidate is one MM2 flow on a Connect cluster and the task it
// would become.
type AdoptCandidate struct {
	connectplan.MM2Flow
	// Flow is "<source alias>-><target alias>".
	Flow string `json:"flow"`
	// Connectors are the MM2 connectors adopting replaces, source first.
	Connectors []string `json:"connectors"`
	// State is the source connector's state on Connect.
	State string `json:"state"`
	// Reverse is the MM2 source connector copying the other way (aliases
	// swapped), when there is one: adopting with bidirectional makes both
	// one bidirectional task.
	Reverse string `json:"reverse_connector,omitempty"`
	// Task is what adoption would create (no name: the request gives it;
	// current: the target's instance when registered, else the source's).
	Task task.Task `json:"task"`
	// Problems are the MM2 settings that keep the flow from being adopted,
	// each on the setting's name, with why; none means it can be.
	Problems Problems `json:"problems"`
}

// AdoptRequest is the body of POST /api/v1/connect-clusters/{name}/mm2/adopt.
type AdoptRequest struct {
	// SourceConnector names the MM2 MirrorSourceConnector to adopt.
	SourceConnector string `json:"source_connector"`
	// Name is the new task's.
	Name string `json:"name"`
	// Current is the registered instance the task belongs to: the source's
	// (a push task) or the target's (pull). "" picks the target's when
	// registered.
	Current string `json:"current"`
	// Engine runs the task: "embedded" or "connect:<name>"; "" is the
	// current instance's Smart Connect default.
	Engine string `json:"engine,omitempty"`
	// Bidirectional adopts the source connector's reverse (the MM2 source
	// connector copying the other way, with its checkpoint and heartbeat
	// connectors) too, as one bidirectional task.
	Bidirectional bool `json:"bidirectional,omitempty"`
}

// AdoptResult is the task created and what became of the MM2 connectors.
type AdoptResult struct {
	Task TaskInfo `json:"task"`
	// Partitions is how many source partitions' offsets were handed over.
	Partitions int `json:"partitions"`
	// Deleted are the MM2 connectors deleted from the Connect cluster.
	Deleted []string `json:"deleted_connectors"`
	// NotDeleted are those left (stopped: they copy nothing), with why.
	NotDeleted []string `json:"not_deleted,omitempty"`
}

// adoptStopWait bounds stopping the MM2 connectors and handing over.
const adoptStopWait = 3 * time.Minute

// ListAdoptable lists the MirrorMaker 2 connectors on a registered Connect
// cluster that kmirror did not create, by flow, each with the task it
// would become and what keeps it from being adopted.
func (s *Service) ListAdoptable(ctx context.Context, connectCluster string) ([]AdoptCandidate, error) {
	if err := s.allow(ctx, RoleViewer); err != nil {
		return nil, err
	}
	client, views, regs, err := s.mm2Connectors(ctx, connectCluster)
	if err != nil {
		return nil, err
	}
	client.Close()
	flows := connectplan.GroupMM2(configsOf(views))
	out := make([]AdoptCandidate, 0, len(flows))
	for _, f := range flows {
		c := candidate(f, flows, views, regs, AdoptRequest{})
		// A peer adopted by address may carry a client key read from the
		// connector: the listing shows only that it is set.
		c.Task.Peer = c.Task.Peer.WithSecrets(c.Task.Peer.Secrets().Masked())
		out = append(out, c)
	}
	return out, nil
}

// AdoptMM2 replaces an MM2 flow on a Connect cluster by a kmirror task
// that copies nothing twice: the task is checked as CreateTask checks one,
// the MM2 connectors are stopped (their offsets committed), the source
// connector's offsets are handed to the new task's engine, the task is
// stored and started, and the MM2 connectors are deleted. A failure before
// the task is stored puts the MM2 connectors back as they were. Operators and
// admins only.
func (s *Service) AdoptMM2(ctx context.Context, connectCluster string, req AdoptRequest) (_ AdoptResult, err error) {
	defer s.audit(ctx, "task.adopt", req.Name, &err)
	if err := s.allow(ctx, RoleOperator); err != nil {
		return AdoptResult{}, err
	}
	client, views, regs, err := s.mm2Connectors(ctx, connectCluster)
	if err != nil {
		return AdoptResult{}, err
	}
	defer client.Close()
	flows := connectplan.GroupMM2(configsOf(views))
	var flow connectplan.MM2Flow
	for _, f := range flows {
		if f.Source == req.SourceConnector && f.Source != "" {
			flow = f
		}
	}
	if flow.Source == "" {
		return AdoptResult{}, notFound("no MirrorMaker 2 source connector named %q that kmirror did not create on Connect cluster %q: list them with GET /api/v1/connect-clusters/%s/mm2", req.SourceConnector, connectCluster, connectCluster)
	}
	c := candidate(flow, flows, views, regs, req)
	if len(c.Problems) > 0 {
		return AdoptResult{}, invalidTask(c.Problems)
	}
	adopted := []connectplan.MM2Flow{flow}
	if req.Bidirectional {
		rev, _ := connectplan.Reverse(flow, flows) // there: candidate said so otherwise
		adopted = append(adopted, rev)
	}
	conns := c.Connectors
	partitions := 0
	prepare := func(t task.Task, current, peer cluster.Settings) (func(), error) {
		failed := func(step string, err error) error {
			s.log.Error("MM2 connectors not adopted", "task", t.Name, "connector", flow.Source, "step", step, "err", err)
			return &Error{Code: CodeAdoptFailed, Message: fmt.Sprintf("MM2 connector %s not adopted as task %s: %s failed: %v; the MM2 connectors run on as before: fix the cause and adopt again", flow.Source, t.Name, step, err)}
		}
		to, err := s.handover(t)
		if err != nil {
			return nil, failed("find the engine "+t.EngineOrDefault(), err)
		}
		ctx, cancel := context.WithTimeout(ctx, adoptStopWait)
		defer cancel()
		// resume puts the MM2 connectors back in the state they had.
		resume := func() {
			for _, n := range conns {
				var err error
				switch views[n].Status.Connector.State {
				case connect.StateStopped:
				case connect.StatePaused:
					err = client.Pause(context.WithoutCancel(ctx), n)
				default:
					err = client.Resume(context.WithoutCancel(ctx), n)
				}
				if err != nil {
					s.log.Error("MM2 connector not put back after a failed adoption", "connector", n, "err", err)
				}
			}
		}
		undo := func() {
			s.unseed(t)
			resume()
		}
		if err := connectengine.StopConnectors(ctx, client, conns); err != nil {
			resume()
			return nil, failed("stop the MM2 connectors", err)
		}
		progress := map[string][]task.Position{}
		for _, f := range adopted {
			offs, err := client.Offsets(ctx, f.Source)
			if err == nil {
				var p map[string][]task.Position
				if p, err = mm2Progress(f, offs); err == nil {
					maps.Copy(progress, p) // one flow name each
				}
			}
			if err != nil {
				resume()
				return nil, failed("read the offsets of "+f.Source, err)
			}
		}
		if err := to.Seed(t, current, peer, progress); err != nil {
			undo()
			return nil, failed("hand the offsets to "+t.EngineOrDefault(), err)
		}
		partitions = positions(progress)
		return undo, nil
	}
	t := c.Task
	info, err := s.createTask(ctx, t, prepare)
	if err != nil {
		return AdoptResult{}, err
	}
	res := AdoptResult{Task: info, Partitions: partitions, Deleted: []string{}}
	for _, n := range conns {
		if err := client.Delete(ctx, n); err != nil && !connect.IsNotFound(err) {
			res.NotDeleted = append(res.NotDeleted, fmt.Sprintf("%s: %v (it is stopped: delete it on Connect)", n, err))
			continue
		}
		res.Deleted = append(res.Deleted, n)
	}
	s.log.Info("MM2 connectors adopted", "task", t.Name, "connect_cluster", connectCluster, "deleted", res.Deleted,
		"partitions", partitions, "engine", info.Engine, "by", actorName(ctx))
	return res, nil
}

// mm2Progress is the MM2 source connector's offsets as the flow's
// progress: next offsets by flow name, as an engine's Seed takes them.
func mm2Progress(f connectplan.MM2Flow, offs connect.Offsets) (map[string][]task.Position, error) {
	name := task.FlowSpec{SourceAlias: f.SourceAlias, TargetAlias: f.TargetAlias}.Name()
	out := map[string][]task.Position{}
	for _, o := range offs.Offsets {
		pos, err := o.MirrorSource()
		if err != nil {
			return nil, err
		}
		if pos.Cluster != f.SourceAlias {
			continue // left from an earlier alias: not this flow's
		}
		out[name] = append(out[name], task.Position{Topic: pos.Topic, Partition: pos.Partition, Next: pos.Offset + 1})
	}
	return out, nil
}

// candidate maps one flow; the request's name, current and engine go into
// the task.
// With req.Bidirectional the flow's reverse is adopted with it, as one
// bidirectional task (connectplan.AdoptPair).
func candidate(f connectplan.MM2Flow, all []connectplan.MM2Flow, views map[string]connect.ConnectorView, regs []connectplan.Registered, req AdoptRequest) AdoptCandidate {
	in := connectplan.AdoptInput{Flow: f, Configs: configsOf(views), Clusters: regs,
		Name: req.Name, Current: req.Current, Engine: req.Engine}
	rev, hasRev := connectplan.Reverse(f, all)
	var t task.Task
	var fe task.FieldErrors
	adopted := []connectplan.MM2Flow{f}
	if req.Bidirectional && hasRev {
		t, fe = connectplan.AdoptPair(in, rev)
		adopted = append(adopted, rev)
	} else {
		t, fe = connectplan.Adopt(in)
	}
	c := AdoptCandidate{MM2Flow: f, Flow: f.SourceAlias + "->" + f.TargetAlias, Connectors: []string{},
		State: views[f.Source].Status.Connector.State, Task: t, Problems: Problems{}}
	if hasRev {
		c.Reverse = rev.Source
	}
	if req.Bidirectional && !hasRev {
		c.Problems.Add("bidirectional", "no MirrorMaker 2 source connector copies %s -> %s on this Connect cluster: adopt %s as a one-way task", f.TargetAlias, f.SourceAlias, f.Source)
	}
	for _, e := range fe {
		c.Problems.Add(e.Field, "%s", e.Message)
	}
	for _, a := range adopted {
		c.Connectors = append(c.Connectors, a.Connectors()...)
		for _, o := range all {
			if o.Source != a.Source && o.Source != "" && o.SourceAlias == a.SourceAlias && o.TargetAlias == a.TargetAlias {
				c.Problems.Add("source.cluster.alias", "MM2 connectors %s and %s both copy %s -> %s and share its checkpoint and heartbeat connectors: delete one of them first", a.Source, o.Source, a.SourceAlias, a.TargetAlias)
			}
		}
	}
	return c
}

// mm2Connectors reads every connector on a registered Connect cluster and
// the registered Kafka clusters adoption matches against.
//
// The client is the caller's to close.
func (s *Service) mm2Connectors(ctx context.Context, connectCluster string) (*connect.Client, map[string]connect.ConnectorView, []connectplan.Registered, error) {
	cs, err := s.ConnectClusterSettings(ctx, connectCluster)
	if err != nil {
		return nil, nil, nil, err
	}
	client, err := connect.New(connectConfig(cs))
	if err != nil {
		return nil, nil, nil, fmt.Errorf("Connect cluster %q: %w", connectCluster, err)
	}
	views, err := client.Connectors(ctx)
	if err != nil {
		client.Close()
		// Said to the caller, not hidden as an internal error: the Connect
		// cluster is theirs to fix.
		return nil, nil, nil, &Error{Code: CodeAdoptFailed, Message: fmt.Sprintf(
			"Kafka Connect cluster %s did not list its connectors: %v: check that its workers run and its URLs are right (kmirror connect-cluster check %s)",
			connectCluster, err, connectCluster)}
	}
	regs, err := s.registered(ctx)
	if err != nil {
		return nil, nil, nil, err
	}
	return client, views, regs, nil
}

// registered are the registered Kafka clusters as adoption matches
// MirrorMaker's bootstrap servers against them, by name.
func (s *Service) registered(ctx context.Context) ([]connectplan.Registered, error) {
	recs, err := s.clusters.ListClusters(ctx)
	if err != nil {
		return nil, err
	}
	regs := make([]connectplan.Registered, 0, len(recs))
	for _, r := range recs {
		regs = append(regs, connectplan.Registered{Name: r.Name, BootstrapServers: r.BootstrapServers})
	}
	sort.Slice(regs, func(i, j int) bool { return regs[i].Name < regs[j].Name })
	return regs, nil
}

func configsOf(views map[string]connect.ConnectorView) map[string]map[string]string {
	out := make(map[string]map[string]string, len(views))
	for n, v := range views {
		out[n] = v.Info.Config
	}
	return out
}

package connectengine

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/connect"
	"github.com/kmirror/kmirror/internal/connect/connectplan"
	"github.com/kmirror/kmirror/internal/replicator"
	"github.com/kmirror/kmirror/internal/task"
)

// Moving a task between engines: Halt stops it where it runs with its
// progress kept, Progress reads that progress, Seed stores progress from
// the other engine before Start. On Connect the progress of a flow is its
// source connector's offsets (KIP-875), which can only be read exactly and
// altered while the connector is STOPPED.

// stopWait bounds waiting for Connect to apply a stop.
const stopWait = 2 * time.Minute

// Halt stops the task's connectors (STOPPED: tasks shut down, offsets
// committed, nothing copied) and forgets it here.
func (e *Engine) Halt(t task.Task) error {
	e.forget(t.Name)
	ctx, cancel := context.WithTimeout(context.Background(), stopWait+requestTimeout)
	defer cancel()
	cc, client, err := e.clientFor(ctx, t)
	if err != nil {
		return err
	}
	if err := stopConnectors(ctx, client, e.d.Names(t), true); err != nil {
		return fmt.Errorf("on %s: %w", cc.Name, err)
	}
	return nil
}

// Progress is a halted task's progress by flow name: each source
// connector's last copied offsets, as next offsets.
func (e *Engine) Progress(t task.Task, current, peer cluster.Settings) (map[string][]task.Position, error) {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	cc, client, err := e.clientFor(ctx, t)
	if err != nil {
		return nil, err
	}
	conns, err := e.d.Plan(t, current, peer, cc)
	if err != nil {
		return nil, err
	}
	out := map[string][]task.Position{}
	for _, c := range conns {
		if c.Copy == nil {
			continue
		}
		offs, err := client.Offsets(ctx, c.Name)
		if connect.IsNotFound(err) {
			continue // never deployed: nothing copied
		}
		if err != nil {
			return nil, fmt.Errorf("offsets of connector %s on %s: %w", c.Name, cc.Name, err)
		}
		for _, o := range offs.Offsets {
			pos, err := o.MirrorSource()
			if err != nil {
				return nil, fmt.Errorf("connector %s: %w", c.Name, err)
			}
			out[c.Flow] = append(out[c.Flow], task.Position{Topic: pos.Topic, Partition: pos.Partition, Next: pos.Offset + 1})
		}
	}
	return out, nil
}

// Seed deploys the task's connectors stopped and sets their offsets to the
// progress handed over (by flow name); Start then resumes them.
func (e *Engine) Seed(t task.Task, current, peer cluster.Settings, progress map[string][]task.Position) error {
	ctx, cancel := context.WithTimeout(context.Background(), stopWait+requestTimeout)
	defer cancel()
	cc, client, err := e.clientFor(ctx, t)
	if err != nil {
		return err
	}
	conns, err := e.d.Plan(t, current, peer, cc)
	if err != nil {
		return fmt.Errorf("task %s cannot run on Kafka Connect cluster %s: %w", t.Name, cc.Name, err)
	}
	// Deployed stopped; one there from an earlier deployment is updated
	// and stopped with the others, waiting out their last commits once.
	var existing []string
	for _, c := range conns {
		_, err := client.Create(ctx, c.Name, c.Config, connect.StateStopped)
		if connect.IsConflict(err) {
			_, _, err = client.CreateOrUpdate(ctx, c.Name, c.Config)
			existing = append(existing, c.Name)
		}
		if err != nil {
			return fmt.Errorf("deploy connector %s stopped on %s: %w", c.Name, cc.Name, err)
		}
	}
	if err := stopConnectors(ctx, client, existing, false); err != nil {
		return fmt.Errorf("stop the connectors of an earlier deployment on %s: %w", cc.Name, err)
	}
	for _, c := range conns {
		if c.Copy == nil {
			continue
		}
		alias := c.Config["source.cluster.alias"]
		var offs []connect.Offset
		for _, p := range progress[c.Flow] {
			if p.Next > 0 {
				offs = append(offs, connect.MirrorSourceOffset(alias, p.Topic, p.Partition, p.Next-1))
			}
		}
		if len(offs) == 0 {
			continue
		}
		// A connector created stopped shows STOPPED once the workers have
		// read it from the config topic.
		if err := waitConnectorState(ctx, client, c.Name, connect.StateStopped); err != nil {
			return err
		}
		if _, err := client.AlterOffsets(ctx, c.Name, offs); err != nil {
			return fmt.Errorf("set the offsets of connector %s on %s: %w", c.Name, cc.Name, err)
		}
	}
	return nil
}

// forget drops the task from this engine's watch without touching Connect.
func (e *Engine) forget(name string) {
	e.unpend(name)
	e.mu.Lock()
	delete(e.tasks, name)
	e.mu.Unlock()
}

func (e *Engine) clientFor(ctx context.Context, t task.Task) (connectplan.Cluster, *connect.Client, error) {
	cc, err := e.resolve(ctx, t)
	if err != nil {
		return connectplan.Cluster{}, nil, err
	}
	client, err := connect.Shared(cc.Client)
	return cc, client, err
}

// StopConnectors asks Connect to stop connectors and waits until each
// shows STOPPED with no task left and their last offsets are committed: a
// connector kmirror did not deploy, which adoption replaces, is stopped the
// same way.
func StopConnectors(ctx context.Context, client *connect.Client, names []string) error {
	return stopConnectors(ctx, client, names, false)
}

// finalCommitGrace is how long a worker may still be stopping a task, and
// writing its last offsets, after Connect shows the connector STOPPED with
// no task: the leader drops a stopped connector's task statuses when the
// rebalance completes, while a worker that was revoked the task in that
// rebalance stops it (task.shutdown.graceful.timeout.ms, 5 s by default)
// and commits its offsets only then. Offsets read before that miss the
// last ones, and the records after them are copied twice. Measured: an MM2
// task stopped during another connector's rebalance had none committed.
const finalCommitGrace = 6 * time.Second

// stopConnectors stops the connectors and waits until each shows STOPPED
// with no task, then the final commits' grace once for all of them. With
// missingOK a connector that is not there counts as stopped.
func stopConnectors(ctx context.Context, client *connect.Client, names []string, missingOK bool) error {
	var stopped []string
	for _, name := range names {
		err := client.Stop(ctx, name)
		if missingOK && connect.IsNotFound(err) {
			continue
		}
		if err != nil {
			return fmt.Errorf("stop connector %s: %w", name, err)
		}
		stopped = append(stopped, name)
	}
	for _, name := range stopped {
		err := waitConnectorState(ctx, client, name, connect.StateStopped)
		if missingOK && connect.IsNotFound(err) {
			continue // deleted meanwhile: as good as stopped
		}
		if err != nil {
			return err
		}
	}
	if len(stopped) == 0 {
		return nil
	}
	select {
	case <-ctx.Done():
		return fmt.Errorf("waiting for the last offsets of %v: %w", stopped, ctx.Err())
	case <-time.After(finalCommitGrace):
		return nil
	}
}

func waitConnectorState(ctx context.Context, client *connect.Client, name, want string) error {
	ctx, cancel := context.WithTimeout(ctx, stopWait)
	defer cancel()
	for {
		st, err := client.Status(ctx, name)
		if err == nil && st.Connector.State == want && (want != connect.StateStopped || len(st.Tasks) == 0) {
			return nil
		}
		select {
		case <-ctx.Done():
			return errors.Join(fmt.Errorf("connector %s not %s within %s (it shows %s)", name, want, stopWait, st.Connector.State), err)
		case <-time.After(300 * time.Millisecond): // Connect applies it through its config topic
		}
	}
}

// startAtLatest deploys a copy connector that is not on Connect yet for a
// task whose start offset is latest: created STOPPED, its offsets set to
// every selected partition's end (the last stable offset: an open
// transaction's records are still to copy), then left to the caller to
// resume. MirrorMaker 2's own "latest" would apply to partitions it finds
// later too, skipping what was written to them before it looked; these
// start at their first record (auto.offset.reset=earliest), as on the
// embedded engine. Offsets Connect kept from an earlier task of the same
// name stay: that task resumes there, as on the embedded engine, where
// latest is for partitions without progress.
func startAtLatest(ctx context.Context, client *connect.Client, c connectplan.Connector) error {
	// The ends first: a source kmirror cannot read fails the start before
	// anything is deployed.
	ends, err := sourceEnds(c.Copy)
	if err != nil {
		return fmt.Errorf("the end offsets of %s: %w", c.Copy.Source.Name, err)
	}
	next := map[string]int64{}
	for _, p := range ends {
		next[task.PartitionKey(p.Topic, p.Partition)] = p.Next
	}
	return createAt(ctx, client, c, next, true)
}

// createAt creates a copy connector STOPPED and sets its offsets so it
// copies each source partition ("topic/partition") from next, then leaves it
// to the caller to resume. Offsets Connect kept from an earlier connector of
// the same name stay: wherever they are when keepAny (a latest start
// resumes an earlier task), else only where they are ahead of next (a way
// back deleted outside kmirror resumes where it was, never copying again
// what it copied; stale offsets of an earlier way back move up to next).
func createAt(ctx context.Context, client *connect.Client, c connectplan.Connector, next map[string]int64, keepAny bool) error {
	if _, err := client.Create(ctx, c.Name, c.Config, connect.StateStopped); err != nil {
		return err
	}
	if err := waitConnectorState(ctx, client, c.Name, connect.StateStopped); err != nil {
		return err
	}
	offs, err := unplaced(ctx, client, c, next, keepAny)
	if err != nil || len(offs) == 0 {
		return err
	}
	_, err = client.AlterOffsets(ctx, c.Name, offs)
	return err
}

// finishStart places a way back's connector that exists already where it
// starts, on the partitions whose offset is behind it or missing: kmirror
// may have stopped between creating it (STOPPED) and setting its offsets,
// and resumed now it would copy from the beginning what came from the other
// side. Once it copies, its offsets are past the point and this changes
// nothing.
func finishStart(ctx context.Context, client *connect.Client, c connectplan.Connector) error {
	offs, err := unplaced(ctx, client, c, c.StartAt, false)
	if err != nil || len(offs) == 0 {
		return err
	}
	if err := stopConnectors(ctx, client, []string{c.Name}, false); err != nil {
		return err
	}
	if offs, err = unplaced(ctx, client, c, c.StartAt, false); err != nil || len(offs) == 0 {
		return err
	}
	_, err = client.AlterOffsets(ctx, c.Name, offs)
	return err
}

// unplaced are the offsets that make c copy each partition of next from its
// offset there, but where Connect holds one for c that stays: any when
// keepAny, else one at or past next. MM2 starts a partition without an
// offset at 0, so a next of 0 needs none.
func unplaced(ctx context.Context, client *connect.Client, c connectplan.Connector, next map[string]int64, keepAny bool) ([]connect.Offset, error) {
	kept, err := client.Offsets(ctx, c.Name)
	if err != nil {
		return nil, err
	}
	have := map[string]int64{} // the next offset Connect holds
	for _, o := range kept.Offsets {
		if pos, err := o.MirrorSource(); err == nil {
			have[task.PartitionKey(pos.Topic, pos.Partition)] = pos.Offset + 1
		}
	}
	alias := c.Config["source.cluster.alias"]
	var offs []connect.Offset
	for _, key := range slices.Sorted(maps.Keys(next)) {
		n := next[key]
		if h, ok := have[key]; n <= 0 || ok && (keepAny || h >= n) {
			continue
		}
		topic, p, err := task.SplitPartitionKey(key)
		if err != nil {
			return nil, err
		}
		// MM2 keeps the last copied offset and goes on after it.
		offs = append(offs, connect.MirrorSourceOffset(alias, topic, p, n-1))
	}
	return offs, nil
}

// skipReturned moves a held copy connector past what a way back wrote to its
// source (connectplan.Connector.Skip) before it copies again: those records
// came from its own target. A partition moves when its next offset is
// before the stretch's end — at its start, or before it by a tail of
// transaction markers MM2 never copies, or with no offset at all (a
// partition empty at the switchover) — since a way back needs a drained
// switchover, which left nothing else to copy there. A later start finds
// every partition past it and changes nothing.
func skipReturned(ctx context.Context, client *connect.Client, c connectplan.Connector) error {
	if len(c.Skip) == 0 {
		return nil
	}
	alias := c.Config["source.cluster.alias"]
	moves := func() ([]connect.Offset, error) {
		kept, err := client.Offsets(ctx, c.Name)
		if err != nil {
			return nil, err
		}
		next := map[string]int64{}
		for _, o := range kept.Offsets {
			if pos, err := o.MirrorSource(); err == nil {
				next[task.PartitionKey(pos.Topic, pos.Partition)] = pos.Offset + 1
			}
		}
		var offs []connect.Offset
		for _, key := range slices.Sorted(maps.Keys(c.Skip)) {
			st := c.Skip[key]
			if n, ok := next[key]; st.To <= 0 || ok && n >= st.To {
				continue
			}
			topic, p, err := task.SplitPartitionKey(key)
			if err != nil {
				return nil, err
			}
			offs = append(offs, connect.MirrorSourceOffset(alias, topic, p, st.To-1))
		}
		return offs, nil
	}
	offs, err := moves()
	if err != nil || len(offs) == 0 {
		return err
	}
	// Offsets are changed only on a stopped connector, read again once its
	// last commit is in.
	if err := stopConnectors(ctx, client, []string{c.Name}, false); err != nil {
		return err
	}
	if offs, err = moves(); err != nil || len(offs) == 0 {
		return err
	}
	_, err = client.AlterOffsets(ctx, c.Name, offs)
	return err
}

// removeUnplanned deletes the task's connectors that its plan no longer
// has (a way back that went home, a checkpoint connector whose offset sync
// was turned off), their offsets first: a connector of that name later
// starts afresh.
func removeUnplanned(ctx context.Context, client *connect.Client, all []string, plan []connectplan.Connector) error {
	planned := map[string]bool{}
	for _, c := range plan {
		planned[c.Name] = true
	}
	var gone []string
	for _, name := range all {
		if planned[name] {
			continue
		}
		if _, err := client.Connector(ctx, name); connect.IsNotFound(err) {
			continue
		} else if err != nil {
			return fmt.Errorf("read connector %s: %w", name, err)
		}
		gone = append(gone, name)
	}
	if len(gone) == 0 {
		return nil
	}
	if err := stopConnectors(ctx, client, gone, true); err != nil {
		return err
	}
	for _, name := range gone {
		if _, err := client.ResetOffsets(ctx, name); err != nil && !connect.IsNotFound(err) {
			return fmt.Errorf("reset the offsets of connector %s: %w", name, err)
		}
		if err := client.Delete(ctx, name); err != nil && !connect.IsNotFound(err) {
			return fmt.Errorf("delete connector %s: %w", name, err)
		}
	}
	return nil
}

// selectedPartitions are the partitions of every source topic a copy
// selects, from src's metadata read now.
func selectedPartitions(src sarama.Client, cp *connectplan.Copy) (map[string][]int32, error) {
	if err := src.RefreshMetadata(); err != nil {
		return nil, err
	}
	topics, err := src.Topics()
	if err != nil {
		return nil, err
	}
	out := map[string][]int32{}
	for _, topic := range topics {
		if cp.Selects == nil || !cp.Selects(topic) {
			continue
		}
		if out[topic], err = src.Partitions(topic); err != nil {
			return nil, fmt.Errorf("partitions of %s: %w", topic, err)
		}
	}
	return out, nil
}

// sourceEnds are the last stable offsets of every partition a copy selects.
func sourceEnds(cp *connectplan.Copy) ([]task.Position, error) {
	cfg, err := cp.Source.Config("kmirror-connect-latest")
	if err != nil {
		return nil, err
	}
	client, err := sarama.NewClient(cp.Source.BootstrapServers, cfg)
	if err != nil {
		return nil, err
	}
	defer client.Close()
	parts, err := selectedPartitions(client, cp)
	if err != nil {
		return nil, err
	}
	ends, err := replicator.ListOffsets(client, parts, sarama.OffsetNewest)
	if err != nil {
		return nil, err
	}
	var out []task.Position
	for topic, ps := range parts {
		for _, p := range ps {
			out = append(out, task.Position{Topic: topic, Partition: p, Next: ends[topic][p]})
		}
	}
	return out, nil
}

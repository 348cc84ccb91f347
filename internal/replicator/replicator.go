package replicator

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/clustercheck"
	"github.com/kmirror/kmirror/internal/engine"
	"github.com/kmirror/kmirror/internal/mm2"
	"github.com/kmirror/kmirror/internal/task"
)

// Replicator runs one flow. Run blocks until ctx ends; errors are retried
// with backoff and reported through Status, never returned while ctx lives.
type Replicator struct {
	flow  Flow
	opts  Options
	log   *slog.Logger
	state *flowState
	// historyLoaded: the offset-syncs topic was read once; later syncs come
	// from this process's own acknowledgements.
	historyLoaded bool
	// ranBefore: the flow's start was read from (or written to) its
	// progress topic once; a later run of this process needs not read it
	// again, so a restart while that topic has no leader still starts at
	// least once. An exactly-once worker's start fails until the leader
	// is back, then closes what its fence left open there
	// (worker.closeOwnProgress).
	ranBefore bool

	mu   sync.Mutex
	ckpt *checkpointer // the running checkpointer, for on-demand syncs (failover)

	// targetIDs are the target topics' ids seen by planning rounds, kept
	// across rounds and flow restarts: a target topic gone from the
	// target is one that was deleted under the copy (planner.run).
	targetIDs map[string]string
}

func (r *Replicator) newCheckpointer(srcAdmin sarama.ClusterAdmin, dst sarama.Client, dstAdmin sarama.ClusterAdmin) *checkpointer {
	cp := &checkpointer{flow: r.flow, state: r.state, srcAdmin: srcAdmin, dst: dst, dstAdmin: dstAdmin,
		log: r.log.With("component", "checkpoints"), emitted: map[string]mm2.Checkpoint{}}
	r.mu.Lock()
	r.ckpt = cp
	r.mu.Unlock()
	return cp
}

// SyncGroup translates one consumer group's offsets and commits them to the
// target now (the failover helper). It needs the flow running with
// consumer-offset sync on.
func (r *Replicator) SyncGroup(ctx context.Context, group string) ([]GroupResult, error) {
	cp, err := r.checkpointer()
	if err != nil {
		return nil, err
	}
	return cp.Sync(ctx, group)
}

// checkpointer is the running flow's consumer-offset sync.
func (r *Replicator) checkpointer() (*checkpointer, error) {
	r.mu.Lock()
	cp := r.ckpt
	r.mu.Unlock()
	if cp == nil {
		return nil, errors.New("consumer offset sync is not running for this flow: the task must run with sync consumer offsets on")
	}
	return cp, nil
}

// New prepares a Replicator; nothing connects until Run.
func New(flow Flow, opts Options, log *slog.Logger) *Replicator {
	if log == nil {
		log = slog.Default()
	}
	r := &Replicator{
		flow:  flow,
		opts:  opts.withDefaults(),
		log:   log.With("task", flow.Task, "flow", flow.Name()),
		state: newFlowState(flow.Name()),
	}
	r.state.degradedAfter = r.opts.DegradedAfter
	r.state.histLimit = r.opts.SyncHistoryLimit
	if flow.Returns != nil {
		r.state.returns, r.state.returnedBack = flow.Returns.Points, flow.Returns.BackHistoryTopic != ""
	}
	return r
}

// Flow returns what this Replicator runs.
func (r *Replicator) Flow() Flow { return r.flow }

// Status is a snapshot of the flow's state and counters.
func (r *Replicator) Status() engine.FlowStatus { return r.state.snapshot(time.Now()) }

// Run replicates until ctx is cancelled, then stops gracefully: intake stops,
// in-flight records are acknowledged, progress is committed.
func (r *Replicator) Run(ctx context.Context) error {
	backoff := time.Second
	for {
		started := time.Now()
		err := r.runOnce(ctx)
		if ctx.Err() != nil {
			r.state.set(task.StateStopped, "")
			return nil
		}
		if err == nil {
			err = errors.New("replication stopped unexpectedly")
		}
		if errors.As(err, new(*fencedError)) {
			// Not retried: a restart would fence the other kmirror in
			// turn, and the two would take turns copying.
			r.log.Error("flow stopped", "error", err)
			r.state.fail(err)
			<-ctx.Done()
			r.state.set(task.StateStopped, "")
			return nil
		}
		r.state.restarts.Add(1)
		r.log.Warn("flow failed; retrying", "error", err, "in", backoff)
		r.state.fail(err)
		if time.Since(started) > 2*r.opts.MaxBackoff {
			backoff = time.Second // it ran fine for a while: start the backoff over
		}
		select {
		case <-ctx.Done():
			r.state.set(task.StateStopped, "")
			return nil
		case <-time.After(backoff):
		}
		backoff = min(2*backoff, r.opts.MaxBackoff)
	}
}

// explainConnect says a connection failure the connectivity check
// recognises (an address, TLS, a certificate, SASL, an OAuth token) in its
// words, so a failed flow's reason says what to fix; others stay as sarama
// said them.
func explainConnect(s cluster.Settings, err error) error {
	var e *clustercheck.Error
	if errors.As(clustercheck.Explain(s, "", err), &e) && e.Step != clustercheck.StepMetadata {
		return e
	}
	return err
}

func adminClient(s cluster.Settings, id string) (sarama.Client, sarama.ClusterAdmin, error) {
	cfg, err := s.Config(id)
	if err != nil {
		return nil, nil, err
	}
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Producer.Return.Successes = true // the flow's start record (progresslog.go)
	cfg.Producer.Return.Errors = true
	client, err := sarama.NewClient(s.BootstrapServers, cfg)
	if err != nil {
		return nil, nil, fmt.Errorf("connect to %s: %w", s.Name, explainConnect(s, err))
	}
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		client.Close()
		return nil, nil, fmt.Errorf("admin client for %s: %w", s.Name, err)
	}
	return client, admin, nil
}

func (r *Replicator) runOnce(ctx context.Context) error {
	id := "kmirror-" + r.flow.Task + "-" + r.flow.Name()
	src, srcAdmin, err := adminClient(r.flow.Source.Settings, id)
	if err != nil {
		return fmt.Errorf("source %s: %w", r.flow.Source.Alias, err)
	}
	defer srcAdmin.Close() // closes src too
	dst, dstAdmin, err := adminClient(r.flow.Target.Settings, id)
	if err != nil {
		return fmt.Errorf("target %s: %w", r.flow.Target.Alias, err)
	}
	defer dstAdmin.Close()
	if _, err := ensureInternalTopic(dst, dstAdmin, r.flow.ProgressTopic, r.flow.ReplicationFactor, progressTopicConfig); err != nil {
		return err
	}
	// Partitions without progress start at the task's start offset only in
	// the flow's first planning round ever; any found later start at their
	// first record (progressLog.started).
	unstoredFrom := task.StartEarliest
	if !r.ranBefore {
		waitLeader(ctx, dst, r.flow.ProgressTopic, 10*time.Second)
		startLog, err := newProgressLog(dst, r.flow.ProgressTopic, r.flow, r.opts.ProgressLogInterval)
		if err != nil {
			return err
		}
		ranBefore, err := startLog.started()
		startLog.close()
		if err != nil {
			return err
		}
		if !ranBefore && !r.ranBefore {
			unstoredFrom = r.flow.StartOffset
		}
		r.ranBefore = true
	}
	syncClient, syncAdmin, err := adminClient(r.flow.OffsetSyncs, id+"-offset-syncs")
	if err != nil {
		return fmt.Errorf("offset syncs cluster: %w", err)
	}
	defer syncAdmin.Close()
	if _, err := ensureInternalTopic(syncClient, syncAdmin, r.flow.OffsetSyncsTopic, r.flow.ReplicationFactor, nil); err != nil {
		return err
	}
	if _, err := ensureInternalTopic(syncClient, syncAdmin, r.flow.SyncHistoryTopic, r.flow.ReplicationFactor, syncHistoryConfig); err != nil {
		return err
	}
	// Progress waits for distance-change syncs to be written: wait for the
	// (possibly just created) topic to have a leader, so the first syncs
	// do not sit in backoff.
	waitLeader(ctx, syncClient, r.flow.OffsetSyncsTopic, 10*time.Second)
	waitLeader(ctx, syncClient, r.flow.SyncHistoryTopic, 10*time.Second)
	syncs, err := newSyncWriter(r.flow.OffsetSyncs, id+"-offset-syncs", r.flow.OffsetSyncsTopic, r.flow.SyncHistoryTopic, r.log, func(err error) {
		r.state.setSyncError("write offset sync (progress is held back until it is written again): " + err.Error())
	})
	if err != nil {
		return fmt.Errorf("offset syncs producer: %w", err)
	}
	defer func() {
		if !syncs.close() {
			r.log.Warn("offset syncs still unwritten at the stop; the records after them are copied again at the next start", "topic", r.flow.OffsetSyncsTopic, "waited", syncCloseWait)
		}
	}()

	if !r.historyLoaded {
		if err := r.loadHistory(syncClient); err != nil {
			return err
		}
		r.historyLoaded = true
	}
	if r.flow.SyncGroupOffsets {
		if _, err := ensureInternalTopic(dst, dstAdmin, r.flow.CheckpointsTopic, r.flow.ReplicationFactor, nil); err != nil {
			return err
		}
		cp := r.newCheckpointer(srcAdmin, dst, dstAdmin)
		cctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		go func() { defer close(done); cp.run(cctx, r.opts.CheckpointInterval) }()
		defer func() { stop(); <-done; cp.close() }()
	}

	if r.opts.HeartbeatInterval > 0 {
		defer startHeartbeats(ctx, &heartbeater{flow: r.flow, state: r.state,
			log: r.log.With("component", "heartbeats"), now: time.Now}, r.opts.HeartbeatInterval)()
	}

	if r.targetIDs == nil {
		r.targetIDs = map[string]string{}
	}
	pl := &planner{flow: r.flow, src: src, dst: dst, srcAdmin: srcAdmin, dstAdmin: dstAdmin, log: r.log, targetIDs: r.targetIDs}
	var (
		current []Partition
		ws      = &workerSet{}
		errs    = make(chan error, 64)
	)
	defer func() { ws.stop() }() // the set running then
	tick := time.NewTicker(r.opts.RefreshInterval)
	defer tick.Stop()
	// nextRound waits for the next planning round; stop is true when the
	// flow ends, with a worker's error or nil for a stop.
	nextRound := func() (stop bool, err error) {
		select {
		case <-ctx.Done():
			return true, nil
		case err := <-errs:
			return true, err
		case <-tick.C:
			return false, nil
		}
	}
	for {
		var (
			p   plan
			err error
		)
		if !interruptible(ctx, 0, func() { p, err = pl.run() }) {
			return nil
		}
		if err != nil && current == nil {
			return err
		}
		if err != nil {
			// Planning is control: while a cluster is briefly away the
			// workers keep their partitions and their producers ride out
			// the outage with in-order retries. Tearing them down here
			// would fail records mid-retry while later ones still land.
			r.log.Warn("topic sync failed; copying goes on, will retry", "error", err)
			r.state.setError(err.Error())
			if stop, err := nextRound(); stop {
				return err
			}
			continue
		}
		r.state.mu.Lock()
		r.state.topics, r.state.conflicts, r.state.unavailable = p.Topics, p.Conflicts, p.Unavailable
		r.state.mu.Unlock()
		if added, full := roundChange(current, p.Partitions, ws.workers, r.flow); full || len(added) > 0 {
			start := p.Partitions
			if full {
				ws.stop()
				ws = &workerSet{}
				wctx, cancel := context.WithCancel(ctx)
				ws.ctx, ws.cancel = wctx, cancel
			} else {
				start = added
			}
			current = p.Partitions
			// Counted before any worker starts, so each sizes its
			// buffers from the flow's whole partition count.
			ws.leaves = append(ws.leaves, r.opts.Budget.join(len(start)))
			for _, a := range Assign(start, r.flow.Workers) {
				a.ID += ws.workers // a worker added beside running ones has an id of its own
				w := &worker{flow: r.flow, asg: a, opts: r.opts, state: r.state, syncs: syncs, unstoredFrom: unstoredFrom,
					log: r.log.With("assignment", a.ID), header: []byte(r.flow.Source.Alias)}
				ws.wg.Add(1)
				go func() {
					defer ws.wg.Done()
					if err := w.run(ws.ctx); err != nil {
						select {
						case errs <- fmt.Errorf("assignment %d: %w", a.ID, err):
						default: // the flow ends on the errors queued before: ws.stop must not wait on this send
							w.log.Error("worker failed", "error", err)
						}
					}
				}()
			}
			ws.workers += min(len(start), max(r.flow.Workers, 1))
			if full {
				r.log.Info("replicating", "topics", len(p.Topics), "partitions", len(current))
			} else {
				r.log.Info("replicating new partitions beside the running ones", "partitions", len(start), "topics", len(p.Topics), "workers", ws.workers)
			}
			unstoredFrom = task.StartEarliest // later rounds find partitions written after the start
		}
		if !interruptible(ctx, 0, func() { r.checkInternals(dst, dstAdmin, syncClient, syncAdmin) }) {
			return nil
		}
		r.state.set(task.StateRunning, "")
		if len(p.Gone) > 0 {
			// The workers that wrote to the gone topics stopped above:
			// plan again now, which creates them anew.
			continue
		}
		if stop, err := nextRound(); stop {
			return err
		}
	}
}

// checkInternals checks the flow's internal topics (checkInternal).
func (r *Replicator) checkInternals(dst sarama.Client, dstAdmin sarama.ClusterAdmin, syncClient sarama.Client, syncAdmin sarama.ClusterAdmin) {
	r.checkInternal(dst, dstAdmin, r.flow.ProgressTopic, progressTopicConfig,
		"until the next progress write, the flow's progress is kept only in its consumer group on the source, which Kafka expires after offsets.retention.minutes",
		"progress is kept only in the flow's consumer group on the source, which Kafka expires after offsets.retention.minutes, and a restart of the flow waits for the topic")
	r.checkInternal(syncClient, syncAdmin, r.flow.SyncHistoryTopic, syncHistoryConfig,
		"distance changes written before are lost: after a restart of kmirror, group offsets older than now are translated with MM2's safe rule (behind) or not at all",
		"progress is held back at the first distance change (an upstream gap) until its sync is written")
	r.checkInternal(syncClient, syncAdmin, r.flow.OffsetSyncsTopic, nil,
		"MM2's tools lose the offset syncs written before; kmirror's own translation keeps them in its sync history",
		"MM2's offset syncs are not written: MM2's tools translate consumer offsets from older syncs, further behind")
	if r.flow.SyncGroupOffsets && r.checkInternal(dst, dstAdmin, r.flow.CheckpointsTopic, nil,
		"checkpoints are written again at the next consumer offset sync",
		"checkpoints are not written") {
		r.mu.Lock()
		cp := r.ckpt
		r.mu.Unlock()
		if cp != nil {
			cp.forget()
		}
	}
}

// interruptible runs f and says whether it ended before ctx did, or
// within grace after (grace < 0: whenever it ends). Otherwise it returns
// false and f ends in the background once its clients fail or are closed:
// planning, the internal topics' checks and an exactly-once flow's calls to
// the transaction coordinator ask the clusters through sarama, which takes
// no context, and one that stops answering (a hung broker) must not hold a
// pause, delete or stop. f writes only what the caller reads after true.
func interruptible(ctx context.Context, grace time.Duration, f func()) bool {
	done := make(chan struct{})
	go func() { defer close(done); f() }()
	select {
	case <-done:
		return true
	case <-ctx.Done():
	}
	if grace < 0 {
		<-done
		return true
	}
	select {
	case <-done:
		return true
	case <-time.After(grace):
		return false
	}
}

// workerSet is the running workers of one full start and of the
// additions after it.
type workerSet struct {
	ctx     context.Context
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	leaves  []func() // give each start's partitions' budget share back
	workers int      // started since the full start
}

// stop cancels the workers and waits until each committed its progress.
func (s *workerSet) stop() {
	if s.cancel != nil {
		s.cancel()
	}
	s.wg.Wait()
	for _, leave := range s.leaves {
		leave()
	}
	s.leaves = nil
}

// maxAddedWorkers bounds the workers started beside a full start's, as a
// multiple of the task's: past it, an addition starts every partition
// again, spread over the task's workers (each worker holds its own
// clients and connections).
const maxAddedWorkers = 2

// roundChange compares the running partitions with a planning round's:
// full when every worker must start again (the first round with
// partitions; a partition
// gone or changed — a new max.message.bytes, a topic created again; an
// exactly-once flow, whose transactional ids are its workers' ids and
// whose open progress only its own worker closes; or, for an addition,
// workers started beside the full start's reaching maxAddedWorkers times
// the task's), else the partitions added, started beside the running
// workers, which go on undisturbed. Neither: nothing changed.
func roundChange(current, next []Partition, workers int, f Flow) (added []Partition, full bool) {
	if len(current) == 0 {
		// Nothing ran: start what there is (an empty round starts
		// nothing, so the task's start offset still applies to the first
		// partitions found).
		return nil, len(next) > 0
	}
	have := make(map[Partition]bool, len(current))
	for _, p := range current {
		have[p] = true
	}
	kept := 0
	for _, p := range next {
		if have[p] {
			kept++
		} else {
			added = append(added, p)
		}
	}
	switch {
	case kept < len(have):
		return nil, true
	case len(added) == 0:
		return nil, false
	case f.ExactlyOnce, workers+min(len(added), max(f.Workers, 1)) > (1+maxAddedWorkers)*max(f.Workers, 1):
		return nil, true
	}
	return added, false
}

// waitLeader polls until partition 0 of topic has a leader, or timeout.
func waitLeader(ctx context.Context, client sarama.Client, topic string, timeout time.Duration) {
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		if client.RefreshMetadata(topic) == nil {
			if _, err := client.Leader(topic, 0); err == nil {
				return
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// progressTopicConfig rolls the progress topic's segments hourly: only
// closed segments are compacted, and a worker reads the whole topic at
// start, so the uncompacted part stays about an hour of writes.
var progressTopicConfig = map[string]string{"segment.ms": "3600000"}

// syncHistoryConfig: every key is a distinct sync (compaction keeps them
// all), so old ones go by time; a group lagging more than 30 days is
// translated with MM2's safe rule or not at all.
var syncHistoryConfig = map[string]string{"cleanup.policy": "compact,delete", "retention.ms": "2592000000"}

// ensureInternalTopic creates one of kmirror's internal topics (1 partition,
// compacted, plus extra configs) when missing, and says whether it did. The
// replication factor is the task's, else 3 (internal topics hold progress
// and translation: they get the durability a production cluster gives its
// own internal topics), capped at the cluster's broker count.
func ensureInternalTopic(client sarama.Client, admin sarama.ClusterAdmin, topic string, rf int16, extra map[string]string) (created bool, err error) {
	if rf < 1 {
		rf = 3
	}
	if n := int16(len(client.Brokers())); n > 0 && rf > n {
		rf = n
	}
	configs := map[string]*string{"cleanup.policy": ptr("compact")}
	for k, v := range extra {
		configs[k] = ptr(v)
	}
	err = admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: rf,
		ConfigEntries: configs}, false)
	switch {
	case err == nil:
		return true, nil
	case errors.Is(err, sarama.ErrTopicAlreadyExists):
		return false, nil
	}
	// The admin asks the controller the client cached, and sarama looks
	// for another only after a NotController answer: with that broker dead
	// every later create would be refused until some metadata refresh.
	_, _ = client.RefreshController()
	return false, fmt.Errorf("create internal topic %s: %w", topic, err)
}

// checkInternal recreates an internal topic deleted while the flow runs
// and says so in the status: replication goes on, but syncs or checkpoints
// written before are gone (lost says what). It also checks that the
// topic's partition has a leader: held says what waits while it has none,
// and the flow shows DEGRADED with it once that lasted DegradedAfter.
func (r *Replicator) checkInternal(client sarama.Client, admin sarama.ClusterAdmin, topic string, extra map[string]string, lost, held string) (created bool) {
	created, err := ensureInternalTopic(client, admin, topic, r.flow.ReplicationFactor, extra)
	switch {
	case err != nil:
		msg := fmt.Sprintf("internal topic %s could not be checked or recreated: %v — if it is missing, %s", topic, err, lost)
		r.log.Error(msg)
		r.state.setError(msg)
	case created:
		msg := fmt.Sprintf("internal topic %s was deleted; kmirror recreated it — %s", topic, lost)
		r.log.Warn(msg)
		r.state.setError(msg)
	default:
		err := client.RefreshMetadata(topic)
		if err == nil {
			_, err = client.Leader(topic, 0)
		}
		if r.state.internalLeader(topic, err, held, time.Now()) {
			if err != nil {
				r.log.Warn("internal topic partition has no leader; copying goes on", "topic", topic, "partition", 0, "error", err, "meanwhile", held)
			} else {
				r.log.Info("internal topic partition has a leader again", "topic", topic, "partition", 0)
			}
		}
	}
	return created
}

func ptr(s string) *string { return &s }

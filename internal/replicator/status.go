package replicator

import (
	"errors"
	"fmt"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kmirror/kmirror/internal/checkpoint"
	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/clustercheck"
	"github.com/kmirror/kmirror/internal/engine"
	"github.com/kmirror/kmirror/internal/policy"
	"github.com/kmirror/kmirror/internal/task"
)

// defaultDegradedAfter is how long a distance-change sync may wait for its
// write, or a partition's writes be retried, before the flow shows as
// degraded: normally milliseconds.
const defaultDegradedAfter = 30 * time.Second

// partState is the live state of one partition. Counters are atomics read by
// Status; mu guards the progress bookkeeping shared by the copy and
// acknowledgement goroutines.
type partState struct {
	Partition
	records, bytes, skipped atomic.Int64
	recopied                atomic.Int64
	expired, lost           atomic.Int64
	hwm                     atomic.Int64
	next                    atomic.Int64 // next source offset to copy (acknowledged progress)
	lastUp, lastDown        atomic.Int64
	lastTS                  atomic.Int64

	mu       sync.Mutex
	progDown int64 // downstream position after the last record in progress (next's copy); -1 unknown
	resumed  bool  // next and progDown came from stored progress (not a fresh start)
	// stalled says why the partition's writes are being retried, since
	// when (the copy waits; the flow's other partitions go on).
	stalled      string
	stalledSince time.Time
	topicID      string // the source topic's id in this run, stored with progress
	// targetTopicID is the target topic's id in this run, stored with
	// progress.
	targetTopicID string
	// targetGen counts the target's replacements, so the checkpointer
	// forgets the checkpoints it wrote for the old target topic.
	targetGen atomic.Int64
	// lostFrom and lostTo are the target offsets last counted as lost
	// ([lostFrom, lostTo)), so the restart a loss's errors cause does not
	// count the same records again (countTargetLoss).
	lostFrom, lostTo int64
	failed           bool // a permanent failure: the partition stops until the task restarts
	reason           string
	sync             syncState           // last offset sync emitted; only the ack goroutine touches it
	hist             *checkpoint.History // syncs where the upstream/downstream distance changed
	// syncPending are distance-change syncs not yet acknowledged by the
	// sync history topic, oldest first: progress is not committed past them.
	syncPending []heldSync

	// Exactly once (transaction.go): txnCommitted is the progress the last
	// committed transaction holds (what a restart resumes from); txnSyncs
	// are the offset syncs of records acknowledged in the open transaction,
	// recorded and written once it commits.
	exactlyOnce  bool
	txnCommitted storedProgress
	txnSyncs     []pendingSync

	// back is, on a way back (Flow.Failback), the forward flow's syncs of
	// this partition, and backPoint the switchover's point: a group behind
	// it translates through them inverted (checkpointer.translate).
	back      *checkpoint.History
	backPoint task.SwitchPoint

	// returns are the stretches ways back that went home wrote to this
	// partition (Flow.Returns); on a push flow, returned is those ways
	// back's syncs (nil on a way back, whose own syncs say it).
	returns  []task.ReturnPoint
	returned *checkpoint.History
}

// startExactlyOnce sets the partition up for a run whose last committed
// transaction holds sp: syncs decided in an aborted transaction are
// dropped, and the next record decides its sync afresh.
func (p *partState) startExactlyOnce(sp storedProgress) {
	p.mu.Lock()
	p.exactlyOnce, p.txnCommitted, p.txnSyncs, p.sync = true, sp, nil, syncState{}
	p.mu.Unlock()
}

// uncommitted is the acknowledged progress, and whether it moved past the
// last committed transaction's.
func (p *partState) uncommitted() (storedProgress, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	sp := storedProgress{p.next.Load(), p.progDown, p.topicID, p.targetTopicID}
	return sp, sp.offset >= 0 && sp != p.txnCommitted
}

// committed records that a transaction holding sp committed, and returns
// the syncs of its records (to be written now).
func (p *partState) committed(sp storedProgress) []pendingSync {
	now := time.Now()
	p.mu.Lock()
	defer p.mu.Unlock()
	p.txnCommitted = sp
	out := p.txnSyncs
	p.txnSyncs = nil
	for i, s := range out {
		if s.change != nil {
			out[i].forget = p.hist.Add(*s.change)
			p.syncPending = append(p.syncPending, heldSync{*s.change, now})
		}
	}
	return out
}

// prevFor is the Prev of a distance-change sync at up (under mu): in an
// open transaction, the change before it may still be waiting there.
func (p *partState) prevFor(up int64) int64 {
	for i := len(p.txnSyncs) - 1; i >= 0; i-- {
		if c := p.txnSyncs[i].change; c != nil {
			return c.Upstream
		}
	}
	return p.hist.PrevFor(up)
}

// fail marks the partition stopped for good (its copy stops at the failed
// record, so progress stays before it).
func (p *partState) fail(reason string) {
	p.mu.Lock()
	if !p.failed {
		p.failed, p.reason = true, reason
	}
	p.mu.Unlock()
}

// syncDurable drops an acknowledged sync from the pending list.
// heldSync is a pending distance-change sync and when it was queued.
type heldSync struct {
	checkpoint.SyncPoint
	at time.Time
}

func (p *partState) syncDurable(upstream int64) {
	p.mu.Lock()
	for i, s := range p.syncPending {
		if s.Upstream == upstream {
			p.syncPending = append(p.syncPending[:i], p.syncPending[i+1:]...)
			break
		}
	}
	p.mu.Unlock()
}

// committable is the progress that may be stored: the next offset to copy
// and the target position after it, held back before any sync still
// pending, with the source topic's id.
func (p *partState) committable() storedProgress {
	p.mu.Lock()
	defer p.mu.Unlock()
	sp := storedProgress{p.next.Load(), p.progDown, p.topicID, p.targetTopicID}
	if p.exactlyOnce {
		sp = p.txnCommitted // what is acknowledged is not yet committed
	}
	if len(p.syncPending) > 0 && p.syncPending[0].Upstream < sp.offset {
		sp.offset, sp.down = p.syncPending[0].Upstream, p.syncPending[0].Downstream
	}
	return sp
}

// stall records why the partition's writes are retried, and since when.
func (p *partState) stall(reason string, since time.Time) {
	p.mu.Lock()
	p.stalled, p.stalledSince = reason, since
	p.mu.Unlock()
}

// unstall clears stall once a write went through.
func (p *partState) unstall() { p.stall("", time.Time{}) }

// stallUnlessStalled is stall when nothing else holds the partition back
// (another reason, set by its other goroutine, stays shown); it says
// whether it set reason.
func (p *partState) stallUnlessStalled(reason string, since time.Time) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stalled != "" {
		return false
	}
	p.stalled, p.stalledSince = reason, since
	return true
}

// unstallIf clears the stall if it is still reason.
func (p *partState) unstallIf(reason string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.stalled == reason {
		p.stalled, p.stalledSince = "", time.Time{}
	}
}

// health reads, under one lock, whether the partition failed for good (and
// why), else why it holds its flow back: its writes retried, or its
// progress held by an unwritten offset sync (syncErr says why), for longer
// than after. degraded is "" when neither.
func (p *partState) health(now time.Time, after time.Duration, syncErr string) (failed bool, reason, degraded string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	switch {
	case p.failed:
		return true, p.reason, ""
	case p.stalled != "" && now.Sub(p.stalledSince) >= after:
		return false, "", p.stalled
	case len(p.syncPending) > 0 && now.Sub(p.syncPending[0].at) >= after:
		held := p.syncPending[0]
		degraded = fmt.Sprintf("progress of %s-%d held at offset %d: its offset sync has not been written for %s",
			p.Source, p.Partition.Partition, held.Upstream, now.Sub(held.at).Round(time.Second))
		if syncErr != "" {
			degraded += " (" + syncErr + ")"
		}
		return false, "", degraded
	}
	return false, "", ""
}

func (p *partState) failure() (bool, string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.failed, p.reason
}

// flowState is the shared, lock-protected state of a flow.
type flowState struct {
	name          string
	degradedAfter time.Duration // Options.DegradedAfter
	histLimit     int           // Options.SyncHistoryLimit: points a partition's sync history keeps
	restarts      atomic.Int64

	mu        sync.Mutex
	state     task.State
	reason    string
	lastError string
	syncError string // the last offset-sync write failure, for a degraded reason
	errorKind string // ErrorKind of the failure while FAILED
	topics    []policy.Pair
	conflicts []string
	// unavailable are topics whose copy waits (planner: target topic not
	// created), with the reason.
	unavailable []string
	parts       map[string]*partState
	// returns are Flow.Returns' points, given to each partition made;
	// returnedBack: the ways back's syncs are read for them (a push flow).
	returns      map[string][]task.ReturnPoint
	returnedBack bool
	ckpt         *engine.CheckpointStatus
	// leaderless are kmirror's internal topics whose partition had no
	// leader at the last planning round (checkInternal), by topic.
	leaderless map[string]leaderlessInternal
	// heartbeatErr is why the flow's heartbeats fail, since when
	// (heartbeat.go); "" while they are written.
	heartbeatErr   string
	heartbeatSince time.Time
	// replaced are target partitions found replaced (deleted or created
	// again), by "target/partition", while their copy catches up again.
	replaced map[string]replacedTarget
	// replacedSeen has each target topic replacement once, by topic and
	// new id: its size is FlowStatus.TargetTopicsReplaced.
	replacedSeen map[string]bool
}

// replacedTarget is a target partition found replaced: when, how many
// records kmirror had copied to the old one (up to), and the source offset
// it had copied up to, which the copy from the source's first record
// reaches again.
type replacedTarget struct {
	target    string
	partition int32
	at        time.Time
	lost      int64
	until     int64
	// holdUntil keeps the loss in the status when there is nothing to
	// catch up (a flow that continues from the progress).
	holdUntil time.Time
	ps        *partState
}

// replacedShownFor is how long a replaced target topic's loss stays the
// flow's DEGRADED reason when its copy went on from the progress.
const replacedShownFor = 15 * time.Minute

// targetReplaced records that p's target topic was replaced.
func (s *flowState) targetReplaced(r replacedTarget, newID string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.replaced == nil {
		s.replaced, s.replacedSeen = map[string]replacedTarget{}, map[string]bool{}
	}
	s.replaced[r.target+"/"+strconv.Itoa(int(r.partition))] = r
	s.replacedSeen[r.target+"/"+newID] = true
}

// replacedReason is the degraded reason while target topics found
// replaced are being copied again; "" once every such partition reached
// where its copy was (those are forgotten). Called with s.mu held.
func (s *flowState) replacedReason(now time.Time) string {
	type agg struct {
		at       time.Time
		lost     int64
		catching int
	}
	by := map[string]*agg{}
	for k, r := range s.replaced {
		if r.ps.next.Load() >= r.until && !now.Before(r.holdUntil) {
			delete(s.replaced, k)
			continue
		}
		a := by[r.target]
		if a == nil {
			a = &agg{at: r.at}
			by[r.target] = a
		}
		a.lost += r.lost
		if r.ps.next.Load() < r.until {
			a.catching++
		}
	}
	if len(by) == 0 {
		return ""
	}
	topics := keys(by)
	a := by[topics[0]]
	reason := fmt.Sprintf("target topic %s was deleted or created again (found %s): it lost up to %d records kmirror had copied there; ",
		topics[0], a.at.UTC().Format("2006-01-02 15:04:05 UTC"), a.lost)
	if a.catching > 0 {
		reason += fmt.Sprintf("copying them again from the source (%d partition(s) still catching up)", a.catching)
	} else {
		reason += "the copy went on from its progress, so they stay lost (on_target_topic_replaced: continue)"
	}
	if n := len(topics) - 1; n > 0 {
		reason += fmt.Sprintf(" (and %d more topics)", n)
	}
	return reason
}

// heartbeat records the outcome of a heartbeat write at now.
func (s *flowState) heartbeat(err error, now time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if err == nil {
		s.heartbeatErr = ""
		return
	}
	if s.heartbeatErr == "" {
		s.heartbeatSince = now
	}
	s.heartbeatErr = err.Error()
	s.lastError = "heartbeats: " + s.heartbeatErr
}

func (s *flowState) heartbeatFailing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.heartbeatErr != ""
}

// leaderlessInternal is an internal topic partition without a leader:
// since when, why, and what waits meanwhile.
type leaderlessInternal struct {
	since time.Time
	err   string
	held  string
}

// internalLeader records whether an internal topic's partition has a
// leader (err is nil) and says whether that changed.
func (s *flowState) internalLeader(topic string, err error, held string, now time.Time) (changed bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	l, was := s.leaderless[topic]
	if err == nil {
		delete(s.leaderless, topic)
		return was
	}
	if !was {
		l.since = now
	}
	l.err, l.held = err.Error(), held
	if s.leaderless == nil {
		s.leaderless = map[string]leaderlessInternal{}
	}
	s.leaderless[topic] = l
	s.lastError = fmt.Sprintf("internal topic %s-0 has no leader: %s", topic, l.err)
	return !was
}

// leaderlessReason is the degraded reason for the internal partition
// longest without a leader, if that lasted after; "" when none did.
func (s *flowState) leaderlessReason(now time.Time, after time.Duration) string {
	topic, oldest := "", leaderlessInternal{}
	for t, l := range s.leaderless {
		if topic == "" || l.since.Before(oldest.since) || l.since.Equal(oldest.since) && t < topic {
			topic, oldest = t, l
		}
	}
	if topic == "" || now.Sub(oldest.since) < after {
		return ""
	}
	reason := fmt.Sprintf("internal topic %s-0 has had no leader for %s (%s): %s; copying goes on",
		topic, now.Sub(oldest.since).Round(time.Second), oldest.err, oldest.held)
	if n := len(s.leaderless) - 1; n > 0 {
		reason += fmt.Sprintf(" (and %d more internal topics without a leader)", n)
	}
	return reason
}

func newFlowState(name string) *flowState {
	return &flowState{name: name, degradedAfter: defaultDegradedAfter, state: task.StateStarting, parts: map[string]*partState{}}
}

func (s *flowState) set(state task.State, reason string) {
	s.mu.Lock()
	s.state, s.reason = state, reason
	if reason != "" {
		s.lastError = reason
	}
	if state != task.StateFailed {
		s.errorKind = ""
	}
	s.mu.Unlock()
}

// fail marks the flow failed with err's reason and kind (ErrorKind).
func (s *flowState) fail(err error) {
	s.set(task.StateFailed, err.Error())
	s.mu.Lock()
	s.errorKind = ErrorKind(err)
	s.mu.Unlock()
}

func (s *flowState) setSyncError(msg string) {
	s.mu.Lock()
	s.lastError, s.syncError = msg, msg
	s.mu.Unlock()
}

func (s *flowState) setError(msg string) {
	s.mu.Lock()
	s.lastError = msg
	s.mu.Unlock()
}

// partition returns the state of a partition, creating it on first use so
// counters survive worker restarts.
func (s *flowState) partition(p Partition) *partState {
	key := p.Source + "/" + strconv.Itoa(int(p.Partition))
	s.mu.Lock()
	defer s.mu.Unlock()
	ps, ok := s.parts[key]
	if !ok {
		// Partition is set once: its source, number and target never change
		// for a key, and readers (snapshot, the copy loop) take no lock for
		// them. What may change between planning rounds (MaxBytes, TopicID)
		// is read from the worker's assignment, or kept under mu (topicID).
		ps = &partState{Partition: p, hist: checkpoint.NewHistory(s.histLimit), progDown: -1, returns: s.returns[key]}
		if s.returnedBack && len(ps.returns) > 0 {
			ps.returned = checkpoint.NewHistory(0)
		}
		ps.next.Store(-1)
		ps.lastUp.Store(-1)
		ps.lastDown.Store(-1)
		s.parts[key] = ps
	}
	return ps
}

func (s *flowState) snapshot(now time.Time) engine.FlowStatus {
	s.mu.Lock()
	st := engine.FlowStatus{Flow: s.name, State: s.state, Reason: s.reason, LastError: s.lastError, ErrorKind: s.errorKind,
		Topics: append([]policy.Pair(nil), s.topics...), Conflicts: append([]string(nil), s.conflicts...)}
	parts := make([]*partState, 0, len(s.parts))
	for _, p := range s.parts {
		parts = append(parts, p)
	}
	if s.ckpt != nil {
		c := *s.ckpt
		st.Checkpoints = &c
	}
	syncErr := s.syncError
	hbErr, hbSince := s.heartbeatErr, s.heartbeatSince
	if len(s.unavailable) > 0 && st.State == task.StateRunning {
		st.State, st.Reason = task.StateDegraded, s.unavailable[0]
		if n := len(s.unavailable) - 1; n > 0 {
			st.Reason += fmt.Sprintf(" (and %d more topics)", n)
		}
	}
	// Before the partitions' reasons: an internal partition without a
	// leader is their common cause (a progress held at an offset sync).
	if reason := s.leaderlessReason(now, s.degradedAfter); reason != "" && st.State == task.StateRunning {
		st.State, st.Reason = task.StateDegraded, reason
	}
	if reason := s.replacedReason(now); reason != "" && st.State == task.StateRunning {
		st.State, st.Reason = task.StateDegraded, reason
	}
	st.TargetTopicsReplaced = int64(len(s.replacedSeen))
	s.mu.Unlock()
	st.Restarts = s.restarts.Load()
	var oldest int64
	for _, p := range parts {
		failed, reason, degraded := p.health(now, s.degradedAfter, syncErr)
		ps := engine.PartitionStatus{Topic: p.Source, Target: p.Target, Partition: p.Partition.Partition,
			NextOffset: p.next.Load(), EndOffset: p.hwm.Load(), Records: p.records.Load(),
			Failed: failed, Reason: reason, LastCopied: p.lastUp.Load(), Downstream: p.lastDown.Load(),
			LastRecordT: p.lastTS.Load(), Recopied: p.recopied.Load(),
			ExpiredOnSource: p.expired.Load(), LostOnTarget: p.lost.Load()}
		if ps.NextOffset >= 0 && ps.EndOffset > ps.NextOffset {
			ps.Lag = ps.EndOffset - ps.NextOffset
			if ps.LastRecordT > 0 && (oldest == 0 || ps.LastRecordT < oldest) {
				oldest = ps.LastRecordT
			}
		}
		st.Records += ps.Records
		st.Bytes += p.bytes.Load()
		st.SkippedLoops += p.skipped.Load()
		st.Recopied += ps.Recopied
		st.ExpiredOnSource += ps.ExpiredOnSource
		st.LostOnTarget += ps.LostOnTarget
		st.LagRecords += ps.Lag
		if failed && (st.State == task.StateRunning || st.State == task.StateDegraded) {
			st.State, st.Reason = task.StateFailed, reason
		}
		if degraded != "" && st.State == task.StateRunning {
			st.State, st.Reason = task.StateDegraded, degraded
		}
		st.Partitions = append(st.Partitions, ps)
	}
	if hbErr != "" && st.State == task.StateRunning && now.Sub(hbSince) >= s.degradedAfter {
		st.State = task.StateDegraded
		st.Reason = fmt.Sprintf("heartbeats not written to the target for %s: %s (copying goes on; MM2's MirrorClient on the target does not see this flow)",
			now.Sub(hbSince).Round(time.Second), hbErr)
	}
	if oldest > 0 {
		if d := now.Sub(time.UnixMilli(oldest)).Seconds(); d > 0 {
			st.LagSeconds = d
		}
	}
	sort.Slice(st.Partitions, func(i, j int) bool {
		a, b := st.Partitions[i], st.Partitions[j]
		if a.Topic != b.Topic {
			return a.Topic < b.Topic
		}
		return a.Partition < b.Partition
	})
	return st
}

// Error kinds of FlowStatus.ErrorKind.
const (
	ErrorCertificate   = "certificate"
	ErrorCredentials   = "credentials"
	ErrorAuthorization = "authorization"
)

// ErrorKind classifies a failure an operator must fix outside kmirror: a
// certificate the client does not trust or that does not match, SASL
// credentials refused, or rights missing. "" for anything else. The
// connectivity check's classifier decides, so a flow and a check name the
// same failure the same way.
func ErrorKind(err error) string {
	if err == nil {
		return ""
	}
	var e *clustercheck.Error
	if !errors.As(clustercheck.Explain(cluster.Settings{}, "", err), &e) {
		return ""
	}
	switch e.Step {
	case clustercheck.StepTLS:
		return ErrorCertificate
	case clustercheck.StepSASL:
		return ErrorCredentials
	case clustercheck.StepPermissions:
		return ErrorAuthorization
	}
	return ""
}

// forgetRewrittenLoss drops, from the range last counted as lost, the
// target offsets below down: new records were acknowledged there, so a
// later loss of them is a new loss and counts in full. Called under p.mu.
func (p *partState) forgetRewrittenLoss(down int64) {
	if p.lostTo > p.lostFrom && down > p.lostFrom {
		p.lostFrom = min(down, p.lostTo)
		if p.lostFrom >= p.lostTo {
			p.lostFrom, p.lostTo = 0, 0
		}
	}
}

// countTargetLoss counts the target offsets [from, to) as lost on the
// target, but for those already counted: a loss found while copying is
// found again at the restart its errors cause, from progress committed
// before it. It returns how many records were new to the count.
func (p *partState) countTargetLoss(from, to int64) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.countTargetLossLocked(from, to)
}

// countTargetLossLocked is countTargetLoss with p.mu held.
func (p *partState) countTargetLossLocked(from, to int64) int64 {
	if to <= from {
		return 0
	}
	n := to - from
	if lo, hi := max(from, p.lostFrom), min(to, p.lostTo); hi > lo {
		n -= hi - lo
		p.lostFrom, p.lostTo = min(from, p.lostFrom), max(to, p.lostTo)
	} else {
		p.lostFrom, p.lostTo = from, to
	}
	p.lost.Add(n)
	return n
}

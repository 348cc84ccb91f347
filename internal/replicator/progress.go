package replicator

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/IBM/sarama"
)

// progress keeps a flow's position — the next source offset of each
// partition — as committed offsets of the flow's group on the source cluster,
// so standard Kafka tools show the flow's lag, and several processes can
// later share a flow through that group (scale-out).
//
// Commits happen on an interval and at a clean stop, not per record: the
// copy loop only stores the acknowledged position in an atomic. A group's
// offsets expire on the broker, so the same positions also go to the flow's
// progress log on the target (progresslog.go), which does not expire.
type progress struct {
	client sarama.Client
	admin  sarama.ClusterAdmin
	group  string
	log    *progressLog
	last   map[*partState]storedProgress // what was last committed
	// commitGroupFn commits to the group (commitGroup; tests replace it);
	// one runs at a time, and a commit still unanswered when a stop came
	// is left to finish on its own (commit).
	commitGroupFn func(states []*partState) error
	groupCommits  unansweredCall
	// lastAll is when every partition was last committed, moved or not:
	// an idle partition's offsets are committed again every recommitEvery
	// so the group does not expire while the flow runs.
	lastAll time.Time
}

// recommitEvery is how often unchanged positions are committed again. Far
// below any sensible offsets.retention.minutes (7 days by default, at least
// a minute in tests), and cheap: one request per worker.
const recommitEvery = 20 * time.Second

func newProgress(client sarama.Client, group string, log *progressLog) (*progress, error) {
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		return nil, err
	}
	p := &progress{client: client, admin: admin, group: group, log: log,
		last: map[*partState]storedProgress{}, lastAll: time.Now()}
	p.commitGroupFn = p.commitGroup
	return p, nil
}

// storedProgress is a partition's committed position: the next source
// offset, and the target position right after its copy (from the commit's
// metadata), -1 where unknown.
type storedProgress struct {
	offset, down int64
	topicID      string // the source topic's id when stored; "" unknown
	// targetTopicID is the target topic's id the progress was made on;
	// "" unknown. Kept in the progress log only (the group's metadata
	// format is read by older kmirrors, which would misread it).
	targetTopicID string
}

// noProgress is a partition with nothing stored.
var noProgress = storedProgress{offset: -1, down: -1}

// metadataPrefix marks kmirror's commit metadata:
// "kmirror:d=<downstream>[;id=<source topic id>]".
const metadataPrefix = "kmirror:d="

// commitMetadata is what a commit of sp says besides the offset.
func commitMetadata(sp storedProgress) string {
	if sp.down < 0 {
		return ""
	}
	meta := metadataPrefix + strconv.FormatInt(sp.down, 10)
	if sp.topicID != "" {
		meta += ";id=" + sp.topicID
	}
	return meta
}

// parseCommitMetadata reads commitMetadata back into sp (down -1 when the
// metadata is not kmirror's).
func parseCommitMetadata(meta string, sp storedProgress) storedProgress {
	sp.down = -1
	rest, ok := strings.CutPrefix(meta, metadataPrefix)
	if !ok {
		return sp
	}
	down, id, _ := strings.Cut(rest, ";")
	if d, err := strconv.ParseInt(down, 10, 64); err == nil {
		sp.down = d
	}
	sp.topicID, _ = strings.CutPrefix(id, "id=")
	return sp
}

// load returns the stored progress per partition, offset -1 where none is
// stored: the further of the group's and the progress log's.
//
// When the log cannot be read (its partition has no leader) and known
// has every partition's progress, known is the progress and logErr says
// why: known is what this process copied, and both stores are written
// from it, so a flow restarted while its progress topic is away goes on
// where it was. It is taken over the group's, which may lag it (a
// commit that failed) and knows no target topic id: a target topic
// replaced under the copy would go unseen. Without known (a fresh start,
// or exactly-once, whose progress is the log's committed transactions)
// the start waits for the log.
func (p *progress) load(parts []Partition, known func(Partition) (storedProgress, bool)) (stored map[Partition]storedProgress, logErr, err error) {
	fromLog, err := p.log.read(parts)
	if err != nil {
		if mem := fromMemory(parts, known); mem != nil {
			return mem, err, nil
		}
		return nil, nil, err
	}
	fromGroup, err := p.loadGroup(parts)
	if err != nil {
		return nil, nil, err
	}
	for pt, sp := range fromLog {
		if sp.offset > fromGroup[pt].offset {
			fromGroup[pt] = sp
			continue
		}
		// The same progress in both: the target topic it was made on is
		// the log's to say. Where the group is further (the log's write
		// failed or is due), it stays unknown: a wrong one would copy a
		// whole topic again.
		if g := fromGroup[pt]; g.offset == sp.offset {
			g.targetTopicID = sp.targetTopicID
			fromGroup[pt] = g
		}
	}
	return fromGroup, nil, nil
}

// fromMemory is every partition's progress from known, nil if it lacks one.
func fromMemory(parts []Partition, known func(Partition) (storedProgress, bool)) map[Partition]storedProgress {
	if known == nil {
		return nil
	}
	out := make(map[Partition]storedProgress, len(parts))
	for _, pt := range parts {
		sp, ok := known(pt)
		if !ok {
			return nil
		}
		out[pt] = sp
	}
	return out
}

func (p *progress) loadGroup(parts []Partition) (map[Partition]storedProgress, error) {
	req := map[string][]int32{}
	for _, pt := range parts {
		req[pt.Source] = append(req[pt.Source], pt.Partition)
	}
	out := make(map[Partition]storedProgress, len(parts))
	for _, pt := range parts {
		out[pt] = noProgress
	}
	resp, err := p.admin.ListConsumerGroupOffsets(p.group, req)
	if errors.Is(err, sarama.ErrGroupIDNotFound) {
		return out, nil // first start: nothing stored yet
	}
	if err != nil {
		return nil, fmt.Errorf("read progress of group %s: %w", p.group, err)
	}
	for _, pt := range parts {
		b := resp.GetBlock(pt.Source, pt.Partition)
		if b == nil {
			continue
		}
		if !errors.Is(b.Err, sarama.ErrNoError) {
			return nil, fmt.Errorf("read progress of %s-%d: %w", pt.Source, pt.Partition, b.Err)
		}
		sp := parseCommitMetadata(b.Metadata, storedProgress{offset: b.Offset})
		out[pt] = sp
	}
	return out, nil
}

// commit stores the positions that moved since the last commit in the
// group, and in the progress log when it is due or final (a clean stop),
// both at once. The group's commit is waited for until it is answered or,
// once ctx has ended (a stop), at most groupStopWait: an unreachable or
// hung coordinator on the source held a stop for as long as the client's
// timeouts (22-41 s measured). What such a commit would have stored is in
// the progress log too, and a start takes the further of the two.
func (p *progress) commit(ctx context.Context, states []*partState, final bool) error {
	res, ok := p.groupCommits.start(func() error { return p.commitGroupFn(states) })
	if !ok {
		// The last commit to the group is still unanswered: this round
		// goes to the log only, the next tries the group again.
		return joinCommit(fmt.Errorf("commit progress of group %s: the coordinator has not answered the last commit yet; progress goes to the progress log meanwhile", p.group),
			p.log.write(states, final), final)
	}
	logErr := p.log.write(states, final)
	var groupErr error
	select {
	case groupErr = <-res:
	case <-ctx.Done():
		select {
		case groupErr = <-res:
		case <-time.After(groupStopWait):
			groupErr = fmt.Errorf("commit progress of group %s: no answer within %s of the stop", p.group, groupStopWait)
		}
	}
	return joinCommit(groupErr, logErr, final)
}

// joinCommit is a commit's outcome: a final commit that reached one of the
// two stores stored every position even if the other failed (a start
// takes the further of the two), and says so (storedOnce).
func joinCommit(groupErr, logErr error, final bool) error {
	switch {
	case final && groupErr != nil && logErr == nil:
		return storedOnce{groupErr, "the progress log on the target"}
	case final && groupErr == nil && logErr != nil:
		return storedOnce{logErr, "the source's consumer group"}
	}
	return errors.Join(groupErr, logErr)
}

// storedOnce is a final commit that reached one of the two stores of
// progress (in): a restart copies nothing again.
type storedOnce struct {
	error
	in string
}

func (e storedOnce) Error() string {
	return e.error.Error() + "; " + e.in + " holds every position, so nothing is copied again"
}

func (e storedOnce) Unwrap() error { return e.error }

// groupStopWait bounds how long a stopping flow waits for the source's
// group coordinator to answer a commit.
const groupStopWait = 5 * time.Second

// unansweredCall runs a call to a cluster that may never answer (a hung
// coordinator, a frozen target) one at a time: the caller waits for the
// answer as long as it chooses, and while a call is unanswered the next is
// refused, so a stuck cluster holds one goroutine, not one per round, and
// never the caller. Used by one goroutine.
type unansweredCall struct {
	done chan struct{} // closed when the last call ended; nil before the first
}

// start runs f in its own goroutine and returns where its result comes, or
// false when the last call has not ended yet.
func (u *unansweredCall) start(f func() error) (<-chan error, bool) {
	if u.busy() {
		return nil, false
	}
	done, res := make(chan struct{}), make(chan error, 1)
	u.done = done
	go func() {
		defer close(done)
		res <- f()
	}()
	return res, true
}

// busy says whether the last call has not ended.
func (u *unansweredCall) busy() bool {
	if u.done == nil {
		return false
	}
	select {
	case <-u.done:
		return false
	default:
		return true
	}
}

func (p *progress) commitGroup(states []*partState) error {
	req := sarama.NewOffsetCommitRequest(p.client.Config(), p.group)
	var pending []*partState
	commits := map[*partState]storedProgress{}
	all := time.Since(p.lastAll) >= recommitEvery
	if all {
		p.lastAll = time.Now()
	}
	for _, ps := range states {
		sp := ps.committable()
		if last, ok := p.last[ps]; sp.offset < 0 || (ok && !all && last == sp) {
			continue
		}
		req.AddBlock(ps.Source, ps.Partition.Partition, sp.offset, 0, commitMetadata(sp))
		commits[ps] = sp
		pending = append(pending, ps)
	}
	if len(pending) == 0 {
		return nil
	}
	coordinator, err := p.client.Coordinator(p.group)
	if err != nil {
		return fmt.Errorf("find coordinator of group %s: %w", p.group, err)
	}
	resp, err := coordinator.CommitOffset(req)
	if err != nil {
		_ = p.client.RefreshCoordinator(p.group)
		return fmt.Errorf("commit progress of group %s: %w", p.group, err)
	}
	var errs []error
	for _, ps := range pending {
		kerr := resp.Errors[ps.Source][ps.Partition.Partition]
		if !errors.Is(kerr, sarama.ErrNoError) {
			errs = append(errs, fmt.Errorf("commit progress of %s-%d: %w", ps.Source, ps.Partition.Partition, kerr))
			continue
		}
		p.last[ps] = commits[ps]
	}
	if len(errs) > 0 {
		_ = p.client.RefreshCoordinator(p.group)
	}
	return errors.Join(errs...)
}

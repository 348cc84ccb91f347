package replicator

import (
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
// later share a flow through that group (SPEC §8).
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
	return &progress{client: client, admin: admin, group: group, log: log,
		last: map[*partState]storedProgress{}, lastAll: time.Now()}, nil
}

// storedProgress is a partition's committed position: the next source
// offset, and the target position right after its copy (from the commit's
// metadata), -1 where unknown.
type storedProgress struct {
	offset, down int64
}

// metadataPrefix marks kmirror's commit metadata: "kmirror:d=<downstream>".
const metadataPrefix = "kmirror:d="

// load returns the stored progress per partition, offset -1 where none is
// stored: the further of the group's and the progress log's.
func (p *progress) load(parts []Partition) (map[Partition]storedProgress, error) {
	fromGroup, err := p.loadGroup(parts)
	if err != nil {
		return nil, err
	}
	fromLog, err := p.log.read(parts)
	if err != nil {
		return nil, err
	}
	for pt, sp := range fromLog {
		if sp.offset > fromGroup[pt].offset {
			fromGroup[pt] = sp
		}
	}
	return fromGroup, nil
}

func (p *progress) loadGroup(parts []Partition) (map[Partition]storedProgress, error) {
	req := map[string][]int32{}
	for _, pt := range parts {
		req[pt.Source] = append(req[pt.Source], pt.Partition)
	}
	out := make(map[Partition]storedProgress, len(parts))
	for _, pt := range parts {
		out[pt] = storedProgress{-1, -1}
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
		sp := storedProgress{offset: b.Offset, down: -1}
		if d, err := strconv.ParseInt(strings.TrimPrefix(b.Metadata, metadataPrefix), 10, 64); err == nil && strings.HasPrefix(b.Metadata, metadataPrefix) {
			sp.down = d
		}
		out[pt] = sp
	}
	return out, nil
}

// commit stores the positions that moved since the last commit in the
// group, and in the progress log when it is due or final (a clean stop).
func (p *progress) commit(states []*partState, final bool) error {
	return errors.Join(p.commitGroup(states), p.log.write(states, final))
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
		next, down := ps.committable()
		if last, ok := p.last[ps]; next < 0 || (ok && !all && last == storedProgress{next, down}) {
			continue
		}
		meta := ""
		if down >= 0 {
			meta = metadataPrefix + strconv.FormatInt(down, 10)
		}
		req.AddBlock(ps.Source, ps.Partition.Partition, next, 0, meta)
		commits[ps] = storedProgress{next, down}
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

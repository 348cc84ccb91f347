package replicator

import (
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/IBM/sarama"
)

// progress keeps a flow's position — the next source offset of each
// partition — as committed offsets of the flow's group on the source cluster,
// so standard Kafka tools show the flow's lag, and several processes can
// later share a flow through that group (SPEC §8).
//
// Commits happen on an interval and at a clean stop, not per record: the
// copy loop only stores the acknowledged position in an atomic.
type progress struct {
	client sarama.Client
	admin  sarama.ClusterAdmin
	group  string
	last   map[*partState]storedProgress // what was last committed
}

func newProgress(client sarama.Client, group string) (*progress, error) {
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		return nil, err
	}
	return &progress{client: client, admin: admin, group: group, last: map[*partState]storedProgress{}}, nil
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
// stored.
func (p *progress) load(parts []Partition) (map[Partition]storedProgress, error) {
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

// commit stores the positions that moved since the last commit.
func (p *progress) commit(states []*partState) error {
	req := sarama.NewOffsetCommitRequest(p.client.Config(), p.group)
	var pending []*partState
	commits := map[*partState]storedProgress{}
	for _, ps := range states {
		next, down := ps.committable()
		if last, ok := p.last[ps]; next < 0 || (ok && last == storedProgress{next, down}) {
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

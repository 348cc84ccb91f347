package e2e

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
)

// Count returns how many offsets topic holds: the sum over partitions of end
// offset minus start offset. It counts transaction markers too, so on a
// transactional topic it is an upper bound of the records. A topic that does
// not exist holds 0.
func Count(ctx context.Context, s cluster.Settings, topic string) (int64, error) {
	c, err := newCounter(s)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	return count(ctx, c, topic)
}

// WaitFor polls the target until topic holds at least n offsets (see Count)
// and returns what it holds. progress, if not nil, is called after every poll
// (about 5 times a second) so a CLI can show "replicated x/y". When ctx ends
// first, it returns what it last saw and an error wrapping ctx.Err().
func WaitFor(ctx context.Context, s cluster.Settings, topic string, n int64, progress func(have int64)) (int64, error) {
	c, err := newCounter(s)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	var have int64
	for {
		h, err := count(ctx, c, topic)
		if err != nil {
			return have, fmt.Errorf("wait for %d records in %s on %s: %w", n, topic, s.Name, err)
		}
		have = h
		if progress != nil {
			progress(have)
		}
		if have >= n {
			return have, nil
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return have, fmt.Errorf("%s on %s holds %d of %d records: %w (is replication running?)", topic, s.Name, have, n, ctx.Err())
		}
	}
}

func newCounter(s cluster.Settings) (sarama.Client, error) {
	cfg, err := s.Config("kmirror-demo-counter")
	if err != nil {
		return nil, fmt.Errorf("count records on %s: %w", s, err)
	}
	c, err := sarama.NewClient(s.BootstrapServers, cfg)
	if err != nil {
		return nil, fmt.Errorf("count records: connect to %s: %w", s, err)
	}
	return c, nil
}

func count(ctx context.Context, c sarama.Client, topic string) (int64, error) {
	if err := ctx.Err(); err != nil {
		return 0, err
	}
	// Refresh every time: the topic may be created, or grow partitions,
	// while we wait.
	if err := c.RefreshMetadata(topic); err != nil {
		if errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
			return 0, nil
		}
		return 0, err
	}
	parts, err := c.Partitions(topic)
	if err != nil {
		if errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
			return 0, nil
		}
		return 0, err
	}
	var total int64
	for _, p := range parts {
		start, err := getOffset(ctx, c, topic, p, sarama.OffsetOldest)
		if err != nil {
			return 0, fmt.Errorf("partition %d start offset: %w", p, err)
		}
		end, err := getOffset(ctx, c, topic, p, sarama.OffsetNewest)
		if err != nil {
			return 0, fmt.Errorf("partition %d end offset: %w", p, err)
		}
		total += end - start
	}
	return total, nil
}

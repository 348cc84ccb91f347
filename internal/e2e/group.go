package e2e

import (
	"context"
	"fmt"
	"sync"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
)

// ConsumeGroup reads want records of topic as a member of group (from the
// oldest offset when the group has none), commits what it read and leaves:
// a consumer application stopping, as a failover test has one do on the
// source and then on the target. It returns the keys in the order read.
func ConsumeGroup(ctx context.Context, s cluster.Settings, group, topic string, want int) ([]string, error) {
	cfg, err := s.Config("e2e-group")
	if err != nil {
		return nil, err
	}
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	cfg.Consumer.Offsets.AutoCommit.Enable = false
	cg, err := sarama.NewConsumerGroup(s.BootstrapServers, group, cfg)
	if err != nil {
		return nil, fmt.Errorf("join group %s: %w", group, err)
	}
	defer cg.Close()
	h := &collect{want: want, done: make(chan struct{})}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var last error
	go func() {
		for ctx.Err() == nil {
			if err := cg.Consume(ctx, []string{topic}, h); err != nil && ctx.Err() == nil {
				h.mu.Lock()
				last = err
				h.mu.Unlock()
			}
		}
	}()
	select {
	case <-h.done:
	case <-ctx.Done():
		h.mu.Lock()
		defer h.mu.Unlock()
		return nil, fmt.Errorf("group %s read %d of %d records of %s (last error: %v): %w", group, len(h.keys), want, topic, last, ctx.Err())
	}
	cancel()
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]string(nil), h.keys...), nil
}

// collect reads records until it has want, marking and committing each.
type collect struct {
	mu   sync.Mutex
	keys []string
	want int
	done chan struct{}
	once sync.Once
}

func (*collect) Setup(sarama.ConsumerGroupSession) error   { return nil }
func (*collect) Cleanup(sarama.ConsumerGroupSession) error { return nil }
func (h *collect) ConsumeClaim(s sarama.ConsumerGroupSession, c sarama.ConsumerGroupClaim) error {
	for m := range c.Messages() {
		h.mu.Lock()
		if len(h.keys) >= h.want {
			h.mu.Unlock()
			return nil // stop before this record: it stays for the next reader
		}
		h.keys = append(h.keys, string(m.Key))
		// Marked under the lock: the claim that reaches want commits at
		// once, and a record counted by another claim but not yet marked
		// would be read but not committed (auto-commit is off).
		s.MarkMessage(m, "")
		full := len(h.keys) >= h.want
		h.mu.Unlock()
		if full {
			s.Commit()
			h.once.Do(func() { close(h.done) })
			return nil
		}
	}
	return nil
}

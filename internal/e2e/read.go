package e2e

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
)

// record is what Verify keeps of one record: enough to pair and compare it,
// with the value reduced to a hash so a large topic fits in memory.
type record struct {
	partition int32
	offset    int64
	key       string
	keyNull   bool
	valueNull bool
	valueLen  int
	valueHash uint64
	timestamp time.Time
	headers   []header
}

type header struct {
	key   string
	value []byte // nil is a null header value, distinct from empty
}

func newRecord(m *sarama.ConsumerMessage) record {
	r := record{
		partition: m.Partition,
		offset:    m.Offset,
		key:       string(m.Key),
		keyNull:   m.Key == nil,
		valueNull: m.Value == nil,
		valueLen:  len(m.Value),
		timestamp: m.Timestamp,
	}
	h := fnv.New64a()
	h.Write(m.Value)
	r.valueHash = h.Sum64()
	if len(m.Headers) > 0 {
		r.headers = make([]header, len(m.Headers))
		for i, rh := range m.Headers {
			r.headers[i] = header{key: string(rh.Key), value: rh.Value}
		}
	}
	return r
}

// topicLog is every record of a topic up to the end offsets read at start,
// indexed by partition.
type topicLog [][]record

// readTopic reads every partition of topic from its start offset to the end
// offset it has when readTopic starts. A partition whose last offsets hold no
// readable record (transaction markers, aborted records) ends after idle
// without a new record.
func readTopic(ctx context.Context, s cluster.Settings, topic string, idle time.Duration, uncommitted bool) (topicLog, error) {
	cfg, err := s.Config("kmirror-demo-verifier")
	if err != nil {
		return nil, fmt.Errorf("read %s on %s: %w", topic, s, err)
	}
	cfg.Consumer.Return.Errors = true
	// A target written with transactions must be judged on what consumers
	// see: committed records only.
	cfg.Consumer.IsolationLevel = sarama.ReadCommitted
	if uncommitted {
		cfg.Consumer.IsolationLevel = sarama.ReadUncommitted
	}
	cfg.Consumer.Offsets.Initial = sarama.OffsetOldest
	// Closing a partition consumer waits for its fetch in flight, which the
	// broker holds up to MaxWaitTime once we are at the end: keep it short,
	// the reads are bounded anyway.
	cfg.Consumer.MaxWaitTime = 50 * time.Millisecond
	client, err := sarama.NewClient(s.BootstrapServers, cfg)
	if err != nil {
		return nil, fmt.Errorf("read %s: connect to %s: %w", topic, s, err)
	}
	defer client.Close()
	if err := client.RefreshMetadata(topic); err != nil {
		return nil, fmt.Errorf("read %s on %s: %w (does the topic exist?)", topic, s.Name, err)
	}
	parts, err := client.Partitions(topic)
	if err != nil {
		return nil, fmt.Errorf("read %s on %s: list partitions: %w", topic, s.Name, err)
	}
	consumer, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		return nil, fmt.Errorf("read %s on %s: %w", topic, s.Name, err)
	}
	defer consumer.Close()

	log := make(topicLog, len(parts))
	errs := make([]error, len(parts))
	var wg sync.WaitGroup
	for _, p := range parts {
		if int(p) >= len(parts) {
			return nil, fmt.Errorf("read %s on %s: partition %d of %d: partition ids are not 0..n-1", topic, s.Name, p, len(parts))
		}
		wg.Go(func() {
			log[p], errs[p] = readPartition(ctx, client, consumer, topic, p, idle)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, fmt.Errorf("read %s on %s: %w", topic, s.Name, err)
	}
	return log, nil
}

func readPartition(ctx context.Context, client sarama.Client, consumer sarama.Consumer, topic string, p int32, idle time.Duration) ([]record, error) {
	start, err := getOffset(ctx, client, topic, p, sarama.OffsetOldest)
	if err != nil {
		return nil, fmt.Errorf("partition %d start offset: %w", p, err)
	}
	end, err := getOffset(ctx, client, topic, p, sarama.OffsetNewest)
	if err != nil {
		return nil, fmt.Errorf("partition %d end offset: %w", p, err)
	}
	if end <= start {
		return nil, nil
	}
	pc, err := consumer.ConsumePartition(topic, p, start)
	if err != nil {
		return nil, fmt.Errorf("partition %d: consume from %d: %w", p, start, err)
	}
	defer pc.Close()

	out := make([]record, 0, end-start)
	// The first record may take longer than idle on a loaded machine (a
	// new consumer's connection and first fetch): a partition is given
	// up as unreadable only after firstRecordWait, then after idle.
	timer := time.NewTimer(max(idle, firstRecordWait))
	defer timer.Stop()
	stalled := false // idle passed once since the last record
	for {
		select {
		case m := <-pc.Messages():
			if m.Offset >= end {
				return out, nil
			}
			out = append(out, newRecord(m))
			if m.Offset >= end-1 {
				return out, nil
			}
			timer.Reset(idle)
			stalled = false
		case e := <-pc.Errors():
			return nil, fmt.Errorf("partition %d: %w", p, e.Err)
		case <-timer.C:
			if len(out) > 0 && end-1-out[len(out)-1].offset > 1 && !stalled && idle < firstRecordWait {
				// More than a transaction's marker is left: once more, up
				// to firstRecordWait in all. On a loaded machine (CI,
				// brokers starting beside) a fetch came 5 s late in
				// mid-partition, and the records after it were reported
				// missing though the target held them (ci73).
				stalled = true
				timer.Reset(firstRecordWait - idle)
				continue
			}
			// Nothing readable arrived for a while: what remains below
			// end are control or aborted records.
			return out, nil
		case <-ctx.Done():
			return nil, fmt.Errorf("partition %d: read %d records up to offset %d: %w", p, len(out), end, ctx.Err())
		}
	}
}

// firstRecordWait is how long readPartition waits for a partition's first
// record before it takes the partition to hold none it can read.
const firstRecordWait = 15 * time.Second

// getOffset is client.GetOffset that rides out a partition's leadership
// settling: right after a topic is created (or a broker restarts) a real
// broker answers NOT_LEADER_OR_FOLLOWER or LEADER_NOT_AVAILABLE for a while.
func getOffset(ctx context.Context, client sarama.Client, topic string, p int32, which int64) (int64, error) {
	deadline := time.Now().Add(30 * time.Second)
	for {
		off, err := client.GetOffset(topic, p, which)
		retriable := errors.Is(err, sarama.ErrNotLeaderForPartition) || errors.Is(err, sarama.ErrLeaderNotAvailable) ||
			errors.Is(err, sarama.ErrUnknownTopicOrPartition)
		if !retriable || time.Now().After(deadline) {
			return off, err
		}
		_ = client.RefreshMetadata(topic)
		select {
		case <-ctx.Done():
			return off, err
		case <-time.After(100 * time.Millisecond):
		}
	}
}

package connectengine

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/connect"
	"github.com/kmirror/kmirror/internal/replicator"
)

// offsetsTopicIdle is how long reading an offsets topic waits for a record
// before it looks whether only transaction markers and aborted records are
// left (which a read_committed consumer never delivers).
const offsetsTopicIdle = 500 * time.Millisecond

// ReadOffsetsTopic reads the source offsets one connector has in a Connect
// offsets topic (connect.OffsetsTopicRecord), the last record of a partition
// winning and a tombstone removing it: how a MirrorMaker 2 in dedicated
// mode, which has no REST API to ask, keeps its progress. Committed records
// only, up to each partition's last stable offset when called: workers
// with exactly-once source support write the topic in transactions, and an
// aborted offset was never the progress.
func ReadOffsetsTopic(ctx context.Context, s cluster.Settings, topic, connector string) ([]connect.Offset, error) {
	cfg, err := s.Config("kmirror-offsets-reader") // read_committed
	if err != nil {
		return nil, err
	}
	client, err := sarama.NewClient(s.BootstrapServers, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", s.Name, err)
	}
	defer client.Close()
	parts, err := client.Partitions(topic)
	if err != nil {
		return nil, fmt.Errorf("offsets topic %s on %s: %w", topic, s.Name, err)
	}
	ends, err := replicator.ListOffsets(client, map[string][]int32{topic: parts}, sarama.OffsetNewest)
	if err != nil {
		return nil, fmt.Errorf("end of %s: %w", topic, err)
	}
	starts, err := replicator.ListOffsets(client, map[string][]int32{topic: parts}, sarama.OffsetOldest)
	if err != nil {
		return nil, fmt.Errorf("start of %s: %w", topic, err)
	}
	consumer, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		return nil, err
	}
	defer consumer.Close()
	latest := map[string]connect.Offset{} // by the partition's JSON
	var order []string
	for _, p := range parts {
		from, end := starts[topic][p], ends[topic][p]
		if end <= from {
			continue
		}
		if err := readOffsetsPartition(ctx, client, consumer, topic, p, from, end, func(o connect.Offset, tombstone bool) {
			b, _ := json.Marshal(o.Partition) // keys sorted: one key per partition
			key := string(b)
			if _, seen := latest[key]; !seen {
				order = append(order, key)
			}
			if tombstone {
				o.Offset = nil
			}
			latest[key] = o
		}, connector); err != nil {
			return nil, fmt.Errorf("read %s-%d: %w", topic, p, err)
		}
	}
	var out []connect.Offset
	for _, k := range order {
		if o := latest[k]; o.Offset != nil {
			out = append(out, o)
		}
	}
	return out, nil
}

// readOffsetsPartition hands add the connector's records of one partition
// from from up to end; it ends early when only markers and aborted
// records are left, and fails after 30 s without progress.
func readOffsetsPartition(ctx context.Context, client sarama.Client, consumer sarama.Consumer, topic string, p int32, from, end int64,
	add func(o connect.Offset, tombstone bool), connector string) error {
	pc, err := consumer.ConsumePartition(topic, p, from)
	if err != nil {
		return err
	}
	defer pc.Close()
	next, progressed := from, time.Now()
	for next < end {
		select {
		case m := <-pc.Messages():
			if name, o, tombstone, ok := connect.OffsetsTopicRecord(m.Key, m.Value); ok && name == connector {
				add(o, tombstone)
			}
			next, progressed = m.Offset+1, time.Now()
		case err := <-pc.Errors():
			return err
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(offsetsTopicIdle):
			if tail, ok, err := replicator.SettledTail(client, topic, p, next); err == nil && ok && tail >= end {
				return nil // markers and aborted records only
			}
			if time.Since(progressed) > 30*time.Second {
				return fmt.Errorf("no record for 30 s at offset %d before the end %d", next, end)
			}
		}
	}
	return nil
}

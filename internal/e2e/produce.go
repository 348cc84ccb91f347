package e2e

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
)

// Progress is a snapshot of a running Produce.
type Progress struct {
	Acked   int64         // records the cluster acknowledged
	Total   int64         // records this call writes
	Elapsed time.Duration // since producing started
	Rate    float64       // acknowledged records per second so far
}

// ProduceResult sums up a finished Produce.
type ProduceResult struct {
	Records int64         // records acknowledged
	Bytes   int64         // key and value bytes acknowledged
	Elapsed time.Duration // from the first send to the last acknowledgement
}

// Rate is records per second.
func (r ProduceResult) Rate() float64 {
	if r.Elapsed <= 0 {
		return 0
	}
	return float64(r.Records) / r.Elapsed.Seconds()
}

// ProduceOption changes how Produce runs.
type ProduceOption interface{ apply(*produceConfig) }

type produceOptionFunc func(*produceConfig)

func (f produceOptionFunc) apply(c *produceConfig) { f(c) }

type produceConfig struct {
	progress          func(Progress)
	interval          time.Duration
	replicationFactor int16
	retryFor          time.Duration
}

// RetryFor keeps sending a batch the cluster did not acknowledge for about
// d (by default about a second) before Produce gives up. The producer is
// idempotent, so a batch sent again is written once: a stream that rides
// out a broker's death this way never writes a key twice, where one that
// gave up and was called again could (its next keys start at the end
// offset, which leaves out a batch written but not yet acknowledged).
func RetryFor(d time.Duration) ProduceOption {
	return produceOptionFunc(func(c *produceConfig) { c.retryFor = d })
}

// WithProgress calls fn about every interval while producing, and once at the
// end, from a single goroutine, overriding the default of no progress.
func WithProgress(interval time.Duration, fn func(Progress)) ProduceOption {
	return produceOptionFunc(func(c *produceConfig) {
		c.progress = fn
		if interval > 0 {
			c.interval = interval
		}
	})
}

// Produce creates topic with the given partition count (or checks an
// existing one has it) and writes n records of about size value bytes,
// spread round-robin over the partitions, as fast as the cluster takes them.
// It returns when every record is acknowledged, or at the first error; records
// acknowledged before an error stay written.
//
// Records follow the package's format; keys continue from each partition's
// end offset, so calling Produce again on the same topic appends records that
// are still unique. Two Produce calls must not run on one topic at once.
func Produce(ctx context.Context, s cluster.Settings, topic string, partitions, n, size int, opts ...ProduceOption) (ProduceResult, error) {
	pc := produceConfig{interval: time.Second, replicationFactor: -1}
	for _, o := range opts {
		o.apply(&pc)
	}
	switch {
	case topic == "":
		return ProduceResult{}, errors.New("produce: topic is empty: name the topic to write")
	case partitions < 1:
		return ProduceResult{}, fmt.Errorf("produce: %d partitions: use at least 1", partitions)
	case n < 0:
		return ProduceResult{}, fmt.Errorf("produce: %d records: use 0 or more", n)
	case size < 0 || size > maxValueSize:
		return ProduceResult{}, fmt.Errorf("produce: record size %d: use 0 to %d bytes", size, maxValueSize)
	}

	cfg, err := s.Config("kmirror-demo-producer")
	if err != nil {
		return ProduceResult{}, fmt.Errorf("produce to %s: %w", s, err)
	}
	tuneProducer(cfg, partitions)
	if pc.retryFor > 0 {
		cfg.Producer.Retry.Max = max(cfg.Producer.Retry.Max, int(pc.retryFor/cfg.Producer.Retry.Backoff))
	}
	client, err := sarama.NewClient(s.BootstrapServers, cfg)
	if err != nil {
		return ProduceResult{}, fmt.Errorf("produce: connect to %s: %w", s, err)
	}
	defer client.Close()

	if err := ensureTopic(ctx, client, topic, int32(partitions), pc.replicationFactor); err != nil {
		return ProduceResult{}, fmt.Errorf("produce to %s on %s: %w", topic, s.Name, err)
	}
	next := make([]int64, partitions) // next seq per partition
	for p := range next {
		off, err := getOffset(ctx, client, topic, int32(p), sarama.OffsetNewest)
		if err != nil {
			return ProduceResult{}, fmt.Errorf("produce: end offset of %s/%d on %s: %w", topic, p, s.Name, err)
		}
		next[p] = off
	}

	producer, err := sarama.NewAsyncProducerFromClient(client)
	if err != nil {
		return ProduceResult{}, fmt.Errorf("produce: start producer on %s: %w", s.Name, err)
	}

	var (
		acked, bytes atomic.Int64
		firstErr     error
		errOnce      sync.Once
		failed       = make(chan struct{})
		drained      = make(chan struct{})
		start        = time.Now()
	)
	// sarama blocks its pipeline unless both channels are drained; they are
	// closed once AsyncClose has flushed everything.
	go func() {
		defer close(drained)
		succ, errs := producer.Successes(), producer.Errors()
		for succ != nil || errs != nil {
			select {
			case m, ok := <-succ:
				if !ok {
					succ = nil
					continue
				}
				acked.Add(1)
				bytes.Add(int64(m.Key.Length() + valueLen(m.Value)))
			case e, ok := <-errs:
				if !ok {
					errs = nil
					continue
				}
				errOnce.Do(func() {
					firstErr = fmt.Errorf("record %s/%d: %w", e.Msg.Topic, e.Msg.Partition, e.Err)
					close(failed)
				})
			}
		}
	}()

	stopProgress := startProgress(pc, int64(n), start, &acked)

	base := time.Now().Add(-time.Hour).Truncate(time.Millisecond)
	var sendErr error
send:
	for i := range n {
		p := int32(i % partitions)
		seq := next[p]
		next[p]++
		m := &sarama.ProducerMessage{
			Topic:     topic,
			Partition: p,
			Key:       sarama.StringEncoder(recordKey(p, seq)),
			Headers:   recordHeaders(p, seq),
			Timestamp: recordTimestamp(base, seq),
		}
		// A nil Encoder is what makes sarama write a null value; a
		// ByteEncoder holding nil would too, but say it plainly.
		if v := recordValue(p, seq, size); v != nil {
			m.Value = sarama.ByteEncoder(v)
		}
		select {
		case producer.Input() <- m:
		case <-failed:
			break send
		case <-ctx.Done():
			sendErr = fmt.Errorf("produce stopped after %d of %d records: %w", acked.Load(), n, ctx.Err())
			break send
		}
	}
	producer.AsyncClose()
	<-drained
	elapsed := time.Since(start)
	stopProgress()

	res := ProduceResult{Records: acked.Load(), Bytes: bytes.Load(), Elapsed: elapsed}
	if firstErr != nil {
		return res, fmt.Errorf("produce to %s on %s failed after %d records: %w", topic, s.Name, res.Records, firstErr)
	}
	return res, sendErr
}

func valueLen(e sarama.Encoder) int {
	if e == nil {
		return 0
	}
	return e.Length()
}

// tuneProducer sets throughput-minded, loss-free producing: idempotent with
// acks=all (so retries neither lose nor duplicate nor reorder), large batches
// with a short linger, and a channel deep enough to keep every partition's
// batch filling while the previous one is in flight.
func tuneProducer(cfg *sarama.Config, partitions int) {
	cfg.Producer.Idempotent = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Net.MaxOpenRequests = 1 // sarama's rule for idempotence
	cfg.Producer.Retry.Max = 10
	cfg.Producer.Retry.Backoff = 100 * time.Millisecond
	cfg.Producer.Return.Successes = true
	cfg.Producer.Return.Errors = true
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Flush.Bytes = 1 << 20
	cfg.Producer.Flush.Frequency = 10 * time.Millisecond
	cfg.Producer.MaxMessageBytes = 1000000
	cfg.ChannelBufferSize = max(256, 64*partitions)
}

// startProgress reports progress every interval until the returned stop is
// called, which also sends the final snapshot.
func startProgress(pc produceConfig, total int64, start time.Time, acked *atomic.Int64) (stop func()) {
	if pc.progress == nil {
		return func() {}
	}
	snapshot := func() Progress {
		el := time.Since(start)
		a := acked.Load()
		pr := Progress{Acked: a, Total: total, Elapsed: el}
		if el > 0 {
			pr.Rate = float64(a) / el.Seconds()
		}
		return pr
	}
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		t := time.NewTicker(pc.interval)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				pc.progress(snapshot())
			case <-done:
				pc.progress(snapshot())
				return
			}
		}
	}()
	return func() { close(done); <-finished }
}

// ensureTopic creates topic or checks the existing one has the partition
// count asked for, then waits until metadata shows every partition: a just
// created topic can be unknown to the broker a producer asks first.
func ensureTopic(ctx context.Context, client sarama.Client, topic string, partitions int32, rf int16) error {
	// The admin shares the client; closing the client (the caller's job)
	// is all the admin needs.
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		return fmt.Errorf("find the controller to create the topic: %w", err)
	}
	// A replication factor of -1 means the broker's default (KIP-464,
	// CreateTopics v4+, which sarama uses from Kafka 2.4 on).
	err = admin.CreateTopic(topic, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: rf}, false)
	if err != nil && !errors.Is(err, sarama.ErrTopicAlreadyExists) {
		return fmt.Errorf("create topic with %d partitions, replication factor %d: %w", partitions, rf, err)
	}

	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := client.RefreshMetadata(topic)
		if err == nil {
			ps, perr := client.Partitions(topic)
			if perr == nil && int32(len(ps)) == partitions {
				return nil
			}
			if perr == nil && int32(len(ps)) != partitions {
				// Only a pre-existing topic can differ; keys would no
				// longer say where a record belongs, so refuse.
				return fmt.Errorf("topic exists with %d partitions, not %d: delete it or produce with %d partitions", len(ps), partitions, len(ps))
			}
			err = perr
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("topic not visible in metadata after 30s: %w", err)
		}
		select {
		case <-tick.C:
		case <-ctx.Done():
			return fmt.Errorf("wait for topic metadata: %w", ctx.Err())
		}
	}
}

package replicator

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"
)

// An exactly-once worker's progress records share partition 0 of the
// progress topic with its transaction's data. Kafka skips a transaction
// marker meant for a partition without a leader, so when that partition's
// broker is away at a commit (or at the fence that aborts a transaction),
// this producer's progress records stay open there after the broker is
// back: read_committed readers stop before them, every worker's start waits
// on them (progressSettled) past the transaction timeout and fails, for
// good. Worse, the next marker this producer writes there closes the old
// records with its own outcome: a commit's progress aborted by the next
// fence copies records twice, an aborted one committed by the next commit
// skips records.
//
// Two rules keep the range to one transaction and close it right:
//   - a transaction adds the progress partition only when this producer has
//     nothing open there (progressClosed): the last commit's marker landed,
//     or the worker starts again;
//   - a worker's start closes what its producer left open there (after the
//     fence, before it reads progress), committed when the target's data
//     partitions hold that transaction's records committed, aborted
//     otherwise (worker.closeOwnProgress).

// ownOpenProgress is the offset where this producer's open transaction on
// the progress topic's partition begins, -1 when it has none open there (or
// the topic is not there yet). The partition's leader answers
// (DescribeProducers, READ on the topic).
func (t *transaction) ownOpenProgress() (int64, error) {
	leader, err := t.client.Leader(t.progressTopic, 0)
	if errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
		return -1, nil
	}
	if err != nil {
		return -1, err
	}
	resp, err := leader.DescribeProducers(&sarama.DescribeProducersRequest{
		Topics: []sarama.DescribeProducersRequestTopic{{Name: t.progressTopic, PartitionIndexes: []int32{0}}}})
	if err != nil {
		return -1, err
	}
	for _, topic := range resp.Topics {
		for _, p := range topic.Partitions {
			if !errors.Is(p.ErrorCode, sarama.ErrNoError) {
				return -1, p.ErrorCode
			}
			for _, ps := range p.ActiveProducers {
				if ps.ProducerID == t.pid && ps.CurrentTxnStartOffset >= 0 {
					return ps.CurrentTxnStartOffset, nil
				}
			}
		}
	}
	return -1, nil
}

// askOwnOpen is ownOpenProgress asked again while the partition's leader
// moves or is away, up to progressWriteWait (as a progress write waits).
func (t *transaction) askOwnOpen(ctx context.Context) (int64, error) {
	deadline := time.Now().Add(progressWriteWait)
	for attempt := 0; ; attempt++ {
		var from int64
		var err error
		if !interruptible(ctx, stopAnswerWait, func() { from, err = t.ownOpenProgress() }) {
			return -1, fmt.Errorf("progress topic %s gave no answer within %s of the stop: given up (%w)", t.progressTopic, stopAnswerWait, context.Cause(ctx))
		}
		if err == nil {
			return from, nil
		}
		if !retriable(err) || time.Now().After(deadline) || ctx.Err() != nil ||
			!interruptible(ctx, stopAnswerWait, func() { _ = t.client.RefreshMetadata(t.progressTopic) }) {
			return -1, fmt.Errorf("look for this flow's open transaction on progress topic %s on the target: %w", t.progressTopic, err)
		}
		select {
		case <-ctx.Done():
		case <-time.After(retryBackoff(attempt, 0)):
		}
	}
}

// progressClosed waits, before the progress partition joins a transaction,
// until the last commit's marker landed there: nothing of this producer is
// open on it. A marker that does not come is an error that restarts the
// worker, whose start closes the range (worker.closeOwnProgress).
func (t *transaction) progressClosed(ctx context.Context) error {
	deadline := time.Now().Add(settleWait)
	for pause := 5 * time.Millisecond; ; pause = min(2*pause, 100*time.Millisecond) {
		from, err := t.askOwnOpen(ctx)
		if err != nil {
			return err
		}
		if from < 0 {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("progress topic %s holds this flow's last committed progress unmarked from offset %d after %s: Kafka skipped its marker while the partition had no leader; the flow starts again to close it as the target's records say", t.progressTopic, from, settleWait)
		}
		time.Sleep(pause) // the marker is written just after the commit
	}
}

// ownProgressRecords returns the newest value of each key among pid's
// records on partition 0 of topic from offset from to its end now
// (read_uncommitted: the records are in an open transaction).
func ownProgressRecords(client sarama.Client, topic string, from int64, pid int64) (map[progressKey]progressValue, error) {
	out := map[progressKey]progressValue{}
	err := eachBatch(client, topic, 0, from, func(b *sarama.RecordBatch) {
		if b.Control || b.ProducerID != pid {
			return
		}
		for _, r := range b.Records {
			if b.FirstOffset+r.OffsetDelta < from {
				continue
			}
			if k, v, ok := decodeProgress(&sarama.ConsumerMessage{Key: r.Key, Value: r.Value}); ok && v != nil {
				out[k] = *v
			}
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// eachBatch hands f every whole record batch of topic-part from the one
// holding offset from to the partition's end as it is now, in order, read
// uncommitted (open and aborted transactions included).
func eachBatch(client sarama.Client, topic string, part int32, from int64, f func(*sarama.RecordBatch)) error {
	end, err := client.GetOffset(topic, part, sarama.OffsetNewest)
	if err != nil {
		return err
	}
	for from < end {
		blk, err := fetchAt(client, topic, part, from, sarama.ReadUncommitted)
		if err != nil {
			return err
		}
		next := from
		for _, rs := range blk.RecordsSet {
			b := rs.RecordBatch
			if b == nil || b.PartialTrailingRecord {
				continue
			}
			next = max(next, b.FirstOffset+int64(b.LastOffsetDelta)+1)
			f(b)
		}
		if next == from {
			return fmt.Errorf("read %s-%d at offset %d: nothing came back before its end %d", topic, part, from, end)
		}
		from = next
	}
	return nil
}

// outcomeAt says whether the record at offset off of topic-part, written by
// producer pid in a transaction, was committed; known is false when that
// cannot be told: the transaction is still open there, the record is gone
// (retention) or is not pid's.
func outcomeAt(client sarama.Client, topic string, part int32, off int64, pid int64) (committed, known bool, err error) {
	blk, err := fetchAt(client, topic, part, off, sarama.ReadCommitted)
	if errors.Is(err, sarama.ErrOffsetOutOfRange) {
		return false, false, nil
	}
	if err != nil {
		return false, false, err
	}
	if blk.LastStableOffset <= off {
		return false, false, nil
	}
	for _, rs := range blk.RecordsSet {
		b := rs.RecordBatch
		if b == nil || b.PartialTrailingRecord || b.FirstOffset > off || b.FirstOffset+int64(b.LastOffsetDelta) < off {
			continue
		}
		if b.Control || !b.IsTransactional || b.ProducerID != pid {
			return false, false, nil
		}
		// The answer lists the aborted transactions that reach the fetch's
		// offset: pid's there is the one holding off (a producer's
		// transactions on a partition do not overlap, transaction.settle).
		for _, at := range blk.AbortedTransactions {
			if at.ProducerID == pid && at.FirstOffset <= off {
				return false, true, nil
			}
		}
		return true, true, nil
	}
	return false, false, nil
}

// fetchAt is one fetch of topic-part from offset at, from its leader.
func fetchAt(client sarama.Client, topic string, part int32, at int64, isolation sarama.IsolationLevel) (*sarama.FetchResponseBlock, error) {
	leader, err := client.Leader(topic, part)
	if err != nil {
		return nil, err
	}
	req := &sarama.FetchRequest{Version: fetchVersion(client.Config().Version), MaxBytes: tailFetchBytes,
		Isolation: isolation, SessionEpoch: -1}
	req.AddBlock(topic, part, at, tailFetchBytes, -1)
	resp, err := leader.Fetch(req)
	if err != nil {
		return nil, err
	}
	blk := resp.GetBlock(topic, part)
	if blk == nil {
		return nil, sarama.ErrIncompleteResponse
	}
	if !errors.Is(blk.Err, sarama.ErrNoError) {
		return nil, blk.Err
	}
	return blk, nil
}

// closeOwnProgress ends what this worker's producer left open on the
// progress partition (a marker Kafka skipped, see above), before the
// progress is read. The range holds one transaction's progress records:
// committed when every target partition they moved holds its last record
// committed, else aborted (aborting copies again; committing progress whose
// records were aborted would skip them).
func (w *worker) closeOwnProgress(ctx context.Context, dst sarama.Client) error {
	topic := w.flow.ProgressTopic
	from, err := w.txn.askOwnOpen(ctx)
	if err != nil || from < 0 {
		return err
	}
	open, err := ownProgressRecords(dst, topic, from, w.txn.pid)
	if err != nil {
		return fmt.Errorf("read this flow's open progress on %s on the target: %w", topic, err)
	}
	// The committed progress, to the last stable offset (what that may
	// hide: openProgressOutcome).
	down := map[progressKey]int64{}
	if err := readTopic(dst, topic, func(m *sarama.ConsumerMessage) {
		if k, v, ok := decodeProgress(m); ok && v != nil {
			down[k] = v.Down
		}
	}); err != nil {
		return fmt.Errorf("read progress from %s on the target: %w", topic, err)
	}
	commit, outcome, err := openProgressOutcome(open, down, w.flow.Task, w.flow.Name(), w.flow.Policy.TargetTopic,
		func(target string, part int32, off int64) (bool, error) {
			c, known, err := outcomeAt(dst, target, part, off, w.txn.pid)
			return known && c, err
		})
	if err != nil {
		return fmt.Errorf("tell whether this flow's open progress on %s was committed: %w", topic, err)
	}
	msg := fmt.Sprintf("progress topic %s held this flow's progress of an earlier run open from offset %d (Kafka skipped its marker while the partition had no leader): %s",
		topic, from, outcome)
	w.log.Warn(msg)
	w.state.setError(msg)
	return w.txn.endOver(ctx, []tp{{topic, 0}}, commit)
}

// openProgressOutcome decides an open range of progress records (open, the
// newest value per key) against the committed progress (down, the target
// position per key): committed when every target partition it moved
// (target names the source topic's target topic) holds its record before
// the new position committed (committedAt), else aborted; outcome says
// which and why. Every key in the range is this worker's earlier run's,
// assigned to it now or not (a new plan moves partitions between workers).
// down may be older than this producer's last commit (another worker's
// transaction open before it hides it): a partition counted moved that did
// not holds an older committed record there, which a committed
// transaction's partitions agree with and an aborted one's contradict.
func openProgressOutcome(open map[progressKey]progressValue, down map[progressKey]int64, taskName, flow string, target func(source string) string,
	committedAt func(target string, part int32, off int64) (bool, error)) (commit bool, outcome string, err error) {
	var committed, other int
	for k, v := range open {
		before, had := down[k]
		if v.Down <= 0 || (had && v.Down <= before) {
			continue // no record of the transaction there
		}
		if k.Task != taskName || k.Flow != flow || k.Topic == "" {
			other++ // not a partition of this flow: cannot tell
			continue
		}
		c, err := committedAt(target(k.Topic), k.Partition, v.Down-1)
		if err != nil {
			return false, "", err
		}
		if c {
			committed++
		} else {
			other++
		}
	}
	if committed > 0 && other == 0 {
		return true, fmt.Sprintf("committed (the %d target partitions it moved hold its records committed)", committed), nil
	}
	return false, fmt.Sprintf("aborted (of the target partitions it moved, %d hold its records committed, %d aborted or cannot tell)", committed, other), nil
}

package replicator

import (
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/IBM/sarama"
)

// progressLog keeps a flow's progress in a compacted topic on the target
// cluster (task.ProgressTopic), besides the flow's consumer group on the
// source.
//
// Why both: Kafka drops a group's committed offsets offsets.retention.minutes
// (7 days by default) after its last commit. A task paused, or a kmirror
// stopped, for longer would then find no progress and start again from its
// start offset — every record copied twice, or with "latest", records
// skipped. A compacted topic keeps the last record of every key for good
// (MM2 keeps its progress the same way, in Connect's offsets topic). The
// group stays the fast path, committed every CommitInterval and read by
// standard Kafka tools for lag; the topic is written every LogInterval for
// the partitions that moved, and for all that moved at every clean stop.
// Both only ever hold acknowledged positions, so at start the further of
// the two is taken.
//
// Records: key {"task","flow","topic","partition"} (JSON, fields in that
// order, so equal keys are equal bytes and compaction keeps the last), value
// {"next","down"}: the next source offset to copy and the target position
// after the last copied record (-1 unknown).
type progressLog struct {
	topic      string
	task, flow string
	client     sarama.Client // the target
	prod       sarama.SyncProducer
	every      time.Duration
	lastAt     time.Time
	last       map[*partState]storedProgress // what was last written
	// writes are the writes to the target: one at a time, waited for at
	// most progressWriteWait; close does not wait for one unanswered.
	writes unansweredCall
	// byTxn: an exactly-once flow's progress goes into its transactions
	// (transaction.go), never written here.
	byTxn bool
}

// progressWriteWait bounds how long a commit (and so a stop) waits for the
// target to answer a progress write: a target that stops answering must
// not hold a pause or delete. The group on the source has the progress too.
const progressWriteWait = 10 * time.Second

type progressKey struct {
	Task      string `json:"task"`
	Flow      string `json:"flow"`
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
}

type progressValue struct {
	Next    int64  `json:"next"`
	Down    int64  `json:"down"`
	TopicID string `json:"topic_id,omitempty"`
	// TargetTopicID is the target topic's id the progress was made on.
	TargetTopicID string `json:"target_topic_id,omitempty"`
	// Started, on the flow's start record (topic "", partition -1), is when
	// the flow first ran (Unix ms): partitions found after it start at
	// their first record, whatever the task's start offset.
	Started int64 `json:"started,omitempty"`
}

// progressRecord is the progress-log record of k with v.
func progressRecord(topic string, k progressKey, v progressValue) *sarama.ProducerMessage {
	kb, vb := progressBytes(k, v)
	return &sarama.ProducerMessage{Topic: topic, Partition: 0, Key: sarama.ByteEncoder(kb), Value: sarama.ByteEncoder(vb)}
}

// progressBytes is the key and value of a progress-log record.
func progressBytes(k progressKey, v progressValue) (key, value []byte) {
	key, _ = json.Marshal(k) // plain strings and numbers: cannot fail
	value, _ = json.Marshal(v)
	return key, value
}

// decodeProgress reads a progress-log record: ok is false when its key is
// not one; v is nil for a tombstone or a value that cannot be read.
func decodeProgress(m *sarama.ConsumerMessage) (k progressKey, v *progressValue, ok bool) {
	if json.Unmarshal(m.Key, &k) != nil {
		return k, nil, false
	}
	var val progressValue
	if m.Value == nil || json.Unmarshal(m.Value, &val) != nil {
		return k, nil, true
	}
	return k, &val, true
}

// startKey is the key of the flow's start record.
func (l *progressLog) startKey() progressKey { return progressKey{l.task, l.flow, "", -1} }

// newProgressLog writes through target, a client whose producer settings are
// acks=all with successes returned (worker.targetConfig).
func newProgressLog(target sarama.Client, topic string, f Flow, every time.Duration) (*progressLog, error) {
	prod, err := sarama.NewSyncProducerFromClient(target)
	if err != nil {
		return nil, fmt.Errorf("progress producer on target %s: %w", f.Target.Alias, err)
	}
	return &progressLog{topic: topic, task: f.Task, flow: f.Name(), client: target, prod: prod,
		every: every, last: map[*partState]storedProgress{}}, nil
}

func (l *progressLog) close() {
	if l.writes.busy() {
		go func() { _ = l.prod.Close() }() // ends once the target answers or the write times out
		return
	}
	_ = l.prod.Close()
}

// send writes msgs, waiting at most progressWriteWait for the answer.
func (l *progressLog) send(msgs []*sarama.ProducerMessage) error {
	done, ok := l.writes.start(func() error { return l.prod.SendMessages(msgs) })
	if !ok {
		// What the unanswered write held is written again by a later one.
		return fmt.Errorf("write progress to %s on the target: an earlier write has had no answer for over %s", l.topic, progressWriteWait)
	}
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("write progress to %s on the target: %w", l.topic, err)
		}
		return nil
	case <-time.After(progressWriteWait):
		return fmt.Errorf("write progress to %s on the target: no answer in %s", l.topic, progressWriteWait)
	}
}

// read returns the newest record of each of parts, offset -1 where none. It
// reads the topic from its start to the end it had when called.
func (l *progressLog) read(parts []Partition) (map[Partition]storedProgress, error) {
	out := make(map[Partition]storedProgress, len(parts))
	want := make(map[progressKey]Partition, len(parts))
	for _, p := range parts {
		out[p] = noProgress
		want[progressKey{l.task, l.flow, p.Source, p.Partition}] = p
	}
	err := readTopic(l.client, l.topic, func(m *sarama.ConsumerMessage) {
		k, v, ok := decodeProgress(m)
		p, wanted := want[k]
		switch {
		case !ok || !wanted:
		case v == nil:
			out[p] = noProgress // a tombstone or a record we cannot read
		default:
			out[p] = storedProgress{v.Next, v.Down, v.TopicID, v.TargetTopicID}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("read progress from %s on the target: %w", l.topic, err)
	}
	return out, nil
}

// write stores the positions that moved since the last write, at most every
// l.every unless final.
func (l *progressLog) write(states []*partState, final bool) error {
	if l.byTxn {
		return nil
	}
	now := time.Now()
	if !final && now.Sub(l.lastAt) < l.every {
		return nil
	}
	var msgs []*sarama.ProducerMessage
	wrote := map[*partState]storedProgress{}
	for _, ps := range states {
		sp := ps.committable()
		if last, ok := l.last[ps]; sp.offset < 0 || (ok && last == sp) {
			continue
		}
		msgs = append(msgs, progressRecord(l.topic, progressKey{l.task, l.flow, ps.Source, ps.Partition.Partition},
			progressValue{Next: sp.offset, Down: sp.down, TopicID: sp.topicID, TargetTopicID: sp.targetTopicID}))
		wrote[ps] = sp
	}
	l.lastAt = now
	if len(msgs) == 0 {
		return nil
	}
	if err := l.send(msgs); err != nil {
		return err
	}
	for ps, sp := range wrote {
		l.last[ps] = sp
	}
	return nil
}

// started says whether the flow ran before, and if not, records that it
// starts now. Only a flow's very first start applies the task's start
// offset ("latest") to partitions without progress; a partition found
// later — a new topic, more partitions, a topic created again — was
// written after the task began, so its records are copied from the first.
func (l *progressLog) started() (bool, error) {
	key := l.startKey()
	found := false
	err := readTopic(l.client, l.topic, func(m *sarama.ConsumerMessage) {
		if k, _, ok := decodeProgress(m); ok && k == key {
			found = m.Value != nil
		}
	})
	if err != nil {
		return false, fmt.Errorf("read progress from %s on the target: %w", l.topic, err)
	}
	if found {
		return true, nil
	}
	if _, _, err := l.prod.SendMessage(progressRecord(l.topic, key, progressValue{Next: -1, Down: -1, Started: time.Now().UnixMilli()})); err != nil {
		return false, fmt.Errorf("write the flow's start to %s on the target: %w", l.topic, err)
	}
	return false, nil
}

// readTopic hands every committed record of partition 0 of topic, from its
// start to its last stable offset now, to fn, in order (client reads
// committed: an exactly-once flow's aborted progress is never handed over).
func readTopic(client sarama.Client, topic string, fn func(*sarama.ConsumerMessage)) error {
	oldest, err := client.GetOffset(topic, 0, sarama.OffsetOldest)
	if err != nil {
		return err
	}
	end, err := lastStableOffset(client, topic, 0)
	if err != nil {
		return err
	}
	if end <= oldest {
		return nil
	}
	consumer, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		return err
	}
	defer consumer.Close()
	pc, err := consumer.ConsumePartition(topic, 0, oldest)
	if err != nil {
		return err
	}
	defer pc.Close()
	next, lastRecord := oldest, time.Now()
	for next < end {
		select {
		case m := <-pc.Messages():
			fn(m)
			next, lastRecord = m.Offset+1, time.Now()
		case err := <-pc.Errors():
			return err
		case <-time.After(markerWait):
			// What is left may be transaction markers and aborted
			// records, which a read_committed consumer never hands over.
			if tail, ok, err := SettledTail(client, topic, 0, next); err == nil && ok && tail > next {
				next = tail
				continue
			}
			if time.Since(lastRecord) > 30*time.Second {
				return fmt.Errorf("no record for 30s before offset %d", end)
			}
		}
	}
	return nil
}

// markerWait is how long readTopic waits for a record before it looks
// whether the rest is transaction markers.
const markerWait = 200 * time.Millisecond

// lastStableOffset is where a read_committed reader's records of a
// partition end now: before the first open transaction, else its end.
func lastStableOffset(client sarama.Client, topic string, part int32) (int64, error) {
	offs, err := lastStableOffsets(client, []tp{{topic, part}})
	if err != nil {
		return -1, err
	}
	return offs[tp{topic, part}], nil
}

// ListOffsets is, for every partition listed (by topic), in one request
// per leader: at sarama.OffsetNewest its last stable offset (where a
// read_committed reader's newest record ends, before any open
// transaction), at sarama.OffsetOldest its first offset.
func ListOffsets(client sarama.Client, parts map[string][]int32, at int64) (map[string]map[int32]int64, error) {
	var all []tp
	for topic, ps := range parts {
		for _, p := range ps {
			all = append(all, tp{topic, p})
		}
	}
	offs, err := listOffsets(client, all, at)
	if err != nil {
		return nil, err
	}
	out := map[string]map[int32]int64{}
	for p, o := range offs {
		if out[p.topic] == nil {
			out[p.topic] = map[int32]int64{}
		}
		out[p.topic][p.partition] = o
	}
	return out, nil
}

// lastStableOffsets is lastStableOffset of many partitions in one request
// per leader (a switchover asks every partition's once a second).
func lastStableOffsets(client sarama.Client, parts []tp) (map[tp]int64, error) {
	return listOffsets(client, parts, sarama.OffsetNewest)
}

// listOffsets is ListOffsets by tp. As sarama's GetOffset, it asks once
// more for those that failed after refreshing their metadata (a leader
// that just moved).
func listOffsets(client sarama.Client, parts []tp, at int64) (map[tp]int64, error) {
	out := make(map[tp]int64, len(parts))
	failed, err := listOffsetsOnce(client, parts, at, sarama.ReadCommitted, out)
	if len(failed) == 0 {
		return out, nil
	}
	var topics []string
	seen := map[string]bool{}
	for _, p := range failed {
		if !seen[p.topic] {
			seen[p.topic] = true
			topics = append(topics, p.topic)
		}
	}
	if rerr := client.RefreshMetadata(topics...); rerr != nil {
		return nil, err
	}
	if failed, err = listOffsetsOnce(client, failed, at, sarama.ReadCommitted, out); len(failed) > 0 {
		return nil, err
	}
	return out, nil
}

// listOffsetsOnce asks each partition's leader once, in one request per
// broker, adding what it learns to out; failed are the partitions it did
// not learn, err why. At sarama.OffsetNewest, iso says which end:
// sarama.ReadCommitted the last stable offset, sarama.ReadUncommitted the
// high watermark.
func listOffsetsOnce(client sarama.Client, parts []tp, at int64, iso sarama.IsolationLevel, out map[tp]int64) (failed []tp, err error) {
	reqs := map[*sarama.Broker]*sarama.OffsetRequest{}
	asked := map[*sarama.Broker][]tp{}
	var errs []error
	fail := func(p tp, err error) {
		failed = append(failed, p)
		errs = append(errs, fmt.Errorf("%s-%d: %w", p.topic, p.partition, err))
	}
	for _, p := range parts {
		leader, err := client.Leader(p.topic, p.partition)
		if err != nil {
			fail(p, err)
			continue
		}
		if reqs[leader] == nil {
			reqs[leader] = sarama.NewOffsetRequest(client.Config().Version)
			reqs[leader].IsolationLevel = iso
		}
		reqs[leader].AddBlock(p.topic, p.partition, at, 1)
		asked[leader] = append(asked[leader], p)
	}
	for b, req := range reqs {
		resp, err := b.GetAvailableOffsets(req)
		for _, p := range asked[b] {
			if err != nil {
				fail(p, err)
				continue
			}
			blk := resp.GetBlock(p.topic, p.partition)
			switch {
			case blk == nil || len(blk.Offsets) != 1 && errors.Is(blk.Err, sarama.ErrNoError):
				fail(p, sarama.ErrIncompleteResponse)
			case !errors.Is(blk.Err, sarama.ErrNoError):
				fail(p, blk.Err)
			default:
				out[p] = blk.Offsets[0]
			}
		}
	}
	return failed, errors.Join(errs...)
}

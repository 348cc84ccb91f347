package replicator

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/checkpoint"
	"github.com/kmirror/kmirror/internal/cluster"
)

// syncState is the last offset sync emitted for a partition.
type syncState struct {
	have     bool
	up, down int64
	at       time.Time
}

// shouldSync says whether acknowledging upstream offset up at downstream
// offset down needs a new offset sync. A sync is emitted on a partition's
// first record, whenever the distance down-up changes (an upstream gap:
// skipped, compacted or aborted records, transaction markers; or other
// writers on the target; or the target going backwards), and at least every
// maxAge while records flow.
//
// So between two consecutive syncs the mapping is one-to-one with a constant
// distance: a consumer offset g between them translates exactly to
// g + (down - up), capped at the next sync's downstream offset. That is what
// makes translation exact instead of MM2's "behind by up to offset.lag.max".
func shouldSync(s syncState, up, down int64, now time.Time, maxAge time.Duration) bool {
	return !s.have || down-up != s.down-s.up || now.Sub(s.at) >= maxAge
}

// syncWriter writes offset syncs in MM2's format to partition 0 of the
// offset-syncs topic, and every distance-change sync also to kmirror's sync
// history topic (checkpoint/record.go), in order, retrying for minutes like
// the data producer.
//
// A distance-change sync is load-bearing: after a restart, translation reads
// the history back, and a missing change would translate offsets past it
// with the old distance — possibly ahead of the copy. So such a sync is
// tracked as pending on its partition until the broker acknowledged its
// history record, and progress is never committed past a pending sync
// (progress.commit): if it is lost, the records from it on are copied again
// and synced again. MM2's record of it is for MM2's readers and not waited
// for.
//
// The copy hands its syncs over (emit) and goes on: feed writes them, in
// order, off the copy path, so a slow or leaderless sync partition holds
// back progress (as it must) but never the copy's fetching and sending.
// Only a queue of maxQueuedSyncs makes emit wait.
type syncWriter struct {
	topic, history string
	prod           sarama.AsyncProducer
	onErr          func(error)
	log            *slog.Logger
	done           chan struct{}
	// backedUp is set while MM2 records are dropped (offer), so that is
	// logged once per backlog.
	backedUp atomic.Bool

	qmu   sync.Mutex
	queue []queuedSync
	wake  chan struct{} // cap 1: the queue has syncs for feed
	room  chan struct{} // closed when feed takes the queue: every emit waiting for room goes on
	stop  chan struct{} // closed by close: feed writes what is queued, then ends
	fed   chan struct{} // closed when feed ended
	// stopFeed ends feed's waits syncCloseWait after close.
	stopFeed context.CancelFunc
}

type queuedSync struct {
	ps *partState
	s  pendingSync
}

// maxQueuedSyncs bounds the syncs waiting for feed (about 100 bytes each):
// past it, emit waits for room, as a producer's full buffer would make it.
const maxQueuedSyncs = 100_000

// syncRef is what a sync's acknowledgement needs.
type syncRef struct {
	ps       *partState
	upstream int64
	tracked  bool
}

func newSyncWriter(s cluster.Settings, clientID, topic, history string, log *slog.Logger, onErr func(error)) (*syncWriter, error) {
	cfg, err := s.Config(clientID)
	if err != nil {
		return nil, err
	}
	p := &cfg.Producer
	p.Partitioner = sarama.NewManualPartitioner
	p.RequiredAcks = sarama.WaitForAll
	p.Return.Successes = true
	p.Return.Errors = true
	cfg.Net.MaxOpenRequests = 1
	p.Retry.Max = 600
	p.Retry.BackoffFunc = retryBackoff
	cfg.Metadata.Retry.Max = 600
	cfg.Metadata.Retry.BackoffFunc = retryBackoff
	// Only the two sync topics' metadata: with a full refresh at start,
	// the retries above made one leaderless partition of any other topic
	// hold the flow's start for minutes.
	cfg.Metadata.Full = false
	prod, err := sarama.NewAsyncProducer(s.BootstrapServers, cfg)
	if err != nil {
		return nil, err
	}
	w := &syncWriter{topic: topic, history: history, prod: prod, onErr: onErr, log: log, done: make(chan struct{})}
	w.startFeed()
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		for m := range prod.Successes() {
			if w.backedUp.CompareAndSwap(true, false) {
				w.log.Info("offset syncs are written again", "topic", topic)
			}
			if ref := m.Metadata.(syncRef); ref.tracked {
				ref.ps.syncDurable(ref.upstream)
			}
		}
	}()
	go func() {
		defer wg.Done()
		for e := range prod.Errors() {
			// The sync stays pending: progress is held back before it, so
			// the records after it are copied and synced again later.
			w.onErr(e.Err)
		}
	}()
	go func() { wg.Wait(); close(w.done) }()
	return w, nil
}

// syncQueueWait is how long offer waits to queue MM2's record before it
// counts the sync producer as backed up.
const syncQueueWait = time.Second

// emit hands a sync over to feed, which writes it (see write); change is
// set for a distance change. It waits only while maxQueuedSyncs are
// queued, until ctx ends: a distance change not queued by then stays
// pending, and the records from it on are copied and synced again at the
// next start.
func (w *syncWriter) emit(ctx context.Context, ps *partState, pending pendingSync) {
	for {
		w.qmu.Lock()
		if len(w.queue) < maxQueuedSyncs {
			w.queue = append(w.queue, queuedSync{ps, pending})
			w.qmu.Unlock()
			select {
			case w.wake <- struct{}{}:
			default:
			}
			return
		}
		if w.room == nil {
			w.room = make(chan struct{})
		}
		room := w.room
		w.qmu.Unlock()
		select {
		case <-room:
		case <-ctx.Done():
			return
		}
	}
}

// startFeed starts feed, which writes what emit queues, until close.
func (w *syncWriter) startFeed() {
	w.wake = make(chan struct{}, 1)
	w.stop, w.fed = make(chan struct{}), make(chan struct{})
	var ctx context.Context
	ctx, w.stopFeed = context.WithCancel(context.Background())
	go w.feed(ctx)
}

// feed writes the queued syncs in the order they were emitted until close;
// then what is still queued, until ctx ends (syncCloseWait after close).
func (w *syncWriter) feed(ctx context.Context) {
	defer close(w.fed)
	stopping := false
	for {
		w.qmu.Lock()
		batch := w.queue
		w.queue = nil
		if w.room != nil {
			close(w.room)
			w.room = nil
		}
		w.qmu.Unlock()
		if len(batch) == 0 {
			if stopping {
				return
			}
			select {
			case <-w.wake:
			case <-w.stop:
				stopping = true
			}
			continue
		}
		for _, q := range batch {
			w.write(ctx, q.ps, q.s)
		}
	}
}

// write queues one sync's records on the producer.
//
// MM2's record is not waited for long: once the producer was backed up
// for syncQueueWait (a sync partition without a leader holds its retries
// for minutes, and its queue fills in seconds) the records are dropped
// until one is written again. MM2's readers then translate from older
// syncs, behind and never ahead, and a later sync supersedes them. A
// history record holds progress back until written, so it is waited for,
// until ctx ends.
func (w *syncWriter) write(ctx context.Context, ps *partState, pending pendingSync) {
	s, change := pending.sync, pending.change
	w.offer(ctx, &sarama.ProducerMessage{
		Topic: w.topic, Partition: 0,
		Key:      sarama.ByteEncoder(s.Key()),
		Value:    sarama.ByteEncoder(s.Value()),
		Metadata: syncRef{},
	})
	// Points the history's bound dropped are deleted from its topic
	// (a tombstone each; compaction removes them), so the topic holds
	// what a restart keeps, not every distance change of its 30-day
	// retention. Best effort, as MM2's record: one not written leaves a point
	// a restart drops again.
	for _, p := range pending.forget {
		w.offer(ctx, &sarama.ProducerMessage{
			Topic: w.history, Partition: 0,
			Key:      sarama.ByteEncoder(checkpoint.HistoryKey(s.Topic, s.Partition, p)),
			Metadata: syncRef{},
		})
	}
	if change != nil {
		m := &sarama.ProducerMessage{
			Topic: w.history, Partition: 0,
			Key:      sarama.ByteEncoder(checkpoint.HistoryKey(s.Topic, s.Partition, *change)),
			Value:    sarama.ByteEncoder(checkpoint.HistoryValue(*change)),
			Metadata: syncRef{ps: ps, upstream: change.Upstream, tracked: true},
		}
		select {
		case w.prod.Input() <- m:
		case <-ctx.Done():
		}
	}
}

// offer queues an untracked record: MM2's sync, or a history tombstone.
// The producer's input is unbuffered: a send that does not wait at all
// fails whenever its dispatcher is busy for a moment. So a healthy
// producer is waited for up to syncQueueWait; once that ran out, records
// are dropped at once until one is written again.
func (w *syncWriter) offer(ctx context.Context, m *sarama.ProducerMessage) {
	if w.backedUp.Load() {
		select {
		case w.prod.Input() <- m:
		default:
		}
		return
	}
	t := time.NewTimer(syncQueueWait)
	defer t.Stop()
	select {
	case w.prod.Input() <- m:
	case <-t.C:
		if w.backedUp.CompareAndSwap(false, true) {
			w.log.Warn("offset syncs are backed up; MM2's records are dropped until they are written again (MM2's readers translate from older syncs meanwhile; kmirror's sync history is kept)", "topic", w.topic)
		}
	case <-ctx.Done():
	}
}

// syncCloseWait bounds how long a stopping flow waits for syncs still on
// their way: a pause or delete must end within seconds even while the
// offset-syncs cluster is away.
const syncCloseWait = 10 * time.Second

// close writes what is queued and flushes the producer, waiting at most
// syncCloseWait in all. Syncs not written by then held progress back (it
// was committed before them), so their records are copied and synced
// again at the next start; the producer finishes or gives up in the
// background.
func (w *syncWriter) close() (flushed bool) {
	deadline := time.Now().Add(syncCloseWait)
	close(w.stop)
	t := time.AfterFunc(syncCloseWait, w.stopFeed)
	defer t.Stop()
	<-w.fed // its waits end with stopFeed at the latest: nothing is sent after AsyncClose
	w.stopFeed()
	w.prod.AsyncClose()
	select {
	case <-w.done:
		return true
	case <-time.After(max(time.Until(deadline), time.Second)):
		return false
	}
}

// retryBackoff grows from 100ms to 2s: with 600 retries, minutes of outage
// are ridden out in order.
func retryBackoff(retries, _ int) time.Duration {
	return min(100*time.Millisecond<<min(retries, 5), 2*time.Second)
}

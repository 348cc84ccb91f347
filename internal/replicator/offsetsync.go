package replicator

import (
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/mm2"
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
// offset-syncs topic. Writes are fire-and-forget: a lost sync only makes a
// later translation less precise (never ahead), so errors are reported, not
// fatal.
type syncWriter struct {
	topic string
	prod  sarama.AsyncProducer
	onErr func(error)
	done  chan struct{}
}

func newSyncWriter(client sarama.Client, topic string, onErr func(error)) (*syncWriter, error) {
	prod, err := sarama.NewAsyncProducerFromClient(client)
	if err != nil {
		return nil, err
	}
	w := &syncWriter{topic: topic, prod: prod, onErr: onErr, done: make(chan struct{})}
	go func() {
		defer close(w.done)
		for e := range prod.Errors() {
			w.onErr(e.Err)
		}
	}()
	return w, nil
}

func (w *syncWriter) emit(s mm2.OffsetSync) {
	w.prod.Input() <- &sarama.ProducerMessage{
		Topic: w.topic, Partition: 0,
		Key:   sarama.ByteEncoder(s.Key()),
		Value: sarama.ByteEncoder(s.Value()),
	}
}

// close flushes pending syncs.
func (w *syncWriter) close() {
	w.prod.AsyncClose()
	<-w.done
}

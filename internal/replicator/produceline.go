package replicator

import (
	"sync"
	"sync/atomic"

	"github.com/IBM/sarama"
)

// A broker serves a connection's requests one at a time, the acks=all wait
// included: with one produce request per partition, partitions sharing a
// leader queued behind each other's replication wait (on RF 3 targets, a
// round trip to the followers each). So a worker's partitions hand their
// batch to the line of their leader's connection. A line keeps at most two
// requests in flight — one the broker works on, the next waiting behind it
// so the broker never idles while we encode — and whatever is handed to it
// meanwhile goes out together in the request after: one replication wait
// for them all, one answer. (One in flight gathered more, but each batch
// then also waited for our turnaround: the partitions queued more batches,
// and a 6-partition copy's peak RSS doubled, 333-492 MiB against 167-222.)
// Each partition still has one batch in flight, so order and the
// idempotent sequences are as before.

// produceLines are a worker's lines, one per broker connection (a
// sarama.Broker of one of the worker's target clients).
type produceLines struct {
	mu    sync.Mutex
	lines map[*sarama.Broker]*produceLine
}

// line is broker's line, made on first use.
func (ls *produceLines) line(broker *sarama.Broker) *produceLine {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	l := ls.lines[broker]
	if l == nil {
		if ls.lines == nil {
			ls.lines = map[*sarama.Broker]*produceLine{}
		}
		l = &produceLine{broker: broker}
		ls.lines[broker] = l
	}
	return l
}

// maxRequestBytes caps a request's batches (the broker refuses requests
// past socket.request.max.bytes, 100 MiB by default); one batch alone may
// pass it.
const maxRequestBytes = 16 << 20

// produceLine gathers batches for one broker connection.
type produceLine struct {
	broker  *sarama.Broker
	mu      sync.Mutex
	pending []*producePiece
	busy    int // requests of the line in flight
}

// lineInFlight is how many requests a line has in flight at most.
const lineInFlight = 2

// producePiece is one partition's batch handed to a line, and where its
// answer goes.
type producePiece struct {
	topic string
	part  int32
	rb    *sarama.RecordBatch
	size  int
	// state moves from queued to sent (the line took it) or abandoned (its
	// partition stopped waiting first: the line drops it).
	state atomic.Int32
	got   chan produceAnswer
}

const (
	pieceQueued int32 = iota
	pieceSent
	pieceAbandoned
)

// produceAnswer is a request's answer as the callback had it.
type produceAnswer struct {
	resp *sarama.ProduceResponse
	err  error
}

// abandon says whether the piece was dropped before it was sent: its
// records were not written.
func (p *producePiece) abandon() bool {
	return p.state.CompareAndSwap(pieceQueued, pieceAbandoned)
}

// send queues p, and sends it at once with whatever waits if the line has
// a request slot free; the caller waits on p.got. header is the request's
// fields (acks, timeout, version, transactional id), the same for every
// piece of a worker.
func (l *produceLine) send(p *producePiece, header sarama.ProduceRequest) {
	l.mu.Lock()
	l.pending = append(l.pending, p)
	if l.busy >= lineInFlight {
		l.mu.Unlock()
		return
	}
	l.busy++
	l.mu.Unlock()
	l.flush(header)
}

// flush sends what is pending as one request, until that request is in
// flight or nothing is left; the caller took a slot of busy, which the
// request keeps (and its answer hands on) or flush gives back.
func (l *produceLine) flush(header sarama.ProduceRequest) {
	for {
		l.mu.Lock()
		var take []*producePiece
		bytes, i := 0, 0
		for ; i < len(l.pending); i++ {
			p := l.pending[i]
			if len(take) > 0 && bytes+p.size > maxRequestBytes {
				break
			}
			if p.state.CompareAndSwap(pieceQueued, pieceSent) {
				take = append(take, p)
				bytes += p.size
			}
		}
		l.pending = append(l.pending[:0], l.pending[i:]...)
		if len(take) == 0 {
			l.busy--
			l.mu.Unlock()
			return
		}
		l.mu.Unlock()
		req := header
		for _, p := range take {
			req.AddBatch(p.topic, p.part, p.rb)
		}
		err := l.broker.AsyncProduce(&req, func(resp *sarama.ProduceResponse, err error) {
			// On the broker's response reader: hand over only; what
			// waited meanwhile goes out from a goroutine of its own.
			for _, p := range take {
				p.got <- produceAnswer{resp, err}
			}
			l.mu.Lock()
			if len(l.pending) == 0 {
				l.busy--
				l.mu.Unlock()
				return
			}
			l.mu.Unlock()
			go l.flush(header)
		})
		if err == nil {
			return
		}
		for _, p := range take { // each waiter closes a broken connection
			p.got <- produceAnswer{nil, err}
		}
	}
}

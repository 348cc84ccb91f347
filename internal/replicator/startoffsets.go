package replicator

import (
	"sync"

	"github.com/IBM/sarama"
)

// knownOffsets answers a worker's start-up offset lookups from what one
// ListOffsets request per broker learned for every partition at once,
// instead of a round trip per partition and lookup: a partition's start
// asks up to six (its start position, its source end for lag, the
// target's end to resume against, and sarama's ConsumePartition asks the
// source's newest and oldest again), serialised per broker, which at
// thousands of partitions was most of a worker's start.
//
// It stands in for the client the worker's consumer and its start use;
// once the start round is over, forget sends every lookup to the broker
// again (a partition that waits and starts later, a restart's reconcile).
// What was not learned (a partition without a leader, a failed request)
// is asked as before, so its error and wait are the ones it always had.
//
// Values learned a moment before use are safe where they are used: a
// source's ends only grow and a stored position is checked against them
// as sarama does; a target's end is read before this worker writes
// there.
type knownOffsets struct {
	sarama.Client
	mu    sync.Mutex
	known map[knownAt]int64
}

type knownAt struct {
	tp
	at int64 // sarama.OffsetNewest or sarama.OffsetOldest
}

func newKnownOffsets(c sarama.Client) *knownOffsets {
	return &knownOffsets{Client: c, known: map[knownAt]int64{}}
}

// learn asks every partition's leader, one request per broker and
// lookup, what GetOffset would answer at each of ats (read uncommitted,
// as sarama's GetOffset). Partitions it could not learn are left out.
func (k *knownOffsets) learn(parts []tp, ats ...int64) {
	for _, at := range ats {
		out := make(map[tp]int64, len(parts))
		_, _ = listOffsetsOnce(k.Client, parts, at, sarama.ReadUncommitted, out)
		k.mu.Lock()
		for p, off := range out {
			k.known[knownAt{p, at}] = off
		}
		k.mu.Unlock()
	}
}

// GetOffset is what learn learned, else the broker's answer.
func (k *knownOffsets) GetOffset(topic string, partition int32, at int64) (int64, error) {
	k.mu.Lock()
	off, ok := k.known[knownAt{tp{topic, partition}, at}]
	k.mu.Unlock()
	if ok {
		return off, nil
	}
	return k.Client.GetOffset(topic, partition, at)
}

// forget ends the start round: every lookup goes to the broker again.
func (k *knownOffsets) forget() {
	k.mu.Lock()
	clear(k.known)
	k.mu.Unlock()
}

package replicator

import (
	"cmp"
	"encoding/binary"
	"slices"

	"github.com/IBM/sarama"
)

// tailFetchBytes bounds a tail check's fetch.
const tailFetchBytes = 1 << 20

// SettledTail reports how far a partition's progress may move past offset
// from without copying anything: when every batch from there up to the
// last stable offset is a transaction marker or belongs to an aborted
// transaction, the read_committed consumer never delivers a record for
// those offsets, so progress (and lag) would otherwise stay short of the
// end for ever — a committed transaction always leaves its marker last.
// ok is false when a record may still be delivered there, or on doubt.
// The Connect engine's lag asks it too: MM2's offsets stop at the last
// copied record as well.
func SettledTail(src sarama.Client, topic string, part int32, from int64) (end int64, ok bool, err error) {
	blk, err := fetchAt(src, topic, part, from, sarama.ReadCommitted)
	if err != nil {
		return 0, false, err
	}
	return controlOnlyEnd(blk, from)
}

// controlOnlyEnd walks a read_committed fetch answer from offset from: the
// offset after its last batch when all of them are markers or aborted,
// else ok false. Aborted transactions are tracked as the consumer does: a
// producer listed in AbortedTransactions is aborted from its first offset
// until its ABORT marker.
func controlOnlyEnd(blk *sarama.FetchResponseBlock, from int64) (int64, bool, error) {
	pending := slices.Clone(blk.AbortedTransactions)
	slices.SortFunc(pending, func(a, b *sarama.AbortedTransaction) int { return cmp.Compare(a.FirstOffset, b.FirstOffset) })
	aborted := map[int64]bool{}
	end := from
	for _, rs := range blk.RecordsSet {
		b := rs.RecordBatch
		if b == nil {
			return 0, false, nil // a legacy message set: not transactional data we can judge
		}
		if b.PartialTrailingRecord {
			break
		}
		last := b.FirstOffset + int64(b.LastOffsetDelta)
		if last < from {
			continue
		}
		for len(pending) > 0 && pending[0].FirstOffset <= last {
			aborted[pending[0].ProducerID] = true
			pending = pending[1:]
		}
		switch {
		case b.Control:
			if len(b.Records) == 1 && len(b.Records[0].Key) >= 4 && binary.BigEndian.Uint16(b.Records[0].Key[2:4]) == 0 {
				delete(aborted, b.ProducerID) // ABORT marker: the producer's transaction ends here
			}
		case b.IsTransactional && aborted[b.ProducerID]:
		default:
			return 0, false, nil // data the consumer delivers
		}
		end = last + 1
	}
	return end, end > from, nil
}

// fetchVersion is the Fetch request version sarama's consumer uses for a
// protocol version (12: topic names, not ids).
func fetchVersion(v sarama.KafkaVersion) int16 {
	switch {
	case v.IsAtLeast(sarama.V2_7_0_0):
		return 12
	case v.IsAtLeast(sarama.V2_3_0_0):
		return 11
	case v.IsAtLeast(sarama.V2_1_0_0):
		return 10
	}
	return 4 // the first with an isolation level
}

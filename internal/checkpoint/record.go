package checkpoint

import (
	"encoding/binary"
	"errors"
	"fmt"
)

// The sync history kmirror keeps besides MM2's offset-syncs topic. MM2's
// records are keyed by partition, so compaction leaves one sync per
// partition and a group behind it can no longer be translated; they also
// carry no Prev, so continuity cannot be proven from them. kmirror writes
// every distance-change sync a second time, to its own history topic, keyed
// by partition and upstream offset (compaction keeps every point), with its
// Prev.
//
// Key:   topic STRING (int16 length + UTF-8), partition INT32, upstream INT64.
// Value: version INT16 (0), upstream INT64, downstream INT64, prev INT64.
// Big-endian, as Kafka's own encodings; readers ignore trailing bytes so
// later versions can add fields.

// HistoryKey is the history record key of a sync of topic-partition.
func HistoryKey(topic string, partition int32, p SyncPoint) []byte {
	b := make([]byte, 0, 2+len(topic)+4+8)
	b = binary.BigEndian.AppendUint16(b, uint16(len(topic)))
	b = append(b, topic...)
	b = binary.BigEndian.AppendUint32(b, uint32(partition))
	return binary.BigEndian.AppendUint64(b, uint64(p.Upstream))
}

// HistoryValue is the history record value of p.
func HistoryValue(p SyncPoint) []byte {
	b := make([]byte, 0, 26)
	b = binary.BigEndian.AppendUint16(b, 0)
	b = binary.BigEndian.AppendUint64(b, uint64(p.Upstream))
	b = binary.BigEndian.AppendUint64(b, uint64(p.Downstream))
	return binary.BigEndian.AppendUint64(b, uint64(p.Prev))
}

var errShort = errors.New("sync history record too short")

// DecodeHistory reads a history record.
func DecodeHistory(key, value []byte) (topic string, partition int32, p SyncPoint, err error) {
	if len(key) < 2 {
		return "", 0, p, errShort
	}
	n := int(binary.BigEndian.Uint16(key))
	if len(key) < 2+n+4+8 {
		return "", 0, p, errShort
	}
	topic = string(key[2 : 2+n])
	partition = int32(binary.BigEndian.Uint32(key[2+n:]))
	keyUp := int64(binary.BigEndian.Uint64(key[2+n+4:]))
	if len(value) < 26 {
		return "", 0, p, errShort
	}
	if v := binary.BigEndian.Uint16(value); v != 0 {
		return "", 0, p, fmt.Errorf("sync history record version %d: this kmirror reads version 0", v)
	}
	p = SyncPoint{Upstream: int64(binary.BigEndian.Uint64(value[2:])),
		Downstream: int64(binary.BigEndian.Uint64(value[10:])),
		Prev:       int64(binary.BigEndian.Uint64(value[18:]))}
	if p.Upstream != keyUp {
		return "", 0, p, fmt.Errorf("sync history record: key says upstream %d, value %d", keyUp, p.Upstream)
	}
	return topic, partition, p, nil
}

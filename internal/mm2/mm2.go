// Package mm2 encodes and decodes MirrorMaker 2's internal records
// (offset syncs, checkpoints, heartbeats) byte for byte, so tools written
// for MM2, such as RemoteClusterUtils.translateOffsets, read kmirror's
// output. The format is Kafka's protocol.types: big-endian integers,
// STRING = int16 length + UTF-8, fields in order, no framing.
//
// Decoders ignore trailing bytes, as Kafka's Struct readers do, and never panic
// on short or malformed input.
package mm2

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math"
)

// OffsetSync pairs an upstream offset of a source partition with the
// downstream offset the record got on the target.
type OffsetSync struct {
	Topic            string
	Partition        int32
	UpstreamOffset   int64
	DownstreamOffset int64
}

// Checkpoint is a consumer group's translated position.
type Checkpoint struct {
	Group            string `json:"group"`
	Topic            string `json:"topic"` // the target-side topic name
	Partition        int32  `json:"partition"`
	UpstreamOffset   int64  `json:"upstream_offset"`
	DownstreamOffset int64  `json:"downstream_offset"`
	Metadata         string `json:"metadata,omitempty"`
}

// Heartbeat says the flow source -> target is alive.
type Heartbeat struct {
	SourceAlias string
	TargetAlias string
	Timestamp   int64 // milliseconds since the epoch
}

// ErrShort is returned when a record is too short for its format.
var ErrShort = errors.New("mm2: record too short")

// Version written in Checkpoint and Heartbeat values.
const valueVersion = 0

type writer []byte

func (w writer) str(s string) writer {
	if len(s) > math.MaxInt16 {
		s = s[:math.MaxInt16]
	}
	w = binary.BigEndian.AppendUint16(w, uint16(len(s)))
	return append(w, s...)
}
func (w writer) i16(v int16) writer { return binary.BigEndian.AppendUint16(w, uint16(v)) }
func (w writer) i32(v int32) writer { return binary.BigEndian.AppendUint32(w, uint32(v)) }
func (w writer) i64(v int64) writer { return binary.BigEndian.AppendUint64(w, uint64(v)) }

type reader struct {
	b   []byte
	err error
}

func (r *reader) take(n int) []byte {
	if r.err != nil {
		return nil
	}
	if n < 0 || len(r.b) < n {
		r.err = ErrShort
		return nil
	}
	v := r.b[:n]
	r.b = r.b[n:]
	return v
}
func (r *reader) str() string {
	b := r.take(2)
	if b == nil {
		return ""
	}
	n := int16(binary.BigEndian.Uint16(b))
	if n < 0 { // a null STRING is not valid in these schemas
		r.err = fmt.Errorf("mm2: negative string length %d", n)
		return ""
	}
	return string(r.take(int(n)))
}
func (r *reader) i16() int16 {
	if b := r.take(2); b != nil {
		return int16(binary.BigEndian.Uint16(b))
	}
	return 0
}
func (r *reader) i32() int32 {
	if b := r.take(4); b != nil {
		return int32(binary.BigEndian.Uint32(b))
	}
	return 0
}
func (r *reader) i64() int64 {
	if b := r.take(8); b != nil {
		return int64(binary.BigEndian.Uint64(b))
	}
	return 0
}

// Key encodes the offset sync's key: topic STRING, partition INT32.
func (s OffsetSync) Key() []byte { return writer(nil).str(s.Topic).i32(s.Partition) }

// Value encodes upstreamOffset INT64, downstreamOffset INT64 (no version).
func (s OffsetSync) Value() []byte {
	return writer(make([]byte, 0, 16)).i64(s.UpstreamOffset).i64(s.DownstreamOffset)
}

// DecodeOffsetSync reads an offset-syncs record.
func DecodeOffsetSync(key, value []byte) (OffsetSync, error) {
	k, v := reader{b: key}, reader{b: value}
	s := OffsetSync{Topic: k.str(), Partition: k.i32(), UpstreamOffset: v.i64(), DownstreamOffset: v.i64()}
	return s, errors.Join(k.err, v.err)
}

// Key encodes group STRING, topic STRING, partition INT32.
func (c Checkpoint) Key() []byte { return writer(nil).str(c.Group).str(c.Topic).i32(c.Partition) }

// Value encodes version INT16, upstreamOffset INT64, downstreamOffset INT64,
// metadata STRING.
func (c Checkpoint) Value() []byte {
	return writer(nil).i16(valueVersion).i64(c.UpstreamOffset).i64(c.DownstreamOffset).str(c.Metadata)
}

// DecodeCheckpoint reads a checkpoints record.
func DecodeCheckpoint(key, value []byte) (Checkpoint, error) {
	k, v := reader{b: key}, reader{b: value}
	c := Checkpoint{Group: k.str(), Topic: k.str(), Partition: k.i32()}
	version := v.i16()
	c.UpstreamOffset, c.DownstreamOffset, c.Metadata = v.i64(), v.i64(), v.str()
	if err := errors.Join(k.err, v.err); err != nil {
		return c, err
	}
	if version < 0 {
		return c, fmt.Errorf("mm2: checkpoint version %d", version)
	}
	return c, nil
}

// Key encodes sourceAlias STRING, targetAlias STRING.
func (h Heartbeat) Key() []byte { return writer(nil).str(h.SourceAlias).str(h.TargetAlias) }

// Value encodes version INT16, timestamp INT64.
func (h Heartbeat) Value() []byte { return writer(nil).i16(valueVersion).i64(h.Timestamp) }

// DecodeHeartbeat reads a heartbeats record.
func DecodeHeartbeat(key, value []byte) (Heartbeat, error) {
	k, v := reader{b: key}, reader{b: value}
	h := Heartbeat{SourceAlias: k.str(), TargetAlias: k.str()}
	v.i16()
	h.Timestamp = v.i64()
	return h, errors.Join(k.err, v.err)
}

// Package e2e is end-to-end load and verification, for `kmirror demo`, the
// tests and the benchmarks: it writes self-describing records to a source
// topic (Produce), waits until a target topic holds as many (WaitFor), and
// proves the target is an exact, ordered copy of the source (Verify).
// Replication itself is internal/replicator's job.
//
// What "exact copy" means is docs/TASKS.md, Replication guarantees: every source record is on the target
// once, in the same partition and the same order, with the same key, value
// (null stays null), headers (order, duplicate keys and null values kept) and
// timestamp. The only allowed difference is an added kmirror.source header
// when the task adds one (VerifyOptions).
//
// Invariants of what Produce writes, which Verify relies on:
//   - every key is unique in the topic: "<partition>-<seq>", seq counting
//     from the partition's end offset when Produce started, so Verify can pair
//     source and target records without guessing;
//   - values are deterministic, carry their own position and end in a CRC
//     (CheckValue), so a corrupt value is detectable without the source;
//   - every tenth record is a tombstone (null value), a third carry a
//     duplicate header key, a null and an empty header value, and some carry
//     no header at all, so each case of docs/TASKS.md, Replication guarantees, is exercised;
//   - timestamps are distinct and an hour in the past, so a copy that
//     re-stamps records with the time it produced them is caught.
package e2e

import (
	"bytes"
	"errors"
	"fmt"
	"hash/crc32"
	"strconv"
	"time"

	"github.com/IBM/sarama"
)

// sourceHeaderKey is the header a task with "add source header" appends to
// every replicated record (docs/TASKS.md, Replication guarantees).
const sourceHeaderKey = "kmirror.source"

const (
	valuePrefix = "kmirror-demo "
	crcMarker   = " crc="
	crcLen      = len(crcMarker) + 8
	// maxValueSize keeps a record, with its headers and batch overhead, under
	// Kafka's default 1 MB message.max.bytes.
	maxValueSize = 900 << 10
)

// recordKey names the seq-th record Produce wrote to partition p.
func recordKey(p int32, seq int64) string {
	return strconv.FormatInt(int64(p), 10) + "-" + strconv.FormatInt(seq, 10)
}

// isTombstone says which records have a null value.
func isTombstone(seq int64) bool { return seq%10 == 9 }

// recordTimestamp spreads records one millisecond apart from base.
func recordTimestamp(base time.Time, seq int64) time.Time {
	return base.Add(time.Duration(seq) * time.Millisecond)
}

// recordHeaders returns the headers of the seq-th record of partition p. Every
// seventh record has none, every third has a duplicate key, a null value and
// an empty (not null) value: the cases a careless copy gets wrong.
func recordHeaders(p int32, seq int64) []sarama.RecordHeader {
	if seq%7 == 6 {
		return nil
	}
	hs := []sarama.RecordHeader{
		{Key: []byte("demo.position"), Value: []byte(recordKey(p, seq))},
	}
	if seq%3 == 0 {
		hs = append(hs,
			sarama.RecordHeader{Key: []byte("demo.dup"), Value: []byte("first")},
			sarama.RecordHeader{Key: []byte("demo.null"), Value: nil},
			sarama.RecordHeader{Key: []byte("demo.dup"), Value: []byte("second")},
			sarama.RecordHeader{Key: []byte("demo.empty"), Value: []byte{}},
		)
	}
	return hs
}

// recordValue builds the value of the seq-th record of partition p: a
// readable prefix, deterministic filler up to size bytes, and a CRC-32 of
// everything before it. It is nil for tombstones. Values never shrink below
// prefix and CRC, so a small size gives slightly larger values.
func recordValue(p int32, seq int64, size int) []byte {
	if isTombstone(seq) {
		return nil
	}
	head := valuePrefix + recordKey(p, seq) + " "
	n := max(size, len(head)+crcLen)
	v := make([]byte, n)
	copy(v, head)
	body := v[len(head) : n-crcLen]
	// xorshift filler: cheap, deterministic, and not trivially compressible,
	// so compression settings on the copy path see realistic bytes.
	x := uint64(p+1)<<32 ^ uint64(seq+1)*0x9E3779B97F4A7C15
	for i := range body {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		body[i] = 'a' + byte(x%26)
	}
	crc := crc32.ChecksumIEEE(v[:n-crcLen])
	copy(v[n-crcLen:], crcMarker)
	copy(v[n-8:], fmt.Sprintf("%08x", crc))
	return v
}

// CheckValue reports whether value is an intact Produce value for key: it
// names the same position and its CRC matches. A null value is valid for a
// tombstone position only. Tools that read only the target use it.
func CheckValue(key, value []byte) error {
	p, seq, err := parseKey(string(key))
	if err != nil {
		return err
	}
	if value == nil {
		if isTombstone(seq) {
			return nil
		}
		return fmt.Errorf("record %s: value is null, want a payload", key)
	}
	if isTombstone(seq) {
		return fmt.Errorf("record %s: value has %d bytes, want null (tombstone)", key, len(value))
	}
	head := valuePrefix + recordKey(p, seq) + " "
	if len(value) < len(head)+crcLen || !bytes.HasPrefix(value, []byte(head)) {
		return fmt.Errorf("record %s: value does not start with %q", key, head)
	}
	n := len(value)
	if string(value[n-crcLen:n-8]) != crcMarker {
		return fmt.Errorf("record %s: value has no CRC trailer", key)
	}
	want, err := strconv.ParseUint(string(value[n-8:]), 16, 32)
	if err != nil {
		return fmt.Errorf("record %s: value CRC %q is not hex", key, value[n-8:])
	}
	if got := crc32.ChecksumIEEE(value[:n-crcLen]); uint64(got) != want {
		return fmt.Errorf("record %s: value CRC %08x, trailer says %08x: the value was altered", key, got, want)
	}
	return nil
}

func parseKey(k string) (int32, int64, error) {
	i := bytes.IndexByte([]byte(k), '-')
	if i <= 0 {
		return 0, 0, fmt.Errorf("key %q is not <partition>-<seq>: not a demo record", k)
	}
	p, err1 := strconv.ParseInt(k[:i], 10, 32)
	seq, err2 := strconv.ParseInt(k[i+1:], 10, 64)
	if err := errors.Join(err1, err2); err != nil || p < 0 || seq < 0 {
		return 0, 0, fmt.Errorf("key %q is not <partition>-<seq>: not a demo record", k)
	}
	return int32(p), seq, nil
}

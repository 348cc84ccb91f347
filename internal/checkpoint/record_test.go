package checkpoint

import (
	"bytes"
	"testing"
)

func TestHistoryRecordGolden(t *testing.T) {
	p := SyncPoint{Upstream: 1000, Downstream: 990, Prev: ChainStart}
	key := HistoryKey("orders", 3, p)
	wantKey := []byte{0, 6, 'o', 'r', 'd', 'e', 'r', 's', 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0x03, 0xe8}
	if !bytes.Equal(key, wantKey) {
		t.Fatalf("key % x, want % x", key, wantKey)
	}
	wantValue := []byte{0, 0, 0, 0, 0, 0, 0, 0, 0x03, 0xe8, 0, 0, 0, 0, 0, 0, 0x03, 0xde,
		0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	if v := HistoryValue(p); !bytes.Equal(v, wantValue) {
		t.Fatalf("value % x, want % x", v, wantValue)
	}
	topic, part, got, err := DecodeHistory(key, append(HistoryValue(p), 9, 9)) // trailing bytes ignored
	if err != nil || topic != "orders" || part != 3 || got != p {
		t.Fatalf("decoded %q %d %+v %v", topic, part, got, err)
	}
}

func FuzzHistoryRecord(f *testing.F) {
	f.Add("orders", int32(3), int64(1000), int64(990), int64(-1), []byte{})
	f.Fuzz(func(t *testing.T, topic string, partition int32, up, down, prev int64, junk []byte) {
		if len(topic) > 0xffff {
			return
		}
		p := SyncPoint{up, down, prev}
		gotTopic, gotPart, got, err := DecodeHistory(HistoryKey(topic, partition, p), HistoryValue(p))
		if err != nil || gotTopic != topic || gotPart != partition || got != p {
			t.Fatalf("round trip: %q %d %+v %v", gotTopic, gotPart, got, err)
		}
		_, _, _, _ = DecodeHistory(junk, junk) // never panics
	})
}

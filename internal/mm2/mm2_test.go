package mm2

import (
	"bytes"
	"encoding/hex"
	"testing"
)

func unhex(t *testing.T, s string) []byte {
	t.Helper()
	b, err := hex.DecodeString(s)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// The golden example: orders-3, upstream 1000 -> downstream 990.
func TestOffsetSyncGolden(t *testing.T) {
	s := OffsetSync{Topic: "orders", Partition: 3, UpstreamOffset: 1000, DownstreamOffset: 990}
	wantKey := unhex(t, "00066f7264657273"+"00000003")
	wantValue := unhex(t, "00000000000003e8"+"00000000000003de")
	if !bytes.Equal(s.Key(), wantKey) {
		t.Errorf("key = %x, want %x", s.Key(), wantKey)
	}
	if !bytes.Equal(s.Value(), wantValue) {
		t.Errorf("value = %x, want %x", s.Value(), wantValue)
	}
	got, err := DecodeOffsetSync(wantKey, append(wantValue, 0xff)) // trailing bytes ignored
	if err != nil || got != s {
		t.Fatalf("decode = %+v, %v", got, err)
	}
}

func TestCheckpointGolden(t *testing.T) {
	c := Checkpoint{Group: "g1", Topic: "A.orders", Partition: 2, UpstreamOffset: 5, DownstreamOffset: 4, Metadata: ""}
	wantKey := unhex(t, "00026731"+"0008412e6f7264657273"+"00000002")
	wantValue := unhex(t, "0000"+"0000000000000005"+"0000000000000004"+"0000")
	if !bytes.Equal(c.Key(), wantKey) || !bytes.Equal(c.Value(), wantValue) {
		t.Fatalf("key %x value %x", c.Key(), c.Value())
	}
	got, err := DecodeCheckpoint(wantKey, wantValue)
	if err != nil || got != c {
		t.Fatalf("decode = %+v, %v", got, err)
	}
}

func TestHeartbeatGolden(t *testing.T) {
	h := Heartbeat{SourceAlias: "A", TargetAlias: "B", Timestamp: 1}
	wantKey := unhex(t, "000141"+"000142")
	wantValue := unhex(t, "0000"+"0000000000000001")
	if !bytes.Equal(h.Key(), wantKey) || !bytes.Equal(h.Value(), wantValue) {
		t.Fatalf("key %x value %x", h.Key(), h.Value())
	}
	got, err := DecodeHeartbeat(wantKey, wantValue)
	if err != nil || got != h {
		t.Fatalf("decode = %+v, %v", got, err)
	}
}

func TestShortInput(t *testing.T) {
	if _, err := DecodeOffsetSync([]byte{0, 6, 'o'}, nil); err == nil {
		t.Error("short offset sync decoded")
	}
	if _, err := DecodeCheckpoint(nil, nil); err == nil {
		t.Error("empty checkpoint decoded")
	}
	if _, err := DecodeCheckpoint([]byte{0xff, 0xff}, nil); err == nil {
		t.Error("negative string length decoded")
	}
}

func FuzzOffsetSync(f *testing.F) {
	f.Add([]byte("\x00\x06orders\x00\x00\x00\x03"), []byte("\x00\x00\x00\x00\x00\x00\x03\xe8\x00\x00\x00\x00\x00\x00\x03\xde"))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		s, err := DecodeOffsetSync(key, value)
		if err != nil {
			return
		}
		// What decodes re-encodes to a prefix of the input (trailing bytes are ignored).
		if !bytes.HasPrefix(key, s.Key()) || !bytes.HasPrefix(value, s.Value()) {
			t.Fatalf("round trip: %+v from %x/%x", s, key, value)
		}
	})
}

func FuzzCheckpoint(f *testing.F) {
	c := Checkpoint{Group: "g", Topic: "t", Partition: 1, UpstreamOffset: 2, DownstreamOffset: 3, Metadata: "m"}
	f.Add(c.Key(), c.Value())
	f.Fuzz(func(t *testing.T, key, value []byte) {
		got, err := DecodeCheckpoint(key, value)
		if err != nil {
			return
		}
		if !bytes.HasPrefix(key, got.Key()) {
			t.Fatalf("key round trip: %+v from %x", got, key)
		}
		again, err := DecodeCheckpoint(got.Key(), got.Value())
		if err != nil || again != got {
			t.Fatalf("re-decode: %+v, %v", again, err)
		}
	})
}

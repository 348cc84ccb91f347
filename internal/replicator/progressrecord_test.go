package replicator

import (
	"testing"

	"github.com/IBM/sarama"
)

// consumed is what a reader gets back for a record that was produced.
func consumed(t testing.TB, m *sarama.ProducerMessage) *sarama.ConsumerMessage {
	t.Helper()
	k, err := m.Key.Encode()
	if err != nil {
		t.Fatal(err)
	}
	v, err := m.Value.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return &sarama.ConsumerMessage{Key: k, Value: v}
}

func TestProgressRecordsReadBack(t *testing.T) {
	key := progressKey{"orders", "A->B", "t", 3}
	val := progressValue{Next: 42, Down: 40, TopicID: "abc"}
	k, v, ok := decodeProgress(consumed(t, progressRecord("p", key, val)))
	if !ok || v == nil || k != key || *v != val {
		t.Fatalf("read back %+v %+v %v, want %+v %+v", k, v, ok, key, val)
	}
	cases := []struct {
		name    string
		m       *sarama.ConsumerMessage
		ok, val bool
	}{
		{"tombstone", &sarama.ConsumerMessage{Key: []byte(`{"task":"t","flow":"f","topic":"x","partition":0}`)}, true, false},
		{"unreadable value", &sarama.ConsumerMessage{Key: []byte(`{"task":"t"}`), Value: []byte("{")}, true, false},
		{"not a progress key", &sarama.ConsumerMessage{Key: []byte("x"), Value: []byte(`{"next":1}`)}, false, false},
	}
	for _, c := range cases {
		if _, v, ok := decodeProgress(c.m); ok != c.ok || (v != nil) != c.val {
			t.Errorf("%s: ok %v value %v, want ok %v value %v", c.name, ok, v != nil, c.ok, c.val)
		}
	}
}

// Whatever a progress topic holds, reading it never panics, and what reads
// as progress is written back as the same record.
func FuzzProgressRecord(f *testing.F) {
	f.Add([]byte(`{"task":"t","flow":"A->B","topic":"x","partition":1}`), []byte(`{"next":5,"down":-1}`))
	f.Add([]byte(`{"task":"t","flow":"f","topic":"","partition":-1}`), []byte(`{"next":-1,"down":-1,"started":1}`))
	f.Add([]byte("x"), []byte(nil))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		k, v, ok := decodeProgress(&sarama.ConsumerMessage{Key: key, Value: value})
		if !ok || v == nil {
			return
		}
		k2, v2, ok2 := decodeProgress(consumed(t, progressRecord("p", k, *v)))
		if !ok2 || v2 == nil || k2 != k || *v2 != *v {
			t.Fatalf("%+v %+v written back reads %+v %+v", k, *v, k2, v2)
		}
	})
}

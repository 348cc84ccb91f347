package connect

import "testing"

func TestOffsetsTopicRecords(t *testing.T) {
	name, part, ok := offsetKey([]byte(`["MirrorSourceConnector",{"cluster":"east","partition":2,"topic":"orders"}]`))
	if !ok || name != "MirrorSourceConnector" {
		t.Fatalf("key: %q %s %v", name, part, ok)
	}
	o, err := offsetRecord(part, []byte(`{"offset":41}`))
	if err != nil {
		t.Fatal(err)
	}
	pos, err := o.MirrorSource()
	if err != nil || pos.Cluster != "east" || pos.Topic != "orders" || pos.Partition != 2 || pos.Offset != 41 {
		t.Fatalf("position %+v, %v", pos, err)
	}
	for _, bad := range []string{`x`, `["only-name"]`, `[1,{}]`, `{"a":1}`} {
		if _, _, ok := offsetKey([]byte(bad)); ok {
			t.Errorf("key %s read as a connector's", bad)
		}
	}
}

func FuzzOffsetsTopicKey(f *testing.F) {
	f.Add([]byte(`["MirrorSourceConnector",{"cluster":"east","partition":2,"topic":"orders"}]`), []byte(`{"offset":41}`))
	f.Fuzz(func(t *testing.T, key, value []byte) {
		_, part, ok := offsetKey(key)
		if !ok {
			return
		}
		if o, err := offsetRecord(part, value); err == nil {
			_, _ = o.MirrorSource() // must not panic
		}
	})
}

package connect

import (
	"bytes"
	"encoding/json"
)

// OffsetsTopicRecord reads one record of a Connect offsets topic, as Connect
// keeps them: key ["<connector>", {partition}], value {offset} or a
// tombstone (nil value: the offset is gone). ok is false for a record that
// is no source offset.
func OffsetsTopicRecord(key, value []byte) (connector string, o Offset, tombstone, ok bool) {
	name, part, ok := offsetKey(key)
	if !ok {
		return "", Offset{}, false, false
	}
	tombstone = value == nil
	if tombstone {
		value = []byte("null") // no offset: the partition alone
	}
	o, err := offsetRecord(part, value)
	return name, o, tombstone, err == nil
}

// offsetKey splits a Connect offsets-topic key into the connector's name
// and the source partition's JSON.
func offsetKey(b []byte) (string, json.RawMessage, bool) {
	var key []json.RawMessage
	if json.Unmarshal(b, &key) != nil || len(key) != 2 {
		return "", nil, false
	}
	var name string
	if json.Unmarshal(key[0], &name) != nil {
		return "", nil, false
	}
	return name, key[1], true
}

func offsetRecord(part json.RawMessage, value []byte) (Offset, error) {
	var o Offset
	dec := json.NewDecoder(bytes.NewReader(part))
	dec.UseNumber()
	if err := dec.Decode(&o.Partition); err != nil {
		return o, err
	}
	dec = json.NewDecoder(bytes.NewReader(value))
	dec.UseNumber()
	return o, dec.Decode(&o.Offset)
}

package service

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/kmirror/kmirror/internal/connect"
	"github.com/kmirror/kmirror/internal/connectplan"
	"github.com/kmirror/kmirror/internal/task"
)

// The MM2 source connector's offsets (last copied) become the flow's next
// offsets; another alias's are left out, another shape is an error.
func TestMM2Progress(t *testing.T) {
	f := connectplan.MM2Flow{SourceAlias: "A", TargetAlias: "B", Source: "mm2"}
	var offs connect.Offsets
	if err := json.Unmarshal([]byte(`{"offsets":[
		{"partition":{"cluster":"A","topic":"orders","partition":1},"offset":{"offset":41}},
		{"partition":{"cluster":"old","topic":"orders","partition":0},"offset":{"offset":7}},
		{"partition":{"cluster":"A","topic":"pay.v1","partition":0},"offset":{"offset":0}}]}`), &offs); err != nil {
		t.Fatal(err)
	}
	got, err := mm2Progress(f, offs)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][]task.Position{"A->B": {{Topic: "orders", Partition: 1, Next: 42}, {Topic: "pay.v1", Partition: 0, Next: 1}}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("progress %v, want %v", got, want)
	}
	bad := connect.Offsets{Offsets: []connect.Offset{{Partition: map[string]any{"kafka_topic": "x"}, Offset: map[string]any{}}}}
	if _, err := mm2Progress(f, bad); err == nil {
		t.Error("a sink connector's offsets read as MM2's")
	}
}

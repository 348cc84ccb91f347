package service

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/kmirror/kmirror/internal/connect"
	"github.com/kmirror/kmirror/internal/connect/connectplan"
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

// Adopting with bidirectional takes the flow's reverse too: its connectors
// are the ones replaced, the task copies both ways; without a reverse it
// is a problem on "bidirectional".
func TestCandidateBidirectional(t *testing.T) {
	src := func(from, to, fromServers, toServers string) connect.ConnectorView {
		return connect.ConnectorView{Info: connect.ConnectorInfo{Config: map[string]string{
			"connector.class": connect.MirrorSourceConnector, "source.cluster.alias": from, "target.cluster.alias": to,
			"source.cluster.bootstrap.servers": fromServers, "target.cluster.bootstrap.servers": toServers, "topics": "orders"}}}
	}
	views := map[string]connect.ConnectorView{
		"ab": src("A", "B", "e1:9092", "w1:9092"),
		"ba": src("B", "A", "w1:9092", "e1:9092"),
		"cd": src("C", "D", "e1:9092", "w1:9092"),
		"ab-hb": {Info: connect.ConnectorInfo{Config: map[string]string{"connector.class": connect.MirrorHeartbeatConnector,
			"source.cluster.alias": "A", "target.cluster.alias": "B"}}},
	}
	regs := []connectplan.Registered{{Name: "east", BootstrapServers: []string{"e1:9092"}}, {Name: "west", BootstrapServers: []string{"w1:9092"}}}
	flows := connectplan.GroupMM2(configsOf(views))
	byName := map[string]connectplan.MM2Flow{}
	for _, f := range flows {
		byName[f.Source] = f
	}
	req := AdoptRequest{Name: "t1", Current: "east", Engine: "embedded", Bidirectional: true}
	c := candidate(byName["ab"], flows, views, regs, req)
	if len(c.Problems) != 0 || c.Task.Rules.Direction != task.DirectionBidirectional || c.Reverse != "ba" ||
		!reflect.DeepEqual(c.Connectors, []string{"ab", "ab-hb", "ba"}) {
		t.Errorf("pair: %+v", c)
	}
	if one := candidate(byName["ab"], flows, views, regs, AdoptRequest{Name: "t1", Current: "east"}); one.Task.Rules.Direction != task.DirectionPush ||
		!reflect.DeepEqual(one.Connectors, []string{"ab", "ab-hb"}) || one.Reverse != "ba" {
		t.Errorf("one way, its reverse listed: %+v", one)
	}
	if c := candidate(byName["cd"], flows, views, regs, req); len(c.Problems.For("bidirectional")) != 1 {
		t.Errorf("no reverse: %+v", c.Problems)
	}
}

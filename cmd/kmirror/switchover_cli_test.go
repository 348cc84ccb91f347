package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/switchover"
)

// task switchover and failback over the demo: what the task does not meet
// is refused with the reason (the demo task does not sync consumer offsets
// and has had no switchover), in the exit status too; --show says there is
// none yet. The happy path runs on real Kafka (internal/apitest).
func TestSwitchoverCommandRefusals(t *testing.T) {
	base, _ := serveDemo(t)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"task", "switchover", "demo-orders", "--group", "g1"}, "does not sync consumer offsets"},
		{[]string{"task", "switchover", "demo-orders", "--group", "g1", "--all-groups"}, "not both"},
		{[]string{"task", "switchover", "demo-orders", "--show"}, "has had no switchover"},
		{[]string{"task", "switchover", "demo-orders"}, "groups is required"},
		{[]string{"task", "failback", "demo-orders"}, "has had no switchover"},
		{[]string{"task", "switchover", "nope", "--group", "g1"}, "nope"},
	} {
		out, err := cli(t, base, tc.args...)
		if err == nil || !strings.Contains(out+err.Error(), tc.want) {
			t.Errorf("%v: error %v, want one saying %q\n%s", tc.args, err, tc.want, out)
		}
	}
}

// The table shows the steps, the way back and the report.
func TestSwitchoverTable(t *testing.T) {
	sw := switchover.New("t1", switchover.Request{Mode: switchover.Planned, Direction: "A->B", Groups: switchover.Groups{Names: []string{"g1"}}}, "alice", time.Unix(0, 0))
	sw.ID, sw.State = 7, switchover.Done
	sw.Failback = &switchover.Failback{State: switchover.FailbackPrepared}
	sw.Report.Groups = []switchover.GroupReport{{Group: "g1", Partitions: []switchover.PartitionReport{
		{Topic: "t", Partition: 0, TargetTopic: "t", SourceOffset: 10, TargetOffset: 12, Exact: true},
		{Topic: "t", Partition: 1, TargetTopic: "t", SourceOffset: 5, TargetOffset: 5, MayReadAgain: -1}}, Notes: []string{"a note"}}}
	raw, _ := json.Marshal(sw)
	var b bytes.Buffer
	if err := switchoverTable(&b, raw); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"switchover 7 of t1 (planned, A->B): DONE", "way back: prepared", "preflight\tpending",
		"g1\tt\t0\t10\tt\t12\ttrue\t0\t0", "g1\tt\t1\t5\tt\t5\tfalse\tunbounded\t0", "note: g1: a note"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

package task

import (
	"slices"
	"testing"

	"github.com/kmirror/kmirror/internal/policy"
)

func TestFlowsAndInternalTopics(t *testing.T) {
	base := Task{Name: "t1", Current: Current{Cluster: "east", Alias: "A"}, Peer: Peer{Alias: "B"}}
	cases := []struct {
		direction Direction
		sync      bool
		flows     []string
		groups    []string
		topics    []InternalTopic
	}{
		{DirectionPush, false, []string{"A->B"}, []string{"kmirror.t1.A-B"}, []InternalTopic{
			{SideCurrent, "mm2-offset-syncs.B.internal"}, {SideCurrent, "kmirror-offset-syncs.B.internal"}, {SidePeer, "kmirror-progress.A.internal"}, {SidePeer, "heartbeats"}}},
		{DirectionPull, true, []string{"B->A"}, []string{"kmirror.t1.B-A"}, []InternalTopic{
			{SideCurrent, "mm2-offset-syncs.B.internal"}, {SideCurrent, "kmirror-offset-syncs.B.internal"}, {SideCurrent, "kmirror-progress.B.internal"},
			{SideCurrent, "B.checkpoints.internal"}, {SideCurrent, "heartbeats"}}},
		// The peer -> current half keeps its offset syncs on the peer: the
		// topic must be listed (it once was not).
		{DirectionBidirectional, true, []string{"A->B", "B->A"}, []string{"kmirror.t1.A-B", "kmirror.t1.B-A"}, []InternalTopic{
			{SideCurrent, "mm2-offset-syncs.B.internal"}, {SideCurrent, "kmirror-offset-syncs.B.internal"}, {SidePeer, "kmirror-progress.A.internal"}, {SidePeer, "A.checkpoints.internal"}, {SidePeer, "heartbeats"},
			{SidePeer, "mm2-offset-syncs.A.internal"}, {SidePeer, "kmirror-offset-syncs.A.internal"}, {SideCurrent, "kmirror-progress.B.internal"}, {SideCurrent, "B.checkpoints.internal"},
			{SideCurrent, "heartbeats"}}},
		{"sideways", true, nil, nil, nil},
	}
	for _, tc := range cases {
		t.Run(string(tc.direction), func(t *testing.T) {
			tk := base
			tk.Rules = Rules{Direction: tc.direction, SyncConsumerOffsets: tc.sync}
			var names, groups []string
			for _, f := range tk.Flows() {
				names = append(names, f.Name())
				groups = append(groups, f.Group)
			}
			if !slices.Equal(names, tc.flows) || !slices.Equal(groups, tc.groups) {
				t.Fatalf("flows %v groups %v, want %v %v", names, groups, tc.flows, tc.groups)
			}
			if got := tk.InternalTopics(); !slices.Equal(got, tc.topics) {
				t.Fatalf("internal topics\n got %v\nwant %v", got, tc.topics)
			}
		})
	}
}

// On Connect the internal topics are MirrorMaker 2's, not kmirror's.
func TestInternalTopicsOnConnect(t *testing.T) {
	tk := Task{Name: "t", Engine: ConnectEngine("wc"), Current: Current{Alias: "A"}, Peer: Peer{Alias: "B"},
		Rules: Rules{Direction: DirectionPush}}
	got := tk.InternalTopics()
	if len(got) != 1 || got[0] != (InternalTopic{SidePeer, policy.HeartbeatsTopic}) {
		t.Fatalf("without offset sync: %v, want the heartbeats on the target only", got)
	}
	tk.Rules.SyncConsumerOffsets = true
	got = tk.InternalTopics()
	want := []InternalTopic{{SideCurrent, "mm2-offset-syncs.B.internal"}, {SidePeer, "A.checkpoints.internal"}, {SidePeer, policy.HeartbeatsTopic}}
	if len(got) != len(want) {
		t.Fatalf("with offset sync: %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("with offset sync: %v, want %v", got, want)
		}
	}
}

// A push task's way back is the peer -> current half it would have were it
// bidirectional: its internal topics and group are none of the forward
// flow's. Other directions have none.
func TestFailbackFlow(t *testing.T) {
	tk := Task{Name: "t1", Current: Current{Cluster: "east", Alias: "A"}, Peer: Peer{Alias: "B"}, Rules: Rules{Direction: DirectionPush}}
	back, ok := tk.FailbackFlow()
	fwd := tk.Flows()[0]
	if !ok || back.Name() != "B->A" || back.Source != SidePeer || back.Target != SideCurrent {
		t.Fatalf("failback flow %+v, %v", back, ok)
	}
	for _, pair := range [][2]string{{back.Group, fwd.Group}, {back.ProgressTopic, fwd.ProgressTopic}, {back.OffsetSyncsTopic + string(back.OffsetSyncs), fwd.OffsetSyncsTopic + string(fwd.OffsetSyncs)},
		{back.SyncHistoryTopic + string(back.OffsetSyncs), fwd.SyncHistoryTopic + string(fwd.OffsetSyncs)}, {back.CheckpointsTopic, fwd.CheckpointsTopic}} {
		if pair[0] == pair[1] {
			t.Errorf("the way back shares %s with the forward flow", pair[0])
		}
	}
	for _, d := range []Direction{DirectionPull, DirectionBidirectional} {
		tk.Rules.Direction = d
		if _, ok := tk.FailbackFlow(); ok {
			t.Errorf("a %s task has a failback flow", d)
		}
	}
}

// Offset syncs where a rule puts them (MirrorMaker 2's
// offset-syncs.topic.location), named after the other side's alias as MM2
// names them; left out, kmirror's layout.
func TestOffsetSyncsAt(t *testing.T) {
	for _, c := range []struct {
		direction Direction
		at        string
		side      Side
		topic     string
	}{
		{DirectionPull, "", SideCurrent, "mm2-offset-syncs.B.internal"},
		{DirectionPull, OffsetSyncsAtSource, SidePeer, "mm2-offset-syncs.A.internal"},
		{DirectionPull, OffsetSyncsAtTarget, SideCurrent, "mm2-offset-syncs.B.internal"},
		{DirectionPush, "", SideCurrent, "mm2-offset-syncs.B.internal"},
		{DirectionPush, OffsetSyncsAtSource, SideCurrent, "mm2-offset-syncs.B.internal"},
		{DirectionPush, OffsetSyncsAtTarget, SidePeer, "mm2-offset-syncs.A.internal"},
	} {
		tk := Task{Name: "t1", Current: Current{Alias: "A"}, Peer: Peer{Alias: "B"}, Rules: Rules{Direction: c.direction, OffsetSyncsAt: c.at}}
		f := tk.Flows()[0]
		if f.OffsetSyncs != c.side || f.OffsetSyncsTopic != c.topic || f.SyncHistoryTopic != "kmirror-offset-syncs"+c.topic[len("mm2-offset-syncs"):] {
			t.Errorf("%s at %q: %s %s %s, want %s %s", c.direction, c.at, f.OffsetSyncs, f.OffsetSyncsTopic, f.SyncHistoryTopic, c.side, c.topic)
		}
	}
}

// A partition key splits back into what made it (topic names may hold
// dots, never a slash) and renames by a topic map.
func TestPartitionKey(t *testing.T) {
	key := PartitionKey("A.orders.v1", 12)
	if topic, p, err := SplitPartitionKey(key); key != "A.orders.v1/12" || topic != "A.orders.v1" || p != 12 || err != nil {
		t.Fatalf("%q -> %q %d %v", key, topic, p, err)
	}
	for _, bad := range []string{"orders", "orders/x", "orders/99999999999"} {
		if _, _, err := SplitPartitionKey(bad); err == nil {
			t.Errorf("%q split without an error", bad)
		}
	}
	names := map[string]string{"orders": "A.orders"}
	if got := RenamedKey("orders/3", names); got != "A.orders/3" {
		t.Errorf("renamed: %q", got)
	}
	if got := RenamedKey("pay/0", names); got != "pay/0" {
		t.Errorf("unmapped: %q", got)
	}
}

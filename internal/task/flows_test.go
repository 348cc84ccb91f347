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

package replicator

import (
	"context"
	"fmt"
	"testing"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/checkpoint"
	"github.com/kmirror/kmirror/internal/mm2"
	"github.com/kmirror/kmirror/internal/task"
)

func TestNewerCheckpointNeverMovesTheTargetBack(t *testing.T) {
	last := mm2.Checkpoint{Group: "g", Topic: "t", UpstreamOffset: 100, DownstreamOffset: 90}
	cases := []struct {
		name     string
		up, down int64
		want     bool
	}{
		{"downstream forward", 120, 110, true},
		{"same", 100, 90, false},
		{"group forward, translation behind the last", 120, 85, false},
		{"group forward, translation equal", 120, 90, false},
		{"source group rewound", 50, 40, true},
	}
	for _, tc := range cases {
		cp := last
		cp.UpstreamOffset, cp.DownstreamOffset = tc.up, tc.down
		if got := newerCheckpoint(last, cp); got != tc.want {
			t.Errorf("%s: newerCheckpoint = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// A restarted flow reads the checkpoints written before it: a translation
// behind the last checkpoint (here: one written by an earlier run that knew
// more) is neither written nor committed.
func TestCheckpointsAreReadBackAndNeverGoBackwards(t *testing.T) {
	a, b := startFakes(t)
	createTopic(t, a, "orders", 1)
	produceKeys(t, a, "orders", 1, 0, 20)
	const group = "readers"
	_, srcAdmin := admin(t, a)
	if _, err := srcAdmin.AlterConsumerGroupOffsets(group, map[string]map[int32]sarama.OffsetAndMetadata{
		"orders": {0: {Offset: 5, LeaderEpoch: -1}}}, nil); err != nil {
		t.Fatal(err)
	}
	earlier := mm2.Checkpoint{Group: group, Topic: "orders", Partition: 0, UpstreamOffset: 5, DownstreamOffset: 15}
	createTopic(t, b, task.CheckpointsTopic("A"), 1)
	produce(t, b, &sarama.ProducerMessage{Topic: task.CheckpointsTopic("A"), Partition: 0,
		Key: sarama.ByteEncoder(earlier.Key()), Value: sarama.ByteEncoder(earlier.Value())})

	f := pushFlow(t, a, b, task.Rules{Direction: task.DirectionPush, Topics: []string{"orders"}, Tasks: 1,
		ReplicationFactor: 1, StartOffset: task.StartEarliest, SyncConsumerOffsets: true})
	r := runFlow(t, f)
	var res []GroupResult
	waitFor(t, func() error {
		var err error
		res, err = r.SyncGroup(context.Background(), group)
		if err != nil || len(res) != 1 || len(res[0].Checkpoints) != 1 {
			return fmt.Errorf("sync: %+v, %v", res, err)
		}
		return nil
	})
	if got := res[0].Checkpoints[0]; got != earlier {
		t.Fatalf("checkpoint %+v, want the earlier %+v to stand (translation now gives 5)", got, earlier)
	}
	if n := targetTotal(t, b, task.CheckpointsTopic("A"), 1); n != 1 {
		t.Fatalf("%d checkpoint records, want only the earlier one: a checkpoint behind it was written", n)
	}
}

// A drill's second switchover: a group on A that stopped inside what the
// way back wrote there (copies of B's records, an exactly-once commit
// marker last) goes on at B's record it had not read, through the way
// back's syncs; the push flow's own distance, unchanged across the stretch
// it skipped, would put it into B's own records. On the way back, a group
// in B's records an earlier round copied back translates by that round's
// own syncs.
func TestGroupsInsideAWayHomeTranslateThroughItsSyncs(t *testing.T) {
	// The push flow copied A's 100..199 to B's 0..99 (distance -100) and
	// committed with a marker at B's 100. Round 1's way back copied B's
	// 101..105 (written there by producers) to A's 200..204, its commit
	// marker at 205; B's end was 106 and A's 206 when everyone went home.
	// The push flow then copied A's 206 on to B's 106 on: distance -100
	// again (A's marker and B's cancel), so no sync marks the stretch.
	rp := task.ReturnPoint{From: 200, To: 206, PeerFrom: 101, PeerTo: 106}
	wayBack := checkpoint.NewHistory(0)
	wayBack.Add(checkpoint.SyncPoint{Upstream: 101, Downstream: 200, Prev: checkpoint.ChainStart})
	// Round 2's way back resumed at B's 160 (B's 106..159: the push
	// flow's copies, skipped) and wrote at A's 300.
	wayBack.Add(checkpoint.SyncPoint{Upstream: 160, Downstream: 300, Prev: 101})

	push := &partState{exactlyOnce: true, returns: []task.ReturnPoint{rp}, returned: wayBack, hist: checkpoint.NewHistory(0)}
	push.hist.Add(checkpoint.SyncPoint{Upstream: 100, Downstream: 0, Prev: checkpoint.ChainStart})
	push.txnCommitted = storedProgress{offset: 300, down: 200} // committed up to A's 299
	back := &partState{exactlyOnce: true, returns: []task.ReturnPoint{rp}, back: checkpoint.NewHistory(0), hist: wayBack}
	cases := []struct {
		name      string
		ps        *partState
		g, want   int64
		inStretch bool
	}{
		{"push: the stretch's first record", push, 200, 101, true},
		{"push: inside the stretch", push, 203, 104, true},
		// The push flow's distance says 105: B's last own record, read
		// again.
		{"push: on the commit marker after the last copy", push, 205, 106, true},
		// Gone home there: PeerTo, whatever the push flow copied since.
		{"push: at the stretch's end", push, 206, 106, true},
		{"push: past the stretch, its own syncs", push, 207, 107, false},
		{"push: before the stretch", push, 150, 50, false},
		{"way back: B's records round 1 copied", back, 104, 203, true},
		{"way back: at round 1's end", back, 106, 0, false},
	}
	for _, tc := range cases {
		tr, ok, in := tc.ps.translateReturned(tc.g)
		if in != tc.inStretch {
			t.Errorf("%s: in the stretch %v, want %v", tc.name, in, tc.inStretch)
			continue
		}
		if !in {
			if tc.ps == push {
				tr, _, ok = tc.ps.explainAt(tc.g)
				if !ok || tr.Downstream != tc.want {
					t.Errorf("%s: own syncs translate to %d (%v), want %d", tc.name, tr.Downstream, ok, tc.want)
				}
			}
			continue
		}
		if !ok || tr.Downstream != tc.want || !tr.Exact {
			t.Errorf("%s: %+v (ok %v), want %d exactly", tc.name, tr, ok, tc.want)
		}
	}
	// Nothing copied since home: the push flow's own translation of A's
	// 206 would be B's 101 (its progress); the way back's says 106.
	idle := &partState{exactlyOnce: true, returns: []task.ReturnPoint{rp}, returned: wayBack, hist: push.hist}
	idle.txnCommitted = storedProgress{offset: 206, down: 101}
	if tr, _, ok := idle.explainAt(206); !ok || tr.Downstream != 106 || !tr.Exact {
		t.Errorf("at the stretch's end, nothing copied since: %+v (ok %v), want 106 exactly", tr, ok)
	}
	// No syncs of the way back known: not translated, never guessed.
	lost := &partState{returns: []task.ReturnPoint{rp}, returned: checkpoint.NewHistory(0), hist: push.hist}
	if _, ok, in := lost.translateReturned(203); !in || ok {
		t.Errorf("without the way back's syncs: in %v ok %v, want in and not translated", in, ok)
	}
}

package replicator

import (
	"context"
	"fmt"
	"testing"

	"github.com/IBM/sarama"

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

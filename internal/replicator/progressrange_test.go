package replicator

import (
	"errors"
	"strings"
	"testing"
)

func TestOpenProgressOutcome(t *testing.T) {
	key := func(p int32) progressKey { return progressKey{"t", "A->B", "orders", p} }
	// Committed records on the target, by partition and offset.
	committed := map[int32]map[int64]bool{0: {99: true, 49: true}, 1: {199: true}, 7: {9: true}}
	target := func(source string) string { return "A." + source }
	for _, c := range []struct {
		name   string
		open   map[progressKey]progressValue
		down   map[progressKey]int64
		commit bool
		says   string
	}{
		{"every moved partition committed", map[progressKey]progressValue{key(0): {Next: 10, Down: 100}, key(1): {Next: 20, Down: 200}},
			map[progressKey]int64{key(0): 50, key(1): 150}, true, "the 2 target partitions"},
		{"one moved partition aborted", map[progressKey]progressValue{key(0): {Next: 10, Down: 100}, key(1): {Next: 20, Down: 210}},
			map[progressKey]int64{key(0): 50, key(1): 150}, false, "1 hold its records committed, 1 aborted"},
		{"an unmoved partition says nothing", map[progressKey]progressValue{key(0): {Next: 10, Down: 50}, key(1): {Next: 20, Down: 210}},
			map[progressKey]int64{key(0): 50, key(1): 150}, false, "0 hold its records committed, 1 aborted"},
		{"nothing moved: aborted", map[progressKey]progressValue{key(0): {Next: 10, Down: 50}},
			map[progressKey]int64{key(0): 50}, false, "0 hold"},
		{"no committed progress before: the partition moved", map[progressKey]progressValue{key(0): {Next: 10, Down: 100}},
			nil, true, "the 1 target partitions"},
		{"a partition no longer this worker's is asked too", map[progressKey]progressValue{key(0): {Next: 10, Down: 100}, key(7): {Down: 10}},
			map[progressKey]int64{key(0): 50}, true, "the 2 target partitions"},
		{"another flow's key cannot tell", map[progressKey]progressValue{key(0): {Next: 10, Down: 100},
			{"t", "B->A", "orders", 0}: {Down: 7}}, map[progressKey]int64{key(0): 50}, false, "1 hold its records committed, 1 aborted or cannot tell"},
		{"an unknown target position is not asked", map[progressKey]progressValue{key(0): {Next: 10, Down: -1}}, nil, false, "0 hold"},
	} {
		t.Run(c.name, func(t *testing.T) {
			commit, says, err := openProgressOutcome(c.open, c.down, "t", "A->B", target, func(topic string, part int32, off int64) (bool, error) {
				if topic != "A.orders" {
					t.Errorf("asked %s, not the target topic", topic)
				}
				return committed[part][off], nil
			})
			if err != nil || commit != c.commit || !strings.Contains(says, c.says) {
				t.Errorf("got %v %q %v, want %v and %q", commit, says, err, c.commit, c.says)
			}
		})
	}
	t.Run("an error asking is returned, not taken for aborted", func(t *testing.T) {
		failed := errors.New("leader moved")
		_, _, err := openProgressOutcome(map[progressKey]progressValue{key(0): {Down: 100}}, nil, "t", "A->B", target,
			func(string, int32, int64) (bool, error) { return false, failed })
		if !errors.Is(err, failed) {
			t.Errorf("got %v", err)
		}
	})
}

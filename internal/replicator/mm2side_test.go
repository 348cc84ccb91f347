package replicator

import (
	"testing"

	"github.com/kmirror/kmirror/internal/mm2"
	"github.com/kmirror/kmirror/internal/task"
)

// A way back on Kafka Connect translates a group inside what the forward
// copy wrote through the forward flow's MM2 offset syncs inverted: never
// past where the group stands (it read every copy before d), with how far
// it may be behind bounded by the next sync or the switchover's point.
func TestBackThroughForwardSyncs(t *testing.T) {
	// A's offsets 10, 120, 230 were copied to B's 0, 100, 200 (A had
	// transaction markers B does not); the switchover drained A at 300, B
	// at 270.
	syncs := []mm2.OffsetSync{
		{UpstreamOffset: 10, DownstreamOffset: 0},
		{UpstreamOffset: 120, DownstreamOffset: 100},
		{UpstreamOffset: 230, DownstreamOffset: 200},
	}
	pt := task.SwitchPoint{SourceEnd: 300, TargetEnd: 270}
	for _, c := range []struct {
		name          string
		syncs         []mm2.OffsetSync
		d             int64
		offset, again int64
		ok            bool
	}{
		{"at the point: the source's end then", syncs, 270, 300, 0, true},
		{"on a sync: its record is next", syncs, 100, 120, 0, true},
		{"past a sync: the record after it, behind at most to the next", syncs, 150, 121, 230 - 121, true},
		{"past the last sync: bounded by the point", syncs, 250, 231, 300 - 231, true},
		{"the first record", syncs, 0, 10, 0, true},
		// A re-copy (at least once): B's 100 and 140 both hold A's 120; a
		// group at 145 read the second copy.
		{"a re-copy: the earlier record", append(syncs[:2:2], mm2.OffsetSync{UpstreamOffset: 120, DownstreamOffset: 140}, syncs[2]), 145, 121, 230 - 121, true},
		// Compacted: only the newest sync is left, past d.
		{"no sync at or before d", syncs[2:], 150, 0, 0, false},
		{"no sync at all", nil, 150, 0, 0, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			offset, again, ok := backThroughForwardSyncs(c.syncs, c.d, pt)
			if offset != c.offset || again != c.again || ok != c.ok {
				t.Fatalf("d %d: (%d, %d, %v), want (%d, %d, %v)", c.d, offset, again, ok, c.offset, c.again, c.ok)
			}
		})
	}
}

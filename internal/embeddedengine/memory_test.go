package embeddedengine

import "testing"

// The soft memory limit at the partition counts it was measured at: a
// small task's limit is well under the budget plus the old flat 224 MiB
// (which let the collector's headroom make a 6-partition task's peak RSS),
// while a thousand partitions keep about the 416 MiB and ten thousand the
// 849 MiB their runs were measured with.
func TestMemoryLimitAtTheMeasuredWidths(t *testing.T) {
	const mib = 1 << 20
	// What a 256 MiB budget commits (replicator.Budget.Committed, tested
	// there): 8 MiB a partition up to the budget, 64 KiB a partition past it.
	cases := []struct {
		partitions, committed int64 // committed in MiB
		lo, hi                int64 // MiB
	}{
		{0, 0, 96, 96},
		{12, 96, 190, 200},    // the bench's 1 KiB and 100 B task: 6 partitions loaded, 6 for latency
		{1000, 256, 410, 420}, // measured at 416
		{10000, 625, 849, 849},
	}
	for _, c := range cases {
		got := memoryLimit(c.committed*mib, c.partitions)
		if got < c.lo*mib || got > c.hi*mib {
			t.Errorf("%d partitions: limit %.1f MiB, want %d-%d", c.partitions, float64(got)/mib, c.lo, c.hi)
		}
	}
}

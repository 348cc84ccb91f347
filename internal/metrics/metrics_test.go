package metrics_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kmirror/kmirror/internal/engine"
	"github.com/kmirror/kmirror/internal/metrics"
	"github.com/kmirror/kmirror/internal/task"
)

type fakeSource map[string]engine.TaskStatus

func (f fakeSource) Names() []string {
	var out []string
	for n := range f {
		out = append(out, n)
	}
	return out
}

func (f fakeSource) Status(name string) (engine.TaskStatus, bool) {
	s, ok := f[name]
	return s, ok
}

func TestCollectorReportsEachFlow(t *testing.T) {
	src := fakeSource{"orders-dr": {Name: "orders-dr", State: task.StateFailed, Flows: []engine.FlowStatus{
		{Flow: "A->B", State: task.StateRunning, Records: 42, Bytes: 4200, LagRecords: 7, LagSeconds: 1.5, Restarts: 2, Recopied: 3},
		{Flow: "B->A", State: task.StateFailed, Partitions: []engine.PartitionStatus{
			{Topic: "orders", Partition: 0, Failed: true, Lag: 5}, {Topic: "orders", Partition: 1, Lag: 0}}},
	}}}
	want := `
# HELP kmirror_replicated_records_total Records copied to the target and acknowledged, since this process started.
# TYPE kmirror_replicated_records_total counter
kmirror_replicated_records_total{flow="A->B",task="orders-dr"} 42
kmirror_replicated_records_total{flow="B->A",task="orders-dr"} 0
# HELP kmirror_flow_failed 1 when the flow has failed (see the task's status for the reason), else 0.
# TYPE kmirror_flow_failed gauge
kmirror_flow_failed{flow="A->B",task="orders-dr"} 0
kmirror_flow_failed{flow="B->A",task="orders-dr"} 1
# HELP kmirror_lag_records Records on the source not yet copied: the sum over partitions of end offset minus next offset to copy.
# TYPE kmirror_lag_records gauge
kmirror_lag_records{flow="A->B",task="orders-dr"} 7
kmirror_lag_records{flow="B->A",task="orders-dr"} 0
# HELP kmirror_failed_partitions Partitions stopped for good until the task restarts (a record the target refuses, for one).
# TYPE kmirror_failed_partitions gauge
kmirror_failed_partitions{flow="A->B",task="orders-dr"} 0
kmirror_failed_partitions{flow="B->A",task="orders-dr"} 1
# HELP kmirror_recopied_records_total Records copied again after a restart from older progress: the duplicates this caused on the target, since this process started.
# TYPE kmirror_recopied_records_total counter
kmirror_recopied_records_total{flow="A->B",task="orders-dr"} 3
kmirror_recopied_records_total{flow="B->A",task="orders-dr"} 0
# HELP kmirror_partition_lag_records Records on a source partition not yet copied: its end offset minus the next offset to copy.
# TYPE kmirror_partition_lag_records gauge
kmirror_partition_lag_records{flow="B->A",partition="0",task="orders-dr",topic="orders"} 5
kmirror_partition_lag_records{flow="B->A",partition="1",task="orders-dr",topic="orders"} 0
`
	c := metrics.NewCollector(src)
	if err := testutil.CollectAndCompare(c, strings.NewReader(want),
		"kmirror_replicated_records_total", "kmirror_flow_failed", "kmirror_lag_records", "kmirror_failed_partitions",
		"kmirror_recopied_records_total", "kmirror_partition_lag_records"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(c); n != 34 {
		t.Fatalf("%d series, want 16 metrics x 2 flows + 2 partitions", n)
	}
	if err := testutil.CollectAndCompare(metrics.NewCollector(fakeSource{}), strings.NewReader("")); err != nil {
		t.Fatal(err)
	}
}

func TestCollectorReportsCheckpoints(t *testing.T) {
	for _, tc := range []struct {
		name       string
		ckpt       *engine.CheckpointStatus
		wantSeries int
		groups     int
		failed     int
	}{
		{name: "sync off", ckpt: nil},
		{name: "not run yet", ckpt: &engine.CheckpointStatus{}},
		{name: "synced", ckpt: &engine.CheckpointStatus{LastRun: time.Now().Add(-90 * time.Second), Groups: []string{"g1", "g2"}}, wantSeries: 1, groups: 2},
		{name: "failed", ckpt: &engine.CheckpointStatus{LastRun: time.Now(), LastError: "list groups: broker down"}, wantSeries: 1, failed: 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			src := fakeSource{"t": {Name: "t", Flows: []engine.FlowStatus{{Flow: "A->B", State: task.StateRunning, Checkpoints: tc.ckpt}}}}
			c := metrics.NewCollector(src)
			for _, name := range []string{"kmirror_checkpoint_age_seconds", "kmirror_checkpoint_groups", "kmirror_checkpoint_sync_failed"} {
				if n := testutil.CollectAndCount(c, name); n != tc.wantSeries {
					t.Fatalf("%d %s series, want %d", n, name, tc.wantSeries)
				}
			}
			if tc.wantSeries == 0 {
				return
			}
			want := fmt.Sprintf(`# HELP kmirror_checkpoint_groups Consumer groups translated in the last consumer-offset sync.
# TYPE kmirror_checkpoint_groups gauge
kmirror_checkpoint_groups{flow="A->B",task="t"} %d
# HELP kmirror_checkpoint_sync_failed 1 when the last consumer-offset sync failed (see the task's status for the error), else 0.
# TYPE kmirror_checkpoint_sync_failed gauge
kmirror_checkpoint_sync_failed{flow="A->B",task="t"} %d
`, tc.groups, tc.failed)
			if err := testutil.CollectAndCompare(c, strings.NewReader(want), "kmirror_checkpoint_groups", "kmirror_checkpoint_sync_failed"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

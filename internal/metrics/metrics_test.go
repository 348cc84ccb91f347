package metrics_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/kmirror/kmirror/internal/engine"
	"github.com/kmirror/kmirror/internal/metrics"
	"github.com/kmirror/kmirror/internal/replicator"
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
	src := fakeSource{"orders-dr": {Name: "orders-dr", State: engine.StateFailed, Flows: []replicator.FlowStatus{
		{Flow: "A->B", State: replicator.StateRunning, Records: 42, Bytes: 4200, LagRecords: 7, LagSeconds: 1.5, Restarts: 2},
		{Flow: "B->A", State: replicator.StateFailed, Partitions: []replicator.PartitionStatus{{Failed: true}, {}}},
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
`
	c := metrics.NewCollector(src)
	if err := testutil.CollectAndCompare(c, strings.NewReader(want),
		"kmirror_replicated_records_total", "kmirror_flow_failed", "kmirror_lag_records", "kmirror_failed_partitions"); err != nil {
		t.Fatal(err)
	}
	if n := testutil.CollectAndCount(c); n != 18 {
		t.Fatalf("%d series, want 9 metrics x 2 flows", n)
	}
	if err := testutil.CollectAndCompare(metrics.NewCollector(fakeSource{}), strings.NewReader("")); err != nil {
		t.Fatal(err)
	}
}

func TestCollectorReportsCheckpointAge(t *testing.T) {
	src := fakeSource{"t": {Name: "t", Flows: []replicator.FlowStatus{{Flow: "A->B", State: replicator.StateRunning,
		Checkpoints: &replicator.CheckpointStatus{LastRun: time.Now().Add(-90 * time.Second), Groups: []string{"g1", "g2"}}}}}}
	c := metrics.NewCollector(src)
	if n := testutil.CollectAndCount(c, "kmirror_checkpoint_age_seconds"); n != 1 {
		t.Fatalf("%d checkpoint age series", n)
	}
	want := "# HELP kmirror_checkpoint_groups Consumer groups translated in the last consumer-offset sync.\n# TYPE kmirror_checkpoint_groups gauge\nkmirror_checkpoint_groups{flow=\"A->B\",task=\"t\"} 2\n"
	if err := testutil.CollectAndCompare(c, strings.NewReader(want), "kmirror_checkpoint_groups"); err != nil {
		t.Fatal(err)
	}
}

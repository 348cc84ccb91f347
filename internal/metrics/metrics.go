// Package metrics exposes to Prometheus what the tasks of both engines
// are doing. The Collector reads the engines' status snapshots at scrape
// time, so the copy loop pays nothing for metrics: its counters are the
// atomics it keeps for the console anyway.
//
// Metric names are stable (dashboards and alerts rely on them, and
// docs/METRICS.md describes each); every series carries the labels task and
// flow ("<source alias>-><target alias>"), per-partition ones topic and
// partition too.
package metrics

import (
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/kmirror/kmirror/internal/engine"
	"github.com/kmirror/kmirror/internal/task"
)

// Source is what the Collector reads; *embeddedengine.Engine is one.
type Source = engine.Source

var (
	labels     = []string{"task", "flow"}
	partLabels = []string{"task", "flow", "topic", "partition"}
)

func desc(name, help string) *prometheus.Desc {
	return prometheus.NewDesc(name, help, labels, nil)
}

// The metrics, by their stable names.
var (
	recordsDesc    = desc("kmirror_replicated_records_total", "Records copied to the target and acknowledged, since this process started.")
	bytesDesc      = desc("kmirror_replicated_bytes_total", "Bytes of record keys and values copied to the target, since this process started.")
	skippedDesc    = desc("kmirror_skipped_loop_records_total", "Records not copied because their kmirror.source header names the target: they came from there.")
	lagRecordsDesc = desc("kmirror_lag_records", "Records on the source not yet copied: the sum over partitions of end offset minus next offset to copy.")
	lagSecondsDesc = desc("kmirror_lag_seconds", "Age of the oldest record not yet copied, from its timestamp.")
	restartsDesc   = desc("kmirror_flow_restarts_total", "Recoveries of the flow after errors, since this process started.")
	upDesc         = desc("kmirror_flow_up", "1 when the flow is running, else 0.")
	failedDesc     = desc("kmirror_flow_failed", "1 when the flow has failed (see the task's status for the reason), else 0.")
	credentialDesc = desc("kmirror_flow_credential_error", "1 when the flow failed on a certificate, SASL credentials or missing rights (see the task's status), else 0.")
	degradedDesc   = desc("kmirror_flow_degraded", "1 when the flow copies but part of its progress is held back (see the task's status for what and why), else 0.")
	driftedDesc    = desc("kmirror_flow_drifted", "1 when the flow copies with a connector configuration changed on Kafka Connect outside kmirror (the task's status names the settings; re-apply the task), else 0.")
	failedPartDesc = desc("kmirror_failed_partitions", "Partitions stopped for good until the task restarts (a record the target refuses, for one).")
	ckptAgeDesc    = desc("kmirror_checkpoint_age_seconds", "Seconds since consumer-group offsets were last translated and synced (flows with sync consumer offsets on).")
	ckptGroupsDesc = desc("kmirror_checkpoint_groups", "Consumer groups translated in the last consumer-offset sync.")
	ckptFailDesc   = desc("kmirror_checkpoint_sync_failed", "1 when the last consumer-offset sync failed (see the task's status for the error), else 0.")
	expiredDesc    = desc("kmirror_source_expired_records_total", "Records the source deleted (retention) before they could be copied, since this process started.")
	targetLostDesc = desc("kmirror_target_lost_records_total", "Records the target acknowledged and later lost (unclean leader election, a crashed broker without replicas), since this process started.")
	replacedDesc   = desc("kmirror_target_topics_replaced_total", "Target topics found deleted or created again under the copy (each copied again from the source; its loss is in kmirror_target_lost_records_total), since this process started.")
	recopiedDesc   = desc("kmirror_recopied_records_total", "Records copied again after a restart from older progress: the duplicates this caused on the target, since this process started.")
	partLagDesc    = prometheus.NewDesc("kmirror_partition_lag_records", "Records on a source partition not yet copied: its end offset minus the next offset to copy.", partLabels, nil)
)

// Collector is a prometheus.Collector over a Source.
type Collector struct {
	src Source
}

// NewCollector returns a Collector reading src at every scrape.
func NewCollector(src Source) *Collector { return &Collector{src: src} }

// Describe implements prometheus.Collector.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{recordsDesc, bytesDesc, skippedDesc, lagRecordsDesc, lagSecondsDesc, restartsDesc, upDesc, failedDesc, credentialDesc, degradedDesc, driftedDesc, failedPartDesc, ckptAgeDesc, ckptGroupsDesc, ckptFailDesc, recopiedDesc, expiredDesc, targetLostDesc, replacedDesc, partLagDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	for _, name := range c.src.Names() {
		st, ok := c.src.Status(name)
		if !ok {
			continue
		}
		for _, f := range st.Flows {
			collectFlow(ch, name, f)
		}
	}
}

func collectFlow(ch chan<- prometheus.Metric, taskName string, f engine.FlowStatus) {
	l := []string{taskName, f.Flow}
	counter := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, l...)
	}
	gauge := func(d *prometheus.Desc, v float64) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, l...)
	}
	counter(recordsDesc, float64(f.Records))
	counter(bytesDesc, float64(f.Bytes))
	counter(skippedDesc, float64(f.SkippedLoops))
	counter(restartsDesc, float64(f.Restarts))
	counter(recopiedDesc, float64(f.Recopied))
	counter(expiredDesc, float64(f.ExpiredOnSource))
	counter(targetLostDesc, float64(f.LostOnTarget))
	counter(replacedDesc, float64(f.TargetTopicsReplaced))
	gauge(lagRecordsDesc, float64(f.LagRecords))
	gauge(lagSecondsDesc, f.LagSeconds)
	gauge(upDesc, b2f(f.State == task.StateRunning))
	gauge(failedDesc, b2f(f.State == task.StateFailed))
	gauge(degradedDesc, b2f(f.State == task.StateDegraded))
	gauge(driftedDesc, b2f(f.State == task.StateDrifted))
	gauge(credentialDesc, b2f(f.State == task.StateFailed && f.ErrorKind != ""))
	failed := 0
	for _, p := range f.Partitions {
		if p.Failed {
			failed++
		}
		// Source topic: the label users know, and unique within a flow.
		ch <- prometheus.MustNewConstMetric(partLagDesc, prometheus.GaugeValue, float64(p.Lag),
			taskName, f.Flow, p.Topic, strconv.Itoa(int(p.Partition)))
	}
	gauge(failedPartDesc, float64(failed))
	if c := f.Checkpoints; c != nil && !c.LastRun.IsZero() {
		gauge(ckptAgeDesc, time.Since(c.LastRun).Seconds())
		gauge(ckptGroupsDesc, float64(len(c.Groups)))
		gauge(ckptFailDesc, b2f(c.LastError != ""))
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// Registry returns a registry with the Collector, the Go runtime and
// process collectors and more (e.g. a CertCollector), ready for
// promhttp.HandlerFor.
func Registry(src Source, more ...prometheus.Collector) *prometheus.Registry {
	r := prometheus.NewRegistry()
	r.MustRegister(NewCollector(src), collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	r.MustRegister(more...)
	return r
}

package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/kafkatest"
)

// scenario is one source topic shape: record size and count.
type scenario struct {
	key     string // short, used in topic names
	name    string // shown in the report
	size    int    // value bytes per record
	records int
	// topics and partitions shape a wide scenario (many topics, wide.go);
	// zero for the 6-partition ones (-partitions).
	topics, partitions int
	rep                int // the repeat being measured (-repeats), 1 for the first
}

func (s scenario) wide() bool { return s.topics > 0 }

// id names what one repeat of a copier on the scenario creates (its task,
// MM2's alias and internal topics, its latency topic): each repeat copies
// afresh, as the first does, rather than resume from the one before (MM2
// resumed at the source's end and copied nothing).
func (s scenario) id() string {
	if s.rep > 1 {
		return fmt.Sprintf("%s-r%d", s.key, s.rep)
	}
	return s.key
}

// partitionsOf is how many partitions each source topic of sc has.
func (h *harness) partitionsOf(sc scenario) int {
	if sc.wide() {
		return sc.partitions
	}
	return h.cfg.partitions
}

func (s scenario) topic() string { return "bench-" + s.key }

// scenarios are the ones the run was asked for, in a fixed order.
func (h *harness) scenarios() []scenario {
	var out []scenario
	for _, sc := range []scenario{
		{key: "1k", name: "1 KiB", size: 1024, records: h.cfg.records1K},
		{key: "100b", name: "100 B", size: 100, records: h.cfg.records100},
		{key: "1000p", name: wideName(h.cfg), size: 1024, records: h.cfg.recordsWide, topics: h.cfg.wideTopics, partitions: h.cfg.widePartitions},
	} {
		if h.cfg.scenarios[sc.key] {
			out = append(out, sc)
		}
	}
	return out
}

// result is one row of the report: one copier (or perf tool) in one
// scenario. NaN marks a value that was not measured.
type result struct {
	Scenario   string
	Copier     string
	Repeat     int     // 1..-repeats
	Records    int64   // records timed
	Seconds    float64 // first to last record on the target
	RecPerSec  float64
	MBPerSec   float64   // value bytes, 10^6
	CPUPerGB   float64   // CPU seconds per 10^9 value bytes
	PeakRSSMB  float64   // VmHWM, MiB
	P50, P99   float64   // end-to-end latency, ms
	P999, Max  float64   // its 99.9th percentile and its largest, ms
	P99Series  []float64 // p99 of the records sent in each second of the timed window, ms
	LatSteal   float64   // share of the machine's CPU time the hypervisor took (steal) over the timed window, %; NaN when unknown
	LatRecords int       // records the latency phase timed
	LatMissing int       // of those, never seen on the target in time
	StartAll   float64   // wide scenarios: kmirror start to a record on every target partition, s
	Load       string    // load averages (1, 5, 15 min) when the copier started
	Note       string
	Err        string
}

func newResult(sc scenario, copier string) result {
	nan := math.NaN()
	return result{Scenario: sc.name, Copier: copier, Seconds: nan, RecPerSec: nan, MBPerSec: nan,
		CPUPerGB: nan, PeakRSSMB: nan, P50: nan, P99: nan, P999: nan, Max: nan, StartAll: nan, LatSteal: nan}
}

// harness owns the clusters and every child of a run.
type harness struct {
	cfg   config
	out   io.Writer
	jars  kafkatest.Jars
	java  string
	self  string
	work  string
	began time.Time
	// revision is the source commit measured, read at start.
	revision  string
	loadStart string // load averages at start

	src, dst         *kafkatest.Cluster
	srcBoot, dstBoot string
	srcClient        sarama.Client // end offsets and topics on the source
	dstClient        sarama.Client // end offsets on the target
	srcAdmin         sarama.ClusterAdmin
	dstAdmin         sarama.ClusterAdmin

	children procs
	connect  *connectRow // the mm2-connect row's workers, during its scenario
	failed   bool        // keep the work directory for reading the logs
}

func newHarness(ctx context.Context, cfg config, out io.Writer) (_ *harness, err error) {
	h := &harness{cfg: cfg, out: out, began: time.Now(), revision: sourceRevision(), loadStart: loadAvg()}
	defer func() {
		if err != nil {
			h.failed = true
			h.close()
		}
	}()
	if h.self, err = os.Executable(); err != nil {
		return nil, fmt.Errorf("find this executable to re-run it as a copier: %w", err)
	}
	if h.java, err = exec.LookPath("java"); err != nil {
		return nil, fmt.Errorf("java is not installed: install OpenJDK 17 or newer: %w", err)
	}
	if h.jars, err = kafkatest.EnsureJars(ctx); err != nil {
		return nil, err
	}
	if h.work, err = os.MkdirTemp("", "kmirror-bench-"); err != nil {
		return nil, err
	}
	h.logf("work directory %s (child logs, MM2 config)", h.work)
	if cfg.profile {
		if err := os.MkdirAll(cfg.out, 0o755); err != nil {
			return nil, err
		}
	}

	// Both clusters at once: the JVMs start in about 10 s each. Brokers
	// run at production's speed, except in a smoke run (-quick), whose
	// figures mean nothing and which runs in CI beside other tests.
	var wg sync.WaitGroup
	var serr, derr error
	// A deleted topic's files (and their descriptors) go a second after
	// the delete rather than Kafka's minute: the wide scenario deletes
	// one copier's 10,000 target partitions before the next copier makes
	// its own, and two sets at once pass the machine's 20,000 open files
	// (the target broker failed with "Too many open files").
	opts := []kafkatest.Opt{kafkatest.HeapMB(1024), kafkatest.Brokers(cfg.brokers),
		kafkatest.BrokerProps(map[string]string{"log.segment.delete.delay.ms": "1000"})}
	if cfg.brokers >= 3 {
		opts = append(opts, kafkatest.MinInsyncReplicas(2))
	}
	if !cfg.quick {
		opts = append(opts, kafkatest.FullSpeed())
	}
	wg.Go(func() {
		h.src, serr = kafkatest.Start(ctx, append([]kafkatest.Opt{kafkatest.Name("bench-source")}, opts...)...)
	})
	wg.Go(func() {
		h.dst, derr = kafkatest.Start(ctx, append([]kafkatest.Opt{kafkatest.Name("bench-target")}, opts...)...)
	})
	wg.Wait()
	if err := errors.Join(serr, derr); err != nil {
		return nil, err
	}
	// One seed each: every client finds the other brokers from it.
	h.srcBoot, h.dstBoot = h.src.BootstrapServers(cluster.Plaintext)[0], h.dst.BootstrapServers(cluster.Plaintext)[0]
	if h.srcClient, err = newClient(h.srcBoot); err != nil {
		return nil, err
	}
	if h.dstClient, err = newClient(h.dstBoot); err != nil {
		return nil, err
	}
	if h.srcAdmin, err = h.src.Admin(); err != nil {
		return nil, err
	}
	if h.dstAdmin, err = h.dst.Admin(); err != nil {
		return nil, err
	}
	h.logf("clusters up: source %s, target %s (Kafka %s, broker files under %s)", h.srcBoot, h.dstBoot, h.jars.Version, filepath.Dir(h.dst.Dir()))
	return h, nil
}

func newClient(boot string) (sarama.Client, error) {
	cfg, err := cluster.Settings{BootstrapServers: []string{boot}, SecurityProtocol: cluster.Plaintext}.Config("bench-harness")
	if err != nil {
		return nil, err
	}
	c, err := sarama.NewClient([]string{boot}, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", boot, err)
	}
	return c, nil
}

// close stops every child and both brokers and deletes their files. Safe
// after a partial newHarness.
func (h *harness) close() {
	h.children.stopAll()
	if h.connect != nil {
		h.connect.close()
		h.connect = nil
	}
	for _, c := range []sarama.Client{h.srcClient, h.dstClient} {
		if c != nil {
			_ = c.Close()
		}
	}
	for _, c := range []*kafkatest.Cluster{h.src, h.dst} {
		if c == nil {
			continue
		}
		if err := c.Stop(); err != nil {
			slog.Warn("broker did not stop cleanly", "cluster", c.Name(), "error", err)
		}
		if !h.failed && !h.cfg.keep {
			_ = c.Remove()
		} else {
			h.logf("kept broker files of %s in %s", c.Name(), c.Dir())
		}
	}
	if h.work != "" {
		if h.failed || h.cfg.keep {
			h.logf("kept the work directory %s", h.work)
		} else {
			_ = os.RemoveAll(h.work)
		}
	}
}

func (h *harness) logf(format string, args ...any) {
	fmt.Fprintf(h.out, "[%6.1fs] %s\n", time.Since(h.began).Seconds(), fmt.Sprintf(format, args...))
}

// runAll measures every scenario; a copier that fails leaves its row with
// the error and the run goes on.
func (h *harness) runAll(ctx context.Context) ([]result, error) {
	var results []result
	for _, sc := range h.scenarios() {
		rs, err := h.runScenario(ctx, sc)
		results = append(results, rs...)
		if err != nil {
			h.failed = true
			return results, fmt.Errorf("scenario %s: %w", sc.name, err)
		}
	}
	return results, nil
}

func (h *harness) runScenario(ctx context.Context, sc scenario) ([]result, error) {
	if sc.wide() {
		return h.runWide(ctx, sc)
	}
	h.logf("scenario %s: %d records of %d B on %d partitions", sc.name, sc.records, sc.size, h.cfg.partitions)
	if err := h.createTopic(h.srcAdmin, sc.topic(), h.cfg.partitions); err != nil {
		return nil, err
	}
	defer func() { _ = h.srcAdmin.DeleteTopic(sc.topic()) }()

	// ProducerPerformance is the load as well as the produce limit.
	avg := loadAvg()
	load := h.producerPerf(ctx, sc)
	load.Load = avg
	results := []result{load}
	if load.Err != "" {
		return results, errors.New(load.Err)
	}
	if n, err := endOffsets(h.srcClient, sc.topic()); err != nil || n != int64(sc.records) {
		return results, fmt.Errorf("source topic %s holds %d records after the load, want %d (%v)", sc.topic(), n, sc.records, err)
	}
	for rep := 1; rep <= h.cfg.repeats; rep++ {
		rs, err := h.runCopiers(ctx, sc, rep)
		results = append(results, rs...)
		if err != nil {
			return results, err
		}
	}
	return results, nil
}

// runCopiers measures each copier of the run once on sc's loaded topic
// (repeat rep of -repeats).
func (h *harness) runCopiers(ctx context.Context, sc scenario, rep int) ([]result, error) {
	sc.rep = rep
	var results []result
	for _, c := range h.copiers() {
		if h.cfg.only != nil && !h.cfg.only[c.key] && !strings.HasPrefix(c.key, "mm2-try-") {
			continue
		}
		if err := ctx.Err(); err != nil {
			return results, err
		}
		if c.key == keyMM2Connect {
			// Its workers run only while it is measured: they would load
			// the machine during the other rows.
			row, err := h.startConnect(ctx, sc)
			if err != nil {
				r := newResult(sc, c.key)
				r.Err = err.Error()
				h.failed = true
				h.logf("  %-17s FAILED: %s", c.key, r.Err)
				results = append(results, r)
				continue
			}
			h.connect = row
		}
		h.settle()
		load := loadAvg()
		var r result
		if c.key == keyConsumerPerf {
			r = h.consumerPerf(ctx, sc)
		} else {
			r = h.measure(ctx, sc, c)
		}
		r.Load, r.Repeat = load, rep
		if r.Err != "" {
			h.failed = true
			h.logf("  %-17s FAILED: %s", c.key, r.Err)
		} else {
			h.logf("  %-17s %9.0f rec/s %7.1f MB/s  cpu %6.1f s/GB  rss %6.0f MiB  p50 %6.1f ms  p99 %6.1f ms",
				c.key, r.RecPerSec, r.MBPerSec, r.CPUPerGB, r.PeakRSSMB, r.P50, r.P99)
		}
		results = append(results, r)
		if h.connect != nil {
			h.connect.close()
			h.connect = nil
		}
	}
	return results, nil
}

// settle gives every copier the same start: the files of the last copier's
// deleted topics gone (file.delete.delay.ms is 1 s in kafkatest) and every
// dirty page written back, so no copier is timed while the disk writes back
// data of an earlier one (or of the load).
func (h *harness) settle() {
	time.Sleep(2 * time.Second)
	syscall.Sync()
}

// measure runs one copier on a scenario: throughput over the preloaded
// source topic, then latency at a fixed rate on the caught-up copier.
func (h *harness) measure(ctx context.Context, sc scenario, c copier) result {
	res := newResult(sc, c.key)
	fail := func(err error) result {
		res.Err = err.Error()
		return res
	}
	latSrc := fmt.Sprintf("lat-%s-%s", sc.id(), c.key)
	if err := h.createTopic(h.srcAdmin, latSrc, h.cfg.partitions); err != nil {
		return fail(err)
	}
	bulkDst, latDst := c.target(sc, sc.topic()), c.target(sc, latSrc)
	defer func() {
		_ = h.srcAdmin.DeleteTopic(latSrc)
		_ = h.dstAdmin.DeleteTopic(bulkDst)
		_ = h.dstAdmin.DeleteTopic(latDst)
	}()
	if c.precreate {
		for _, t := range []string{bulkDst, latDst} {
			if err := h.createTopic(h.dstAdmin, t, h.cfg.partitions); err != nil {
				return fail(err)
			}
		}
	}
	// The copier runs over both topics; once it has copied the preloaded
	// one it is caught up and the latency records meet no backlog. A copier
	// timed over a partial copy (-window) still has one, so a fresh run over
	// the latency topic alone replaces it.
	p, err := c.start(h, sc, []string{sc.topic(), latSrc}, "throughput")
	if err != nil {
		return fail(err)
	}
	defer func() { p.stop(20 * time.Second) }()
	capped, err := h.throughput(ctx, p, sc, bulkDst, &res)
	if err != nil {
		return fail(err)
	}
	if capped {
		p.stop(20 * time.Second)
		if p, err = c.start(h, sc, []string{latSrc}, "latency"); err != nil {
			return fail(err)
		}
	}
	if err := h.latency(ctx, p, sc, latSrc, latDst, &res); err != nil {
		return fail(err)
	}
	return res
}

// throughput polls the target's end offsets until it holds every record,
// timing and charging CPU from the first poll that saw records to the last;
// capped says it stopped timing after -window with records still to copy.
func (h *harness) throughput(ctx context.Context, p copyRun, sc scenario, topic string, res *result) (capped bool, err error) {
	const every = 100 * time.Millisecond
	want := int64(sc.records)
	deadline := time.Now().Add(h.cfg.copyTimeout)
	var (
		started      bool
		tPrev, t0    time.Time // last poll that saw nothing, first that saw records
		n0           int64
		cpu0         float64
		lastReport   = time.Now()
		failingSince time.Time
	)
	tPrev = time.Now()
	for {
		if p.done() {
			return false, p.failure()
		}
		n, err := endOffsets(h.dstClient, topic)
		now := time.Now()
		if err != nil {
			// A topic the copier just created can answer NOT_LEADER
			// until our metadata catches up: refresh and poll again.
			if failingSince.IsZero() {
				failingSince = now
			}
			if now.Sub(failingSince) > 10*time.Second {
				return false, fmt.Errorf("end offsets of %s on the target: %w", topic, err)
			}
			_ = h.dstClient.RefreshMetadata(topic)
			time.Sleep(every)
			continue
		}
		failingSince = time.Time{}
		if !started && n > 0 {
			started, t0, n0 = true, now, n
			if cpu0, err = p.cpu(); err != nil {
				return false, err
			}
		}
		if !started {
			tPrev = now
		}
		capped := started && now.Sub(t0) >= h.cfg.window && n > n0 && n < want
		if n >= want || capped {
			cpu1, err := p.cpu()
			if err != nil {
				return false, err
			}
			rss, err := p.rss()
			if err != nil {
				return false, err
			}
			// Records counted from the first poll that saw some; when the
			// copy finished within one poll, from the last poll that saw none.
			recs, secs := float64(min(n, want)-n0), now.Sub(t0).Seconds()
			if recs <= 0 || secs <= 0 {
				recs, secs = float64(want), now.Sub(tPrev).Seconds()
			}
			if capped {
				res.Note = fmt.Sprintf("timed over the first %s: %d of %d copied", h.cfg.window, n, want)
			}
			gb := recs * float64(sc.size) / 1e9
			res.Records, res.Seconds = int64(recs), secs
			res.RecPerSec = recs / secs
			res.MBPerSec = res.RecPerSec * float64(sc.size) / 1e6
			res.CPUPerGB = (cpu1 - cpu0) / gb
			res.PeakRSSMB = float64(rss) / (1 << 20)
			switch {
			case n > want && exactlyOnceRow(res.Copier):
				// Its duplicates would be aborted, never read committed.
				res.Note = joinNote(res.Note, fmt.Sprintf("%d offsets past the records: transaction markers", n-want))
			case n > want:
				res.Note = joinNote(res.Note, fmt.Sprintf("%d duplicates", n-want))
			}
			return capped, nil
		}
		if !started && now.After(deadline) {
			return false, fmt.Errorf("target %s holds no record %s after the copier started (-copy-timeout)", topic, h.cfg.copyTimeout)
		}
		if time.Since(lastReport) > 10*time.Second {
			lastReport = time.Now()
			h.logf("    %s: %d/%d on the target", topic, n, want)
		}
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-time.After(every):
		}
	}
}

// rf is the replication factor of every topic of the run: 1 on
// single-node clusters, 3 on multi-broker ones (min.insync.replicas 2).
func (h *harness) rf() int16 { return int16(min(3, h.cfg.brokers)) }

// shape says what the clusters are, for the report.
func (h *harness) shape() string {
	if h.cfg.brokers == 1 {
		return "single-node"
	}
	if h.cfg.brokers == 2 {
		return "2-broker (topics RF 2)"
	}
	return fmt.Sprintf("%d-broker (topics RF 3, min.insync.replicas 2)", h.cfg.brokers)
}

// createTopic creates a topic with the run's replication factor, waiting
// until the metadata has a leader for every partition.
func (h *harness) createTopic(admin sarama.ClusterAdmin, name string, partitions int) error {
	err := admin.CreateTopic(name, &sarama.TopicDetail{NumPartitions: int32(partitions), ReplicationFactor: h.rf()}, false)
	if err != nil && !errors.Is(err, sarama.ErrTopicAlreadyExists) {
		return fmt.Errorf("create topic %s: %w", name, err)
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		md, err := admin.DescribeTopics([]string{name})
		if err == nil && len(md) == 1 && md[0].Err == sarama.ErrNoError && len(md[0].Partitions) == partitions {
			ok := true
			for _, p := range md[0].Partitions {
				ok = ok && p.Leader >= 0
			}
			if ok {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("topic %s not ready after 30s (%v)", name, err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// endOffsets sums the end offsets of a topic's partitions, one ListOffsets
// request per partition leader, read committed: the last stable offsets,
// so an exactly-once copy counts what read_committed readers see (its
// transaction markers, one per partition and commit, count too: well
// under 0.1% of the records); a topic not there yet holds 0.
func endOffsets(client sarama.Client, topic string) (int64, error) {
	parts, err := client.Partitions(topic)
	if err != nil || len(parts) == 0 {
		if err := client.RefreshMetadata(topic); err != nil {
			if errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
				return 0, nil
			}
			return 0, err
		}
		if parts, err = client.Partitions(topic); err != nil || len(parts) == 0 {
			return 0, nil
		}
	}
	reqs := map[*sarama.Broker]*sarama.OffsetRequest{}
	for _, p := range parts {
		b, err := client.Leader(topic, p)
		if err != nil {
			return 0, err
		}
		if reqs[b] == nil {
			reqs[b] = &sarama.OffsetRequest{Version: 2, IsolationLevel: sarama.ReadCommitted}
		}
		reqs[b].AddBlock(topic, p, sarama.OffsetNewest, 1)
	}
	var sum int64
	for b, req := range reqs {
		resp, err := b.GetAvailableOffsets(req)
		if err != nil {
			return 0, err
		}
		for _, p := range parts {
			if leader, _ := client.Leader(topic, p); leader != b {
				continue
			}
			blk := resp.GetBlock(topic, p)
			if blk == nil {
				return 0, fmt.Errorf("no offset for %s-%d", topic, p)
			}
			if blk.Err != sarama.ErrNoError {
				return 0, fmt.Errorf("offset of %s-%d: %w", topic, p, blk.Err)
			}
			sum += blk.Offset
		}
	}
	return sum, nil
}

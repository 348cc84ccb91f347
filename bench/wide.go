package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The wide scenario is many partitions over many topics, copied by kmirror
// (defaults task): it checks that memory and start-up do not grow with the
// partition count and that throughput holds up against the 6-partition
// 1 KiB scenario of the same run. The bare franz-go copy runs it too, as
// the reference for what the brokers and the machine allow at that width.

// wideTopics names the scenario's source topics.
func wideTopics(sc scenario) []string {
	ts := make([]string, sc.topics)
	for i := range ts {
		ts[i] = fmt.Sprintf("%s-%02d", sc.topic(), i)
	}
	return ts
}

// runWide loads the wide scenario's topics and measures kmirror on them.
func (h *harness) runWide(ctx context.Context, sc scenario) ([]result, error) {
	topics := wideTopics(sc)
	h.logf("scenario %s: %d records of %d B on %d topics x %d partitions", sc.name, sc.records, sc.size, sc.topics, sc.partitions)
	for _, t := range topics {
		if err := h.createTopic(h.srcAdmin, t, sc.partitions); err != nil {
			return nil, err
		}
	}
	defer func() {
		for _, t := range topics {
			_ = h.srcAdmin.DeleteTopic(t)
		}
	}()
	if err := h.loadWide(ctx, sc, topics); err != nil {
		return nil, fmt.Errorf("load %s: %w", sc.name, err)
	}
	if _, n, err := endOffsetsAll(h.srcClient, topics); err != nil || n != int64(sc.records) {
		return nil, fmt.Errorf("source topics of %s hold %d records after the load, want %d (%v)", sc.name, n, sc.records, err)
	}
	var results []result
	for _, c := range h.copiers() {
		if c.key != keyKmirrorDefaults && c.key != keyBareFranz {
			continue // kmirror, and the reference
		}
		if h.cfg.only != nil && !h.cfg.only[c.key] {
			continue
		}
		h.settle()
		r := h.measureWide(ctx, sc, c, topics)
		if r.Err != "" {
			h.failed = true
			h.logf("  %-17s FAILED: %s", c.key, r.Err)
		} else {
			h.logf("  %-17s %9.0f rec/s %7.1f MB/s  cpu %6.1f s/GB  rss %6.0f MiB  every partition started in %.1f s (load %s)",
				c.key, r.RecPerSec, r.MBPerSec, r.CPUPerGB, r.PeakRSSMB, r.StartAll, r.Load)
		}
		results = append(results, r)
	}
	return results, nil
}

// loadWide fills every partition of topics with the same number of records
// (franz-go, acks=all, 5 ms linger), as fast as the source takes them.
func (h *harness) loadWide(ctx context.Context, sc scenario, topics []string) error {
	t0 := time.Now()
	cl, err := kgo.NewClient(kgo.SeedBrokers(h.srcBoot),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerLinger(5*time.Millisecond),
		kgo.MaxBufferedRecords(100_000))
	if err != nil {
		return err
	}
	defer cl.Close()
	value := make([]byte, sc.size)
	for i := range value {
		value[i] = byte('a' + i%26)
	}
	var failed atomic.Pointer[error]
	onAck := func(_ *kgo.Record, err error) {
		if err != nil {
			failed.CompareAndSwap(nil, &err)
		}
	}
	total := sc.topics * sc.partitions
	for i := range sc.records {
		p := i % total
		cl.Produce(ctx, &kgo.Record{Topic: topics[p/sc.partitions], Partition: int32(p % sc.partitions), Value: value}, onAck)
		if e := failed.Load(); e != nil {
			return *e
		}
	}
	if err := cl.Flush(ctx); err != nil {
		return err
	}
	if e := failed.Load(); e != nil {
		return *e
	}
	secs := time.Since(t0).Seconds()
	h.logf("  loaded %d records in %.1f s (%.0f rec/s)", sc.records, secs, float64(sc.records)/secs)
	return nil
}

// measureWide runs kmirror over the loaded topics, timing from its start
// until every target partition holds a record, and the copy as throughput
// does: first to last record on the target (or over -window).
func (h *harness) measureWide(ctx context.Context, sc scenario, c copier, topics []string) result {
	res := newResult(sc, c.key)
	res.Load = loadAvg()
	fail := func(err error) result {
		res.Err = err.Error()
		return res
	}
	var dsts []string
	for _, t := range topics {
		dsts = append(dsts, c.target(sc, t))
	}
	defer func() {
		for _, t := range dsts {
			_ = h.dstAdmin.DeleteTopic(t)
		}
		// Their files go after log.segment.delete.delay.ms (the harness
		// sets 1 s) and the broker's next delete pass.
		time.Sleep(5 * time.Second)
	}()
	if c.precreate {
		for _, t := range dsts {
			if err := h.createTopic(h.dstAdmin, t, sc.partitions); err != nil {
				return fail(err)
			}
		}
	}
	start := time.Now()
	p, err := c.start(h, sc, topics, "throughput")
	if err != nil {
		return fail(err)
	}
	defer func() { p.stop(20 * time.Second) }()

	const every = 250 * time.Millisecond
	want, parts := int64(sc.records), sc.topics*sc.partitions
	deadline := start.Add(h.cfg.copyTimeout)
	var (
		t0, tAll   time.Time
		n0         int64
		cpu0       float64
		lastReport = time.Now()
	)
	for {
		if p.done() {
			return fail(p.failure())
		}
		per, n, err := endOffsetsAll(h.dstClient, dsts)
		now := time.Now()
		if err != nil {
			// Target topics appear while kmirror creates them.
			_ = h.dstClient.RefreshMetadata(dsts...)
		}
		if t0.IsZero() && n > 0 {
			t0, n0 = now, n
			if cpu0, err = p.cpu(); err != nil {
				return fail(err)
			}
		}
		started := 0
		for _, off := range per {
			if off > 0 {
				started++
			}
		}
		if tAll.IsZero() && started == parts {
			tAll = now
			res.StartAll = tAll.Sub(start).Seconds()
			h.logf("    every one of %d partitions holds a record on the target after %.1f s", parts, res.StartAll)
		}
		capped := !t0.IsZero() && now.Sub(t0) >= h.cfg.window && n > n0 && n < want && !tAll.IsZero()
		if n >= want || capped {
			cpu1, err := p.cpu()
			if err != nil {
				return fail(err)
			}
			rss, err := p.rss()
			if err != nil {
				return fail(err)
			}
			recs, secs := float64(min(n, want)-n0), now.Sub(t0).Seconds()
			if recs <= 0 || secs <= 0 {
				recs, secs = float64(want), now.Sub(start).Seconds()
			}
			if capped {
				res.Note = fmt.Sprintf("timed over the first %s: %d of %d copied", h.cfg.window, n, want)
			}
			res.Records, res.Seconds = int64(recs), secs
			res.RecPerSec = recs / secs
			res.MBPerSec = res.RecPerSec * float64(sc.size) / 1e6
			res.CPUPerGB = (cpu1 - cpu0) / (recs * float64(sc.size) / 1e9)
			res.PeakRSSMB = float64(rss) / (1 << 20)
			res.Note = joinNote(res.Note, fmt.Sprintf("every partition started after %.1f s; load average %s", res.StartAll, res.Load))
			if n > want {
				res.Note = joinNote(res.Note, fmt.Sprintf("%d duplicates", n-want))
			}
			return res
		}
		if now.After(deadline) && tAll.IsZero() {
			return fail(fmt.Errorf("%d of %d target partitions hold a record %s after the copier started (-copy-timeout)", started, parts, h.cfg.copyTimeout))
		}
		if time.Since(lastReport) > 1*time.Second {
			lastReport = time.Now()
			h.logf("    %.1f s: %d/%d on the target, %d of %d partitions started", time.Since(start).Seconds(), n, want, started, parts)
		}
		select {
		case <-ctx.Done():
			return fail(ctx.Err())
		case <-time.After(every):
		}
	}
}

// endOffsetsAll is the end offset of every partition of topics (one
// ListOffsets request: single-broker clusters) and their sum; a topic not
// there yet is left out.
func endOffsetsAll(client sarama.Client, topics []string) (map[string]int64, int64, error) {
	req := &sarama.OffsetRequest{Version: 1}
	var leader *sarama.Broker
	type tp struct {
		t string
		p int32
	}
	var asked []tp
	for _, t := range topics {
		parts, err := client.Partitions(t)
		if err != nil || len(parts) == 0 {
			continue
		}
		if leader == nil {
			if leader, err = client.Leader(t, parts[0]); err != nil {
				return nil, 0, err
			}
		}
		for _, p := range parts {
			req.AddBlock(t, p, sarama.OffsetNewest, 1)
			asked = append(asked, tp{t, p})
		}
	}
	if leader == nil {
		return nil, 0, errors.New("no topic there yet")
	}
	resp, err := leader.GetAvailableOffsets(req)
	if err != nil {
		return nil, 0, err
	}
	per := make(map[string]int64, len(asked))
	var sum int64
	var errs []error
	for _, a := range asked {
		blk := resp.GetBlock(a.t, a.p)
		if blk == nil || blk.Err != sarama.ErrNoError {
			errs = append(errs, fmt.Errorf("offset of %s-%d: %v", a.t, a.p, blk))
			continue
		}
		per[fmt.Sprintf("%s-%d", a.t, a.p)] = blk.Offset
		sum += blk.Offset
	}
	if len(asked) < len(topics) {
		errs = append(errs, fmt.Errorf("%d of %d topics there yet", len(asked), len(topics)))
	}
	return per, sum, errors.Join(errs...)
}

// loadAvg is the machine's 1, 5 and 15 minute load averages, to read the
// figures by.
func loadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}

// wideGoals are the wide scenario's targets for kmirror at its width:
// every partition started within start seconds, peak RSS within rss MiB.
// Up to 1,000 partitions 15 s and 512 MiB; wider, 60 s and 1 GiB (10,000
// partitions).
func wideGoals(partitions int) (start, rss float64) {
	if partitions > 1000 {
		return 60, 1024
	}
	return 15, 512
}

// wideTable judges the wide scenario's kmirror row against wideGoals and
// compares its records/s with the same copier's 6-partition row (at
// least 0.85) and with the bare franz-go copy at the same width.
func wideTable(rs []result, wide, narrow string, partitions int) (string, int, int) {
	startGoal, rssGoal := wideGoals(partitions)
	var b strings.Builder
	fmt.Fprintf(&b, "| scenario | copier | peak RSS MiB (<= %.0f) | every partition started, s (<= %.0f) | records/s | / 6-partition 1 KiB records/s (>= 0.85) | / bare-franz at this width | load average |\n", rssGoal, startGoal)
	b.WriteString("|---|---|--:|--:|--:|--:|--:|---|\n")
	met, total := 0, 0
	mark := func(ok bool) string {
		total++
		if ok {
			met++
			return "met"
		}
		return "MISS"
	}
	bare, bok := find(rs, wide, keyBareFranz)
	for _, r := range rs {
		if r.Scenario != wide || r.Err != "" {
			continue
		}
		// The targets are kmirror's; the bare copy's row is the reference.
		judge := mark
		if r.Copier == keyBareFranz {
			judge = func(bool) string { return "(reference)" }
		}
		ratioS := "—"
		if ref, ok := find(rs, narrow, r.Copier); ok {
			ratio := r.RecPerSec / ref.RecPerSec
			ratioS = fmt.Sprintf("%.2f %s", ratio, judge(ratio >= 0.85))
		}
		bareS := "—"
		if bok && r.Copier != keyBareFranz {
			bareS = num(r.RecPerSec/bare.RecPerSec, 2)
		}
		fmt.Fprintf(&b, "| %s | %s | %s %s | %s %s | %s | %s | %s | %s |\n", r.Scenario, r.Copier,
			num(r.PeakRSSMB, 0), judge(r.PeakRSSMB <= rssGoal), num(r.StartAll, 1), judge(r.StartAll <= startGoal),
			num(r.RecPerSec, 0), ratioS, bareS, r.Load)
	}
	return b.String(), met, total
}

// wideName is the wide scenario's name in the report.
func wideName(c config) string {
	return fmt.Sprintf("%d partitions", c.wideTopics*c.widePartitions)
}

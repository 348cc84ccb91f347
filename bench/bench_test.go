package main

import (
	"bytes"
	"context"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestMain lets the test binary serve as a copier child, as the bench
// binary does: the harness re-executes os.Executable().
func TestMain(m *testing.M) {
	if role := os.Getenv(childEnv); role != "" {
		os.Exit(childMain(role, os.Args[1:]))
	}
	os.Exit(m.Run())
}

// TestQuickRun runs the whole harness on tiny data — real brokers, every
// copier including MirrorMaker 2 (dedicated, and on Kafka Connect) — so it cannot rot. It checks that a
// report with every row comes out, never the numbers.
func TestQuickRun(t *testing.T) {
	if testing.Short() {
		t.Skip("real Kafka and MirrorMaker 2: the full run's")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	out := t.TempDir()
	var stdout, stderr bytes.Buffer
	err := run(ctx, []string{"-quick", "-scenarios", "1k", "-out", out}, &stdout, &stderr)
	if err != nil {
		t.Fatalf("run: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	date := time.Now().Format("2006-01-02")
	md, err := os.ReadFile(filepath.Join(out, date+".md"))
	if err != nil {
		// The run may have crossed midnight.
		matches, _ := filepath.Glob(filepath.Join(out, "*.md"))
		if len(matches) != 1 {
			t.Fatalf("no results file in %s: %v", out, err)
		}
		date = strings.TrimSuffix(filepath.Base(matches[0]), ".md")
		md, _ = os.ReadFile(matches[0])
	}
	report := string(md)
	for _, k := range copierKeys() {
		if !strings.Contains(report, "| 1 KiB | "+k+" |") {
			t.Errorf("results table has no row for %s:\n%s", k, report)
		}
	}
	if strings.Contains(report, "FAILED") {
		t.Errorf("a row failed:\n%s", report)
	}
	_, ratios, ok := strings.Cut(report, "## kmirror against the targets")
	for _, k := range []string{keyKmirrorTypical, keyKmirrorDefaults} {
		if !ok || !strings.Contains(ratios, "| 1 KiB | "+k+" | ") {
			t.Errorf("ratios table has no row for %s", k)
		}
	}
	png, err := os.ReadFile(filepath.Join(out, date+".png"))
	if err != nil || !bytes.HasPrefix(png, []byte("\x89PNG\r\n\x1a\n")) {
		t.Errorf("chart %s.png missing or not a PNG (%v)", date, err)
	}
	if !strings.Contains(stdout.String(), "targets met:") {
		t.Errorf("no summary printed:\n%s", stdout.String())
	}
}

func TestParsers(t *testing.T) {
	out := "WARN something\n10000 records sent, 5000.0 records/sec (4.88 MB/sec), 3.0 ms avg latency, 90.0 ms max latency.\n" +
		"20000 records sent, 9876.5 records/sec (9.65 MB/sec), 2.1 ms avg latency, 90.0 ms max latency, 1 ms 50th, 5 ms 95th, 9 ms 99th, 20 ms 99.9th.\n"
	m := producerLine.FindAllStringSubmatch(out, -1)
	if len(m) != 2 || m[1][1] != "20000" || m[1][2] != "9876.5" {
		t.Errorf("producer summary: got %q", m)
	}
	csv := "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec, rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec\n" +
		"2026-01-01 00:00:00:000, 2026-01-01 00:00:03:000, 19.5, 6.5, 20000, 6666.7, 1000, 2000, 9.8, 10000.0\n"
	row, err := csvRow(csv, "fetch.nMsg.sec")
	if err != nil || row["fetch.nMsg.sec"] != "10000.0" || row["data.consumed.in.nMsg"] != "20000" {
		t.Errorf("consumer row: %v, %v", row, err)
	}
	if _, err := csvRow("nothing here", "fetch.nMsg.sec"); err == nil {
		t.Error("csvRow found a header in output without one")
	}
}

func TestProcStats(t *testing.T) {
	cpu, err := cpuSeconds(os.Getpid())
	if err != nil || cpu < 0 {
		t.Errorf("cpuSeconds: %v, %v", cpu, err)
	}
	rss, err := peakRSS(os.Getpid())
	if err != nil || rss <= 0 {
		t.Errorf("peakRSS: %v, %v", rss, err)
	}
}

func TestParseCPUTicks(t *testing.T) {
	for _, c := range []struct {
		line       string
		steal, all uint64
		ok         bool
	}{
		{"cpu  100 2 30 800 5 1 2 60 0 0", 60, 1000, true},
		{"cpu 1 2 3 4 5 6 7 8", 8, 36, true},
		{"cpu 1 2 3 4 5 6 7", 0, 0, false},    // a kernel without steal
		{"cpu0 1 2 3 4 5 6 7 8", 0, 0, false}, // a core's line, not the machine's
		{"cpu 1 2 x 4 5 6 7 8", 0, 0, false},  // not a number
		{"", 0, 0, false},
	} {
		steal, all, ok := parseCPUTicks(c.line)
		if steal != c.steal || all != c.all || ok != c.ok {
			t.Errorf("parseCPUTicks(%q) = %d, %d, %v; want %d, %d, %v", c.line, steal, all, ok, c.steal, c.all, c.ok)
		}
	}
	if _, _, ok := cpuTicks(); !ok {
		t.Error("no CPU time read from /proc/stat")
	}
	if s := stealSince(0, 0, false); !math.IsNaN(s) {
		t.Errorf("steal without a first reading: %v, want NaN", s)
	}
}

func TestPercentile(t *testing.T) {
	ds := make([]time.Duration, 100)
	for i := range ds {
		ds[i] = time.Duration(i+1) * time.Millisecond
	}
	if got := percentile(ds, 0.5); got != 50*time.Millisecond {
		t.Errorf("p50 = %v", got)
	}
	if got := percentile(ds, 0.99); got != 99*time.Millisecond {
		t.Errorf("p99 = %v", got)
	}
	if got := percentile(nil, 0.99); got != 0 {
		t.Errorf("p99 of nothing = %v", got)
	}
}

func TestEveryRowDescribed(t *testing.T) {
	for _, k := range copierKeys() {
		if describe[k] == "" {
			t.Errorf("no description for row %s", k)
		}
	}
}

func TestParseMM2Variant(t *testing.T) {
	for _, c := range []struct {
		in      string
		name    string
		n       int
		wantErr bool
	}{
		{in: "a:producer.linger.ms=5", name: "a", n: 1},
		{in: "big-1:producer.batch.size=1048576, consumer.max.poll.records=4000,tasks.max=6", name: "big-1", n: 3},
		{in: "a:", name: "a", n: 0},
		{in: "producer.linger.ms=5", wantErr: true},
		{in: "A b:x=1", wantErr: true},
		{in: "a:linger", wantErr: true},
		{in: "a:=5", wantErr: true},
	} {
		v, err := parseMM2Variant(c.in)
		if (err != nil) != c.wantErr {
			t.Errorf("%q: error %v, want error %v", c.in, err, c.wantErr)
			continue
		}
		if err == nil && (v.name != c.name || len(v.settings) != c.n) {
			t.Errorf("%q: got %q with %d settings %q", c.in, v.name, len(v.settings), v.settings)
		}
	}
}

// Each MM2 row resumes from the offsets of its source alias: two rows
// sharing one would copy nothing the second time.
func TestMM2AliasesDiffer(t *testing.T) {
	h := &harness{cfg: config{mm2Try: []mm2Variant{{name: "a"}, {name: "b"}}}}
	seen := map[string]string{}
	for _, sc := range []scenario{{key: "1k"}, {key: "100b"}} {
		for _, k := range h.rowKeys() {
			if k != keyMM2 && k != keyMM2Tuned && !strings.HasPrefix(k, "mm2-try-") {
				continue
			}
			a := mm2Alias(k, sc)
			if o, dup := seen[a]; dup {
				t.Errorf("rows %s and %s/%s share the alias %s", o, k, sc.key, a)
			}
			seen[a] = k + "/" + sc.key
		}
	}
	if len(seen) != 8 {
		t.Errorf("%d aliases, want 8: %v", len(seen), seen)
	}
}

// Repeats are judged by their medians, and each ratio's spread is the
// ratio of the rows of one repeat: three runs of kmirror against three of
// the bare copy.
func TestMediansAndSpreadOverRepeats(t *testing.T) {
	sc := scenario{name: "1 KiB"}
	row := func(copier string, rep int, rate, cpu float64) result {
		r := newResult(sc, copier)
		r.Repeat, r.RecPerSec, r.CPUPerGB = rep, rate, cpu
		return r
	}
	failed := row(keyKmirrorTypical, 4, 1, 1)
	failed.Err = "copier failed"
	rs := []result{
		row(keyKmirrorTypical, 1, 90, 2), row(keyBareFranz, 1, 100, 1),
		row(keyKmirrorTypical, 2, 120, 3), row(keyBareFranz, 2, 100, 2),
		row(keyKmirrorTypical, 3, 100, 1), row(keyBareFranz, 3, 80, 1),
		failed,
	}
	m := medians(rs)
	if len(m) != 2 {
		t.Fatalf("%d median rows, want 2: %+v", len(m), m)
	}
	if k := m[0]; k.Copier != keyKmirrorTypical || k.RecPerSec != 100 || k.CPUPerGB != 2 || k.Note != "median of 3" {
		t.Errorf("kmirror's median row %+v: want 100 records/s, 2 CPU s/GB, of 3 (the failed repeat left out)", k)
	}
	spread := spreadTable(rs, []string{sc.name}, 3)
	for _, want := range []string{
		"| 1 KiB | throughput / `bare-franz` | 0.90, 1.20, 1.25 | 1.20 | 0.90 - 1.25 |",
		"| 1 KiB | CPU s/GB / `bare-franz` | 2.00, 1.50, 1.00 | 1.50 | 1.00 - 2.00 |",
	} {
		if !strings.Contains(spread, want) {
			t.Errorf("spread table lacks %q:\n%s", want, spread)
		}
	}
	if strings.Contains(spread, "mm2-tuned") {
		t.Errorf("a reference not measured gets no line:\n%s", spread)
	}
}

func TestLatencyWarmupFlag(t *testing.T) {
	for _, c := range []struct {
		args []string
		want time.Duration
		err  bool
	}{
		{[]string{"-lat-duration", "60s"}, 3 * time.Second, false},
		{[]string{"-lat-duration", "6s"}, 2 * time.Second, false},
		{[]string{"-lat-duration", "60s", "-lat-warmup", "40s"}, 40 * time.Second, false},
		{[]string{"-lat-duration", "60s", "-lat-warmup", "0s"}, 0, false},
		{[]string{"-lat-warmup", "-5s"}, 0, true},
	} {
		cfg, err := parseFlags(c.args, io.Discard)
		if (err != nil) != c.err || (!c.err && cfg.latWarmup != c.want) {
			t.Errorf("%v: warm-up %s, error %v; want %s, error %v", c.args, cfg.latWarmup, err, c.want, c.err)
		}
	}
}

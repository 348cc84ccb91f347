// Command bench measures kmirror side by side with Apache MirrorMaker 2 and
// with the raw limit of the brokers, on two real Kafka clusters started for
// the run (internal/kafkatest, 1 GiB heaps, 127.0.0.1 only): single-node,
// or with -brokers 3 three brokers each with every topic at RF 3 and
// min.insync.replicas 2, the shape durability needs.
//
// For each scenario (6-partition source topic of 1 KiB records, then of
// 100 B records) it runs one after another on the same brokers:
//
//   - the limit: Kafka's ProducerPerformance (which also loads the source
//     topic) and ConsumerPerformance, and two bare consume->produce copies
//     without any feature, one on sarama and one on franz-go;
//   - kmirror's engine with a typical task (rename, source header, consumer
//     offset sync) and with the original product's defaults (identity, 2 tasks);
//   - MirrorMaker 2 in dedicated mode with the typical task's settings, at
//     its defaults and tuned (producer batches, consumer fetches: the best
//     of a sweep, -mm2-try; see mm2Tuning);
//   - MirrorMaker 2 on a distributed Kafka Connect cluster, deployed there
//     by kmirror's Connect engine as the product deploys a task
//     (connectrow.go).
//
// A third scenario, 1000p, runs kmirror (defaults task) over 50 topics x
// 20 partitions of 1 KiB records: peak RSS, the time from its start until
// every target partition holds a record, and records/s against the 1 KiB
// scenario's; the bare franz-go copy runs it too, as the reference
// (wide.go).
//
// Every copier runs as a child process (this binary re-executed, or the
// JVM), so its CPU time and peak RSS are its own. Throughput is timed from
// the first to the last record on the target (polled end offsets), or over
// at most -window for a slow copier; latency is measured by a second run of
// the copier over an empty topic fed at a fixed rate, after a warm-up, from
// the record timestamp to its arrival on the target.
//
// Numbers are noisy on a shared 2-core machine: read the ratios, which are
// measured side by side in one run, rather than the absolute values.
//
//	go run ./bench                 (full run, about 15 minutes)
//	go run ./bench -quick          (smoke run on tiny data)
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/kmirror/kmirror/internal/replicator"
)

func main() {
	// A copier child: this binary re-executed with a role (see child.go).
	if role := os.Getenv(childEnv); role != "" {
		os.Exit(childMain(role, os.Args[1:]))
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "bench:", err)
		os.Exit(1)
	}
}

// config is the run's flags.
type config struct {
	quick          bool
	records1K      int
	records100     int
	partitions     int
	brokers        int // per cluster; 3 or more: topics RF 3, min.insync.replicas 2
	recordsWide    int
	wideTopics     int
	widePartitions int
	latRate        int
	latDuration    time.Duration
	latWarmup      time.Duration
	repeats        int // each scenario's copiers measured this many times, interleaved
	copyTimeout    time.Duration
	window         time.Duration
	timeout        time.Duration
	out            string
	only           map[string]bool // copier keys to run; nil runs all
	scenarios      map[string]bool // scenario keys to run
	profile        bool
	keep           bool
	bufferMemory   string       // kmirror's --buffer-memory; empty: its default
	mm2Tuned       []string     // the mm2-tuned row's client settings
	mm2Try         []mm2Variant // extra MM2 rows (-mm2-try), for a sweep
}

func parseFlags(args []string, stderr io.Writer) (config, error) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c config
	fs.BoolVar(&c.quick, "quick", false, "smoke run: tiny data and short latency phases (overrides the counts)")
	fs.IntVar(&c.records1K, "records-1k", 3_500_000, "records in the 1 KiB scenario")
	fs.IntVar(&c.records100, "records-100", 8_000_000, "records in the 100 B scenario")
	fs.IntVar(&c.partitions, "partitions", 6, "partitions of every source topic")
	fs.IntVar(&c.brokers, "brokers", 1, "brokers per cluster (1 to 5); with 3 or more every topic has 3 replicas and min.insync.replicas 2")
	fs.IntVar(&c.recordsWide, "records-1000p", 1_000_000, "records (1 KiB) in the 1000p scenario, spread evenly over its partitions")
	fs.IntVar(&c.wideTopics, "wide-topics", 50, "topics of the 1000p scenario")
	fs.IntVar(&c.widePartitions, "wide-partitions", 20, "partitions of each topic of the 1000p scenario")
	fs.IntVar(&c.latRate, "lat-rate", 5000, "records/s produced during a latency phase")
	fs.DurationVar(&c.latDuration, "lat-duration", 12*time.Second, "timed length of a latency phase (after the copier is live and a warm-up)")
	fs.DurationVar(&c.latWarmup, "lat-warmup", 0, "untimed start of a latency phase, after the copier is live (default: a third of -lat-duration, at most 3s); on a 2-core machine the p99 settles over about 40s")
	fs.IntVar(&c.repeats, "repeats", 1, "measure each scenario's copiers this many times, interleaved (kmirror, MM2, bare, kmirror, ...): the tables use each row's median and a table gives each ratio's spread over the repeats")
	fs.DurationVar(&c.window, "window", 40*time.Second, "time a slow copier over at most this long from its first record (rate over a partial copy)")
	fs.DurationVar(&c.copyTimeout, "copy-timeout", 2*time.Minute, "give up a copier that shows no record on the target after this long")
	fs.DurationVar(&c.timeout, "timeout", 25*time.Minute, "give up the whole run after this long")
	fs.StringVar(&c.out, "out", "bench/results", "directory for <date>.md and <date>.png")
	scenarios := fs.String("scenarios", "1k,100b,1000p", "comma-separated scenarios to run: 1k (1 KiB records), 100b (100 B records), 1000p (kmirror and the bare franz-go copy on 1,000 partitions over 50 topics, compared with 1k)")
	only := fs.String("only", "", "comma-separated copiers to run (default all): "+strings.Join(copierKeys(), ","))
	fs.BoolVar(&c.profile, "profile", false, "write CPU and allocation profiles of the kmirror children to -out")
	fs.StringVar(&c.bufferMemory, "buffer-memory", "", "kmirror's --buffer-memory for its children (default: kmirror's default, 256MiB)")
	fs.BoolVar(&c.keep, "keep", false, "keep the work directory (child logs, MM2 config) after the run")
	c.mm2Tuned = mm2Tuning
	fs.Func("mm2-tuned", "comma-separated key=value client settings of the mm2-tuned row instead of the sweep's best (producer.* to the producer, consumer.* to the source consumer, the rest top level)", func(s string) error {
		v, err := parseMM2Variant("tuned:" + s)
		c.mm2Tuned = v.settings
		return err
	})
	fs.Func("mm2-try", "an extra MirrorMaker 2 row name:key=value,... (repeatable; settings as -mm2-tuned), run whatever -only says: for sweeping MM2's settings side by side", func(s string) error {
		v, err := parseMM2Variant(s)
		for _, o := range c.mm2Try {
			if o.name == v.name {
				return fmt.Errorf("-mm2-try: %s given twice", v.name)
			}
		}
		c.mm2Try = append(c.mm2Try, v)
		return err
	})
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if c.quick {
		c.records1K, c.records100 = 20_000, 50_000
		c.recordsWide, c.wideTopics, c.widePartitions = 20_000, 10, 10
		c.latRate, c.latDuration = 1000, 2*time.Second
		c.window = 10 * time.Second
	}
	warmupSet := false
	fs.Visit(func(f *flag.Flag) { warmupSet = warmupSet || f.Name == "lat-warmup" })
	if !warmupSet {
		c.latWarmup = min(3*time.Second, c.latDuration/3)
	}
	if *only != "" {
		c.only = map[string]bool{}
		known := map[string]bool{}
		for _, k := range copierKeys() {
			known[k] = true
		}
		for _, k := range strings.Split(*only, ",") {
			k = strings.TrimSpace(k)
			if !known[k] {
				return c, fmt.Errorf("-only: unknown copier %q: use %s", k, strings.Join(copierKeys(), ","))
			}
			c.only[k] = true
		}
	}
	var errs []error
	c.scenarios = map[string]bool{}
	for _, k := range strings.Split(*scenarios, ",") {
		switch k = strings.TrimSpace(k); k {
		case "1k", "100b", "1000p":
			c.scenarios[k] = true
		default:
			errs = append(errs, fmt.Errorf("-scenarios: unknown scenario %q: use 1k, 100b, 1000p", k))
		}
	}
	if c.repeats < 1 || c.repeats > 9 {
		errs = append(errs, errors.New("-repeats must be 1 to 9"))
	}
	if c.records1K < 1 || c.records100 < 1 {
		errs = append(errs, errors.New("-records-1k and -records-100 must be at least 1"))
	}
	if c.partitions < 1 || c.wideTopics < 1 || c.widePartitions < 1 {
		errs = append(errs, errors.New("-partitions, -wide-topics and -wide-partitions must be at least 1"))
	}
	if c.brokers < 1 || c.brokers > 5 {
		errs = append(errs, errors.New("-brokers must be 1 to 5"))
	}
	if c.bufferMemory != "" {
		if _, err := replicator.ParseBytes(c.bufferMemory); err != nil {
			errs = append(errs, fmt.Errorf("-buffer-memory: %w", err))
		}
	}
	if c.recordsWide < c.wideTopics*c.widePartitions {
		errs = append(errs, errors.New("-records-1000p must give every partition a record (at least -wide-topics x -wide-partitions)"))
	}
	if c.latRate < 10 || c.latDuration < time.Second {
		errs = append(errs, errors.New("-lat-rate must be at least 10 and -lat-duration at least 1s"))
	}
	if c.latWarmup < 0 {
		errs = append(errs, errors.New("-lat-warmup must not be negative"))
	}
	return c, errors.Join(errs...)
}

// run is the whole benchmark: clusters up, scenarios measured, report
// written, everything stopped (also on SIGINT/SIGTERM, through ctx).
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, cfg.timeout)
	defer cancel()
	h, err := newHarness(ctx, cfg, stdout)
	if err != nil {
		return err
	}
	defer h.close()
	results, err := h.runAll(ctx)
	if err != nil {
		return err
	}
	return h.report(results)
}

package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"runtime"
	"runtime/pprof"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/embeddedengine"
	"github.com/kmirror/kmirror/internal/engine"
	"github.com/kmirror/kmirror/internal/replicator"
	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/internal/task"
)

// childEnv names the role of a re-executed bench binary: the copiers run
// as child processes so their CPU time and RSS are measured apart from the
// harness.
const childEnv = "KMIRROR_BENCH_CHILD"

// Child roles.
const (
	roleSarama  = "copy-sarama"
	roleFranz   = "copy-franz"
	roleKmirror = "kmirror"
)

// childMain runs a role until SIGTERM and returns the exit code.
func childMain(role string, args []string) int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	var err error
	switch role {
	case roleSarama, roleFranz:
		err = bareCopy(ctx, role, args)
	case roleKmirror:
		err = kmirrorChild(ctx, args)
	default:
		err = fmt.Errorf("unknown child role %q", role)
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "bench %s: %v\n", role, err)
		return 1
	}
	return 0
}

// bareFlags are a bare copier's arguments: where from, where to, which
// topics, the prefix naming each target topic, and how many independent
// workers share the partitions (as kmirror's tasks and MM2's tasks.max).
type bareFlags struct {
	src, dst, prefix string
	topics           []string
	partitions       int
	workers          int
}

func parseBare(args []string) (bareFlags, error) {
	fs := flag.NewFlagSet("copy", flag.ContinueOnError)
	var f bareFlags
	var topics string
	fs.StringVar(&f.src, "src", "", "source bootstrap")
	fs.StringVar(&f.dst, "dst", "", "target bootstrap")
	fs.StringVar(&f.prefix, "prefix", "", "target topic = prefix + source topic")
	fs.StringVar(&topics, "topics", "", "comma-separated source topics")
	fs.IntVar(&f.partitions, "partitions", 6, "partitions of every source topic")
	fs.IntVar(&f.workers, "workers", 2, "independent consumer+producer pairs")
	if err := fs.Parse(args); err != nil {
		return f, err
	}
	f.topics = strings.Split(topics, ",")
	if f.src == "" || f.dst == "" || topics == "" || f.workers < 1 || f.partitions < 1 {
		return f, errors.New("need -src, -dst, -topics, -workers >= 1 and -partitions >= 1")
	}
	return f, nil
}

// share is worker i's partitions: every workers-th one.
func (f bareFlags) share(i int) []int32 {
	var ps []int32
	for p := i; p < f.partitions; p += f.workers {
		ps = append(ps, int32(p))
	}
	return ps
}

// bareCopy runs the workers until ctx ends or one fails.
func bareCopy(ctx context.Context, role string, args []string) error {
	f, err := parseBare(args)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	var wg sync.WaitGroup
	for i := range f.workers {
		wg.Go(func() {
			var err error
			if role == roleSarama {
				err = copySarama(ctx, f, f.share(i))
			} else {
				err = copyFranz(ctx, f, f.share(i))
			}
			if err != nil {
				cancel(err)
			}
		})
	}
	wg.Wait()
	if err := context.Cause(ctx); err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	return nil
}

// copySarama is the least a sarama copier can do: a partition consumer per
// source partition feeding one async producer (acks=all, manual
// partitioner, 1 MiB / 5 ms batches like kmirror's), no progress, no
// acknowledgement tracking.
func copySarama(ctx context.Context, f bareFlags, parts []int32) error {
	base := func(id string) (*sarama.Config, error) {
		return cluster.Settings{BootstrapServers: []string{f.src}, SecurityProtocol: cluster.Plaintext}.Config(id)
	}
	ccfg, err := base("bench-copy-sarama")
	if err != nil {
		return err
	}
	ccfg.Consumer.Fetch.Default = 1 << 20
	ccfg.Consumer.MaxWaitTime = 250 * time.Millisecond
	ccfg.ChannelBufferSize = 1024
	consumer, err := sarama.NewConsumer([]string{f.src}, ccfg)
	if err != nil {
		return err
	}
	defer consumer.Close()

	pcfg, err := base("bench-copy-sarama")
	if err != nil {
		return err
	}
	p := &pcfg.Producer
	p.RequiredAcks = sarama.WaitForAll
	p.Partitioner = sarama.NewManualPartitioner
	p.Compression = sarama.CompressionNone
	p.Return.Successes = false
	p.Return.Errors = true
	p.Flush.Bytes = 1 << 20
	p.Flush.Frequency = 5 * time.Millisecond
	p.MaxMessageBytes = 1000000
	var pcs []sarama.PartitionConsumer
	defer func() {
		for _, pc := range pcs {
			pc.AsyncClose()
		}
	}()
	for _, t := range f.topics {
		for _, part := range parts {
			pc, err := consumer.ConsumePartition(t, part, sarama.OffsetOldest)
			if err != nil {
				return fmt.Errorf("consume %s-%d: %w", t, part, err)
			}
			pcs = append(pcs, pc)
		}
	}
	pcfg.ChannelBufferSize = 256 * len(pcs)
	producer, err := sarama.NewAsyncProducer([]string{f.dst}, pcfg)
	if err != nil {
		return err
	}
	defer producer.AsyncClose()
	failed := make(chan error, 1)
	go func() {
		for e := range producer.Errors() {
			select {
			case failed <- e:
			default:
			}
		}
	}()
	ctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	defer wg.Wait()
	in := producer.Input()
	for _, pc := range pcs {
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case m := <-pc.Messages():
					out := &sarama.ProducerMessage{
						Topic: f.prefix + m.Topic, Partition: m.Partition, Timestamp: m.Timestamp,
					}
					if m.Key != nil {
						out.Key = sarama.ByteEncoder(m.Key)
					}
					if m.Value != nil {
						out.Value = sarama.ByteEncoder(m.Value)
					}
					if len(m.Headers) > 0 {
						out.Headers = make([]sarama.RecordHeader, len(m.Headers))
						for i, h := range m.Headers {
							out.Headers[i] = *h
						}
					}
					select {
					case in <- out:
					case <-ctx.Done():
						return
					}
				case e := <-pc.Errors():
					select {
					case failed <- e:
					default:
					}
				}
			}
		})
	}
	select {
	case <-ctx.Done():
		return nil
	case err := <-failed:
		return err
	}
}

// copyFranz is the same bare copy on franz-go: one direct (group-less)
// consumer, one producer (acks=all, idempotent by default, 5 ms linger,
// no compression), records handed over as they are.
func copyFranz(ctx context.Context, f bareFlags, parts []int32) error {
	assign := map[string]map[int32]kgo.Offset{}
	for _, t := range f.topics {
		assign[t] = map[int32]kgo.Offset{}
		for _, p := range parts {
			assign[t][p] = kgo.NewOffset().AtStart()
		}
	}
	src, err := kgo.NewClient(
		kgo.SeedBrokers(f.src),
		kgo.ConsumePartitions(assign),
		kgo.FetchMaxWait(250*time.Millisecond),
	)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := kgo.NewClient(
		kgo.SeedBrokers(f.dst),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerLinger(5*time.Millisecond),
	)
	if err != nil {
		return err
	}
	defer dst.Close()
	failed := make(chan error, 1)
	onAck := func(_ *kgo.Record, err error) {
		if err != nil && !errors.Is(err, context.Canceled) {
			select {
			case failed <- err:
			default:
			}
		}
	}
	for {
		fs := src.PollFetches(ctx)
		if ctx.Err() != nil {
			return nil
		}
		select {
		case err := <-failed:
			return fmt.Errorf("produce: %w", err)
		default:
		}
		var ferr error
		fs.EachError(func(t string, p int32, err error) { ferr = fmt.Errorf("fetch %s-%d: %w", t, p, err) })
		if ferr != nil {
			return ferr
		}
		fs.EachRecord(func(r *kgo.Record) {
			dst.Produce(ctx, &kgo.Record{
				Topic: f.prefix + r.Topic, Partition: r.Partition,
				Key: r.Key, Value: r.Value, Headers: r.Headers, Timestamp: r.Timestamp,
			}, onAck)
		})
	}
}

// kmirrorChild runs a spec's tasks on kmirror's engine exactly as
// `kmirror run -f spec.json` does (engine.ReadSpec, default replicator
// options, Spec.StartAll), plus optional profiles, which the real command
// does not offer.
func kmirrorChild(ctx context.Context, args []string) error {
	fs := flag.NewFlagSet("kmirror", flag.ContinueOnError)
	specPath := fs.String("f", "", "spec file")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile here")
	memProfile := fs.String("memprofile", "", "write an allocation profile here at exit")
	bufferMemory := fs.String("buffer-memory", "", "as kmirror's --buffer-memory (default its default)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	f, err := os.Open(*specPath)
	if err != nil {
		return err
	}
	spec, err := service.ReadSpec(f)
	f.Close()
	if err != nil {
		return err
	}
	if *cpuProfile != "" {
		pf, err := os.Create(*cpuProfile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(pf); err != nil {
			return err
		}
		defer func() { pprof.StopCPUProfile(); pf.Close() }()
	}
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	embeddedengine.TuneGC() // as kmirror itself runs
	budget := int64(replicator.DefaultBufferBytes)
	if *bufferMemory != "" {
		if budget, err = replicator.ParseBytes(*bufferMemory); err != nil {
			return err
		}
	}
	b := replicator.NewBudget(budget)
	embeddedengine.LimitMemory(b)
	eng := embeddedengine.New(replicator.Options{Budget: b}, log)
	if err := spec.StartAll(func(task.Task) (engine.Runner, error) { return eng, nil }); err != nil {
		return err
	}
	if *memProfile != "" {
		go peakHeapProfile(ctx, strings.TrimSuffix(*memProfile, ".allocs.pprof")+".peak-heap.pprof")
	}
	<-ctx.Done()
	if *memProfile != "" {
		if mf, err := os.Create(*memProfile); err == nil {
			_ = pprof.Lookup("allocs").WriteTo(mf, 0)
			mf.Close()
		}
	}
	eng.Close()
	return nil
}

// peakHeapProfile writes the heap profile (in use, as of the last
// collection) to path whenever the heap in use is the largest yet, checked
// every second: what the peak RSS is made of.
func peakHeapProfile(ctx context.Context, path string) {
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	var peak uint64
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		if ms.HeapInuse <= peak+peak/10 {
			continue
		}
		peak = ms.HeapInuse
		if f, err := os.Create(path); err == nil {
			_ = pprof.Lookup("heap").WriteTo(f, 0)
			f.Close()
		}
	}
}

package main

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"
)

// latency produces to srcTopic at the configured fixed rate while the
// copier p runs, and times each record from its send time (in its value's
// first 8 bytes, nanoseconds; every copier copies values as they are) to
// its arrival on dstTopic. It first waits until records arrive at all
// (the copier has started), then lets a warm-up pass untimed (records
// whose timestamp, set when produced, is before its end); a timed record
// not seen within 15 s of the end counts as missing.
func (h *harness) latency(ctx context.Context, p copyRun, sc scenario, srcTopic, dstTopic string, res *result) error {
	cons, err := kgo.NewClient(
		kgo.SeedBrokers(h.dstBoot),
		kgo.ConsumeTopics(dstTopic),
		kgo.ConsumeStartOffset(kgo.NewOffset().AtStart()),
		// What readers of an exactly-once copy must use; the same for the
		// others (nothing transactional there).
		kgo.FetchIsolationLevel(kgo.ReadCommitted()),
		kgo.FetchMaxWait(500*time.Millisecond),
		kgo.MetadataMinAge(250*time.Millisecond), // see the target topic soon after the copier creates it
	)
	if err != nil {
		return err
	}
	defer cons.Close()
	prod, err := kgo.NewClient(
		kgo.SeedBrokers(h.srcBoot),
		kgo.RecordPartitioner(kgo.ManualPartitioner()),
		kgo.RequiredAcks(kgo.AllISRAcks()),
		kgo.ProducerBatchCompression(kgo.NoCompression()),
		kgo.ProducerLinger(0),
	)
	if err != nil {
		return err
	}
	defer prod.Close()

	type arrival struct {
		sent time.Time
		lat  time.Duration
	}
	var (
		warmEnd atomic.Int64 // ms; records stamped at or after it are timed
		seen    atomic.Int64
		mu      sync.Mutex
		lats    []arrival
	)
	warmEnd.Store(math.MaxInt64)
	cctx, stopConsumer := context.WithCancel(ctx)
	consumed := make(chan struct{})
	go func() {
		defer close(consumed)
		for {
			fs := cons.PollFetches(cctx)
			if cctx.Err() != nil {
				return
			}
			now := time.Now()
			from := warmEnd.Load()
			mu.Lock()
			fs.EachRecord(func(r *kgo.Record) {
				seen.Add(1)
				if r.Timestamp.UnixMilli() >= from {
					sent := r.Timestamp
					if len(r.Value) >= 8 {
						sent = time.Unix(0, int64(binary.BigEndian.Uint64(r.Value)))
					}
					lats = append(lats, arrival{sent, now.Sub(sent)})
				}
			})
			mu.Unlock()
		}
	}()
	defer func() { stopConsumer(); <-consumed }()

	value := make([]byte, sc.size)
	for i := range value {
		value[i] = 'a' + byte(i%26)
	}
	var (
		sent, timed int
		perr        error
		errOnce     sync.Once
	)
	onAck := func(_ *kgo.Record, err error) {
		if err != nil {
			errOnce.Do(func() { perr = err })
		}
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	began := time.Now()
	// produce keeps the fixed rate until done says stop.
	produce := func(done func(now time.Time) (bool, error)) error {
		for {
			now := time.Now()
			if stop, err := done(now); stop || err != nil {
				return err
			}
			due := int(now.Sub(began).Seconds() * float64(h.cfg.latRate))
			for ; sent < due; sent++ {
				ts := time.Now().Truncate(time.Millisecond)
				if ts.UnixMilli() >= warmEnd.Load() {
					timed++
				}
				v := value
				if len(v) >= 8 {
					v = slices.Clone(value)
					binary.BigEndian.PutUint64(v, uint64(time.Now().UnixNano()))
				}
				prod.Produce(ctx, &kgo.Record{Topic: srcTopic, Partition: int32(sent % h.cfg.partitions), Value: v, Timestamp: ts}, onAck)
			}
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-tick.C:
			}
			if p.done() {
				return p.failure()
			}
		}
	}
	liveBy := began.Add(h.cfg.copyTimeout)
	err = produce(func(now time.Time) (bool, error) {
		if seen.Load() > 0 {
			return true, nil
		}
		if now.After(liveBy) {
			return false, fmt.Errorf("no record reached %s within %s of starting the copier (-copy-timeout)", dstTopic, h.cfg.copyTimeout)
		}
		return false, nil
	})
	if err != nil {
		return err
	}
	warm := time.Now().Add(h.cfg.latWarmup).Truncate(time.Millisecond)
	warmEnd.Store(warm.UnixMilli())
	end := warm.Add(h.cfg.latDuration)
	if err := produce(func(now time.Time) (bool, error) { return !now.Before(warm), nil }); err != nil {
		return err
	}
	steal0, all0, ok0 := cpuTicks() // the timed window starts
	if err := produce(func(now time.Time) (bool, error) { return !now.Before(end), nil }); err != nil {
		return err
	}
	res.LatSteal = stealSince(steal0, all0, ok0)
	if err := prod.Flush(ctx); err != nil {
		return err
	}
	if perr != nil {
		return fmt.Errorf("produce latency records to %s: %w", srcTopic, perr)
	}
	waitUntil := time.Now().Add(15 * time.Second)
	for {
		mu.Lock()
		got := len(lats)
		mu.Unlock()
		if got >= timed || time.Now().After(waitUntil) {
			break
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	mu.Lock()
	got := slices.Clone(lats)
	mu.Unlock()
	res.LatRecords = timed
	res.LatMissing = max(0, timed-len(got))
	if len(got) == 0 {
		return fmt.Errorf("no latency record of %d reached %s", timed, dstTopic)
	}
	// p99 of each second of the timed window, by send time: a stall shows
	// as the seconds it lasted, which one p99 over the window hides.
	perSec := make([][]time.Duration, int(h.cfg.latDuration/time.Second)+1)
	ds := make([]time.Duration, 0, len(got)+res.LatMissing)
	for _, a := range got {
		ds = append(ds, a.lat)
		if i := int(a.sent.Sub(warm) / time.Second); i >= 0 && i < len(perSec) {
			perSec[i] = append(perSec[i], a.lat)
		}
	}
	for _, sec := range perSec {
		if len(sec) > 0 {
			slices.Sort(sec)
			res.P99Series = append(res.P99Series, ms(percentile(sec, 0.99)))
		}
	}
	// Missing records count as the wait since the end, a lower bound.
	for range res.LatMissing {
		ds = append(ds, time.Since(end))
	}
	slices.Sort(ds)
	res.P50 = ms(percentile(ds, 0.50))
	res.P99 = ms(percentile(ds, 0.99))
	res.P999 = ms(percentile(ds, 0.999))
	res.Max = ms(ds[len(ds)-1])
	if res.LatMissing > 0 {
		res.Note = joinNote(res.Note, fmt.Sprintf("%d of %d latency records missing", res.LatMissing, timed))
	}
	return nil
}

// percentile of sorted durations, nearest rank.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	i := int(q*float64(len(sorted))+0.5) - 1
	return sorted[min(max(i, 0), len(sorted)-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func joinNote(a, b string) string {
	if a == "" {
		return b
	}
	return a + "; " + b
}

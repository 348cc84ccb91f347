package replicator

import (
	"context"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/e2e"
	"github.com/kmirror/kmirror/internal/kafkatest"
	"github.com/kmirror/kmirror/internal/task"
)

// BenchmarkPush1KiB measures a push task copying a preloaded 6-partition
// topic of 1 KiB records between the two real brokers, from task start until
// the target holds every record. Records default to 200000; set
// KMIRROR_BENCH_RECORDS to change it.
//
//	go test -run '^$' -bench Push1KiB -benchtime 1x ./internal/replicator
func BenchmarkPush1KiB(b *testing.B) {
	n := 200000
	if v, err := strconv.Atoi(os.Getenv("KMIRROR_BENCH_RECORDS")); err == nil && v > 0 {
		n = v
	}
	k1, k2 := kafkatest.Shared(b, 0), kafkatest.Shared(b, 1)
	src := k1.Settings(cluster.Plaintext, "")
	dst := k2.Settings(cluster.Plaintext, "")
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		topic := kafkatest.TopicName(b.Name())
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		if _, err := e2e.Produce(ctx, src, topic, 6, n, 1024); err != nil {
			b.Fatal(err)
		}
		tk := newTask("bench", task.DirectionPush, []string{topic})
		flows, err := FlowsOf(tk, src, dst)
		if err != nil {
			b.Fatal(err)
		}
		r := New(flows[0], Options{}, nil)
		rctx, stop := context.WithCancel(ctx)
		done := make(chan struct{})
		b.StartTimer()
		began := time.Now()
		go func() { defer close(done); _ = r.Run(rctx) }()
		if _, err := e2e.WaitFor(ctx, dst, topic, int64(n), nil); err != nil {
			b.Fatal(err)
		}
		took := time.Since(began)
		b.StopTimer()
		stop()
		<-done
		cancel()
		b.ReportMetric(float64(n)/took.Seconds(), "records/s")
		b.ReportMetric(float64(n)*1024/took.Seconds()/1e6, "MB/s")
	}
}

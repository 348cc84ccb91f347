package e2e

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/embedded"
)

// Two embedded clusters shared by every test of the package: starting them
// is cheap, but sharing keeps topics apart by name, as real clusters would.
var source, target cluster.Settings

func TestMain(m *testing.M) {
	cs, err := embedded.StartAll([]string{"src", "dst"})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	source, target = cs[0].Settings(), cs[1].Settings()
	code := m.Run()
	cs.Close()
	os.Exit(code)
}

func testContext(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// readMessages reads a topic completely with a plain sarama consumer, per
// partition in offset order: the harness's view, independent of readTopic.
func readMessages(t *testing.T, s cluster.Settings, topic string) [][]*sarama.ConsumerMessage {
	t.Helper()
	cfg, err := s.Config("demo-test-reader")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Consumer.MaxWaitTime = 20 * time.Millisecond // Close waits for the last fetch
	client, err := sarama.NewClient(s.BootstrapServers, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	consumer, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	parts, err := client.Partitions(topic)
	if err != nil {
		t.Fatal(err)
	}
	out := make([][]*sarama.ConsumerMessage, len(parts))
	for _, p := range parts {
		end, err := client.GetOffset(topic, p, sarama.OffsetNewest)
		if err != nil {
			t.Fatal(err)
		}
		if end == 0 {
			continue
		}
		pc, err := consumer.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			t.Fatal(err)
		}
		deadline := time.After(10 * time.Second)
		for int64(len(out[p])) < end {
			select {
			case m := <-pc.Messages():
				out[p] = append(out[p], m)
			case <-deadline:
				t.Fatalf("%s/%d: read %d of %d records in 10s", topic, p, len(out[p]), end)
			}
		}
		pc.Close()
	}
	return out
}

// copyTopic is the test's own trivial replicator: it takes the source
// records read by readMessages, lets mutate damage the copy, and writes it to dstTopic on target with the same
// partitions, keys, values, headers and timestamps.
func copyTopic(t *testing.T, in [][]*sarama.ConsumerMessage, dstTopic string, mutate func(ps [][]*sarama.ProducerMessage) [][]*sarama.ProducerMessage) {
	t.Helper()
	ps := make([][]*sarama.ProducerMessage, len(in))
	for p, ms := range in {
		for _, m := range ms {
			pm := &sarama.ProducerMessage{
				Topic:     dstTopic,
				Partition: m.Partition,
				Key:       sarama.ByteEncoder(m.Key),
				Timestamp: m.Timestamp,
			}
			if m.Value != nil {
				pm.Value = sarama.ByteEncoder(m.Value)
			}
			for _, h := range m.Headers {
				pm.Headers = append(pm.Headers, *h)
			}
			ps[p] = append(ps[p], pm)
		}
	}
	if mutate != nil {
		ps = mutate(ps)
	}

	cfg, err := target.Config("demo-test-copier")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Producer.Partitioner = sarama.NewManualPartitioner
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	cfg.Net.MaxOpenRequests = 1 // keep order within a partition
	client, err := sarama.NewClient(target.BootstrapServers, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	admin, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.CreateTopic(dstTopic, &sarama.TopicDetail{NumPartitions: int32(len(ps)), ReplicationFactor: -1}, false); err != nil {
		t.Fatal(err)
	}
	producer, err := sarama.NewSyncProducerFromClient(client)
	if err != nil {
		t.Fatal(err)
	}
	defer producer.Close()
	var all []*sarama.ProducerMessage
	for _, ms := range ps {
		for _, m := range ms {
			m.Topic = dstTopic
			all = append(all, m)
		}
	}
	// One batch call: one open request per broker keeps each partition in
	// the order given.
	if err := producer.SendMessages(all); err != nil {
		t.Fatalf("copy to %s: %v", dstTopic, err)
	}
}

const (
	srcTopic    = "orders"
	srcParts    = 3
	srcRecords  = 90
	srcValueLen = 120
)

var produceOnce atomic.Bool

// sourceTopic produces the shared source topic once.
func sourceTopic(t *testing.T) string {
	t.Helper()
	if produceOnce.CompareAndSwap(false, true) {
		res, err := Produce(testContext(t), source, srcTopic, srcParts, srcRecords, srcValueLen)
		if err != nil {
			t.Fatal(err)
		}
		if res.Records != srcRecords {
			t.Fatalf("produced %d records, want %d", res.Records, srcRecords)
		}
	}
	return srcTopic
}

func TestProduceWritesSelfDescribingRecords(t *testing.T) {
	ctx := testContext(t)
	var calls atomic.Int64
	var last Progress
	res, err := Produce(ctx, source, "produce-format", 2, 40, 64,
		WithProgress(time.Millisecond, func(p Progress) { calls.Add(1); last = p }))
	if err != nil {
		t.Fatal(err)
	}
	if res.Records != 40 || res.Bytes == 0 {
		t.Fatalf("result %+v, want 40 records and some bytes", res)
	}
	if calls.Load() == 0 || last.Acked != 40 || last.Total != 40 {
		t.Fatalf("progress: %d calls, last %+v; want a final call with 40/40", calls.Load(), last)
	}

	ps := readMessages(t, source, "produce-format")
	var tombstones, nullHeaders, emptyHeaders, noHeaders int
	for p, ms := range ps {
		if len(ms) != 20 {
			t.Fatalf("partition %d has %d records, want 20 (round-robin)", p, len(ms))
		}
		var prevTS time.Time
		for seq, m := range ms {
			if want := fmt.Sprintf("%d-%d", p, seq); string(m.Key) != want {
				t.Fatalf("key %q at %d/%d, want %q", m.Key, p, m.Offset, want)
			}
			if err := CheckValue(m.Key, m.Value); err != nil {
				t.Fatal(err)
			}
			if m.Value == nil {
				tombstones++
			}
			if len(m.Headers) == 0 {
				noHeaders++
			}
			for _, h := range m.Headers {
				switch {
				case h.Value == nil:
					nullHeaders++
				case len(h.Value) == 0:
					emptyHeaders++
				}
			}
			if !m.Timestamp.After(prevTS) || time.Since(m.Timestamp) < 30*time.Minute {
				t.Fatalf("timestamp %v at %d/%d: want increasing and an hour old", m.Timestamp, p, m.Offset)
			}
			prevTS = m.Timestamp
		}
	}
	// seq 0..19 per partition: tombstones at 9, 19; no headers at 6, 13;
	// null and empty header values at 0, 3, 9, 12, 15, 18 (6 has none).
	if tombstones != 4 || noHeaders != 4 || nullHeaders != 12 || emptyHeaders != 12 {
		t.Fatalf("tombstones %d, records without headers %d, null header values %d, empty header values %d; want 4, 4, 12, 12 (did a null turn into empty on the way?)",
			tombstones, noHeaders, nullHeaders, emptyHeaders)
	}

	// A second run appends keys that continue each partition's sequence.
	if _, err := Produce(ctx, source, "produce-format", 2, 2, 64); err != nil {
		t.Fatal(err)
	}
	ps = readMessages(t, source, "produce-format")
	for p, ms := range ps {
		if got, want := string(ms[len(ms)-1].Key), fmt.Sprintf("%d-20", p); got != want {
			t.Fatalf("appended key %q, want %q", got, want)
		}
	}

	if _, err := Produce(ctx, source, "produce-format", 3, 1, 64); err == nil || !strings.Contains(err.Error(), "partitions") {
		t.Fatalf("producing with another partition count: err = %v, want a partition count error", err)
	}
}

func TestProduceRejectsBadArguments(t *testing.T) {
	ctx := testContext(t)
	for _, tc := range []struct {
		name           string
		topic          string
		parts, n, size int
	}{
		{"no topic", "", 1, 1, 1},
		{"no partitions", "t", 0, 1, 1},
		{"negative count", "t", 1, -1, 1},
		{"too large", "t", 1, 1, 2 << 20},
	} {
		if _, err := Produce(ctx, source, tc.topic, tc.parts, tc.n, tc.size); err == nil {
			t.Errorf("%s: accepted", tc.name)
		}
	}
}

// swap exchanges two records of a partition, the reorder a careless
// parallel copy makes.
func swap(p, i, j int) func([][]*sarama.ProducerMessage) [][]*sarama.ProducerMessage {
	return func(ps [][]*sarama.ProducerMessage) [][]*sarama.ProducerMessage {
		ps[p][i], ps[p][j] = ps[p][j], ps[p][i]
		return ps
	}
}

func each(f func(m *sarama.ProducerMessage)) func([][]*sarama.ProducerMessage) [][]*sarama.ProducerMessage {
	return func(ps [][]*sarama.ProducerMessage) [][]*sarama.ProducerMessage {
		for _, ms := range ps {
			for _, m := range ms {
				f(m)
			}
		}
		return ps
	}
}

func one(p, i int, f func(m *sarama.ProducerMessage)) func([][]*sarama.ProducerMessage) [][]*sarama.ProducerMessage {
	return func(ps [][]*sarama.ProducerMessage) [][]*sarama.ProducerMessage {
		f(ps[p][i])
		return ps
	}
}

func addSourceHeader(alias string) func(m *sarama.ProducerMessage) {
	return func(m *sarama.ProducerMessage) {
		m.Headers = append(m.Headers, sarama.RecordHeader{Key: []byte(sourceHeaderKey), Value: []byte(alias)})
	}
}

func TestVerifyDetectsEveryKindOfDamage(t *testing.T) {
	topic := sourceTopic(t)
	in := readMessages(t, source, topic)
	type counts struct{ missing, duplicated, altered, reordered, unexpected int }
	for _, tc := range []struct {
		name    string
		mutate  func([][]*sarama.ProducerMessage) [][]*sarama.ProducerMessage
		opts    VerifyOptions
		want    counts
		ok      bool
		example string // a key the first problem must name, "" for none
	}{
		{name: "exact copy", ok: true},
		{name: "drops a record", want: counts{missing: 1}, example: "0-3",
			mutate: func(ps [][]*sarama.ProducerMessage) [][]*sarama.ProducerMessage {
				ps[0] = append(ps[0][:3:3], ps[0][4:]...)
				return ps
			}},
		{name: "drops a tombstone", want: counts{missing: 1}, example: "1-9",
			mutate: func(ps [][]*sarama.ProducerMessage) [][]*sarama.ProducerMessage {
				ps[1] = append(ps[1][:9:9], ps[1][10:]...)
				return ps
			}},
		{name: "duplicates a record", want: counts{duplicated: 1}, example: "1-5",
			mutate: func(ps [][]*sarama.ProducerMessage) [][]*sarama.ProducerMessage {
				dup := *ps[1][5]
				ps[1] = append(ps[1][:6:6], append([]*sarama.ProducerMessage{&dup}, ps[1][6:]...)...)
				return ps
			}},
		{name: "redelivers a suffix, at-least-once allowed", want: counts{duplicated: 3}, ok: true,
			opts: VerifyOptions{AllowDuplicates: true},
			mutate: func(ps [][]*sarama.ProducerMessage) [][]*sarama.ProducerMessage {
				n := len(ps[2])
				for _, m := range ps[2][n-3:] {
					c := *m
					ps[2] = append(ps[2], &c)
				}
				return ps
			}},
		{name: "alters a header value", want: counts{altered: 1}, example: "2-0",
			mutate: one(2, 0, func(m *sarama.ProducerMessage) { m.Headers[0].Value = []byte("tampered") })},
		{name: "turns a null header value empty", want: counts{altered: 1}, example: "0-3",
			mutate: one(0, 3, func(m *sarama.ProducerMessage) { m.Headers[2].Value = []byte{} })},
		{name: "drops a duplicate header", want: counts{altered: 1}, example: "1-0",
			mutate: one(1, 0, func(m *sarama.ProducerMessage) { m.Headers = m.Headers[:3] })},
		{name: "reorders headers", want: counts{altered: 1}, example: "1-3",
			mutate: one(1, 3, func(m *sarama.ProducerMessage) { m.Headers[1], m.Headers[3] = m.Headers[3], m.Headers[1] })},
		{name: "turns a tombstone empty", want: counts{altered: 1}, example: "2-9",
			mutate: one(2, 9, func(m *sarama.ProducerMessage) { m.Value = sarama.ByteEncoder([]byte{}) })},
		{name: "alters a value byte", want: counts{altered: 1}, example: "0-1",
			mutate: one(0, 1, func(m *sarama.ProducerMessage) {
				v := append([]byte(nil), m.Value.(sarama.ByteEncoder)...)
				v[len(v)/2] ^= 1
				m.Value = sarama.ByteEncoder(v)
			})},
		{name: "changes a timestamp", want: counts{altered: 1}, example: "1-4",
			mutate: one(1, 4, func(m *sarama.ProducerMessage) { m.Timestamp = m.Timestamp.Add(time.Millisecond) })},
		{name: "re-stamps every record with produce time", want: counts{altered: srcRecords},
			mutate: each(func(m *sarama.ProducerMessage) { m.Timestamp = time.Time{} })},
		{name: "swaps two records in a partition", want: counts{reordered: 1},
			mutate: swap(0, 4, 5)},
		{name: "moves a record to the end of its partition", want: counts{reordered: 1}, example: "2-1",
			mutate: func(ps [][]*sarama.ProducerMessage) [][]*sarama.ProducerMessage {
				m := ps[2][1]
				ps[2] = append(append(ps[2][:1:1], ps[2][2:]...), m)
				return ps
			}},
		{name: "moves a record to another partition", want: counts{altered: 1}, example: "1-2",
			mutate: func(ps [][]*sarama.ProducerMessage) [][]*sarama.ProducerMessage {
				m := ps[1][2]
				m.Partition = 0
				ps[1] = append(ps[1][:2:2], ps[1][3:]...)
				ps[0] = append(ps[0], m)
				return ps
			}},
		{name: "adds a record of its own", want: counts{unexpected: 1}, example: "stray",
			mutate: func(ps [][]*sarama.ProducerMessage) [][]*sarama.ProducerMessage {
				ps[0] = append(ps[0], &sarama.ProducerMessage{Partition: 0, Key: sarama.StringEncoder("stray"), Value: sarama.StringEncoder("x")})
				return ps
			}},
		{name: "source header expected and present", ok: true,
			opts: VerifyOptions{SourceAlias: "A"}, mutate: each(addSourceHeader("A"))},
		{name: "source header ignored", ok: true,
			opts: VerifyOptions{IgnoreSourceHeader: true}, mutate: each(addSourceHeader("whatever"))},
		{name: "source header ignored and absent", ok: true,
			opts: VerifyOptions{IgnoreSourceHeader: true}},
		{name: "source header not expected", want: counts{altered: srcRecords},
			mutate: each(addSourceHeader("A"))},
		{name: "source header names the wrong alias", want: counts{altered: srcRecords},
			opts: VerifyOptions{SourceAlias: "A"}, mutate: each(addSourceHeader("B"))},
		{name: "source header missing", want: counts{altered: srcRecords},
			opts: VerifyOptions{SourceAlias: "A"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dst := "copy-" + strings.NewReplacer(" ", "-", ",", "").Replace(tc.name)
			copyTopic(t, in, dst, tc.mutate)
			r, err := Verify(testContext(t), source, topic, target, dst, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			got := counts{r.Missing, r.Duplicated, r.Altered, r.Reordered, r.Unexpected}
			if got != tc.want || r.OK() != tc.ok {
				t.Fatalf("got %+v OK=%v, want %+v OK=%v\n%s", got, r.OK(), tc.want, tc.ok, printed(r))
			}
			if r.Produced != srcRecords || r.Produced != r.Replicated+r.Altered+r.Missing {
				t.Fatalf("produced %d, replicated %d: every source record must be counted once\n%s", r.Produced, r.Replicated, printed(r))
			}
			if tc.example != "" && (len(r.Problems) == 0 || r.Problems[0].Key != tc.example) {
				t.Fatalf("first problem should name key %s\n%s", tc.example, printed(r))
			}
			if tc.ok != (len(r.Problems) == 0) && tc.want.duplicated == 0 {
				t.Fatalf("problems listed for a good copy, or none for a bad one\n%s", printed(r))
			}
		})
	}
}

func TestVerifyReportsPartitionCountAndMissingTopic(t *testing.T) {
	topic := sourceTopic(t)
	copyTopic(t, readMessages(t, source, topic), "copy-two-partitions", func(ps [][]*sarama.ProducerMessage) [][]*sarama.ProducerMessage {
		return ps[:2]
	})
	r, err := Verify(testContext(t), source, topic, target, "copy-two-partitions", VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if r.OK() || r.TargetPartitions != 2 || r.Missing != srcRecords/srcParts || r.Problems[0].Kind != Partitions {
		t.Fatalf("want a partition-count problem and partition 2 missing\n%s", printed(r))
	}

	if _, err := Verify(testContext(t), source, topic, target, "no-such-topic", VerifyOptions{}); err == nil {
		t.Fatal("verifying against a missing target topic gave no error")
	}
}

func TestVerifyRefusesSourcesWithoutUniqueKeys(t *testing.T) {
	copyTopic(t, readMessages(t, source, sourceTopic(t)), "copy-as-source", nil)
	// Write the copy's records again to the source side under a new name,
	// so the source holds every key twice.
	_, err := Produce(testContext(t), source, "twice", 1, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	cfg, _ := source.Config("demo-test")
	cfg.Producer.Return.Successes = true
	p, err := sarama.NewSyncProducer(source.BootstrapServers, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	for range 2 {
		if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: "twice", Key: sarama.StringEncoder("k")}); err != nil {
			t.Fatal(err)
		}
	}
	_, err = Verify(testContext(t), source, "twice", target, "copy-as-source", VerifyOptions{})
	if err == nil || !strings.Contains(err.Error(), "unique") {
		t.Fatalf("err = %v, want a unique-keys error", err)
	}
}

func TestWaitFor(t *testing.T) {
	ctx := testContext(t)
	if _, err := Produce(ctx, target, "wait", 2, 10, 10); err != nil {
		t.Fatal(err)
	}
	var seen []int64
	have, err := WaitFor(ctx, target, "wait", 10, func(h int64) { seen = append(seen, h) })
	if err != nil || have != 10 || len(seen) == 0 {
		t.Fatalf("WaitFor = %d, %v after %v; want 10", have, err, seen)
	}

	// Long enough for the first count on a starved CPU under -race (a new
	// client, metadata, offset lookups): it must see the 10 there are.
	short, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	have, err = WaitFor(short, target, "wait", 11, nil)
	if !errors.Is(err, context.DeadlineExceeded) || have != 10 {
		t.Fatalf("WaitFor(11) = %d, %v; want 10 and a deadline error", have, err)
	}

	short2, cancel2 := context.WithTimeout(ctx, 500*time.Millisecond)
	defer cancel2()
	if have, err := WaitFor(short2, target, "not-yet", 1, nil); have != 0 || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitFor on a missing topic = %d, %v; want 0 and a deadline error", have, err)
	}
}

func printed(r Report) string {
	var b strings.Builder
	_ = r.Print(&b)
	return b.String()
}

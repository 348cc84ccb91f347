package replicator

import (
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/task"
)

// Which planning rounds start every worker again and which start only the
// partitions they add beside the running workers.
func TestRoundChange(t *testing.T) {
	p := func(topic string, n int32) Partition {
		return Partition{Source: topic, Target: "A." + topic, Partition: n, MaxBytes: 1 << 20, TopicID: topic + "-id"}
	}
	two := []Partition{p("orders", 0), p("orders", 1)}
	bigger := p("orders", 1)
	bigger.MaxBytes = 2 << 20
	recreated := p("orders", 1)
	recreated.TargetTopicID = "new"
	for _, tc := range []struct {
		name          string
		current, next []Partition
		workers       int // started since the full start
		eos           bool
		added         []Partition
		full          bool
	}{
		{name: "the first round", next: two, full: true},
		{name: "an empty first round starts nothing (the task's start offset stays for the first partitions)"},
		{name: "nothing changed, in another order", current: two, next: []Partition{p("orders", 1), p("orders", 0)}, workers: 2},
		{name: "a partition added", current: two, next: append(slices.Clone(two), p("orders", 2)), workers: 2, added: []Partition{p("orders", 2)}},
		{name: "a topic added", current: two, next: append(slices.Clone(two), p("audit", 0), p("audit", 1)), workers: 2,
			added: []Partition{p("audit", 0), p("audit", 1)}},
		{name: "a topic gone", current: two, next: two[:1], workers: 2, full: true},
		{name: "a partition's target accepts larger batches", current: two, next: []Partition{p("orders", 0), bigger}, workers: 2, full: true},
		{name: "a target topic created again", current: two, next: []Partition{p("orders", 0), recreated}, workers: 2, full: true},
		{name: "one added, one gone", current: two, next: []Partition{p("orders", 0), p("orders", 2)}, workers: 2, full: true},
		{name: "exactly once: an addition starts every worker again", current: two, next: append(slices.Clone(two), p("orders", 2)), workers: 2, eos: true, full: true},
		{name: "additions up to twice the task's workers beside the first", current: two, next: append(slices.Clone(two), p("orders", 2)), workers: 5,
			added: []Partition{p("orders", 2)}},
		{name: "past that, every worker again", current: two, next: append(slices.Clone(two), p("orders", 2)), workers: 6, full: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			added, full := roundChange(tc.current, tc.next, tc.workers, Flow{Workers: 2, ExactlyOnce: tc.eos})
			if full != tc.full || !slices.Equal(added, tc.added) {
				t.Fatalf("added %v, full %v; want %v, %v", added, full, tc.added, tc.full)
			}
		})
	}
}

// A partition added to a copied topic is copied by a worker started beside
// the running ones, which go on undisturbed: each old partition's copy is
// written by one producer id from its first record to its last, the new
// one's by another, and every record arrives once, in order.
func TestAddedPartitionStartsBesideTheRunningCopies(t *testing.T) {
	a, b := startFakes(t)
	createTopic(t, a, "orders", 2)
	produceKeys(t, a, "orders", 2, 0, 20)
	f := pushFlow(t, a, b, task.Rules{Direction: task.DirectionPush, Topics: []string{"orders"}, Tasks: 2,
		RenameTopics: true, ReplicationFactor: 1, StartOffset: task.StartEarliest})
	r := runFlow(t, f)
	waitProgress(t, r, 20)

	_, srcAdmin := admin(t, a)
	if err := srcAdmin.CreatePartitions("orders", 3, nil, false); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() error {
		if st := r.Status(); len(st.Partitions) != 3 {
			return fmt.Errorf("%d partitions copied, want 3", len(st.Partitions))
		}
		return nil
	})
	produceKeys(t, a, "orders", 3, 20, 30)
	waitProgress(t, r, 50)
	if st := r.Status(); st.Restarts != 0 {
		t.Fatalf("the flow started again %d times (last error %q)", st.Restarts, st.LastError)
	}
	var pids []int64
	for part, n := range []int{20, 20, 10} { // records 0..19 on two partitions, 20..49 on three
		src, dst := readAll(t, a, "orders", int32(part), n), readAll(t, b, "A.orders", int32(part), n)
		for i := range src {
			if string(src[i].Key) != string(dst[i].Key) {
				t.Fatalf("A.orders-%d offset %d holds %q, the source %q", part, i, dst[i].Key, src[i].Key)
			}
		}
		got := producerIDs(t, b, "A.orders", int32(part))
		if len(got) != 1 || slices.Contains(pids, got[0]) {
			t.Fatalf("A.orders-%d was written by producer ids %v (the others' %v): one each, else its copy started again", part, got, pids)
		}
		pids = append(pids, got[0])
	}
	if n := targetTotal(t, b, "A.orders", 3); n != 50 {
		t.Fatalf("the target holds %d records, want the 50 produced, once", n)
	}
}

// producerIDs is the producer ids that wrote topic-part, each once, in the
// order of their first batch.
func producerIDs(t *testing.T, s cluster.Settings, topic string, part int32) []int64 {
	t.Helper()
	c, _ := admin(t, s)
	var ids []int64
	err := eachBatch(c, topic, part, 0, func(rb *sarama.RecordBatch) {
		if !slices.Contains(ids, rb.ProducerID) {
			ids = append(ids, rb.ProducerID)
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// A worker's clients ask the source for the metadata of the flow's topics
// only: requests for every topic do not grow with the task's workers (the
// planner's alone), however many topics the cluster holds.
func TestWorkersAskMetadataOnlyForTheFlowsTopics(t *testing.T) {
	allTopics := func(tasks int) int64 {
		src, a, b := fakeSourceTo(t, 1, "orders", 4)
		for i := range 50 {
			createTopic(t, a, fmt.Sprintf("unrelated-%d", i), 2)
		}
		var n atomic.Int64
		src.ControlKey(int16(kmsg.Metadata), func(r kmsg.Request) (kmsg.Response, error, bool) {
			src.KeepControl()
			if r.(*kmsg.MetadataRequest).Topics == nil {
				n.Add(1)
			}
			return nil, nil, false
		})
		produceKeys(t, a, "orders", 4, 0, 40)
		f := pushFlow(t, a, b, task.Rules{Direction: task.DirectionPush, Topics: []string{"orders"}, Tasks: tasks,
			ReplicationFactor: 1, StartOffset: task.StartEarliest})
		r := runFlowWith(t, f, Options{RefreshInterval: time.Hour, CommitInterval: 100 * time.Millisecond})
		waitProgress(t, r, 40)
		return n.Load()
	}
	one, four := allTopics(1), allTopics(4)
	t.Logf("metadata requests for every topic: %d with one worker, %d with four", one, four)
	if four != one {
		t.Fatalf("four workers asked the source for every topic's metadata %d times, one worker %d: the workers ask for every topic", four, one)
	}
}

package apitest

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/e2e"
	"github.com/kmirror/kmirror/internal/kafkatest"
)

// The planned switchover of a task on Kafka Connect, through the same
// resource: MirrorMaker 2 copies (renamed topics), its checkpoints are the
// translation. Three groups at different positions on the source (one far
// behind); producers stop, the copy drains, and the switchover waits for
// MM2 to checkpoint each group where it stands, then commits that on the
// target. Consumers that start there read every record they had not read
// on the source, none skipped, and read again no more than the report said.
func TestPlannedSwitchoverOnConnect(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	s, west, east, _ := connectServer(t)
	src, dst := east.Settings(cluster.Plaintext, ""), west.Settings(cluster.Plaintext, "")
	topic := kafkatest.NewTopic(t, east, 3, nil)
	target := "A." + topic
	const n = 900
	if _, err := e2e.Produce(ctx, src, topic, 3, n, 100); err != nil {
		t.Fatal(err)
	}
	groups := map[string]int{topic + "-ahead": 820, topic + "-mid": 450, topic + "-behind": 30}
	read := map[string][]string{}
	for g, k := range groups {
		keys, err := e2e.ConsumeGroup(ctx, src, g, topic, k)
		if err != nil {
			t.Fatal(err)
		}
		read[g] = keys
	}
	name := "sw-connect-" + strings.ToLower(topic[len(topic)-6:])
	spec := map[string]any{
		"name": name, "type": "kafka-replication", "engine": "connect:wc",
		"current": map[string]any{"cluster": "east", "alias": "A"},
		"peer":    map[string]any{"alias": "B", "config_type": "cluster", "cluster": "west"},
		"rules": map[string]any{"direction": "push", "topics": []string{topic}, "tasks": 2, "rename_topics": true,
			"sync_consumer_offsets": true, "start_offset": "earliest", "compression": "none"},
	}
	if code, body := s.call(http.MethodPost, "/api/v1/tasks", spec); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, body)
	}
	if _, err := e2e.WaitFor(ctx, dst, target, n, nil); err != nil {
		t.Fatal(err)
	}
	names := slices.Sorted(func(yield func(string) bool) {
		for g := range groups {
			if !yield(g) {
				return
			}
		}
	})
	if code, body := s.call(http.MethodPost, "/api/v1/tasks/"+name+"/switchover", map[string]any{"groups": names}); code != http.StatusCreated {
		t.Fatalf("start the switchover: %d %v", code, body)
	}
	done := awaitSwitchovers(t, s, []string{name}, 4*time.Minute)[name]
	again := checkReport(t, name, done, groups, false)

	// Consumers move to the target: each reads from its committed offset
	// to the end (a renamed topic, copied at least once: its offsets hold
	// one record each).
	admin, err := west.Admin()
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := dst.Config("switchover-connect-test")
	if err != nil {
		t.Fatal(err)
	}
	client, err := sarama.NewClient(dst.BootstrapServers, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	for _, g := range names {
		if again[g] < 0 {
			t.Errorf("group %s: the report bounds nothing it may read again: %v", g, done["report"])
		}
		held, err := admin.ListConsumerGroupOffsets(g, map[string][]int32{target: {0, 1, 2}})
		if err != nil {
			t.Fatal(err)
		}
		left := 0
		for p := range int32(3) {
			end, err := client.GetOffset(target, p, sarama.OffsetNewest)
			if err != nil {
				t.Fatal(err)
			}
			from := int64(0)
			if b := held.GetBlock(target, p); b != nil && b.Offset >= 0 {
				from = b.Offset
			}
			left += int(end - from)
		}
		keys, err := e2e.ConsumeGroup(ctx, dst, g, target, left)
		if err != nil {
			t.Fatalf("group %s on the target: %v", g, err)
		}
		readAtMostAgain(t, "group "+g+" over A and B", append(read[g], keys...), n, again[g])
		t.Logf("group %s read %d on the source, %d on the target (the report said at most %d again)", g, groups[g], len(keys), again[g])
	}
}

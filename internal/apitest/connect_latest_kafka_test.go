package apitest

import (
	"bytes"
	"context"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/e2e"
	"github.com/kmirror/kmirror/internal/kafkatest"
)

// A task on Kafka Connect with start offset latest copies what is written
// after its creation and nothing before (its connectors seeded with the
// source's ends); a topic created later is copied from its first record,
// what was written before MirrorMaker 2 noticed it included; a
// 2 MiB record is copied as the embedded engine copies it (the connectors'
// producer may send requests up to connectplan.MaxRequestBytes).
func TestLatestAndLargeRecordsOnConnect(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	s, west, east, _ := connectServer(t)
	big := "3145728"
	topic := kafkatest.NewTopic(t, east, 2, map[string]*string{"max.message.bytes": &big})
	src, dst := east.Settings(cluster.Plaintext, ""), west.Settings(cluster.Plaintext, "")
	send := func(topic, prefix string, n int, size int) {
		t.Helper()
		cfg, err := src.Config("latest-test")
		if err != nil {
			t.Fatal(err)
		}
		cfg.Producer.Return.Successes = true
		cfg.Producer.MaxMessageBytes = 3 << 20
		p, err := sarama.NewSyncProducer(src.BootstrapServers, cfg)
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		for i := range n {
			m := &sarama.ProducerMessage{Topic: topic, Key: sarama.StringEncoder(prefix + "-" + itoa(i)), Value: sarama.ByteEncoder(bytes.Repeat([]byte{'x'}, size))}
			if _, _, err := p.SendMessage(m); err != nil {
				t.Fatalf("produce %s %d: %v", prefix, i, err)
			}
		}
	}
	send(topic, "before", 40, 100)

	name := "lt-" + strings.ToLower(topic[len(topic)-8:])
	spec := connectTask(name)
	later := topic + "-later"
	rules := spec["rules"].(map[string]any)
	rules["start_offset"], rules["topics"], rules["topics_regex"] = "latest", nil, regexp.QuoteMeta(topic)+"(-later)?"
	if code, body := s.call(http.MethodPost, "/api/v1/tasks", spec); code != http.StatusCreated {
		t.Fatalf("create with start offset latest: %d %v", code, body)
	}
	t.Cleanup(func() { s.call(http.MethodDelete, "/api/v1/tasks/"+name, nil) })
	send(topic, "after", 20, 100)
	send(topic, "large", 2, 2<<20)
	// A topic created after the task: from its first record, also what
	// was written before MirrorMaker 2 noticed it (it looks every 10 s;
	// the records follow the topic's creation at once).
	admin, err := east.Admin()
	if err != nil {
		t.Fatal(err)
	}
	if err := admin.CreateTopic(later, &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if a, err := east.Admin(); err == nil {
			_ = a.DeleteTopic(later)
		}
	})
	send(later, "later", 10, 100)
	if _, err := e2e.WaitFor(ctx, dst, "A."+later, 10, nil); err != nil {
		t.Fatalf("the topic created after the task: %v", err)
	}
	if _, err := e2e.WaitFor(ctx, dst, "A."+topic, 22, nil); err != nil {
		_, st := s.call(http.MethodGet, "/api/v1/tasks/"+name, nil)
		t.Fatalf("the records written after the creation: %v\nstatus: %v", err, st)
	}
	time.Sleep(3 * time.Second) // anything more would show now
	records := readRecords(t, dst, "A."+topic)
	if len(records) != 22 {
		t.Fatalf("the target holds %d records, want the 22 written after the creation", len(records))
	}
	for _, m := range records {
		k := string(m.Key)
		if strings.HasPrefix(k, "before-") {
			t.Fatalf("record %s, written before the task with start offset latest, was copied", k)
		}
		if strings.HasPrefix(k, "large-") && len(m.Value) != 2<<20 {
			t.Fatalf("record %s arrived with %d bytes, want %d", k, len(m.Value), 2<<20)
		}
	}
}

// readRecords is every record of a topic, partition by partition, up to
// each partition's end, or until nothing more comes for 3 s (a transaction
// marker may end it).
func readRecords(t *testing.T, s cluster.Settings, topic string) []*sarama.ConsumerMessage {
	t.Helper()
	cfg, err := s.Config("read-records")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Consumer.Fetch.Default = 4 << 20
	client, err := sarama.NewClient(s.BootstrapServers, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	c, err := sarama.NewConsumerFromClient(client)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	parts, err := client.Partitions(topic)
	if err != nil {
		t.Fatal(err)
	}
	var out []*sarama.ConsumerMessage
	for _, p := range parts {
		end, err := client.GetOffset(topic, p, sarama.OffsetNewest)
		if err != nil {
			t.Fatal(err)
		}
		if end == 0 {
			continue
		}
		pc, err := c.ConsumePartition(topic, p, sarama.OffsetOldest)
		if err != nil {
			t.Fatal(err)
		}
		for done := false; !done; {
			select {
			case m := <-pc.Messages():
				out = append(out, m)
				done = m.Offset+1 >= end
			case <-time.After(3 * time.Second):
				done = true
			}
		}
		pc.Close()
	}
	return out
}

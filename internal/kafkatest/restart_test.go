package kafkatest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/kafkatest"
)

// A restarted broker keeps its address, cluster id and records, and a
// producer made before the restart carries on once it reconnects: after a
// clean stop and after SIGKILL. Tests in this package run one at a time,
// and Restart returns only when every partition has a leader again, so the
// shared cluster is whole for the tests after this one.
func TestRestartKeepsAddressIDAndRecords(t *testing.T) {
	c := kafkatest.Shared(t, 1)
	addr, id := c.Bootstrap(cluster.Plaintext), c.ID()
	topic := kafkatest.NewTopic(t, c, 1, nil)
	s := c.Settings(cluster.Plaintext, "")

	cfg, err := s.Config("kafkatest-restart")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	// The first send after a restart finds its connection dead; retries
	// with a metadata refresh reconnect it.
	cfg.Producer.Retry.Max = 20
	cfg.Producer.Retry.Backoff = 250 * time.Millisecond
	p, err := sarama.NewSyncProducer(s.BootstrapServers, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	sent := 0
	send := func(n int) {
		t.Helper()
		for range n {
			if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: 0,
				Value: sarama.StringEncoder(fmt.Sprintf("v%d", sent))}); err != nil {
				t.Fatalf("send record %d: %v", sent, err)
			}
			sent++
		}
	}
	send(10)

	for _, kill := range []bool{false, true} {
		if kill {
			if err := c.Kill(); err != nil {
				t.Fatal(err)
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
		began := time.Now()
		err := c.Restart(ctx)
		cancel()
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("restart (killed first: %v) took %s", kill, time.Since(began).Round(time.Millisecond))
		if c.Bootstrap(cluster.Plaintext) != addr || c.ID() != id {
			t.Fatalf("restarted as %s id %s, want %s id %s", c.Bootstrap(cluster.Plaintext), c.ID(), addr, id)
		}
		send(10)
	}

	got := readValues(t, s, topic, sent)
	for i, v := range got {
		if v != fmt.Sprintf("v%d", i) {
			t.Fatalf("record %d is %q after the restarts, want v%d", i, v, i)
		}
	}
	// Every listener serves again, SASL and TLS included, and the harness's
	// admin works (its old connections died with the broker).
	roundTrip(t, c.Settings(cluster.SASLSSL, cluster.MechanismSCRAMSHA512), kafkatest.NewTopic(t, c, 1, nil), 5)
	a, err := c.Admin()
	if err != nil {
		t.Fatal(err)
	}
	topics, err := a.ListTopics()
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := topics[topic]; !ok {
		t.Fatalf("topic %s is gone after the restarts", topic)
	}
}

// readValues reads n values from partition 0 of topic.
func readValues(t *testing.T, s cluster.Settings, topic string, n int) []string {
	t.Helper()
	cfg, err := s.Config("kafkatest-restart-read")
	if err != nil {
		t.Fatal(err)
	}
	consumer, err := sarama.NewConsumer(s.BootstrapServers, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer consumer.Close()
	pc, err := consumer.ConsumePartition(topic, 0, sarama.OffsetOldest)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	var got []string
	timeout := time.After(30 * time.Second)
	for len(got) < n {
		select {
		case m := <-pc.Messages():
			got = append(got, string(m.Value))
		case err := <-pc.Errors():
			t.Fatalf("consume %s: %v", topic, err)
		case <-timeout:
			t.Fatalf("read %d of %d records from %s in 30s", len(got), n, topic)
		}
	}
	return got
}

package kafkatest_test

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/kafkatest"
)

// rf3 is the 3-broker cluster of this package's tests, started by the
// first test that needs it.
func rf3(t *testing.T) *kafkatest.Cluster {
	return kafkatest.Lazy(t, "rf3", kafkatest.Brokers(3), kafkatest.MinInsyncReplicas(2),
		kafkatest.BrokerProps(map[string]string{"offsets.retention.minutes": "1"}))
}

// The options reach every broker: the replication factors follow the
// broker count, min.insync.replicas and an override are set.
func TestMultiBrokerConfig(t *testing.T) {
	c := rf3(t)
	if got := c.BrokerIDs(); !slices.Equal(got, []int32{1, 2, 3}) {
		t.Fatalf("broker ids %v, want [1 2 3]", got)
	}
	if got := len(c.BootstrapServers(cluster.Plaintext)); got != 3 {
		t.Fatalf("%d bootstrap servers, want 3", got)
	}
	a, err := c.Admin()
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range c.BrokerIDs() {
		results, err := a.DescribeConfigs([]*sarama.ConfigResource{{Type: sarama.BrokerResource, Name: fmt.Sprint(id)}}, sarama.DescribeConfigsOptions{})
		if err == nil && len(results) == 1 && results[0].ErrorCode != sarama.ErrNoError {
			err = results[0].ErrorCode
		}
		if err != nil || len(results) != 1 {
			t.Fatalf("describe broker %d: %d results, %v", id, len(results), err)
		}
		got := map[string]string{}
		for _, e := range results[0].Configs {
			got[e.Name] = e.Value
		}
		for k, want := range map[string]string{
			"min.insync.replicas":              "2",
			"default.replication.factor":       "3",
			"offsets.topic.replication.factor": "3",
			"offsets.retention.minutes":        "1",
			"log.retention.ms":                 "-1",
		} {
			if got[k] != want {
				t.Errorf("broker %d: %s=%q, want %q", id, k, got[k], want)
			}
		}
	}
	// Each broker serves on its own address, SASL with TLS included.
	for _, id := range c.BrokerIDs() {
		s := c.Settings(cluster.SASLSSL, cluster.MechanismSCRAMSHA256)
		s.BootstrapServers = []string{c.BrokerBootstrap(id, cluster.SASLSSL)}
		cfg, err := s.Config("kafkatest-broker")
		if err != nil {
			t.Fatal(err)
		}
		client, err := sarama.NewClient(s.BootstrapServers, cfg)
		if err != nil {
			t.Fatalf("broker %d on SASL_SSL: %v", id, err)
		}
		if n := len(client.Brokers()); n != 3 {
			t.Errorf("broker %d lists %d brokers, want 3", id, n)
		}
		client.Close()
	}
}

// Killing the leader of an RF 3 partition with min.insync.replicas=2 moves
// leadership to another broker, acks=all writes go on with two in-sync
// replicas, and the restarted broker catches up into the ISR; nothing
// acknowledged is lost.
func TestMultiBrokerLeaderKilled(t *testing.T) {
	c := rf3(t)
	topic := kafkatest.NewTopic(t, c, 1, nil)
	isr, err := c.InSyncReplicas(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(isr, []int32{1, 2, 3}) {
		t.Fatalf("ISR of a new topic %v, want [1 2 3]", isr)
	}

	s := c.Settings(cluster.Plaintext, "")
	cfg, err := s.Config("kafkatest-multi")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	// Sends while the leader is dead but not yet fenced fail with
	// NOT_LEADER or time out; retries with a metadata refresh find the
	// new leader.
	cfg.Producer.Retry.Max = 60
	cfg.Producer.Retry.Backoff = 500 * time.Millisecond
	p, err := sarama.NewSyncProducer(s.BootstrapServers, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	sent := 0
	send := func(n int) {
		t.Helper()
		for range n {
			if _, _, err := p.SendMessage(&sarama.ProducerMessage{Topic: topic,
				Value: sarama.StringEncoder(fmt.Sprintf("v%d", sent))}); err != nil {
				t.Fatalf("send record %d: %v", sent, err)
			}
			sent++
		}
	}
	send(10)

	old, err := c.Leader(topic, 0)
	if err != nil {
		t.Fatal(err)
	}
	began := time.Now()
	if err := c.KillBroker(old); err != nil {
		t.Fatal(err)
	}
	leader := poll(t, 90*time.Second, "a new leader", func() (string, bool) {
		l, err := c.Leader(topic, 0)
		return fmt.Sprintf("leader %d (%v)", l, err), err == nil && l != old
	})
	t.Logf("killed leader %d; %s after %s", old, leader, time.Since(began).Round(time.Millisecond))
	poll(t, 60*time.Second, "the killed broker out of the ISR", func() (string, bool) {
		isr, err := c.InSyncReplicas(topic, 0)
		return fmt.Sprintf("ISR %v (%v)", isr, err), err == nil && len(isr) == 2 && !slices.Contains(isr, old)
	})
	send(10) // acks=all with 2 in-sync replicas = min.insync.replicas

	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	began = time.Now()
	if err := c.RestartBroker(ctx, old); err != nil {
		t.Fatal(err)
	}
	t.Logf("restart of broker %d after kill -9 took %s", old, time.Since(began).Round(time.Millisecond))
	poll(t, 90*time.Second, "the restarted broker back in the ISR", func() (string, bool) {
		isr, err := c.InSyncReplicas(topic, 0)
		return fmt.Sprintf("ISR %v (%v)", isr, err), err == nil && slices.Equal(isr, []int32{1, 2, 3})
	})
	send(10)

	got := readValues(t, s, topic, sent)
	for i, v := range got {
		if v != fmt.Sprintf("v%d", i) {
			t.Fatalf("record %d is %q, want v%d", i, v, i)
		}
	}
}

// poll calls f every 200 ms until it reports done, and fails the test with
// f's last state after timeout. It returns that state.
func poll(t *testing.T, timeout time.Duration, what string, f func() (state string, done bool)) string {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		state, done := f()
		if done {
			return state
		}
		if time.Now().After(deadline) {
			t.Fatalf("no %s after %s: %s", what, timeout, state)
		}
		time.Sleep(200 * time.Millisecond) // polling interval, not a wait for an event
	}
}

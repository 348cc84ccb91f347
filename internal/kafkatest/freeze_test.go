package kafkatest_test

import (
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/kafkatest"
)

// A frozen broker keeps its port open (a connection is accepted) but
// answers nothing: a request ends in the client's read timeout, not a
// refused connection as after a kill. Thawed, it serves from where it
// stopped, its records intact. Tests in this package run one at a time.
func TestFreezeBrokerAnswersNothingUntilThawed(t *testing.T) {
	c := kafkatest.Shared(t, 1)
	topic := kafkatest.NewTopic(t, c, 1, nil)
	s := c.Settings(cluster.Plaintext, "")
	send := func(v string) error {
		cfg, err := s.Config("kafkatest-freeze")
		if err != nil {
			t.Fatal(err)
		}
		cfg.Net.ReadTimeout = 2 * time.Second
		cfg.Metadata.Retry.Max = 0
		cfg.Producer.Retry.Max = 0
		cfg.Producer.Return.Successes = true
		p, err := sarama.NewSyncProducer(s.BootstrapServers, cfg)
		if err != nil {
			return err
		}
		defer p.Close()
		_, _, err = p.SendMessage(&sarama.ProducerMessage{Topic: topic, Partition: 0, Value: sarama.StringEncoder(v)})
		return err
	}
	if err := send("v0"); err != nil {
		t.Fatal(err)
	}

	if err := c.FreezeBroker(1); err != nil {
		t.Fatal(err)
	}
	thawed := false
	t.Cleanup(func() {
		if !thawed {
			_ = c.ThawBroker(1)
		}
	})
	addr := c.BrokerBootstrap(1, cluster.Plaintext)
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatalf("dial the frozen broker: %v; want the connection accepted (the kernel holds the port)", err)
	}
	conn.Close()
	cfg, err := s.Config("kafkatest-freeze-meta")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Net.ReadTimeout = 2 * time.Second
	b := sarama.NewBroker(addr)
	if err := b.Open(cfg); err != nil {
		t.Fatal(err)
	}
	_, err = b.GetMetadata(&sarama.MetadataRequest{Version: 1, Topics: []string{topic}})
	_ = b.Close()
	var ne net.Error
	if !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("metadata from the frozen broker: %v; want a read timeout", err)
	}
	t.Logf("frozen: a connection is accepted, a metadata request ends in %v", err)

	if err := c.ThawBroker(1); err != nil {
		t.Fatal(err)
	}
	thawed = true
	if err := send("v1"); err != nil {
		t.Fatalf("send after the thaw: %v", err)
	}
	got := readValues(t, s, topic, 2)
	if fmt.Sprint(got) != "[v0 v1]" {
		t.Fatalf("records after the thaw %v, want [v0 v1]", got)
	}
}

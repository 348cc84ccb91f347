package embedded_test

import (
	"testing"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/embedded"
)

func TestStartAllServesSaramaOverTCP(t *testing.T) {
	cs, err := embedded.StartAll([]string{"A", "B"}, embedded.Brokers(3))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cs.Close)

	seen := map[string]bool{}
	for _, s := range cs.Settings() {
		if len(s.BootstrapServers) != 3 {
			t.Fatalf("%s: %d bootstrap servers, want 3", s.Name, len(s.BootstrapServers))
		}
		for _, a := range s.BootstrapServers {
			if seen[a] {
				t.Fatalf("address %s used twice: clusters must not share listeners", a)
			}
			seen[a] = true
		}
		cfg, err := s.Config("embedded-test")
		if err != nil {
			t.Fatal(err)
		}
		client, err := sarama.NewClient(s.BootstrapServers, cfg)
		if err != nil {
			t.Fatalf("%s: sarama cannot connect: %v", s.Name, err)
		}
		if n := len(client.Brokers()); n != 3 {
			t.Errorf("%s: metadata lists %d brokers, want 3", s.Name, n)
		}
		client.Close()
	}
}

func TestOptionsAreValidated(t *testing.T) {
	if _, err := embedded.Start("x", embedded.Brokers(0)); err == nil {
		t.Fatal("Brokers(0) accepted")
	}
	if _, err := embedded.StartAll([]string{"x", "x"}); err == nil {
		t.Fatal("duplicate names accepted")
	}
}

func TestCloseTwice(t *testing.T) {
	c, err := embedded.Start("once")
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
	c.Close()
}

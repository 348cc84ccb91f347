package replicator

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/IBM/sarama"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kmirror/kmirror/internal/cluster"
)

// A call to the transaction coordinator gives up when its context ends,
// even while the broker has not answered: sarama's calls take no context,
// and a frozen broker's coordinator lookup waited out its read timeouts
// (over two minutes in CI) while a produce adding its partition held the
// transaction's gate, and with it the commit and the flow's stop.
func TestCoordinatorCallGivesUpWhenItsContextEnds(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	var held atomic.Bool
	release := make(chan struct{})
	c.ControlKey(kmsg.FindCoordinator.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		held.Store(true)
		c.SleepControl(func() { <-release })
		return nil, nil, false
	})
	s := cluster.Settings{Name: "B", BootstrapServers: c.ListenAddrs(), SecurityProtocol: cluster.Plaintext}
	cfg, err := s.Config("test-coordinator")
	if err != nil {
		t.Fatal(err)
	}
	client, err := sarama.NewClient(s.BootstrapServers, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	t.Cleanup(func() { close(release) }) // first: the held lookup ends before the client closes

	tx := &transaction{client: client, id: "kmirror.test.B-A.txn-0"}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		done <- tx.coordinatorCall(ctx, 20*time.Millisecond, func(*sarama.Broker) error { return nil })
	}()
	waitFor(t, func() error {
		if !held.Load() {
			return errors.New("the coordinator lookup has not reached the broker yet")
		}
		return nil
	})
	cancel()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("coordinatorCall after its context ended: %v, want context.Canceled", err)
		}
	case <-time.After(5 * time.Second): // the broker's answer would take the read timeout (30 s)
		t.Fatal("coordinatorCall still waits for the broker 5 s after its context ended")
	}
}

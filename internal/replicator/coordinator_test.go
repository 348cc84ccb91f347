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

// fakeTxnClient is a sarama client of a one-broker kfake cluster whose
// FindCoordinator requests, once hold is true, wait until the test ends.
func fakeTxnClient(t *testing.T, hold *atomic.Bool, held *atomic.Bool) sarama.Client {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	release := make(chan struct{})
	c.ControlKey(kmsg.FindCoordinator.Int16(), func(kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		if hold.Load() {
			held.Store(true)
			c.SleepControl(func() { <-release })
		}
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
	t.Cleanup(func() { close(release) }) // first: a held lookup ends before the client closes
	return client
}

// A call to the transaction coordinator gives up a bounded while after its
// context ends, even while the broker has not answered: sarama's calls take
// no context, and a frozen broker's coordinator lookup waited out its read
// timeouts (over two minutes in CI) while a produce adding its partition
// held the transaction's gate, and with it the commit and the flow's stop.
// An answer that comes within the wait still counts (a stop does not lose
// the commit it interrupts), and an ended context still gets one attempt.
func TestCoordinatorCallAfterItsContextEnds(t *testing.T) {
	cases := []struct {
		name     string
		frozen   bool          // the coordinator lookup is never answered
		canceled bool          // the context has ended before the call
		work     time.Duration // how long f takes
		want     error
	}{
		{name: "frozen coordinator: given up", frozen: true, want: context.Canceled},
		{name: "an answer under way is waited for", work: 500 * time.Millisecond},
		{name: "an ended context gets one attempt", canceled: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var hold, held atomic.Bool
			hold.Store(c.frozen)
			tx := &transaction{client: fakeTxnClient(t, &hold, &held), id: "kmirror.test.B-A.txn-0"}
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if c.canceled {
				cancel()
			}
			var calls atomic.Int32
			working := make(chan struct{}, 1)
			done := make(chan error, 1)
			// The wait for an answer under way: short where the broker is
			// frozen (the bound under test), long where it answers, so a
			// starved CPU (-race) does not turn an answer into a give-up.
			answerWait := 20 * time.Second
			if c.frozen {
				answerWait = time.Second
			}
			go func() {
				done <- tx.coordinatorCall(ctx, 20*time.Millisecond, answerWait, func(*sarama.Broker) error {
					calls.Add(1)
					working <- struct{}{}
					time.Sleep(c.work)
					return nil
				})
			}()
			if c.frozen {
				waitFor(t, func() error {
					if !held.Load() {
						return errors.New("the coordinator lookup has not reached the broker yet")
					}
					return nil
				})
			} else if !c.canceled {
				<-working // f is under way
			}
			cancel()
			select {
			case err := <-done:
				if !errors.Is(err, c.want) || (c.want == nil && err != nil) {
					t.Fatalf("coordinatorCall after its context ended: %v, want %v", err, c.want)
				}
			case <-time.After(25 * time.Second): // a frozen broker's answer would take its read timeout (30 s)
				t.Fatal("coordinatorCall still waits for the broker 25 s after its context ended")
			}
			if want := int32(1); !c.frozen && calls.Load() != want {
				t.Fatalf("f called %d times, want %d", calls.Load(), want)
			}
		})
	}
}

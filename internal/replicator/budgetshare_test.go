package replicator

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/e2e"
	"github.com/kmirror/kmirror/internal/task"
)

// What a partition holds counts against the pool only past its guarantee;
// the pool's total follows every move exactly, and a partition is told when
// an acknowledgement takes it under its guarantee.
func TestBudgetChargesThePoolPastTheGuarantee(t *testing.T) {
	b := NewBudget(8 << 20) // held limit 3 MiB: 1.5 MiB guaranteed, 1.5 MiB pool
	if got := b.poolLimit(); got != 3<<19 {
		t.Fatalf("pool %d, want %d", got, 3<<19)
	}
	const g = 1 << 20
	var p1, p2 atomic.Int64
	steps := []struct {
		name       string
		held       *atomic.Int64
		n          int64
		over       int64
		below      bool
		spent      bool
		p1Paused   bool // p1 holds past its guarantee while the pool is full
		p2MayFetch bool
	}{
		{"under the guarantee", &p1, 512 << 10, 0, false, false, false, true},
		{"past it", &p1, 1 << 20, 512 << 10, false, false, false, true},
		{"the pool full", &p1, 1 << 20, 3 << 19, false, true, true, true},
		{"another partition within its own part", &p2, 768 << 10, 3 << 19, false, true, true, true},
		{"an acknowledgement frees pool room", &p1, -(1 << 20), 512 << 10, false, false, false, true},
		{"back under the guarantee", &p1, -(1 << 20), 0, true, false, false, true},
		{"the other past its part, pool full again", &p2, 7 << 18, 3 << 19, false, true, false, false},
	}
	for _, s := range steps {
		below := b.charge(s.held, g, s.n)
		if got := b.over.Load(); got != s.over || below != s.below {
			t.Fatalf("%s: pool %d, under again %v; want %d, %v", s.name, got, below, s.over, s.below)
		}
		if b.spent() != s.spent {
			t.Fatalf("%s: spent %v, want %v", s.name, b.spent(), s.spent)
		}
		if paused := p1.Load() >= g && b.spent(); paused != s.p1Paused {
			t.Fatalf("%s: the first partition paused %v, want %v", s.name, paused, s.p1Paused)
		}
		if may := !(p2.Load() >= g && b.spent()); may != s.p2MayFetch {
			t.Fatalf("%s: the second partition may fetch %v, want %v", s.name, may, s.p2MayFetch)
		}
	}
	room := b.roomFreed()
	b.charge(&p2, g, -p2.Load())
	select {
	case <-room:
	case <-time.After(10 * time.Second):
		t.Fatal("partitions paused for the pool were not woken when it had room")
	}
	b.charge(&p1, g, -p1.Load())
	if b.held.Load() != 0 || b.over.Load() != 0 {
		t.Fatalf("held %d, pool %d after everything was given back", b.held.Load(), b.over.Load())
	}
}

// A task whose target stopped answering fills its partitions' parts and the
// pool; another task of the same process goes on copying within its own
// part, every record, in order. Before the pool, the stalled task's held
// bytes paused every partition of the process until its target answered.
func TestAStalledTaskDoesNotPauseTheOthers(t *testing.T) {
	a, healthy := embeddedCluster(t, "A"), embeddedCluster(t, "B")
	frozen, stuckTarget := fakeTarget(t, "C")

	release := make(chan struct{})
	hold := holdProduces(frozen, true, release, "big")
	var once sync.Once
	letGo := func() { once.Do(func() { close(release) }) }
	t.Cleanup(letGo) // before the flows stop

	const n, size = 3000, 1024 // each topic 3 MB, twice the budget's held limit
	produceN(t, a, "big", 1, n, size)
	produceN(t, a, "small", 1, n, size)
	budget := NewBudget(4 << 20)
	flowOf := func(name, topic string, target cluster.Settings) Flow {
		tk := task.Task{Name: name, Current: task.Current{Cluster: "A", Alias: "A"},
			Peer: task.Peer{Alias: target.Name, ConfigType: task.PeerByAddress},
			Rules: task.Rules{Direction: task.DirectionPush, Topics: []string{topic}, Tasks: 1,
				ReplicationFactor: 1, StartOffset: task.StartEarliest, Compression: "none"}}
		flows, err := FlowsOf(tk, a, target)
		if err != nil {
			t.Fatal(err)
		}
		return flows[0]
	}
	opts := Options{RefreshInterval: 500 * time.Millisecond, CommitInterval: 100 * time.Millisecond, Budget: budget}
	stuck := runFlowWith(t, flowOf("stuck", "big", stuckTarget), opts)
	waitFor(t, func() error {
		if !hold.ever.Load() || !budget.spent() {
			return fmt.Errorf("the stalled task's target held a write: %v; pool spent: %v (%d of %d bytes past guarantees)",
				hold.ever.Load(), budget.spent(), budget.over.Load(), budget.poolLimit())
		}
		return nil
	})
	t.Logf("the stalled task holds %d bytes, %d of them in the pool", budget.held.Load(), budget.over.Load())

	runFlowWith(t, flowOf("flowing", "small", healthy), opts)
	verifyCopy(t, a, "small", healthy, "small", n, e2e.VerifyOptions{})
	if st := stuck.Status(); st.Records >= n {
		t.Fatalf("the stalled task copied %d records: its target did not hold them", st.Records)
	}
}

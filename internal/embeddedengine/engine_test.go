package embeddedengine_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/e2e"
	"github.com/kmirror/kmirror/internal/embedded"
	"github.com/kmirror/kmirror/internal/embeddedengine"
	"github.com/kmirror/kmirror/internal/replicator"
	"github.com/kmirror/kmirror/internal/task"
)

// The engine's lifecycle on in-process clusters: start, status, refuse a
// second start, stop gracefully (progress kept: a restart copies nothing
// twice), close.
func TestEngineLifecycle(t *testing.T) {
	cs, err := embedded.StartAll([]string{"east", "west"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	east, west := cs[0].Settings(), cs[1].Settings()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if _, err := e2e.Produce(ctx, east, "orders", 2, 500, 50); err != nil {
		t.Fatal(err)
	}
	tk := task.Task{Name: "life", Current: task.Current{Cluster: "east", Alias: "A"},
		Peer:  task.Peer{Alias: "B", ConfigType: task.PeerByCluster, Cluster: "west"},
		Rules: task.Rules{Direction: task.DirectionPush, Topics: []string{"orders"}}}
	e := embeddedengine.New(replicator.Options{RefreshInterval: 500 * time.Millisecond, CommitInterval: 100 * time.Millisecond}, nil)
	defer e.Close()

	if err := e.Start(tk, east, west); err != nil {
		t.Fatal(err)
	}
	if err := e.Start(tk, east, west); err == nil {
		t.Fatal("a running task started twice")
	}
	if _, err := e2e.WaitFor(ctx, west, "orders", 500, nil); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() error {
		st, ok := e.Status("life")
		if !ok || st.State != task.StateRunning || len(st.Flows) != 1 || st.Flows[0].Records != 500 {
			return fmt.Errorf("status %+v", st)
		}
		return nil
	})
	if names := e.Names(); len(names) != 1 || names[0] != "life" {
		t.Fatalf("names %v", names)
	}

	e.Stop("life")
	if e.Running("life") {
		t.Fatal("still running after Stop")
	}
	if st, ok := e.Status("life"); ok || st.State != task.StateStopped {
		t.Fatalf("status after stop %+v %v", st, ok)
	}
	// Started again: it resumes from committed progress and copies only
	// what is new.
	if _, err := e2e.Produce(ctx, east, "orders", 2, 100, 50); err != nil {
		t.Fatal(err)
	}
	if err := e.Start(tk, east, west); err != nil {
		t.Fatal(err)
	}
	if _, err := e2e.WaitFor(ctx, west, "orders", 600, nil); err != nil {
		t.Fatal(err)
	}
	rep, err := e2e.Verify(ctx, east, "orders", west, "orders", e2e.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("after stop and start: %s", rep.String())
	}
}

func TestStartRefusesABadTask(t *testing.T) {
	e := embeddedengine.New(replicator.Options{}, nil)
	defer e.Close()
	tk := task.Task{Name: "bad", Rules: task.Rules{Direction: "sideways", Topics: []string{"x"}}}
	if err := e.Start(tk, east(), east()); err == nil {
		t.Fatal("a task with an unknown direction started")
	}
}

func waitFor(t *testing.T, check func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatal(err)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func east() cluster.Settings {
	return cluster.Settings{Name: "east", BootstrapServers: []string{"127.0.0.1:1"}}
}

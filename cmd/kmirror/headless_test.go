package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/e2e"
	"github.com/kmirror/kmirror/internal/embedded"
	"github.com/kmirror/kmirror/internal/engine"
	"github.com/kmirror/kmirror/internal/task"
)

func writeSpec(t *testing.T, spec engine.Spec) string {
	t.Helper()
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "spec.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// run -f copies, stops on cancel (SIGTERM) with progress committed, and a
// second run continues where the first stopped: nothing twice, nothing lost.
func TestRunSpecStopsWithProgressSaved(t *testing.T) {
	cs, err := embedded.StartAll([]string{"east", "west"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	east, west := cs[0].Settings(), cs[1].Settings()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := e2e.Produce(ctx, east, "orders", 3, 2000, 100); err != nil {
		t.Fatal(err)
	}
	tk := task.Task{Name: "spec-task", Type: task.TypeKafkaReplication,
		Current: task.Current{Cluster: "east", Alias: "A"},
		Peer:    task.Peer{Alias: "B", ConfigType: task.PeerByCluster, Cluster: "west"},
		Rules:   task.Rules{Tasks: task.DefaultTasks, ReplicationFactor: 1, Direction: task.DirectionPush, Topics: []string{"orders"}, RenameTopics: true}}
	path := writeSpec(t, engine.Spec{Clusters: []cluster.Settings{east, west}, Tasks: []task.Task{tk}})

	runOnce := func(until int64) {
		t.Helper()
		rctx, stop := context.WithCancel(ctx)
		var out, errOut syncBuffer
		done := make(chan error, 1)
		go func() {
			done <- run(rctx, []string{"run", "-f", path}, func(string) string { return "" }, &out, &errOut)
		}()
		if _, err := e2e.WaitFor(ctx, west, "A.orders", until, nil); err != nil {
			t.Fatalf("%v\n%s", err, errOut.String())
		}
		stop() // what SIGTERM does
		if err := <-done; err != nil {
			t.Fatalf("run: %v\n%s", err, errOut.String())
		}
		if !strings.Contains(out.String(), "progress committed") {
			t.Fatalf("no clean stop reported:\n%s", out.String())
		}
	}
	runOnce(2000)
	if _, err := e2e.Produce(ctx, east, "orders", 3, 1000, 100); err != nil {
		t.Fatal(err)
	}
	runOnce(3000)
	rep, err := e2e.Verify(ctx, east, "orders", west, "A.orders", e2e.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("after two runs: %s", rep.String())
	}
}

func TestRunSpecRefusesAnInvalidTask(t *testing.T) {
	tk := task.Task{Name: "x", Current: task.Current{Cluster: "east", Alias: "A"},
		Peer:  task.Peer{Alias: "A", ConfigType: task.PeerByAddress, Address: []string{"127.0.0.1:1"}},
		Rules: task.Rules{Direction: "sideways", Topics: []string{"orders"}}}
	path := writeSpec(t, engine.Spec{Clusters: []cluster.Settings{{Name: "east", BootstrapServers: []string{"127.0.0.1:9092"}}}, Tasks: []task.Task{tk}})
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"run", "-f", path}, func(string) string { return "" }, &out, &errOut)
	if err == nil {
		t.Fatal("invalid spec accepted")
	}
	for _, want := range []string{"tasks[0] (x).name", "peer.alias", "rules.direction"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %s: %v", want, err)
		}
	}
}

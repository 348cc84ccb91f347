package service_test

import (
	"context"
	"strings"
	"testing"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/internal/service/servicetest"
	"github.com/kmirror/kmirror/internal/task"
)

func taskService(t *testing.T, dir string, runner *servicetest.Runner) *service.Service {
	t.Helper()
	_, db, box := servicetest.OpenStore(t, dir)
	kafka := &servicetest.Kafka{Clusters: map[string]servicetest.FakeCluster{
		"127.0.0.1:9092": {Brokers: 1}, "127.0.0.1:9192": {Brokers: 1}, "10.1.1.1:9092": {Brokers: 1},
	}}
	svc, err := service.New(service.Deps{Clusters: db, Users: db, Secrets: box, TaskStore: db, Runner: runner, Kafka: kafka})
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

// After a restart of kmirror (a new service on the same data directory),
// StartTasks starts exactly the tasks whose desired state is running, with
// their peer passwords opened.
func TestStartTasksResumesRunningTasksOnly(t *testing.T) {
	// Who acts comes with the context, as the web layer sets it.
	ctx := service.WithActor(context.Background(), service.Actor{Name: "tester", Role: service.RoleAdmin})
	dir := t.TempDir()
	svc := taskService(t, dir, servicetest.NewRunner())
	for _, c := range []cluster.Settings{
		{Name: "east", BootstrapServers: []string{"127.0.0.1:9092"}},
		{Name: "west", BootstrapServers: []string{"127.0.0.1:9192"}},
	} {
		if _, err := svc.AddCluster(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	mk := func(name, topic string, byAddress bool) task.Task {
		tk := task.Task{Name: name, Current: task.Current{Cluster: "east", Alias: "A"},
			Peer:  task.Peer{Alias: "B", ConfigType: task.PeerByCluster, Cluster: "west"},
			Rules: task.Rules{Tasks: task.DefaultTasks, ReplicationFactor: 1, Direction: task.DirectionPush, Topics: []string{topic}, RenameTopics: true}}
		if byAddress {
			tk.Peer = task.Peer{Alias: "C", ConfigType: task.PeerByAddress, Address: []string{"10.1.1.1:9092"},
				SecurityProtocol: cluster.SASLPlaintext, SASLMechanism: cluster.MechanismPlain, Username: "u", Password: "pw-123"}
		}
		return tk
	}
	for _, tk := range []task.Task{mk("keeps-running", "a", true), mk("stays-paused", "b", false)} {
		if _, err := svc.CreateTask(ctx, tk); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.PauseTask(ctx, "stays-paused"); err != nil {
		t.Fatal(err)
	}

	runner := servicetest.NewRunner()
	svc = taskService(t, dir, runner)
	if err := svc.StartTasks(ctx); err != nil {
		t.Fatal(err)
	}
	if got, ok := runner.Started("keeps-running"); !ok || got.Peer.Password != "pw-123" {
		t.Fatalf("keeps-running not started with its password (started %v)", ok)
	}
	if _, ok := runner.Started("stays-paused"); ok {
		t.Fatal("a paused task was started")
	}
	info, err := svc.Task(ctx, "stays-paused")
	if err != nil || info.Status.State != task.StatePaused || info.LastAction.Action != task.ActionPause || info.LastAction.By != "tester" {
		t.Fatalf("stays-paused after restart: %+v %v", info, err)
	}
	info, err = svc.Task(ctx, "keeps-running")
	if err != nil || info.Status.State != task.StateRunning || !info.Peer.PasswordSet || info.Peer.Password != "" {
		t.Fatalf("keeps-running after restart: %+v %v", info, err)
	}
}

// A task that cannot start is stored and shows FAILED with the reason.
func TestTaskThatCannotStartShowsWhy(t *testing.T) {
	ctx := context.Background()
	runner := servicetest.NewRunner()
	runner.FailStart = errString("flow A->B: boom")
	svc := taskService(t, t.TempDir(), runner)
	for _, c := range []cluster.Settings{
		{Name: "east", BootstrapServers: []string{"127.0.0.1:9092"}},
		{Name: "west", BootstrapServers: []string{"127.0.0.1:9192"}},
	} {
		if _, err := svc.AddCluster(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	info, err := svc.CreateTask(ctx, task.Task{Name: "fails", Current: task.Current{Cluster: "east", Alias: "A"},
		Peer:  task.Peer{Alias: "B", ConfigType: task.PeerByCluster, Cluster: "west"},
		Rules: task.Rules{Tasks: task.DefaultTasks, ReplicationFactor: 1, Direction: task.DirectionPush, Topics: []string{"x"}}})
	if err != nil {
		t.Fatal(err)
	}
	if info.Status.State != task.StateFailed || info.Status.Reason != "could not start: flow A->B: boom" {
		t.Fatalf("status %+v", info.Status)
	}
}

type errString string

func (e errString) Error() string { return string(e) }

// TestReplicationFactorAgainstBrokers: the dry run and CreateTask refuse a
// replication factor above a target's broker count with the same problems,
// and look only at the clusters the task writes to.
func TestReplicationFactorAgainstBrokers(t *testing.T) {
	tests := []struct {
		name       string
		direction  task.Direction
		rf         int
		east, west int // broker counts
		want       []string
	}{
		{"push fits", task.DirectionPush, 2, 1, 2, nil},
		{"push above the peer", task.DirectionPush, 3, 5, 2, []string{`the 2 broker(s) of peer cluster "west"`}},
		{"pull above the current", task.DirectionPull, 2, 1, 5, []string{`the 1 broker(s) of current cluster "east"`}},
		{"bidirectional above both", task.DirectionBidirectional, 3, 1, 2, []string{`the 1 broker(s) of current cluster "east"`, `the 2 broker(s) of peer cluster "west"`}},
		{"target's default", task.DirectionPush, task.DefaultReplicationFactor, 1, 1, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ctx := context.Background()
			svc := dryRunService(t, servicetest.FakeCluster{Brokers: tc.east, Topics: []string{"orders"}}, servicetest.FakeCluster{Brokers: tc.west, Topics: []string{"orders"}})
			tk := dryRunTask(tc.direction, "orders")
			tk.Rules.ReplicationFactor = tc.rf
			res, err := svc.ValidateTaskDryRun(ctx, tk)
			if err != nil {
				t.Fatal(err)
			}
			_, err = svc.CreateTask(ctx, tk)
			for what, got := range map[string]service.Problems{"dry run": res.Problems, "create": service.AsError(err).Problems} {
				rf := got.For("rules.replication_factor")
				if len(rf) != len(tc.want) || len(got) != len(tc.want) {
					t.Fatalf("%s: problems %v, want %d about the replication factor", what, got, len(tc.want))
				}
				for i, w := range tc.want {
					if !strings.Contains(rf[i], w) {
						t.Errorf("%s: %q, want it to name %s", what, rf[i], w)
					}
				}
			}
		})
	}
}

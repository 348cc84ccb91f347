package service_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/internal/service/servicetest"
	"github.com/kmirror/kmirror/internal/store"
	"github.com/kmirror/kmirror/internal/task"
)

// connectRunner stands for the Kafka Connect engine: it remembers removals
// and can refuse a task as its Checker.
type connectRunner struct {
	*servicetest.Runner
	removed []string
	refuse  error
}

func (c *connectRunner) Remove(t task.Task) error {
	c.removed = append(c.removed, t.Name)
	c.Stop(t.Name)
	return nil
}

func (c *connectRunner) Check(task.Task, cluster.Settings, cluster.Settings) error { return c.refuse }

// connectService is a service keeping tasks and switchovers, with
// instances east and west and Connect cluster c1 (writing to west)
// registered; tasks run on embedded, or on onConnect for c1.
func connectService(t *testing.T, embedded *servicetest.Runner, onConnect *connectRunner) (*service.Service, *store.DB) {
	t.Helper()
	ctx := context.Background()
	_, db, box := servicetest.OpenStore(t, "")
	kafka := &servicetest.Kafka{Clusters: map[string]servicetest.FakeCluster{"127.0.0.1:9092": {Brokers: 1}, "127.0.0.1:9192": {Brokers: 1}}}
	svc, err := service.New(service.Deps{Clusters: db, Users: db, Secrets: box, TaskStore: db, Runner: embedded, Kafka: kafka,
		ConnectClusters: db, ConnectRunner: onConnect, Switchovers: db})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []cluster.Settings{{Name: "east", BootstrapServers: []string{"127.0.0.1:9092"}}, {Name: "west", BootstrapServers: []string{"127.0.0.1:9192"}}} {
		if _, err := svc.AddCluster(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.AddConnectCluster(ctx, service.ConnectClusterSettings{Name: "c1", URLs: []string{"http://127.0.0.1:8083"}, KafkaCluster: "west"}); err != nil {
		t.Fatal(err)
	}
	return svc, db
}

// A task runs on the engine it names, else on its instance's Smart Connect
// default; actions reach that engine, and deleting a Connect task removes
// its connectors.
func TestTasksRunOnTheirEngine(t *testing.T) {
	ctx := context.Background()
	embedded := servicetest.NewRunner()
	onConnect := &connectRunner{Runner: servicetest.NewRunner()}
	svc, _ := connectService(t, embedded, onConnect)
	mk := func(name, topic, engine string) task.Task {
		return task.Task{Name: name, Current: task.Current{Cluster: "east", Alias: "A"}, Engine: engine,
			Peer:  task.Peer{Alias: "B", ConfigType: task.PeerByCluster, Cluster: "west"},
			Rules: task.Rules{Tasks: 1, ReplicationFactor: 1, Direction: task.DirectionPush, Topics: []string{topic}, RenameTopics: true}}
	}
	info, err := svc.CreateTask(ctx, mk("inproc", "a", ""))
	if err != nil || info.Engine != "embedded" {
		t.Fatalf("default engine: %+v, %v", info.Engine, err)
	}
	if _, ok := embedded.Started("inproc"); !ok {
		t.Fatal("an embedded task was not started in-process")
	}
	info, err = svc.CreateTask(ctx, mk("on-connect", "b", "connect:c1"))
	if err != nil || info.Engine != "connect:c1" || info.Status.State != task.StateRunning {
		t.Fatalf("on Connect: %+v, %v", info, err)
	}
	if _, ok := onConnect.Started("on-connect"); !ok {
		t.Fatal("a Connect task was not started on the Connect engine")
	}
	if _, ok := embedded.Started("on-connect"); ok {
		t.Fatal("a Connect task also ran in-process")
	}

	// The instance's Smart Connect default applies to tasks naming no engine.
	if _, err := svc.SetSmartConnect(ctx, "east", service.SmartConnect{Enabled: true, Engine: "connect:c1"}); err != nil {
		t.Fatal(err)
	}
	if info, err := svc.CreateTask(ctx, mk("by-default", "c", "")); err != nil || info.Engine != "connect:c1" {
		t.Fatalf("instance default: %+v, %v", info.Engine, err)
	}

	// Refusals are field problems, and nothing is stored.
	for _, c := range []struct {
		name, engine, field string
		refuse              error
	}{
		{"unknown Connect cluster", "connect:nope", "engine", nil},
		{"bad engine", "mm2", "engine", nil},
		{"the engine cannot honour an option", "connect:c1", "engine", errors.New("rules.topic_mappings: MirrorMaker 2 cannot rename single topics")},
	} {
		onConnect.refuse = c.refuse
		_, err := svc.CreateTask(ctx, mk("refused", "d", c.engine))
		if !service.IsCode(err, service.CodeInvalidTask) || len(service.AsError(err).Problems.For(c.field)) != 1 {
			t.Errorf("%s: %v, want a problem on %s", c.name, err, c.field)
		}
	}
	onConnect.refuse = nil
	if _, err := svc.Task(ctx, "refused"); !service.IsCode(err, service.CodeNotFound) {
		t.Errorf("a refused task was stored: %v", err)
	}
	if _, err := svc.SetSmartConnect(ctx, "east", service.SmartConnect{Enabled: false, Engine: "embedded"}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.CreateTask(ctx, mk("disabled", "e", "")); !service.IsCode(err, service.CodeInvalidTask) ||
		len(service.AsError(err).Problems.For("current.cluster")) != 1 {
		t.Errorf("Smart Connect disabled: %v, want a problem on current.cluster", err)
	}

	// Actions reach the task's engine.
	if _, err := svc.PauseTask(ctx, "on-connect"); err != nil {
		t.Fatal(err)
	}
	if onConnect.Stops["on-connect"] != 1 || embedded.Stops["on-connect"] != 0 {
		t.Errorf("pause: stops %v / %v", onConnect.Stops, embedded.Stops)
	}
	if _, err := svc.ResumeTask(ctx, "on-connect"); err != nil {
		t.Fatal(err)
	}
	if onConnect.Starts["on-connect"] != 2 {
		t.Errorf("resume: starts %v", onConnect.Starts)
	}
	if err := svc.DeleteTask(ctx, "on-connect"); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(onConnect.removed, []string{"on-connect"}) {
		t.Errorf("delete removed %v from Connect", onConnect.removed)
	}
	if err := svc.DeleteTask(ctx, "inproc"); err != nil || embedded.Stops["inproc"] != 1 {
		t.Errorf("delete in-process: %v, stops %v", err, embedded.Stops)
	}
}

// The dry run asks the engine as a create would: an option the engine
// refuses is a problem on its field, and a Connect cluster without a
// config provider is a warning when the task carries a Kafka password.
func TestDryRunAsksTheEngine(t *testing.T) {
	ctx := context.Background()
	_, db, box := servicetest.OpenStore(t, "")
	kafka := &servicetest.Kafka{Clusters: map[string]servicetest.FakeCluster{"127.0.0.1:9092": {Brokers: 1}, "127.0.0.1:9192": {Brokers: 1}}}
	onConnect := &connectRunner{Runner: servicetest.NewRunner(),
		refuse: task.FieldErrors{{Field: "rules.start_offset", Message: "not on Connect"}}}
	svc, err := service.New(service.Deps{Clusters: db, Users: db, Secrets: box, TaskStore: db, Runner: servicetest.NewRunner(), Kafka: kafka,
		ConnectClusters: db, ConnectRunner: onConnect})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.AddCluster(ctx, cluster.Settings{Name: "east", BootstrapServers: []string{"127.0.0.1:9092"}}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.AddConnectCluster(ctx, service.ConnectClusterSettings{Name: "c1", URLs: []string{"http://127.0.0.1:8083"}, KafkaCluster: "east"}); err != nil {
		t.Fatal(err)
	}
	tk := task.Task{Name: "dry-run", Type: task.TypeKafkaReplication, Current: task.Current{Cluster: "east", Alias: "A"}, Engine: task.ConnectEngine("c1"),
		Peer: task.Peer{Alias: "B", ConfigType: task.PeerByAddress, Address: []string{"127.0.0.1:9192"}, SecurityProtocol: cluster.SASLPlaintext,
			SASLMechanism: cluster.MechanismPlain, Username: "u", Password: "secret-pw"},
		Rules: task.Rules{Tasks: 1, ReplicationFactor: 1, Direction: task.DirectionPull, Topics: []string{"a"}, RenameTopics: true,
			StartOffset: task.StartEarliest, Compression: "none"}}
	res, err := svc.ValidateTaskDryRun(ctx, tk)
	if err != nil {
		t.Fatal(err)
	}
	if res.OK || len(res.Problems.For("rules.start_offset")) != 1 {
		t.Fatalf("problems %v, want the engine's refusal on rules.start_offset", res.Problems)
	}
	if !slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, "config topic") }) {
		t.Fatalf("warnings %v, want one about passwords in Connect's config topic", res.Warnings)
	}
	// Without a password nothing to warn about.
	onConnect.refuse = nil
	tk.Peer.SecurityProtocol, tk.Peer.SASLMechanism, tk.Peer.Username, tk.Peer.Password = cluster.Plaintext, "", "", ""
	res, err = svc.ValidateTaskDryRun(ctx, tk)
	if err != nil || !res.OK || slices.ContainsFunc(res.Warnings, func(w string) bool { return strings.Contains(w, "config topic") }) {
		t.Fatalf("a task without passwords: %+v, %v", res, err)
	}
}

// A move hands the progress over, records the engine and starts the task
// on the new engine; a failed handover leaves it running where it was.
func TestMoveTaskHandsProgressOver(t *testing.T) {
	ctx := context.Background()
	embedded := servicetest.NewRunner()
	onConnect := &connectRunner{Runner: servicetest.NewRunner()}
	svc, _ := connectService(t, embedded, onConnect)
	tk := task.Task{Name: "mover", Current: task.Current{Cluster: "east", Alias: "A"},
		Peer:  task.Peer{Alias: "B", ConfigType: task.PeerByCluster, Cluster: "west"},
		Rules: task.Rules{Tasks: 1, ReplicationFactor: 1, Direction: task.DirectionPush, Topics: []string{"orders"}, RenameTopics: true}}
	if _, err := svc.CreateTask(ctx, tk); err != nil {
		t.Fatal(err)
	}
	progress := map[string][]task.Position{"A->B": {{Topic: "orders", Partition: 0, Next: 42}}}
	embedded.SetProgress("mover", progress)

	// A failed handover: back on embedded, running, the step named.
	onConnect.FailSeed = errors.New("connect says no")
	_, err := svc.MoveTask(ctx, "mover", task.ConnectEngine("c1"))
	if !service.IsCode(err, service.CodeMoveFailed) || !strings.Contains(err.Error(), "hand its progress over") {
		t.Fatalf("failed move: %v", err)
	}
	if info, _ := svc.Task(ctx, "mover"); info.Engine != task.EngineEmbedded || info.Status.State != task.StateRunning {
		t.Fatalf("after a failed move: engine %s, state %s; want running on embedded", info.Engine, info.Status.State)
	}

	onConnect.FailSeed = nil
	info, err := svc.MoveTask(ctx, "mover", task.ConnectEngine("c1"))
	if err != nil || info.Engine != task.ConnectEngine("c1") || info.Status.State != task.StateRunning {
		t.Fatalf("move: %+v, %v", info, err)
	}
	if _, running := embedded.Started("mover"); running {
		t.Fatal("still running on the embedded engine")
	}
	got, _ := onConnect.Progress(tk, cluster.Settings{}, cluster.Settings{})
	if len(got["A->B"]) != 1 || got["A->B"][0].Next != 42 {
		t.Fatalf("progress on Connect %v, want the embedded engine's", got)
	}
	// Moving to where it runs is refused by field.
	_, err = svc.MoveTask(ctx, "mover", task.ConnectEngine("c1"))
	var se *service.Error
	if !errors.As(err, &se) || len(se.Problems.For("engine")) == 0 {
		t.Fatalf("move to the same engine: %v", err)
	}
	// And back: the Connect deployment goes.
	if _, err := svc.MoveTask(ctx, "mover", task.EngineEmbedded); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(onConnect.removed, "mover") {
		t.Fatal("the Connect deployment was not removed after moving back")
	}
}

// A failover reaches the engine the task runs on: a task on Kafka Connect
// fails over there (from MM2's checkpoints), an embedded one in-process.
func TestFailoverReachesTheTaskEngine(t *testing.T) {
	ctx := context.Background()
	embedded := servicetest.NewRunner()
	onConnect := &connectRunner{Runner: servicetest.NewRunner()}
	svc, _ := connectService(t, embedded, onConnect)
	for _, c := range []struct{ name, topic, engine string }{{"fo-connect", "a", "connect:c1"}, {"fo-embedded", "b", "embedded"}} {
		tk := task.Task{Name: c.name, Current: task.Current{Cluster: "east", Alias: "A"}, Engine: c.engine,
			Peer:  task.Peer{Alias: "B", ConfigType: task.PeerByCluster, Cluster: "west"},
			Rules: task.Rules{Tasks: 1, ReplicationFactor: 1, Direction: task.DirectionPush, Topics: []string{c.topic}, RenameTopics: true, SyncConsumerOffsets: true}}
		if _, err := svc.CreateTask(ctx, tk); err != nil {
			t.Fatal(err)
		}
		// The fakes answer only for the tasks they run: an answer says
		// which engine was asked.
		res, err := svc.Failover(ctx, c.name, "billing")
		if err != nil || len(res.Results) != 1 || res.Results[0].Group != "billing" {
			t.Errorf("%s: %+v, %v", c.name, res, err)
		}
	}
	// A task that is not running on its engine says so.
	if _, err := svc.PauseTask(ctx, "fo-connect"); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Failover(ctx, "fo-connect", "billing"); err == nil || !strings.Contains(err.Error(), "resume it first") {
		t.Errorf("failover of a paused Connect task: %v", err)
	}
}

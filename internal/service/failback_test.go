package service_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/internal/service/servicetest"
	"github.com/kmirror/kmirror/internal/store"
	"github.com/kmirror/kmirror/internal/switchover"
	"github.com/kmirror/kmirror/internal/task"
)

// A task on Kafka Connect gets its way back (its engine refusing what it
// cannot run, nothing stored then); a way home that is done ends the way
// back even when kmirror stopped before ending it: the next start runs the
// forward flow alone, skipping what the way back wrote.
func TestWayBackOnConnectAndAWayHomeEndedAtTheNextStart(t *testing.T) {
	ctx := context.Background()
	onConnect := &connectRunner{Runner: servicetest.NewRunner()}
	svc, db := connectService(t, servicetest.NewRunner(), onConnect)
	if _, err := svc.CreateTask(ctx, task.Task{Name: "wayback-1", Current: task.Current{Cluster: "east", Alias: "A"}, Engine: "connect:c1",
		Peer:  task.Peer{Alias: "B", ConfigType: task.PeerByCluster, Cluster: "west"},
		Rules: task.Rules{Tasks: 1, ReplicationFactor: 1, Direction: task.DirectionPush, Topics: []string{"orders"}, SyncConsumerOffsets: true}}); err != nil {
		t.Fatal(err)
	}
	done := func(direction string, sourceEnd, targetEnd int64) switchover.Switchover {
		t.Helper()
		sw := switchover.New("wayback-1", switchover.Request{Mode: switchover.Planned, Groups: switchover.Groups{Names: []string{"g"}}, Direction: direction}, "alice", time.Now().UTC())
		id, err := db.CreateSwitchover(ctx, sw)
		if err != nil {
			t.Fatal(err)
		}
		sw.ID, sw.State = id, switchover.Done
		sw.Report.Points = []switchover.Point{{Topic: "orders", Partition: 0, TargetTopic: "orders", SourceEnd: sourceEnd, TargetEnd: targetEnd}}
		if err := db.UpdateSwitchover(ctx, sw); err != nil {
			t.Fatal(err)
		}
		return sw
	}
	done("A->B", 100, 90)

	// What the Connect cluster cannot run is refused, and nothing stored.
	onConnect.refuse = task.FieldErrors{{Field: "rules.rename_topics", Message: "MirrorMaker 2 cannot give the names back"}}
	_, err := svc.PrepareFailback(ctx, "wayback-1")
	if !service.IsCode(err, service.CodeInvalidRequest) || len(service.AsError(err).Problems.For("rules.rename_topics")) != 1 {
		t.Fatalf("a way back the engine refuses: %v", err)
	}
	if _, err := db.PreparedFailback(ctx, "wayback-1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused way back was stored: %v", err)
	}
	onConnect.refuse = nil
	if _, err := svc.PrepareFailback(ctx, "wayback-1"); err != nil {
		t.Fatal(err)
	}
	if started, _ := onConnect.Started("wayback-1"); started.Failback == nil || started.Failback.Points["orders/0"] != (task.SwitchPoint{SourceEnd: 100, TargetEnd: 90}) {
		t.Fatalf("started with way back %+v, want the switchover's point", started.Failback)
	}

	// Its engine runs the way back: no move meanwhile.
	if _, err := svc.MoveTask(ctx, "wayback-1", "embedded"); !service.IsCode(err, service.CodeInvalidTask) || len(service.AsError(err).Problems.For("engine")) != 1 {
		t.Fatalf("a move while the way back runs: %v", err)
	}

	// The way home is done; kmirror stopped before it ended the way back.
	done("B->A", 130, 140)
	if _, err := svc.PauseTask(ctx, "wayback-1"); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.ResumeTask(ctx, "wayback-1"); err != nil {
		t.Fatal(err)
	}
	started, _ := onConnect.Started("wayback-1")
	if started.Failback != nil || len(started.Returns) != 1 || started.Returns[0].Points["orders/0"] != (task.ReturnPoint{From: 100, To: 140, PeerFrom: 90, PeerTo: 130}) {
		t.Fatalf("started after the way home with way back %+v and returns %+v, want the forward flow alone past what the way back wrote", started.Failback, started.Returns)
	}
	if _, err := db.PreparedFailback(ctx, "wayback-1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("the way back is still prepared: %v", err)
	}
}

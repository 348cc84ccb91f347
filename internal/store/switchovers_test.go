package store_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/store"
	"github.com/kmirror/kmirror/internal/switchover"
)

// One open switchover per task; it survives a reopen; the newest is read
// back; it goes with its task.
func TestSwitchoversOnePerTaskSurviveReopenAndGoWithTheTask(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db := open(t, dir)
	addClusters(t, db, "east", "west")
	if err := db.CreateTask(ctx, storedTask("t1", "east", "west"), nil); err != nil {
		t.Fatal(err)
	}
	now := time.Unix(1_800_000_000, 0).UTC()
	req := switchover.Request{Mode: switchover.Planned, Groups: switchover.Groups{Names: []string{"g1"}}, Direction: "A->B"}
	sw := switchover.New("t1", req, "alice", now)
	id, err := db.CreateSwitchover(ctx, sw)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.CreateSwitchover(ctx, sw); !errors.Is(err, store.ErrExists) {
		t.Fatalf("second open switchover: %v, want ErrExists", err)
	}
	if _, err := db.CreateSwitchover(ctx, switchover.New("nope", req, "", now)); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("switchover of an unknown task: %v, want ErrNotFound", err)
	}
	sw.ID, sw.State, sw.Steps[0].State, sw.Steps[0].Message = id, switchover.Waiting, switchover.Waiting, "stop g1"
	if err := db.UpdateSwitchover(ctx, sw); err != nil {
		t.Fatal(err)
	}
	db.Close()

	db = open(t, dir)
	open, err := db.OpenSwitchovers(ctx)
	if err != nil || len(open) != 1 || open[0].ID != id || open[0].Steps[0].Message != "stop g1" || open[0].Groups.Names[0] != "g1" {
		t.Fatalf("open after reopen: %v %+v", err, open)
	}
	sw.State = switchover.Failed
	if err := db.UpdateSwitchover(ctx, sw); err != nil {
		t.Fatal(err)
	}
	next := switchover.New("t1", req, "bob", now.Add(time.Minute))
	id2, err := db.CreateSwitchover(ctx, next)
	if err != nil {
		t.Fatalf("a new switchover once the first ended: %v", err)
	}
	latest, err := db.LatestSwitchover(ctx, "t1")
	if err != nil || latest.ID != id2 || latest.CreatedBy != "bob" {
		t.Fatalf("latest: %v %+v", err, latest)
	}
	if _, err := db.PreparedFailback(ctx, "t1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("prepared failback before one was: %v", err)
	}
	sw.Failback = &switchover.Failback{State: switchover.FailbackPrepared}
	if err := db.UpdateSwitchover(ctx, sw); err != nil {
		t.Fatal(err)
	}
	if fb, err := db.PreparedFailback(ctx, "t1"); err != nil || fb.ID != id {
		t.Fatalf("prepared failback: %v %+v", err, fb)
	}
	if went, err := db.WentHome(ctx, "t1"); err != nil || len(went) != 0 {
		t.Fatalf("went home before the way home: %v %+v", err, went)
	}
	sw.Failback.State, sw.Failback.Home = switchover.FailbackHome, id2
	sw.Failback.HomePoints = []switchover.Point{{Topic: "orders", Partition: 1, TargetTopic: "orders", SourceEnd: 7, TargetEnd: 9}}
	if err := db.UpdateSwitchover(ctx, sw); err != nil {
		t.Fatal(err)
	}
	if went, err := db.WentHome(ctx, "t1"); err != nil || len(went) != 1 || went[0].ID != id || went[0].Failback.HomePoints[0].TargetEnd != 9 {
		t.Fatalf("went home: %v %+v", err, went)
	}
	if _, err := db.PreparedFailback(ctx, "t1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("prepared failback once home: %v", err)
	}
	if err := db.DeleteTask(ctx, "t1"); err != nil {
		t.Fatal(err)
	}
	if _, err := db.LatestSwitchover(ctx, "t1"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("switchover after its task was deleted: %v", err)
	}
}

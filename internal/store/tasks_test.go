package store_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/store"
	"github.com/kmirror/kmirror/internal/task"
)

func storedTask(name, current, peer string) store.Task {
	return store.Task{
		Spec: task.Task{Name: name, Type: task.TypeKafkaReplication,
			Current: task.Current{Cluster: current, Alias: "A"},
			Peer:    task.Peer{Alias: "B", ConfigType: task.PeerByCluster, Cluster: peer},
			Rules:   task.Rules{Direction: task.DirectionPush, Topics: []string{"orders"}, Tasks: 2}},
		DesiredState: task.DesiredRunning, LastActionBy: "alice",
	}
}

func addClusters(t *testing.T, db *store.DB, names ...string) {
	t.Helper()
	for _, n := range names {
		if err := db.CreateCluster(context.Background(), store.Cluster{Name: n, BootstrapServers: []string{"h:9092"}, SecurityProtocol: "PLAINTEXT"}); err != nil {
			t.Fatal(err)
		}
	}
}

func TestTasksSurviveReopenWithDesiredState(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := store.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	addClusters(t, db, "east", "west")
	byAddr := storedTask("by-address", "east", "")
	byAddr.Spec.Peer = task.Peer{Alias: "B", ConfigType: task.PeerByAddress, Address: []string{"x:9092"},
		SecurityProtocol: "SASL_PLAINTEXT", SASLMechanism: "PLAIN", Username: "u", Password: "must-not-be-stored"}
	byAddr.PeerPasswordCiphertext = []byte{9, 9, 9}
	for _, tk := range []store.Task{storedTask("orders-dr", "east", "west"), byAddr} {
		if err := db.CreateTask(ctx, tk, nil); err != nil {
			t.Fatal(err)
		}
	}
	at := time.Unix(1_800_000_000, 0).UTC()
	if err := db.SetTaskState(ctx, "orders-dr", task.DesiredPaused, task.ActionPause, "bob", at); err != nil {
		t.Fatal(err)
	}
	if err := db.SetTaskError(ctx, "by-address", "peer unreachable"); err != nil {
		t.Fatal(err)
	}
	db.Close()

	db = open(t, dir)
	list, err := db.ListTasks(ctx)
	if err != nil || len(list) != 2 {
		t.Fatalf("list after reopen: %v %+v", err, list)
	}
	got, err := db.Task(ctx, "orders-dr")
	if err != nil {
		t.Fatal(err)
	}
	if got.DesiredState != task.DesiredPaused || got.LastAction != task.ActionPause || got.LastActionBy != "bob" ||
		!got.LastActionAt.Equal(at) || got.Spec.Peer.Cluster != "west" || got.Spec.Rules.Topics[0] != "orders" || got.CreatedAt.IsZero() {
		t.Fatalf("orders-dr after reopen: %+v", got)
	}
	got, err = db.Task(ctx, "by-address")
	if err != nil {
		t.Fatal(err)
	}
	if got.DesiredState != task.DesiredRunning || got.Spec.Peer.Password != "" || string(got.PeerPasswordCiphertext) != "\x09\x09\x09" ||
		got.LastError != "peer unreachable" || got.Spec.Peer.Username != "u" {
		t.Fatalf("by-address after reopen: %+v", got)
	}
	if n, err := db.CountTasks(ctx, "east"); err != nil || n != 2 {
		t.Fatalf("count east: %d %v", n, err)
	}
	if names, err := db.TasksUsingCluster(ctx, "west"); err != nil || len(names) != 1 || names[0] != "orders-dr" {
		t.Fatalf("tasks using west: %v %v", names, err)
	}
}

func TestTaskErrors(t *testing.T) {
	ctx := context.Background()
	db := open(t, t.TempDir())
	addClusters(t, db, "east", "west")
	if err := db.CreateTask(ctx, storedTask("t-one", "east", "west"), nil); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateTask(ctx, storedTask("t-one", "east", "west"), nil); !errors.Is(err, store.ErrExists) {
		t.Fatalf("duplicate name: %v", err)
	}
	if err := db.CreateTask(ctx, storedTask("t-two", "nowhere", "west"), nil); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("unknown current cluster: %v", err)
	}
	refused := errors.New("refused by check")
	if err := db.CreateTask(ctx, storedTask("t-three", "east", "west"), func([]store.Task) error { return refused }); !errors.Is(err, refused) {
		t.Fatalf("check error: %v", err)
	}
	if _, err := db.Task(ctx, "t-three"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("a refused task was stored: %v", err)
	}
	if err := db.DeleteTask(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("delete unknown: %v", err)
	}
	if err := db.SetTaskState(ctx, "nope", task.DesiredPaused, task.ActionPause, "", time.Now()); !errors.Is(err, store.ErrNotFound) {
		t.Fatalf("pause unknown: %v", err)
	}
	// A cluster in use cannot be removed, on either side.
	if err := db.DeleteCluster(ctx, "west"); err == nil {
		t.Fatal("removed a cluster a task uses as its peer")
	}
	if err := db.DeleteTask(ctx, "t-one"); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteCluster(ctx, "west"); err != nil {
		t.Fatalf("remove a cluster no task uses: %v", err)
	}
}

// The check sees every committed task: of many concurrent creates under a
// limit of 3 per cluster, exactly 3 pass.
func TestCreateTaskCheckIsSerialized(t *testing.T) {
	ctx := context.Background()
	db := open(t, t.TempDir())
	addClusters(t, db, "east", "west")
	const limit, tries = 3, 12
	var wg sync.WaitGroup
	errs := make([]error, tries)
	for i := range tries {
		wg.Go(func() {
			errs[i] = db.CreateTask(ctx, storedTask(fmt.Sprintf("task-%02d", i), "east", "west"), func(others []store.Task) error {
				n := 0
				for _, o := range others {
					if o.Spec.Current.Cluster == "east" {
						n++
					}
				}
				// Widen the window a racing create would slip through.
				time.Sleep(5 * time.Millisecond)
				if n >= limit {
					return errors.New("limit reached")
				}
				return nil
			})
		})
	}
	wg.Wait()
	ok := 0
	for _, err := range errs {
		if err == nil {
			ok++
		} else if err.Error() != "limit reached" {
			t.Fatalf("unexpected error: %v", err)
		}
	}
	if n, _ := db.CountTasks(ctx, "east"); ok != limit || n != limit {
		t.Fatalf("%d creates passed and %d are stored, want %d", ok, n, limit)
	}
}

// A write waits for the process's other writes however long they take,
// bounded only by its own context: a create that holds the write lock
// past SQLite's busy timeout (5 s) does not fail a second writer with
// "database is locked", and a writer whose context ends stops waiting.
func TestWritesQueueBehindALongWrite(t *testing.T) {
	if testing.Short() {
		t.Skip("holds a write for 6 s")
	}
	t.Parallel()
	ctx := context.Background()
	db := open(t, t.TempDir())
	addClusters(t, db, "east", "west")
	holding := make(chan struct{})
	held := make(chan error, 1)
	go func() {
		held <- db.CreateTask(ctx, storedTask("slow", "east", "west"), func([]store.Task) error {
			close(holding)
			time.Sleep(6 * time.Second) // past the busy timeout
			return nil
		})
	}()
	<-holding
	short, cancel := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancel()
	gaveUp := make(chan error, 1)
	go func() {
		gaveUp <- db.CreateCluster(short, store.Cluster{Name: "north", BootstrapServers: []string{"h:9092"}, SecurityProtocol: "PLAINTEXT"})
	}()
	if err := db.CreateCluster(ctx, store.Cluster{Name: "south", BootstrapServers: []string{"h:9092"}, SecurityProtocol: "PLAINTEXT"}); err != nil {
		t.Errorf("a write queued behind a 6 s write: %v", err)
	}
	if err := <-gaveUp; !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("a write whose context ended while it waited: %v, want the context's error", err)
	}
	if err := <-held; err != nil {
		t.Fatalf("the long write: %v", err)
	}
	if _, err := db.Cluster(ctx, "north"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("the write given up was stored: %v", err)
	}
}

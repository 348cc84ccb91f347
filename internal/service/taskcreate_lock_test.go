package service_test

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/internal/service/servicetest"
	"github.com/kmirror/kmirror/internal/store"
	"github.com/kmirror/kmirror/internal/task"
)

// lockSpy marks when the store's write transaction runs the service's
// check, and can store another task just before it (a concurrent create).
type lockSpy struct {
	store.Tasks
	inLock *atomic.Bool
	before func()
}

func (l lockSpy) CreateTask(ctx context.Context, t store.Task, check func([]store.Task) error) error {
	if l.before != nil {
		l.before()
	}
	return l.Tasks.CreateTask(ctx, t, func(others []store.Task) error {
		l.inLock.Store(true)
		defer l.inLock.Store(false)
		return check(others)
	})
}

func spyService(t *testing.T, spy *lockSpy) *service.Service {
	t.Helper()
	_, db, box := servicetest.OpenStore(t, "")
	spy.Tasks, spy.inLock = db, &atomic.Bool{}
	kafka := &servicetest.Kafka{Clusters: map[string]servicetest.FakeCluster{
		"127.0.0.1:9092": {Brokers: 1}, "127.0.0.1:9192": {Brokers: 1},
	}}
	svc, err := service.New(service.Deps{Clusters: db, Users: db, Secrets: box, TaskStore: spy, Runner: servicetest.NewRunner(), Kafka: kafka})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []cluster.Settings{
		{Name: "east", BootstrapServers: []string{"127.0.0.1:9092"}},
		{Name: "west", BootstrapServers: []string{"127.0.0.1:9192"}},
	} {
		if _, err := svc.AddCluster(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
	return svc
}

func regexTask(name, regex string) task.Task {
	return task.Task{Name: name, Current: task.Current{Cluster: "east", Alias: "A"},
		Peer: task.Peer{Alias: "B", ConfigType: task.PeerByCluster, Cluster: "west"},
		Rules: task.Rules{Tasks: task.DefaultTasks, ReplicationFactor: 1, Direction: task.DirectionPush,
			Topics: []string{}, TopicsRegex: regex}}
}

// hostile is a pattern small alone where, past "__", a state leads on any
// character to any of up to 300 states (each ".?" may be skipped): with its
// twin (another end) one step makes up to 300*300 product states for a few
// hundred instructions, and names starting "__" are internal, so none of
// them is ever tried as a match (which would cost instructions). The two
// have no topic in common: the search must give up on its budget.
func hostile(end string) string { return "(?:__(?:.?){300}|x)" + end }

// TestRegexOverlapSearchIsBudgetedAndOutsideTheLock: two hostile patterns
// make the search give up within its budget (instructions and product
// states, counted by topicoverlap), and none of it runs under the store's write lock.
func TestRegexOverlapSearchIsBudgetedAndOutsideTheLock(t *testing.T) {
	for _, pair := range [][2]string{{hostile("q"), hostile("r")}} {
		spy := &lockSpy{}
		svc := spyService(t, spy)
		ctx := context.Background()
		if _, err := svc.CreateTask(ctx, regexTask("first", pair[0])); err != nil {
			t.Fatal(err)
		}
		var made int
		var inLock atomic.Bool
		restore := service.ObserveOverlapSearches(func(spent int) {
			made += spent
			if spy.inLock.Load() {
				inLock.Store(true)
			}
		})
		info, err := svc.CreateTask(ctx, regexTask("second", pair[1]))
		restore()
		if err != nil {
			t.Fatal(err)
		}
		if made == 0 || made > service.CrossCheckBudget {
			t.Errorf("%.20s...: %d units of search made, want some and at most the budget %d", pair[0], made, service.CrossCheckBudget)
		}
		if inLock.Load() {
			t.Errorf("%.20s...: the regex search ran under the store's write lock", pair[0])
		}
		if len(info.Warnings) != 1 || !strings.Contains(info.Warnings[0], "could not tell") {
			t.Errorf("%.20s...: warnings %q, want the undecided overlap", pair[0], info.Warnings)
		}
	}
}

// TestCreateChecksAgainAfterAConcurrentCreate: a task stored between the
// checks (outside the lock) and the insert is still checked against.
func TestCreateChecksAgainAfterAConcurrentCreate(t *testing.T) {
	spy := &lockSpy{}
	svc := spyService(t, spy)
	ctx := context.Background()
	// Copies the same topic as the task created below, with offset sync:
	// two such tasks are refused.
	sneaky := regexTask("sneaky", "")
	sneaky.Rules.TopicsRegex, sneaky.Rules.Topics, sneaky.Rules.SyncConsumerOffsets = "", []string{"orders"}, true
	done := false
	spy.before = func() {
		if !done {
			done = true
			if _, err := svc.CreateTask(ctx, sneaky); err != nil {
				t.Error(err)
			}
		}
	}
	late := sneaky
	late.Name = "late"
	_, err := svc.CreateTask(ctx, late)
	if e := service.AsError(err); e.Code != service.CodeInvalidTask || len(e.Problems.For("rules.topics")) == 0 {
		t.Fatalf("a duplicate stored meanwhile was not caught: %v", err)
	}
}

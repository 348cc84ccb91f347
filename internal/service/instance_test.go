package service_test

import (
	"context"
	"testing"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/internal/service/servicetest"
	"github.com/kmirror/kmirror/internal/task"
)

func TestClusterHealthAndTasksOfCluster(t *testing.T) {
	ctx := context.Background()
	svc := taskService(t, t.TempDir(), servicetest.NewRunner())
	for _, c := range []cluster.Settings{
		{Name: "east", BootstrapServers: []string{"127.0.0.1:9092"}},
		{Name: "west", BootstrapServers: []string{"127.0.0.1:9192"}},
		{Name: "gone", BootstrapServers: []string{"10.255.0.1:9092"}},
	} {
		if _, err := svc.AddCluster(ctx, c); err != nil {
			t.Fatal(err)
		}
	}
	h, err := svc.ClusterHealth(ctx, "east")
	if err != nil || !h.Reachable || h.Brokers != 1 {
		t.Errorf("east: %+v %v", h, err)
	}
	h, err = svc.ClusterHealth(ctx, "gone")
	if err != nil || h.Reachable || h.Error == "" {
		t.Errorf("unreachable cluster: %+v %v, want not reachable with a reason", h, err)
	}
	if _, err := svc.ClusterHealth(ctx, "nope"); !service.IsCode(err, service.CodeNotFound) {
		t.Errorf("unregistered cluster: %v", err)
	}

	for _, tk := range []task.Task{
		{Name: "east-to-west", Current: task.Current{Cluster: "east", Alias: "A"},
			Peer:  task.Peer{Alias: "B", ConfigType: task.PeerByCluster, Cluster: "west"},
			Rules: task.Rules{Tasks: task.DefaultTasks, ReplicationFactor: 1, Direction: task.DirectionPush, Topics: []string{"t1"}, RenameTopics: true}},
		{Name: "west-to-east", Current: task.Current{Cluster: "west", Alias: "B"},
			Peer:  task.Peer{Alias: "A", ConfigType: task.PeerByCluster, Cluster: "east"},
			Rules: task.Rules{Tasks: task.DefaultTasks, ReplicationFactor: 1, Direction: task.DirectionPush, Topics: []string{"t2"}, RenameTopics: true}},
	} {
		if _, err := svc.CreateTask(ctx, tk); err != nil {
			t.Fatal(err)
		}
	}
	list, err := svc.TasksOfCluster(ctx, "east")
	if err != nil {
		t.Fatal(err)
	}
	if len(list) != 1 || list[0].Name != "east-to-west" {
		t.Errorf("tasks of east: %+v, want only the task whose current cluster is east", list)
	}
}

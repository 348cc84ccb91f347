package service_test

import (
	"strings"
	"testing"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/internal/task"
)

func TestValidateSpec(t *testing.T) {
	east := cluster.Settings{Name: "east", BootstrapServers: []string{" 127.0.0.1:9092 "}}
	west := cluster.Settings{Name: "west", BootstrapServers: []string{"127.0.0.1:9192"}}
	push := func(name string, topics ...string) task.Task {
		return task.Task{Name: name, Current: task.Current{Cluster: " east", Alias: "A"},
			Peer:  task.Peer{Alias: "B", ConfigType: task.PeerByCluster, Cluster: "west"},
			Rules: task.Rules{Tasks: task.DefaultTasks, ReplicationFactor: 1, Direction: task.DirectionPush, Topics: topics}}
	}
	loop := push("pull-back", "orders")
	loop.Rules.Direction = task.DirectionPull
	tests := []struct {
		name string
		spec service.Spec
		want []string // phrases of the error; none: valid
	}{
		{"valid", service.Spec{Clusters: []cluster.Settings{east, west}, Tasks: []task.Task{push("orders-push", "orders")}}, nil},
		{"cluster rules", service.Spec{Clusters: []cluster.Settings{{Name: "bad name"}}}, []string{"clusters[0].name", "clusters[0].bootstrap_servers"}},
		{"task rules", service.Spec{Clusters: []cluster.Settings{east, west}, Tasks: []task.Task{push("x")}}, []string{"tasks[0] (x).name", "tasks[0] (x).rules.topics"}},
		{"current cluster not in the spec", service.Spec{Clusters: []cluster.Settings{west}, Tasks: []task.Task{push("orders-push", "orders")}}, []string{`tasks[0] (orders-push).current.cluster: cluster "east" is not in the spec's clusters`}},
		{"peer cluster not in the spec", service.Spec{Clusters: []cluster.Settings{east}, Tasks: []task.Task{push("orders-push", "orders")}}, []string{`tasks[0] (orders-push).peer.cluster: cluster "west" is not in the spec's clusters`}},
		{"connect cluster rules", service.Spec{Clusters: []cluster.Settings{east, west}, ConnectClusters: []service.ConnectClusterSettings{{Name: "wc", URLs: []string{"ftp://x"}, KafkaCluster: "north"}},
			Tasks: []task.Task{push("orders-push", "orders")}}, []string{"connect_clusters[0].urls", `connect_clusters[0].kafka_cluster: cluster "north" is not in the spec's clusters`}},
		{"engine not in the spec", service.Spec{Clusters: []cluster.Settings{east, west}, Tasks: []task.Task{onConnect(push("orders-push", "orders"), "wc")}},
			[]string{`tasks[0] (orders-push).engine: Kafka Connect cluster "wc" is not in the spec's connect_clusters`}},
		{"valid on connect", service.Spec{Clusters: []cluster.Settings{east, west}, ConnectClusters: []service.ConnectClusterSettings{{Name: "wc", URLs: []string{"http://127.0.0.1:8083"}, KafkaCluster: "west"}},
			Tasks: []task.Task{onConnect(push("orders-push", "orders"), "wc")}}, nil},
		{"cross-task rules", service.Spec{Clusters: []cluster.Settings{east, west}, Tasks: []task.Task{push("orders-push", "orders"), loop}}, []string{"tasks[1] (pull-back).rules.direction: this task forms a replication loop"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := service.ValidateSpec(&tc.spec)
			if len(tc.want) == 0 {
				if err != nil {
					t.Fatalf("valid spec refused: %v", err)
				}
				if tc.spec.Clusters[0].BootstrapServers[0] != "127.0.0.1:9092" || tc.spec.Tasks[0].Current.Cluster != "east" || tc.spec.Tasks[0].Rules.StartOffset != task.StartEarliest {
					t.Errorf("spec not normalized: %+v", tc.spec)
				}
				return
			}
			if err == nil {
				t.Fatal("invalid spec accepted")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q:\n%v", w, err)
				}
			}
		})
	}
}

func onConnect(t task.Task, name string) task.Task {
	t.Engine = task.ConnectEngine(name)
	return t
}

package store_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/kmirror/kmirror/internal/store"
	"github.com/kmirror/kmirror/internal/task"
)

func TestConnectClusters(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, n := range []string{"east", "west"} {
		if err := db.CreateCluster(ctx, store.Cluster{Name: n, BootstrapServers: []string{n + ":9092"}, SecurityProtocol: "PLAINTEXT"}); err != nil {
			t.Fatal(err)
		}
	}
	cc := store.ConnectCluster{Name: "c1", URLs: []string{"http://a:8083", "http://b:8083"}, Username: "u",
		PasswordCiphertext: []byte{1}, CAPEM: "PEM", KafkaCluster: "west", ConfigProvider: "file",
		ClientCertPEM: "CERT", ClientKeyCiphertext: []byte{2, 2}, BearerTokenCiphertext: []byte{3, 3, 3}}
	if err := db.CreateConnectCluster(ctx, cc); err != nil {
		t.Fatal(err)
	}
	if err := db.CreateConnectCluster(ctx, cc); !errors.Is(err, store.ErrExists) {
		t.Errorf("second create: %v, want ErrExists", err)
	}
	orphan := cc
	orphan.Name, orphan.KafkaCluster = "c2", "nowhere"
	if err := db.CreateConnectCluster(ctx, orphan); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("create on an unknown Kafka cluster: %v, want ErrNotFound", err)
	}
	got, err := db.ConnectCluster(ctx, "c1")
	if err != nil || strings.Join(got.URLs, " ") != "http://a:8083 http://b:8083" || got.KafkaCluster != "west" ||
		got.ConfigProvider != "file" || got.Username != "u" || len(got.PasswordCiphertext) != 1 ||
		got.ClientCertPEM != "CERT" || len(got.ClientKeyCiphertext) != 2 || len(got.BearerTokenCiphertext) != 3 {
		t.Errorf("read back: %+v, %v", got, err)
	}
	if _, err := db.ConnectCluster(ctx, "nope"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown: %v", err)
	}
	if all, err := db.ListConnectClusters(ctx); err != nil || len(all) != 1 {
		t.Errorf("list: %v, %v", all, err)
	}

	// Smart Connect: enabled on the in-process engine when registered;
	// pointing it at a Connect cluster protects that Connect cluster.
	if c, _ := db.Cluster(ctx, "west"); !c.SmartConnect.Enabled || c.SmartConnect.ConnectCluster != "" {
		t.Errorf("a new cluster's Smart Connect: %+v", c.SmartConnect)
	}
	if err := db.SetSmartConnect(ctx, "west", store.SmartConnect{Enabled: true, ConnectCluster: "nope"}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("engine on an unknown Connect cluster: %v", err)
	}
	if err := db.SetSmartConnect(ctx, "nope", store.SmartConnect{}); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("unknown cluster: %v", err)
	}
	if err := db.SetSmartConnect(ctx, "west", store.SmartConnect{Enabled: true, ConnectCluster: "c1"}); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteConnectCluster(ctx, "c1"); !errors.Is(err, store.ErrReferenced) {
		t.Errorf("delete while a cluster defaults to it: %v", err)
	}
	if err := db.SetSmartConnect(ctx, "west", store.SmartConnect{Enabled: false}); err != nil {
		t.Fatal(err)
	}
	if c, _ := db.Cluster(ctx, "west"); c.SmartConnect.Enabled || c.SmartConnect.ConnectCluster != "" {
		t.Errorf("disabled: %+v", c.SmartConnect)
	}

	// A task on the Connect cluster protects it too.
	tk := store.Task{Spec: task.Task{Name: "t1", Current: task.Current{Cluster: "west"},
		Peer: task.Peer{ConfigType: "cluster", Cluster: "east"}, Engine: task.ConnectEngine("c1")},
		DesiredState: task.DesiredRunning, LastAction: task.ActionCreate}
	if err := db.CreateTask(ctx, tk, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteConnectCluster(ctx, "c1"); !errors.Is(err, store.ErrReferenced) {
		t.Errorf("delete while a task runs on it: %v", err)
	}
	tk.Spec.Name, tk.Spec.Engine = "t2", task.ConnectEngine("nope")
	if err := db.CreateTask(ctx, tk, nil); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("task on an unknown Connect cluster: %v", err)
	}
	if err := db.DeleteTask(ctx, "t1"); err != nil {
		t.Fatal(err)
	}
	if err := db.DeleteConnectCluster(ctx, "c1"); err != nil {
		t.Errorf("delete when unused: %v", err)
	}
	if err := db.DeleteConnectCluster(ctx, "c1"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("delete twice: %v", err)
	}
}

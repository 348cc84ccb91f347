package service_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/internal/service/servicetest"
	"github.com/kmirror/kmirror/internal/store"
)

func TestValidateConnectCluster(t *testing.T) {
	ok := service.ConnectClusterSettings{Name: "c1", URLs: []string{"http://127.0.0.1:8083", "https://w2.example:8443"}, KafkaCluster: "west"}
	tests := []struct {
		name   string
		edit   func(*service.ConnectClusterSettings)
		fields []string
	}{
		{"valid", func(*service.ConnectClusterSettings) {}, nil},
		{"valid with auth", func(s *service.ConnectClusterSettings) { s.Username, s.Password = "u", "p" }, nil},
		{"no name", func(s *service.ConnectClusterSettings) { s.Name = "" }, []string{"name"}},
		{"bad name", func(s *service.ConnectClusterSettings) { s.Name = "c 1" }, []string{"name"}},
		{"no urls", func(s *service.ConnectClusterSettings) { s.URLs = nil }, []string{"urls"}},
		{"not http", func(s *service.ConnectClusterSettings) { s.URLs = []string{"tcp://h:8083"} }, []string{"urls"}},
		{"no host", func(s *service.ConnectClusterSettings) { s.URLs = []string{"http://"} }, []string{"urls"}},
		{"credentials in url", func(s *service.ConnectClusterSettings) { s.URLs = []string{"http://u:p@h:8083"} }, []string{"urls"}},
		{"query", func(s *service.ConnectClusterSettings) { s.URLs = []string{"http://h:8083?x=1"} }, []string{"urls"}},
		{"twice", func(s *service.ConnectClusterSettings) { s.URLs = []string{"http://h:8083", "http://h:8083/"} }, []string{"urls"}},
		{"no kafka cluster", func(s *service.ConnectClusterSettings) { s.KafkaCluster = "" }, []string{"kafka_cluster"}},
		{"password alone", func(s *service.ConnectClusterSettings) { s.Password = "p" }, []string{"username"}},
		{"user alone", func(s *service.ConnectClusterSettings) { s.Username = "u" }, []string{"password"}},
		{"masked password", func(s *service.ConnectClusterSettings) { s.Username, s.Password = "u", "********" }, []string{"password"}},
		{"ca not pem", func(s *service.ConnectClusterSettings) { s.CAPEM = "nope" }, []string{"ca_pem"}},
		{"bad provider", func(s *service.ConnectClusterSettings) { s.ConfigProvider = "a b" }, []string{"config_provider"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := ok
			s.URLs = slices.Clone(ok.URLs)
			tt.edit(&s)
			var fields []string
			for _, p := range service.ValidateConnectCluster(service.NormalizeConnectCluster(s)) {
				fields = append(fields, p.Field)
				if p.Message == "" {
					t.Errorf("problem on %s has no message", p.Field)
				}
			}
			if !slices.Equal(fields, tt.fields) {
				t.Errorf("fields = %v, want %v", fields, tt.fields)
			}
		})
	}
}

func TestConnectClusterLifecycle(t *testing.T) {
	ctx := context.Background()
	dir, db, box := servicetest.OpenStore(t, "")
	svc, err := service.New(service.Deps{Clusters: db, Users: db, Secrets: box, ConnectClusters: db})
	if err != nil {
		t.Fatal(err)
	}
	in := service.ConnectClusterSettings{Name: "c1", URLs: []string{" http://127.0.0.1:8083/ "}, KafkaCluster: "west",
		Username: "connect", Password: "very-secret-connect-pw"}
	if _, err := svc.AddConnectCluster(ctx, in); !service.IsCode(err, service.CodeInvalidCluster) ||
		len(service.AsError(err).Problems.For("kafka_cluster")) != 1 {
		t.Fatalf("add before its Kafka cluster: %v, want a problem on kafka_cluster", err)
	}
	if _, err := svc.AddCluster(ctx, cluster.Settings{Name: "west", BootstrapServers: []string{"h:9092"}}); err != nil {
		t.Fatal(err)
	}
	info, err := svc.AddConnectCluster(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if !info.PasswordSet || info.URLs[0] != "http://127.0.0.1:8083" || info.KafkaCluster != "west" {
		t.Fatalf("info = %+v", info)
	}
	if _, err := svc.AddConnectCluster(ctx, in); !service.IsCode(err, service.CodeInvalidCluster) ||
		len(service.AsError(err).Problems.For("name")) != 1 {
		t.Fatalf("duplicate: %v, want a problem on name", err)
	}
	got, err := svc.ConnectClusterSettings(ctx, "c1")
	if err != nil || got.Password != in.Password {
		t.Fatalf("password round trip: %v", err)
	}
	for _, f := range []string{store.FileName, store.FileName + "-wal"} {
		raw, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), "very-secret-connect-pw") {
			t.Fatalf("%s holds the clear Connect password", f)
		}
	}
	if all, err := svc.ListConnectClusters(ctx); err != nil || len(all) != 1 || all[0].Name != "c1" {
		t.Fatalf("list: %+v, %v", all, err)
	}
	// The Kafka cluster its workers write to cannot go first.
	if err := svc.RemoveCluster(ctx, "west"); !service.IsCode(err, service.CodeClusterInUse) {
		t.Fatal("removed the Kafka cluster a Connect cluster writes to")
	}
	if err := svc.RemoveConnectCluster(ctx, "c1"); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.ConnectCluster(ctx, "c1"); !service.IsCode(err, service.CodeNotFound) {
		t.Fatalf("after remove: %v", err)
	}
	if err := svc.RemoveConnectCluster(ctx, "c1"); !service.IsCode(err, service.CodeNotFound) {
		t.Fatalf("remove twice: %v", err)
	}
	// Only an admin registers one.
	viewer := service.WithActor(ctx, service.Actor{Name: "v", Role: service.RoleViewer})
	if _, err := svc.AddConnectCluster(viewer, in); !service.IsCode(err, service.CodeForbidden) {
		t.Fatalf("viewer add: %v, want forbidden", err)
	}
}

func TestSmartConnectPerCluster(t *testing.T) {
	ctx := context.Background()
	_, db, box := servicetest.OpenStore(t, "")
	svc, err := service.New(service.Deps{Clusters: db, Users: db, Secrets: box, ConnectClusters: db})
	if err != nil {
		t.Fatal(err)
	}
	info, err := svc.AddCluster(ctx, cluster.Settings{Name: "west", BootstrapServers: []string{"h:9092"}})
	if err != nil {
		t.Fatal(err)
	}
	if info.SmartConnect != (service.SmartConnect{Enabled: true, Engine: "embedded"}) {
		t.Errorf("a new cluster's Smart Connect = %+v", info.SmartConnect)
	}
	if _, err := svc.SetSmartConnect(ctx, "west", service.SmartConnect{Enabled: true, Engine: "connect:c1"}); !service.IsCode(err, service.CodeInvalidCluster) ||
		len(service.AsError(err).Problems.For("engine")) != 1 {
		t.Fatalf("an unknown Connect cluster: %v", err)
	}
	if _, err := svc.SetSmartConnect(ctx, "west", service.SmartConnect{Enabled: true, Engine: "mm2"}); !service.IsCode(err, service.CodeInvalidCluster) {
		t.Fatalf("a bad engine: %v", err)
	}
	if _, err := svc.SetSmartConnect(ctx, "east", service.SmartConnect{Enabled: true}); !service.IsCode(err, service.CodeNotFound) {
		t.Fatalf("an unknown cluster: %v", err)
	}
	if _, err := svc.AddConnectCluster(ctx, service.ConnectClusterSettings{Name: "c1", URLs: []string{"http://h:8083"}, KafkaCluster: "west"}); err != nil {
		t.Fatal(err)
	}
	info, err = svc.SetSmartConnect(ctx, "west", service.SmartConnect{Enabled: true, Engine: "connect:c1"})
	if err != nil || info.SmartConnect.Engine != "connect:c1" {
		t.Fatalf("on Connect: %+v, %v", info.SmartConnect, err)
	}
	if err := svc.RemoveConnectCluster(ctx, "c1"); !service.IsCode(err, service.CodeClusterInUse) {
		t.Fatalf("removing the default engine: %v", err)
	}
	info, err = svc.SetSmartConnect(ctx, "west", service.SmartConnect{Enabled: false, Engine: "embedded"})
	if err != nil || info.SmartConnect.Enabled {
		t.Fatalf("disable: %+v, %v", info.SmartConnect, err)
	}
	op := service.WithActor(ctx, service.Actor{Name: "o", Role: service.RoleOperator})
	if _, err := svc.SetSmartConnect(op, "west", service.SmartConnect{Enabled: true}); !service.IsCode(err, service.CodeForbidden) {
		t.Fatalf("operator: %v, want forbidden", err)
	}
}

package service_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/connect/connecttest"
	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/internal/service/servicetest"
	"github.com/kmirror/kmirror/internal/store"
)

func TestValidateConnectCluster(t *testing.T) {
	ok := service.ConnectClusterSettings{Name: "c1", URLs: []string{"http://127.0.0.1:8083", "https://w2.example:8443"}, KafkaCluster: "west"}
	ca := connecttest.NewCA(t)
	cert, key := ca.Issue(t, "kmirror")
	_, otherKey := ca.Issue(t, "other")
	mtls := func(s *service.ConnectClusterSettings) {
		s.URLs = []string{"https://w1.example:8443", "https://w2.example:8443"}
		s.ClientCertPEM, s.ClientKeyPEM = cert, key
	}
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

		{"client certificate", mtls, nil},
		{"client certificate with basic auth", func(s *service.ConnectClusterSettings) { mtls(s); s.Username, s.Password = "u", "p" }, nil},
		{"certificate without key", func(s *service.ConnectClusterSettings) { mtls(s); s.ClientKeyPEM = "" }, []string{"client_key_pem"}},
		{"key without certificate", func(s *service.ConnectClusterSettings) { mtls(s); s.ClientCertPEM = "" }, []string{"client_cert_pem"}},
		{"certificate not PEM", func(s *service.ConnectClusterSettings) { mtls(s); s.ClientCertPEM = "nope" }, []string{"client_cert_pem"}},
		{"certificate that does not parse", func(s *service.ConnectClusterSettings) {
			mtls(s)
			s.ClientCertPEM = "-----BEGIN CERTIFICATE-----\nbm9wZQ==\n-----END CERTIFICATE-----"
		}, []string{"client_cert_pem"}},
		{"key not PEM", func(s *service.ConnectClusterSettings) { mtls(s); s.ClientKeyPEM = "nope" }, []string{"client_key_pem"}},
		{"key of another certificate", func(s *service.ConnectClusterSettings) { mtls(s); s.ClientKeyPEM = otherKey }, []string{"client_key_pem"}},
		{"encrypted key", func(s *service.ConnectClusterSettings) {
			mtls(s)
			s.ClientKeyPEM = "-----BEGIN ENCRYPTED PRIVATE KEY-----\nbm9wZQ==\n-----END ENCRYPTED PRIVATE KEY-----"
		}, []string{"client_key_pem"}},
		{"masked key", func(s *service.ConnectClusterSettings) { mtls(s); s.ClientKeyPEM = "********" }, []string{"client_key_pem"}},
		{"certificate over http", func(s *service.ConnectClusterSettings) { mtls(s); s.URLs = []string{"http://w1:8083"} }, []string{"client_cert_pem"}},
		{"bearer token", func(s *service.ConnectClusterSettings) { s.BearerToken = "eyJhbGciOi.J9.x-_~+/=" }, nil},
		{"bearer token with a client certificate", func(s *service.ConnectClusterSettings) { mtls(s); s.BearerToken = "t0ken" }, nil},
		{"bearer token read from a file", func(s *service.ConnectClusterSettings) { s.BearerToken = "t0ken\n" }, nil},
		{"bearer token and basic auth", func(s *service.ConnectClusterSettings) { s.BearerToken, s.Username, s.Password = "t", "u", "p" }, []string{"bearer_token"}},
		{"masked bearer token", func(s *service.ConnectClusterSettings) { s.BearerToken = "********" }, []string{"bearer_token"}},
		{"bearer token with its scheme", func(s *service.ConnectClusterSettings) { s.BearerToken = "Bearer t0ken" }, []string{"bearer_token"}},
		{"bearer token with a space", func(s *service.ConnectClusterSettings) { s.BearerToken = "t0 ken" }, []string{"bearer_token"}},
		{"bearer token with a line break", func(s *service.ConnectClusterSettings) { s.BearerToken = "t0\nken" }, []string{"bearer_token"}},
		{"bearer token too long", func(s *service.ConnectClusterSettings) { s.BearerToken = strings.Repeat("x", 8<<10+1) }, []string{"bearer_token"}},
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

// A Connect cluster behind a client certificate and a bearer token: both
// reach the workers (the check passes against a worker requiring them),
// the key and the token are sealed at rest and never shown, and bad input
// stores nothing.
func TestConnectClusterWithClientCertificateAndToken(t *testing.T) {
	ctx := context.Background()
	dir, db, box := servicetest.OpenStore(t, "")
	svc, err := service.New(service.Deps{Clusters: db, Users: db, Secrets: box, ConnectClusters: db})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := svc.AddCluster(ctx, cluster.Settings{Name: "west", BootstrapServers: []string{"h:9092"}}); err != nil {
		t.Fatal(err)
	}
	ca := connecttest.NewCA(t)
	cert, key := ca.Issue(t, "kmirror")
	const token = "tok-very-secret.abc"
	url, serverCA := connecttest.StartTLS(t, connecttest.Worker{BearerToken: token}, ca)
	in := service.ConnectClusterSettings{Name: "mtls", URLs: []string{url}, KafkaCluster: "west", CAPEM: serverCA,
		ClientCertPEM: cert, ClientKeyPEM: key, BearerToken: token}

	// Refused whole, naming the field: nothing is stored.
	_, otherKey := ca.Issue(t, "other")
	bad := in
	bad.ClientKeyPEM = otherKey
	if _, err := svc.AddConnectCluster(ctx, bad); !service.IsCode(err, service.CodeInvalidCluster) ||
		len(service.AsError(err).Problems.For("client_key_pem")) != 1 {
		t.Fatalf("a key of another certificate: %v, want a problem on client_key_pem", err)
	}
	if all, err := svc.ListConnectClusters(ctx); err != nil || len(all) != 0 {
		t.Fatalf("refused input was stored: %+v, %v", all, err)
	}

	info, err := svc.AddConnectCluster(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if !info.ClientKeySet || !info.BearerTokenSet || info.PasswordSet || info.ClientCertPEM != strings.TrimSpace(cert) {
		t.Errorf("info = %+v", info)
	}
	for _, i := range []service.ConnectClusterInfo{info, mustConnectInfo(t, svc, "mtls")} {
		raw, err := json.Marshal(i)
		if err != nil {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), token) || strings.Contains(string(raw), "PRIVATE KEY") {
			t.Errorf("an answer shows a secret: %s", raw)
		}
	}
	got, err := svc.ConnectClusterSettings(ctx, "mtls")
	if err != nil || got.BearerToken != token || got.ClientKeyPEM != strings.TrimSpace(key) || got.ClientCertPEM != strings.TrimSpace(cert) {
		t.Fatalf("secrets round trip: %v", err)
	}
	keyBody := strings.Split(strings.TrimSpace(key), "\n")[1] // a line of the key's base64
	for _, f := range []string{store.FileName, store.FileName + "-wal"} {
		raw, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), token) || strings.Contains(string(raw), keyBody) {
			t.Fatalf("%s holds the clear bearer token or client key", f)
		}
	}
	res, err := svc.CheckConnectCluster(ctx, "mtls")
	if err != nil || !res.OK {
		t.Fatalf("check against a worker requiring the certificate and the token: %+v, %v", res, err)
	}
}

func mustConnectInfo(t *testing.T, svc *service.Service, name string) service.ConnectClusterInfo {
	t.Helper()
	i, err := svc.ConnectCluster(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	return i
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

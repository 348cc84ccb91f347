package service_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/account"
	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/kafkatest"
	"github.com/kmirror/kmirror/internal/secrets"
	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/internal/service/servicetest"
	"github.com/kmirror/kmirror/internal/store"
	"github.com/kmirror/kmirror/internal/task"
)

func TestValidateCluster(t *testing.T) {
	ok := cluster.Settings{Name: "east_1", BootstrapServers: []string{"127.0.0.1:9092", "[::1]:9093", "kafka-2:9092"}, SecurityProtocol: "PLAINTEXT"}
	sasl := cluster.Settings{Name: "west", BootstrapServers: []string{"h:1"}, SecurityProtocol: "SASL_SSL", SASLMechanism: "SCRAM-SHA-512", Username: "u", Password: "p"}
	tests := []struct {
		name   string
		edit   func(*cluster.Settings)
		base   cluster.Settings
		fields []string // fields with a problem, in order
	}{
		{"valid plaintext", func(*cluster.Settings) {}, ok, nil},
		{"valid sasl", func(*cluster.Settings) {}, sasl, nil},
		{"empty name", func(s *cluster.Settings) { s.Name = "" }, ok, []string{"name"}},
		{"long name", func(s *cluster.Settings) { s.Name = strings.Repeat("a", 65) }, ok, []string{"name"}},
		{"64 chars ok", func(s *cluster.Settings) { s.Name = strings.Repeat("a", 64) }, ok, nil},
		{"bad charset", func(s *cluster.Settings) { s.Name = "east.1" }, ok, []string{"name"}},
		{"no servers", func(s *cluster.Settings) { s.BootstrapServers = nil }, ok, []string{"bootstrap_servers"}},
		{"no port", func(s *cluster.Settings) { s.BootstrapServers = []string{"kafka1"} }, ok, []string{"bootstrap_servers"}},
		{"bad port", func(s *cluster.Settings) { s.BootstrapServers = []string{"k:0", "k:70000", "k:x"} }, ok,
			[]string{"bootstrap_servers", "bootstrap_servers", "bootstrap_servers"}},
		{"no host", func(s *cluster.Settings) { s.BootstrapServers = []string{":9092"} }, ok, []string{"bootstrap_servers"}},
		{"duplicate", func(s *cluster.Settings) { s.BootstrapServers = []string{"k:1", "k:1"} }, ok, []string{"bootstrap_servers"}},
		{"bad protocol", func(s *cluster.Settings) { s.SecurityProtocol = "TLS" }, ok, []string{"security_protocol"}},
		{"sasl missing all", func(s *cluster.Settings) { s.SASLMechanism, s.Username, s.Password = "", "", "" }, sasl,
			[]string{"sasl_mechanism", "username", "password"}},
		{"bad mechanism", func(s *cluster.Settings) { s.SASLMechanism = "GSSAPI" }, sasl, []string{"sasl_mechanism"}},
		{"plaintext with credentials", func(s *cluster.Settings) { s.Username, s.Password = "u", "p" }, ok, []string{"username", "password"}},
		{"ca without tls", func(s *cluster.Settings) { s.CAPEM = "x" }, ok, []string{"ca_pem"}},
		{"ca not pem", func(s *cluster.Settings) { s.CAPEM = "not a certificate" }, sasl, []string{"ca_pem"}},
		{"everything wrong", func(s *cluster.Settings) {
			*s = cluster.Settings{Name: "a b", BootstrapServers: []string{"x"}, SecurityProtocol: "SASL_PLAINTEXT"}
		}, ok, []string{"name", "bootstrap_servers", "sasl_mechanism", "username", "password"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.base
			s.BootstrapServers = append([]string(nil), s.BootstrapServers...)
			tt.edit(&s)
			got := service.ValidateCluster(service.NormalizeCluster(s))
			var fields []string
			for _, p := range got {
				fields = append(fields, p.Field)
				if p.Message == "" {
					t.Errorf("problem on %s has no message", p.Field)
				}
			}
			if strings.Join(fields, ",") != strings.Join(tt.fields, ",") {
				t.Fatalf("problems on %v, want %v (%v)", fields, tt.fields, got)
			}
		})
	}
}

func FuzzValidateCluster(f *testing.F) {
	f.Add("east", "127.0.0.1:9092", "SASL_SSL", "PLAIN", "u", "p", "")
	f.Fuzz(func(t *testing.T, name, servers, proto, mech, user, pw, ca string) {
		s := service.NormalizeCluster(cluster.Settings{Name: name, BootstrapServers: strings.Split(servers, ","),
			SecurityProtocol: proto, SASLMechanism: mech, Username: user, Password: pw, CAPEM: ca})
		if len(service.ValidateCluster(s)) == 0 {
			// Whatever the service accepts must also build a sarama config.
			if _, err := s.Config("fuzz"); err != nil {
				t.Fatalf("valid settings %+v do not build a config: %v", s.Redacted(), err)
			}
		}
	})
}

func newService(t *testing.T) (*service.Service, string) {
	t.Helper()
	dir, db, box := servicetest.OpenStore(t, "")
	svc, err := service.New(service.Deps{Clusters: db, Users: db, Secrets: box})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := account.EnsureAdmin(context.Background(), db, "admin-password"); err != nil {
		t.Fatal(err)
	}
	return svc, dir
}

func TestClusterLifecycle(t *testing.T) {
	ctx := context.Background()
	svc, dir := newService(t)
	in := cluster.Settings{Name: "east", BootstrapServers: []string{" 127.0.0.1:9092 "}, SecurityProtocol: "SASL_PLAINTEXT",
		SASLMechanism: "SCRAM-SHA-512", Username: "alice", Password: "very-secret-kafka-pw"}
	info, err := svc.AddCluster(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if !info.PasswordSet || info.TasksLimit != 18 || info.BootstrapServers[0] != "127.0.0.1:9092" {
		t.Fatalf("info = %+v", info)
	}
	if _, err := svc.AddCluster(ctx, in); !service.IsCode(err, service.CodeInvalidCluster) ||
		len(service.AsError(err).Problems.For("name")) != 1 {
		t.Fatalf("duplicate add: err = %v, want invalid_cluster on name", err)
	}
	cs, err := svc.ClusterSettings(ctx, "east")
	if err != nil || cs.Password != in.Password {
		t.Fatalf("ClusterSettings password round trip failed: %v", err)
	}
	// The database file holds the password only sealed (WAL included).
	for _, f := range []string{store.FileName, store.FileName + "-wal"} {
		raw, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		if strings.Contains(string(raw), "very-secret-kafka-pw") {
			t.Fatalf("%s contains the clear Kafka password", f)
		}
	}
	if err := svc.RemoveCluster(ctx, "east"); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Cluster(ctx, "east"); !service.IsCode(err, service.CodeNotFound) {
		t.Fatalf("after remove: err = %v, want not_found", err)
	}
	if err := svc.RemoveCluster(ctx, "east"); !service.IsCode(err, service.CodeNotFound) {
		t.Fatalf("remove twice: err = %v, want not_found", err)
	}
}

type fixedTasks int

func (n fixedTasks) TasksUsed(context.Context, string) (int, error) { return int(n), nil }

func TestRemoveClusterWithTasksIsRefused(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := store.Open(ctx, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	box, _ := secrets.Load(dir)
	svc, _ := service.New(service.Deps{Clusters: db, Users: db, Secrets: box, Tasks: fixedTasks(3)})
	if _, err := svc.AddCluster(ctx, cluster.Settings{Name: "east", BootstrapServers: []string{"h:1"}}); err != nil {
		t.Fatal(err)
	}
	if err := svc.RemoveCluster(ctx, "east"); !service.IsCode(err, service.CodeClusterInUse) {
		t.Fatalf("err = %v, want cluster_in_use", err)
	}
}

func TestSignInThrottles(t *testing.T) {
	ctx := context.Background()
	svc, _ := newService(t)
	if p, err := svc.SignIn(ctx, "admin", "admin-password", "1.2.3.4"); err != nil || p.Name != "admin" || p.Role != service.RoleAdmin {
		t.Fatalf("SignIn = %+v, %v", p, err)
	}
	var err error
	for i := 0; i < 10 && !service.IsCode(err, service.CodeTooManyAttempts); i++ {
		_, err = svc.SignIn(ctx, "admin", "wrong", "1.2.3.4")
		if err == nil {
			t.Fatal("wrong password accepted")
		}
	}
	e := service.AsError(err)
	if e.Code != service.CodeTooManyAttempts || e.RetryAfter <= 0 || e.RetryAfter > time.Minute {
		t.Fatalf("after repeated failures err = %v (retry after %v), want too_many_attempts", err, e.RetryAfter)
	}
	// Even the right password waits, so a throttled guesser learns nothing,
	// and from any address: the account is what is throttled.
	for _, client := range []string{"1.2.3.4", "5.6.7.8"} {
		if _, err := svc.SignIn(ctx, "admin", "admin-password", client); !service.IsCode(err, service.CodeTooManyAttempts) {
			t.Fatalf("right password from %s while throttled: err = %v", client, err)
		}
	}
}

// A client key, its password and an OAuth client secret are sealed like the
// password: absent from the database file and from every answer, opened
// again for connecting; the certificate is described.
func TestClusterCredentialsAreSealedAndNeverShown(t *testing.T) {
	ctx := context.Background()
	svc, dir := newService(t)
	ca, err := kafkatest.NewCA("test CA", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.Issue(kafkatest.CertSpec{CommonName: "alice", NotAfter: time.Now().Add(10 * 24 * time.Hour)})
	if err != nil {
		t.Fatal(err)
	}
	keyMarker := strings.Split(cert.KeyPEM, "\n")[1] // a line of the key's base64
	in := cluster.Settings{Name: "east", BootstrapServers: []string{"127.0.0.1:9093"}, SecurityProtocol: cluster.SASLSSL,
		SASLMechanism: cluster.MechanismOAuthBearer, ClientCertPEM: cert.ChainPEM, ClientKeyPEM: cert.KeyPEM,
		OAuth: cluster.OAuth{TokenEndpoint: "https://idp.example.com/token", ClientID: "kmirror", ClientSecret: "oauth-client-secret-xyz", Audience: "kafka"}}
	info, err := svc.AddCluster(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	answer, err := json.Marshal(info)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"oauth-client-secret-xyz", keyMarker} {
		if strings.Contains(string(answer), secret) {
			t.Fatalf("the answer shows a secret: %s", answer)
		}
	}
	if info.ClientCert == nil || info.ClientCert.Subject != "CN=alice,O=kmirror tests" || !info.ClientKeySet ||
		info.OAuth == nil || info.OAuth.ClientSecret != task.PasswordMask || info.OAuth.ClientID != "kmirror" {
		t.Fatalf("info: %s", answer)
	}
	if !info.CertExpiresSoon(time.Now()) {
		t.Fatal("a certificate ending in 10 days: want it said to expire soon")
	}
	cs, err := svc.ClusterSettings(ctx, "east")
	if exp, err := svc.ClientCertExpiries(ctx); err != nil || len(exp) != 1 || exp[0].Cluster != "east" || exp[0].Task != "" ||
		!exp[0].NotAfter.Equal(info.ClientCert.NotAfter) {
		t.Fatalf("certificate expiries: %+v, %v", exp, err)
	}
	in = service.NormalizeCluster(in) // PEM texts trimmed
	if err != nil || cs.Secrets() != in.Secrets() || cs.ClientCertPEM != in.ClientCertPEM || cs.OAuth != in.OAuth {
		t.Fatalf("settings round trip: %+v, %v", cs.Redacted(), err)
	}
	for _, f := range []string{store.FileName, store.FileName + "-wal"} {
		raw, err := os.ReadFile(filepath.Join(dir, f))
		if err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
		for _, secret := range []string{"oauth-client-secret-xyz", keyMarker} {
			if strings.Contains(string(raw), secret) {
				t.Fatalf("%s holds a secret in clear", f)
			}
		}
	}
}

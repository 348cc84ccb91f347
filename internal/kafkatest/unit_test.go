package kafkatest

import (
	"context"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

func TestServerProperties(t *testing.T) {
	ports := map[string]int{"PLAINTEXT": 1001, "SASL_PLAINTEXT": 1002, "SASL_SSL": 1003, controllerListener: 1004}
	p := serverProperties(brokerConfig{Ports: ports, DataDir: "/d", KeystoreDir: "/k"})
	for _, want := range []string{
		"listeners=PLAINTEXT://127.0.0.1:1001,SASL_PLAINTEXT://127.0.0.1:1002,SASL_SSL://127.0.0.1:1003,CONTROLLER://127.0.0.1:1004\n",
		"advertised.listeners=PLAINTEXT://127.0.0.1:1001,SASL_PLAINTEXT://127.0.0.1:1002,SASL_SSL://127.0.0.1:1003\n",
		"controller.quorum.bootstrap.servers=127.0.0.1:1004\n",
		"listener.name.sasl_ssl.ssl.keystore.location=/k/keystore.pem\n",
		"listener.name.sasl_ssl.ssl.keystore.type=PEM\n",
		`listener.name.sasl_plaintext.plain.sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret" user_alice="alice-secret" user_bob="bob-secret";` + "\n",
		"listener.name.sasl_ssl.scram-sha-512.sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required;\n",
		"log.dirs=/d\n",
	} {
		if !strings.Contains(p, want) {
			t.Errorf("server.properties lacks %q", want)
		}
	}
	if strings.Contains(p, "authorizer.class.name") {
		t.Error("ACLs on without asking")
	}
	acl := serverProperties(brokerConfig{Ports: ports, DataDir: "/d", KeystoreDir: "/k", ACLs: true})
	for _, want := range []string{
		"authorizer.class.name=org.apache.kafka.metadata.authorizer.StandardAuthorizer\n",
		"super.users=User:ANONYMOUS;User:admin\n",
	} {
		if !strings.Contains(acl, want) {
			t.Errorf("server.properties with ACLs lacks %q", want)
		}
	}
}

func TestScramArgs(t *testing.T) {
	got := strings.Join(scramArgs([]User{Alice}), " ")
	want := "--add-scram SCRAM-SHA-256=[name=alice,password=alice-secret] --add-scram SCRAM-SHA-512=[name=alice,password=alice-secret]"
	if got != want {
		t.Fatalf("got %q, want %q", got, want)
	}
	for _, u := range Users() {
		if strings.ContainsAny(u.Password, ",]") {
			t.Errorf("password of %s cannot go through --add-scram", u.Name)
		}
	}
}

func TestTopicName(t *testing.T) {
	valid := regexp.MustCompile(`^[a-zA-Z0-9._-]{1,249}$`)
	a, b := TopicName("TestX/sub case:1"), TopicName("TestX/sub case:1")
	if a == b {
		t.Fatalf("two topics named %s", a)
	}
	for _, n := range []string{a, TopicName(strings.Repeat("x", 400))} {
		if !valid.MatchString(n) {
			t.Errorf("invalid topic name %q", n)
		}
	}
	if !strings.HasPrefix(a, "TestX-sub-case-1-") {
		t.Errorf("name %q does not tell the test", a)
	}
}

func TestNewClusterID(t *testing.T) {
	for range 100 {
		id, err := newClusterID()
		if err != nil {
			t.Fatal(err)
		}
		b, err := base64.RawURLEncoding.DecodeString(id)
		if err != nil || len(b) != 16 || strings.HasPrefix(id, "-") {
			t.Fatalf("bad cluster id %q (%v)", id, err)
		}
	}
}

func TestTLSMaterial(t *testing.T) {
	tm, err := newTLSMaterial(time.Now())
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(tm.caPEM) {
		t.Fatal("CA PEM does not parse")
	}
	var types []string
	var leaf *x509.Certificate
	rest := tm.keystorePEM
	for {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		types = append(types, b.Type)
		if leaf == nil && b.Type == "CERTIFICATE" {
			if leaf, err = x509.ParseCertificate(b.Bytes); err != nil {
				t.Fatal(err)
			}
		}
	}
	// Kafka's PEM keystore wants the chain, then one unencrypted PKCS#8 key.
	if got := strings.Join(types, ","); got != "CERTIFICATE,CERTIFICATE,PRIVATE KEY" {
		t.Fatalf("keystore holds %s", got)
	}
	for _, name := range []string{"localhost", "127.0.0.1"} {
		if _, err := leaf.Verify(x509.VerifyOptions{DNSName: name, Roots: roots}); err != nil {
			t.Errorf("broker certificate not valid for %s: %v", name, err)
		}
	}
}

// A complete cache is used without Maven; the check is per required jar.
func TestEnsureJarsUsesCache(t *testing.T) {
	root := t.TempDir()
	t.Setenv("KMIRROR_CACHE", root)
	t.Setenv("KMIRROR_KAFKA_VERSION", "9.9.9")
	libs := filepath.Join(root, "kafka-9.9.9", "libs")
	if err := os.MkdirAll(libs, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, name := range requiredJars("9.9.9") {
		if err := os.WriteFile(filepath.Join(libs, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	t.Setenv("PATH", "") // prove mvn is not needed
	j, err := EnsureJars(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if j.Dir != libs || j.Version != "9.9.9" || j.Classpath() != filepath.Join(libs, "*") {
		t.Fatalf("got %+v", j)
	}
	// An incomplete directory is not a cache hit.
	os.Remove(filepath.Join(libs, requiredJars("9.9.9")[0]))
	if _, ok := cached(root); ok {
		t.Fatal("an incomplete jar directory counts as cached")
	}
}

// flock excludes a second holder (even in one process: separate open file
// descriptions), and a waiter gives up with its context.
func TestLockFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "lock")
	unlock, err := lockFile(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	if _, err := lockFile(ctx, path); err == nil {
		t.Fatal("second lock taken while the first is held")
	}
	unlock()
	unlock2, err := lockFile(context.Background(), path)
	if err != nil {
		t.Fatalf("lock after unlock: %v", err)
	}
	unlock2()
}

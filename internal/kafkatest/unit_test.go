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
	ports := map[string]int{"PLAINTEXT": 1001, "SASL_PLAINTEXT": 1002, "SASL_SSL": 1003, "SSL": 1005, ListenerMTLS: 1006, controllerListener: 1004}
	p := serverProperties(brokerConfig{Ports: ports, DataDir: "/d", KeystoreDir: "/k", JWKSURL: "http://127.0.0.1:9/jwks"})
	for _, want := range []string{
		"listeners=PLAINTEXT://127.0.0.1:1001,SASL_PLAINTEXT://127.0.0.1:1002,SASL_SSL://127.0.0.1:1003,SSL://127.0.0.1:1005,MTLS://127.0.0.1:1006,CONTROLLER://127.0.0.1:1004\n",
		"advertised.listeners=PLAINTEXT://127.0.0.1:1001,SASL_PLAINTEXT://127.0.0.1:1002,SASL_SSL://127.0.0.1:1003,SSL://127.0.0.1:1005,MTLS://127.0.0.1:1006\n",
		"controller.quorum.bootstrap.servers=127.0.0.1:1004\n",
		"ssl.keystore.location=/k/keystore.pem\n",
		"ssl.keystore.type=PEM\n",
		"ssl.truststore.location=/k/ca.pem\n",
		"listener.name.ssl.ssl.client.auth=required\n",
		"listener.name.mtls.ssl.client.auth=required\n",
		"listener.name.sasl_ssl.ssl.client.auth=none\n",
		"sasl.oauthbearer.jwks.endpoint.url=http://127.0.0.1:9/jwks\n",
		"listener.name.sasl_ssl.oauthbearer.sasl.server.callback.handler.class=org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler\n",
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
	if strings.Contains(p, "replica.fetch.wait.max.ms") || strings.Contains(p, "metadata.max.idle.interval.ms") {
		t.Error("a full-speed cluster (the benchmark's) does not keep Kafka's housekeeping intervals")
	}
	quiet := serverProperties(brokerConfig{Ports: ports, DataDir: "/d", KeystoreDir: "/k", Quiet: true})
	for _, want := range []string{"metadata.max.idle.interval.ms=5000\n", "replica.fetch.wait.max.ms=2000\n"} {
		if !strings.Contains(quiet, want) {
			t.Errorf("a test cluster's server.properties lacks %q", want)
		}
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

// A multi-broker cluster: a controller-only node and brokers in a static
// quorum, replication factors from the broker count, overrides last.
func TestServerPropertiesMultiBroker(t *testing.T) {
	brokerPorts := map[string]int{"PLAINTEXT": 2001, "SASL_PLAINTEXT": 2002, "SASL_SSL": 2003}
	base := brokerConfig{Controller: 2000, Brokers: 3, MinISR: 2, DataDir: "/d", KeystoreDir: "/k",
		Overrides: map[string]string{"offsets.retention.minutes": "1", "log.retention.ms": "60000"}}
	ctl, broker := base, base
	ctl.Roles, ctl.NodeID, ctl.Ports = "controller", controllerNodeID, map[string]int{controllerListener: 2000}
	broker.Roles, broker.NodeID, broker.Ports = "broker", 2, brokerPorts

	tests := []struct {
		name      string
		cfg       brokerConfig
		want, not []string
	}{
		{"controller", ctl, []string{
			"process.roles=controller\n",
			"node.id=100\n",
			"controller.quorum.voters=100@127.0.0.1:2000\n",
			"listeners=CONTROLLER://127.0.0.1:2000\n",
		}, []string{"advertised.listeners=", "controller.quorum.bootstrap.servers=", "inter.broker.listener.name="}},
		{"broker", broker, []string{
			"process.roles=broker\n",
			"node.id=2\n",
			"controller.quorum.voters=100@127.0.0.1:2000\n",
			"listeners=PLAINTEXT://127.0.0.1:2001,SASL_PLAINTEXT://127.0.0.1:2002,SASL_SSL://127.0.0.1:2003\n",
			"advertised.listeners=PLAINTEXT://127.0.0.1:2001,SASL_PLAINTEXT://127.0.0.1:2002,SASL_SSL://127.0.0.1:2003\n",
			"default.replication.factor=3\n",
			"offsets.topic.replication.factor=3\n",
			"transaction.state.log.replication.factor=3\n",
			"min.insync.replicas=2\n",
			"transaction.state.log.min.isr=2\n",
			"offsets.retention.minutes=1\n",
			"log.retention.ms=60000\n", // an override wins over the harness's -1
		}, []string{"CONTROLLER://", "controller.quorum.bootstrap.servers=", "log.retention.ms=-1"}},
		{"single node", brokerConfig{Ports: map[string]int{"PLAINTEXT": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3, controllerListener: 4}}, []string{
			"process.roles=broker,controller\n",
			"default.replication.factor=1\n",
			"log.retention.ms=-1\n",
		}, []string{"min.insync.replicas=", "controller.quorum.voters="}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := serverProperties(tt.cfg)
			for _, w := range tt.want {
				if !strings.Contains(p, w) {
					t.Errorf("lacks %q", w)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(p, n) {
					t.Errorf("has %q", n)
				}
			}
		})
	}
}

// Every node gets its own directory and listeners; no port is given twice.
func TestLayout(t *testing.T) {
	for _, n := range []int{1, 3} {
		o := defaults()
		o.brokers, o.name = n, "c"
		brokers, ctl, err := layout("/x", o)
		if err != nil {
			t.Fatal(err)
		}
		if len(brokers) != n || (ctl == nil) != (n == 1) {
			t.Fatalf("%d brokers: got %d brokers, controller %v", n, len(brokers), ctl != nil)
		}
		seen := map[int]bool{}
		dirs := map[string]bool{}
		nodes := brokers
		if ctl != nil {
			nodes = append(nodes, ctl)
		}
		for i, b := range nodes {
			if b != ctl && (b.id != int32(i+1) || !b.isBroker()) {
				t.Errorf("broker %d has id %d, broker %v", i, b.id, b.isBroker())
			}
			if dirs[b.dir] {
				t.Errorf("directory %s given twice", b.dir)
			}
			dirs[b.dir] = true
			for l, p := range b.ports {
				if seen[p] {
					t.Errorf("port %d given twice (%s of %s)", p, l, b.label)
				}
				seen[p] = true
			}
		}
		if want := len(brokerListeners) + 1; n == 1 && len(seen) != want {
			t.Errorf("single node: %d ports, want %d", len(seen), want)
		}
		if want := 1 + len(brokerListeners)*n; n > 1 && len(seen) != want {
			t.Errorf("%d brokers: %d ports, want %d", n, len(seen), want)
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
	if !roots.AppendCertsFromPEM([]byte(tm.ca.PEM)) {
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

// A cache fetched before the Connect workers were asked for by name is
// incomplete without their runtime and transforms, and is fetched again.
func TestCacheWithoutConnectJarsIsIncomplete(t *testing.T) {
	for _, missing := range []string{"connect-runtime-9.9.9.jar", "connect-transforms-9.9.9.jar"} {
		t.Run(missing, func(t *testing.T) {
			root := t.TempDir()
			t.Setenv("KMIRROR_KAFKA_VERSION", "9.9.9")
			libs := filepath.Join(root, "kafka-9.9.9", "libs")
			if err := os.MkdirAll(libs, 0o755); err != nil {
				t.Fatal(err)
			}
			for _, name := range requiredJars("9.9.9") {
				if name == missing {
					continue
				}
				if err := os.WriteFile(filepath.Join(libs, name), nil, 0o644); err != nil {
					t.Fatal(err)
				}
			}
			if _, ok := cached(root); ok {
				t.Fatalf("a cache without %s counts as complete", missing)
			}
		})
	}
}

// Every worker of one Connect cluster shares the group and topics, listens
// on its own port on 127.0.0.1, and converts nothing (MirrorMaker 2 copies
// bytes); overrides win.
func TestWorkerProperties(t *testing.T) {
	p := workerProperties(workerConfig{Port: 8083, GroupID: "g", Bootstrap: "127.0.0.1:9092", RF: 3,
		RebalanceDelay: 10 * time.Second, Overrides: map[string]string{"offset.flush.interval.ms": "500"}})
	for _, want := range []string{
		"bootstrap.servers=127.0.0.1:9092\n",
		"group.id=g\n",
		"config.storage.topic=g-configs\n",
		"offset.storage.topic=g-offsets\n",
		"status.storage.topic=g-status\n",
		"config.storage.replication.factor=3\n",
		"offset.storage.replication.factor=3\n",
		"status.storage.replication.factor=3\n",
		"listeners=http://127.0.0.1:8083\n",
		"rest.advertised.host.name=127.0.0.1\n",
		"rest.advertised.port=8083\n",
		"key.converter=org.apache.kafka.connect.converters.ByteArrayConverter\n",
		"value.converter=org.apache.kafka.connect.converters.ByteArrayConverter\n",
		"connector.client.config.override.policy=All\n",
		"scheduled.rebalance.max.delay.ms=10000\n",
		"offset.flush.interval.ms=500\n",
	} {
		if !strings.Contains(p, want) {
			t.Errorf("worker.properties lacks %q", want)
		}
	}
	if one := workerProperties(workerConfig{GroupID: "g"}); !strings.Contains(one, "config.storage.replication.factor=1\n") {
		t.Error("replication factor 0 is not raised to 1")
	}
	if adv := workerProperties(workerConfig{GroupID: "g", Port: 8083, AdvertisedHost: "connect-0.connect.svc"}); !strings.Contains(adv, "rest.advertised.host.name=connect-0.connect.svc\n") {
		t.Errorf("advertised host name not set:\n%s", adv)
	}
}

// Workers advertising names of their own resolve them (and localhost) to
// 127.0.0.1 through their hosts file; nothing else is in it.
func TestWorkersHostsFile(t *testing.T) {
	dir := t.TempDir()
	path, err := writeHostsFile(dir, []string{"connect-0.connect.svc", "connect-1.connect.svc"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"127.0.0.1 localhost\n", "127.0.0.1 connect-0.connect.svc\n", "127.0.0.1 connect-1.connect.svc\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("hosts file lacks %q:\n%s", want, b)
		}
	}
	cc := &ConnectCluster{workers: []*worker{{port: 1}, {port: 2}}, advertised: []string{"a.svc", "b.svc"}}
	if cc.WorkerID(1) != "b.svc:2" || cc.WorkerIndex("a.svc:1") != 0 {
		t.Errorf("worker ids %s, %s", cc.WorkerID(0), cc.WorkerID(1))
	}
	if plain := (&ConnectCluster{workers: []*worker{{port: 7}}}); plain.WorkerID(0) != "127.0.0.1:7" {
		t.Errorf("default worker id %s", plain.WorkerID(0))
	}
}

func TestClusterTempDirFollowsTheOverride(t *testing.T) {
	root := t.TempDir()
	t.Setenv(TmpDirEnv, root)
	dir, err := clusterTempDir("kmirror-kafka-")
	if err != nil {
		t.Fatal(err)
	}
	if filepath.Dir(dir) != root || !strings.HasPrefix(filepath.Base(dir), "kmirror-kafka-") {
		t.Fatalf("clusterTempDir with %s=%s made %s", TmpDirEnv, root, dir)
	}
	t.Setenv(TmpDirEnv, "")
	if got := clusterRoot(); got != tmpfsRoot && got != os.TempDir() {
		t.Fatalf("clusterRoot without %s = %s, want %s or %s", TmpDirEnv, got, tmpfsRoot, os.TempDir())
	}
}

package connectplan

import (
	"crypto/rsa"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/connect"
	"github.com/kmirror/kmirror/internal/kafkatest"
	"github.com/kmirror/kmirror/internal/policy"
	"github.com/kmirror/kmirror/internal/task"
)

var (
	east = cluster.Settings{Name: "east", BootstrapServers: []string{"e1:9092", "e2:9092"}, SecurityProtocol: cluster.Plaintext}
	west = cluster.Settings{Name: "west", BootstrapServers: []string{"w1:9092"}, SecurityProtocol: cluster.SASLSSL,
		SASLMechanism: cluster.MechanismSCRAMSHA512, Username: "rep", Password: `p"w\d`, CAPEM: "-----BEGIN CERTIFICATE-----\nx\n-----END CERTIFICATE-----\n"}
	onWest = Cluster{Name: "wc", KafkaCluster: "west"}
)

func baseTask() task.Task {
	return task.Task{Name: "t1", Type: task.TypeKafkaReplication, Engine: task.ConnectEngine("wc"),
		Current: task.Current{Cluster: "east", Alias: "A"},
		Peer:    task.Peer{Alias: "B", ConfigType: task.PeerByCluster, Cluster: "west"},
		Rules: task.Rules{Direction: task.DirectionPush, Topics: []string{"orders", "pay.v1"}, Tasks: 3, RenameTopics: true,
			SyncConsumerOffsets: true, ReplicationFactor: task.DefaultReplicationFactor, StartOffset: task.StartEarliest, Compression: "none"}}
}

func byName(cs []Connector) map[string]map[string]string {
	out := map[string]map[string]string{}
	for _, c := range cs {
		out[c.Name] = c.Config
	}
	return out
}

func TestBuildPushToTheWorkersCluster(t *testing.T) {
	cs, err := Build(baseTask(), east, west, onWest)
	if err != nil {
		t.Fatal(err)
	}
	got := byName(cs)
	if len(got) != 3 {
		t.Fatalf("connectors %v, want source, heartbeat and checkpoint", got)
	}
	src := got["kmirror.t1.A-B.source"]
	for k, want := range map[string]string{
		"connector.class":                       connect.MirrorSourceConnector,
		"source.cluster.alias":                  "A",
		"target.cluster.alias":                  "B",
		"topics":                                `orders,pay\.v1`,
		"tasks.max":                             "3",
		"replication.policy.class":              renamePolicy,
		"replication.factor":                    "-1",
		"source.consumer.isolation.level":       "read_committed",
		"header.converter":                      byteArrayConverter,
		"source.cluster.bootstrap.servers":      "e1:9092,e2:9092",
		"source.cluster.security.protocol":      "PLAINTEXT",
		"target.cluster.security.protocol":      "SASL_SSL",
		"target.cluster.sasl.mechanism":         "SCRAM-SHA-512",
		"target.cluster.sasl.jaas.config":       `org.apache.kafka.common.security.scram.ScramLoginModule required username="rep" password="p\"w\\d";`,
		"target.cluster.ssl.truststore.type":    "PEM",
		"offset-syncs.topic.location":           "source",
		"emit.offset-syncs.enabled":             "true",
		"offset-syncs.topic.replication.factor": "-1",
	} {
		if src[k] != want {
			t.Errorf("source %s = %q, want %q", k, src[k], want)
		}
	}
	for k := range src {
		if strings.HasPrefix(k, "producer.override.") {
			t.Errorf("the workers write to the target already, yet %s is set", k)
		}
	}
	if c := got["kmirror.t1.A-B.checkpoint"]; c["connector.class"] != connect.MirrorCheckpointConnector || c["groups.exclude"] != groupsExclude || c["sync.group.offsets.enabled"] != "true" {
		t.Errorf("checkpoint connector %v", c)
	}
	if h := got["kmirror.t1.A-B.heartbeat"]; h["connector.class"] != connect.MirrorHeartbeatConnector {
		t.Errorf("heartbeat connector %v", h)
	}
	for _, n := range Names(baseTask()) {
		if _, ok := got[n]; !ok && !strings.Contains(n, ".B-A.") { // a way back's
			t.Errorf("Names lists %s, which Build did not make", n)
		}
	}
}

// Pull: the offset syncs stay on the current cluster, the flow's target,
// under the name the in-process engine uses; a target not the workers'
// needs producer overrides.
func TestBuildPullWithOverrides(t *testing.T) {
	tk := baseTask()
	tk.Rules.Direction, tk.Rules.RenameTopics, tk.Rules.SyncConsumerOffsets, tk.Rules.Compression = task.DirectionPull, false, false, "zstd"
	_, err := Build(tk, east, west, onWest)
	var fe task.FieldErrors
	if !errors.As(err, &fe) || len(fe) != 2 || fe[0].Field != "engine" || fe[1].Field != "rules.compression" {
		t.Fatalf("without overrides allowed: %v, want engine and rules.compression refused", err)
	}
	on := onWest
	on.OverridesAllowed = true
	cs, err := Build(tk, east, west, on)
	if err != nil {
		t.Fatal(err)
	}
	got := byName(cs)
	if len(got) != 2 {
		t.Fatalf("connectors %v, want source and heartbeat only", got)
	}
	src := got["kmirror.t1.B-A.source"]
	// No offset syncs: no setting of their topic, which the source
	// connector refuses with emit.offset-syncs.enabled=false.
	for k := range src {
		if strings.HasPrefix(k, "offset-syncs.") || strings.HasPrefix(k, "offset-syncs-") {
			t.Errorf("source sets %s without offset syncs", k)
		}
	}
	for k, want := range map[string]string{
		"emit.offset-syncs.enabled":           "false",
		"replication.policy.class":            identityPolicy,
		"producer.override.bootstrap.servers": "e1:9092,e2:9092",
		"producer.override.compression.type":  "zstd",
		// The measured tuning, asked for where overrides are allowed.
		"producer.override.batch.size": "262144",
		"producer.override.linger.ms":  "5",
	} {
		if src[k] != want {
			t.Errorf("source %s = %q, want %q", k, src[k], want)
		}
	}
	if _, ok := src["offset-syncs.topic.location"]; ok {
		t.Error("offset-syncs settings without offset syncs: MM2 refuses them")
	}
	// With offset syncs, they stay on the current cluster, the flow's
	// target, where the in-process engine keeps them.
	tk.Rules.SyncConsumerOffsets = true
	cs, err = Build(tk, east, west, on)
	if err != nil {
		t.Fatal(err)
	}
	if got := byName(cs)["kmirror.t1.B-A.source"]["offset-syncs.topic.location"]; got != "target" {
		t.Errorf("offset-syncs.topic.location = %q, want target", got)
	}
	f := tk.Flows()[0]
	if f.OffsetSyncs != task.SideCurrent || f.OffsetSyncsTopic != "mm2-offset-syncs.B.internal" {
		t.Fatalf("flow %+v: the test assumes syncs on current named after the peer", f)
	}
}

func TestBuildRefusals(t *testing.T) {
	for _, c := range []struct {
		name  string
		edit  func(*task.Task)
		field string
		part  string
	}{
		{"topic mappings", func(tk *task.Task) { tk.Rules.TopicMappings = []task.Mapping{{Source: "orders", Target: "o2"}} }, "rules.topic_mappings", "replication policy"},
		{"source header", func(tk *task.Task) { tk.Rules.AddSourceHeader = true }, "rules.add_source_header", "header converter"},
		{"recopy a replaced target topic", func(tk *task.Task) { tk.Rules.OnTargetTopicReplaced = task.TargetReplacedRecopy }, "rules.on_target_topic_replaced", "goes on from its offsets"},
		{"comma in regex", func(tk *task.Task) { tk.Rules.Topics, tk.Rules.TopicsRegex = nil, "a{1,2}" }, "rules.topics_regex", "commas"},
		{"named group", func(tk *task.Task) { tk.Rules.Topics, tk.Rules.TopicsRegex = nil, "(?P<x>a)" }, "rules.topics_regex", "Java"},
		{"posix class", func(tk *task.Task) { tk.Rules.Topics, tk.Rules.TopicsRegex = nil, "[[:alpha:]]+" }, "rules.topics_regex", "POSIX"},
		{"peer by address is never the workers'", func(tk *task.Task) {
			tk.Peer = task.Peer{Alias: "B", ConfigType: task.PeerByAddress, Address: []string{"w1:9092"}}
		}, "engine", "producer overrides"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tk := baseTask()
			c.edit(&tk)
			cs, err := Build(tk, east, west, onWest)
			var fe task.FieldErrors
			if !errors.As(err, &fe) || cs != nil {
				t.Fatalf("got %v, %v; want refused", cs, err)
			}
			if len(fe) != 1 || fe[0].Field != c.field || !strings.Contains(fe[0].Message, c.part) {
				t.Fatalf("refusals %v, want one on %s saying %q", fe, c.field, c.part)
			}
		})
	}
}

// A regex Go and Java read alike passes as it is.
func TestBuildRegex(t *testing.T) {
	tk := baseTask()
	tk.Rules.Topics, tk.Rules.TopicsRegex = nil, `orders-(eu|us)\.v[0-9]+`
	cs, err := Build(tk, east, west, onWest)
	if err != nil {
		t.Fatal(err)
	}
	if got := cs[0].Config["topics"]; got != tk.Rules.TopicsRegex {
		t.Fatalf("topics %q", got)
	}
}

// Bidirectional: two flows, each with its own connectors; the flow to the
// workers' cluster needs no overrides, the other does.
func TestBuildBidirectional(t *testing.T) {
	tk := baseTask()
	tk.Rules.Direction = task.DirectionBidirectional
	on := onWest
	on.OverridesAllowed = true
	cs, err := Build(tk, east, west, on)
	if err != nil {
		t.Fatal(err)
	}
	got := byName(cs)
	if len(got) != 6 {
		t.Fatalf("%d connectors, want 6", len(got))
	}
	if got["kmirror.t1.A-B.source"]["producer.override.bootstrap.servers"] != "" {
		t.Error("A->B writes to west, the workers' cluster: no override expected")
	}
	back := got["kmirror.t1.B-A.source"]
	if back["producer.override.bootstrap.servers"] != "e1:9092,e2:9092" || back["offset-syncs.topic.location"] != "source" {
		t.Errorf("B->A: %v", back)
	}
}

// A way back on Connect: the forward copy is held (it would copy the way
// back's records again: MM2 has no source header), the way back copies
// exactly the forward flow's target topics from the switchover's points,
// and after it went home the forward copy skips what it wrote.
func TestBuildFailback(t *testing.T) {
	tk := baseTask()
	tk.Rules.RenameTopics = false
	on := onWest
	on.OverridesAllowed = true
	tk.Failback = &task.Failback{Switchover: 1,
		Points: map[string]task.SwitchPoint{"orders/0": {SourceEnd: 310, TargetEnd: 300}, "orders/1": {SourceEnd: 5, TargetEnd: 4}, "pay.v1/0": {}},
		Topics: map[string]string{"orders": "orders", "pay.v1": "pay.v1"}}
	cs, err := Build(tk, east, west, on)
	if err != nil {
		t.Fatal(err)
	}
	by := map[string]Connector{}
	for _, c := range cs {
		by[c.Name] = c
	}
	fwd, back := by["kmirror.t1.A-B.source"], by["kmirror.t1.B-A.source"]
	if !fwd.Held || back.Held {
		t.Errorf("held: forward %v, way back %v; want the forward copy held only", fwd.Held, back.Held)
	}
	if back.Config["topics"] != `orders,pay\.v1` || back.Config["source.cluster.alias"] != "B" || back.Config["target.cluster.alias"] != "A" ||
		back.Config["producer.override.bootstrap.servers"] != "e1:9092,e2:9092" {
		t.Errorf("way back: %v", back.Config)
	}
	if want := map[string]int64{"orders/0": 300, "orders/1": 4, "pay.v1/0": 0}; !maps.Equal(back.StartAt, want) {
		t.Errorf("way back starts at %v, want %v", back.StartAt, want)
	}
	if _, ok := by["kmirror.t1.B-A.checkpoint"]; !ok {
		t.Error("no checkpoint connector on the way back: groups would not translate back")
	}
	if _, ok := by["kmirror.t1.B-A.heartbeat"]; ok {
		t.Error("a way back's heartbeats would only be copied forward again")
	}
	if !slices.Contains(Names(baseTask()), "kmirror.t1.B-A.source") {
		t.Error("Names leaves out the way back's connectors: deleting the task would leave them")
	}

	// Home: the forward copy runs and skips the stretch the way back wrote.
	tk.Failback = nil
	tk.Returns = []task.Return{
		{Switchover: 1, Points: map[string]task.ReturnPoint{"orders/0": {From: 100, To: 120}}},
		{Switchover: 2, Points: map[string]task.ReturnPoint{"orders/0": {From: 310, To: 330}}},
	}
	if cs, err = Build(tk, east, west, on); err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		if c.Held || c.StartAt != nil || strings.Contains(c.Name, "B-A") {
			t.Errorf("home: %s held %v, starts at %v", c.Name, c.Held, c.StartAt)
		}
		if c.Copy != nil && !maps.Equal(c.Skip, map[string]Stretch{"orders/0": {From: 310, To: 330}}) {
			t.Errorf("home: the forward copy skips %v, want the newest way back's stretch", c.Skip)
		}
	}

	// Renamed topics cannot be given back by MM2: refused, naming the field.
	tk = baseTask()
	tk.Failback = &task.Failback{Points: map[string]task.SwitchPoint{"orders/0": {}}, Topics: map[string]string{"orders": "A.orders"}}
	_, err = Build(tk, east, west, on)
	var fe task.FieldErrors
	if !errors.As(err, &fe) || len(fe) != 1 || fe[0].Field != "rules.rename_topics" {
		t.Fatalf("renamed way back: %v", err)
	}
}

// With a config provider the password never goes into a connector config.
func TestBuildConfigProvider(t *testing.T) {
	on := onWest
	on.ConfigProvider = "secrets"
	cs, err := Build(baseTask(), east, west, on)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs {
		for k, v := range c.Config {
			if strings.Contains(v, west.Password) {
				t.Errorf("%s %s holds the password", c.Name, k)
			}
		}
		if !strings.Contains(c.Config["target.cluster.sasl.jaas.config"], `password="${secrets:west.password}"`) {
			t.Errorf("%s: %s", c.Name, c.Config["target.cluster.sasl.jaas.config"])
		}
	}
}

// A client certificate goes inline as a PEM keystore with a PKCS#8 key,
// OAUTHBEARER as Kafka's own login handler; what Kafka's clients cannot do
// (an audience) is refused on the peer's field.
func TestBuildMapsClientCertificatesAndOAuth(t *testing.T) {
	ca, err := kafkatest.NewCA("test CA", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.Issue(kafkatest.CertSpec{CommonName: "rep", RSA: true})
	if err != nil {
		t.Fatal(err)
	}
	pkcs1 := string(pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(cert.Key.(*rsa.PrivateKey))}))
	tk := baseTask()
	tk.Peer = task.Peer{Alias: "B", ConfigType: task.PeerByAddress, Address: []string{"w1:9093"}, SecurityProtocol: cluster.SASLSSL,
		SASLMechanism: cluster.MechanismOAuthBearer, ClientCertPEM: cert.ChainPEM, ClientKeyPEM: pkcs1,
		OAuth: cluster.OAuth{TokenEndpoint: "https://idp/token", ClientID: "kmirror", ClientSecret: `s"cr\t`, Scope: "kafka"}}
	on := onWest
	on.OverridesAllowed = true // the workers write to west, not to the peer
	cs, err := Build(tk, east, tk.Peer.Settings(), on)
	if err != nil {
		t.Fatal(err)
	}
	src := byName(cs)["kmirror.t1.A-B.source"]
	for k, want := range map[string]string{
		"target.cluster.security.protocol":                   "SASL_SSL",
		"target.cluster.sasl.mechanism":                      "OAUTHBEARER",
		"target.cluster.sasl.login.callback.handler.class":   oauthLoginHandler,
		"target.cluster.sasl.oauthbearer.token.endpoint.url": "https://idp/token",
		"target.cluster.sasl.jaas.config":                    oauthLoginModule + ` required clientId="kmirror" clientSecret="s\"cr\\t" scope="kafka";`,
		"target.cluster.ssl.keystore.type":                   "PEM",
		"target.cluster.ssl.keystore.certificate.chain":      strings.TrimSpace(cert.ChainPEM),
	} {
		if got := src[k]; strings.TrimSpace(got) != want {
			t.Errorf("%s = %q, want %q", k, got, want)
		}
	}
	key := src["target.cluster.ssl.keystore.key"]
	if b, _ := pem.Decode([]byte(key)); b == nil || b.Type != "PRIVATE KEY" {
		t.Fatalf("keystore key %q: want PKCS#8 PEM (Java's PEM keystore reads no PKCS#1)", key)
	}
	if _, ok := src["target.cluster.ssl.key.password"]; ok {
		t.Error("an unencrypted key needs no ssl.key.password")
	}

	tk.Peer.OAuth.Audience = "kafka"
	_, err = Build(tk, east, tk.Peer.Settings(), on)
	var fe task.FieldErrors
	if !errors.As(err, &fe) || len(fe) != 1 || fe[0].Field != "peer.oauth.audience" {
		t.Fatalf("audience: %v, want refused on peer.oauth.audience", err)
	}

	// With a config provider, the secrets are references.
	withProvider := on
	withProvider.ConfigProvider = "vault"
	tk.Peer.OAuth.Audience = ""
	cs, err = Build(tk, east, tk.Peer.Settings(), withProvider)
	if err != nil {
		t.Fatal(err)
	}
	src = byName(cs)["kmirror.t1.A-B.source"]
	if got := src["target.cluster.ssl.keystore.key"]; got != "${vault:B.client_key}" {
		t.Errorf("key with a provider: %q", got)
	}
	if got := src["target.cluster.sasl.jaas.config"]; !strings.Contains(got, `clientSecret="${vault:B.oauth_client_secret}"`) {
		t.Errorf("secret with a provider: %q", got)
	}
}

// The largest answer kmirror reads from Connect is the connector listing
// with status and configs. 200 tasks, each bidirectional with client
// certificates (RSA chains and keys inline) on both sides, must fit the
// client's answer cap with room to spare.
func TestLargestListingFitsTheAnswerCap(t *testing.T) {
	ca, err := kafkatest.NewCA("test CA", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	cert, err := ca.Issue(kafkatest.CertSpec{CommonName: "replicator.example.com", RSA: true})
	if err != nil {
		t.Fatal(err)
	}
	tk := baseTask()
	tk.Rules.Direction = task.DirectionBidirectional
	tk.Rules.Topics = []string{"orders", "payments", "shipments", "returns", "invoices"}
	tk.Peer = task.Peer{Alias: "B", ConfigType: task.PeerByAddress, Address: []string{"w1:9093", "w2:9093", "w3:9093"}, SecurityProtocol: cluster.SSL,
		ClientCertPEM: cert.ChainPEM, ClientKeyPEM: cert.KeyPEM, CAPEM: ca.PEM}
	current := east
	current.SecurityProtocol, current.CAPEM, current.ClientCertPEM, current.ClientKeyPEM = cluster.SSL, ca.PEM, cert.ChainPEM, cert.KeyPEM
	on := onWest
	on.OverridesAllowed = true
	cs, err := Build(tk, current, tk.Peer.Settings(), on)
	if err != nil {
		t.Fatal(err)
	}
	// One entry of GET /connectors?expand=status&expand=info per connector.
	type taskState struct {
		ID       int    `json:"id"`
		State    string `json:"state"`
		WorkerID string `json:"worker_id"`
	}
	listing := map[string]any{}
	const tasks = 200
	for i := range tasks {
		for _, c := range cs {
			name := fmt.Sprintf("%s-%03d", c.Name, i)
			var states []taskState
			for id := range tk.Rules.Tasks {
				states = append(states, taskState{ID: id, State: "RUNNING", WorkerID: "connect-worker-0.connect.kafka.svc.cluster.local:8083"})
			}
			listing[name] = map[string]any{
				"info":   map[string]any{"name": name, "config": c.Config, "tasks": states, "type": "source"},
				"status": map[string]any{"name": name, "connector": taskState{State: "RUNNING", WorkerID: "connect-worker-1:8083"}, "tasks": states, "type": "source"},
			}
		}
	}
	raw, err := json.Marshal(listing)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("listing of %d tasks (%d connectors): %.1f MiB, cap %d MiB", tasks, tasks*len(cs), float64(len(raw))/(1<<20), connect.MaxListingBytes>>20)
	if len(raw) > connect.MaxListingBytes*3/4 {
		t.Fatalf("the listing of %d tasks takes %d bytes, too close to the cap of %d", tasks, len(raw), connect.MaxListingBytes)
	}
}

// Exactly once on Connect: the source connector requires it (KIP-618) with
// per-poll transactions and a read_committed consumer; refused, on the
// engine field, where the workers cannot run it or do not write to the
// flow's target (the offsets are committed in the records' transaction).
func TestBuildExactlyOnce(t *testing.T) {
	tk := baseTask()
	tk.Rules.Delivery = task.DeliveryExactlyOnce
	cs, err := Build(tk, east, west, onWest)
	if err != nil {
		t.Fatal(err)
	}
	got := byName(cs)
	src := got["kmirror.t1.A-B.source"]
	for k, want := range map[string]string{"exactly.once.support": "required", "transaction.boundary": "poll", "source.consumer.isolation.level": "read_committed"} {
		if src[k] != want {
			t.Errorf("source %s = %q, want %q", k, src[k], want)
		}
	}
	if h := got["kmirror.t1.A-B.heartbeat"]; h["exactly.once.support"] != "" {
		t.Errorf("the heartbeat connector asks exactly once: %v", h)
	}

	for _, c := range []struct {
		name string
		edit func(*task.Task, *Cluster)
		part string
	}{
		{"workers without support", func(_ *task.Task, on *Cluster) {
			on.ExactlyOnceRefusal = "This worker does not have exactly-once source support enabled."
		}, "exactly.once.source.support=enabled"},
		{"a target not the workers'", func(tk *task.Task, on *Cluster) {
			tk.Rules.Direction = task.DirectionPull
			on.OverridesAllowed = true
		}, "workers' Kafka cluster to be the target"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tk, on := tk, onWest
			c.edit(&tk, &on)
			cs, err := Build(tk, east, west, on)
			var fe task.FieldErrors
			if !errors.As(err, &fe) || cs != nil {
				t.Fatalf("got %v, %v; want refused", cs, err)
			}
			if len(fe) != 1 || fe[0].Field != "engine" || !strings.Contains(fe[0].Message, c.part) {
				t.Fatalf("refusals %v, want one on engine saying %q", fe, c.part)
			}
		})
	}
}

// Both engines replicate the same topics and sync the same groups: the
// embedded engine asks the policy, MirrorMaker 2 reads the connectors Build
// writes. MM2's selection is reproduced here as MirrorSourceConnector and
// MirrorCheckpointConnector decide (DefaultTopicFilter's topics and
// topics.exclude, heartbeats past the filter, the policy's internal topics
// and cycle check; DefaultGroupFilter's groups and groups.exclude), and fed
// the same names as the policy.
func TestBothEnginesSelectTheSameTopicsAndGroups(t *testing.T) {
	topics := []string{"orders", "pay.v1", "orders.replica", "x.replica", "B.orders", "A.orders", "C.B.orders", "C.orders",
		"B.pay.v1", "__consumer_offsets", "_schemas", ".hidden", "mm2-offsets.A.internal", "mm2-offset-syncs.B.internal",
		"A.checkpoints.internal", "connect-offsets-internal", "kmirror-history.A", "kmirror.t1", "heartbeats", "B.heartbeats",
		"C.heartbeats", "C.B.heartbeats", "myheartbeats", "internal", "ordersinternal", "orders-v2", "B", "B.", "b.orders", "C.B.", "C.B..x", "C..B.x"}
	for _, c := range []struct {
		name   string
		rename bool
		names  []string
		regex  string
	}{
		{"identity, names", false, []string{"orders", "pay.v1", "orders.replica", "B.orders", "C.B.orders"}, ""},
		{"rename, names", true, []string{"orders", "pay.v1", "orders.replica", "B.orders", "C.B.orders"}, ""},
		{"identity, everything", false, nil, ".*"},
		{"rename, everything", true, nil, ".*"},
		{"rename, a prefix", true, nil, `(C\.)?(B\.)?orders.*`},
	} {
		t.Run(c.name, func(t *testing.T) {
			tk := baseTask()
			tk.Rules.RenameTopics, tk.Rules.Topics, tk.Rules.TopicsRegex = c.rename, c.names, c.regex
			cs, err := Build(tk, east, west, onWest)
			if err != nil {
				t.Fatal(err)
			}
			got := byName(cs)
			mm2 := mm2Selection(t, got["kmirror.t1.A-B.source"])
			pol, err := policy.Compile("A", "B", c.names, c.regex, c.rename, nil)
			if err != nil {
				t.Fatal(err)
			}
			for _, topic := range topics {
				if embedded, connect := pol.Selected(topic), mm2(topic); embedded != connect {
					t.Errorf("topic %q: the embedded engine copies it: %v, MirrorMaker 2 on Connect: %v", topic, embedded, connect)
				}
			}
			groups := mm2Groups(t, got["kmirror.t1.A-B.checkpoint"])
			for _, g := range []string{"orders-app", "connect-sink", "console-consumer-1", "__internal", "kmirror.t1.A-B",
				"xconnect-a", "kmirrorX", "app.connect-1", "my-console-consumer-2"} {
				if embedded, connect := policy.UnsyncedGroup(g) == "", groups(g); embedded != connect {
					t.Errorf("group %q: the embedded engine syncs it: %v, MirrorMaker 2 on Connect: %v", g, embedded, connect)
				}
			}
		})
	}
}

// mm2Selection is MirrorSourceConnector.shouldReplicateTopic for a
// connector's configuration: (topic filter || heartbeats) && !internal &&
// !cycle, with the replication policy it names.
func mm2Selection(t *testing.T, cfg map[string]string) func(string) bool {
	t.Helper()
	include, exclude := javaList(t, cfg["topics"]), javaList(t, cfg["topics.exclude"])
	identity := cfg["replication.policy.class"] == identityPolicy
	sourceAlias, targetAlias := cfg["source.cluster.alias"], cfg["target.cluster.alias"]
	// DefaultReplicationPolicy: "<alias>.<rest>" (Java's split drops
	// trailing empty parts); IdentityReplicationPolicy keeps it for names
	// ending in "heartbeats" and says the source alias for the others.
	var source func(topic string) (string, bool)
	var upstream func(topic string) (string, bool)
	source = func(topic string) (string, bool) {
		if identity && !strings.HasSuffix(topic, "heartbeats") {
			return sourceAlias, true
		}
		parts := strings.Split(strings.TrimRight(topic, "."), ".")
		if len(parts) < 2 {
			return "", false
		}
		return parts[0], true
	}
	upstream = func(topic string) (string, bool) {
		if identity && !strings.HasSuffix(topic, "heartbeats") {
			return topic, true
		}
		s, ok := source(topic)
		if !ok {
			return "", false
		}
		return topic[len(s)+1:], true
	}
	var cycle func(string) bool
	cycle = func(topic string) bool {
		s, ok := source(topic)
		switch {
		case !ok:
			return false
		case s == targetAlias:
			return true
		}
		up, ok := upstream(topic)
		if !ok || up == topic {
			return false
		}
		return cycle(up)
	}
	var original func(string) string
	original = func(topic string) string {
		up, ok := upstream(topic)
		if !ok || up == topic {
			return topic
		}
		return original(up)
	}
	internal := func(topic string) bool {
		return strings.HasPrefix(topic, "__") || strings.HasPrefix(topic, ".") || strings.HasSuffix(topic, "-internal") || strings.HasSuffix(topic, ".internal")
	}
	return func(topic string) bool {
		filter := include.MatchString(topic) && !exclude.MatchString(topic)
		return (filter || original(topic) == "heartbeats") && !internal(topic) && !cycle(topic)
	}
}

// mm2Groups is MirrorCheckpointConnector's DefaultGroupFilter for a
// connector's configuration.
func mm2Groups(t *testing.T, cfg map[string]string) func(string) bool {
	t.Helper()
	include, exclude := javaList(t, cfg["groups"]), javaList(t, cfg["groups.exclude"])
	return func(g string) bool { return include.MatchString(g) && !exclude.MatchString(g) }
}

// javaList compiles an MM2 list of regexes as MM2 does: split at commas,
// joined by |, the whole name to match.
func javaList(t *testing.T, list string) *regexp.Regexp {
	t.Helper()
	var parts []string
	for _, p := range strings.Split(list, ",") {
		if p = strings.TrimSpace(p); p != "" {
			parts = append(parts, p)
		}
	}
	if len(parts) == 0 {
		return regexp.MustCompile(`a^`) // matches nothing
	}
	return regexp.MustCompile(policy.AnchoredTopicRegex(strings.Join(parts, "|")))
}

// A config provider is a name (references ${name:key}) or a reference with
// the provider's path and %s where the key goes; anything else is refused,
// and a refused one never reaches a connector.
func TestConfigProviderReferences(t *testing.T) {
	for _, c := range []struct{ provider, want string }{
		{"vault", "${vault:east.password}"},
		{"${file:/etc/kmirror/kafka.properties:%s}", "${file:/etc/kmirror/kafka.properties:east.password}"},
		{"${directory:/mnt/secrets:%s}", "${directory:/mnt/secrets:east.password}"},
		{"${secrets:kafka/kmirror-secrets:%s}", "${secrets:kafka/kmirror-secrets:east.password}"},
		{"${file:/etc/k.properties:kafka.%s.value}", "${file:/etc/k.properties:kafka.east.password.value}"},
	} {
		if msg := CheckConfigProvider(c.provider); msg != "" {
			t.Errorf("%q refused: %s", c.provider, msg)
		}
		if got := SecretReference(c.provider, "east", "password"); got != c.want {
			t.Errorf("%q: reference %q, want %q", c.provider, got, c.want)
		}
	}
	for _, bad := range []string{"a b", "${file:%s}", "${file:/p:key}", "${file:/p:%s:%s}", "${file:/p:%s", "file:/p:%s}",
		"${file:/p:%d}", "${fi le:/p:%s}", "${file:/p:%s}x", "${file:/a}b:%s}", "${file:/my secrets:%s}", `${file:/p"q:%s}`, `${file:C\p:%s}`} {
		if CheckConfigProvider(bad) == "" {
			t.Errorf("%q accepted", bad)
		}
	}
}

package service

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/kafkatest"
	"github.com/kmirror/kmirror/internal/task"
)

// testClientCert is a client certificate and its key, issued by a CA of its own.
func testClientCert(t *testing.T, cn string) kafkatest.Issued {
	t.Helper()
	ca, err := kafkatest.NewCA("test CA", time.Now())
	if err != nil {
		t.Fatal(err)
	}
	c, err := ca.Issue(kafkatest.CertSpec{CommonName: cn})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// validTask is the API documentation's example: a push by address with SASL_SSL.
func validTask() task.Task {
	return task.Task{
		Name: "orders-dr", Type: "kafka-replication",
		Current: task.Current{Cluster: "east", Alias: "A"},
		Peer: task.Peer{Alias: "B", ConfigType: "address", Address: []string{"127.0.0.1:9093"},
			SecurityProtocol: "SASL_SSL", SASLMechanism: "SCRAM-SHA-512", Username: "alice", Password: "s3cret"},
		Rules: task.Rules{Direction: "push", Topics: []string{"orders", "payments"}, Tasks: 2,
			SyncConsumerOffsets: true, ReplicationFactor: 1, StartOffset: "earliest", Compression: "lz4",
			TopicMappings: []task.Mapping{{Source: "orders", Target: "orders-copy"}}},
	}
}

func byCluster(t *task.Task) {
	t.Peer = task.Peer{Alias: t.Peer.Alias, ConfigType: "cluster", Cluster: "west"}
}

func plaintext(t *task.Task) {
	t.Peer.SecurityProtocol, t.Peer.SASLMechanism, t.Peer.Username, t.Peer.Password = "PLAINTEXT", "", "", ""
}

func noMappings(t *task.Task) { t.Rules.TopicMappings = nil }

func testCA(t testing.TB) string {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "test CA"},
		NotBefore: time.Now(), NotAfter: time.Now().Add(time.Hour), IsCA: true, BasicConstraintsValid: true}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return string(pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}))
}

func names(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%d", prefix, i)
	}
	return out
}

// fp is an expected problem: its field and a phrase of its message.
type fp struct{ field, phrase string }

func TestValidateTask(t *testing.T) {
	ca := testCA(t)
	alice, bob := testClientCert(t, "alice"), testClientCert(t, "bob")
	sslPeer := func(x *task.Task) {
		x.Peer.SecurityProtocol, x.Peer.SASLMechanism, x.Peer.Username, x.Peer.Password = "SSL", "", "", ""
	}
	oauthPeer := func(x *task.Task) {
		x.Peer.SASLMechanism, x.Peer.Username, x.Peer.Password = "OAUTHBEARER", "", ""
		x.Peer.OAuth = cluster.OAuth{TokenEndpoint: "https://idp.example.com/oauth2/token", ClientID: "kmirror", ClientSecret: "cs", Scope: "kafka", Audience: "kafka"}
	}
	tests := []struct {
		name string
		edit func(*task.Task)
		want []fp // every problem expected, in any order; none means valid
	}{
		{"valid SPEC example", func(*task.Task) {}, nil},

		// name
		{"name 4 chars", func(x *task.Task) { x.Name = "ab_-" }, nil},
		{"name 64 chars", func(x *task.Task) { x.Name = strings.Repeat("N", 64) }, nil},
		{"name empty", func(x *task.Task) { x.Name = "" }, []fp{{"name", "required"}}},
		{"name 3 chars", func(x *task.Task) { x.Name = "abc" }, []fp{{"name", "4 to 64 characters of A-Z, a-z, 0-9, - and _"}}},
		{"name 65 chars", func(x *task.Task) { x.Name = strings.Repeat("N", 65) }, []fp{{"name", "4 to 64"}}},
		{"name bad char", func(x *task.Task) { x.Name = "orders.dr" }, []fp{{"name", "4 to 64"}}},
		{"name non-ascii", func(x *task.Task) { x.Name = "訂單複製任務" }, []fp{{"name", "4 to 64"}}},

		// type
		{"type empty", func(x *task.Task) { x.Type = "" }, []fp{{"type", "kafka-replication"}}},
		{"type other", func(x *task.Task) { x.Type = "kafka-sink" }, []fp{{"type", "must be kafka-replication"}}},

		// current cluster and alias
		{"current cluster empty", func(x *task.Task) { x.Current.Cluster = "" }, []fp{{"current.cluster", "required"}}},
		{"current cluster bad", func(x *task.Task) { x.Current.Cluster = "east 1" }, []fp{{"current.cluster", "registered cluster"}}},
		{"current alias 20 chars", func(x *task.Task) { x.Current.Alias = strings.Repeat("a", 20) }, nil},
		{"current alias empty", func(x *task.Task) { x.Current.Alias = "" }, []fp{{"current.alias", "required"}}},
		{"current alias 21 chars", func(x *task.Task) { x.Current.Alias = strings.Repeat("a", 21) }, []fp{{"current.alias", "1 to 20 characters"}}},
		{"current alias bad char", func(x *task.Task) { x.Current.Alias = "A.1" }, []fp{{"current.alias", "1 to 20 characters"}}},

		// peer alias
		{"peer alias ok", func(x *task.Task) { x.Peer.Alias = "west_2-b" }, nil},
		{"peer alias empty", func(x *task.Task) { x.Peer.Alias = "" }, []fp{{"peer.alias", "required"}}},
		{"peer alias bad", func(x *task.Task) { x.Peer.Alias = "B B" }, []fp{{"peer.alias", "1 to 20 characters"}}},
		{"peer alias equals current", func(x *task.Task) { x.Peer.Alias = "A" }, []fp{{"peer.alias", "must differ from the current alias"}}},

		// peer config type
		{"config type empty", func(x *task.Task) { x.Peer.ConfigType = "" }, []fp{{"peer.config_type", "required"}}},
		{"config type bad", func(x *task.Task) { x.Peer.ConfigType = "vpc" }, []fp{{"peer.config_type", "address"}}},

		// peer by address
		{"address several", func(x *task.Task) { x.Peer.Address = []string{"k1:9092", "[::1]:9093", "kafka-3.internal:9094"} }, nil},
		{"address missing", func(x *task.Task) { x.Peer.Address = nil }, []fp{{"peer.address", "one or more host:port"}}},
		{"address no port", func(x *task.Task) { x.Peer.Address = []string{"kafka1"} }, []fp{{"peer.address", "host:port"}}},
		{"address bad port", func(x *task.Task) { x.Peer.Address = []string{"k:70000"} }, []fp{{"peer.address", "1 to 65535"}}},
		{"address comma list", func(x *task.Task) { x.Peer.Address = []string{"k1:1,k2:2"} }, []fp{{"peer.address", "not host:port"}}},
		{"address duplicate", func(x *task.Task) { x.Peer.Address = []string{"k:1", "k:1"} }, []fp{{"peer.address", "listed twice"}}},
		{"address with cluster", func(x *task.Task) { x.Peer.Cluster = "west" }, []fp{{"peer.cluster", "takes no cluster name"}}},

		// peer by cluster
		{"peer by cluster", byCluster, nil},
		{"peer cluster missing", func(x *task.Task) { byCluster(x); x.Peer.Cluster = "" }, []fp{{"peer.cluster", "name of a registered cluster"}}},
		{"peer cluster bad name", func(x *task.Task) { byCluster(x); x.Peer.Cluster = "we st" }, []fp{{"peer.cluster", "registered cluster"}}},
		{"peer cluster is current", func(x *task.Task) { byCluster(x); x.Peer.Cluster = "east" }, []fp{{"peer.cluster", "another cluster than the current"}}},
		{"peer cluster with address", func(x *task.Task) { byCluster(x); x.Peer.Address = []string{"k:1"} }, []fp{{"peer.address", "clear the address"}}},
		{"peer cluster with auth", func(x *task.Task) {
			byCluster(x)
			x.Peer.SecurityProtocol, x.Peer.SASLMechanism, x.Peer.Username, x.Peer.Password, x.Peer.CAPEM = "SASL_SSL", "PLAIN", "u", "p", ca
			x.Peer.ClientCertPEM, x.Peer.ClientKeyPEM, x.Peer.OAuth = alice.ChainPEM, alice.KeyPEM, cluster.OAuth{ClientID: "c"}
		}, []fp{{"peer.security_protocol", "own authentication"}, {"peer.sasl_mechanism", "own authentication"},
			{"peer.username", "own authentication"}, {"peer.password", "own authentication"}, {"peer.ca_pem", "own authentication"},
			{"peer.client_cert_pem", "own authentication"}, {"peer.client_key_pem", "own authentication"}, {"peer.oauth", "own authentication"}}},

		// security protocol
		{"protocol PLAINTEXT", plaintext, nil},
		{"protocol SASL_PLAINTEXT", func(x *task.Task) { x.Peer.SecurityProtocol = "SASL_PLAINTEXT" }, nil},
		{"protocol bad", func(x *task.Task) { x.Peer.SecurityProtocol = "TLS" }, []fp{{"peer.security_protocol", "PLAINTEXT, SSL, SASL_PLAINTEXT or SASL_SSL"}}},
		{"protocol SSL", sslPeer, nil},
		{"SSL with a client certificate", func(x *task.Task) {
			sslPeer(x)
			x.Peer.ClientCertPEM, x.Peer.ClientKeyPEM = alice.ChainPEM, alice.KeyPEM
		}, nil},
		{"SSL with a username", func(x *task.Task) { sslPeer(x); x.Peer.Username = "u" }, []fp{{"peer.username", "SSL does not authenticate with a username"}}},

		// mechanism
		{"mechanism PLAIN", func(x *task.Task) { x.Peer.SASLMechanism = "PLAIN" }, nil},
		{"mechanism SCRAM-SHA-256", func(x *task.Task) { x.Peer.SASLMechanism = "SCRAM-SHA-256" }, nil},
		{"mechanism missing", func(x *task.Task) { x.Peer.SASLMechanism = "" }, []fp{{"peer.sasl_mechanism", "needs a SASL mechanism"}}},
		{"mechanism bad", func(x *task.Task) { x.Peer.SASLMechanism = "GSSAPI" }, []fp{{"peer.sasl_mechanism", "SCRAM-SHA-512, PLAIN, SCRAM-SHA-256 or OAUTHBEARER"}}},
		{"mechanism without SASL", func(x *task.Task) { plaintext(x); x.Peer.SASLMechanism = "PLAIN" }, []fp{{"peer.sasl_mechanism", "PLAINTEXT uses no SASL mechanism"}}},

		// username and password
		{"username missing", func(x *task.Task) { x.Peer.Username = "" }, []fp{{"peer.username", "needs a username"}}},
		{"password missing", func(x *task.Task) { x.Peer.Password = "" }, []fp{{"peer.password", "needs a password"}}},
		{"username without SASL", func(x *task.Task) { plaintext(x); x.Peer.Username = "u" }, []fp{{"peer.username", "does not authenticate"}}},
		{"password without SASL", func(x *task.Task) { plaintext(x); x.Peer.Password = "p" }, []fp{{"peer.password", "does not authenticate"}}},

		// CA
		{"ca ok", func(x *task.Task) { x.Peer.CAPEM = ca }, nil},
		{"ca garbage", func(x *task.Task) { x.Peer.CAPEM = "not a cert" }, []fp{{"peer.ca_pem", "no PEM certificate"}}},
		{"ca with a private key after it", func(x *task.Task) { x.Peer.CAPEM = ca + "\n" + alice.KeyPEM }, []fp{{"peer.ca_pem", "PRIVATE KEY block"}}},
		{"ca without SSL", func(x *task.Task) { x.Peer.SecurityProtocol = "SASL_PLAINTEXT"; x.Peer.CAPEM = ca }, []fp{{"peer.ca_pem", "only used with SSL or SASL_SSL"}}},

		// client certificate
		{"SASL_SSL with a client certificate", func(x *task.Task) { x.Peer.ClientCertPEM, x.Peer.ClientKeyPEM = alice.ChainPEM, alice.KeyPEM }, nil},
		{"certificate without TLS", func(x *task.Task) {
			x.Peer.SecurityProtocol = "SASL_PLAINTEXT"
			x.Peer.ClientCertPEM, x.Peer.ClientKeyPEM = alice.ChainPEM, alice.KeyPEM
		}, []fp{{"peer.client_cert_pem", "only used with SSL or SASL_SSL"}}},
		{"certificate without key", func(x *task.Task) { x.Peer.ClientCertPEM = alice.ChainPEM }, []fp{{"peer.client_key_pem", "needs its private key"}}},
		{"key without certificate", func(x *task.Task) { x.Peer.ClientKeyPEM = alice.KeyPEM }, []fp{{"peer.client_cert_pem", "needs its certificate"}}},
		{"key of another certificate", func(x *task.Task) { x.Peer.ClientCertPEM, x.Peer.ClientKeyPEM = alice.ChainPEM, bob.KeyPEM }, []fp{{"peer.client_key_pem", "does not belong to the client certificate"}}},
		{"masked key", func(x *task.Task) { x.Peer.ClientCertPEM, x.Peer.ClientKeyPEM = alice.ChainPEM, task.PasswordMask }, []fp{{"peer.client_key_pem", "masked"}}},
		{"certificate not PEM", func(x *task.Task) { x.Peer.ClientCertPEM, x.Peer.ClientKeyPEM = "garbage", alice.KeyPEM }, []fp{{"peer.client_cert_pem", "not PEM"}}},
		{"key password on a plain key", func(x *task.Task) {
			x.Peer.ClientCertPEM, x.Peer.ClientKeyPEM, x.Peer.ClientKeyPassword = alice.ChainPEM, alice.KeyPEM, "pw"
		}, []fp{{"peer.client_key_password", "not encrypted"}}},

		// OAUTHBEARER
		{"OAUTHBEARER", oauthPeer, nil},
		{"OAUTHBEARER on SASL_PLAINTEXT", func(x *task.Task) { oauthPeer(x); x.Peer.SecurityProtocol = "SASL_PLAINTEXT"; x.Peer.CAPEM = "" }, nil},
		{"OAUTHBEARER with a password", func(x *task.Task) { oauthPeer(x); x.Peer.Username, x.Peer.Password = "u", "p" },
			[]fp{{"peer.username", "clear the username"}, {"peer.password", "clear the password"}}},
		{"OAUTHBEARER missing all", func(x *task.Task) { oauthPeer(x); x.Peer.OAuth = cluster.OAuth{} },
			[]fp{{"peer.oauth.token_endpoint", "token endpoint"}, {"peer.oauth.client_id", "client id"}, {"peer.oauth.client_secret", "client secret"}}},
		{"token endpoint over http", func(x *task.Task) { oauthPeer(x); x.Peer.OAuth.TokenEndpoint = "http://idp.example.com/token" },
			[]fp{{"peer.oauth.token_endpoint", "must use https"}}},
		{"token endpoint on loopback http", func(x *task.Task) { oauthPeer(x); x.Peer.OAuth.TokenEndpoint = "http://127.0.0.1:8080/token" }, nil},
		{"token endpoint not a URL", func(x *task.Task) { oauthPeer(x); x.Peer.OAuth.TokenEndpoint = "idp/token" },
			[]fp{{"peer.oauth.token_endpoint", "https:// URL"}}},
		{"masked client secret", func(x *task.Task) { oauthPeer(x); x.Peer.OAuth.ClientSecret = task.PasswordMask },
			[]fp{{"peer.oauth.client_secret", "masked"}}},
		{"OAuth without OAUTHBEARER", func(x *task.Task) { x.Peer.OAuth = cluster.OAuth{ClientID: "c"} },
			[]fp{{"peer.oauth", "only used with SASL mechanism OAUTHBEARER"}}},

		// direction
		{"direction pull", func(x *task.Task) { x.Rules.Direction = "pull" }, nil},
		{"direction bidirectional with header", func(x *task.Task) { x.Rules.Direction = "bidirectional"; x.Rules.AddSourceHeader = true }, nil},
		{"direction empty", func(x *task.Task) { x.Rules.Direction = "" }, []fp{{"rules.direction", "required"}}},
		{"direction bad", func(x *task.Task) { x.Rules.Direction = "both" }, []fp{{"rules.direction", "pull (peer to current), push (current to peer) or bidirectional"}}},

		// topics vs regex
		{"regex instead of list", func(x *task.Task) { x.Rules.Topics = nil; x.Rules.TopicsRegex = "orders|pay.*" }, nil},
		{"no topics", func(x *task.Task) { x.Rules.Topics = nil; noMappings(x) }, []fp{{"rules.topics", "choose the topics"}}},
		{"topics and regex", func(x *task.Task) { x.Rules.TopicsRegex = "orders" }, []fp{{"rules.topics_regex", "not both"}}},

		// topic list
		{"20 topics", func(x *task.Task) { x.Rules.Topics = append(names("t", 19), "orders") }, nil},
		{"21 topics", func(x *task.Task) { x.Rules.Topics = append(names("t", 20), "orders") }, []fp{{"rules.topics", "at most 20 topics"}}},
		{"topic 249 chars", func(x *task.Task) { x.Rules.Topics = append(x.Rules.Topics, strings.Repeat("t", 249)) }, nil},
		{"topic 250 chars", func(x *task.Task) { x.Rules.Topics = append(x.Rules.Topics, strings.Repeat("t", 250)) }, []fp{{"rules.topics", "longer than Kafka's 249"}}},
		{"topic bad chars", func(x *task.Task) { x.Rules.Topics = append(x.Rules.Topics, "or ders") }, []fp{{"rules.topics", "not a valid Kafka topic name"}}},
		{"topic non-ascii", func(x *task.Task) { x.Rules.Topics = append(x.Rules.Topics, "訂單") }, []fp{{"rules.topics", "not a valid Kafka topic name"}}},
		{"topic dot", func(x *task.Task) { x.Rules.Topics = append(x.Rules.Topics, ".", "..") }, []fp{{"rules.topics", `"." is not a valid`}, {"rules.topics", `".." is not a valid`}}},
		{"topic duplicate", func(x *task.Task) { x.Rules.Topics = append(x.Rules.Topics, "payments") }, []fp{{"rules.topics", "listed twice"}}},
		{"topic internal suffix", func(x *task.Task) { x.Rules.Topics = append(x.Rules.Topics, "topic.internal") }, []fp{{"rules.topics", "never replicated"}}},
		{"topic internal prefix", func(x *task.Task) { x.Rules.Topics = append(x.Rules.Topics, "__consumer_offsets") }, []fp{{"rules.topics", "never replicated"}}},
		{"heartbeats topic", func(x *task.Task) { x.Rules.Topics = append(x.Rules.Topics, "C.heartbeats") }, []fp{{"rules.topics", "replicates heartbeats topics by itself"}}},
		{"topic mm2 internal", func(x *task.Task) { x.Rules.Topics = append(x.Rules.Topics, "mm2-configs.B") }, []fp{{"rules.topics", "never replicated"}}},
		{"topic internal word inside ok", func(x *task.Task) { x.Rules.Topics = append(x.Rules.Topics, "internal-orders") }, nil},
		{"topic came from target", func(x *task.Task) { x.Rules.Topics = append(x.Rules.Topics, "B.orders") }, []fp{{"rules.topics", "never copied back"}}},
		{"topic from another alias ok", func(x *task.Task) { x.Rules.Topics = append(x.Rules.Topics, "C.orders", "A.orders") }, nil},
		{"pull topic came from current", func(x *task.Task) { x.Rules.Direction = "pull"; x.Rules.Topics = append(x.Rules.Topics, "A.orders") }, []fp{{"rules.topics", "alias \"A\""}}},
		{"renamed topic too long", func(x *task.Task) {
			noMappings(x)
			x.Rules.RenameTopics = true
			x.Rules.Topics = []string{strings.Repeat("t", 248)}
		}, []fp{{"rules.topics", "renamed to"}}},
		{"renamed topic 247 ok", func(x *task.Task) {
			noMappings(x)
			x.Rules.RenameTopics = true
			x.Rules.Topics = []string{strings.Repeat("t", 247)}
		}, nil},

		// regex
		{"regex named group ok", func(x *task.Task) { x.Rules.Topics = nil; x.Rules.TopicsRegex = `(?P<t>orders)|(?<p>payments)` }, nil},
		{"regex invalid", func(x *task.Task) { x.Rules.Topics = nil; x.Rules.TopicsRegex = "(orders" }, []fp{{"rules.topics_regex", "not a valid regular expression"}}},
		{"regex breaks out of anchoring", func(x *task.Task) { x.Rules.Topics = nil; x.Rules.TopicsRegex = "orders)|(.*" }, []fp{{"rules.topics_regex", "not a valid regular expression"}}},
		{"regex lookahead", func(x *task.Task) { x.Rules.Topics = nil; noMappings(x); x.Rules.TopicsRegex = "(?!internal).*" }, []fp{{"rules.topics_regex", "lookahead or lookbehind"}}},
		{"regex lookbehind", func(x *task.Task) { x.Rules.Topics = nil; noMappings(x); x.Rules.TopicsRegex = "a(?<!b)" }, []fp{{"rules.topics_regex", "RE2"}}},
		{"regex backreference", func(x *task.Task) { x.Rules.Topics = nil; noMappings(x); x.Rules.TopicsRegex = `(a)\1` }, []fp{{"rules.topics_regex", "backreference"}}},
		{"regex possessive", func(x *task.Task) { x.Rules.Topics = nil; noMappings(x); x.Rules.TopicsRegex = "a*+" }, []fp{{"rules.topics_regex", "possessive"}}},
		{"regex too long", func(x *task.Task) {
			x.Rules.Topics = nil
			noMappings(x)
			x.Rules.TopicsRegex = strings.Repeat("a", 1001)
		}, []fp{{"rules.topics_regex", "longer than 1000"}}},
		{"regex only internal", func(x *task.Task) { x.Rules.Topics = nil; noMappings(x); x.Rules.TopicsRegex = "__.*|.*[.]internal" }, []fp{{"rules.topics_regex", "matches no topic kmirror would replicate"}}},
		{"regex matches no topic name", func(x *task.Task) { x.Rules.Topics = nil; noMappings(x); x.Rules.TopicsRegex = "orders list" }, []fp{{"rules.topics_regex", "matches no topic"}}},
		{"regex word boundary ok", func(x *task.Task) { x.Rules.Topics = nil; noMappings(x); x.Rules.TopicsRegex = `.*\border\b.*` }, nil},

		// tasks
		{"tasks 1", func(x *task.Task) { x.Rules.Tasks = 1 }, nil},
		{"tasks 64", func(x *task.Task) { x.Rules.Tasks = 64 }, nil},
		{"tasks 0", func(x *task.Task) { x.Rules.Tasks = 0 }, []fp{{"rules.tasks", "at least 1"}}},
		{"tasks negative", func(x *task.Task) { x.Rules.Tasks = -2 }, []fp{{"rules.tasks", "at least 1"}}},
		{"tasks 65", func(x *task.Task) { x.Rules.Tasks = 65 }, []fp{{"rules.tasks", "at most 64"}}},

		// bidirectional protection
		{"bidirectional with rename", func(x *task.Task) { noMappings(x); x.Rules.Direction = "bidirectional"; x.Rules.RenameTopics = true }, nil},
		{"bidirectional unprotected", func(x *task.Task) { x.Rules.Direction = "bidirectional" }, []fp{{"rules.add_source_header", "copied back and forth forever"}}},

		// replication factor
		{"replication factor 3", func(x *task.Task) { x.Rules.ReplicationFactor = 3 }, nil},
		{"replication factor 0", func(x *task.Task) { x.Rules.ReplicationFactor = 0 }, []fp{{"rules.replication_factor", "at least 1"}}},
		{"replication factor left to the target", func(x *task.Task) { x.Rules.ReplicationFactor = -1 }, nil},
		{"replication factor negative", func(x *task.Task) { x.Rules.ReplicationFactor = -2 }, []fp{{"rules.replication_factor", "at least 1"}}},
		{"replication factor too big", func(x *task.Task) { x.Rules.ReplicationFactor = 40000 }, []fp{{"rules.replication_factor", "at most 32767"}}},

		// start offset
		{"start offset latest", func(x *task.Task) { x.Rules.StartOffset = "latest" }, nil},
		{"start offset empty", func(x *task.Task) { x.Rules.StartOffset = "" }, []fp{{"rules.start_offset", "earliest"}}},
		{"start offset bad", func(x *task.Task) { x.Rules.StartOffset = "newest" }, []fp{{"rules.start_offset", "earliest (oldest data first) or latest"}}},

		// compression
		{"compression none", func(x *task.Task) { x.Rules.Compression = "none" }, nil},
		{"compression gzip", func(x *task.Task) { x.Rules.Compression = "gzip" }, nil},
		{"compression snappy", func(x *task.Task) { x.Rules.Compression = "snappy" }, nil},
		{"compression zstd", func(x *task.Task) { x.Rules.Compression = "zstd" }, nil},
		{"compression bad", func(x *task.Task) { x.Rules.Compression = "brotli" }, []fp{{"rules.compression", "none, gzip, snappy, lz4 or zstd"}}},
		{"on target topic replaced bad", func(x *task.Task) { x.Rules.OnTargetTopicReplaced = "ignore" }, []fp{{"rules.on_target_topic_replaced", "recopy"}}},
		{"on target topic replaced continue", func(x *task.Task) { x.Rules.OnTargetTopicReplaced = task.TargetReplacedContinue }, nil},
		{"delivery exactly once", func(x *task.Task) { x.Rules.Delivery = task.DeliveryExactlyOnce }, nil},
		{"delivery at least once", func(x *task.Task) { x.Rules.Delivery = task.DeliveryAtLeastOnce }, nil},
		{"delivery bad", func(x *task.Task) { x.Rules.Delivery = "at_most_once" }, []fp{{"rules.delivery", "at_least_once (the default) or exactly_once"}}},
		{"transaction interval without exactly once", func(x *task.Task) { x.Rules.TransactionIntervalMs = 500 }, []fp{{"rules.transaction_interval_ms", "exactly_once delivery only"}}},
		{"transaction interval 100 ms", func(x *task.Task) {
			x.Rules.Delivery, x.Rules.TransactionIntervalMs = task.DeliveryExactlyOnce, 100
		}, nil},
		{"transaction interval too short", func(x *task.Task) {
			x.Rules.Delivery, x.Rules.TransactionIntervalMs = task.DeliveryExactlyOnce, 99
		}, []fp{{"rules.transaction_interval_ms", "between 100 and 60000 ms"}}},
		{"transaction interval too long", func(x *task.Task) {
			x.Rules.Delivery, x.Rules.TransactionIntervalMs = task.DeliveryExactlyOnce, 60001
		}, []fp{{"rules.transaction_interval_ms", "between 100 and 60000 ms"}}},
		{"transaction interval negative", func(x *task.Task) {
			x.Rules.Delivery, x.Rules.TransactionIntervalMs = task.DeliveryExactlyOnce, -1
		}, []fp{{"rules.transaction_interval_ms", "between 100 and 60000 ms"}}},
		{"compression upper case", func(x *task.Task) { x.Rules.Compression = "LZ4" }, []fp{{"rules.compression", "lz4"}}},

		// topic mappings
		{"mappings with rename", func(x *task.Task) { x.Rules.RenameTopics = true }, []fp{{"rules.rename_topics", "cannot be combined"}}},
		{"20 mappings", func(x *task.Task) {
			x.Rules.Topics = names("t", 20)
			x.Rules.TopicMappings = nil
			for i, s := range x.Rules.Topics {
				x.Rules.TopicMappings = append(x.Rules.TopicMappings, task.Mapping{Source: s, Target: fmt.Sprintf("copy-%d", i)})
			}
		}, nil},
		{"21 mappings", func(x *task.Task) {
			x.Rules.Topics, x.Rules.TopicsRegex, x.Rules.TopicMappings = nil, "t.*", nil
			for i := range 21 {
				x.Rules.TopicMappings = append(x.Rules.TopicMappings, task.Mapping{Source: fmt.Sprintf("t%d", i), Target: fmt.Sprintf("copy-%d", i)})
			}
		}, []fp{{"rules.topic_mappings", "at most 20 topic mappings"}}},
		{"mapping source empty", func(x *task.Task) { x.Rules.TopicMappings[0].Source = "" }, []fp{{"rules.topic_mappings[0].source", "needs a source topic"}}},
		{"mapping target empty", func(x *task.Task) { x.Rules.TopicMappings[0].Target = "" }, []fp{{"rules.topic_mappings[0].target", "needs a target topic"}}},
		{"mapping source invalid", func(x *task.Task) { x.Rules.TopicMappings[0].Source = "or ders" }, []fp{{"rules.topic_mappings[0].source", "not a valid Kafka topic name"}}},
		{"mapping target invalid", func(x *task.Task) { x.Rules.TopicMappings[0].Target = "copy/1" }, []fp{{"rules.topic_mappings[0].target", "not a valid Kafka topic name"}}},
		{"mapping target too long", func(x *task.Task) { x.Rules.TopicMappings[0].Target = strings.Repeat("c", 250) }, []fp{{"rules.topic_mappings[0].target", "longer than"}}},
		{"mapping source internal", func(x *task.Task) {
			x.Rules.Topics, x.Rules.TopicsRegex = nil, ".*"
			x.Rules.TopicMappings[0].Source = "__consumer_offsets"
		}, []fp{{"rules.topic_mappings[0].source", "never replicated"}}},
		{"mapping target internal", func(x *task.Task) { x.Rules.TopicMappings[0].Target = "copy.internal" }, []fp{{"rules.topic_mappings[0].target", "internal topic name"}}},
		{"mapping duplicate source", func(x *task.Task) {
			x.Rules.TopicMappings = append(x.Rules.TopicMappings, task.Mapping{Source: "orders", Target: "orders-2"})
		}, []fp{{"rules.topic_mappings[1].source", "already mapped by mapping 1"}}},
		{"mapping duplicate target", func(x *task.Task) {
			x.Rules.TopicMappings = append(x.Rules.TopicMappings, task.Mapping{Source: "payments", Target: "orders-copy"})
		}, []fp{{"rules.topic_mappings[1].target", "already the target of mapping 1"}}},
		{"mapping targets collide", func(x *task.Task) {
			x.Rules.TopicMappings = []task.Mapping{{Source: "orders", Target: "a.b"}, {Source: "payments", Target: "a_b"}}
		}, []fp{{"rules.topic_mappings[1].target", "differ only in '.' and '_'"}}},
		{"mapping source not listed", func(x *task.Task) { x.Rules.TopicMappings[0].Source = "refunds" }, []fp{{"rules.topic_mappings[0].source", "not among the selected topics"}}},
		{"mapping source matches regex", func(x *task.Task) { x.Rules.Topics, x.Rules.TopicsRegex = nil, "ord.*" }, nil},
		{"mapping source misses regex", func(x *task.Task) { x.Rules.Topics, x.Rules.TopicsRegex = nil, "pay.*" }, []fp{{"rules.topic_mappings[0].source", "does not match topics_regex"}}},
		{"mapping source came from target", func(x *task.Task) {
			x.Rules.Topics, x.Rules.TopicsRegex = nil, ".*"
			x.Rules.TopicMappings[0].Source = "B.orders"
		}, []fp{{"rules.topic_mappings[0].source", "never copied back"}}},
		{"mapping onto listed topic", func(x *task.Task) { x.Rules.TopicMappings[0].Target = "payments" }, []fp{{"rules.topic_mappings[0].target", "mix in one target topic"}}},
		{"mapping swap ok", func(x *task.Task) {
			x.Rules.TopicMappings = []task.Mapping{{Source: "orders", Target: "payments"}, {Source: "payments", Target: "orders"}}
		}, nil},
		{"mapping identity ok", func(x *task.Task) { x.Rules.TopicMappings[0].Target = "orders" }, nil},

		// several at once: every problem is reported, not just the first
		{"everything wrong", func(x *task.Task) { *x = task.Task{} }, []fp{
			{"name", "required"}, {"type", "required"}, {"current.cluster", "required"}, {"current.alias", "required"},
			{"peer.alias", "required"}, {"peer.config_type", "required"}, {"rules.direction", "required"},
			{"rules.topics", "choose the topics"}, {"rules.tasks", "at least 1"}, {"rules.replication_factor", "at least 1"},
			{"rules.start_offset", "earliest"}, {"rules.compression", "none"}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			x := validTask()
			tc.edit(&x)
			checkProblems(t, ValidateTask(x), tc.want)
		})
	}
}

func checkProblems(t *testing.T, got Problems, want []fp) {
	t.Helper()
	used := make([]bool, len(got))
	for _, w := range want {
		found := false
		for i, p := range got {
			if !used[i] && p.Field == w.field && strings.Contains(p.Message, w.phrase) {
				used[i], found = true, true
				break
			}
		}
		if !found {
			t.Errorf("missing problem %s: ...%s...", w.field, w.phrase)
		}
	}
	for i, p := range got {
		if !used[i] {
			t.Errorf("unexpected problem %s: %s", p.Field, p.Message)
		}
	}
}

func TestNormalizeTask(t *testing.T) {
	in := task.Task{
		Name:    "  orders-dr ",
		Current: task.Current{Cluster: " east", Alias: "A "},
		Peer: task.Peer{Alias: " B", Address: []string{" k1:9092 ", "", "  ", "k2:9092"},
			Username: " alice ", Password: "  pass word  ", CAPEM: "\n"},
		Rules: task.Rules{Direction: " push ", Topics: []string{" orders", "", "payments "},
			TopicMappings: []task.Mapping{{Source: " orders ", Target: " copy "}, {}, {Source: " ", Target: ""}}},
	}
	got := NormalizeTask(in)
	want := task.Task{
		Name: "orders-dr", Type: "kafka-replication",
		Current: task.Current{Cluster: "east", Alias: "A"},
		Peer: task.Peer{Alias: "B", ConfigType: "address", Address: []string{"k1:9092", "k2:9092"},
			SecurityProtocol: "PLAINTEXT", Username: "alice", Password: "  pass word  "},
		// Tasks and replication factor stay 0: decoding fills omitted
		// ones, so a 0 here was sent and is the validator's to refuse.
		Rules: task.Rules{Direction: "push", Topics: []string{"orders", "payments"},
			StartOffset: "earliest", Compression: "none",
			TopicMappings: []task.Mapping{{Source: "orders", Target: "copy"}}},
	}
	gj, _ := json.Marshal(got)
	wj, _ := json.Marshal(want)
	if string(gj) != string(wj) {
		t.Fatalf("NormalizeTask:\n got %s\nwant %s", gj, wj)
	}
	if again := NormalizeTask(got); !sameConfig(again, got) || again.Peer.Password != got.Peer.Password {
		t.Error("NormalizeTask is not idempotent")
	}

	t.Run("peer by cluster inferred, no protocol default", func(t *testing.T) {
		got := NormalizeTask(task.Task{Peer: task.Peer{Cluster: " west "}})
		if got.Peer.ConfigType != "cluster" || got.Peer.SecurityProtocol != "" {
			t.Errorf("peer = %+v", got.Peer)
		}
	})
	t.Run("ambiguous config type left for the validator", func(t *testing.T) {
		got := NormalizeTask(task.Task{Peer: task.Peer{Cluster: "west", Address: []string{"k:1"}}})
		if got.Peer.ConfigType != "" {
			t.Errorf("config type = %q", got.Peer.ConfigType)
		}
	})
	t.Run("explicit values kept", func(t *testing.T) {
		x := validTask()
		x.Rules.Tasks, x.Rules.ReplicationFactor, x.Rules.StartOffset = 5, 3, "latest"
		if got := NormalizeTask(x); !sameConfig(got, x) {
			t.Errorf("changed a valid task: %+v", got)
		}
	})
	t.Run("add source header never flipped", func(t *testing.T) {
		x := validTask()
		x.Rules.Direction, x.Rules.AddSourceHeader = "bidirectional", false
		if NormalizeTask(x).Rules.AddSourceHeader {
			t.Error("add_source_header turned on")
		}
	})
}

func FuzzValidateTask(f *testing.F) {
	seed, _ := json.Marshal(validTask())
	f.Add(seed, "orders")
	f.Add([]byte(`{"name":"x","peer":{"config_type":"cluster","cluster":"east"},"rules":{"direction":"bidirectional","topics_regex":"(?!a)"}}`), "(a")
	f.Add([]byte(`{"rules":{"topic_mappings":[{},{"source":"a"}],"tasks":-1,"replication_factor":99999999999}}`), " \x00\xff ")
	f.Add([]byte(`null`), "a)|(b")
	f.Add([]byte(`{"peer":{"address":["[::1]:1","[::1]:1",""]},"rules":{"topics":[".",".."]}}`), "__x.internal")
	existing := []task.Task{validTask(), mk("first", "east", "west", "push", ".*"), with(mk("bidi", "west", "east", "bidirectional", "o.*"), header)}
	f.Fuzz(func(t *testing.T, data []byte, s string) {
		var x task.Task
		_ = json.Unmarshal(data, &x) // whatever decodes, partly or not
		variants := []task.Task{x}
		v := x
		v.Name, v.Current.Alias, v.Peer.Alias, v.Peer.Cluster = s, s, s, s
		variants = append(variants, v)
		v = x
		v.Peer.Address, v.Rules.Topics, v.Rules.TopicsRegex = []string{s, s}, []string{s}, s
		v.Rules.TopicMappings = append(v.Rules.TopicMappings, task.Mapping{Source: s, Target: s})
		variants = append(variants, v)
		v = validTask()
		v.Rules.Topics, v.Rules.TopicsRegex, v.Rules.TopicMappings = nil, s, nil
		variants = append(variants, v)
		for _, in := range variants {
			n := NormalizeTask(in)
			if n.Peer.Password != in.Peer.Password {
				t.Fatal("NormalizeTask changed the password")
			}
			if again := NormalizeTask(n); !sameConfig(again, n) {
				t.Fatalf("NormalizeTask not idempotent:\n%+v\n%+v", n, again)
			}
			for _, p := range append(ValidateTask(in), ValidateTask(n)...) {
				if p.Field == "" || p.Message == "" {
					t.Fatalf("empty problem %+v", p)
				}
			}
			p, warnings := CheckAgainstTasks(in, append(existing, in), testAddrs)
			for _, pr := range p {
				if pr.Field == "" || pr.Message == "" {
					t.Fatalf("empty problem %+v", pr)
				}
			}
			for _, w := range warnings {
				if w == "" {
					t.Fatal("empty warning")
				}
			}
		}
	})
}

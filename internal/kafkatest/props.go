package kafkatest

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
)

// User is a SASL user every cluster knows, for PLAIN and both SCRAM mechanisms.
type User struct {
	Name     string
	Password string
}

// The users of every cluster. Passwords hold no comma: --add-scram cannot
// take one.
var (
	// Admin is a super user, allowed everything even with ACLs on.
	Admin = User{Name: "admin", Password: "admin-secret"}
	// Alice is the ordinary user tests connect as; with ACLs on she is
	// granted everything on topics, groups and transactional ids.
	Alice = User{Name: "alice", Password: "alice-secret"}
	// Bob authenticates but is granted nothing: with ACLs on he may not
	// create, read or write topics.
	Bob = User{Name: "bob", Password: "bob-secret"}
)

// Users lists every user a cluster knows.
func Users() []User { return []User{Admin, Alice, Bob} }

// Listener names double as their security protocols, except CONTROLLER.
const controllerListener = "CONTROLLER"

// controllerNodeID is the node id of the KRaft controller of a
// multi-broker cluster; brokers are 1..N.
const controllerNodeID = 100

// brokerConfig is everything server.properties depends on. The zero Roles
// is the single-node cluster: one combined broker and controller, node 1.
type brokerConfig struct {
	NodeID      int32
	Roles       string         // "", "broker" or "controller"
	Ports       map[string]int // this node's listener name -> port
	Controller  int            // port of the controller's CONTROLLER listener
	Brokers     int            // brokers in the cluster: the replication factors
	MinISR      int            // min.insync.replicas; 0 is Kafka's default (1)
	DataDir     string
	KeystoreDir string // holds keystore.pem and ca.pem
	ACLs        bool
	// JWKSURL and Issuer are the identity provider's, for OAUTHBEARER on
	// the SASL listeners.
	JWKSURL, Issuer string
	// Quiet: a test cluster, which spends most of its life idle; less
	// housekeeping (FullSpeed clusters, the benchmark's, keep Kafka's).
	Quiet     bool
	Overrides map[string]string // set last, on every node
}

// serverProperties renders one node's server.properties. The controller
// and inter-broker traffic stay on PLAINTEXT, so its anonymous principal
// must be a super user once ACLs are on.
func serverProperties(c brokerConfig) string {
	brokers := max(c.Brokers, 1)
	rf := strconv.Itoa(brokers)
	minISR := strconv.Itoa(max(c.MinISR, 1))
	p := map[string]string{
		"controller.listener.names":      controllerListener,
		"inter.broker.listener.name":     "PLAINTEXT",
		"listeners":                      listenerList(c.Ports),
		"advertised.listeners":           listenerList(c.Ports),
		"listener.security.protocol.map": "CONTROLLER:PLAINTEXT,PLAINTEXT:PLAINTEXT,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL,SSL:SSL," + ListenerMTLS + ":SASL_SSL",
		"log.dirs":                       c.DataDir,

		"sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512,OAUTHBEARER",
		// Every TLS listener: a PEM keystore file (chain + PKCS#8 key) made
		// in Go. SSL and MTLS require a client certificate signed by the
		// cluster's CA, whose common name is the principal (CN=alice is
		// User:alice); SASL_SSL asks for none.
		"ssl.keystore.type":                      "PEM",
		"ssl.keystore.location":                  c.KeystoreDir + "/keystore.pem",
		"ssl.truststore.type":                    "PEM",
		"ssl.truststore.location":                c.KeystoreDir + "/ca.pem",
		"ssl.principal.mapping.rules":            "RULE:^CN=([^,]+).*$/$1/,DEFAULT",
		"listener.name.sasl_ssl.ssl.client.auth": "none",
		"listener.name.ssl.ssl.client.auth":      "required",
		"listener.name.mtls.ssl.client.auth":     "required",

		// OAUTHBEARER: tokens of the test's identity provider, validated
		// by Kafka's own JWT validator against its JWKS.
		"sasl.oauthbearer.jwks.endpoint.url": c.JWKSURL,
		"sasl.oauthbearer.expected.audience": OAuthAudience,
		"sasl.oauthbearer.expected.issuer":   c.Issuer,
		// Sessions end with their token (at most an hour): a client whose
		// token ran out re-authenticates on its connection (KIP-368).
		"connections.max.reauth.ms": "3600000",

		// Every internal topic has a replica on every broker. Fewer
		// partitions for the internal topics make the first group or
		// transaction fast.
		"offsets.topic.replication.factor":                 rf,
		"offsets.topic.num.partitions":                     "4",
		"transaction.state.log.replication.factor":         rf,
		"transaction.state.log.min.isr":                    minISR,
		"transaction.state.log.num.partitions":             "4",
		"share.coordinator.state.topic.replication.factor": rf,
		"share.coordinator.state.topic.min.isr":            minISR,
		"share.coordinator.state.topic.num.partitions":     "1",
		"default.replication.factor":                       rf,
		"num.partitions":                                   "1",
		"group.initial.rebalance.delay.ms":                 "0",
		// A deleted topic's files go after 1 s instead of 60: disk space
		// comes back in long runs, and the benchmark's next copier does not
		// share the disk with the write-back of the last one's data.
		"file.delete.delay.ms": "1000",
		// No time retention: tests write records with old timestamps (a
		// fixed base for deterministic data), which the default 7 days
		// would delete at the next retention check. Topics that want
		// retention set retention.ms.
		"log.retention.ms": "-1",
	}
	if c.MinISR > 0 {
		p["min.insync.replicas"] = minISR
	}
	if c.Quiet {
		// An idle test JVM's CPU is CI's largest cost (a test package keeps
		// its clusters to its end). Measured with kafka-up, CPU-s a minute
		// over 2 idle minutes: one node 1.30 -> 0.97 with the first
		// setting; 3 brokers and a controller 4.46 -> 3.18 with both.
		// The active controller appends a no-op record every 500 ms so the
		// metadata log's high watermark moves, and every node applies it.
		p["metadata.max.idle.interval.ms"] = "5000"
		// An idle follower asks its leader again every 500 ms. A write
		// answers a waiting follower fetch at once, so acks=all writes wait
		// no longer; a follower learns an idle partition's high watermark
		// up to 2 s later, which only reads from followers (none here) see.
		p["replica.fetch.wait.max.ms"] = "2000"
	}
	switch c.Roles {
	case "":
		p["process.roles"] = "broker,controller"
		p["node.id"] = "1"
		p["controller.quorum.bootstrap.servers"] = fmt.Sprintf("127.0.0.1:%d", c.Ports[controllerListener])
		p["listeners"] += fmt.Sprintf(",CONTROLLER://127.0.0.1:%d", c.Ports[controllerListener])
	default:
		// A static quorum of one controller: simpler than a dynamic one,
		// and every node knows the voter set from its own properties.
		p["process.roles"] = c.Roles
		p["node.id"] = strconv.Itoa(int(c.NodeID))
		p["controller.quorum.voters"] = fmt.Sprintf("%d@127.0.0.1:%d", controllerNodeID, c.Controller)
		if c.Roles == "controller" {
			p["listeners"] = fmt.Sprintf("CONTROLLER://127.0.0.1:%d", c.Controller)
			delete(p, "advertised.listeners")
			delete(p, "inter.broker.listener.name")
		}
	}
	for _, l := range []string{"sasl_plaintext", "sasl_ssl", "mtls"} {
		p["listener.name."+l+".oauthbearer.sasl.jaas.config"] = "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required;"
		p["listener.name."+l+".oauthbearer.sasl.server.callback.handler.class"] = "org.apache.kafka.common.security.oauthbearer.OAuthBearerValidatorCallbackHandler"
		p["listener.name."+l+".plain.sasl.jaas.config"] = plainJAAS(Users())
		p["listener.name."+l+".scram-sha-256.sasl.jaas.config"] = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
		p["listener.name."+l+".scram-sha-512.sasl.jaas.config"] = "org.apache.kafka.common.security.scram.ScramLoginModule required;"
	}
	if c.ACLs {
		p["authorizer.class.name"] = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
		p["super.users"] = "User:ANONYMOUS;User:" + Admin.Name
		p["allow.everyone.if.no.acl.found"] = "false"
	}
	maps.Copy(p, c.Overrides)

	keys := slices.Sorted(maps.Keys(p))
	var b strings.Builder
	b.WriteString("# Written by kmirror's kafkatest; regenerated at every start.\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, p[k])
	}
	return b.String()
}

// ListenerMTLS is the name of every broker's SASL_SSL listener that also
// requires a client certificate (the SSL listener requires one too).
const ListenerMTLS = "MTLS"

// listenerList is listeners (and advertised.listeners) for a node's ports:
// every broker listener it has a port for, on 127.0.0.1.
func listenerList(ports map[string]int) string {
	var l []string
	for _, name := range brokerListeners {
		if p, ok := ports[name]; ok {
			l = append(l, fmt.Sprintf("%s://127.0.0.1:%d", name, p))
		}
	}
	return strings.Join(l, ",")
}

// plainJAAS declares the PLAIN users; SCRAM users are added at format time.
func plainJAAS(users []User) string {
	var b strings.Builder
	b.WriteString("org.apache.kafka.common.security.plain.PlainLoginModule required")
	for _, u := range users {
		fmt.Fprintf(&b, " user_%s=%q", u.Name, u.Password)
	}
	b.WriteString(";")
	return b.String()
}

// scramArgs are the StorageTool flags creating every user for both SCRAM
// mechanisms, so no admin step is needed after start.
func scramArgs(users []User) []string {
	var args []string
	for _, mech := range []string{"SCRAM-SHA-256", "SCRAM-SHA-512"} {
		for _, u := range users {
			args = append(args, "--add-scram", fmt.Sprintf("%s=[name=%s,password=%s]", mech, u.Name, u.Password))
		}
	}
	return args
}

// log4j2Properties sends the broker's log to stdout, which the harness
// writes to logs/server.log. Properties, not YAML: log4j-core reads
// properties without extra jars.
const log4j2Properties = `status = warn
name = kafkatest
appender.out.type = Console
appender.out.name = OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = OUT
logger.kafka.name = kafka
logger.kafka.level = INFO
logger.controller.name = kafka.controller
logger.controller.level = INFO
logger.state.name = state.change.logger
logger.state.level = WARN
logger.authorizer.name = kafka.authorizer.logger
logger.authorizer.level = WARN
`

package kafkatest

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
)

// startedLine is what kafka.server.KafkaRaftServer logs once the broker
// serves clients.
const startedLine = "Kafka Server started"

// Opt changes how a cluster is started.
type Opt func(*options)

type options struct {
	name         string
	heapMB       int
	acls         bool
	startTimeout time.Duration
	dir          string
	brokers      int
	minISR       int
	props        map[string]string
	fullSpeed    bool
	// dumpClasses: the broker writes the classes it loaded there as it
	// exits (classes.go's training run).
	dumpClasses string
}

func defaults() options {
	return options{heapMB: 512, startTimeout: 3 * time.Minute, brokers: 1}
}

// Name names the cluster in logs and kept-log directories.
func Name(n string) Opt { return func(o *options) { o.name = n } }

// HeapMB sets each broker's JVM heap (-Xms and -Xmx). Tests use the default
// 512; benchmarks want 1024 or more. The controller of a multi-broker
// cluster gets at most 256.
func HeapMB(mb int) Opt { return func(o *options) { o.heapMB = mb } }

// FullSpeed runs the brokers' JVMs as production does (the optimising JIT,
// G1), for benchmarks; tests get the lighter runtime of jvmFlags.
func FullSpeed() Opt { return func(o *options) { o.fullSpeed = true } }

// ACLs turns on the StandardAuthorizer: Admin and the PLAINTEXT (anonymous)
// listener are super users, Alice is granted everything on topics, groups
// and transactional ids, Bob nothing.
func ACLs(on bool) Opt { return func(o *options) { o.acls = on } }

// Dir keeps the cluster's files (config, data, logs) in dir instead of a new
// temporary directory.
func Dir(dir string) Opt { return func(o *options) { o.dir = dir } }

// Brokers starts n brokers (node ids 1..n) and one KRaft controller (node
// id 100, a static quorum) instead of one combined node. Every broker has
// the three listeners; the default replication factor and the internal
// topics' replication factors are n. Brokers(1) is the single-node cluster.
func Brokers(n int) Opt { return func(o *options) { o.brokers = n } }

// MinInsyncReplicas sets min.insync.replicas on every broker, and the
// min ISR of the transaction and share-state topics. Unset, Kafka's
// default (1) applies. At most the number of brokers.
func MinInsyncReplicas(n int) Opt { return func(o *options) { o.minISR = n } }

// BrokerProps sets server properties on every node, after the harness's
// own (so they win), e.g. offsets.retention.minutes, log.roll.ms or
// log.cleaner.* to compact quickly. Several calls add up.
func BrokerProps(props map[string]string) Opt {
	return func(o *options) {
		if o.props == nil {
			o.props = map[string]string{}
		}
		maps.Copy(o.props, props)
	}
}

// Cluster is one running KRaft cluster: a single combined node (the
// default), or N brokers and a controller (Brokers).
type Cluster struct {
	name    string
	id      string
	dir     string
	version string
	ca      *CA

	startTimeout time.Duration

	// controller is nil for a single-node cluster, whose one node is
	// brokers[0] in both roles.
	controller *node
	brokers    []*node // by node id, 1..N

	// procMu serializes Stop, Kill and Restart, of the cluster or of one
	// broker.
	procMu sync.Mutex

	adminMu     sync.Mutex
	adminClient sarama.Client // to tell whether a caller closed the shared admin
	admin       sarama.ClusterAdmin
}

// node is one Kafka JVM of the cluster.
type node struct {
	id    int32
	label string // "broker-1", "controller"; the cluster's name for a single node
	dir   string // holds config/, data/, logs/
	ports map[string]int
	argv  []string // java and its arguments: a restart runs the same node again

	proc    *process // the running JVM, nil while the node is down
	stopErr error    // why the last stop was not clean; Stop returns it again
	killed  bool     // the last stop was a SIGKILL (for logs and errors)
}

// howDown says how a stopped node went down, for restart logs and errors.
func (n *node) howDown() string {
	if n.killed {
		return "after it was killed"
	}
	return "after a clean stop"
}

func (n *node) isBroker() bool { return n.ports[cluster.Plaintext] != 0 }

// process is one run of a node's JVM.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed when the JVM has exited
	err    error         // set before exited is closed
}

// Name is the cluster's name.
func (c *Cluster) Name() string { return c.name }

// ID is the KRaft cluster id.
func (c *Cluster) ID() string { return c.id }

// Dir holds the cluster's files: config/, data/ and logs/ of a single node;
// config/ (the CA) and one directory per node (controller, broker-1, ...)
// of a multi-broker cluster.
func (c *Cluster) Dir() string { return c.dir }

// LogDir holds the broker's log (server.log) and the format tool's; for a
// multi-broker cluster, that of broker 1 (BrokerLogDir for the others).
func (c *Cluster) LogDir() string { return filepath.Join(c.brokers[0].dir, "logs") }

// BrokerLogDir is LogDir of broker id.
func (c *Cluster) BrokerLogDir(id int32) string {
	return filepath.Join(c.broker(id).dir, "logs")
}

// Version is the Apache Kafka version running.
func (c *Cluster) Version() string { return c.version }

// CAPEM is the PEM certificate of the CA that signed the TLS listeners'
// certificates.
func (c *Cluster) CAPEM() string { return c.ca.PEM }

// CA is the cluster's CA: it signed the brokers' certificates, and the
// brokers accept client certificates it signs (CA.ClientCert).
func (c *Cluster) CA() *CA { return c.ca }

// CAFile is the path of CAPEM on disk, for tools outside Go.
func (c *Cluster) CAFile() string { return filepath.Join(c.dir, "config", "ca.pem") }

// BrokerIDs are the node ids of the brokers, 1..N.
func (c *Cluster) BrokerIDs() []int32 {
	ids := make([]int32, len(c.brokers))
	for i, b := range c.brokers {
		ids[i] = b.id
	}
	return ids
}

// broker is the broker with node id id; it panics on an unknown id (a bug
// in the test).
func (c *Cluster) broker(id int32) *node {
	if id < 1 || int(id) > len(c.brokers) {
		panic(fmt.Sprintf("kafkatest: cluster %s has no broker %d (ids 1..%d)", c.name, id, len(c.brokers)))
	}
	return c.brokers[id-1]
}

// Bootstrap is the bootstrap.servers string for a security protocol
// (PLAINTEXT, SASL_PLAINTEXT or SASL_SSL): host:port of that listener on
// every broker, comma-separated (one address on a single-node cluster).
// Go clients take BootstrapServers.
func (c *Cluster) Bootstrap(protocol string) string {
	return strings.Join(c.BootstrapServers(protocol), ",")
}

// BootstrapServers is Bootstrap as a list, one address per broker.
func (c *Cluster) BootstrapServers(protocol string) []string {
	addrs := make([]string, len(c.brokers))
	for i, b := range c.brokers {
		addrs[i] = b.addr(protocol)
	}
	return addrs
}

// BrokerBootstrap is the address of the listener for protocol on broker id
// alone.
func (c *Cluster) BrokerBootstrap(id int32, protocol string) string {
	return c.broker(id).addr(protocol)
}

func (n *node) addr(protocol string) string {
	if protocol == "" {
		protocol = cluster.Plaintext
	}
	p, ok := n.ports[protocol]
	if !ok || protocol == controllerListener {
		panic(fmt.Sprintf("kafkatest: no listener for security protocol %q", protocol))
	}
	return fmt.Sprintf("127.0.0.1:%d", p)
}

// Settings reaches the cluster through the listener for protocol as Alice
// with the given SASL mechanism (ignored for PLAINTEXT), trusting the CA.
func (c *Cluster) Settings(protocol, mechanism string) cluster.Settings {
	return c.SettingsAs(protocol, mechanism, Alice)
}

// SettingsAs is Settings for another user.
func (c *Cluster) SettingsAs(protocol, mechanism string, u User) cluster.Settings {
	s := cluster.Settings{
		Name:             c.name,
		BootstrapServers: c.BootstrapServers(protocol),
		SecurityProtocol: protocol,
	}
	if s.UsesSASL() {
		s.SASLMechanism = mechanism
		s.Username = u.Name
		s.Password = u.Password
	}
	if s.UsesTLS() {
		s.CAPEM = c.ca.PEM
	}
	return s
}

// SettingsWithCert reaches the cluster through listener (SSL, or
// ListenerMTLS: SASL_SSL with mechanism as Alice) with a client certificate
// the cluster's CA issued for Alice.
func (c *Cluster) SettingsWithCert(listener, mechanism string) (cluster.Settings, error) {
	protocol := listener
	if listener == ListenerMTLS {
		protocol = cluster.SASLSSL
	}
	s := c.SettingsAs(protocol, mechanism, Alice)
	s.BootstrapServers = c.BootstrapServers(listener)
	cert, err := c.ca.ClientCert(Alice)
	if err != nil {
		return s, err
	}
	s.ClientCertPEM, s.ClientKeyPEM = cert.ChainPEM, cert.KeyPEM
	return s, nil
}

// SettingsOAuth reaches the cluster through the SASL listener of protocol
// (SASL_PLAINTEXT or SASL_SSL) with OAUTHBEARER tokens of the test's
// identity provider for client.
func (c *Cluster) SettingsOAuth(protocol string, client OAuthClient) (cluster.Settings, error) {
	p, err := Identity()
	if err != nil {
		return cluster.Settings{}, err
	}
	s := c.SettingsAs(protocol, cluster.MechanismOAuthBearer, Alice)
	s.Username, s.Password = "", ""
	s.OAuth = cluster.OAuth{TokenEndpoint: p.TokenURL(), ClientID: client.ID, ClientSecret: client.Secret, Audience: OAuthAudience}
	return s, nil
}

// Start formats and starts a new cluster and waits until it serves clients
// (every broker registered). The caller must Stop it; if the caller's
// process dies, so do the JVMs.
func Start(ctx context.Context, opts ...Opt) (*Cluster, error) {
	o := defaults()
	for _, opt := range opts {
		opt(&o)
	}
	if o.brokers < 1 {
		return nil, fmt.Errorf("kafkatest: Brokers(%d): a cluster needs at least one broker", o.brokers)
	}
	if o.minISR > o.brokers {
		return nil, fmt.Errorf("kafkatest: MinInsyncReplicas(%d) is more than the %d broker(s): no write with acks=all could succeed", o.minISR, o.brokers)
	}
	jars, err := EnsureJars(ctx)
	if err != nil {
		return nil, err
	}
	dir := o.dir
	if dir == "" {
		dir, err = clusterTempDir("kmirror-kafka-")
		if err != nil {
			return nil, fmt.Errorf("create a directory for the cluster: %w", err)
		}
	}
	if o.name == "" {
		o.name = filepath.Base(dir)
	}
	ctx, cancel := context.WithTimeout(ctx, o.startTimeout)
	defer cancel()

	// A port picked free can be taken by another process before the broker
	// binds it (parallel test packages do this); start over on new ports.
	var errs []error
	for attempt := 1; attempt <= 3; attempt++ {
		c, err := start(ctx, dir, jars, o)
		if err == nil {
			return c, nil
		}
		errs = append(errs, err)
		if !errors.Is(err, errPortTaken) || ctx.Err() != nil {
			break
		}
		slog.Warn("kafka broker port was taken; retrying on new ports", "cluster", o.name, "attempt", attempt)
	}
	return nil, fmt.Errorf("start Kafka cluster %s (logs in %s): %w", o.name, dir, errors.Join(errs...))
}

var errPortTaken = errors.New("a listener port was already in use")

// brokerListeners are the listeners of every broker, named as their
// security protocols.
var brokerListeners = []string{cluster.Plaintext, cluster.SASLPlaintext, cluster.SASLSSL, cluster.SSL, ListenerMTLS}

// layout makes the nodes of a cluster with their directories and ports,
// and no process yet.
func layout(dir string, o options) ([]*node, *node, error) {
	if o.brokers == 1 {
		ports, err := freePorts(len(brokerListeners) + 1)
		if err != nil {
			return nil, nil, err
		}
		n := &node{id: 1, label: o.name, dir: dir, ports: map[string]int{}}
		for i, l := range append(slices.Clone(brokerListeners), controllerListener) {
			n.ports[l] = ports[i]
		}
		return []*node{n}, nil, nil
	}
	ports, err := freePorts(1 + len(brokerListeners)*o.brokers)
	if err != nil {
		return nil, nil, err
	}
	ctl := &node{id: controllerNodeID, label: "controller", dir: filepath.Join(dir, "controller"),
		ports: map[string]int{controllerListener: ports[0]}}
	ports = ports[1:]
	brokers := make([]*node, o.brokers)
	for i := range brokers {
		id := int32(i + 1)
		b := &node{id: id, label: fmt.Sprintf("broker-%d", id), dir: filepath.Join(dir, fmt.Sprintf("broker-%d", id)), ports: map[string]int{}}
		for _, l := range brokerListeners {
			b.ports[l], ports = ports[0], ports[1:]
		}
		brokers[i] = b
	}
	return brokers, ctl, nil
}

func start(ctx context.Context, dir string, jars Jars, o options) (*Cluster, error) {
	brokers, ctl, err := layout(dir, o)
	if err != nil {
		return nil, err
	}
	nodes := slices.Clone(brokers)
	if ctl != nil {
		nodes = append(nodes, ctl)
	}
	for _, n := range nodes {
		for _, sub := range []string{"data", "config"} {
			// A previous attempt's data is formatted for other ports.
			if err := os.RemoveAll(filepath.Join(n.dir, sub)); err != nil {
				return nil, fmt.Errorf("clean %s: %w", sub, err)
			}
		}
		for _, sub := range []string{"data", "config", "logs"} {
			if err := os.MkdirAll(filepath.Join(n.dir, sub), 0o755); err != nil {
				return nil, fmt.Errorf("create %s: %w", sub, err)
			}
		}
	}
	tm, err := newTLSMaterial(time.Now())
	if err != nil {
		return nil, err
	}
	// The CA and the keystore are the cluster's, shared by its brokers
	// (the certificate names 127.0.0.1, whatever the port).
	conf := filepath.Join(dir, "config")
	if err := os.MkdirAll(conf, 0o755); err != nil {
		return nil, fmt.Errorf("create config: %w", err)
	}
	files := map[string][]byte{
		filepath.Join(conf, "ca.pem"):       []byte(tm.ca.PEM),
		filepath.Join(conf, "keystore.pem"): tm.keystorePEM,
	}
	idp, err := Identity()
	if err != nil {
		return nil, err
	}
	for _, n := range nodes {
		bc := brokerConfig{NodeID: n.id, Ports: n.ports, DataDir: filepath.Join(n.dir, "data"), KeystoreDir: conf,
			ACLs: o.acls, Brokers: o.brokers, MinISR: o.minISR, Quiet: !o.fullSpeed, Overrides: o.props,
			JWKSURL: idp.JWKSURL(), Issuer: idp.Issuer()}
		if ctl != nil {
			bc.Controller = ctl.ports[controllerListener]
			bc.Roles = "broker"
			if n == ctl {
				bc.Roles = "controller"
			}
		}
		files[filepath.Join(n.dir, "config", "server.properties")] = []byte(serverProperties(bc))
		files[filepath.Join(n.dir, "config", "log4j2.properties")] = []byte(log4j2Properties)
	}
	for path, b := range files {
		if err := os.WriteFile(path, b, 0o600); err != nil {
			return nil, fmt.Errorf("write %s: %w", path, err)
		}
	}
	id, err := newClusterID()
	if err != nil {
		return nil, err
	}
	c := &Cluster{name: o.name, id: id, dir: dir, version: jars.Version, ca: tm.ca,
		startTimeout: o.startTimeout, controller: ctl, brokers: brokers}

	java, err := exec.LookPath("java")
	if err != nil {
		return nil, fmt.Errorf("java is not installed: install OpenJDK 17 or newer: %w", err)
	}
	var classes []string // the class archive's flag, for tests' brokers
	if !o.fullSpeed && o.dumpClasses == "" {
		classes = archiveFlag(classArchive(ctx, jars, java, brokerClasses))
	}
	// Format every node at once: each is a JVM start of a few seconds.
	err = forEach(nodes, func(n *node) error {
		heap := o.heapMB
		if n == ctl {
			heap = min(heap, 256)
		}
		props := filepath.Join(n.dir, "config", "server.properties")
		jvm := append(append(jvmFlags(heap, o.fullSpeed), classes...),
			// Kafka 4 reads no OAuth URL it was not allowed to.
			"-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls="+idp.JWKSURL()+","+idp.TokenURL(),
			"-Dlog4j2.configurationFile="+filepath.Join(n.dir, "config", "log4j2.properties"),
			"-cp", jars.Classpath(),
		)
		format := append(append([]string{}, jvm...), "kafka.tools.StorageTool", "format", "-t", id, "-c", props)
		switch {
		case ctl == nil:
			format = append(append(format, "--standalone"), scramArgs(Users())...)
		case n == ctl:
			// The users go into the bootstrap metadata, which only the
			// controller reads; the brokers learn them from the log.
			format = append(format, scramArgs(Users())...)
		}
		if err := runLogged(ctx, java, format, filepath.Join(n.dir, "logs", "format.log")); err != nil {
			return fmt.Errorf("format the storage of %s: %w", n.label, err)
		}
		n.argv = append([]string{java}, jvm...)
		if o.dumpClasses != "" {
			n.argv = append(n.argv, "-XX:ArchiveClassesAtExit="+o.dumpClasses)
		}
		n.argv = append(n.argv, "kafka.Kafka", props)
		return nil
	})
	if err != nil {
		return nil, err
	}

	began := time.Now()
	if err := forEach(nodes, func(n *node) error { return c.launch(ctx, n) }); err != nil {
		c.killAll()
		return nil, err
	}
	if err := c.waitBrokers(ctx, c.BrokerIDs()); err != nil {
		c.killAll()
		return nil, err
	}
	if o.acls {
		if err := c.grantAlice(); err != nil {
			_ = c.Stop()
			return nil, err
		}
	}
	slog.Info("kafka cluster started", "cluster", c.name, "version", c.version, "brokers", len(c.brokers),
		"plaintext", c.Bootstrap(cluster.Plaintext), "took", time.Since(began).Round(time.Millisecond))
	return c, nil
}

// forEach runs f on every node at once and joins the errors.
func forEach(nodes []*node, f func(*node) error) error {
	errs := make([]error, len(nodes))
	var wg sync.WaitGroup
	for i, n := range nodes {
		wg.Go(func() { errs[i] = f(n) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

// killAll ends every node with SIGKILL, after a failed start.
func (c *Cluster) killAll() {
	for _, n := range c.nodes() {
		_ = c.terminate(n, syscall.SIGKILL)
	}
}

// nodes are the brokers, then the controller of a multi-broker cluster.
func (c *Cluster) nodes() []*node {
	ns := slices.Clone(c.brokers)
	if c.controller != nil {
		ns = append(ns, c.controller)
	}
	return ns
}

// launch starts a formatted node and waits until it serves (a broker:
// clients on PLAINTEXT; the controller: its started line). Its output is
// appended to logs/server.log; readiness is only looked for in what this
// run wrote, not in an earlier run's lines. A node that does not become
// ready is killed.
func (c *Cluster) launch(ctx context.Context, n *node) error {
	logPath := filepath.Join(n.dir, "logs", "server.log")
	p, from, err := spawn(n.argv, logPath)
	if err != nil {
		return fmt.Errorf("start the JVM of %s: %w", n.label, err)
	}
	n.proc = p
	n.stopErr = nil
	if err := c.waitReady(ctx, n, p, logPath, from); err != nil {
		_ = c.terminate(n, syscall.SIGKILL)
		err = fmt.Errorf("%s: %w", n.label, err)
		if logContainsFrom(logPath, from, "Address already in use") {
			return fmt.Errorf("%w: %w", errPortTaken, err)
		}
		return err
	}
	return nil
}

// spawn starts argv in its own process group with its output appended to
// logPath, and returns the log's size before (readiness is looked for
// only in what this run writes, not in an earlier run's lines).
func spawn(argv []string, logPath string) (*process, int64, error) {
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, 0, fmt.Errorf("open the log: %w", err)
	}
	from, err := logf.Seek(0, io.SeekEnd)
	if err != nil {
		logf.Close()
		return nil, 0, fmt.Errorf("open the log: %w", err)
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{
		// Own process group: Ctrl-C in a terminal reaches us, not the JVM,
		// and Stop can signal the whole group.
		Setpgid: true,
		// The kernel kills the JVM when the thread that started it dies,
		// which in Go means the process (its threads are not retired).
		Pdeathsig: syscall.SIGKILL,
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, 0, err
	}
	p := &process{cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(p.exited)
	}()
	return p, from, nil
}

// waitReady polls the node's log (from offset from) for the started line,
// then, on a broker, proves a metadata request on its PLAINTEXT listener
// answers; it fails fast if the JVM exits.
func (c *Cluster) waitReady(ctx context.Context, n *node, p *process, logPath string, from int64) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	started := false
	for {
		select {
		case <-p.exited:
			return fmt.Errorf("the node exited before serving (%v); last log lines:\n%s", p.err, tail(logPath, 20))
		case <-ctx.Done():
			return fmt.Errorf("the node did not serve in time: %w; last log lines:\n%s", ctx.Err(), tail(logPath, 20))
		case <-tick.C:
		}
		if !started {
			started = logContainsFrom(logPath, from, startedLine)
			if started && !n.isBroker() {
				return nil
			}
			continue
		}
		if err := c.ping(n); err == nil {
			return nil
		}
	}
}

func (c *Cluster) ping(n *node) error {
	cfg, err := c.Settings(cluster.Plaintext, "").Config("kafkatest-ping")
	if err != nil {
		return err
	}
	cfg.Net.DialTimeout = 2 * time.Second
	cfg.Metadata.Retry.Max = 0
	client, err := sarama.NewClient([]string{n.addr(cluster.Plaintext)}, cfg)
	if err != nil {
		return err
	}
	defer client.Close()
	if len(client.Brokers()) == 0 {
		return errors.New("no brokers in metadata yet")
	}
	return nil
}

// client is a new client on the PLAINTEXT listeners; the caller closes it.
func (c *Cluster) client(clientID string) (sarama.Client, error) {
	cfg, err := c.Settings(cluster.Plaintext, "").Config(clientID)
	if err != nil {
		return nil, err
	}
	cfg.Net.DialTimeout = 2 * time.Second
	client, err := sarama.NewClient(c.BootstrapServers(cluster.Plaintext), cfg)
	if err != nil {
		return nil, fmt.Errorf("connect to %s: %w", c.name, err)
	}
	return client, nil
}

// waitBrokers polls metadata until every broker in ids is registered and
// unfenced (metadata lists only those): a broker serves metadata before
// the controller lets it lead or follow.
func (c *Cluster) waitBrokers(ctx context.Context, ids []int32) error {
	return c.pollMetadata(ctx, "", func(client sarama.Client) error { return registered(client, ids) })
}

// pollMetadata runs check on a fresh client every 100 ms until it passes or
// ctx ends; the error then says what was last wrong, after what.
func (c *Cluster) pollMetadata(ctx context.Context, what string, check func(sarama.Client) error) error {
	client, err := c.client("kafkatest-wait")
	if err != nil {
		return err
	}
	defer client.Close()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		last := check(client)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("%s%w (%w)", what, last, ctx.Err())
		case <-tick.C:
		}
	}
}

func registered(client sarama.Client, ids []int32) error {
	if err := client.RefreshMetadata(); err != nil {
		return err
	}
	seen := map[int32]bool{}
	for _, b := range client.Brokers() {
		seen[b.ID()] = true
	}
	var missing []int32
	for _, id := range ids {
		if !seen[id] {
			missing = append(missing, id)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("brokers %v not registered with the controller yet", missing)
	}
	return nil
}

// Leader is the node id of the broker leading a partition, as metadata
// says now. Right after a leader dies, metadata names it until the
// controller fences it (broker.session.timeout.ms, 9 s by default): poll.
func (c *Cluster) Leader(topic string, partition int32) (int32, error) {
	client, err := c.client("kafkatest-leader")
	if err != nil {
		return 0, err
	}
	defer client.Close()
	if err := client.RefreshMetadata(topic); err != nil {
		return 0, fmt.Errorf("metadata of %s on %s: %w", topic, c.name, err)
	}
	b, err := client.Leader(topic, partition)
	if err != nil {
		return 0, fmt.Errorf("leader of %s-%d on %s: %w", topic, partition, c.name, err)
	}
	return b.ID(), nil
}

// InSyncReplicas are the node ids of a partition's in-sync replicas, as
// metadata says now.
func (c *Cluster) InSyncReplicas(topic string, partition int32) ([]int32, error) {
	client, err := c.client("kafkatest-isr")
	if err != nil {
		return nil, err
	}
	defer client.Close()
	if err := client.RefreshMetadata(topic); err != nil {
		return nil, fmt.Errorf("metadata of %s on %s: %w", topic, c.name, err)
	}
	isr, err := client.InSyncReplicas(topic, partition)
	if err != nil {
		return nil, fmt.Errorf("in-sync replicas of %s-%d on %s: %w", topic, partition, c.name, err)
	}
	slices.Sort(isr)
	return isr, nil
}

// Admin is a cluster admin on the PLAINTEXT listeners (a super user even
// with ACLs on), shared by the harness and closed by Stop, Kill and Restart
// (of the cluster or of a broker). Do not close it: tests running in
// parallel on the cluster hold it too (one that was closed is replaced on
// the next call, but not under those already holding it).
func (c *Cluster) Admin() (sarama.ClusterAdmin, error) {
	c.adminMu.Lock()
	defer c.adminMu.Unlock()
	if c.admin != nil && !c.adminClient.Closed() {
		return c.admin, nil
	}
	client, err := c.client("kafkatest-admin")
	if err != nil {
		return nil, fmt.Errorf("connect an admin client to %s: %w", c.name, err)
	}
	a, err := sarama.NewClusterAdminFromClient(client)
	if err != nil {
		client.Close()
		return nil, fmt.Errorf("connect an admin client to %s: %w", c.name, err)
	}
	c.adminClient, c.admin = client, a
	return a, nil
}

// closeAdmin drops the shared admin: its connections die with the broker,
// and a new one is cheaper than relying on reconnects.
func (c *Cluster) closeAdmin() {
	c.adminMu.Lock()
	defer c.adminMu.Unlock()
	if c.admin != nil {
		_ = c.admin.Close()
		c.admin, c.adminClient = nil, nil
	}
}

// grantAlice gives Alice every operation on every topic, group and
// transactional id, and the cluster operations producers need.
func (c *Cluster) grantAlice() error {
	a, err := c.Admin()
	if err != nil {
		return err
	}
	acl := sarama.Acl{Principal: "User:" + Alice.Name, Host: "*", Operation: sarama.AclOperationAll, PermissionType: sarama.AclPermissionAllow}
	var ras []*sarama.ResourceAcls
	for _, r := range []struct {
		typ  sarama.AclResourceType
		name string
	}{
		{sarama.AclResourceTopic, "*"},
		{sarama.AclResourceGroup, "*"},
		{sarama.AclResourceTransactionalID, "*"},
		{sarama.AclResourceCluster, "kafka-cluster"},
	} {
		ras = append(ras, &sarama.ResourceAcls{
			Resource: sarama.Resource{ResourceType: r.typ, ResourceName: r.name, ResourcePatternType: sarama.AclPatternLiteral},
			Acls:     []*sarama.Acl{&acl},
		})
	}
	if err := a.CreateACLs(ras); err != nil {
		return fmt.Errorf("grant alice her ACLs on %s: %w", c.name, err)
	}
	return nil
}

// Stop ends every node: SIGTERM to each broker's process group (all at
// once), then to the controller's, SIGKILL to any that has not exited
// after 30 s. Files stay; Remove deletes them, Restart starts the cluster
// again. Safe to call twice.
func (c *Cluster) Stop() error {
	c.closeAdmin()
	c.procMu.Lock()
	defer c.procMu.Unlock()
	_ = c.stopAll()
	var errs []error
	for _, n := range c.nodes() {
		errs = append(errs, n.stopErr)
	}
	return errors.Join(errs...)
}

// stopAll is Stop with procMu held.
func (c *Cluster) stopAll() error {
	// Brokers first: a broker's controlled shutdown asks the controller.
	err := forEach(c.brokers, func(n *node) error { return c.stopNode(n, syscall.SIGTERM) })
	if c.controller != nil {
		err = errors.Join(err, c.stopNode(c.controller, syscall.SIGTERM))
	}
	return err
}

// stopNode ends one node with sig if it runs and remembers why it did not
// stop cleanly (Stop returns it again). Called with procMu held.
func (c *Cluster) stopNode(n *node, sig syscall.Signal) error {
	if n.proc == nil {
		return nil
	}
	n.stopErr = c.terminate(n, sig)
	return n.stopErr
}

// Kill ends every node with SIGKILL, as a crash would: no controlled
// shutdown, logs not flushed past the page cache. Restart brings the
// cluster back, about 9 s slower than after Stop: the controller refuses a
// new broker's registration until the killed one's session
// (broker.session.timeout.ms) expires.
func (c *Cluster) Kill() error {
	c.closeAdmin()
	c.procMu.Lock()
	defer c.procMu.Unlock()
	return forEach(c.nodes(), func(n *node) error { return c.terminate(n, syscall.SIGKILL) })
}

// Restart stops the cluster cleanly if it runs (after Kill it does not),
// then starts every node again on the same directories, ports and cluster
// id, and waits until every broker is registered and every partition of
// every topic has a leader again. Addresses do not change, so clients and
// Settings taken before keep working once they reconnect.
func (c *Cluster) Restart(ctx context.Context) error {
	c.closeAdmin()
	c.procMu.Lock()
	defer c.procMu.Unlock()
	how := "after a clean stop"
	for _, n := range c.nodes() {
		if n.proc == nil && n.killed {
			how = n.howDown()
		}
	}
	if err := c.stopAll(); err != nil {
		return fmt.Errorf("restart %s: %w", c.name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, c.startTimeout)
	defer cancel()
	began := time.Now()
	// The ports are the cluster's identity: a restart cannot move to new
	// ones as Start does, so a taken port is an error.
	if err := forEach(c.nodes(), func(n *node) error { return c.launch(ctx, n) }); err != nil {
		return fmt.Errorf("restart Kafka cluster %s %s (logs in %s): %w", c.name, how, c.dir, err)
	}
	if err := c.waitWhole(ctx, c.BrokerIDs()); err != nil {
		return fmt.Errorf("restart Kafka cluster %s %s (logs in %s): %w", c.name, how, c.dir, err)
	}
	slog.Info("kafka cluster restarted", "cluster", c.name, "how", how,
		"plaintext", c.Bootstrap(cluster.Plaintext), "took", time.Since(began).Round(time.Millisecond))
	return nil
}

// KillBroker ends broker id with SIGKILL, as a crash would; the other
// nodes run on. Its partitions get new leaders once the controller fences
// it (broker.session.timeout.ms, 9 s by default) if another replica is in
// sync. On a single-node cluster KillBroker(1) is Kill.
func (c *Cluster) KillBroker(id int32) error {
	n := c.broker(id)
	c.closeAdmin()
	c.procMu.Lock()
	defer c.procMu.Unlock()
	return c.terminate(n, syscall.SIGKILL)
}

// StopBroker ends broker id cleanly (SIGTERM: a controlled shutdown that
// moves its leaderships first); the other nodes run on.
func (c *Cluster) StopBroker(id int32) error {
	n := c.broker(id)
	c.closeAdmin()
	c.procMu.Lock()
	defer c.procMu.Unlock()
	_ = c.stopNode(n, syscall.SIGTERM)
	return n.stopErr
}

// RestartBroker stops broker id cleanly if it runs (after KillBroker it
// does not), starts it again with the same properties, and waits until it
// is registered and every partition has a leader. It is back in a
// partition's ISR only once it has caught up: poll InSyncReplicas. After
// KillBroker it takes about 9 s more (the dead session must expire first).
func (c *Cluster) RestartBroker(ctx context.Context, id int32) error {
	n := c.broker(id)
	c.closeAdmin()
	c.procMu.Lock()
	defer c.procMu.Unlock()
	how := n.howDown()
	if n.proc != nil {
		how = "after a clean stop"
		if err := c.stopNode(n, syscall.SIGTERM); err != nil {
			return fmt.Errorf("restart broker %d of %s: %w", id, c.name, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, c.startTimeout)
	defer cancel()
	began := time.Now()
	if err := c.launch(ctx, n); err != nil {
		return fmt.Errorf("restart broker %d of %s %s (logs in %s): %w", id, c.name, how, c.BrokerLogDir(id), err)
	}
	if err := c.waitWhole(ctx, []int32{id}); err != nil {
		return fmt.Errorf("restart broker %d of %s %s (logs in %s): %w", id, c.name, how, c.BrokerLogDir(id), err)
	}
	slog.Info("kafka broker restarted", "cluster", c.name, "broker", id, "how", how,
		"took", time.Since(began).Round(time.Millisecond))
	return nil
}

// FreezeBroker suspends broker id's JVM (SIGSTOP to its process group), as
// a hung host, a stuck disk or a stop-the-world pause would: unlike
// KillBroker, its connections stay open and the kernel still accepts new
// ones on its ports, but nothing is answered, so clients wait for their
// read timeouts instead of failing at once. On a single-node cluster the
// controller freezes with it; on a multi-broker one the controller fences
// the frozen broker after broker.session.timeout.ms (9 s by default).
// ThawBroker resumes it; Stop, Kill and the restarts work on a frozen
// broker too.
func (c *Cluster) FreezeBroker(id int32) error {
	return c.signalBroker(id, syscall.SIGSTOP, "freeze")
}

// ThawBroker resumes a broker FreezeBroker suspended (SIGCONT); it serves
// again at once, from where it stopped.
func (c *Cluster) ThawBroker(id int32) error {
	return c.signalBroker(id, syscall.SIGCONT, "thaw")
}

func (c *Cluster) signalBroker(id int32, sig syscall.Signal, what string) error {
	n := c.broker(id)
	c.procMu.Lock()
	defer c.procMu.Unlock()
	if n.proc == nil {
		return fmt.Errorf("%s broker %d of %s: it is not running (%s): restart it first", what, id, c.name, n.howDown())
	}
	if err := syscall.Kill(-n.proc.cmd.Process.Pid, sig); err != nil {
		return fmt.Errorf("%s broker %d of %s: %w", what, id, c.name, err)
	}
	if sig == syscall.SIGSTOP {
		// The signal is queued, not yet taken: a request sent at once may
		// still be served. Frozen means every thread stopped.
		return waitStopped(n.proc.cmd.Process.Pid, 10*time.Second)
	}
	return nil
}

// waitStopped waits until every thread of process pid is stopped (state T
// in /proc/<pid>/task/*/stat).
func waitStopped(pid int, limit time.Duration) error {
	deadline := time.Now().Add(limit)
	for {
		stats, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/stat", pid))
		stopped := len(stats) > 0
		for _, f := range stats {
			b, err := os.ReadFile(f)
			if err != nil {
				continue // a thread that ended
			}
			// pid (comm) state ...: comm may hold spaces and parentheses.
			rest := string(b[strings.LastIndexByte(string(b), ')')+1:])
			if f := strings.Fields(rest); len(f) == 0 || (f[0] != "T" && f[0] != "t") {
				stopped = false
				break
			}
		}
		if stopped {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("process %d did not stop within %s of SIGSTOP", pid, limit)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// waitWhole waits until the brokers ids are registered and every partition
// has a leader.
func (c *Cluster) waitWhole(ctx context.Context, ids []int32) error {
	if err := c.waitBrokers(ctx, ids); err != nil {
		return err
	}
	return c.waitAllLeaders(ctx)
}

// terminate sends sig to a node's process group and waits for the JVM to
// exit, escalating to SIGKILL after 30 s. Called with procMu held, or
// before the cluster is handed out.
func (c *Cluster) terminate(n *node, sig syscall.Signal) error {
	p := n.proc
	if p == nil {
		return nil
	}
	n.proc = nil
	n.killed = sig == syscall.SIGKILL
	if p.signal(sig) {
		return nil
	}
	slog.Warn("kafka node ignored a signal for 30s; killed it", "cluster", c.name, "node", n.label, "signal", sig)
	n.killed = true
	return fmt.Errorf("%s of %s did not stop within 30s of %v and was killed", n.label, c.name, sig)
}

// signal sends sig to the process group and waits for the JVM to exit,
// escalating to SIGKILL after 30 s; false if it had to.
func (p *process) signal(sig syscall.Signal) bool {
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, sig)
	// A frozen JVM (FreezeBroker) acts on SIGTERM only once it runs again;
	// to a running one SIGCONT is nothing.
	_ = syscall.Kill(-pgid, syscall.SIGCONT)
	select {
	case <-p.exited:
		return true
	case <-time.After(30 * time.Second):
	}
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-p.exited
	return false
}

// waitAllLeaders polls metadata until every partition of every topic,
// internal ones included, has a leader: a restarted broker serves metadata
// before it leads its partitions again, and a test that goes on earlier
// sees NOT_LEADER errors it did not cause.
func (c *Cluster) waitAllLeaders(ctx context.Context) error {
	return c.pollMetadata(ctx, "partitions without a leader: ", allLed)
}

func allLed(client sarama.Client) error {
	if err := client.RefreshMetadata(); err != nil {
		return err
	}
	topics, err := client.Topics()
	if err != nil {
		return err
	}
	for _, topic := range topics {
		ps, err := client.Partitions(topic)
		if err != nil {
			return fmt.Errorf("%s: %w", topic, err)
		}
		for _, p := range ps {
			if _, err := client.Leader(topic, p); err != nil {
				return fmt.Errorf("%s-%d: %w", topic, p, err)
			}
		}
	}
	return nil
}

// Remove deletes the cluster's directory. Call after Stop.
func (c *Cluster) Remove() error { return os.RemoveAll(c.dir) }

// keepLogs copies what explains a failure (server and format logs, server
// properties) of every node under dir to dst: a single node's to dst, a
// multi-broker cluster's to dst/<node>.
func keepLogs(dir, dst string) error {
	srcs := map[string]string{dir: dst}
	if entries, err := os.ReadDir(dir); err == nil {
		for _, e := range entries {
			if _, err := os.Stat(filepath.Join(dir, e.Name(), "logs")); e.IsDir() && err == nil {
				srcs[filepath.Join(dir, e.Name())] = filepath.Join(dst, e.Name())
			}
		}
	}
	var errs []error
	for src, to := range srcs {
		for _, rel := range []string{"logs/server.log", "logs/format.log", "config/server.properties"} {
			if err := copyFile(filepath.Join(src, rel), filepath.Join(to, filepath.Base(rel))); err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
		return err
	}
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}

// freePorts reserves n distinct free ports by holding all listeners open
// at once, then releases them for the nodes to bind.
func freePorts(n int) ([]int, error) {
	ports := make([]int, 0, n)
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port on 127.0.0.1: %w", err)
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// newClusterID makes a KRaft cluster id as Kafka's Uuid prints one: 16
// random bytes, base64url without padding, never starting with '-' (it
// would read as a flag).
func newClusterID() (string, error) {
	for {
		b := make([]byte, 16)
		if _, err := rand.Read(b); err != nil {
			return "", fmt.Errorf("make a cluster id: %w", err)
		}
		id := base64.RawURLEncoding.EncodeToString(b)
		if !strings.HasPrefix(id, "-") {
			return id, nil
		}
	}
}

func runLogged(ctx context.Context, name string, args []string, logPath string) error {
	f, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer f.Close()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Stdout, cmd.Stderr = f, f
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%w; last lines of %s:\n%s", err, logPath, tail(logPath, 20))
	}
	return nil
}

// logContainsFrom reports whether the file holds s in a line after byte
// offset from (a restart's lines, not an earlier run's).
func logContainsFrom(path string, from int64, s string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	if _, err := f.Seek(from, io.SeekStart); err != nil {
		return false
	}
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		if strings.Contains(sc.Text(), s) {
			return true
		}
	}
	return false
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	return lastLines(string(b), n)
}

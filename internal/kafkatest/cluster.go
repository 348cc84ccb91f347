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
	"net"
	"os"
	"os/exec"
	"path/filepath"
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
}

func defaults() options {
	return options{heapMB: 512, startTimeout: 3 * time.Minute}
}

// Name names the cluster in logs and kept-log directories.
func Name(n string) Opt { return func(o *options) { o.name = n } }

// HeapMB sets the broker's JVM heap (-Xms and -Xmx). Tests use the default
// 512; benchmarks want 1024 or more.
func HeapMB(mb int) Opt { return func(o *options) { o.heapMB = mb } }

// ACLs turns on the StandardAuthorizer: Admin and the PLAINTEXT (anonymous)
// listener are super users, Alice is granted everything on topics, groups
// and transactional ids, Bob nothing.
func ACLs(on bool) Opt { return func(o *options) { o.acls = on } }

// Dir keeps the cluster's files (config, data, logs) in dir instead of a new
// temporary directory.
func Dir(dir string) Opt { return func(o *options) { o.dir = dir } }

// Cluster is one running single-node KRaft cluster.
type Cluster struct {
	name    string
	id      string
	dir     string
	version string
	ports   map[string]int
	caPEM   string

	argv         []string // java and its arguments: Restart runs the same broker again
	startTimeout time.Duration

	// procMu serializes Stop, Kill and Restart. proc is the running JVM,
	// nil while the broker is down.
	procMu  sync.Mutex
	proc    *process
	stopErr error // why the last Stop was not clean; Stop returns it again

	adminMu     sync.Mutex
	adminClient sarama.Client // to tell whether a caller closed the shared admin
	admin       sarama.ClusterAdmin
}

// process is one run of the broker JVM.
type process struct {
	cmd    *exec.Cmd
	exited chan struct{} // closed when the JVM has exited
	err    error         // set before exited is closed
}

// Name is the cluster's name.
func (c *Cluster) Name() string { return c.name }

// ID is the KRaft cluster id.
func (c *Cluster) ID() string { return c.id }

// Dir holds config/, data/ and logs/ of the cluster.
func (c *Cluster) Dir() string { return c.dir }

// LogDir holds the broker's log (server.log) and the format tool's.
func (c *Cluster) LogDir() string { return filepath.Join(c.dir, "logs") }

// Version is the Apache Kafka version running.
func (c *Cluster) Version() string { return c.version }

// CAPEM is the PEM certificate of the CA that signed the SASL_SSL listener's.
func (c *Cluster) CAPEM() string { return c.caPEM }

// CAFile is the path of CAPEM on disk, for tools outside Go.
func (c *Cluster) CAFile() string { return filepath.Join(c.dir, "config", "ca.pem") }

// Bootstrap is the host:port of the listener for a security protocol
// (PLAINTEXT, SASL_PLAINTEXT or SASL_SSL).
func (c *Cluster) Bootstrap(protocol string) string {
	if protocol == "" {
		protocol = cluster.Plaintext
	}
	p, ok := c.ports[protocol]
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
		BootstrapServers: []string{c.Bootstrap(protocol)},
		SecurityProtocol: protocol,
	}
	if s.UsesSASL() {
		s.SASLMechanism = mechanism
		s.Username = u.Name
		s.Password = u.Password
	}
	if s.UsesTLS() {
		s.CAPEM = c.caPEM
	}
	return s
}

// Start formats and starts a new cluster and waits until it serves clients.
// The caller must Stop it; if the caller's process dies, so does the broker.
func Start(ctx context.Context, opts ...Opt) (*Cluster, error) {
	o := defaults()
	for _, opt := range opts {
		opt(&o)
	}
	jars, err := EnsureJars(ctx)
	if err != nil {
		return nil, err
	}
	dir := o.dir
	if dir == "" {
		dir, err = os.MkdirTemp("", "kmirror-kafka-")
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
	return nil, fmt.Errorf("start Kafka cluster %s (logs in %s): %w", o.name, filepath.Join(dir, "logs"), errors.Join(errs...))
}

var errPortTaken = errors.New("a listener port was already in use")

func start(ctx context.Context, dir string, jars Jars, o options) (*Cluster, error) {
	for _, sub := range []string{"data", "config"} {
		// A previous attempt's data is formatted for other ports.
		if err := os.RemoveAll(filepath.Join(dir, sub)); err != nil {
			return nil, fmt.Errorf("clean %s: %w", sub, err)
		}
	}
	for _, sub := range []string{"data", "config", "logs"} {
		if err := os.MkdirAll(filepath.Join(dir, sub), 0o755); err != nil {
			return nil, fmt.Errorf("create %s: %w", sub, err)
		}
	}
	ports, err := freePorts("PLAINTEXT", "SASL_PLAINTEXT", "SASL_SSL", controllerListener)
	if err != nil {
		return nil, err
	}
	tm, err := newTLSMaterial(time.Now())
	if err != nil {
		return nil, err
	}
	conf := filepath.Join(dir, "config")
	props := filepath.Join(conf, "server.properties")
	log4j := filepath.Join(conf, "log4j2.properties")
	files := map[string][]byte{
		props:                               []byte(serverProperties(brokerConfig{Ports: ports, DataDir: filepath.Join(dir, "data"), KeystoreDir: conf, ACLs: o.acls})),
		log4j:                               []byte(log4j2Properties),
		filepath.Join(conf, "ca.pem"):       tm.caPEM,
		filepath.Join(conf, "keystore.pem"): tm.keystorePEM,
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
	c := &Cluster{name: o.name, id: id, dir: dir, version: jars.Version, ports: ports, caPEM: string(tm.caPEM), startTimeout: o.startTimeout}

	java, err := exec.LookPath("java")
	if err != nil {
		return nil, fmt.Errorf("java is not installed: install OpenJDK 17 or newer: %w", err)
	}
	jvm := []string{
		fmt.Sprintf("-Xms%dm", o.heapMB), fmt.Sprintf("-Xmx%dm", o.heapMB),
		"-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20", "-XX:InitiatingHeapOccupancyPercent=35",
		"-XX:+ExplicitGCInvokesConcurrent", "-Djava.awt.headless=true",
		"-Dlog4j2.configurationFile=" + log4j,
		"-cp", jars.Classpath(),
	}

	format := append(append([]string{}, jvm...), "kafka.tools.StorageTool", "format",
		"-t", id, "-c", props, "--standalone")
	format = append(format, scramArgs(Users())...)
	if err := runLogged(ctx, java, format, filepath.Join(dir, "logs", "format.log")); err != nil {
		return nil, fmt.Errorf("format the storage: %w", err)
	}

	c.argv = append(append([]string{java}, jvm...), "kafka.Kafka", props)
	began := time.Now()
	if err := c.launch(ctx); err != nil {
		return nil, err
	}
	if o.acls {
		if err := c.grantAlice(); err != nil {
			_ = c.Stop()
			return nil, err
		}
	}
	slog.Info("kafka cluster started", "cluster", c.name, "version", c.version,
		"plaintext", c.Bootstrap(cluster.Plaintext), "took", time.Since(began).Round(time.Millisecond))
	return c, nil
}

// launch starts the formatted broker and waits until it serves clients.
// Its output is appended to logs/server.log; readiness is only looked for
// in what this run wrote, not in an earlier run's lines. A broker that does
// not become ready is killed.
func (c *Cluster) launch(ctx context.Context) error {
	logPath := filepath.Join(c.dir, "logs", "server.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("open the broker log: %w", err)
	}
	from, err := logf.Seek(0, io.SeekEnd)
	if err != nil {
		logf.Close()
		return fmt.Errorf("open the broker log: %w", err)
	}
	cmd := exec.Command(c.argv[0], c.argv[1:]...)
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
		return fmt.Errorf("start the broker JVM: %w", err)
	}
	p := &process{cmd: cmd, exited: make(chan struct{})}
	go func() {
		p.err = cmd.Wait()
		logf.Close()
		close(p.exited)
	}()
	c.proc = p
	if err := c.waitReady(ctx, p, logPath, from); err != nil {
		c.terminate(syscall.SIGKILL)
		if logContainsFrom(logPath, from, "Address already in use") {
			return fmt.Errorf("%w: %w", errPortTaken, err)
		}
		return err
	}
	return nil
}

// waitReady polls the broker log (from offset from) for the started line,
// then proves a metadata request on PLAINTEXT answers; it fails fast if the
// JVM exits.
func (c *Cluster) waitReady(ctx context.Context, p *process, logPath string, from int64) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	started := false
	for {
		select {
		case <-p.exited:
			return fmt.Errorf("the broker exited before serving (%v); last log lines:\n%s", p.err, tail(logPath, 20))
		case <-ctx.Done():
			return fmt.Errorf("the broker did not serve in time: %w; last log lines:\n%s", ctx.Err(), tail(logPath, 20))
		case <-tick.C:
		}
		if !started {
			started = logContainsFrom(logPath, from, startedLine)
			continue
		}
		if err := c.ping(); err == nil {
			return nil
		}
	}
}

func (c *Cluster) ping() error {
	cfg, err := c.Settings(cluster.Plaintext, "").Config("kafkatest-ping")
	if err != nil {
		return err
	}
	cfg.Net.DialTimeout = 2 * time.Second
	cfg.Metadata.Retry.Max = 0
	client, err := sarama.NewClient([]string{c.Bootstrap(cluster.Plaintext)}, cfg)
	if err != nil {
		return err
	}
	defer client.Close()
	if len(client.Brokers()) == 0 {
		return errors.New("no brokers in metadata yet")
	}
	return nil
}

// Admin is a cluster admin on the PLAINTEXT listener (a super user even
// with ACLs on), shared by the harness and closed by Stop, Kill and Restart.
// A caller that closed it gets a new one.
func (c *Cluster) Admin() (sarama.ClusterAdmin, error) {
	c.adminMu.Lock()
	defer c.adminMu.Unlock()
	if c.admin != nil && !c.adminClient.Closed() {
		return c.admin, nil
	}
	cfg, err := c.Settings(cluster.Plaintext, "").Config("kafkatest-admin")
	if err != nil {
		return nil, err
	}
	client, err := sarama.NewClient([]string{c.Bootstrap(cluster.Plaintext)}, cfg)
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

// Stop ends the broker: SIGTERM to its process group, SIGKILL if it has not
// exited after 30 s. Files stay; Remove deletes them, Restart starts the
// broker again. Safe to call twice.
func (c *Cluster) Stop() error {
	c.closeAdmin()
	c.procMu.Lock()
	defer c.procMu.Unlock()
	if c.proc != nil {
		c.stopErr = c.terminate(syscall.SIGTERM)
	}
	return c.stopErr
}

// Kill ends the broker with SIGKILL, as a crash would: no controlled
// shutdown, logs not flushed past the page cache. Restart brings it back,
// about 9 s slower than after Stop: the controller refuses the new broker's
// registration until the killed one's session (broker.session.timeout.ms)
// expires.
func (c *Cluster) Kill() error {
	c.closeAdmin()
	c.procMu.Lock()
	defer c.procMu.Unlock()
	if c.proc != nil {
		return c.terminate(syscall.SIGKILL)
	}
	return nil
}

// Restart stops the broker cleanly if it runs (after Kill it does not), then
// starts it again on the same directory, ports and cluster id, and waits
// until it serves clients and every partition of every topic has a leader
// again. Addresses do not change, so clients and Settings taken before keep
// working once they reconnect.
func (c *Cluster) Restart(ctx context.Context) error {
	c.closeAdmin()
	c.procMu.Lock()
	defer c.procMu.Unlock()
	how := "after it was killed"
	if c.proc != nil {
		how = "after a clean stop"
		if err := c.terminate(syscall.SIGTERM); err != nil {
			return fmt.Errorf("restart %s: %w", c.name, err)
		}
	}
	ctx, cancel := context.WithTimeout(ctx, c.startTimeout)
	defer cancel()
	began := time.Now()
	c.stopErr = nil
	if err := c.launch(ctx); err != nil {
		// The ports are the cluster's identity: a restart cannot move to
		// new ones as Start does, so a taken port is an error.
		return fmt.Errorf("restart Kafka cluster %s %s (logs in %s): %w", c.name, how, c.LogDir(), err)
	}
	if err := c.waitAllLeaders(ctx); err != nil {
		return fmt.Errorf("restart Kafka cluster %s %s (logs in %s): %w", c.name, how, c.LogDir(), err)
	}
	slog.Info("kafka cluster restarted", "cluster", c.name, "how", how,
		"plaintext", c.Bootstrap(cluster.Plaintext), "took", time.Since(began).Round(time.Millisecond))
	return nil
}

// terminate sends sig to the broker's process group and waits for the JVM
// to exit, escalating to SIGKILL after 30 s. Called with procMu held.
func (c *Cluster) terminate(sig syscall.Signal) error {
	p := c.proc
	if p == nil {
		return nil
	}
	c.proc = nil
	pgid := p.cmd.Process.Pid
	_ = syscall.Kill(-pgid, sig)
	select {
	case <-p.exited:
		return nil
	case <-time.After(30 * time.Second):
	}
	slog.Warn("kafka broker ignored a signal for 30s; killing it", "cluster", c.name, "signal", sig)
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	<-p.exited
	return fmt.Errorf("broker %s did not stop within 30s of %v and was killed", c.name, sig)
}

// waitAllLeaders polls metadata until every partition of every topic,
// internal ones included, has a leader: a restarted broker serves metadata
// before it leads its partitions again, and a test that goes on earlier
// sees NOT_LEADER errors it did not cause.
func (c *Cluster) waitAllLeaders(ctx context.Context) error {
	cfg, err := c.Settings(cluster.Plaintext, "").Config("kafkatest-wait")
	if err != nil {
		return err
	}
	client, err := sarama.NewClient([]string{c.Bootstrap(cluster.Plaintext)}, cfg)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", c.name, err)
	}
	defer client.Close()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		last := allLed(client)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("partitions without a leader: %w (%w)", last, ctx.Err())
		case <-tick.C:
		}
	}
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

func keepLogs(dir, dst string) error {
	var errs []error
	for _, rel := range []string{"logs/server.log", "logs/format.log", "config/server.properties"} {
		if err := copyFile(filepath.Join(dir, rel), filepath.Join(dst, filepath.Base(rel))); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
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

// freePorts reserves distinct free ports by holding all listeners open at
// once, then releases them for the broker to bind.
func freePorts(names ...string) (map[string]int, error) {
	ports := make(map[string]int, len(names))
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for _, n := range names {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("find a free port on 127.0.0.1: %w", err)
		}
		ls = append(ls, l)
		ports[n] = l.Addr().(*net.TCPAddr).Port
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

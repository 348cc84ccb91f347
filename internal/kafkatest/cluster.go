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

// StartTimeout bounds how long Start waits for the broker to serve.
func StartTimeout(d time.Duration) Opt { return func(o *options) { o.startTimeout = d } }

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

	cmd      *exec.Cmd
	exited   chan struct{} // closed when the JVM has exited
	exitErr  error         // set before exited is closed
	stopOnce sync.Once
	stopErr  error

	adminMu sync.Mutex
	admin   sarama.ClusterAdmin
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
	c := &Cluster{name: o.name, id: id, dir: dir, version: jars.Version, ports: ports, caPEM: string(tm.caPEM), exited: make(chan struct{})}

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

	logPath := filepath.Join(dir, "logs", "server.log")
	logf, err := os.OpenFile(logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open the broker log: %w", err)
	}
	c.cmd = exec.Command(java, append(jvm, "kafka.Kafka", props)...)
	c.cmd.Stdout, c.cmd.Stderr = logf, logf
	c.cmd.SysProcAttr = &syscall.SysProcAttr{
		// Own process group: Ctrl-C in a terminal reaches us, not the JVM,
		// and Stop can signal the whole group.
		Setpgid: true,
		// The kernel kills the JVM when the thread that started it dies,
		// which in Go means the process (its threads are not retired).
		Pdeathsig: syscall.SIGKILL,
	}
	began := time.Now()
	if err := c.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start the broker JVM: %w", err)
	}
	go func() {
		c.exitErr = c.cmd.Wait()
		logf.Close()
		close(c.exited)
	}()

	if err := c.waitReady(ctx, logPath); err != nil {
		_ = c.Stop()
		if taken(logPath) {
			return nil, fmt.Errorf("%w: %w", errPortTaken, err)
		}
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

// waitReady polls the broker log for the started line, then proves a
// metadata request on PLAINTEXT answers; it fails fast if the JVM exits.
func (c *Cluster) waitReady(ctx context.Context, logPath string) error {
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	started := false
	for {
		select {
		case <-c.exited:
			return fmt.Errorf("the broker exited before serving (%v); last log lines:\n%s", c.exitErr, tail(logPath, 20))
		case <-ctx.Done():
			return fmt.Errorf("the broker did not serve in time: %w; last log lines:\n%s", ctx.Err(), tail(logPath, 20))
		case <-tick.C:
		}
		if !started {
			started = logContains(logPath, startedLine)
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
// with ACLs on), shared by the harness and closed by Stop.
func (c *Cluster) Admin() (sarama.ClusterAdmin, error) {
	c.adminMu.Lock()
	defer c.adminMu.Unlock()
	if c.admin != nil {
		return c.admin, nil
	}
	cfg, err := c.Settings(cluster.Plaintext, "").Config("kafkatest-admin")
	if err != nil {
		return nil, err
	}
	a, err := sarama.NewClusterAdmin([]string{c.Bootstrap(cluster.Plaintext)}, cfg)
	if err != nil {
		return nil, fmt.Errorf("connect an admin client to %s: %w", c.name, err)
	}
	c.admin = a
	return a, nil
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
// exited after 30 s. Files stay; Remove deletes them. Safe to call twice.
func (c *Cluster) Stop() error {
	c.stopOnce.Do(func() {
		c.adminMu.Lock()
		if c.admin != nil {
			_ = c.admin.Close()
			c.admin = nil
		}
		c.adminMu.Unlock()
		if c.cmd == nil || c.cmd.Process == nil {
			return
		}
		pgid := c.cmd.Process.Pid
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		select {
		case <-c.exited:
		case <-time.After(30 * time.Second):
			slog.Warn("kafka broker ignored SIGTERM for 30s; killing it", "cluster", c.name)
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			<-c.exited
			c.stopErr = fmt.Errorf("broker %s did not stop within 30s of SIGTERM and was killed", c.name)
		}
	})
	return c.stopErr
}

// Remove deletes the cluster's directory. Call after Stop.
func (c *Cluster) Remove() error { return os.RemoveAll(c.dir) }

// KeepLogs copies the broker's logs and configuration to dst, for reading
// after a failed test. Keys and data are not copied.
func (c *Cluster) KeepLogs(dst string) error { return keepLogs(c.dir, dst) }

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

func logContains(path, s string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		if strings.Contains(sc.Text(), s) {
			return true
		}
	}
	return false
}

func taken(logPath string) bool {
	return logContains(logPath, "Address already in use")
}

func tail(path string, n int) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	return lastLines(string(b), n)
}

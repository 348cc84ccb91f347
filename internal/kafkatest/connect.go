package kafkatest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"maps"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/kmirror/kmirror/internal/cluster"
)

// ConnectOpt changes how a Connect cluster is started.
type ConnectOpt func(*connectOptions)

type connectOptions struct {
	name           string
	workers        int
	heapMB         int
	dir            string
	startTimeout   time.Duration
	rebalanceDelay time.Duration
	props          map[string]string
	advertised     []string // rest.advertised.host.name by worker; nil: 127.0.0.1
	httpsAuth      bool     // https listener requiring client certificates
	fullSpeed      bool
	// dumpClasses: the worker writes the classes it loaded there as it
	// exits (classes.go's training run).
	dumpClasses string
}

func connectDefaults() connectOptions {
	return connectOptions{workers: 2, heapMB: 256, startTimeout: 4 * time.Minute, rebalanceDelay: 10 * time.Second}
}

// ConnectFullSpeed runs the workers' JVMs as production does, for
// benchmarks (FullSpeed's counterpart).
func ConnectFullSpeed() ConnectOpt { return func(o *connectOptions) { o.fullSpeed = true } }

// HTTPSClientAuth makes the workers serve REST over https only, with a
// certificate the Kafka cluster's CA signed, and require a client
// certificate it signed (listeners.https.ssl.client.auth=required), for
// kmirror and for one another. ClientCert gives one; CAPEM trusts them.
func HTTPSClientAuth() ConnectOpt { return func(o *connectOptions) { o.httpsAuth = true } }

// ConnectName names the Connect cluster in logs; it also prefixes its
// group id and internal topics.
func ConnectName(n string) ConnectOpt { return func(o *connectOptions) { o.name = n } }

// Workers sets the number of workers (default 2), one JVM each.
func Workers(n int) ConnectOpt { return func(o *connectOptions) { o.workers = n } }

// WorkerHeapMB sets each worker's JVM heap (default 256).
func WorkerHeapMB(mb int) ConnectOpt { return func(o *connectOptions) { o.heapMB = mb } }

// ConnectDir keeps the workers' files (config, logs) in dir instead of a
// new temporary directory.
func ConnectDir(dir string) ConnectOpt { return func(o *connectOptions) { o.dir = dir } }

// RebalanceDelay sets scheduled.rebalance.max.delay.ms: how long the tasks
// of a worker that left the group wait for it before they move to the
// others. Connect's default is 5 minutes; the harness's 10 s.
func RebalanceDelay(d time.Duration) ConnectOpt {
	return func(o *connectOptions) { o.rebalanceDelay = d }
}

// WorkerProps sets worker properties after the harness's own (so they
// win). Several calls add up.
func WorkerProps(props map[string]string) ConnectOpt {
	return func(o *connectOptions) {
		if o.props == nil {
			o.props = map[string]string{}
		}
		maps.Copy(o.props, props)
	}
}

// AdvertisedHostNames makes worker i advertise names[i] as its REST host
// (rest.advertised.host.name, so its worker_id is names[i]:port) instead of
// 127.0.0.1. The workers resolve every one of these names to 127.0.0.1
// through a hosts file given to their JVMs only (-Djdk.net.hosts.file), as
// the pods of a Kubernetes StatefulSet resolve each other's names: they
// forward to their leader and reach each other as usual, while nothing
// else on the machine (kmirror, a test) can resolve the names. Give one
// name per worker, e.g. connect-0.connect.svc.
func AdvertisedHostNames(names ...string) ConnectOpt {
	return func(o *connectOptions) { o.advertised = slices.Clone(names) }
}

// ConnectCluster is a running distributed Kafka Connect cluster: N workers
// (ConnectDistributed, one JVM each) in one group, with their config,
// offset and status topics on one kafkatest Cluster.
type ConnectCluster struct {
	name    string
	dir     string
	groupID string
	kafka   *Cluster
	version string
	// advertised are the workers' REST host names, by index.
	advertised []string
	// scheme is the workers' REST scheme, http or https; http is the
	// client the harness asks them with (a client certificate for https).
	scheme string
	http   *http.Client

	startTimeout time.Duration

	mu      sync.Mutex // serializes Kill, Stop, Restart and Close
	workers []*worker
}

// worker is one ConnectDistributed JVM.
type worker struct {
	index  int
	scheme string
	port   int
	dir    string // holds config/ and logs/
	argv   []string
	proc   *process // nil while the worker is down
	killed bool
}

func (w *worker) url() string { return fmt.Sprintf("%s://127.0.0.1:%d", w.scheme, w.port) }

func (w *worker) logPath() string { return filepath.Join(w.dir, "logs", "connect.log") }

// Name is the Connect cluster's name.
func (cc *ConnectCluster) Name() string { return cc.name }

// GroupID is the workers' group.id.
func (cc *ConnectCluster) GroupID() string { return cc.groupID }

// Kafka is the cluster holding the internal topics; a connector's
// producers and consumers reach it unless they override bootstrap.servers.
func (cc *ConnectCluster) Kafka() *Cluster { return cc.kafka }

// Version is the Apache Kafka version the workers run.
func (cc *ConnectCluster) Version() string { return cc.version }

// Dir holds one directory per worker (worker-0, worker-1, ...).
func (cc *ConnectCluster) Dir() string { return cc.dir }

// ConfigTopic is where connector configs are kept. It, OffsetTopic and
// StatusTopic are the workers' internal topics on Kafka.
func (cc *ConnectCluster) ConfigTopic() string { return cc.groupID + "-configs" }

// OffsetTopic is where source connectors' offsets are kept.
func (cc *ConnectCluster) OffsetTopic() string { return cc.groupID + "-offsets" }

// StatusTopic is where connector and task states are kept.
func (cc *ConnectCluster) StatusTopic() string { return cc.groupID + "-status" }

// ClientCert is a client certificate the workers of an HTTPSClientAuth
// cluster accept (the Kafka cluster's CA signed it), and CAPEM the CA their
// certificate is signed by.
func (cc *ConnectCluster) ClientCert() (Issued, error) { return cc.kafka.ca.ClientCert(Alice) }

// CAPEM is the CA that signed the workers' https certificate.
func (cc *ConnectCluster) CAPEM() string { return cc.kafka.ca.PEM }

// URLs are the REST base URLs of every worker, down ones included (a
// client is expected to try the next).
func (cc *ConnectCluster) URLs() []string {
	urls := make([]string, len(cc.workers))
	for i, w := range cc.workers {
		urls[i] = w.url()
	}
	return urls
}

// URL is the REST base URL of worker i.
func (cc *ConnectCluster) URL(i int) string { return cc.worker(i).url() }

// WorkerID is how Connect names worker i in statuses (worker_id): its
// advertised REST host and port (see AdvertisedHostNames).
func (cc *ConnectCluster) WorkerID(i int) string {
	return fmt.Sprintf("%s:%d", cc.advertisedHost(i), cc.worker(i).port)
}

// advertisedHost is the REST host worker i advertises.
func (cc *ConnectCluster) advertisedHost(i int) string {
	if i < len(cc.advertised) {
		return cc.advertised[i]
	}
	return "127.0.0.1"
}

// WorkerIndex is the index of the worker Connect calls id, or -1.
func (cc *ConnectCluster) WorkerIndex(id string) int {
	for i := range cc.workers {
		if cc.WorkerID(i) == id {
			return i
		}
	}
	return -1
}

// joinedRE is a worker's log line for each assignment it gets: the group's
// generation and the leader's advertised URL.
var joinedRE = regexp.MustCompile(`Joined group at generation (\d+) .*leaderUrl='([^']*)'`)

// Leader is the index of the group's leader: the worker whose advertised
// URL the newest assignment in the running workers' logs names (Connect
// tells it nowhere else). The leader matters to a test that kills a
// worker: a leader's successor has no record of what the dead leader had
// assigned, so it hands the dead leader's work out as soon as its session
// times out; a follower's waits scheduled.rebalance.max.delay.ms.
func (cc *ConnectCluster) Leader() (int, error) {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	gen, leader := -1, ""
	for _, w := range cc.workers {
		if w.proc == nil {
			continue
		}
		b, err := os.ReadFile(w.logPath())
		if err != nil {
			return -1, err
		}
		for _, m := range joinedRE.FindAllStringSubmatch(string(b), -1) {
			if g, err := strconv.Atoi(m[1]); err == nil && g > gen {
				gen, leader = g, m[2]
			}
		}
	}
	for i := range cc.workers {
		if leader == fmt.Sprintf("%s://%s/", cc.scheme, cc.WorkerID(i)) {
			return i, nil
		}
	}
	return -1, fmt.Errorf("kafkatest: no worker of %s is the leader %q (generation %d) its logs name", cc.name, leader, gen)
}

// WorkerPID is the process id of worker i's JVM, or 0 while it is down:
// for reading its CPU time and memory (the bench charges them to MM2).
func (cc *ConnectCluster) WorkerPID(i int) int {
	w := cc.worker(i)
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if w.proc == nil {
		return 0
	}
	return w.proc.cmd.Process.Pid
}

// Workers is the number of workers, down ones included.
func (cc *ConnectCluster) Workers() int { return len(cc.workers) }

// LogPath is worker i's log file.
func (cc *ConnectCluster) LogPath(i int) string { return cc.worker(i).logPath() }

// LogTails are the last n lines of every worker's log, headed by its name:
// what a failed test prints.
func (cc *ConnectCluster) LogTails(n int) string {
	var b strings.Builder
	for i, w := range cc.workers {
		fmt.Fprintf(&b, "--- %s worker %d (%s), last %d lines of %s:\n%s\n", cc.name, i, cc.WorkerID(i), n, w.logPath(), tail(w.logPath(), n))
	}
	return b.String()
}

func (cc *ConnectCluster) worker(i int) *worker {
	if i < 0 || i >= len(cc.workers) {
		panic(fmt.Sprintf("kafkatest: Connect cluster %s has no worker %d (0..%d)", cc.name, i, len(cc.workers)-1))
	}
	return cc.workers[i]
}

// StartConnect starts a distributed Connect cluster whose workers keep
// their config, offset and status topics on kafka (replication factor:
// its broker count, at most 3), and waits until every worker answers REST
// requests and all are members of one group. The caller must Close it; if
// the caller's process dies, so do the JVMs.
func StartConnect(ctx context.Context, kafka *Cluster, opts ...ConnectOpt) (*ConnectCluster, error) {
	o := connectDefaults()
	for _, opt := range opts {
		opt(&o)
	}
	if o.workers < 1 {
		return nil, fmt.Errorf("kafkatest: Workers(%d): a Connect cluster needs at least one worker", o.workers)
	}
	if o.advertised != nil && len(o.advertised) != o.workers {
		return nil, fmt.Errorf("kafkatest: AdvertisedHostNames gives %d names for %d workers: give one per worker", len(o.advertised), o.workers)
	}
	jars, err := EnsureJars(ctx)
	if err != nil {
		return nil, err
	}
	dir := o.dir
	if dir == "" {
		dir, err = os.MkdirTemp("", "kmirror-connect-")
		if err != nil {
			return nil, fmt.Errorf("create a directory for the Connect cluster: %w", err)
		}
	}
	if o.name == "" {
		o.name = "connect"
	}
	java, err := exec.LookPath("java")
	if err != nil {
		return nil, fmt.Errorf("java is not installed: install OpenJDK 17 or newer: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, o.startTimeout)
	defer cancel()
	// A fresh group and topics per start: a retry must not meet the
	// half-made group of the attempt before.
	var errs []error
	for attempt := 1; attempt <= 3; attempt++ {
		cc, err := startConnect(ctx, kafka, dir, java, jars, o)
		if err == nil {
			return cc, nil
		}
		errs = append(errs, err)
		if !errors.Is(err, errPortTaken) || ctx.Err() != nil {
			break
		}
		slog.Warn("connect worker port was taken; retrying on new ports", "connect", o.name, "attempt", attempt)
	}
	return nil, fmt.Errorf("start Connect cluster %s on %s (logs in %s): %w", o.name, kafka.Name(), dir, errors.Join(errs...))
}

func startConnect(ctx context.Context, kafka *Cluster, dir, java string, jars Jars, o connectOptions) (*ConnectCluster, error) {
	idp, err := Identity()
	if err != nil {
		return nil, err
	}
	suffix, err := newClusterID()
	if err != nil {
		return nil, err
	}
	ports, err := freePorts(o.workers)
	if err != nil {
		return nil, err
	}
	var classes []string // the workers' class archive, for tests' workers
	if !o.fullSpeed && o.dumpClasses == "" {
		classes = archiveFlag(classArchive(ctx, jars, java, connectClasses))
	}
	cc := &ConnectCluster{
		name:         o.name,
		dir:          dir,
		groupID:      fmt.Sprintf("kafkatest-%s-%s", o.name, strings.ToLower(strings.Trim(suffix[:8], "-_"))),
		kafka:        kafka,
		version:      jars.Version,
		startTimeout: o.startTimeout,
		advertised:   o.advertised,
		scheme:       "http",
		http:         http.DefaultClient,
	}
	var tlsDir string
	if o.httpsAuth {
		hc, err := kafka.clientCertHTTP()
		if err != nil {
			return nil, err
		}
		cc.scheme, cc.http = "https", hc
		tlsDir = filepath.Join(dir, "tls")
		if err := kafka.ca.writePKCS12Stores(tlsDir); err != nil {
			return nil, err
		}
	}
	var jvmOpts []string
	if len(o.advertised) > 0 {
		hosts, err := writeHostsFile(dir, o.advertised)
		if err != nil {
			return nil, err
		}
		jvmOpts = append(jvmOpts, "-Djdk.net.hosts.file="+hosts)
	}
	for i, port := range ports {
		w := &worker{index: i, scheme: cc.scheme, port: port, dir: filepath.Join(dir, fmt.Sprintf("worker-%d", i))}
		for _, sub := range []string{"config", "logs"} {
			if err := os.MkdirAll(filepath.Join(w.dir, sub), 0o755); err != nil {
				return nil, fmt.Errorf("create %s: %w", sub, err)
			}
		}
		props := filepath.Join(w.dir, "config", "worker.properties")
		log4j := filepath.Join(w.dir, "config", "log4j2.properties")
		wc := workerConfig{Port: port, GroupID: cc.groupID, Bootstrap: kafka.Bootstrap(cluster.Plaintext),
			RF: min(len(kafka.brokers), 3), RebalanceDelay: o.rebalanceDelay, Overrides: o.props,
			AdvertisedHost: cc.advertisedHost(i)}
		if o.httpsAuth {
			wc.TLSDir = tlsDir
		}
		for path, text := range map[string]string{props: workerProperties(wc), log4j: connectLog4j2Properties} {
			if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
				return nil, fmt.Errorf("write %s: %w", path, err)
			}
		}
		w.argv = append(append(append([]string{java}, jvmFlags(o.heapMB, o.fullSpeed)...), classes...),
			"-Dlog4j2.configurationFile="+log4j,
			// Connectors' clients may fetch OAUTHBEARER tokens from the
			// test's identity provider (Kafka 4 allows no URL by default).
			"-Dorg.apache.kafka.sasl.oauthbearer.allowed.urls="+idp.JWKSURL()+","+idp.TokenURL())
		w.argv = append(w.argv, jvmOpts...)
		if o.dumpClasses != "" {
			w.argv = append(w.argv, "-XX:ArchiveClassesAtExit="+o.dumpClasses)
		}
		w.argv = append(w.argv, "-cp", jars.Classpath(), "org.apache.kafka.connect.cli.ConnectDistributed", props)
		cc.workers = append(cc.workers, w)
	}
	began := time.Now()
	// Workers start at once: each is a JVM that scans the classpath for
	// plugins, which dominates the start.
	errs := make([]error, len(cc.workers))
	var wg sync.WaitGroup
	for i, w := range cc.workers {
		wg.Go(func() { errs[i] = cc.launch(ctx, w) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		cc.killAll()
		return nil, err
	}
	if err := cc.waitGroup(ctx, len(cc.workers)); err != nil {
		cc.killAll()
		return nil, fmt.Errorf("%w; worker logs:\n%s", err, cc.LogTails(20))
	}
	slog.Info("connect cluster started", "connect", cc.name, "version", cc.version, "workers", len(cc.workers),
		"urls", strings.Join(cc.URLs(), ","), "kafka", kafka.Name(), "took", time.Since(began).Round(time.Millisecond))
	return cc, nil
}

// launch starts a worker's JVM and waits until its REST API says the
// worker has finished starting (it joined the group and read the config
// topic). A worker that does not get there is killed.
func (cc *ConnectCluster) launch(ctx context.Context, w *worker) error {
	p, from, err := spawn(w.argv, w.logPath())
	if err != nil {
		return fmt.Errorf("start the JVM of worker %d: %w", w.index, err)
	}
	w.proc, w.killed = p, false
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	var last error
	for {
		select {
		case <-p.exited:
			w.proc = nil
			err := fmt.Errorf("worker %d exited before serving (%v); last log lines:\n%s", w.index, p.err, tail(w.logPath(), 30))
			if logContainsFrom(w.logPath(), from, "Address already in use") {
				return fmt.Errorf("%w: %w", errPortTaken, err)
			}
			return err
		case <-ctx.Done():
			w.proc = nil
			p.signal(syscall.SIGKILL)
			return fmt.Errorf("worker %d did not serve in time (last: %v): %w; last log lines:\n%s", w.index, last, ctx.Err(), tail(w.logPath(), 30))
		case <-tick.C:
		}
		if last = workerHealthy(ctx, cc.http, w.url()); last == nil {
			return nil
		}
	}
}

// workerHealthy asks GET /health (KIP-1017), which answers 200 only once
// the worker has joined its group and read the config topic; GET / only
// says the REST server is up.
func workerHealthy(ctx context.Context, client *http.Client, base string) error {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	for _, path := range []string{"/", "/health"} {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		if err != nil {
			return err
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 4096))
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %s %s", path, resp.Status, strings.TrimSpace(string(body)))
		}
	}
	return nil
}

// waitGroup polls the group coordinator until the workers' group is
// stable with n members: every worker has its assignment.
func (cc *ConnectCluster) waitGroup(ctx context.Context, n int) error {
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		last := cc.groupStable(n)
		if last == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("Connect group %s not formed: %w (%w)", cc.groupID, last, ctx.Err())
		case <-tick.C:
		}
	}
}

func (cc *ConnectCluster) groupStable(n int) error {
	a, err := cc.kafka.Admin()
	if err != nil {
		return err
	}
	gs, err := a.DescribeConsumerGroups([]string{cc.groupID})
	if err != nil {
		return err
	}
	if len(gs) != 1 {
		return fmt.Errorf("%d groups described", len(gs))
	}
	g := gs[0]
	if g.Err != 0 {
		return g.Err
	}
	if g.State != "Stable" || len(g.Members) != n {
		return fmt.Errorf("group is %s with %d of %d members", g.State, len(g.Members), n)
	}
	return nil
}

// KillWorker ends worker i with SIGKILL, as a crash would. The others
// notice when its session times out (session.timeout.ms, 10 s), and its
// connectors and tasks move to them RebalanceDelay later.
func (cc *ConnectCluster) KillWorker(i int) error {
	w := cc.worker(i)
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.terminate(w, syscall.SIGKILL)
}

// StopWorker ends worker i cleanly (SIGTERM): it leaves the group, and
// its work moves at the next rebalance (after RebalanceDelay).
func (cc *ConnectCluster) StopWorker(i int) error {
	w := cc.worker(i)
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.terminate(w, syscall.SIGTERM)
}

// RestartWorker stops worker i cleanly if it runs, starts it again on the
// same port and properties, and waits until it serves and the group is
// whole again.
func (cc *ConnectCluster) RestartWorker(ctx context.Context, i int) error {
	w := cc.worker(i)
	cc.mu.Lock()
	defer cc.mu.Unlock()
	how := "after a clean stop"
	if w.proc == nil && w.killed {
		how = "after it was killed"
	}
	if err := cc.terminate(w, syscall.SIGTERM); err != nil {
		return fmt.Errorf("restart worker %d of %s: %w", i, cc.name, err)
	}
	ctx, cancel := context.WithTimeout(ctx, cc.startTimeout)
	defer cancel()
	began := time.Now()
	if err := cc.launch(ctx, w); err != nil {
		return fmt.Errorf("restart worker %d of %s %s: %w", i, cc.name, how, err)
	}
	if err := cc.waitGroup(ctx, cc.running()); err != nil {
		return fmt.Errorf("restart worker %d of %s %s: %w; worker logs:\n%s", i, cc.name, how, err, cc.LogTails(20))
	}
	slog.Info("connect worker restarted", "connect", cc.name, "worker", i, "how", how, "took", time.Since(began).Round(time.Millisecond))
	return nil
}

// running counts the workers whose JVM runs. Called with mu held.
func (cc *ConnectCluster) running() int {
	n := 0
	for _, w := range cc.workers {
		if w.proc != nil {
			n++
		}
	}
	return n
}

// Close stops every worker (SIGTERM, SIGKILL after 30 s). Files stay; the
// internal topics stay on Kafka. Safe to call twice.
func (cc *ConnectCluster) Close() error {
	cc.mu.Lock()
	defer cc.mu.Unlock()
	errs := make([]error, len(cc.workers))
	var wg sync.WaitGroup
	for i, w := range cc.workers {
		wg.Go(func() { errs[i] = cc.terminate(w, syscall.SIGTERM) })
	}
	wg.Wait()
	return errors.Join(errs...)
}

func (cc *ConnectCluster) killAll() {
	for _, w := range cc.workers {
		_ = cc.terminate(w, syscall.SIGKILL)
	}
}

// terminate signals a running worker and waits for it to exit. Called with
// mu held, or before the cluster is handed out.
func (cc *ConnectCluster) terminate(w *worker, sig syscall.Signal) error {
	p := w.proc
	if p == nil {
		return nil
	}
	w.proc = nil
	w.killed = sig == syscall.SIGKILL
	if p.signal(sig) {
		return nil
	}
	w.killed = true
	return fmt.Errorf("worker %d of %s did not stop within 30s of %v and was killed", w.index, cc.name, sig)
}

// keepConnectLogs copies every worker's log and properties under dir to
// dst/worker-<i>.
func keepConnectLogs(dir, dst string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	var errs []error
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "worker-") {
			continue
		}
		for _, rel := range []string{"logs/connect.log", "config/worker.properties"} {
			err := copyFile(filepath.Join(dir, e.Name(), rel), filepath.Join(dst, e.Name(), filepath.Base(rel)))
			if err != nil && !errors.Is(err, os.ErrNotExist) {
				errs = append(errs, err)
			}
		}
	}
	return errors.Join(errs...)
}

// workerConfig is everything worker.properties depends on.
type workerConfig struct {
	Port           int
	GroupID        string
	Bootstrap      string
	RF             int
	RebalanceDelay time.Duration
	Overrides      map[string]string
	AdvertisedHost string
	// TLSDir holds keystore.p12 and truststore.p12 (password
	// storePassword) for an https listener that requires client
	// certificates; "" is plain http.
	TLSDir string
}

// writeHostsFile writes, in dir, the hosts file the workers' JVMs resolve
// names with (jdk.net.hosts.file replaces the system's resolver): every
// advertised name, localhost and this machine's name at 127.0.0.1, the
// address every worker listens on.
func writeHostsFile(dir string, names []string) (string, error) {
	var b strings.Builder
	b.WriteString("# Written by kmirror's kafkatest: the Connect workers' names, for their JVMs only.\n")
	b.WriteString("127.0.0.1 localhost\n")
	if h, err := os.Hostname(); err == nil && h != "" {
		fmt.Fprintf(&b, "127.0.0.1 %s\n", h)
	}
	for _, n := range names {
		fmt.Fprintf(&b, "127.0.0.1 %s\n", n)
	}
	path := filepath.Join(dir, "hosts")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return "", fmt.Errorf("write the workers' hosts file: %w", err)
	}
	return path, nil
}

const byteArrayConverter = "org.apache.kafka.connect.converters.ByteArrayConverter"

// workerProperties renders a worker's properties.
func workerProperties(c workerConfig) string {
	rf := strconv.Itoa(max(c.RF, 1))
	host := c.AdvertisedHost
	if host == "" {
		host = "127.0.0.1"
	}
	p := map[string]string{
		"bootstrap.servers": c.Bootstrap,
		"group.id":          c.GroupID,

		"config.storage.topic":              c.GroupID + "-configs",
		"config.storage.replication.factor": rf,
		"offset.storage.topic":              c.GroupID + "-offsets",
		"offset.storage.replication.factor": rf,
		// Fewer than the default 25: the topic is made at start, and a
		// test cluster never needs the spread.
		"offset.storage.partitions":         "5",
		"status.storage.topic":              c.GroupID + "-status",
		"status.storage.replication.factor": rf,
		"status.storage.partitions":         "1",

		"listeners":                 fmt.Sprintf("http://127.0.0.1:%d", c.Port),
		"rest.advertised.host.name": host,
		"rest.advertised.port":      strconv.Itoa(c.Port),
		"rest.advertised.listener":  "http",
		"key.converter":             byteArrayConverter,
		"value.converter":           byteArrayConverter,
		"header.converter":          byteArrayConverter,

		// A connector may point its clients elsewhere, e.g. MirrorMaker 2's
		// source consumer at another cluster.
		"connector.client.config.override.policy": "All",
		"scheduled.rebalance.max.delay.ms":        strconv.FormatInt(c.RebalanceDelay.Milliseconds(), 10),
		// Source offsets visible through GET /connectors/{name}/offsets
		// within a second of a record, not a minute.
		"offset.flush.interval.ms": "1000",
		// Kafka's file config provider, as deployments define it for
		// secrets a connector config references instead of holding.
		"config.providers":            "file",
		"config.providers.file.class": "org.apache.kafka.common.config.provider.FileConfigProvider",
	}
	if c.TLSDir != "" {
		// The workers' own requests to one another (forwarded to the
		// leader) present the same keystore as their client certificate.
		p["listeners"] = fmt.Sprintf("https://127.0.0.1:%d", c.Port)
		p["rest.advertised.listener"] = "https"
		// PKCS12: Connect's REST server (Jetty) reads no PEM keystore.
		p["listeners.https.ssl.keystore.type"] = "PKCS12"
		p["listeners.https.ssl.keystore.location"] = c.TLSDir + "/keystore.p12"
		p["listeners.https.ssl.keystore.password"] = storePassword
		p["listeners.https.ssl.key.password"] = storePassword
		p["listeners.https.ssl.truststore.type"] = "PKCS12"
		p["listeners.https.ssl.truststore.location"] = c.TLSDir + "/truststore.p12"
		p["listeners.https.ssl.truststore.password"] = storePassword
		p["listeners.https.ssl.client.auth"] = "required"
	}
	maps.Copy(p, c.Overrides)
	var b strings.Builder
	b.WriteString("# Written by kmirror's kafkatest; regenerated at every start.\n")
	for _, k := range slices.Sorted(maps.Keys(p)) {
		fmt.Fprintf(&b, "%s=%s\n", k, p[k])
	}
	return b.String()
}

// connectLog4j2Properties sends a worker's log to stdout (the harness
// writes it to logs/connect.log), without the config dump of every client
// the worker makes.
const connectLog4j2Properties = `status = warn
name = kafkatest-connect
appender.out.type = Console
appender.out.name = OUT
appender.out.layout.type = PatternLayout
appender.out.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.out.ref = OUT
logger.config.name = org.apache.kafka.common.config.AbstractConfig
logger.config.level = WARN
logger.reflections.name = org.reflections
logger.reflections.level = ERROR
logger.appinfo.name = org.apache.kafka.common.utils.AppInfoParser
logger.appinfo.level = WARN
`

// HandMM2Source is a MirrorSourceConnector's configuration as MirrorMaker 2
// users deploy one by hand on Connect (not through kmirror), copying the
// topics topicsRegex names from the cluster at srcBootstrap (alias
// srcAlias) to the one at dstBootstrap (dstAlias), byte for byte and
// committed records only: what adoption tests find on a Connect cluster.
func HandMM2Source(srcBootstrap, dstBootstrap, srcAlias, dstAlias, topicsRegex string, tasks int) map[string]string {
	const bytes = "org.apache.kafka.connect.converters.ByteArrayConverter"
	return map[string]string{
		"connector.class":                       "org.apache.kafka.connect.mirror.MirrorSourceConnector",
		"tasks.max":                             strconv.Itoa(tasks),
		"source.cluster.alias":                  srcAlias,
		"target.cluster.alias":                  dstAlias,
		"source.cluster.bootstrap.servers":      srcBootstrap,
		"target.cluster.bootstrap.servers":      dstBootstrap,
		"topics":                                topicsRegex,
		"replication.factor":                    "1",
		"offset-syncs.topic.replication.factor": "1",
		"sync.topic.acls.enabled":               "false",
		"refresh.topics.interval.seconds":       "5",
		"key.converter":                         bytes,
		"value.converter":                       bytes,
		"header.converter":                      bytes,
		"source.consumer.isolation.level":       "read_committed",
	}
}

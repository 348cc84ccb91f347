package kafkatest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/IBM/sarama"
)

// shared are the clusters Main started for this test binary (one package).
var shared []*Cluster

// shortMode: the binary runs with -short, where no broker is started.
var shortMode bool

// skipShort skips a test that needs real Kafka in a -short run: that run
// (the race detector's) covers the in-process tests, and the full run,
// which never skips, covers these.
func skipShort(t testing.TB) {
	t.Helper()
	if shortMode {
		t.Skip("needs real Kafka: left to the full run (this is the -short run)")
	}
}

// Main is a TestMain for packages testing against real Kafka: it starts n
// clusters once (in parallel), runs the tests, stops the brokers and, when a
// test failed, keeps their logs under <repo>/test-output/kafka/<package>/.
// A broker that cannot start fails the run; it is never a skip.
//
//	func TestMain(m *testing.M) { kafkatest.Main(m, 2) }
func Main(m *testing.M, n int, opts ...Opt) {
	os.Exit(runMain(m, n, opts))
}

func runMain(m *testing.M, n int, opts []Opt) int {
	flag.Parse()
	if testing.Short() {
		// The race detector's run (go test -race -short): the in-process
		// tests only; real Kafka is the full run's.
		shortMode = true
		n = 0
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	began := time.Now()
	clusters := make([]*Cluster, n)
	dirs := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		dirs[i], errs[i] = clusterTempDir("kmirror-kafka-")
		if errs[i] != nil {
			continue
		}
		wg.Go(func() {
			o := append([]Opt{Name(fmt.Sprintf("kafka%d", i+1)), Dir(dirs[i])}, opts...)
			clusters[i], errs[i] = Start(ctx, o...)
		})
	}
	wg.Wait()
	shared = clusters

	code := 1
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintf(os.Stderr, "kafkatest: could not start %d Kafka cluster(s): %v\n", n, err)
	} else {
		if n > 0 {
			fmt.Fprintf(os.Stderr, "kafkatest: %d Kafka %s cluster(s) ready in %s\n", n, clusters[0].Version(), time.Since(began).Round(time.Millisecond))
		}
		lazyMu.Lock()
		inMain = true
		lazyMu.Unlock()
		code = m.Run()
	}
	// Workers first: they write to the clusters stopped next.
	stopLazyConnect(code != 0)
	stopLazy(code != 0)

	keep := code != 0 || os.Getenv("KMIRROR_KEEP_KAFKA_LOGS") != ""
	for i, c := range clusters {
		if c != nil {
			if err := c.Stop(); err != nil {
				fmt.Fprintf(os.Stderr, "kafkatest: %v\n", err)
			}
		}
		if dirs[i] == "" {
			continue
		}
		if keep {
			keepClusterLogs(fmt.Sprintf("kafka%d", i+1), dirs[i])
		}
		_ = os.RemoveAll(dirs[i])
	}
	return code
}

func keepClusterLogs(name, dir string) {
	if dst, err := keptLogDir(name); err != nil {
		fmt.Fprintf(os.Stderr, "kafkatest: keep logs of %s: %v\n", name, err)
	} else if err := keepLogs(dir, dst); err != nil {
		fmt.Fprintf(os.Stderr, "kafkatest: keep logs of %s: %v\n", name, err)
	} else {
		fmt.Fprintf(os.Stderr, "kafkatest: broker logs of %s kept in %s\n", name, dst)
	}
}

// The clusters Lazy started, by name; Main stops them after the tests.
var (
	lazyMu sync.Mutex
	inMain bool // Main runs the tests: it will stop what Lazy starts
	lazy   = map[string]*lazyCluster{}
)

type lazyCluster struct {
	mu  sync.Mutex // held while it starts: a second test waits for the first
	dir string
	c   *Cluster
	err error // why it did not start; not retried, each try costs minutes
}

// Lazy is a cluster shared by the tests of a package that ask for it by
// name, started with opts by the first of them and stopped by Main after
// the tests (logs kept as Main keeps its clusters'). Later callers' opts
// are ignored: one name, one configuration. A package that never calls
// Lazy starts nothing, so a multi-broker cluster costs only the packages
// that use it:
//
//	c := kafkatest.Lazy(t, "rf3", kafkatest.Brokers(3), kafkatest.MinInsyncReplicas(2))
//
// It needs kafkatest.Main in TestMain (with n = 0 if the package needs no
// other cluster). A cluster that cannot start fails every test asking for
// it; it is never a skip. A test that kills or stops a broker leaves the
// cluster whole before it ends (RestartBroker), and does not run in
// parallel with other tests on the same cluster.
func Lazy(t testing.TB, name string, opts ...Opt) *Cluster {
	t.Helper()
	skipShort(t)
	lazyMu.Lock()
	if !inMain {
		lazyMu.Unlock()
		t.Fatalf("kafkatest: Lazy(%q) needs kafkatest.Main(m, n) in TestMain, which stops the cluster after the tests", name)
	}
	l, ok := lazy[name]
	if !ok {
		l = &lazyCluster{}
		lazy[name] = l
	}
	lazyMu.Unlock()

	l.mu.Lock()
	defer l.mu.Unlock()
	if l.c == nil && l.err == nil {
		l.c, l.err = startLazy(name, l, opts)
	}
	if l.err != nil {
		t.Fatalf("kafkatest: shared cluster %s: %v", name, l.err)
	}
	return l.c
}

func startLazy(name string, l *lazyCluster, opts []Opt) (*Cluster, error) {
	dir, err := clusterTempDir("kmirror-kafka-")
	if err != nil {
		return nil, fmt.Errorf("create a directory for the cluster: %w", err)
	}
	l.dir = dir
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	began := time.Now()
	c, err := Start(ctx, append([]Opt{Name(name), Dir(dir)}, opts...)...)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "kafkatest: Kafka %s cluster %s (%d broker(s)) ready in %s\n", c.Version(), name, len(c.brokers), time.Since(began).Round(time.Millisecond))
	return c, nil
}

// stopLazy stops and removes the clusters Lazy started, keeping their
// logs first if keep.
func stopLazy(keep bool) {
	lazyMu.Lock()
	defer lazyMu.Unlock()
	keep = keep || os.Getenv("KMIRROR_KEEP_KAFKA_LOGS") != ""
	for name, l := range lazy {
		l.mu.Lock()
		if l.c != nil {
			if err := l.c.Stop(); err != nil {
				fmt.Fprintf(os.Stderr, "kafkatest: %v\n", err)
			}
		}
		if l.dir != "" {
			if keep {
				keepClusterLogs(name, l.dir)
			}
			_ = os.RemoveAll(l.dir)
		}
		l.mu.Unlock()
	}
}

// The Connect clusters LazyConnect started, by name.
var lazyConnects = map[string]*lazyConnect{}

type lazyConnect struct {
	mu  sync.Mutex
	dir string
	cc  *ConnectCluster
	err error
}

// LazyConnect is a distributed Connect cluster on kafka shared by the
// tests of a package that ask for it by name: started by the first (tens
// of seconds: every worker is a JVM scanning its classpath for plugins),
// closed by Main after the tests, worker logs kept as Main keeps brokers'.
// Later callers' opts are ignored. It needs kafkatest.Main in TestMain.
// A test that kills or stops a worker restarts it (RestartWorker) before it
// ends, and does not run in parallel with other tests on the same cluster.
//
//	cc := kafkatest.LazyConnect(t, "connect", kafkatest.Shared(t, 0))
func LazyConnect(t testing.TB, name string, kafka *Cluster, opts ...ConnectOpt) *ConnectCluster {
	t.Helper()
	skipShort(t)
	lazyMu.Lock()
	if !inMain {
		lazyMu.Unlock()
		t.Fatalf("kafkatest: LazyConnect(%q) needs kafkatest.Main(m, n) in TestMain, which closes the workers after the tests", name)
	}
	l, ok := lazyConnects[name]
	if !ok {
		l = &lazyConnect{}
		lazyConnects[name] = l
	}
	lazyMu.Unlock()

	l.mu.Lock()
	defer l.mu.Unlock()
	if l.cc == nil && l.err == nil {
		l.dir, l.err = os.MkdirTemp("", "kmirror-connect-")
		if l.err == nil {
			l.cc, l.err = startConnectLogged(append([]ConnectOpt{ConnectName(name), ConnectDir(l.dir)}, opts...), kafka)
		}
	}
	if l.err != nil {
		t.Fatalf("kafkatest: shared Connect cluster %s: %v", name, l.err)
	}
	if l.cc.kafka != kafka {
		t.Fatalf("kafkatest: shared Connect cluster %s runs on Kafka %s, not %s", name, l.cc.kafka.Name(), kafka.Name())
	}
	return l.cc
}

// NewConnect starts a Connect cluster of the test's own (for a test that
// must not disturb a shared one) and closes it when the test ends,
// printing the tail of every worker's log if the test failed.
func NewConnect(t testing.TB, kafka *Cluster, opts ...ConnectOpt) *ConnectCluster {
	t.Helper()
	skipShort(t)
	dir := t.TempDir()
	cc, err := startConnectLogged(append([]ConnectOpt{ConnectName("connect"), ConnectDir(dir)}, opts...), kafka)
	if err != nil {
		t.Fatalf("kafkatest: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kafkatest: Connect worker logs:\n%s", cc.LogTails(40))
		}
		if err := cc.Close(); err != nil {
			t.Logf("kafkatest: %v", err)
		}
	})
	return cc
}

func startConnectLogged(opts []ConnectOpt, kafka *Cluster) (*ConnectCluster, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	began := time.Now()
	cc, err := StartConnect(ctx, kafka, opts...)
	if err != nil {
		return nil, err
	}
	fmt.Fprintf(os.Stderr, "kafkatest: Connect %s cluster %s (%d workers on %s) ready in %s\n",
		cc.Version(), cc.Name(), len(cc.workers), kafka.Name(), time.Since(began).Round(time.Millisecond))
	return cc, nil
}

// stopLazyConnect closes the Connect clusters LazyConnect started and
// removes their files, keeping the logs first if keep.
func stopLazyConnect(keep bool) {
	lazyMu.Lock()
	defer lazyMu.Unlock()
	keep = keep || os.Getenv("KMIRROR_KEEP_KAFKA_LOGS") != ""
	for name, l := range lazyConnects {
		l.mu.Lock()
		if l.cc != nil {
			if err := l.cc.Close(); err != nil {
				fmt.Fprintf(os.Stderr, "kafkatest: %v\n", err)
			}
		}
		if l.dir != "" {
			if keep {
				if dst, err := keptLogDir(name); err != nil {
					fmt.Fprintf(os.Stderr, "kafkatest: keep logs of %s: %v\n", name, err)
				} else if err := keepConnectLogs(l.dir, dst); err != nil {
					fmt.Fprintf(os.Stderr, "kafkatest: keep logs of %s: %v\n", name, err)
				} else {
					fmt.Fprintf(os.Stderr, "kafkatest: Connect worker logs of %s kept in %s\n", name, dst)
				}
			}
			_ = os.RemoveAll(l.dir)
		}
		l.mu.Unlock()
	}
}

// keptLogDir is <repo>/test-output/kafka/<package path>/<cluster>, the repo
// being the nearest directory with a go.mod above the test's working
// directory (go test runs in the package's directory).
func keptLogDir(name string) (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	root := wd
	for {
		if _, err := os.Stat(filepath.Join(root, "go.mod")); err == nil {
			break
		}
		parent := filepath.Dir(root)
		if parent == root {
			return "", fmt.Errorf("no go.mod above %s", wd)
		}
		root = parent
	}
	rel, err := filepath.Rel(root, wd)
	if err != nil {
		return "", err
	}
	return filepath.Join(root, "test-output", "kafka", rel, name), nil
}

// Shared is the i-th cluster Main started; it fails the test if there is none.
func Shared(t testing.TB, i int) *Cluster {
	t.Helper()
	skipShort(t)
	if i < 0 || i >= len(shared) || shared[i] == nil {
		t.Fatalf("kafkatest: no shared cluster %d: call kafkatest.Main(m, n) with n > %d in TestMain", i, i)
	}
	return shared[i]
}

var unsafeTopicChars = regexp.MustCompile(`[^a-zA-Z0-9._-]+`)

// NewTopic creates a topic named after the test, unique across runs, with
// the given partitions and configs and a replica on every broker, waits
// until every partition has a leader, and deletes it when the test ends.
func NewTopic(t testing.TB, c *Cluster, partitions int32, configs map[string]*string) string {
	t.Helper()
	return NewTopicRF(t, c, partitions, int16(len(c.brokers)), configs)
}

// NewTopicRF is NewTopic with rf replicas per partition (at most the
// number of brokers).
func NewTopicRF(t testing.TB, c *Cluster, partitions int32, rf int16, configs map[string]*string) string {
	t.Helper()
	name := TopicName(t.Name())
	a, err := c.Admin()
	if err != nil {
		t.Fatalf("kafkatest: %v", err)
	}
	err = a.CreateTopic(name, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: rf, ConfigEntries: configs}, false)
	if err != nil {
		t.Fatalf("kafkatest: create topic %s on %s: %v", name, c.Name(), err)
	}
	t.Cleanup(func() {
		// Asked again: the admin taken above is closed if the test
		// restarted the broker.
		a, err := c.Admin()
		if err == nil {
			err = a.DeleteTopic(name)
		}
		if err != nil && !errors.Is(err, sarama.ErrUnknownTopicOrPartition) {
			t.Logf("kafkatest: delete topic %s on %s: %v", name, c.Name(), err)
		}
	})
	if err := waitLeaders(c, name, int(partitions), 30*time.Second); err != nil {
		t.Fatalf("kafkatest: %v", err)
	}
	return name
}

// TopicName makes a valid, unique topic name from a test name.
func TopicName(testName string) string {
	b := make([]byte, 4)
	_, _ = rand.Read(b)
	base := strings.Trim(unsafeTopicChars.ReplaceAllString(testName, "-"), "-")
	if len(base) > 200 {
		base = base[:200]
	}
	return base + "-" + hex.EncodeToString(b)
}

// waitLeaders polls metadata until the topic's partitions all have leaders:
// CreateTopics answers before the broker can serve them.
func waitLeaders(c *Cluster, topic string, partitions int, timeout time.Duration) error {
	client, err := c.client("kafkatest-wait")
	if err != nil {
		return err
	}
	defer client.Close()
	deadline := time.Now().Add(timeout)
	var last error
	for time.Now().Before(deadline) {
		last = ready(client, topic, partitions)
		if last == nil {
			return nil
		}
		time.Sleep(50 * time.Millisecond) // polling interval, not a wait for an event
	}
	return fmt.Errorf("topic %s on %s not ready after %s: %w", topic, c.Name(), timeout, last)
}

func ready(client sarama.Client, topic string, partitions int) error {
	if err := client.RefreshMetadata(topic); err != nil {
		return err
	}
	ps, err := client.Partitions(topic)
	if err != nil {
		return err
	}
	if len(ps) != partitions {
		return fmt.Errorf("%d of %d partitions visible", len(ps), partitions)
	}
	for _, p := range ps {
		if _, err := client.Leader(topic, p); err != nil {
			return fmt.Errorf("partition %d: %w", p, err)
		}
	}
	return nil
}

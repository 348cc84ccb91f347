package kafkatest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
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
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	began := time.Now()
	clusters := make([]*Cluster, n)
	dirs := make([]string, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		dirs[i], errs[i] = os.MkdirTemp("", "kmirror-kafka-")
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
		fmt.Fprintf(os.Stderr, "kafkatest: %d Kafka %s cluster(s) ready in %s\n", n, clusters[0].Version(), time.Since(began).Round(time.Millisecond))
		code = m.Run()
	}

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
		name := fmt.Sprintf("kafka%d", i+1)
		if keep {
			if dst, err := keptLogDir(name); err != nil {
				fmt.Fprintf(os.Stderr, "kafkatest: keep logs of %s: %v\n", name, err)
			} else if err := keepLogs(dirs[i], dst); err != nil {
				fmt.Fprintf(os.Stderr, "kafkatest: keep logs of %s: %v\n", name, err)
			} else {
				fmt.Fprintf(os.Stderr, "kafkatest: broker logs of %s kept in %s\n", name, dst)
			}
		}
		_ = os.RemoveAll(dirs[i])
	}
	return code
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
	if i < 0 || i >= len(shared) || shared[i] == nil {
		t.Fatalf("kafkatest: no shared cluster %d: call kafkatest.Main(m, n) with n > %d in TestMain", i, i)
	}
	return shared[i]
}

var unsafeTopicChars = regexp.MustCompile(`[^a-zA-Z0-9._-]+`)

// NewTopic creates a topic named after the test, unique across runs, with
// the given partitions and configs, waits until every partition has a
// leader, and deletes it when the test ends.
func NewTopic(t testing.TB, c *Cluster, partitions int32, configs map[string]*string) string {
	t.Helper()
	name := TopicName(t.Name())
	a, err := c.Admin()
	if err != nil {
		t.Fatalf("kafkatest: %v", err)
	}
	err = a.CreateTopic(name, &sarama.TopicDetail{NumPartitions: partitions, ReplicationFactor: 1, ConfigEntries: configs}, false)
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
	cfg, err := c.Settings("PLAINTEXT", "").Config("kafkatest-wait")
	if err != nil {
		return err
	}
	client, err := sarama.NewClient([]string{c.Bootstrap("PLAINTEXT")}, cfg)
	if err != nil {
		return fmt.Errorf("connect to %s: %w", c.Name(), err)
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

package kafkatest_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/kafkatest"
)

// connect is this package's shared Connect cluster, on the first Kafka.
func connect(t *testing.T) *kafkatest.ConnectCluster {
	return kafkatest.LazyConnect(t, "connect", kafkatest.Shared(t, 0))
}

// Every worker serves the REST API of the fetched Kafka version, knows
// MirrorMaker 2's connectors and the stock transforms and predicates, and
// keeps its state in the group's topics on Kafka.
func TestConnectClusterServes(t *testing.T) {
	cc := connect(t)
	if got := len(cc.URLs()); got != 2 {
		t.Fatalf("%d workers, want 2", got)
	}
	for i, u := range cc.URLs() {
		var info struct {
			Version        string `json:"version"`
			KafkaClusterID string `json:"kafka_cluster_id"`
		}
		getJSON(t, u+"/", &info)
		if info.Version != cc.Version() || info.KafkaClusterID != cc.Kafka().ID() {
			t.Errorf("worker %d: version %q cluster %q, want %q %q", i, info.Version, info.KafkaClusterID, cc.Version(), cc.Kafka().ID())
		}
	}
	var plugins []struct {
		Class string `json:"class"`
	}
	getJSON(t, cc.URL(1)+"/connector-plugins?connectorsOnly=false", &plugins)
	var classes []string
	for _, p := range plugins {
		classes = append(classes, p.Class)
	}
	for _, want := range []string{
		"org.apache.kafka.connect.mirror.MirrorSourceConnector",
		"org.apache.kafka.connect.mirror.MirrorCheckpointConnector",
		"org.apache.kafka.connect.mirror.MirrorHeartbeatConnector",
		"org.apache.kafka.connect.transforms.InsertHeader",
		"org.apache.kafka.connect.transforms.Filter",
		"org.apache.kafka.connect.transforms.RegexRouter",
		"org.apache.kafka.connect.transforms.predicates.HasHeaderKey",
		"org.apache.kafka.connect.transforms.predicates.TopicNameMatches",
	} {
		if !slices.Contains(classes, want) {
			t.Errorf("plugin %s missing from %v", want, classes)
		}
	}
	a, err := cc.Kafka().Admin()
	if err != nil {
		t.Fatal(err)
	}
	topics, err := a.ListTopics()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{cc.ConfigTopic(), cc.OffsetTopic(), cc.StatusTopic()} {
		if _, ok := topics[name]; !ok {
			t.Errorf("internal topic %s not on %s", name, cc.Kafka().Name())
		}
	}
}

// A worker killed with SIGKILL stops answering and leaves the group; a
// restart on the same address brings the group back to two members.
func TestConnectWorkerKillAndRestart(t *testing.T) {
	cc := connect(t)
	if err := cc.KillWorker(1); err != nil {
		t.Fatal(err)
	}
	if _, err := http.Get(cc.URL(1) + "/"); err == nil {
		t.Fatalf("worker 1 still answers at %s after SIGKILL", cc.URL(1))
	}
	waitMembers(t, cc, 1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	began := time.Now()
	if err := cc.RestartWorker(ctx, 1); err != nil {
		t.Fatal(err)
	}
	t.Logf("worker restart after SIGKILL took %s", time.Since(began).Round(time.Millisecond))
	waitMembers(t, cc, 2)
	var info struct{ Version string }
	getJSON(t, cc.URL(1)+"/", &info)
}

// waitMembers polls the workers' group until it is stable with n members.
func waitMembers(t *testing.T, cc *kafkatest.ConnectCluster, n int) {
	t.Helper()
	a, err := cc.Kafka().Admin()
	if err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(2 * time.Minute)
	last := ""
	for time.Now().Before(deadline) {
		gs, err := a.DescribeConsumerGroups([]string{cc.GroupID()})
		if err == nil && len(gs) == 1 {
			last = fmt.Sprintf("%s with %d members", gs[0].State, len(gs[0].Members))
			if gs[0].State == "Stable" && len(gs[0].Members) == n {
				return
			}
		} else {
			last = fmt.Sprint(err)
		}
		time.Sleep(250 * time.Millisecond) // polling interval
	}
	t.Fatalf("group %s not stable with %d members in 2m: %s\n%s", cc.GroupID(), n, last, cc.LogTails(30))
}

func getJSON(t *testing.T, url string, v any) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s %s", url, resp.Status, strings.TrimSpace(string(body)))
	}
	if err := json.Unmarshal(body, v); err != nil {
		t.Fatalf("GET %s: %v in %s", url, err, body)
	}
}

// A test's own Connect cluster takes its options: one worker here, with a
// worker property of the test's, on the second Kafka cluster.
func TestNewConnectTakesOptions(t *testing.T) {
	k := kafkatest.Shared(t, 1)
	cc := kafkatest.NewConnect(t, k, kafkatest.Workers(1), kafkatest.ConnectName("own"),
		kafkatest.WorkerProps(map[string]string{"offset.flush.interval.ms": "2500"}))
	if got := len(cc.URLs()); got != 1 {
		t.Fatalf("%d workers, want 1", got)
	}
	var info struct {
		KafkaClusterID string `json:"kafka_cluster_id"`
	}
	getJSON(t, cc.URL(0)+"/", &info)
	if info.KafkaClusterID != k.ID() {
		t.Errorf("worker on Kafka %s, want %s", info.KafkaClusterID, k.ID())
	}
	waitMembers(t, cc, 1)
	if !strings.HasPrefix(cc.GroupID(), "kafkatest-own-") {
		t.Errorf("group id %s does not name the cluster", cc.GroupID())
	}
	props, err := os.ReadFile(filepath.Join(cc.Dir(), "worker-0", "config", "worker.properties"))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(props), "offset.flush.interval.ms=2500\n") {
		t.Errorf("worker property not applied:\n%s", props)
	}
}

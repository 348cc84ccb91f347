package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/connect"
	"github.com/kmirror/kmirror/internal/e2e"
	"github.com/kmirror/kmirror/internal/embedded"
	"github.com/kmirror/kmirror/internal/kafkatest"
	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/internal/task"
)

func writeSpec(t *testing.T, spec service.Spec) string {
	t.Helper()
	b, err := json.Marshal(spec)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "spec.json")
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// run -f copies, stops on cancel (SIGTERM) with progress committed, and a
// second run continues where the first stopped: nothing twice, nothing lost.
func TestRunSpecStopsWithProgressSaved(t *testing.T) {
	cs, err := embedded.StartAll([]string{"east", "west"})
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	east, west := cs[0].Settings(), cs[1].Settings()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := e2e.Produce(ctx, east, "orders", 3, 2000, 100); err != nil {
		t.Fatal(err)
	}
	tk := task.Task{Name: "spec-task", Type: task.TypeKafkaReplication,
		Current: task.Current{Cluster: "east", Alias: "A"},
		Peer:    task.Peer{Alias: "B", ConfigType: task.PeerByCluster, Cluster: "west"},
		Rules:   task.Rules{Tasks: task.DefaultTasks, ReplicationFactor: 1, Direction: task.DirectionPush, Topics: []string{"orders"}, RenameTopics: true}}
	path := writeSpec(t, service.Spec{Clusters: []cluster.Settings{east, west}, Tasks: []task.Task{tk}})

	runOnce := func(until int64) {
		t.Helper()
		rctx, stop := context.WithCancel(ctx)
		var out, errOut syncBuffer
		done := make(chan error, 1)
		go func() {
			done <- run(rctx, []string{"run", "-f", path}, func(string) string { return "" }, &out, &errOut)
		}()
		if _, err := e2e.WaitFor(ctx, west, "A.orders", until, nil); err != nil {
			t.Fatalf("%v\n%s", err, errOut.String())
		}
		stop() // what SIGTERM does
		if err := <-done; err != nil {
			t.Fatalf("run: %v\n%s", err, errOut.String())
		}
		if !strings.Contains(out.String(), "progress committed") {
			t.Fatalf("no clean stop reported:\n%s", out.String())
		}
	}
	runOnce(2000)
	if _, err := e2e.Produce(ctx, east, "orders", 3, 1000, 100); err != nil {
		t.Fatal(err)
	}
	runOnce(3000)
	rep, err := e2e.Verify(ctx, east, "orders", west, "A.orders", e2e.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("after two runs: %s", rep.String())
	}
}

func TestRunSpecRefusesAnInvalidTask(t *testing.T) {
	tk := task.Task{Name: "x", Current: task.Current{Cluster: "east", Alias: "A"},
		Peer:  task.Peer{Alias: "A", ConfigType: task.PeerByAddress, Address: []string{"127.0.0.1:1"}},
		Rules: task.Rules{Direction: "sideways", Topics: []string{"orders"}}}
	path := writeSpec(t, service.Spec{Clusters: []cluster.Settings{{Name: "east", BootstrapServers: []string{"127.0.0.1:9092"}}}, Tasks: []task.Task{tk}})
	var out, errOut bytes.Buffer
	err := run(context.Background(), []string{"run", "-f", path}, func(string) string { return "" }, &out, &errOut)
	if err == nil {
		t.Fatal("invalid spec accepted")
	}
	for _, want := range []string{"tasks[0] (x).name", "peer.alias", "rules.direction"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error does not name %s: %v", want, err)
		}
	}
}

// stopLimit bounds how long kmirror may take to stop after SIGTERM: flows
// flush and commit, they do not drain the source.
const stopLimit = 30 * time.Second

// SIGTERM to a real `kmirror run` process while records stream between real
// Kafka clusters (SASL on both sides) stops it within stopLimit with
// progress committed; a restarted run copies the rest and nothing twice.
// The JSON log of both runs carries task and flow on flow lines and never
// the SASL password.
func TestRunProcessSIGTERMMidCopyCopiesNothingTwice(t *testing.T) {
	k1, k2 := realKafka(t)
	east := k1.Settings(cluster.SASLPlaintext, cluster.MechanismSCRAMSHA256)
	east.Name = "east"
	west := k2.Settings(cluster.SASLSSL, cluster.MechanismSCRAMSHA512)
	west.Name = "west"
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	const partitions = 3
	topic := kafkatest.NewTopic(t, k1, partitions, nil)
	target := "A." + topic

	// Records keep coming while the first run copies, so SIGTERM lands in
	// the middle of the copy.
	var produced atomic.Int64
	stopProducing := make(chan struct{})
	producerDone := make(chan error, 1)
	go func() {
		for range 100 { // bounded: 100 chunks at most
			select {
			case <-stopProducing:
				producerDone <- nil
				return
			default:
			}
			res, err := e2e.Produce(ctx, east, topic, partitions, 500, 200)
			produced.Add(res.Records)
			if err != nil {
				producerDone <- err
				return
			}
		}
		producerDone <- nil
	}()

	tk := task.Task{Name: "sigterm-task", Type: task.TypeKafkaReplication,
		Current: task.Current{Cluster: "east", Alias: "A"},
		Peer:    task.Peer{Alias: "B", ConfigType: task.PeerByCluster, Cluster: "west"},
		Rules:   task.Rules{Direction: task.DirectionPush, Topics: []string{topic}, Tasks: 2, ReplicationFactor: task.DefaultReplicationFactor, RenameTopics: true}}
	path := writeSpec(t, service.Spec{Clusters: []cluster.Settings{east, west}, Tasks: []task.Task{tk}})
	args := []string{"run", "-f", path, "--log-format", "json", "--log-level", "debug", "--status-interval", "500ms"}

	first := startKmirror(t, args...)
	if _, err := e2e.WaitFor(ctx, west, target, 3000, nil); err != nil {
		t.Fatalf("%v\n%s", err, first.stderr.String())
	}
	took, err := first.terminate(t, stopLimit)
	if err != nil {
		t.Fatalf("first run exited with %v after SIGTERM\n%s", err, first.stderr.String())
	}
	if !strings.Contains(first.stdout.String(), "progress committed") {
		t.Fatalf("no clean stop reported:\n%s", first.stdout.String())
	}
	atStop, err := e2e.Count(ctx, west, target)
	if err != nil {
		t.Fatal(err)
	}
	producedAtStop := produced.Load()
	close(stopProducing)
	if err := <-producerDone; err != nil {
		t.Fatal(err)
	}
	total := produced.Load()
	t.Logf("first run stopped %s after SIGTERM with %d records copied, %d produced by then, %d in all",
		took.Round(time.Millisecond), atStop, producedAtStop, total)

	second := startKmirror(t, args...)
	if _, err := e2e.WaitFor(ctx, west, target, total, nil); err != nil {
		t.Fatalf("%v\n%s", err, second.stderr.String())
	}
	if _, err := second.terminate(t, stopLimit); err != nil {
		t.Fatalf("second run exited with %v after SIGTERM\n%s", err, second.stderr.String())
	}
	rep, err := e2e.Verify(ctx, east, topic, west, target, e2e.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() || rep.Duplicated != 0 {
		t.Fatalf("after SIGTERM and a restart: %s", rep.String())
	}
	for _, p := range []*kmirrorProcess{first, second} {
		checkJSONLog(t, p.stderr.String(), kafkatest.Alice.Password)
	}
	// A flow logs "replicating" before it copies a record.
	if !strings.Contains(first.stderr.String(), `"flow":`) {
		t.Fatalf("the first run logged no flow line:\n%s", first.stderr.String())
	}
}

// checkJSONLog checks a --log-format json log: every line is a JSON object,
// every line about a flow names its task, and secret appears nowhere.
func checkJSONLog(t *testing.T, log, secret string) {
	t.Helper()
	if strings.Contains(log, secret) {
		t.Fatalf("the log holds a password:\n%s", log)
	}
	sc := bufio.NewScanner(strings.NewReader(log))
	sc.Buffer(make([]byte, 0, 64*1024), 1<<20)
	lines := 0
	for sc.Scan() {
		lines++
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("log line is not JSON: %v\n%s", err, sc.Text())
		}
		if _, ok := m["flow"]; ok && m["task"] == nil {
			t.Fatalf("flow log line without its task: %s", sc.Text())
		}
	}
	if lines == 0 {
		t.Fatal("nothing was logged; is the log captured?")
	}
}

// `kmirror run -f` with a task on Kafka Connect deploys it there from the
// spec's connect_clusters (both sides over SASL, the target over TLS with
// the spec's CA: the connectors get them as Java client settings), every
// record arrives, and stopping kmirror leaves the connectors running.
func TestRunDeploysTasksOnConnect(t *testing.T) {
	k1, k2 := realKafka(t)
	east := k1.Settings(cluster.SASLPlaintext, cluster.MechanismSCRAMSHA256)
	east.Name = "east"
	west := k2.Settings(cluster.SASLSSL, cluster.MechanismSCRAMSHA512)
	west.Name = "west"
	cc := kafkatest.NewConnect(t, k2, kafkatest.Workers(1))
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	topic := kafkatest.NewTopic(t, k1, 2, nil)
	const n = 400
	if _, err := e2e.Produce(ctx, east, topic, 2, n, 100); err != nil {
		t.Fatal(err)
	}
	tk := task.Task{Name: "headless-connect", Type: task.TypeKafkaReplication, Engine: task.ConnectEngine("wc"),
		Current: task.Current{Cluster: "east", Alias: "A"},
		Peer:    task.Peer{Alias: "B", ConfigType: task.PeerByCluster, Cluster: "west"},
		Rules:   task.Rules{Direction: task.DirectionPush, Topics: []string{topic}, Tasks: 2, ReplicationFactor: task.DefaultReplicationFactor, RenameTopics: true}}
	path := writeSpec(t, service.Spec{Clusters: []cluster.Settings{east, west},
		ConnectClusters: []service.ConnectClusterSettings{{Name: "wc", URLs: cc.URLs(), KafkaCluster: "west"}},
		Tasks:           []task.Task{tk}})
	p := startKmirror(t, "run", "-f", path, "--status-interval", "1s")
	client, err := connect.New(connect.Config{URLs: cc.URLs(), Timeout: time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	source := "kmirror.headless-connect.A-B.source"
	t.Cleanup(func() {
		for _, role := range []string{"source", "heartbeat", "checkpoint"} {
			_ = client.Delete(context.Background(), "kmirror.headless-connect.A-B."+role)
		}
	})
	if _, err := e2e.WaitFor(ctx, west, "A."+topic, n, nil); err != nil {
		st, _ := client.Status(ctx, source)
		t.Fatalf("%v\nconnector: %+v\n%s", err, st, p.stderr.String())
	}
	rep, err := e2e.Verify(ctx, east, topic, west, "A."+topic, e2e.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("the copy on Connect: %s", rep)
	}
	if _, err := p.terminate(t, stopLimit); err != nil {
		t.Fatalf("kmirror run exited with %v after SIGTERM\n%s", err, p.stderr.String())
	}
	st, err := client.Status(ctx, source)
	if err != nil || st.Connector.State != connect.StateRunning {
		t.Fatalf("after kmirror stopped the connector is %+v (%v), want it running on", st.Connector, err)
	}
	// The passwords went to Connect as the spec gave them (no config
	// provider): what the docs warn about.
	if strings.Contains(p.stderr.String(), west.Password) || strings.Contains(p.stdout.String(), west.Password) {
		t.Fatal("a password is in kmirror's output")
	}
}

// A spec file describes clusters reached with a client certificate and
// with OAUTHBEARER as the API does: run -f copies every record, once, in
// order, from a source that requires a certificate to a target that
// takes only OAuth tokens.
func TestRunSpecOverClientCertificatesAndOAuth(t *testing.T) {
	k1, k2 := realKafka(t)
	source, err := k1.SettingsWithCert(cluster.SSL, "")
	if err != nil {
		t.Fatal(err)
	}
	source.Name = "east"
	target, err := k2.SettingsOAuth(cluster.SASLSSL, kafkatest.AliceOAuth)
	if err != nil {
		t.Fatal(err)
	}
	target.Name = "west"
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	topic := kafkatest.NewTopic(t, k1, 3, nil)
	if _, err := e2e.Produce(ctx, k1.Settings(cluster.Plaintext, ""), topic, 3, 1500, 100); err != nil {
		t.Fatal(err)
	}
	tk := task.Task{Name: "spec-secured", Type: task.TypeKafkaReplication,
		Current: task.Current{Cluster: "east", Alias: "A"},
		Peer:    task.Peer{Alias: "B", ConfigType: task.PeerByCluster, Cluster: "west"},
		Rules:   task.Rules{Tasks: task.DefaultTasks, ReplicationFactor: 1, Direction: task.DirectionPush, Topics: []string{topic}, RenameTopics: true}}
	path := writeSpec(t, service.Spec{Clusters: []cluster.Settings{source, target}, Tasks: []task.Task{tk}})
	raw, _ := os.ReadFile(path)
	for _, field := range []string{`"client_cert_pem"`, `"client_key_pem"`, `"token_endpoint"`, `"client_secret"`} {
		if !strings.Contains(string(raw), field) {
			t.Fatalf("the spec file has no %s", field)
		}
	}
	rctx, stop := context.WithCancel(ctx)
	var out, errOut syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(rctx, []string{"run", "-f", path}, func(string) string { return "" }, &out, &errOut)
	}()
	readTarget := k2.Settings(cluster.Plaintext, "")
	if _, err := e2e.WaitFor(ctx, readTarget, "A."+topic, 1500, nil); err != nil {
		stop()
		if runErr := <-done; runErr != nil {
			t.Logf("run: %v", runErr)
		}
		t.Fatalf("%v\n%s", err, errOut.String())
	}
	stop()
	if err := <-done; err != nil {
		t.Fatalf("run: %v\n%s", err, errOut.String())
	}
	rep, err := e2e.Verify(ctx, k1.Settings(cluster.Plaintext, ""), topic, readTarget, "A."+topic, e2e.VerifyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !rep.OK() {
		t.Fatalf("copied over a client certificate and OAuth: %s", rep.String())
	}
	for _, secret := range []string{"alice-client-secret", "PRIVATE KEY"} {
		if strings.Contains(out.String()+errOut.String(), secret) {
			t.Errorf("run's output holds %q", secret)
		}
	}
}

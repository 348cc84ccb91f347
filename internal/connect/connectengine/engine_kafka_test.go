package connectengine

import (
	"context"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/connect"
	"github.com/kmirror/kmirror/internal/connect/connectplan"
	"github.com/kmirror/kmirror/internal/e2e"
	"github.com/kmirror/kmirror/internal/kafkatest"
	"github.com/kmirror/kmirror/internal/task"
)

// Two clusters: the first holds the Connect cluster's topics and is the
// target; the second is the source.
func TestMain(m *testing.M) { kafkatest.Main(m, 2) }

// A task on Kafka Connect through the engine: deployed as a connector, its
// status follows Connect (RUNNING, DEGRADED while the worker running its
// task is dead, RUNNING once Connect moved it), every record arrives,
// pause and resume act on the connector, and removal deletes it.
func TestEngineOnRealConnect(t *testing.T) {
	target, source := kafkatest.Shared(t, 0), kafkatest.Shared(t, 1)
	cc := kafkatest.LazyConnect(t, "engine", target)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("Connect worker logs:\n%s", cc.LogTails(40))
		}
	})
	topic := kafkatest.NewTopic(t, source, 2, nil)
	name := "kmirror-" + kafkatest.TopicName(t.Name())[:20]
	plan := func(tk task.Task, _, _ cluster.Settings, on connectplan.Cluster) ([]connectplan.Connector, error) {
		return []connectplan.Connector{{Name: name, Flow: "src->dst", Config: map[string]string{
			"connector.class":                       "org.apache.kafka.connect.mirror.MirrorSourceConnector",
			"tasks.max":                             "2",
			"source.cluster.alias":                  "src",
			"target.cluster.alias":                  "dst",
			"source.cluster.bootstrap.servers":      source.Bootstrap(cluster.Plaintext),
			"target.cluster.bootstrap.servers":      target.Bootstrap(cluster.Plaintext),
			"topics":                                topic,
			"replication.factor":                    "1",
			"offset-syncs.topic.replication.factor": "1",
			"sync.topic.acls.enabled":               "false",
		}}}, nil
	}
	e := New(Deps{
		Cluster: func(context.Context, string) (connectplan.Cluster, error) {
			return connectplan.Cluster{Name: "c1", Client: connect.Config{URLs: cc.URLs(), DialTimeout: 2 * time.Second}}, nil
		},
		Plan:         plan,
		Names:        func(task.Task) []string { return []string{name} },
		PollInterval: time.Second,
	})
	defer e.Close()
	tk := task.Task{Name: "on-connect", Engine: task.ConnectEngine("c1")}
	if err := e.Check(tk, cluster.Settings{}, cluster.Settings{}); err != nil {
		t.Fatal(err)
	}
	if err := e.Start(tk, cluster.Settings{}, cluster.Settings{}); err != nil {
		t.Fatal(err)
	}
	client, err := connect.New(connect.Config{URLs: cc.URLs(), DialTimeout: 2 * time.Second, Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Delete(context.Background(), name) })
	waitState(t, e, tk.Name, task.StateRunning, "", 3*time.Minute)
	produce(t, source, topic, 100)
	waitCount(t, target, "src."+topic, 100)

	st, err := client.Status(context.Background(), name)
	if err != nil || len(st.Tasks) == 0 {
		t.Fatalf("status: %+v, %v", st, err)
	}
	victim := cc.WorkerIndex(st.Tasks[0].WorkerID)
	if err := cc.KillWorker(victim); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
		defer cancel()
		if err := cc.RestartWorker(ctx, victim); err != nil {
			t.Errorf("leave the Connect cluster whole: %v", err)
		}
	})
	killed := time.Now()
	reason := waitState(t, e, tk.Name, task.StateDegraded, "does not answer", time.Minute)
	t.Logf("%s after the kill: DEGRADED: %s", time.Since(killed).Round(time.Millisecond), reason)
	waitState(t, e, tk.Name, task.StateRunning, "", 5*time.Minute)
	t.Logf("%s after the kill: RUNNING again", time.Since(killed).Round(time.Millisecond))
	produce(t, source, topic, 50)
	waitCount(t, target, "src."+topic, 150)

	e.Stop(tk.Name)
	if _, running := e.Status(tk.Name); running {
		t.Fatal("a stopped task still runs here")
	}
	waitConnector(t, client, name, connect.StatePaused)
	if err := e.Start(tk, cluster.Settings{}, cluster.Settings{}); err != nil {
		t.Fatal(err)
	}
	waitConnector(t, client, name, connect.StateRunning)
	waitState(t, e, tk.Name, task.StateRunning, "", time.Minute)
	if err := e.Remove(tk); err != nil {
		t.Fatal(err)
	}
	// Connect applies a delete through its config topic: gone within seconds.
	deadline := time.Now().Add(time.Minute)
	for {
		_, err := client.Status(context.Background(), name)
		if connect.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("a minute after Remove the connector is still there: %v", err)
		}
		time.Sleep(300 * time.Millisecond)
	}
	n := waitCount(t, target, "src."+topic, 150)
	// Record by record: every source record there, unchanged and in
	// order; repeats allowed (MirrorMaker 2 is at least once, and a worker
	// was killed between its offset commits), and counted.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rep, err := e2e.Verify(ctx, source.Settings(cluster.Plaintext, ""), topic, target.Settings(cluster.Plaintext, ""), "src."+topic,
		e2e.VerifyOptions{AllowDuplicates: true})
	if err != nil || !rep.OK() {
		t.Fatalf("the copy across the kill (%v): %s", err, rep)
	}
	t.Logf("target holds %d records for 150 produced: %d copied again after the kill (MirrorMaker 2 is at least once): %s", n, rep.Duplicated, rep)
}

func waitState(t *testing.T, e *Engine, name string, want task.State, reasonPart string, limit time.Duration) string {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		st, ok := e.Status(name)
		if ok && st.State == want && strings.Contains(st.Reason, reasonPart) {
			return st.Reason
		}
		if time.Now().After(deadline) {
			t.Fatalf("task %s: %s (%s), want %s with %q after %s", name, st.State, st.Reason, want, reasonPart, limit)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func waitConnector(t *testing.T, c *connect.Client, name, want string) {
	t.Helper()
	deadline := time.Now().Add(2 * time.Minute)
	for {
		st, err := c.Status(context.Background(), name)
		if err == nil && st.Connector.State == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("connector %s: %+v (%v), want %s", name, st.Connector, err, want)
		}
		time.Sleep(300 * time.Millisecond)
	}
}

func produce(t *testing.T, c *kafkatest.Cluster, topic string, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	if _, err := e2e.Produce(ctx, c.Settings(cluster.Plaintext, ""), topic, 2, n, 100); err != nil {
		t.Fatal(err)
	}
}

// waitCount waits until topic holds at least want records and returns how
// many it holds: MirrorMaker 2 copies at least once, so a worker killed
// between offset commits copies some records again.
func waitCount(t *testing.T, c *kafkatest.Cluster, topic string, want int64) int64 {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	n, err := e2e.WaitFor(ctx, c.Settings(cluster.Plaintext, ""), topic, want, nil)
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A Connect cluster reached through one URL, a TCP proxy to one worker (as
// a Kubernetes Service or an ingress), whose workers advertise names only
// they resolve (StatefulSet pod names): the task is RUNNING, and a worker
// killed shows as DEGRADED naming it within 30 s, from the workers' group
// on Kafka, without kmirror reaching any advertised address.
//
// The worker killed is a follower, the proxy goes to the leader: a dead
// leader's successor hands its work out as soon as its session times out
// (it has no record of the old assignment), so Connect itself shows it
// running elsewhere about when it leaves the group; a follower's work
// waits scheduled.rebalance.max.delay.ms, the time kmirror's verdict is
// for.
func TestStatusThroughOneURLWithUnresolvableWorkers(t *testing.T) {
	target, source := kafkatest.Shared(t, 0), kafkatest.Shared(t, 1)
	cc := kafkatest.NewConnect(t, target, kafkatest.ConnectName("svc"),
		kafkatest.AdvertisedHostNames("connect-0.connect.svc", "connect-1.connect.svc"))
	if _, err := net.LookupHost("connect-1.connect.svc"); err == nil {
		t.Fatal("this machine resolves connect-1.connect.svc: the test needs a name only the workers resolve")
	}
	leader, err := cc.Leader()
	if err != nil {
		t.Fatal(err)
	}
	follower := 1 - leader
	// The only address kmirror is given: the leader, through the proxy.
	service := tcpProxy(t, strings.TrimPrefix(cc.URL(leader), "http://"))
	topic := kafkatest.NewTopic(t, source, 2, nil)
	name := "kmirror-" + kafkatest.TopicName(t.Name())[:20]
	plan := func(tk task.Task, _, _ cluster.Settings, on connectplan.Cluster) ([]connectplan.Connector, error) {
		return []connectplan.Connector{{Name: name, Flow: "src->dst", Config: map[string]string{
			"connector.class":                       "org.apache.kafka.connect.mirror.MirrorSourceConnector",
			"tasks.max":                             "2",
			"source.cluster.alias":                  "src",
			"target.cluster.alias":                  "dst",
			"source.cluster.bootstrap.servers":      source.Bootstrap(cluster.Plaintext),
			"target.cluster.bootstrap.servers":      target.Bootstrap(cluster.Plaintext),
			"topics":                                topic,
			"replication.factor":                    "1",
			"offset-syncs.topic.replication.factor": "1",
			"sync.topic.acls.enabled":               "false",
		}}}, nil
	}
	e := New(Deps{
		Cluster: func(context.Context, string) (connectplan.Cluster, error) {
			return connectplan.Cluster{Name: "svc", Client: connect.Config{URLs: []string{service}}, Kafka: target.Settings(cluster.Plaintext, "")}, nil
		},
		Plan:         plan,
		Names:        func(task.Task) []string { return []string{name} },
		PollInterval: time.Second,
	})
	defer e.Close()
	tk := task.Task{Name: "behind-a-service", Engine: task.ConnectEngine("svc")}
	if err := e.Start(tk, cluster.Settings{}, cluster.Settings{}); err != nil {
		t.Fatal(err)
	}
	client, err := connect.New(connect.Config{URLs: []string{service}, Timeout: 2 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	t.Cleanup(func() { _ = client.Delete(context.Background(), name) })
	waitState(t, e, tk.Name, task.StateRunning, "", 3*time.Minute)
	produce(t, source, topic, 100)
	waitCount(t, target, "src."+topic, 100)

	// Running on both workers, as the listing says, and still RUNNING: no
	// verdict came from the advertised names.
	st, err := client.Status(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	on := map[string]bool{st.Connector.WorkerID: true}
	for _, ts := range st.Tasks {
		on[ts.WorkerID] = true
	}
	victim := cc.WorkerID(follower)
	if !on[victim] || !on[cc.WorkerID(leader)] {
		t.Fatalf("connector %s and its tasks run on %v, want both %s and %s", name, on, cc.WorkerID(leader), victim)
	}
	if s, _ := e.Status(tk.Name); s.State != task.StateRunning {
		t.Fatalf("status %s (%s), want RUNNING with every worker alive", s.State, s.Reason)
	}
	t.Logf("RUNNING on %v, reached only at %s (the leader, worker %d); killing the follower %s", on, service, leader, victim)

	if err := cc.KillWorker(follower); err != nil {
		t.Fatal(err)
	}
	killed := time.Now()
	reason := waitState(t, e, tk.Name, task.StateDegraded, "worker "+victim+" has left the Connect group", 30*time.Second)
	t.Logf("%s after the kill: DEGRADED: %s", time.Since(killed).Round(time.Millisecond), reason)
	waitState(t, e, tk.Name, task.StateRunning, "", 3*time.Minute)
	t.Logf("%s after the kill: RUNNING again (Connect moved the work to %s)", time.Since(killed).Round(time.Millisecond), cc.WorkerID(leader))
	produce(t, source, topic, 50)
	waitCount(t, target, "src."+topic, 150)
}

// tcpProxy forwards every connection to target, both ways, until the test
// ends, and returns its http:// URL on 127.0.0.1.
func tcpProxy(t *testing.T, target string) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var (
		mu    sync.Mutex
		open  []net.Conn
		conns sync.WaitGroup
	)
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		for _, c := range open {
			c.Close()
		}
		mu.Unlock()
		conns.Wait()
	})
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			conns.Go(func() {
				defer c.Close()
				up, err := net.DialTimeout("tcp", target, 5*time.Second)
				if err != nil {
					return
				}
				defer up.Close()
				mu.Lock()
				open = append(open, c, up)
				mu.Unlock()
				done := make(chan struct{})
				go func() {
					defer close(done)
					_, _ = io.Copy(up, c)
					_ = up.(*net.TCPConn).CloseWrite()
				}()
				_, _ = io.Copy(c, up)
				_ = c.(*net.TCPConn).CloseWrite()
				<-done
			})
		}
	}()
	return "http://" + l.Addr().String()
}

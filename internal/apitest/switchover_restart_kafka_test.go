package apitest

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/e2e"
	"github.com/kmirror/kmirror/internal/kafkatest"
)

// buildKmirror builds the kmirror binary for tests that run it as a
// process of its own.
func buildKmirror(t *testing.T) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "kmirror")
	out, err := exec.Command("go", "build", "-o", bin, "../../cmd/kmirror").CombinedOutput()
	if err != nil {
		t.Fatalf("build kmirror: %v\n%s", err, out)
	}
	return bin
}

// serveProcess runs `kmirror serve` on dir until it is killed, and returns
// it with an API client.
func serveProcess(t *testing.T, bin, dir string) (*exec.Cmd, *server) {
	t.Helper()
	cmd := exec.Command(bin, "serve", "--listen", "127.0.0.1:0", "--data-dir", dir)
	cmd.Env = append(os.Environ(), "KMIRROR_ADMIN_PASSWORD=admin-password-1", "KMIRROR_TOKEN="+processToken)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cmd.Process.Kill() })
	urls := make(chan string, 1)
	ended := make(chan struct{})
	go func() {
		defer close(ended)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			if u := regexp.MustCompile(`http://127\.0\.0\.1:\d+`).FindString(sc.Text()); u != "" {
				urls <- u
			}
		}
	}()
	select {
	case u := <-urls:
		return cmd, &server{t: t, url: u, dir: dir, tok: processToken}
	case <-ended:
		t.Fatal("kmirror serve ended before it printed its URL")
	case <-time.After(time.Minute):
		t.Fatal("kmirror serve printed no URL within a minute")
	}
	return nil, nil
}

// processToken is the API token of kmirror processes the tests start.
const processToken = "apitest-process-token-0123456789abcdef"

// partitionEnds are topic's partitions' end offsets.
func partitionEnds(t *testing.T, s cluster.Settings, topic string) map[int32]int64 {
	t.Helper()
	cfg, err := s.Config("test-ends")
	if err != nil {
		t.Fatal(err)
	}
	client, err := sarama.NewClient(s.BootstrapServers, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	parts, err := client.Partitions(topic)
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	for _, p := range parts {
		if out[p], err = client.GetOffset(topic, p, sarama.OffsetNewest); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// killed SIGKILLs a kmirror process and waits for it.
func killed(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	_ = cmd.Wait()
}

// waitStep polls the task's switchover until step is in state.
func waitStep(t *testing.T, s *server, name, step, state string, limit time.Duration) map[string]any {
	t.Helper()
	deadline := time.Now().Add(limit)
	for {
		_, body := s.call(http.MethodGet, "/api/v1/tasks/"+name+"/switchover", nil)
		if steps, ok := body["steps"].([]any); ok {
			for _, st := range steps {
				st := st.(map[string]any)
				if st["name"] == step && st["state"] == state {
					return body
				}
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("switchover of %s: step %s never %s: %v", name, step, state, body)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// kmirror killed -9 while a switchover waits at preflight (a group still
// has a member on the source), again while it waits for producers to
// stop, and once it is done: each time the kmirror started again on the
// same data directory goes on from the stored step, and at the end every
// group reads every record once over both sides.
func TestSwitchoverResumesAfterKmirrorIsKilled(t *testing.T) {
	t.Parallel() // its own server, tasks, topics and groups
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	east, west := kafkatest.Shared(t, 0), kafkatest.Shared(t, 1)
	src, dst := east.Settings(cluster.Plaintext, ""), west.Settings(cluster.Plaintext, "")
	bin, dir := buildKmirror(t), t.TempDir()
	proc, s := serveProcess(t, bin, dir)
	s.register("east", src)
	s.register("west", dst)
	topic := kafkatest.NewTopic(t, east, 3, nil)
	const first = 600
	if _, err := e2e.Produce(ctx, src, topic, 3, first, 100); err != nil {
		t.Fatal(err)
	}
	g1, g2 := topic+"-one", topic+"-two"
	read := map[string][]string{}
	for g, n := range map[string]int{g1: 200, g2: 450} {
		keys, err := e2e.ConsumeGroup(ctx, src, g, topic, n)
		if err != nil {
			t.Fatal(err)
		}
		read[g] = keys
	}
	name := "restart-" + strings.ToLower(topic[len(topic)-6:])
	if code, body := s.call(http.MethodPost, "/api/v1/tasks", drillTask(name, topic, "at_least_once")); code != http.StatusCreated {
		t.Fatalf("create: %d %v", code, body)
	}

	// Killed while preflight waits for g2's consumer on the source.
	stopMember := holdGroup(t, src, g2, topic)
	if code, body := s.call(http.MethodPost, "/api/v1/tasks/"+name+"/switchover", map[string]any{"groups": []string{g1, g2}}); code != http.StatusCreated {
		t.Fatalf("switchover: %d %v", code, body)
	}
	waitStep(t, s, name, "preflight", "waiting", time.Minute)
	killed(t, proc)
	proc, s = serveProcess(t, bin, dir)
	body := waitStep(t, s, name, "preflight", "waiting", time.Minute)
	t.Logf("after the first kill: %v", body["steps"].([]any)[0])

	// Killed while producers_stopped waits for a producer.
	producing, stopProducing := context.WithCancel(ctx)
	produced := make(chan int, 1)
	go func() {
		n := 0
		for producing.Err() == nil {
			if _, err := e2e.Produce(ctx, src, topic, 3, 30, 100); err != nil {
				t.Error(err)
				break
			}
			n += 30
			time.Sleep(300 * time.Millisecond)
		}
		produced <- n
	}()
	stopMember()
	waitStep(t, s, name, "producers_stopped", "waiting", time.Minute)
	killed(t, proc)
	proc, s = serveProcess(t, bin, dir)
	waitStep(t, s, name, "preflight", "done", time.Minute)
	stopProducing()
	total := first + <-produced
	body = waitStep(t, s, name, "switched", "done", 2*time.Minute)
	again := checkReport(t, name, body, map[string]int{g1: 0, g2: 0}, false)

	// Killed once done: the switchover stays done, nothing done again.
	killed(t, proc)
	_, s = serveProcess(t, bin, dir)
	if _, again := s.call(http.MethodGet, "/api/v1/tasks/"+name+"/switchover", nil); again["state"] != "done" || fmt.Sprint(again["id"]) != fmt.Sprint(body["id"]) {
		t.Fatalf("after a kill once done: %v", again)
	}
	// What each group reads on the target: from where the switchover put
	// it, or the first offset, to the end (the kills made the copy write
	// records twice: more than the source's count).
	ends := partitionEnds(t, dst, topic)
	toRead := map[string]int{}
	for _, g := range body["report"].(map[string]any)["groups"].([]any) {
		g := g.(map[string]any)
		for _, p := range g["partitions"].([]any) {
			p := p.(map[string]any)
			toRead[g["group"].(string)] += int(ends[int32(p["partition"].(float64))] - max(0, int64(p["target_offset"].(float64))))
		}
	}
	for g, keys := range read {
		if again[g] < 0 {
			t.Errorf("group %s: the report bounds nothing it may read again: %v", g, body["report"])
		}
		more, err := e2e.ConsumeGroup(ctx, dst, g, topic, toRead[g])
		if err != nil {
			t.Fatalf("group %s on the target: %v", g, err)
		}
		// The kills made the copy write records twice (at least once):
		// a group read from the first offset meets them, as said.
		readAtMostAgain(t, "group "+g+" over both sides", append(keys, more...), total, again[g])
	}
}

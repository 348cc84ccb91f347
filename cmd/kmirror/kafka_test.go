package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/kafkatest"
)

// childEnv makes the test binary run kmirror's main instead of the tests,
// so a test can run `kmirror ...` as a real process and signal it.
const childEnv = "KMIRROR_TEST_RUN_MAIN"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "1" {
		main()
		os.Exit(0)
	}
	code := m.Run()
	stopKafka()
	os.Exit(code)
}

// kafka holds the real clusters of this package's real-Kafka tests,
// started on first use so the other tests do not wait for JVMs.
var kafka struct {
	once     sync.Once
	clusters [2]*kafkatest.Cluster
	err      error
}

// realKafka returns two real Kafka clusters shared by the package's tests.
func realKafka(t *testing.T) (*kafkatest.Cluster, *kafkatest.Cluster) {
	t.Helper()
	if testing.Short() {
		t.Skip("real Kafka: the full run's (-short is the race pass)")
	}
	kafka.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		var wg sync.WaitGroup
		var errs [2]error
		for i := range kafka.clusters {
			wg.Go(func() {
				kafka.clusters[i], errs[i] = kafkatest.Start(ctx, kafkatest.Name(fmt.Sprintf("kafka%d", i+1)))
			})
		}
		wg.Wait()
		kafka.err = errors.Join(errs[:]...)
	})
	if kafka.err != nil {
		t.Fatalf("start real Kafka: %v", kafka.err)
	}
	return kafka.clusters[0], kafka.clusters[1]
}

func stopKafka() {
	for _, c := range kafka.clusters {
		if c != nil {
			if err := c.Stop(); err != nil {
				fmt.Fprintln(os.Stderr, "kafkatest:", err)
			}
			_ = c.Remove()
		}
	}
}

// kmirrorProcess is kmirror running as a child process.
type kmirrorProcess struct {
	cmd            *exec.Cmd
	stdout, stderr *syncBuffer
	done           chan error
}

// startKmirror runs `kmirror args...` as a child process that dies with
// the test.
func startKmirror(t *testing.T, args ...string) *kmirrorProcess {
	t.Helper()
	p := &kmirrorProcess{stdout: &syncBuffer{}, stderr: &syncBuffer{}, done: make(chan error, 1)}
	p.cmd = exec.Command(os.Args[0], args...)
	p.cmd.Env = append(os.Environ(), childEnv+"=1")
	p.cmd.Stdout, p.cmd.Stderr = p.stdout, p.stderr
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { p.done <- p.cmd.Wait() }()
	t.Cleanup(func() {
		_ = p.cmd.Process.Kill()
		<-p.done //nolint:errcheck // killed: Wait reports the signal, nothing to check
	})
	return p
}

// terminate sends SIGTERM and waits up to limit for the process to exit,
// returning how long it took and its exit error.
func (p *kmirrorProcess) terminate(t *testing.T, limit time.Duration) (time.Duration, error) {
	t.Helper()
	began := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.done:
		p.done <- err // for the cleanup
		return time.Since(began), err
	case <-time.After(limit):
		t.Fatalf("kmirror did not stop within %s of SIGTERM\nstdout:\n%s\nstderr:\n%s", limit, p.stdout.String(), p.stderr.String())
		return 0, nil
	}
}

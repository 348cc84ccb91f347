package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/connect"
	"github.com/kmirror/kmirror/internal/connect/connectengine"
	"github.com/kmirror/kmirror/internal/connect/connectplan"
	"github.com/kmirror/kmirror/internal/kafkatest"
	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/internal/task"
)

// The mm2-connect row's Connect cluster: two workers (a distributed
// cluster, the reason to pick the Connect engine), each with half of the
// 2 GiB heap the dedicated MM2 row gets.
const (
	connectWorkers = 2
	connectHeapMB  = 1024
	connectName    = "bench"
)

// connectRow is the Kafka Connect cluster of the mm2-connect row and
// kmirror's Connect engine deploying to it, as the product does
// (service.ConnectTarget, connectengine.New).
type connectRow struct {
	cc  *kafkatest.ConnectCluster
	eng *connectengine.Engine
}

// startConnect starts the workers on the target cluster (they write to it,
// so kmirror deploys the flow without producer overrides) and an engine
// for them. Per scenario: the row's peak RSS is the fresh workers'.
func (h *harness) startConnect(ctx context.Context, sc scenario) (*connectRow, error) {
	began := time.Now()
	opts := []kafkatest.ConnectOpt{kafkatest.ConnectName(connectName + "-" + sc.id()),
		kafkatest.Workers(connectWorkers), kafkatest.WorkerHeapMB(connectHeapMB),
		kafkatest.ConnectDir(filepath.Join(h.work, "connect-"+sc.id()))}
	if !h.cfg.quick {
		opts = append(opts, kafkatest.ConnectFullSpeed())
	}
	cc, err := kafkatest.StartConnect(ctx, h.dst, opts...)
	if err != nil {
		return nil, err
	}
	target, err := service.ConnectTarget(ctx, service.ConnectClusterSettings{Name: connectName, URLs: cc.URLs(), KafkaCluster: "target"})
	if err != nil {
		_ = cc.Close()
		return nil, err
	}
	logf, err := os.Create(filepath.Join(h.work, "connect-engine-"+sc.id()+".log"))
	if err != nil {
		_ = cc.Close()
		return nil, err
	}
	log := slog.New(slog.NewTextHandler(logf, nil))
	eng := connectengine.New(connectengine.Deps{Cluster: func(context.Context, string) (connectplan.Cluster, error) { return target, nil }, Logger: log})
	h.logf("  Kafka Connect cluster up: %d workers at %v (took %s)", connectWorkers, cc.URLs(), time.Since(began).Round(time.Second))
	return &connectRow{cc: cc, eng: eng}, nil
}

func (r *connectRow) close() {
	r.eng.Close()
	_ = r.cc.Close()
}

// startConnectTask deploys the typical task, less the source header that
// the Connect engine refuses, through kmirror's Connect engine.
func startConnectTask(h *harness, sc scenario, topics []string, phase string) (copyRun, error) {
	if h.connect == nil {
		return nil, errors.New("no Kafka Connect cluster for the mm2-connect row")
	}
	name := "bench-connect-" + sc.id() + "-" + phase
	t := task.Task{
		Name: name, Type: task.TypeKafkaReplication, Engine: task.ConnectEngine(connectName),
		Current: task.Current{Cluster: "source", Alias: aliasConnect},
		Peer:    task.Peer{Alias: aliasTarget + "-" + name, ConfigType: task.PeerByCluster, Cluster: "target"},
		Rules: task.Rules{Direction: task.DirectionPush, Topics: topics, Tasks: workers,
			StartOffset: task.StartEarliest, Compression: "none", ReplicationFactor: int(h.rf()),
			RenameTopics: true, SyncConsumerOffsets: true},
	}
	current := cluster.Settings{Name: "source", BootstrapServers: []string{h.srcBoot}, SecurityProtocol: cluster.Plaintext}
	peer := cluster.Settings{Name: "target", BootstrapServers: []string{h.dstBoot}, SecurityProtocol: cluster.Plaintext}
	if err := h.connect.eng.Start(t, current, peer); err != nil {
		return nil, err
	}
	return &connectRun{h: h, row: h.connect, t: t}, nil
}

// connectRun is a task running on the Connect workers: its CPU and RSS are
// the workers' (summed), its failure a FAILED state or a worker gone.
type connectRun struct {
	h            *harness
	row          *connectRow
	t            task.Task
	stopped      bool
	failingSince time.Time // when the engine first showed FAILED, in a row
}

// failedFor is how long the engine must show the task FAILED before the
// row fails. Right after deploying, a worker that has not read the new
// connector configs yet answers GET /connectors without one of them, and
// the engine shows FAILED ("not on Kafka Connect cluster ... deleted
// outside kmirror?") until the next poll: seen under load on 2 workers.
const failedFor = 20 * time.Second

func (r *connectRun) pids() []int {
	var out []int
	for i := range r.row.cc.Workers() {
		out = append(out, r.row.cc.WorkerPID(i))
	}
	return out
}

func (r *connectRun) done() bool {
	if slices.Contains(r.pids(), 0) {
		return true
	}
	st, ok := r.row.eng.Status(r.t.Name)
	if !ok || st.State != task.StateFailed {
		r.failingSince = time.Time{}
		return false
	}
	if r.failingSince.IsZero() {
		r.failingSince = time.Now()
		r.h.logf("    %s shows FAILED (%s); the row fails if it still does in %s", r.t.Name, st.Reason, failedFor)
	}
	return time.Since(r.failingSince) >= failedFor
}

func (r *connectRun) failure() error {
	st, _ := r.row.eng.Status(r.t.Name)
	return fmt.Errorf("task %s on Kafka Connect is %s (%s); worker logs:\n%s", r.t.Name, st.State, st.Reason, r.row.cc.LogTails(15))
}

func (r *connectRun) cpu() (float64, error) {
	var sum float64
	for _, pid := range r.pids() {
		v, err := cpuSeconds(pid)
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, nil
}

func (r *connectRun) rss() (int64, error) {
	var sum int64
	for _, pid := range r.pids() {
		v, err := peakRSS(pid)
		if err != nil {
			return 0, err
		}
		sum += v
	}
	return sum, nil
}

// stop deletes the task's connectors, as deleting the task in kmirror
// does, and waits until Connect no longer lists them.
func (r *connectRun) stop(grace time.Duration) {
	if r.stopped {
		return
	}
	r.stopped = true
	if err := r.row.eng.Remove(r.t); err != nil {
		r.h.logf("    connectors of %s not deleted: %v", r.t.Name, err)
		return
	}
	client, err := connect.New(connect.Config{URLs: r.row.cc.URLs()})
	if err != nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	for ctx.Err() == nil {
		views, err := client.Connectors(ctx)
		if err == nil && !slices.ContainsFunc(connectplan.Names(r.t), func(n string) bool { _, ok := views[n]; return ok }) {
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

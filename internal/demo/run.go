package demo

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/kmirror/kmirror/internal/cluster"
	"github.com/kmirror/kmirror/internal/e2e"
	"github.com/kmirror/kmirror/internal/embedded"
	"github.com/kmirror/kmirror/internal/embeddedengine"
	"github.com/kmirror/kmirror/internal/replicator"
	"github.com/kmirror/kmirror/internal/task"
)

// RunOptions shape `kmirror demo`.
type RunOptions struct {
	Records    int // records produced, default 100000
	Size       int // value bytes per record, default 512
	Partitions int // default 6
	Topic      string
	// Timeout bounds the wait for the copy, default 2 minutes.
	Timeout time.Duration
	Log     *slog.Logger
	// Tamper, when set, runs after replication and before verification.
	// Tests use it to break the copy and prove the demo notices.
	Tamper func(ctx context.Context, target cluster.Settings, topic string) error
}

func (o RunOptions) withDefaults() RunOptions {
	if o.Records <= 0 {
		o.Records = 100000
	}
	if o.Size <= 0 {
		o.Size = 512
	}
	if o.Partitions <= 0 {
		o.Partitions = 6
	}
	if o.Topic == "" {
		o.Topic = "orders"
	}
	if o.Timeout <= 0 {
		o.Timeout = 2 * time.Minute
	}
	if o.Log == nil {
		o.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return o
}

// Task is the task the demo runs: the original product's defaults plus rename and
// source header, pushing from the "east" instance (alias A) to "west" (B).
func Task(topic string) task.Task {
	return task.Task{
		Name: "demo-" + topic, Type: task.TypeKafkaReplication,
		Current: task.Current{Cluster: "east", Alias: "A"},
		Peer:    task.Peer{Alias: "B", ConfigType: task.PeerByCluster, Cluster: "west"},
		Rules: task.Rules{Direction: task.DirectionPush, Topics: []string{topic}, Tasks: task.DefaultTasks,
			RenameTopics: true, AddSourceHeader: true, ReplicationFactor: 1,
			StartOffset: task.StartEarliest, Compression: "lz4"},
	}
}

// Run is `kmirror demo`: two embedded clusters, records produced on the first,
// replicated to the second by the same engine real tasks use, then every
// record verified. The report is written to w; the error is non-nil when the
// copy is not exact.
func Run(ctx context.Context, w io.Writer, o RunOptions) (e2e.Report, error) {
	o = o.withDefaults()
	cs, err := embedded.StartAll([]string{"east", "west"})
	if err != nil {
		return e2e.Report{}, err
	}
	defer cs.Close()
	east, west := cs[0].Settings(), cs[1].Settings()
	fmt.Fprintf(w, "embedded clusters: east %v, west %v\n", east.BootstrapServers, west.BootstrapServers)

	fmt.Fprintf(w, "producing %d records of %d bytes to %s on east (%d partitions)...\n", o.Records, o.Size, o.Topic, o.Partitions)
	pr, err := e2e.Produce(ctx, east, o.Topic, o.Partitions, o.Records, o.Size)
	if err != nil {
		return e2e.Report{}, err
	}
	fmt.Fprintf(w, "produced %d records in %s (%.0f records/s)\n", pr.Records, pr.Elapsed.Round(time.Millisecond), pr.Rate())

	t := Task(o.Topic)
	eng := embeddedengine.New(replicator.Options{RefreshInterval: 5 * time.Second}, o.Log)
	defer eng.Close()
	lookup := func(name string) (cluster.Settings, bool) {
		switch name {
		case "east":
			return east, true
		case "west":
			return west, true
		}
		return cluster.Settings{}, false
	}
	current, peer, err := t.Resolve(lookup)
	if err != nil {
		return e2e.Report{}, err
	}
	target := "A." + o.Topic
	fmt.Fprintf(w, "task %s: push east (A) -> west (B), %s -> %s, rename on, source header on, %d tasks, lz4\n",
		t.Name, o.Topic, target, t.Rules.Tasks)
	began := time.Now()
	if err := eng.Start(t, current, peer); err != nil {
		return e2e.Report{}, err
	}
	wctx, cancel := context.WithTimeout(ctx, o.Timeout)
	defer cancel()
	last := time.Now()
	have, err := e2e.WaitFor(wctx, west, target, int64(o.Records), func(have int64) {
		if time.Since(last) >= time.Second {
			last = time.Now()
			fmt.Fprintf(w, "  replicated %d/%d\n", have, o.Records)
		}
	})
	if err != nil {
		if st, ok := eng.Status(t.Name); ok && st.Reason != "" {
			err = fmt.Errorf("%w (task %s: %s)", err, st.State, st.Reason)
		}
		return e2e.Report{}, fmt.Errorf("replication did not finish: %d of %d records on west: %w", have, o.Records, err)
	}
	took := time.Since(began)
	fmt.Fprintf(w, "replicated %d records in %s (%.0f records/s, including start-up)\n", have, took.Round(time.Millisecond), float64(have)/took.Seconds())
	eng.Stop(t.Name)

	if o.Tamper != nil {
		if err := o.Tamper(ctx, west, target); err != nil {
			return e2e.Report{}, fmt.Errorf("tamper: %w", err)
		}
	}
	fmt.Fprintln(w, "verifying every record on both sides...")
	rep, err := e2e.Verify(ctx, east, o.Topic, west, target, e2e.VerifyOptions{SourceAlias: "A"})
	if err != nil {
		return e2e.Report{}, err
	}
	if err := rep.Print(w); err != nil {
		return rep, err
	}
	if !rep.OK() {
		return rep, fmt.Errorf("the copy is not exact: %s", rep.String())
	}
	return rep, nil
}

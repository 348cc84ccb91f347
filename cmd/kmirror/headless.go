package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"time"

	"github.com/kmirror/kmirror/internal/connect/connectengine"
	"github.com/kmirror/kmirror/internal/connect/connectplan"
	"github.com/kmirror/kmirror/internal/embeddedengine"
	"github.com/kmirror/kmirror/internal/engine"
	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/internal/task"
)

// headlessCommand is `kmirror run -f spec.json`: the spec's tasks run in the
// foreground with no console and no store besides the progress kept in Kafka
// (like MM2's dedicated mode). SIGINT/SIGTERM stop it with progress saved.
func headlessCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("kmirror run", flag.ContinueOnError)
	fs.SetOutput(stderr)
	file := fs.String("f", "", "spec file: {\"clusters\": [...], \"tasks\": [...]} in the API's shapes")
	statusEvery := fs.Duration("status-interval", 10*time.Second, "how often to log each task's status (0: never)")
	var lf logFlags
	lf.add(fs, slog.LevelInfo)
	var buffer bufferMemory
	buffer.add(fs)
	if err := fs.Parse(args); err != nil {
		return err
	}
	if err := lf.check(); err != nil {
		return err
	}
	if *file == "" {
		return errors.New("run needs -f spec.json")
	}
	f, err := os.Open(*file)
	if err != nil {
		return fmt.Errorf("open spec: %w", err)
	}
	spec, err := service.ReadSpec(f)
	f.Close()
	if err != nil {
		return err
	}
	if err := service.ValidateSpec(&spec); err != nil {
		return err
	}
	log := lf.logger(stderr)
	eng := embeddedengine.New(buffer.options(), log)
	// Tasks on Kafka Connect are deployed there and watched from here;
	// stopping kmirror leaves them running on Connect.
	onConnect := connectengine.New(connectengine.Deps{Logger: log, Cluster: func(ctx context.Context, name string) (connectplan.Cluster, error) {
		cs, ok := spec.ConnectCluster(name)
		if !ok {
			return connectplan.Cluster{}, fmt.Errorf("no Kafka Connect cluster %q in the spec", name)
		}
		target, err := service.ConnectTarget(ctx, cs)
		if err != nil {
			return connectplan.Cluster{}, err
		}
		// For the status poll, which reads the workers' group there.
		target.Kafka, _ = spec.Lookup(cs.KafkaCluster)
		return target, nil
	}})
	defer onConnect.Close()
	runnerFor := func(t task.Task) (engine.Runner, error) {
		if _, ok := t.ConnectCluster(); ok {
			return onConnect, nil
		}
		return eng, nil
	}
	if err := spec.StartAll(runnerFor); err != nil {
		eng.Close()
		return err
	}
	running := engine.Union(eng, onConnect)
	fmt.Fprintf(stdout, "kmirror: running %d task(s); Ctrl-C or SIGTERM stops them with progress saved\n", len(spec.Tasks))
	var tick <-chan time.Time
	if *statusEvery > 0 {
		t := time.NewTicker(*statusEvery)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			eng.Close()
			fmt.Fprintln(stdout, "kmirror: stopped; progress committed")
			return nil
		case <-tick:
			for _, name := range running.Names() {
				if st, ok := running.Status(name); ok {
					for _, fl := range st.Flows {
						log.Info("status", "task", name, "flow", fl.Flow, "state", fl.State, "records", fl.Records,
							"lag_records", fl.LagRecords, "reason", fl.Reason)
					}
				}
			}
		}
	}
}

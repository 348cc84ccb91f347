package main

import (
	"context"
	"encoding/hex"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"path/filepath"
	"strings"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"

	"github.com/kmirror/kmirror/internal/account"
	"github.com/kmirror/kmirror/internal/demo"
	"github.com/kmirror/kmirror/internal/engine"
	"github.com/kmirror/kmirror/internal/history"
	"github.com/kmirror/kmirror/internal/metrics"
	"github.com/kmirror/kmirror/internal/replicator"
	"github.com/kmirror/kmirror/internal/secrets"
	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/internal/store"
	"github.com/kmirror/kmirror/web"
)

// APITokenFile holds the generated API token in the data directory.
const apiTokenFile = "api.token"

// serveConfig is everything `kmirror serve` is told by flags and environment.
type serveConfig struct {
	Listen        string
	DataDir       string
	Demo          bool
	Log           logFlags
	AdminPassword string // KMIRROR_ADMIN_PASSWORD; used on first start only
	APIToken      string // KMIRROR_TOKEN; generated and stored when empty
	// DemoClusters starts embedded clusters for --demo, with data flowing
	// into them, until its Close.
	DemoClusters func(ctx context.Context, log *slog.Logger) (*demo.Background, error)
}

func parseServe(args []string, getenv func(string) string, stderr io.Writer) (serveConfig, error) {
	cfg := serveConfig{DemoClusters: demoClusters}
	fs := flag.NewFlagSet("kmirror serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.Listen, "listen", "127.0.0.1:8080", "address of the console and API (host:port)")
	fs.StringVar(&cfg.DataDir, "data-dir", "./kmirror-data", "directory for the database, keys and token")
	fs.BoolVar(&cfg.Demo, "demo", false, "start embedded Kafka clusters and register them as instances")
	cfg.Log.add(fs, slog.LevelInfo)
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if err := cfg.Log.check(); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("serve takes no arguments, got %q", fs.Args())
	}
	cfg.AdminPassword = getenv("KMIRROR_ADMIN_PASSWORD")
	cfg.APIToken = strings.TrimSpace(getenv("KMIRROR_TOKEN"))
	return cfg, nil
}

func serveCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cfg, err := parseServe(args, getenv, stderr)
	if err != nil {
		return err
	}
	return serve(ctx, cfg, stdout, stderr)
}

// serve wires the parts and runs them until ctx is done.
func serve(ctx context.Context, cfg serveConfig, stdout, stderr io.Writer) error {
	log := cfg.Log.logger(stderr)

	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("create data directory: %w", err)
	}
	// Held until serve returns: a second serve or a restore on this data
	// directory is refused instead of fighting over the database.
	lock, err := store.LockDataDir(cfg.DataDir)
	if err != nil {
		return err
	}
	defer lock.Unlock() //nolint:errcheck // the process is ending; the kernel drops the lock anyway
	db, err := store.Open(ctx, cfg.DataDir)
	if err != nil {
		return err
	}
	defer db.Close()
	box, err := secrets.Load(cfg.DataDir)
	if err != nil {
		return err
	}
	// The engine runs every task of this process; closing it stops them
	// gracefully, progress committed.
	eng := engine.New(replicator.Options{}, log)
	defer eng.Close()
	svc, err := service.New(service.Deps{Clusters: db, Users: db, Secrets: box, TaskStore: db, Runner: eng, Logger: log})
	if err != nil {
		return err
	}
	generated, err := account.EnsureAdmin(ctx, db, cfg.AdminPassword)
	if err != nil {
		return err
	}
	token, tokenSource, err := apiToken(cfg)
	if err != nil {
		return err
	}
	metricsHandler := promhttp.HandlerFor(metrics.Registry(eng), promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)})
	// The task page's charts and recent errors: the engine sampled every 5s,
	// kept 15 minutes, in memory.
	hist := history.New(eng, history.DefaultEvery, history.DefaultKeep)
	srv, err := web.New(web.Deps{Service: svc, DataDir: cfg.DataDir, APIToken: token, Logger: log, Ping: db.Ping, Metrics: metricsHandler,
		History: hist})
	if err != nil {
		return err
	}
	// Task pages plug in here through srv.Console(); components through g.Go.

	if cfg.Demo {
		bg, err := startDemo(ctx, cfg, svc, log)
		if err != nil {
			return err
		}
		if bg != nil {
			// The demo task stops (committing to the demo clusters) before
			// the clusters do.
			defer func() { eng.Close(); bg.Close() }()
		}
	}
	// Tasks left running by the last start resume from committed progress.
	if err := svc.StartTasks(ctx); err != nil {
		return err
	}

	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (is another kmirror running? choose another --listen)", cfg.Listen, err)
	}
	printWelcome(stdout, "http://"+ln.Addr().String()+"/", generated, tokenSource)
	log.Info("kmirror serving", "addr", ln.Addr().String(), "data_dir", cfg.DataDir)

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return srv.Serve(gctx, ln) })
	g.Go(func() error { return hist.Run(gctx) })
	g.Go(func() error {
		<-gctx.Done()
		eng.Close()
		log.Info("replication stopped, progress committed")
		return nil
	})
	err = g.Wait()
	log.Info("kmirror stopped")
	return err
}

// apiToken returns the API token and where it came from, generating and
// storing one on first start when KMIRROR_TOKEN is not set.
func apiToken(cfg serveConfig) (token, source string, err error) {
	if cfg.APIToken != "" {
		return cfg.APIToken, "KMIRROR_TOKEN", nil
	}
	path := filepath.Join(cfg.DataDir, apiTokenFile)
	raw, err := secrets.LoadOrCreate(path, 32)
	if err != nil {
		return "", "", fmt.Errorf("load API token: %w", err)
	}
	return hex.EncodeToString(raw), path, nil
}

// demoTaskActor is who the demo task is recorded as created by.
const demoTaskActor = "demo"

// startDemo starts the demo clusters, registers them as instances and
// creates the demo task on them through the service, like a user would.
// Their addresses change on every start, so the demo task and instances of
// the same names left by an earlier run are replaced; instances that other
// tasks use are left as they are, with a warning.
func startDemo(ctx context.Context, cfg serveConfig, svc *service.Service, log *slog.Logger) (*demo.Background, error) {
	if cfg.DemoClusters == nil {
		return nil, nil
	}
	bg, err := cfg.DemoClusters(ctx, log)
	if err != nil {
		return nil, fmt.Errorf("start demo clusters: %w", err)
	}
	t := bg.Task()
	if _, err := svc.Task(ctx, t.Name); err == nil {
		if err := svc.DeleteTask(ctx, t.Name, demoTaskActor); err != nil {
			bg.Close()
			return nil, fmt.Errorf("replace demo task %s: %w", t.Name, err)
		}
	}
	for _, cs := range bg.Clusters {
		if _, err := svc.Cluster(ctx, cs.Name); err == nil {
			if err := svc.RemoveCluster(ctx, cs.Name); err != nil {
				log.Warn("demo cluster left as registered earlier", "cluster", cs.Name, "err", err)
				continue
			}
		}
		if _, err := svc.AddCluster(ctx, cs); err != nil {
			bg.Close()
			return nil, fmt.Errorf("register demo cluster %s: %w", cs.Name, err)
		}
		log.Info("demo cluster registered", "cluster", cs)
	}
	if _, err := svc.CreateTask(ctx, t, demoTaskActor); err != nil {
		bg.Close()
		return nil, fmt.Errorf("create demo task %s: %w", t.Name, err)
	}
	log.Info("demo task created", "task", t.Name)
	return bg, nil
}

func printWelcome(w io.Writer, url, generated, tokenSource string) {
	fmt.Fprintf(w, "kmirror console: %s\n", url)
	if generated != "" {
		fmt.Fprintf(w, "  sign in as %q with password %s\n", account.AdminName, generated)
		fmt.Fprintln(w, "  (generated on this first start and shown only now: keep it)")
	} else {
		fmt.Fprintf(w, "  sign in as %q with the password set on the first start (KMIRROR_ADMIN_PASSWORD, or the one printed then)\n", account.AdminName)
	}
	if tokenSource == "KMIRROR_TOKEN" {
		fmt.Fprintln(w, "  API: Authorization: Bearer $KMIRROR_TOKEN")
	} else {
		fmt.Fprintf(w, "  API: Authorization: Bearer $(cat %s)\n", tokenSource)
	}
}

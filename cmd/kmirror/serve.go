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

	"golang.org/x/sync/errgroup"

	"github.com/kmirror/kmirror/internal/account"
	"github.com/kmirror/kmirror/internal/cluster"
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
	LogLevel      slog.Level
	AdminPassword string // KMIRROR_ADMIN_PASSWORD; used on first start only
	APIToken      string // KMIRROR_TOKEN; generated and stored when empty
	// DemoClusters starts embedded clusters for --demo.
	DemoClusters func(ctx context.Context) ([]cluster.Settings, error)
}

func parseServe(args []string, getenv func(string) string, stderr io.Writer) (serveConfig, error) {
	cfg := serveConfig{DemoClusters: demoClusters}
	fs := flag.NewFlagSet("kmirror serve", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&cfg.Listen, "listen", "127.0.0.1:8080", "address of the console and API (host:port)")
	fs.StringVar(&cfg.DataDir, "data-dir", "./kmirror-data", "directory for the database, keys and token")
	fs.BoolVar(&cfg.Demo, "demo", false, "start embedded Kafka clusters and register them as instances")
	fs.TextVar(&cfg.LogLevel, "log-level", slog.LevelInfo, "log level: debug, info, warn or error")
	if err := fs.Parse(args); err != nil {
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
	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: cfg.LogLevel}))

	if err := os.MkdirAll(cfg.DataDir, 0o700); err != nil {
		return fmt.Errorf("create data directory: %w", err)
	}
	db, err := store.Open(ctx, cfg.DataDir)
	if err != nil {
		return err
	}
	defer db.Close()
	box, err := secrets.Load(cfg.DataDir)
	if err != nil {
		return err
	}
	svc, err := service.New(service.Deps{Clusters: db, Users: db, Secrets: box})
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
	srv, err := web.New(web.Deps{Service: svc, DataDir: cfg.DataDir, APIToken: token, Logger: log, Ping: db.Ping})
	if err != nil {
		return err
	}
	// Task pages, the task API and replicators plug in here: routes through
	// srv.Console() and srv.API(), components through g.Go.

	if cfg.Demo {
		if err := registerDemoClusters(ctx, cfg, svc, log); err != nil {
			return err
		}
	}

	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return fmt.Errorf("listen on %s: %w (is another kmirror running? choose another --listen)", cfg.Listen, err)
	}
	printWelcome(stdout, "http://"+ln.Addr().String()+"/", generated, tokenSource)
	log.Info("kmirror serving", "addr", ln.Addr().String(), "data_dir", cfg.DataDir)

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return srv.Serve(gctx, ln) })
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

// registerDemoClusters registers the demo hook's clusters. Their addresses
// change on every start, so an instance of the same name left by an earlier
// run is replaced when it holds no tasks.
func registerDemoClusters(ctx context.Context, cfg serveConfig, svc *service.Service, log *slog.Logger) error {
	if cfg.DemoClusters == nil {
		return nil
	}
	clusters, err := cfg.DemoClusters(ctx)
	if err != nil {
		return fmt.Errorf("start demo clusters: %w", err)
	}
	for _, cs := range clusters {
		if _, err := svc.Cluster(ctx, cs.Name); err == nil {
			if err := svc.RemoveCluster(ctx, cs.Name); err != nil {
				log.Warn("demo cluster left as registered earlier", "cluster", cs.Name, "err", err)
				continue
			}
		}
		if _, err := svc.AddCluster(ctx, cs); err != nil {
			return fmt.Errorf("register demo cluster %s: %w", cs.Name, err)
		}
		log.Info("demo cluster registered", "cluster", cs)
	}
	return nil
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

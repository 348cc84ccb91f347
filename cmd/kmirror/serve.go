package main

import (
	"context"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/prometheus/client_golang/prometheus/promhttp"
	"golang.org/x/sync/errgroup"

	"github.com/kmirror/kmirror/internal/account"
	"github.com/kmirror/kmirror/internal/demo"
	"github.com/kmirror/kmirror/internal/embeddedengine"
	"github.com/kmirror/kmirror/internal/engine"
	"github.com/kmirror/kmirror/internal/history"
	"github.com/kmirror/kmirror/internal/metrics"
	"github.com/kmirror/kmirror/internal/secrets"
	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/internal/store"
	"github.com/kmirror/kmirror/web"
)

// adminPasswordFile receives the generated first admin password (0600).
const adminPasswordFile = "admin.password"

// minTokenLength keeps bearer tokens out of guessing range.
const minTokenLength = 32

// APITokenFile holds the generated API token in the data directory.
const apiTokenFile = "api.token"

// serveConfig is everything `kmirror serve` is told by flags and environment.
type serveConfig struct {
	Listen          string
	DataDir         string
	Demo            bool
	Log             logFlags
	AdminPassword   string // KMIRROR_ADMIN_PASSWORD; used on first start only
	APIToken        string // KMIRROR_TOKEN; generated and stored when empty
	TLSCert, TLSKey string
	// AllowInsecureHTTP lets the console listen beyond loopback without TLS
	// (a TLS proxy in front, on a trusted network).
	AllowInsecureHTTP bool
	PublicURL         string
	TrustedProxies    string // comma-separated CIDRs
	TrustedOrigins    string // comma-separated origins
	MetricsTokenFile  string
	BufferMemory      bufferMemory
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
	cfg.BufferMemory.add(fs)
	fs.StringVar(&cfg.TLSCert, "tls-cert", "", "PEM certificate (chain) file: serve HTTPS (TLS 1.2 or newer) with --tls-key")
	fs.StringVar(&cfg.TLSKey, "tls-key", "", "PEM private key file of --tls-cert")
	fs.BoolVar(&cfg.AllowInsecureHTTP, "allow-insecure-http", false,
		"allow plain HTTP on an address beyond loopback (only behind a TLS proxy on a trusted network)")
	fs.StringVar(&cfg.PublicURL, "public-url", "", "address users reach the console at, e.g. https://kmirror.example.com (a proxy's); https makes cookies secure")
	fs.StringVar(&cfg.TrustedProxies, "trusted-proxies", "", "comma-separated networks (CIDR) whose X-Forwarded-For is believed")
	fs.StringVar(&cfg.TrustedOrigins, "trusted-origins", "", "comma-separated origins (https://host[:port]) besides the console's own allowed to post its forms")
	fs.StringVar(&cfg.MetricsTokenFile, "metrics-token-file", "", "file holding a token (32+ characters) that /metrics then requires as Authorization: Bearer")
	if err := fs.Parse(args); err != nil {
		return cfg, err
	}
	if err := cfg.Log.check(); err != nil {
		return cfg, err
	}
	if fs.NArg() > 0 {
		return cfg, fmt.Errorf("serve takes no arguments, got %q", fs.Args())
	}
	if (cfg.TLSCert == "") != (cfg.TLSKey == "") {
		return cfg, errors.New("give both --tls-cert and --tls-key, or neither")
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

	// First, so a refused configuration leaves nothing behind (no account,
	// no generated password).
	access, err := accessDeps(cfg, stderr)
	if err != nil {
		return err
	}
	// Held until serve returns: a second serve or a restore on this data
	// directory is refused instead of fighting over the database. Taking it
	// creates the data directory and makes it private.
	lock, err := store.LockDataDir(cfg.DataDir)
	if err != nil {
		return err
	}
	defer lock.Unlock() //nolint:errcheck // the process is ending; the kernel drops the lock anyway
	if dir := lock.Dir(); dir != cfg.DataDir {
		log.Info("data kept in a private directory inside --data-dir, which is not kmirror's own", "data_dir", dir, "given", cfg.DataDir)
		// From here on every file (database, keys, token, password) is in it.
		cfg.DataDir = dir
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
	// The engine runs every task of this process; closing it stops them
	// gracefully, progress committed.
	eng := embeddedengine.New(cfg.BufferMemory.options(), log)
	defer eng.Close()
	// Tasks on Kafka Connect: closing that engine only ends its polls; the
	// connectors run on.
	svc, onConnect, err := service.NewWithConnect(service.Deps{Clusters: db, Users: db, Secrets: box, TaskStore: db, Runner: eng,
		Logger: log, Tokens: db, Audit: db, ConnectClusters: db, Policies: db, Switchovers: db})
	if err != nil {
		return err
	}
	defer onConnect.Close()
	users, err := db.CountUsers(ctx)
	if err != nil {
		return err
	}
	if users > 0 && cfg.AdminPassword != "" {
		log.Warn("KMIRROR_ADMIN_PASSWORD is ignored: accounts exist already; reset a password with `kmirror admin set-password NAME`")
	}
	generated, err := account.EnsureAdmin(ctx, db, cfg.AdminPassword)
	if err != nil {
		return err
	}
	passwordFile, fresh := filepath.Join(cfg.DataDir, adminPasswordFile), generated != ""
	if !fresh {
		if _, err := os.Stat(passwordFile); err != nil {
			passwordFile = "" // changed and deleted, or never generated
		}
	}
	if fresh {
		// Into a file only its owner reads, not the terminal: stdout ends
		// up in scroll-back, CI logs and container log collectors.
		if err := writePrivateFile(passwordFile, generated+"\n"); err != nil {
			return fmt.Errorf("write the generated admin password to %s: %w", passwordFile, err)
		}
	}
	token, tokenSource, err := apiToken(cfg)
	if err != nil {
		return err
	}
	// Metrics and charts cover the tasks of both engines.
	running := engine.Union(eng, onConnect)
	certs := metrics.NewCertCollector(func(ctx context.Context) ([]metrics.CertExpiry, error) {
		list, err := svc.ClientCertExpiries(ctx)
		out := make([]metrics.CertExpiry, len(list))
		for i, c := range list {
			out[i] = metrics.CertExpiry{Cluster: c.Cluster, Task: c.Task, NotAfter: c.NotAfter}
		}
		return out, err
	}, log)
	metricsHandler := promhttp.HandlerFor(metrics.Registry(running, certs), promhttp.HandlerOpts{ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn)})
	// The task page's charts and recent errors: the engine sampled every 5s,
	// kept 15 minutes, in memory.
	hist := history.New(running, history.DefaultEvery, history.DefaultKeep)
	access.Service, access.DataDir, access.APIToken, access.Logger, access.Ping, access.Metrics, access.History =
		svc, cfg.DataDir, token, log, db.Ping, metricsHandler, hist
	srv, err := web.New(access)
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
	scheme := "http"
	if access.TLS != nil {
		scheme = "https"
	}
	printWelcome(stdout, scheme+"://"+ln.Addr().String()+"/", passwordFile, fresh, tokenSource)
	log.Info("kmirror serving", "addr", ln.Addr().String(), "data_dir", cfg.DataDir)

	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return srv.Serve(gctx, ln) })
	g.Go(func() error { return hist.Run(gctx) })
	// Open switchovers go on from their stored step.
	g.Go(func() error { return svc.RunSwitchovers(gctx) })
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

// accessDeps reads the HTTPS, proxy and origin settings. It refuses plain
// HTTP beyond loopback unless --allow-insecure-http says a TLS proxy is in
// front, and then says why that matters.
func accessDeps(cfg serveConfig, stderr io.Writer) (web.Deps, error) {
	var d web.Deps
	if cfg.TLSCert != "" {
		pair, err := tls.LoadX509KeyPair(cfg.TLSCert, cfg.TLSKey)
		if err != nil {
			return d, fmt.Errorf("load --tls-cert %s and --tls-key %s: %w (both PEM, the key matching the certificate)", cfg.TLSCert, cfg.TLSKey, err)
		}
		d.TLS = &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{pair}}
	}
	if cfg.PublicURL != "" {
		u, err := web.ParsePublicURL(cfg.PublicURL)
		if err != nil {
			return d, fmt.Errorf("--public-url: %w", err)
		}
		d.PublicURL = u
	}
	nets, err := web.ParseCIDRs(cfg.TrustedProxies)
	if err != nil {
		return d, fmt.Errorf("--trusted-proxies: %w", err)
	}
	d.TrustedProxies = nets
	for _, o := range strings.Split(cfg.TrustedOrigins, ",") {
		if o = strings.TrimSpace(o); o != "" {
			if err := http.NewCrossOriginProtection().AddTrustedOrigin(o); err != nil {
				return d, fmt.Errorf("--trusted-origins %q: %w (give each as https://host[:port])", o, err)
			}
			d.TrustedOrigins = append(d.TrustedOrigins, o)
		}
	}
	if cfg.MetricsTokenFile != "" {
		raw, err := os.ReadFile(cfg.MetricsTokenFile)
		if err != nil {
			return d, fmt.Errorf("--metrics-token-file: %w", err)
		}
		d.MetricsToken = strings.TrimSpace(string(raw))
		if len(d.MetricsToken) < minTokenLength {
			return d, fmt.Errorf("--metrics-token-file %s: the token must have at least %d characters", cfg.MetricsTokenFile, minTokenLength)
		}
	}
	if d.TLS == nil && !loopbackListen(cfg.Listen) {
		if !cfg.AllowInsecureHTTP {
			return d, fmt.Errorf("--listen %s reaches beyond this machine over plain HTTP, where passwords, session cookies and API tokens "+
				"travel readable: give --tls-cert and --tls-key, or, with a TLS proxy in front on a trusted network, --allow-insecure-http", cfg.Listen)
		}
		fmt.Fprintf(stderr, "kmirror: warning: serving plain HTTP on %s (--allow-insecure-http): passwords, session cookies and API tokens "+
			"are readable by anyone on the path to this port; only a TLS proxy on a trusted network should reach it\n", cfg.Listen)
	}
	return d, nil
}

// writePrivateFile writes content to a new file only its owner can read; a
// file left at path (with whatever mode it had) is replaced, not reused.
func writePrivateFile(path, content string) error {
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return err
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	if _, err := f.WriteString(content); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// loopbackListen reports whether a listen address stays on this machine.
func loopbackListen(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// apiToken returns the API token and where it came from, generating and
// storing one on first start when KMIRROR_TOKEN is not set.
func apiToken(cfg serveConfig) (token, source string, err error) {
	if cfg.APIToken != "" {
		if len(cfg.APIToken) < minTokenLength {
			return "", "", fmt.Errorf("KMIRROR_TOKEN has %d characters, fewer than %d: choose a longer one (e.g. openssl rand -hex 32) or unset it to get a generated one",
				len(cfg.APIToken), minTokenLength)
		}
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
var demoTaskActor = service.Actor{Name: "demo", Role: service.RoleAdmin}

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
		if err := svc.DeleteTask(service.WithActor(ctx, demoTaskActor), t.Name); err != nil {
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
	if _, err := svc.CreateTask(service.WithActor(ctx, demoTaskActor), t); err != nil {
		bg.Close()
		return nil, fmt.Errorf("create demo task %s: %w", t.Name, err)
	}
	log.Info("demo task created", "task", t.Name)
	return bg, nil
}

func printWelcome(w io.Writer, url, passwordFile string, fresh bool, tokenSource string) {
	// One write: a reader of the output (a log collector, a test waiting
	// for the URL) never sees the URL without how to sign in.
	var b strings.Builder
	fmt.Fprintf(&b, "kmirror console: %s\n", url)
	switch {
	case passwordFile != "" && fresh:
		fmt.Fprintf(&b, "  sign in as %q with the password in %s\n", account.AdminName, passwordFile)
		fmt.Fprintln(&b, "  (generated on this first start, readable only by you: change it in the console, then delete the file)")
	case passwordFile != "":
		fmt.Fprintf(&b, "  sign in as %q with the password generated on the first start into %s (unless changed since)\n", account.AdminName, passwordFile)
	default:
		fmt.Fprintf(&b, "  sign in as %q with your password (KMIRROR_ADMIN_PASSWORD on the first start, or as changed since;\n", account.AdminName)
		fmt.Fprintln(&b, "  `kmirror admin set-password admin` on this machine resets it)")
	}
	if tokenSource == "KMIRROR_TOKEN" {
		fmt.Fprintln(&b, "  API: Authorization: Bearer $KMIRROR_TOKEN")
	} else {
		fmt.Fprintf(&b, "  API: Authorization: Bearer $(cat %s)\n", tokenSource)
	}
	_, _ = io.WriteString(w, b.String())
}

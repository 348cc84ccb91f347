// Command kmirror replicates data between Apache Kafka clusters and serves
// the console and JSON API that manage it.
//
//	kmirror serve [--listen 127.0.0.1:8080] [--data-dir ./kmirror-data] [--demo]
//	kmirror demo                 (self-contained run on embedded clusters)
//	kmirror run -f spec.json     (headless, like MirrorMaker 2's dedicated mode)
//	kmirror healthcheck          (exit 0 when /healthz answers; for containers)
//	kmirror instance add|list|remove             (admin over the JSON API)
//	kmirror task create|list|show|delete|pause|resume|restart|check|validate|move
//	kmirror backup FILE | restore FILE   (the database of --data-dir)
//	kmirror user list|add|remove, kmirror token list|create|revoke   (over the JSON API)
//	kmirror admin set-password NAME   (on the server, password from stdin)
//	kmirror audit prune --before DATE (on the server)
//
// This file only dispatches; each subcommand lives in its own file.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/kmirror/kmirror/internal/embeddedengine"
)

const usage = `kmirror replicates data between Apache Kafka clusters.

Usage:
  kmirror serve [flags]      console + JSON API + replicators
  kmirror demo               self-contained run on embedded clusters
  kmirror run -f spec.json   headless replication from a spec file
  kmirror failover --task T --group G
                             move consumer group G to the target now (translated offsets committed)
  kmirror healthcheck [--url U]
                             exit 0 when the server's /healthz answers (for container health checks)
  kmirror instance ...       add, list, remove Kafka instances; smart-connect NAME (JSON API of a running serve)
  kmirror connect-cluster ...
                             add, list, show, remove Kafka Connect clusters tasks can run on
  kmirror task ...           create, list, show, delete, pause, resume, restart, check, validate, move tasks
  kmirror backup FILE        copy the database to FILE (safe while serve runs)
  kmirror restore FILE       replace the database with FILE (serve must be stopped)
  kmirror user ...           list, add, remove console users (JSON API; admin token)
  kmirror token ...          list, create, revoke API tokens (JSON API; admin token)
  kmirror admin set-password NAME
                             reset a console user's password (from standard input) on the server
  kmirror audit prune --before DATE
                             remove audit entries older than DATE on the server (recorded)

Run 'kmirror <command> -h' for a command's flags.
`

func main() {
	embeddedengine.TuneGC()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr)
	stop() // not deferred: os.Exit below would skip it
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "kmirror:", err)
		os.Exit(1)
	}
}

// run dispatches to a subcommand. getenv, stdout and stderr are parameters so
// tests can run commands without touching the process.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return errors.New("no command given")
	}
	cmd, rest := args[0], args[1:]
	switch cmd {
	case "serve":
		return serveCommand(ctx, rest, getenv, stdout, stderr)
	case "demo":
		// The demo command (embedded clusters + load + verification) plugs
		// in here: see demo.go.
		return demoCommand(ctx, rest, getenv, stdout, stderr)
	case "run":
		// Headless mode (kmirror run -f spec.json) plugs in here: see
		// headless.go.
		return headlessCommand(ctx, rest, getenv, stdout, stderr)
	case "instance":
		return instanceCommand(ctx, rest, getenv, stdout, stderr)
	case "task":
		return taskCommand(ctx, rest, getenv, stdout, stderr)
	case "connect-cluster":
		return connectClusterCommand(ctx, rest, getenv, stdout, stderr)
	case "failover":
		return failoverCommand(ctx, rest, getenv, stdout, stderr)
	case "backup":
		return backupCommand(ctx, rest, stdout, stderr)
	case "restore":
		return restoreCommand(ctx, rest, stdout, stderr)
	case "healthcheck":
		return healthcheckCommand(ctx, rest, getenv, stdout, stderr)
	case "admin":
		return accountAdminCommand(ctx, rest, stdout, stderr)
	case "audit":
		return auditCommand(ctx, rest, stdout, stderr)
	case "user":
		return userCommand(ctx, rest, getenv, stdout, stderr)
	case "token":
		return tokenCommand(ctx, rest, getenv, stdout, stderr)
	case "help", "-h", "--help":
		fmt.Fprint(stdout, usage)
		return nil
	default:
		fmt.Fprint(stderr, usage)
		return fmt.Errorf("unknown command %q", cmd)
	}
}

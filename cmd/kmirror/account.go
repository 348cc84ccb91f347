package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"strings"
	"time"

	"github.com/kmirror/kmirror/internal/secrets"
	"github.com/kmirror/kmirror/internal/service"
	"github.com/kmirror/kmirror/internal/store"
)

const accountAdminUsage = `Usage:
  kmirror admin set-password NAME [--data-dir DIR]   reset a console user's password, read from standard input
                                                     (every session of the user ends; run it on the server)
`

// stdin is where set-password reads the password; tests replace it.
var stdin io.Reader = os.Stdin

// accountAdminCommand runs account maintenance on the data directory
// itself, for when nobody can sign in any more.
func accountAdminCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "set-password" {
		fmt.Fprint(stderr, accountAdminUsage)
		return errors.New("kmirror admin: give set-password NAME")
	}
	fs := flag.NewFlagSet("kmirror admin set-password", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data-dir", "./kmirror-data", "data directory of the kmirror whose user it is")
	var pos []string
	rest := args[1:]
	for {
		if err := fs.Parse(rest); err != nil {
			return err
		}
		if fs.NArg() == 0 {
			break
		}
		pos, rest = append(pos, fs.Arg(0)), fs.Args()[1:]
	}
	if len(pos) != 1 {
		return errors.New("kmirror admin set-password: give exactly one user name")
	}
	line, err := bufio.NewReader(io.LimitReader(stdin, 4096)).ReadString('\n')
	if err != nil && !errors.Is(err, io.EOF) {
		return fmt.Errorf("read the password from standard input: %w", err)
	}
	password := strings.TrimRight(line, "\r\n")
	if password == "" {
		return errors.New("no password on standard input: pipe it in, e.g. `printf '%s\\n' \"$PW\" | kmirror admin set-password NAME`")
	}
	svc, closeDB, err := localService(ctx, *dataDir, stderr)
	if err != nil {
		return err
	}
	defer closeDB()
	// The caller is whoever can write the data directory: kmirror itself
	// in the audit log.
	if err := svc.SetPassword(ctx, pos[0], password); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "password of %q changed; every session of it has ended\n", pos[0])
	return nil
}

// localService is the service over the data directory itself (the files
// serve uses), for the commands run on the server.
func localService(ctx context.Context, dataDir string, stderr io.Writer) (*service.Service, func(), error) {
	dir, err := store.PrepareDataDir(dataDir)
	if err != nil {
		return nil, nil, err
	}
	db, err := store.Open(ctx, dir)
	if err != nil {
		return nil, nil, err
	}
	box, err := secrets.Load(dir)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	svc, err := service.New(service.Deps{Clusters: db, Users: db, Secrets: box, Tokens: db, Audit: db,
		Logger: slog.New(slog.NewTextHandler(stderr, nil))})
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	return svc, func() { db.Close() }, nil
}

const auditUsage = `Usage:
  kmirror audit prune --before DATE [--data-dir DIR]
      remove the audit entries made before DATE (2026-01-31, or RFC 3339),
      at least a day ago; the prune itself is recorded with its count.
      Run it on the server (it opens the data directory; serve may run).
`

// auditCommand keeps the audit log to the retention an operator chose.
func auditCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] != "prune" {
		fmt.Fprint(stderr, auditUsage)
		return errors.New("kmirror audit: give prune --before DATE")
	}
	fs := flag.NewFlagSet("kmirror audit prune", flag.ContinueOnError)
	fs.SetOutput(stderr)
	dataDir := fs.String("data-dir", "./kmirror-data", "data directory of the kmirror whose audit log it is")
	beforeText := fs.String("before", "", "remove entries made before this date (2026-01-31 or 2026-01-31T12:00:00Z)")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("kmirror audit prune: unexpected %q: give only --before and --data-dir", fs.Arg(0))
	}
	before, err := time.Parse(time.DateOnly, *beforeText)
	if err != nil {
		before, err = time.Parse(time.RFC3339, *beforeText)
	}
	if err != nil {
		return fmt.Errorf("--before %q: give a date as 2026-01-31 (UTC midnight) or 2026-01-31T12:00:00Z", *beforeText)
	}
	svc, closeDB, err := localService(ctx, *dataDir, stderr)
	if err != nil {
		return err
	}
	defer closeDB()
	n, err := svc.PruneAudit(ctx, before)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "removed %d audit entries made before %s; the prune is recorded in the audit log\n", n, before.UTC().Format(time.RFC3339))
	return nil
}

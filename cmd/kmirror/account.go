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
	// The files serve uses: the data directory of --data-dir.
	dir, err := store.PrepareDataDir(*dataDir)
	if err != nil {
		return err
	}
	db, err := store.Open(ctx, dir)
	if err != nil {
		return err
	}
	defer db.Close()
	box, err := secrets.Load(dir)
	if err != nil {
		return err
	}
	svc, err := service.New(service.Deps{Clusters: db, Users: db, Secrets: box, Tokens: db, Audit: db,
		Logger: slog.New(slog.NewTextHandler(stderr, nil))})
	if err != nil {
		return err
	}
	// The caller is whoever can write the data directory: kmirror itself
	// in the audit log.
	if err := svc.SetPassword(ctx, pos[0], password); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "password of %q changed; every session of it has ended\n", pos[0])
	return nil
}

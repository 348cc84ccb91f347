package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"path/filepath"

	"github.com/kmirror/kmirror/internal/secrets"
	"github.com/kmirror/kmirror/internal/store"
)

// parseFileCommand parses `kmirror backup|restore [--data-dir DIR] FILE`.
func parseFileCommand(name string, args []string, stderr io.Writer) (dataDir, file string, err error) {
	fs := flag.NewFlagSet("kmirror "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&dataDir, "data-dir", "./kmirror-data", "the data directory kmirror serve uses")
	fs.Usage = func() {
		fmt.Fprintf(stderr, "Usage: kmirror %s [--data-dir DIR] FILE\n", name)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return "", "", err
	}
	if fs.NArg() != 1 {
		return "", "", fmt.Errorf("%s takes one FILE, got %q", name, fs.Args())
	}
	return dataDir, fs.Arg(0), nil
}

// backupCommand is `kmirror backup FILE`: a consistent copy of the database,
// safe to take while kmirror serve runs.
func backupCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	dataDir, file, err := parseFileCommand("backup", args, stderr)
	if err != nil {
		return err
	}
	if err := store.Backup(ctx, filepath.Join(dataDir, store.FileName), file); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "kmirror: database backed up to %s\n", file)
	fmt.Fprintf(stdout, "  the encryption key is not in it: keep %s safe apart from the backup\n", filepath.Join(dataDir, secrets.KeyFile))
	return nil
}

// restoreCommand is `kmirror restore FILE`: replaces the data directory's
// database with a backup while no kmirror uses the directory.
func restoreCommand(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	dataDir, file, err := parseFileCommand("restore", args, stderr)
	if err != nil {
		return err
	}
	version, err := store.Restore(ctx, file, dataDir)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "kmirror: restored %s (schema version %d) into %s; the previous database is %s\n",
		file, version, dataDir, filepath.Join(dataDir, store.FileName+".bak"))
	fmt.Fprintf(stdout, "  instance and task passwords open only with the key they were sealed with: put that %s in %s before starting\n",
		secrets.KeyFile, dataDir)
	return nil
}

package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// makePrivate makes the data directory 0700 and the database files 0600:
// they hold sealed passwords, password hashes and the audit of who did what,
// and a directory created by hand or an older version may be readable by
// every local user. It fails, refusing the start, when they cannot be made
// private (another owner, a read-only file system), saying what to fix.
//
// An absent database file is created empty at 0600 first: SQLite creates
// its WAL and shared-memory files with the database file's permissions, so
// they are private from the start too.
func makePrivate(dataDir string) error {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return fmt.Errorf("create data directory %s: %w", dataDir, err)
	}
	if err := chmodPrivate(dataDir, 0o700); err != nil {
		return err
	}
	db := filepath.Join(dataDir, FileName)
	f, err := os.OpenFile(db, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case err == nil:
		f.Close()
	case !errors.Is(err, fs.ErrExist):
		return fmt.Errorf("create database %s: %w (is the data directory writable?)", db, err)
	}
	for _, name := range []string{FileName, FileName + "-wal", FileName + "-shm"} {
		if err := chmodPrivate(filepath.Join(dataDir, name), 0o600); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

func chmodPrivate(path string, mode fs.FileMode) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.Mode().Perm() == mode {
		return nil
	}
	if err := os.Chmod(path, mode); err != nil {
		return fmt.Errorf("%s is readable by others (mode %v) and cannot be made private (%v): %w — run kmirror as its owner, or chmod it yourself", path, fi.Mode().Perm(), mode, err)
	}
	return nil
}

package store

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// SubDirName is the directory kmirror makes for itself inside a --data-dir
// that is not its own (see DataDir).
const SubDirName = "kmirror"

// DataDir says which directory kmirror keeps its files in (the database,
// the lock, the keys, the API token, the generated admin password) when it
// is given dir as --data-dir. It is the one place that decides it: every
// command and every part of the server asks it (through PrepareDataDir,
// Open, LockDataDir, Restore), so they all agree. It creates and changes
// nothing.
//
// The rule: dir itself is the data directory when it does not exist yet
// (kmirror creates it), when this process's user owns it, or when it holds
// a database already (an existing install keeps its files where they are).
// Otherwise dir belongs to someone else — typically a volume's root, which
// Kubernetes hands a pod owned by root with the pod's fsGroup and mode 2775
// — and its mode is not kmirror's to change (nor its business: others may
// keep files there): the data directory is then dir/kmirror, which kmirror
// creates 0700 for itself.
//
// The rule gives the same answer for its own answer (dir/kmirror is
// kmirror's), so a path it returned can be passed again.
func DataDir(dir string) (string, error) {
	fi, err := os.Stat(dir)
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return dir, nil
	case err != nil:
		return "", fmt.Errorf("data directory %s: %w", dir, err)
	case !fi.IsDir():
		return "", fmt.Errorf("data directory %s is not a directory", dir)
	case ownedByMe(fi):
		return dir, nil
	}
	if _, err := os.Lstat(filepath.Join(dir, FileName)); err == nil {
		return dir, nil
	}
	return filepath.Join(dir, SubDirName), nil
}

// ownedByMe reports whether this process's effective user owns fi.
func ownedByMe(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}

// PrepareDataDir returns DataDir(dir), created (0700) when absent and made
// 0700 when it is not: it holds sealed passwords, password hashes and the
// audit of who did what, and a directory created by hand or an older
// version may be readable by every local user. It fails, refusing the
// start, when the data directory cannot be made private (another owner, a
// read-only file system), saying what to fix. A dir that is not the data
// directory (a volume's root) is left as it is, whatever its mode.
//
// kmirror's other files in it (dataFiles) are made owner-only too when
// they are open to others, as far as that works (the directory keeps
// others out anyway): kubelet's fsGroup pass gives every file of a volume
// group read and write at each mount. Open is stricter with the database
// files.
func PrepareDataDir(dir string) (string, error) {
	dataDir, err := DataDir(dir)
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return "", fmt.Errorf("create data directory %s: %w", dataDir, err)
	}
	if err := chmodPrivate(dataDir, 0o700); err != nil {
		if fi, serr := os.Stat(dataDir); serr == nil && !ownedByMe(fi) {
			return "", fmt.Errorf("%w; it is another user's directory but holds %s, so it is taken as kmirror's data directory: "+
				"to leave it as it is, move kmirror's files into %s", err, FileName, filepath.Join(dataDir, SubDirName))
		}
		return "", err
	}
	for _, name := range dataFiles {
		path := filepath.Join(dataDir, name)
		if fi, err := os.Lstat(path); err == nil && fi.Mode().IsRegular() && fi.Mode().Perm()&0o077 != 0 {
			_ = os.Chmod(path, fi.Mode().Perm()&0o700) // best effort, see above
		}
	}
	return dataDir, nil
}

// dataFiles are the names of kmirror's files in the data directory, as the
// parts that write them name them (internal/secrets' key, web's session
// keys, cmd/kmirror's API token and admin password, the restore's copy of
// the database it replaced): only these are changed, never a file kmirror
// does not know (--data-dir may be a directory that holds others' files).
// cmd/kmirror's TestServeOnAVolumeRootOwnedByRoot keeps the list complete.
var dataFiles = []string{
	FileName, FileName + "-wal", FileName + "-shm", LockFileName,
	FileName + ".bak", FileName + ".bak-wal", FileName + ".bak-shm",
	"secret.key", "session.key", "api.token", "admin.password",
}

// makePrivate prepares the data directory of dir (PrepareDataDir) and makes
// its database files 0600, returning the data directory.
//
// An absent database file is created empty at 0600 first: SQLite creates
// its WAL and shared-memory files with the database file's permissions, so
// they are private from the start too.
func makePrivate(dir string) (string, error) {
	dataDir, err := PrepareDataDir(dir)
	if err != nil {
		return "", err
	}
	db := filepath.Join(dataDir, FileName)
	f, err := os.OpenFile(db, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case err == nil:
		f.Close()
	case !errors.Is(err, fs.ErrExist):
		return "", fmt.Errorf("create database %s: %w (is the data directory writable?)", db, err)
	}
	for _, name := range []string{FileName, FileName + "-wal", FileName + "-shm"} {
		if err := chmodPrivate(filepath.Join(dataDir, name), 0o600); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", err
		}
	}
	return dataDir, nil
}

// chmodPrivate gives path the owner-only mode. It fails only when path is
// open to others (any group or other bit) and cannot be changed: a file
// already closed to others on a read-only file system is left as it is.
func chmodPrivate(path string, mode fs.FileMode) error {
	fi, err := os.Stat(path)
	if err != nil {
		return err
	}
	if fi.Mode().Perm() == mode {
		return nil
	}
	if err := os.Chmod(path, mode); err != nil && fi.Mode().Perm()&0o077 != 0 {
		return fmt.Errorf("%s is readable by others (mode %v) and cannot be made private (%v): %w — run kmirror as its owner, or chmod it yourself", path, fi.Mode().Perm(), mode, err)
	}
	return nil
}

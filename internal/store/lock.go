package store

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
)

// LockFileName is the file in the data directory that a process using the
// directory (kmirror serve, kmirror restore) holds an exclusive lock on.
const LockFileName = "kmirror.lock"

// ErrInUse means another process holds the data directory's lock.
var ErrInUse = errors.New("data directory in use")

// Lock is a held data directory lock; the kernel drops it when the process
// ends, so a crashed server never leaves the directory locked.
type Lock struct {
	f   *os.File
	dir string
}

// Dir is the data directory the lock holds (DataDir of what LockDataDir
// was given).
func (l *Lock) Dir() string { return l.dir }

// LockDataDir takes the exclusive lock of the data directory of dir
// (PrepareDataDir) without waiting: a second server on the same database
// would fight the first over tasks, and a restore must never replace a
// database under a running server.
func LockDataDir(dir string) (*Lock, error) {
	dataDir, err := PrepareDataDir(dir)
	if err != nil {
		return nil, err
	}
	path := filepath.Join(dataDir, LockFileName)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file %s: %w", path, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("%w: another kmirror holds %s; stop it first, or choose another --data-dir", ErrInUse, path)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	return &Lock{f: f, dir: dataDir}, nil
}

// Unlock releases the lock.
func (l *Lock) Unlock() error {
	if l == nil || l.f == nil {
		return nil
	}
	err := l.f.Close() // closing the only descriptor releases the flock
	l.f = nil
	return err
}

package store_test

import (
	"context"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/kmirror/kmirror/internal/secrets"
	"github.com/kmirror/kmirror/internal/store"
)

// TestOpenMakesTheDataPrivate: a data directory and database readable by
// others (made by hand, or by an older version under a lax umask) are made
// 0700 and 0600 at start, and a new database is private from its creation,
// its WAL and shared-memory files included; a file that is not kmirror's is
// left as it is.
func TestOpenMakesTheDataPrivate(t *testing.T) {
	ctx := context.Background()
	lax := filepath.Join(t.TempDir(), "lax")
	if err := os.Mkdir(lax, 0o755); err != nil {
		t.Fatal(err)
	}
	db, err := store.Open(ctx, lax)
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	for _, name := range []string{store.FileName, store.FileName + "-wal"} {
		if err := os.Chmod(filepath.Join(lax, name), 0o644); err != nil && !os.IsNotExist(err) {
			t.Fatal(err)
		}
	}
	if err := os.Chmod(lax, 0o755); err != nil {
		t.Fatal(err)
	}
	// A file kmirror does not know is not its to change.
	other := filepath.Join(lax, "notes.txt")
	if err := os.WriteFile(other, nil, 0o644); err != nil {
		t.Fatal(err)
	}

	fresh := filepath.Join(t.TempDir(), "fresh")
	for _, dir := range []string{lax, fresh} {
		db, err := store.Open(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		// A write, so the WAL and shared-memory files exist.
		if _, err := db.SQL().ExecContext(ctx, "CREATE TABLE IF NOT EXISTS private_probe (x)"); err != nil {
			t.Fatal(err)
		}
		checkMode(t, dir, 0o700)
		for _, name := range []string{store.FileName, store.FileName + "-wal", store.FileName + "-shm"} {
			checkMode(t, filepath.Join(dir, name), 0o600)
		}
		db.Close()
	}
	checkMode(t, other, 0o644)
}

func checkMode(t *testing.T, path string, want fs.FileMode) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if got := fi.Mode().Perm(); got != want {
		t.Errorf("%s: mode %v, want %v", path, got, want)
	}
}

// TestOpenRefusesADataDirectoryItCannotMakePrivate: when the permissions
// cannot be changed (here: an immutable directory, which even root cannot
// chmod), the start is refused with the reason, not run with readable data.
func TestOpenRefusesADataDirectoryItCannotMakePrivate(t *testing.T) {
	chattr, err := exec.LookPath("chattr")
	if err != nil {
		t.Skip("chattr not found (e2fsprogs): it makes a directory whose mode cannot be changed")
	}
	dir := filepath.Join(t.TempDir(), "immutable")
	if err := os.Mkdir(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command(chattr, "+i", dir).CombinedOutput(); err != nil {
		t.Skipf("this file system cannot make a directory immutable: %v %s", err, out)
	}
	t.Cleanup(func() { _ = exec.Command(chattr, "-i", dir).Run() })
	_, err = store.Open(context.Background(), dir)
	if err == nil || !strings.Contains(err.Error(), "cannot be made private") || !strings.Contains(err.Error(), dir) {
		t.Fatalf("open: %v, want a refusal naming the directory", err)
	}
}

// podUID is the user the image and the Helm chart run kmirror as, and the
// chart's fsGroup.
const podUID = 65532

// childEnv tells a test re-executed by asPodUser that it is the child and
// which directory it works on.
const childEnv = "KMIRROR_STORE_TEST_AS_POD_USER"

// asPodUser runs the calling test again in a child process as uid and gid
// podUID (no other groups), with dir in childEnv, and returns its output
// and whether it passed. Only root can drop to another user: the test is
// skipped otherwise. The test binary is copied where that user can run it
// (go test's work directory is root's alone).
func asPodUser(t *testing.T, dir string) (string, error) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run the child as uid 65532")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(sharedDir(t), "store.test")
	raw, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, raw, 0o755); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "-test.run=^"+t.Name()+"$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), childEnv+"="+dir)
	cmd.Dir = filepath.Dir(bin)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: podUID, Gid: podUID, Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// sharedDir is a directory that uid podUID may enter (t.TempDir's are 0700
// root), removed at the end of the test.
func sharedDir(t *testing.T) string {
	t.Helper()
	dir, err := os.MkdirTemp("", "kmirror-store-pod-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	return dir
}

// volumeRoot makes what Kubernetes mounts for a pod with fsGroup 65532: a
// directory owned by root, group 65532, mode 2775.
func volumeRoot(t *testing.T) string {
	t.Helper()
	vol := filepath.Join(sharedDir(t), "data")
	if err := os.Mkdir(vol, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(vol, 0, podUID); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(vol, 0o775|fs.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	return vol
}

func checkOwner(t *testing.T, path string, uid, gid int) {
	t.Helper()
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st := fi.Sys().(*syscall.Stat_t); int(st.Uid) != uid || int(st.Gid) != gid {
		t.Errorf("%s: owned by %d:%d, want %d:%d", path, st.Uid, st.Gid, uid, gid)
	}
}

// TestOpenOnAVolumeRootOwnedByRoot: the Helm chart's volume (root:65532,
// 2775) given as the data directory to kmirror running as 65532. kmirror
// cannot (and must not) make the volume's root private, so it keeps its
// files in a directory of its own inside (data/kmirror, 0700, files 0600),
// and every part agrees on it: the lock, the database and a second start.
// The second start also puts back what kubelet's fsGroup pass does to a
// volume's files at each mount (group read and write, setgid directories).
func TestOpenOnAVolumeRootOwnedByRoot(t *testing.T) {
	if vol := os.Getenv(childEnv); vol != "" {
		// The child, as uid 65532.
		ctx := context.Background()
		want := filepath.Join(vol, store.SubDirName)
		if got, err := store.DataDir(vol); err != nil || got != want {
			t.Fatalf("DataDir(%s) = %q, %v; want %s", vol, got, err, want)
		}
		lock, err := store.LockDataDir(vol)
		if err != nil {
			t.Fatalf("lock: %v", err)
		}
		defer func() { _ = lock.Unlock() }()
		if lock.Dir() != want {
			t.Fatalf("lock in %s, want %s", lock.Dir(), want)
		}
		db, err := store.Open(ctx, vol)
		if err != nil {
			t.Fatalf("open: %v", err)
		}
		defer db.Close()
		if _, err := db.SQL().ExecContext(ctx, "CREATE TABLE IF NOT EXISTS private_probe (x)"); err != nil {
			t.Fatal(err)
		}
		// The data directory passed again (as serve passes it on) is itself.
		if got, err := store.PrepareDataDir(want); err != nil || got != want {
			t.Fatalf("PrepareDataDir(%s) = %q, %v; want itself", want, got, err)
		}
		// The key the server seals passwords with, as serve loads it.
		if _, err := secrets.Load(lock.Dir()); err != nil {
			t.Fatal(err)
		}
		// While open: the WAL and shared memory go when the last
		// connection closes.
		checkMode(t, want, 0o700)
		for _, name := range []string{store.FileName, store.FileName + "-wal", store.FileName + "-shm", store.LockFileName, secrets.KeyFile} {
			checkMode(t, filepath.Join(want, name), 0o600)
		}
		return
	}

	vol := volumeRoot(t)
	data := filepath.Join(vol, store.SubDirName)
	files := []string{store.FileName, store.LockFileName, secrets.KeyFile} // what stays after the end
	for start := 1; start <= 2; start++ {
		if out, err := asPodUser(t, vol); err != nil {
			t.Fatalf("start %d as uid %d on a root:%d 2775 volume: %v\n%s", start, podUID, podUID, err, out)
		}
		// The volume's root is left as it was.
		checkMode(t, vol, 0o775)
		checkOwner(t, vol, 0, podUID)
		checkMode(t, data, 0o700)
		checkOwner(t, data, podUID, podUID) // the group by the volume's setgid bit
		for _, name := range files {
			checkMode(t, filepath.Join(data, name), 0o600)
			checkOwner(t, filepath.Join(data, name), podUID, podUID)
		}
		if entries, _ := os.ReadDir(vol); len(entries) != 1 {
			t.Errorf("the volume's root holds %v, want only %s", entries, store.SubDirName)
		}
		// What kubelet does to the volume at the next mount (fsGroup with
		// fsGroupChangePolicy Always).
		if err := os.Chmod(data, 0o770|fs.ModeSetgid); err != nil {
			t.Fatal(err)
		}
		for _, name := range files {
			if err := os.Chmod(filepath.Join(data, name), 0o660); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// TestOpenRefusesWhatOthersCanReadAndItCannotFix: as uid 65532, a database
// file that others can read and that belongs to another user (so its mode
// cannot be changed) is refused, in a data directory kmirror owns and in a
// volume root that is not its own but holds a database already (then that
// directory is the data directory, and it is open to the group).
func TestOpenRefusesWhatOthersCanReadAndItCannotFix(t *testing.T) {
	if dir := os.Getenv(childEnv); dir != "" {
		_, err := store.Open(context.Background(), dir)
		if err == nil || !strings.Contains(err.Error(), "cannot be made private") {
			t.Fatalf("open %s: %v, want a refusal", dir, err)
		}
		t.Logf("refused: %v", err)
		return
	}
	own := filepath.Join(sharedDir(t), "own")
	if err := os.Mkdir(own, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(own, podUID, podUID); err != nil {
		t.Fatal(err)
	}
	vol := volumeRoot(t)
	for _, dir := range []string{own, vol} {
		db := filepath.Join(dir, store.FileName)
		if err := os.WriteFile(db, nil, 0o644); err != nil { // root's, readable by all
			t.Fatal(err)
		}
		out, err := asPodUser(t, dir)
		if err != nil {
			t.Fatalf("%s: %v\n%s", dir, err, out)
		}
		want := db
		if dir == vol {
			want = vol
		}
		t.Logf("as uid %d on %s:\n%s", podUID, dir, out)
		if !strings.Contains(out, want+" is readable by others") {
			t.Errorf("refusal does not name %s:\n%s", want, out)
		}
		checkMode(t, db, 0o644)
	}
}

// TestDataDirRule: the rule of DataDir as seen by root (the test's user):
// an absent directory or its own is the data directory, another user's is
// not unless it holds a database already.
func TestDataDirRule(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root, to give a directory to another user")
	}
	base := t.TempDir()
	mkdir := func(name string, uid int, db bool) string {
		dir := filepath.Join(base, name)
		if err := os.Mkdir(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(dir, 0o775); err != nil {
			t.Fatal(err)
		}
		if db {
			if err := os.WriteFile(filepath.Join(dir, store.FileName), nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := os.Chown(dir, uid, uid); err != nil {
			t.Fatal(err)
		}
		return dir
	}
	absent := filepath.Join(base, "absent")
	own := mkdir("own", 0, false)
	other := mkdir("other", podUID, false)
	otherWithDB := mkdir("other-with-db", podUID, true)
	for dir, want := range map[string]string{
		absent:      absent,
		own:         own,
		other:       filepath.Join(other, store.SubDirName),
		otherWithDB: otherWithDB,
	} {
		if got, err := store.DataDir(dir); err != nil || got != want {
			t.Errorf("DataDir(%s) = %q, %v; want %s", dir, got, err, want)
		}
	}
	// Only Prepare creates; a data directory prepared is its own answer.
	if _, err := os.Stat(absent); !os.IsNotExist(err) {
		t.Fatalf("DataDir created %s", absent)
	}
	got, err := store.PrepareDataDir(other)
	if err != nil {
		t.Fatal(err)
	}
	checkMode(t, got, 0o700)
	checkMode(t, other, 0o775)
	if again, err := store.DataDir(got); err != nil || again != got {
		t.Fatalf("DataDir(%s) = %q, %v; want itself", got, again, err)
	}
}

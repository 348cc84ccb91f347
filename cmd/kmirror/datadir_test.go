package main

import (
	"io"
	"io/fs"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/kmirror/kmirror/internal/secrets"
	"github.com/kmirror/kmirror/internal/store"
	"github.com/kmirror/kmirror/web"
)

// podUID is the user (and group) the image and the Helm chart run as.
const podUID = 65532

// podUser runs this test binary as kmirror (TestMain's childEnv) as uid
// and gid podUID, from a copy that user may execute (go test's work
// directory is root's alone). It needs root, and skips otherwise.
type podUser struct{ bin string }

func newPodUser(t *testing.T, shared string) podUser {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root, to run kmirror as uid 65532")
	}
	raw, err := os.ReadFile(os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(shared, "kmirror")
	if err := os.WriteFile(bin, raw, 0o755); err != nil {
		t.Fatal(err)
	}
	return podUser{bin: bin}
}

func (p podUser) command(stdin string, args ...string) *exec.Cmd {
	cmd := exec.Command(p.bin, args...)
	cmd.Env = append(os.Environ(), childEnv+"=1")
	cmd.Dir = filepath.Dir(p.bin)
	cmd.Stdin = strings.NewReader(stdin)
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL,
		Credential: &syscall.Credential{Uid: podUID, Gid: podUID, Groups: []uint32{}}}
	return cmd
}

func (p podUser) run(t *testing.T, stdin string, args ...string) string {
	t.Helper()
	out, err := p.command(stdin, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("kmirror %s as uid %d: %v\n%s", strings.Join(args, " "), podUID, err, out)
	}
	return string(out)
}

// serve starts `kmirror serve` on dir and returns its URL and a stop.
func (p podUser) serve(t *testing.T, dir string) (string, func()) {
	t.Helper()
	cmd := p.command("", "serve", "--listen", "127.0.0.1:0", "--data-dir", dir)
	var out syncBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	stopped := false
	stop := func() {
		if stopped {
			return
		}
		stopped = true
		_ = cmd.Process.Signal(syscall.SIGTERM)
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("serve as uid %d: %v\n%s", podUID, err, out.String())
			}
		case <-time.After(30 * time.Second):
			_ = cmd.Process.Kill()
			t.Errorf("serve did not stop on SIGTERM\n%s", out.String())
		}
	}
	t.Cleanup(stop)
	var base string
	checkFor(t, 30*time.Second, 20*time.Millisecond, func() error {
		select {
		case err := <-done:
			stopped = true
			t.Fatalf("serve as uid %d ended early: %v\n%s", podUID, err, out.String())
		default:
		}
		if base = regexp.MustCompile(`http://127\.0\.0\.1:\d+/`).FindString(out.String()); base == "" {
			return errString("no URL printed yet")
		}
		return nil
	})
	if !strings.Contains(out.String(), filepath.Join(dir, store.SubDirName, adminPasswordFile)) {
		t.Errorf("serve does not point at the generated password in its own directory:\n%s", out.String())
	}
	return base, stop
}

// TestServeOnAVolumeRootOwnedByRoot: kmirror as the chart runs it (uid
// 65532) on the chart's volume (root:65532, mode 2775). serve starts and
// answers /healthz, and every file of the data directory ends up in
// data/kmirror, 0600, the volume's root untouched: the database, the lock,
// the sealing key, the session key, the generated API token (which the API
// then takes) and the generated admin password. backup, restore and admin
// set-password given the same --data-dir find the same files: the password
// set on the stopped server signs in on the next start, which also makes
// the files private again after kubelet's fsGroup pass opened them to the
// group.
func TestServeOnAVolumeRootOwnedByRoot(t *testing.T) {
	shared, err := os.MkdirTemp("", "kmirror-pod-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(shared) })
	if err := os.Chmod(shared, 0o755); err != nil {
		t.Fatal(err)
	}
	pod := newPodUser(t, shared)
	vol := filepath.Join(shared, "data")
	backups := filepath.Join(shared, "backups")
	for _, d := range []string{vol, backups} {
		if err := os.Mkdir(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chown(backups, podUID, podUID); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(vol, 0, podUID); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(vol, 0o775|fs.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(vol, store.SubDirName)

	base, stop := pod.serve(t, vol)
	resp, err := http.Get(base + "healthz")
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("/healthz: %d", resp.StatusCode)
	}
	token, err := os.ReadFile(filepath.Join(data, apiTokenFile))
	if err != nil {
		t.Fatalf("the generated API token is not in %s: %v", data, err)
	}
	req, _ := http.NewRequest(http.MethodGet, base+"api/v1/clusters", nil)
	req.Header.Set("Authorization", "Bearer "+strings.TrimSpace(string(token)))
	if resp, err = http.DefaultClient.Do(req); err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("API with the token from %s: %d", data, resp.StatusCode)
	}
	file := filepath.Join(backups, "kmirror-backup.db")
	if out := pod.run(t, "", "backup", "--data-dir", vol, file); !strings.Contains(out, filepath.Join(data, secrets.KeyFile)) {
		t.Errorf("backup does not name the key it needs in %s:\n%s", data, out)
	}
	stop()

	checkFile := func(path string, mode fs.FileMode, uid, gid int) {
		t.Helper()
		fi, err := os.Stat(path)
		if err != nil {
			t.Error(err)
			return
		}
		st := fi.Sys().(*syscall.Stat_t)
		if fi.Mode().Perm() != mode || int(st.Uid) != uid || int(st.Gid) != gid {
			t.Errorf("%s: mode %v owner %d:%d, want %v %d:%d", path, fi.Mode().Perm(), st.Uid, st.Gid, mode, uid, gid)
		}
	}
	files := []string{store.FileName, store.LockFileName, secrets.KeyFile, web.SessionKeyFile, apiTokenFile, adminPasswordFile}
	checkPrivate := func() {
		t.Helper()
		checkFile(vol, 0o775, 0, podUID)
		checkFile(data, 0o700, podUID, podUID)
		for _, name := range files {
			checkFile(filepath.Join(data, name), 0o600, podUID, podUID)
		}
		entries, _ := os.ReadDir(vol)
		if len(entries) != 1 || entries[0].Name() != store.SubDirName {
			t.Errorf("the volume's root holds %v, want only %s", entries, store.SubDirName)
		}
	}
	checkPrivate()

	if out := pod.run(t, "", "restore", "--data-dir", vol, file); !strings.Contains(out, "into "+data+";") {
		t.Errorf("restore does not say it restored into %s:\n%s", data, out)
	}
	if _, err := os.Stat(filepath.Join(data, store.FileName+".bak")); err != nil {
		t.Errorf("restore kept no previous database in %s: %v", data, err)
	}
	pod.run(t, "pod-user-password\n", "admin", "set-password", "admin", "--data-dir", vol)
	names, _ := os.ReadDir(data)
	if slices.ContainsFunc(names, func(e os.DirEntry) bool { return e.IsDir() }) {
		t.Errorf("a directory inside the data directory: %v", names)
	}

	// What kubelet does to a volume at a mount with fsGroup (unless the
	// chart's fsGroupChangePolicy OnRootMismatch spares it): the next start
	// takes it back.
	if err := os.Chmod(data, 0o770|fs.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	for _, name := range files {
		if err := os.Chmod(filepath.Join(data, name), 0o660); err != nil {
			t.Fatal(err)
		}
	}
	base, stop = pod.serve(t, vol)
	jar, _ := cookiejar.New(nil)
	c := &http.Client{Jar: jar}
	resp, err = c.Get(base + "signin")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	tok := regexp.MustCompile(`name="_csrf" value="([^"]+)"`).FindSubmatch(body)
	if tok == nil {
		t.Fatalf("no CSRF token on the sign-in page:\n%s", body)
	}
	resp, err = c.PostForm(base+"signin", url.Values{"_csrf": {string(tok[1])}, "user": {"admin"}, "password": {"pod-user-password"}})
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.Request.URL.Path != "/instances" {
		t.Fatalf("sign-in with the password set by admin set-password ended at %s (%d)", resp.Request.URL.Path, resp.StatusCode)
	}
	stop()
	checkPrivate()
}

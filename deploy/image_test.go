package deploy

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"
)

// TestImageBuildsAndRunsTheDemo builds the image with `make image` (buildah,
// no daemon), checks its configuration, runs `kmirror demo` inside it, and
// serves from it until its own HEALTHCHECK command passes: on the image's
// /data volume, then on a /data owned by root with group 65532 and mode
// 2775, as the Helm chart's volume is mounted (fsGroup).
func TestImageBuildsAndRunsTheDemo(t *testing.T) {
	tool(t, "buildah", ".ci/run installs it with apt")
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
	defer cancel()
	// A storage of the test's own: nothing left behind, nothing shared with
	// images built by hand.
	store := t.TempDir()
	global := []string{"--storage-driver", "vfs", "--root", filepath.Join(store, "root"), "--runroot", filepath.Join(store, "run")}
	buildah := func(args ...string) string {
		t.Helper()
		return run(t, ctx, "", "buildah", append(slices.Clone(global), args...)...)
	}
	const image = "localhost/kmirror:deploytest"
	run(t, ctx, repoRoot(t), "make", "image", "IMAGE="+image, "IMAGE_FLAGS="+strings.Join(global, " "))

	var images []struct{ Size string }
	out := buildah("images", "--json", image)
	if err := json.Unmarshal([]byte(out), &images); err != nil || len(images) != 1 {
		t.Fatalf("buildah images --json: %v\n%s", err, out)
	}
	t.Logf("image %s: %s", image, images[0].Size)
	cfgOut := buildah("inspect", "--type", "image", image)
	var cfg struct {
		Docker struct {
			Config struct {
				User         string
				Env          []string
				ExposedPorts map[string]any
				Volumes      map[string]any
				Healthcheck  *struct{ Test []string }
			} `json:"config"`
		}
	}
	if err := json.Unmarshal([]byte(cfgOut), &cfg); err != nil {
		t.Fatalf("buildah inspect: %v", err)
	}
	c := cfg.Docker.Config
	if c.User == "" || strings.HasPrefix(c.User, "0") || strings.HasPrefix(c.User, "root") {
		t.Errorf("image runs as %q, want a non-root user", c.User)
	}
	if _, ok := c.ExposedPorts["8080/tcp"]; !ok {
		t.Errorf("exposed ports %v lack 8080/tcp", c.ExposedPorts)
	}
	if _, ok := c.Volumes["/data"]; !ok {
		t.Errorf("volumes %v lack /data", c.Volumes)
	}
	if c.Healthcheck == nil || !strings.Contains(strings.Join(c.Healthcheck.Test, " "), "/healthz") {
		t.Errorf("healthcheck %+v does not check /healthz", c.Healthcheck)
	}
	for _, e := range c.Env {
		if strings.HasPrefix(e, "KMIRROR_") {
			t.Errorf("image environment carries %q: secrets are given at run time", e)
		}
	}

	ctr := fmt.Sprintf("kmirror-deploytest-%d", os.Getpid())
	buildah("from", "--name", ctr, image)
	// A cleanup, not a defer: it must run after the servers' stops (t.Cleanup
	// runs them last registered first, and all after the defers).
	t.Cleanup(func() { _, _ = runErr(context.Background(), "", "buildah", append(slices.Clone(global), "rm", ctr)...) })
	runIn := func(args ...string) []string {
		return append(slices.Clone(global), append([]string{"run", "--isolation", "chroot", ctr, "--"}, args...)...)
	}

	out = run(t, ctx, "", "buildah", runIn("/usr/local/bin/kmirror", "demo", "-records", "5000", "-size", "200")...)
	if !strings.Contains(out, "OK: produced 5000, replicated 5000, missing 0") {
		t.Fatalf("demo in the image did not verify the copy:\n%s", out)
	}

	// The HEALTHCHECK's command against a server running in the image (chroot
	// isolation shares the host's network, so a free loopback port is used).
	var uid, gid int
	if _, err := fmt.Sscanf(c.User, "%d:%d", &uid, &gid); err != nil {
		t.Fatalf("image user %q is not uid:gid: %v", c.User, err)
	}
	if c.Healthcheck.Test[0] != "CMD" {
		t.Fatalf("healthcheck %q is not an exec-form CMD (the image has no shell)", c.Healthcheck.Test)
	}
	// serveInImage runs `kmirror serve --data-dir dataDir` in the container
	// (with extra buildah run flags) until the image's HEALTHCHECK command
	// passes, and returns its output and a stop.
	serveInImage := func(dataDir string, runFlags ...string) (*syncBuffer, func()) {
		t.Helper()
		port := freePort(t)
		args := append(slices.Clone(global), "run", "--isolation", "chroot", "--env", "KMIRROR_ADMIN_PASSWORD=deploytest-password")
		args = append(append(args, runFlags...), ctr, "--",
			"/usr/local/bin/kmirror", "serve", "--listen", fmt.Sprintf("127.0.0.1:%d", port), "--data-dir", dataDir)
		serve := exec.CommandContext(ctx, "buildah", args...)
		serve.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		var serveOut syncBuffer
		serve.Stdout, serve.Stderr = &serveOut, &serveOut
		if err := serve.Start(); err != nil {
			t.Fatal(err)
		}
		stopped := false
		stop := func() {
			if stopped {
				return
			}
			stopped = true
			_ = syscall.Kill(-serve.Process.Pid, syscall.SIGTERM)
			done := make(chan struct{})
			go func() { _ = serve.Wait(); close(done) }()
			select {
			case <-done:
			case <-time.After(20 * time.Second):
				_ = syscall.Kill(-serve.Process.Pid, syscall.SIGKILL)
				<-done
			}
		}
		t.Cleanup(stop)
		// The image's own command, with the test's port (a later flag wins).
		health := runIn(append(slices.Clone(c.Healthcheck.Test[1:]), "--url", fmt.Sprintf("http://127.0.0.1:%d/healthz", port))...)
		deadline := time.Now().Add(60 * time.Second)
		for {
			out, err := runErr(ctx, "", "buildah", health...)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				t.Fatalf("healthcheck never passed: %v\n%s\nserver:\n%s", err, out, serveOut.String())
			}
			time.Sleep(300 * time.Millisecond)
		}
		return &serveOut, stop
	}
	serveOut, stop := serveInImage("/data")
	stop()

	// The server wrote its database as the image's user, not as root, into
	// the /data volume (buildah keeps a container's volumes in its storage).
	vols, _ := filepath.Glob(filepath.Join(store, "root", "vfs-containers", "*", "userdata", "buildah-volumes", "*"))
	if len(vols) != 1 {
		t.Fatalf("want the one /data volume in the container's storage, found %q\nserver:\n%s", vols, serveOut.String())
	}
	data := vols[0]
	entries, err := os.ReadDir(data)
	if err != nil || !slices.ContainsFunc(entries, func(e os.DirEntry) bool { return e.Name() == "kmirror.db" }) {
		t.Fatalf("no kmirror.db in the /data volume (%v): %v\nserver:\n%s", entries, err, serveOut.String())
	}
	for _, e := range entries {
		info, err := e.Info()
		if err != nil {
			t.Fatal(err)
		}
		if st := info.Sys().(*syscall.Stat_t); int(st.Uid) != uid || int(st.Gid) != gid {
			t.Errorf("/data/%s is owned by %d:%d, want the image's user %s", e.Name(), st.Uid, st.Gid, c.User)
		}
	}

	// A volume as the Helm chart's comes: owned by root with the pod's
	// fsGroup (the image's group), mode 2775. serve starts all the same and
	// keeps its files in a directory of its own inside, leaving the root be.
	// It is mounted beside /data, not over it: buildah mounts the
	// container's own /data volume over a --volume given for the same path.
	pvc := filepath.Join(t.TempDir(), "pvc")
	if err := os.Mkdir(pvc, 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.Chown(pvc, 0, gid); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(pvc, 0o775|os.ModeSetgid); err != nil {
		t.Fatal(err)
	}
	serveOut, stop = serveInImage("/pvc", "--volume", pvc+":/pvc:rw")
	stop()
	for path, want := range map[string]struct {
		mode     os.FileMode
		uid, gid int
	}{
		pvc:                           {0o775 | os.ModeSetgid, 0, gid},
		filepath.Join(pvc, "kmirror"): {0o700 | os.ModeSetgid, uid, gid},
		filepath.Join(pvc, "kmirror", "kmirror.db"): {0o600, uid, gid},
		filepath.Join(pvc, "kmirror", "secret.key"): {0o600, uid, gid},
	} {
		info, err := os.Stat(path)
		if err != nil {
			t.Errorf("%v\nserver:\n%s", err, serveOut.String())
			continue
		}
		st := info.Sys().(*syscall.Stat_t)
		if got := info.Mode() & (os.ModePerm | os.ModeSetgid); got != want.mode || int(st.Uid) != want.uid || int(st.Gid) != want.gid {
			t.Errorf("%s: mode %v owner %d:%d, want %v %d:%d", path, got, st.Uid, st.Gid, want.mode, want.uid, want.gid)
		}
	}
}

// freePort returns a loopback port free at the time of the call.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

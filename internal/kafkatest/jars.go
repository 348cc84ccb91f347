package kafkatest

import (
	"bytes"
	"context"
	_ "embed"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// KafkaVersions are tried in order when nothing is cached yet. 4.4.0 comes
// first as the newest, but its connect-mirror (MM2) is not on Maven Central
// while its broker is, so one complete set of the same version is required.
var KafkaVersions = []string{"4.4.0", "4.3.1"}

//go:embed maven/pom.xml
var pomXML []byte

// Jars is a directory of Kafka jars of one version.
type Jars struct {
	Dir     string // holds the jars; the Java classpath is Dir + "/*"
	Version string // Apache Kafka version, e.g. "4.3.1"
}

// Classpath is the value for java -cp.
func (j Jars) Classpath() string { return filepath.Join(j.Dir, "*") }

// CacheDir is where fetched jars are kept: $KMIRROR_CACHE, else
// ~/.cache/kmirror (the user cache directory).
func CacheDir() (string, error) {
	if d := os.Getenv("KMIRROR_CACHE"); d != "" {
		return d, nil
	}
	d, err := os.UserCacheDir()
	if err != nil {
		return "", fmt.Errorf("find a cache directory for the Kafka jars: %w (set KMIRROR_CACHE)", err)
	}
	return filepath.Join(d, "kmirror"), nil
}

// versions are the versions to use, $KMIRROR_KAFKA_VERSION pinning one.
func versions() []string {
	if v := os.Getenv("KMIRROR_KAFKA_VERSION"); v != "" {
		return []string{v}
	}
	return KafkaVersions
}

// EnsureJars returns the cached Kafka jars, fetching them with Maven first
// when no version is cached. Safe to call from many processes at once.
func EnsureJars(ctx context.Context) (Jars, error) {
	root, err := CacheDir()
	if err != nil {
		return Jars{}, err
	}
	if j, ok := cached(root); ok {
		return j, nil
	}
	if err := os.MkdirAll(root, 0o755); err != nil {
		return Jars{}, fmt.Errorf("create the jar cache %s: %w", root, err)
	}
	unlock, err := lockFile(ctx, filepath.Join(root, ".fetch.lock"))
	if err != nil {
		return Jars{}, err
	}
	defer unlock()
	// Another process may have finished the fetch while we waited.
	if j, ok := cached(root); ok {
		return j, nil
	}
	var errs []error
	for _, v := range versions() {
		j, err := fetch(ctx, root, v)
		if err == nil {
			return j, nil
		}
		errs = append(errs, err)
		if ctx.Err() != nil {
			break
		}
	}
	return Jars{}, fmt.Errorf("fetch the Apache Kafka jars with Maven: %w", errors.Join(errs...))
}

func versionDir(root, v string) string { return filepath.Join(root, "kafka-"+v) }

// cached finds the first wanted version whose directory is complete. A
// directory only ever appears complete (rename), so no lock is needed.
func cached(root string) (Jars, bool) {
	for _, v := range versions() {
		j := Jars{Dir: filepath.Join(versionDir(root, v), "libs"), Version: v}
		if complete(j) {
			return j, true
		}
	}
	return Jars{}, false
}

func complete(j Jars) bool {
	for _, name := range requiredJars(j.Version) {
		if _, err := os.Stat(filepath.Join(j.Dir, name)); err != nil {
			return false
		}
	}
	return true
}

// requiredJars are the jars whose absence means the fetch is unusable.
func requiredJars(v string) []string {
	return []string{
		"kafka_2.13-" + v + ".jar",
		"kafka-tools-" + v + ".jar",
		"connect-mirror-" + v + ".jar",
		// Distributed Connect workers (StartConnect) and the transforms
		// and predicates their connectors name. A cache from before they
		// were asked for by name is refetched if it lacks them.
		"connect-runtime-" + v + ".jar",
		"connect-transforms-" + v + ".jar",
		"kafka-clients-" + v + ".jar",
	}
}

func fetch(ctx context.Context, root, v string) (Jars, error) {
	mvn, err := exec.LookPath("mvn")
	if err != nil {
		return Jars{}, fmt.Errorf("maven (mvn) is not installed: install it (apt-get install maven) or fill %s by hand: %w", root, err)
	}
	tmp, err := os.MkdirTemp(root, ".kafka-"+v+".tmp-")
	if err != nil {
		return Jars{}, fmt.Errorf("create a temporary directory in %s: %w", root, err)
	}
	defer os.RemoveAll(tmp) // a no-op after the rename
	pom := filepath.Join(tmp, "pom.xml")
	if err := os.WriteFile(pom, pomXML, 0o644); err != nil {
		return Jars{}, fmt.Errorf("write %s: %w", pom, err)
	}
	libs := filepath.Join(tmp, "libs")
	start := time.Now()
	slog.Info("fetching Apache Kafka jars with Maven", "version", v, "cache", root)
	cmd := exec.CommandContext(ctx, mvn, "-q", "-B", "-f", pom,
		"dependency:copy-dependencies",
		"-DincludeScope=runtime",
		"-DoutputDirectory="+libs,
		"-Dkafka.version="+v)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return Jars{}, fmt.Errorf("mvn dependency:copy-dependencies for Kafka %s failed: %w\n%s", v, err, lastLines(out.String(), 15))
	}
	j := Jars{Dir: libs, Version: v}
	if !complete(j) {
		return Jars{}, fmt.Errorf("maven finished but the Kafka %s jars are incomplete in %s: check the pom's dependencies", v, libs)
	}
	dst := versionDir(root, v)
	// Fetches publish by rename, so anything here is incomplete (hand-made
	// or half-deleted) and in the way.
	if err := os.RemoveAll(dst); err != nil {
		return Jars{}, fmt.Errorf("remove the incomplete %s: %w", dst, err)
	}
	if err := os.Rename(tmp, dst); err != nil {
		return Jars{}, fmt.Errorf("publish the Kafka jars to %s: %w", dst, err)
	}
	slog.Info("fetched Apache Kafka jars", "version", v, "dir", filepath.Join(dst, "libs"), "took", time.Since(start).Round(time.Millisecond))
	return Jars{Dir: filepath.Join(dst, "libs"), Version: v}, nil
}

// lockFile takes an exclusive flock, polling so the wait honours ctx. The
// kernel drops the lock if the process dies, so a crash never wedges others.
func lockFile(ctx context.Context, path string) (unlock func(), err error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("open the lock file %s: %w", path, err)
	}
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() {
				_ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN)
				_ = f.Close()
			}, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) && !errors.Is(err, syscall.EINTR) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("waiting for another process fetching the Kafka jars (lock %s): %w", path, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// lastLines keeps error messages short but useful.
func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

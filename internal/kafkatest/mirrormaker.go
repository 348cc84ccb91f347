package kafkatest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
)

// MirrorMaker is a MirrorMaker 2 in dedicated mode
// (org.apache.kafka.connect.mirror.MirrorMaker), from the cached jars.
type MirrorMaker struct {
	proc *process
	log  string
}

// StartMirrorMaker runs a dedicated MirrorMaker 2 with the given
// mm2.properties text until Stop or the end of the test. Its log is kept
// in the test's directory and shown when the test fails.
func StartMirrorMaker(t testing.TB, properties string) *MirrorMaker {
	t.Helper()
	skipShort(t)
	jars, err := EnsureJars(context.Background())
	if err != nil {
		t.Fatalf("kafkatest: %v", err)
	}
	java, err := exec.LookPath("java")
	if err != nil {
		t.Fatalf("kafkatest: java is not installed: install OpenJDK 17 or newer: %v", err)
	}
	dir := t.TempDir()
	conf, log4j := filepath.Join(dir, "mm2.properties"), filepath.Join(dir, "log4j2.properties")
	for path, text := range map[string]string{conf: properties, log4j: connectLog4j2Properties} {
		if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
			t.Fatalf("kafkatest: write %s: %v", path, err)
		}
	}
	mm := &MirrorMaker{log: filepath.Join(dir, "mm2.log")}
	argv := append(append(append([]string{java}, jvmFlags(256, false)...), archiveFlag(classArchive(context.Background(), jars, java, connectClasses))...),
		"-Dlog4j2.configurationFile="+log4j, "-cp", jars.Classpath(),
		"org.apache.kafka.connect.mirror.MirrorMaker", conf)
	mm.proc, _, err = spawn(argv, mm.log)
	if err != nil {
		t.Fatalf("kafkatest: start MirrorMaker: %v", err)
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("kafkatest: MirrorMaker log:\n%s", tail(mm.log, 60))
		}
		mm.Stop()
	})
	return mm
}

// Stop ends MirrorMaker as an operator stopping it would (SIGTERM: its
// tasks commit their offsets), and kills it if it does not exit.
func (mm *MirrorMaker) Stop() {
	if mm.proc == nil {
		return
	}
	if !mm.proc.signal(syscall.SIGTERM) {
		mm.proc.signal(syscall.SIGKILL)
	}
	mm.proc = nil
}

// LogTail is the last n lines of its log.
func (mm *MirrorMaker) LogTail(n int) string { return fmt.Sprint(tail(mm.log, n)) }

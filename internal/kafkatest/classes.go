package kafkatest

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
)

// Test JVMs start from a class-data-sharing archive of the Kafka
// classpath (JDK CDS): a JVM maps the classes it would otherwise load,
// parse and verify one by one. Measured here (cmd/kafka-up, one
// single-node cluster, 256 MiB heap): the broker's CPU until it serves
// 3.6-3.9 s without, 2.3 s with; its storage format's 1.3-1.45 s, 1.0 s;
// serving after 4.1-4.5 s, 2.7-2.9 s. CI starts brokers by the dozen.
//
// There are two archives, a broker's and a Connect worker's (MirrorMaker
// uses the worker's), each made once per cache, Kafka version and Java
// under a file lock, so test packages that start at once wait for one
// training run: a JVM is started with -XX:ArchiveClassesAtExit and
// stopped, and writes the classes it loaded as it exits. Benchmarks
// (FullSpeed) start without them, as production does. Any failure leaves
// the JVMs to start without one, as before; KMIRROR_NO_CDS=1 turns them
// off.

// The archive kinds: a broker's classes, a Connect worker's (jetty,
// jersey and Connect's runtime besides the clients). One classpath, one
// archive each, as a JVM maps one.
const (
	brokerClasses  = "broker"
	connectClasses = "connect"
)

// classArchive is the archive of kind's path for the java at javaPath,
// made if missing; "" when none can be had.
func classArchive(ctx context.Context, jars Jars, javaPath, kind string) string {
	a, train := &brokerArchive, trainBrokerArchive
	if kind == connectClasses {
		a, train = &connectArchive, trainConnectArchive
	}
	a.once.Do(func() { a.path = makeArchive(ctx, jars, javaPath, kind, train) })
	return a.path
}

type archive struct {
	once sync.Once
	path string
}

var brokerArchive, connectArchive archive

// archiveFlag is the flag that maps archive, if any.
func archiveFlag(archive string) []string {
	if archive == "" {
		return nil
	}
	return []string{"-XX:SharedArchiveFile=" + archive}
}

func makeArchive(ctx context.Context, jars Jars, javaPath, kind string, train func(context.Context, string) error) string {
	if os.Getenv("KMIRROR_NO_CDS") != "" {
		return ""
	}
	key, err := javaKey(javaPath)
	if err != nil {
		fmt.Fprintf(os.Stderr, "kafkatest: no %s class archive (%v); those JVMs start without one\n", kind, err)
		return ""
	}
	path := filepath.Join(jars.Dir, "..", "classes-"+jars.Version+"-"+kind+"-"+key+".jsa")
	failed := path + ".failed" // a training that failed is not tried again
	if exists(path) {
		return path
	}
	if exists(failed) {
		return ""
	}
	unlock, err := lockFile(ctx, path+".lock")
	if err != nil {
		return ""
	}
	defer unlock()
	if exists(path) { // made by another process while we waited
		return path
	}
	if exists(failed) {
		return ""
	}
	began := time.Now()
	if err := train(ctx, path); err != nil {
		fmt.Fprintf(os.Stderr, "kafkatest: no %s class archive (%v); those JVMs start without one\n", kind, err)
		if ctx.Err() == nil { // not for a caller that gave up
			fmt.Fprintf(os.Stderr, "kafkatest: not tried again until %s is removed\n", failed)
			_ = os.WriteFile(failed, []byte(err.Error()+"\n"), 0o644)
		}
		return ""
	}
	fmt.Fprintf(os.Stderr, "kafkatest: class archive %s made in %s\n", path, time.Since(began).Round(time.Millisecond))
	return path
}

// trainBrokerArchive starts and stops a single-node cluster whose broker
// writes the classes it loaded to path as it exits.
func trainBrokerArchive(ctx context.Context, path string) error {
	return dumpTo(path, func(tmp string) error {
		ctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		c, err := Start(ctx, Name("class-archive"), HeapMB(256), func(o *options) { o.dumpClasses = tmp })
		if err != nil {
			return fmt.Errorf("start the training broker: %w", err)
		}
		defer func() { _ = c.Remove() }()
		// What every test does first: a topic and a record.
		exercise(c)
		if err := c.Stop(); err != nil {
			return fmt.Errorf("stop the training broker: %w", err)
		}
		return nil
	})
}

// trainConnectArchive starts and stops a Connect worker, on a cluster of
// its own, that writes the classes it loaded to path as it exits.
func trainConnectArchive(ctx context.Context, path string) error {
	return dumpTo(path, func(tmp string) error {
		ctx, cancel := context.WithTimeout(ctx, 3*time.Minute)
		defer cancel()
		k, err := Start(ctx, Name("class-archive-connect"), HeapMB(256))
		if err != nil {
			return fmt.Errorf("start the training worker's broker: %w", err)
		}
		defer func() { _ = k.Stop(); _ = k.Remove() }()
		dir, err := os.MkdirTemp("", "kmirror-connect-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(dir)
		cc, err := StartConnect(ctx, k, ConnectName("class-archive"), Workers(1), ConnectDir(dir), RebalanceDelay(0),
			func(o *connectOptions) { o.dumpClasses = tmp })
		if err != nil {
			return fmt.Errorf("start the training worker: %w", err)
		}
		if err := cc.Close(); err != nil {
			return fmt.Errorf("stop the training worker: %w", err)
		}
		return nil
	})
}

// dumpTo runs train with a temporary path for the JVM's archive and moves
// what it wrote to path.
func dumpTo(path string, train func(tmp string) error) error {
	tmp := fmt.Sprintf("%s.%d.tmp", path, os.Getpid())
	defer os.Remove(tmp)
	if err := train(tmp); err != nil {
		return err
	}
	if !exists(tmp) {
		return fmt.Errorf("the training JVM wrote no archive at %s", tmp)
	}
	return os.Rename(tmp, path)
}

// exercise creates a topic on c and writes a record to it, best effort.
func exercise(c *Cluster) {
	a, err := c.Admin()
	if err != nil {
		return
	}
	defer a.Close()
	if err := a.CreateTopic("warm-up", &sarama.TopicDetail{NumPartitions: 1, ReplicationFactor: 1}, false); err != nil {
		return
	}
	cfg := sarama.NewConfig()
	cfg.Producer.Return.Successes = true
	cfg.Producer.RequiredAcks = sarama.WaitForAll
	if p, err := sarama.NewSyncProducer(c.BootstrapServers(cluster.Plaintext), cfg); err == nil {
		_, _, _ = p.SendMessage(&sarama.ProducerMessage{Topic: "warm-up", Value: sarama.StringEncoder("x")})
		_ = p.Close()
	}
}

// javaKey names the Java an archive was made by: an archive is for the
// JVM that wrote it.
func javaKey(javaPath string) (string, error) {
	resolved, err := filepath.EvalSymlinks(javaPath)
	if err != nil {
		return "", err
	}
	out, err := exec.Command(resolved, "-version").CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("java -version: %w", err)
	}
	sum := sha256.Sum256(append([]byte(resolved+"\n"), out...))
	return hex.EncodeToString(sum[:6]), nil
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

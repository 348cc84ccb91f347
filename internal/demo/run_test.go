package demo

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/IBM/sarama"

	"github.com/kmirror/kmirror/internal/cluster"
)

func TestRunVerifiesAnExactCopy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	rep, err := Run(ctx, &out, RunOptions{Records: 5000, Size: 100})
	if err != nil {
		t.Fatalf("demo failed: %v\n%s", err, out.String())
	}
	if !rep.OK() || rep.Replicated != 5000 {
		t.Fatalf("report %s", rep.String())
	}
}

// The demo must notice a broken copy: records deleted from the target
// after replication are reported missing and the run fails.
func TestRunFailsOnABrokenCopy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var out bytes.Buffer
	rep, err := Run(ctx, &out, RunOptions{Records: 3000, Size: 100, Tamper: deleteFirstRecords})
	if err == nil {
		t.Fatalf("demo passed a broken copy:\n%s", out.String())
	}
	if rep.Missing != 10 || !strings.Contains(out.String(), "missing 10") {
		t.Fatalf("want 10 missing records reported, got %s\n%s", rep.String(), out.String())
	}
}

func deleteFirstRecords(ctx context.Context, target cluster.Settings, topic string) error {
	cfg, err := target.Config("tamper")
	if err != nil {
		return err
	}
	admin, err := sarama.NewClusterAdmin(target.BootstrapServers, cfg)
	if err != nil {
		return err
	}
	defer admin.Close()
	return admin.DeleteRecords(topic, map[int32]int64{0: 10})
}

package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"time"

	"github.com/kmirror/kmirror/internal/demo"
)

// demoClusters is the hook `kmirror serve --demo` calls to start embedded
// clusters with data flowing into them; serve registers them as instances
// and creates the demo task on them.
func demoClusters(ctx context.Context, log *slog.Logger) (*demo.Background, error) {
	return demo.StartBackground(ctx, log)
}

type demoConfig struct {
	records, size, partitions int
	timeout                   time.Duration
	log                       logFlags
}

func parseDemo(args []string, stderr io.Writer) (demoConfig, error) {
	var c demoConfig
	fs := flag.NewFlagSet("kmirror demo", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.IntVar(&c.records, "records", 100000, "records to produce and replicate")
	fs.IntVar(&c.size, "size", 512, "value bytes per record")
	fs.IntVar(&c.partitions, "partitions", 6, "partitions of the demo topic")
	fs.DurationVar(&c.timeout, "timeout", 2*time.Minute, "how long to wait for the copy")
	// Warnings only by default: the demo's own report is the output.
	c.log.add(fs, slog.LevelWarn)
	if err := fs.Parse(args); err != nil {
		return c, err
	}
	if err := c.log.check(); err != nil {
		return c, err
	}
	if fs.NArg() > 0 {
		return c, fmt.Errorf("demo takes no arguments, got %q", fs.Args())
	}
	return c, nil
}

// demoCommand is `kmirror demo`: a self-contained, verified replication on
// two embedded clusters. It fails when any record is missing or altered.
func demoCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	c, err := parseDemo(args, stderr)
	if err != nil {
		return err
	}
	_, err = demo.Run(ctx, stdout, demo.RunOptions{Records: c.records, Size: c.size, Partitions: c.partitions, Timeout: c.timeout,
		Log: c.log.logger(stderr)})
	return err
}

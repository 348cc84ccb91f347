package main

import (
	"flag"
	"fmt"

	"github.com/kmirror/kmirror/internal/embeddedengine"
	"github.com/kmirror/kmirror/internal/replicator"
)

// bufferMemory is --buffer-memory of serve and run: the one budget every
// task of the process buffers records in (replicator.Budget).
type bufferMemory int64

func (b *bufferMemory) add(fs *flag.FlagSet) {
	*b = replicator.DefaultBufferBytes
	fs.Var(b, "buffer-memory", "memory for records on their way, shared by every task of this process and split over their partitions (KiB, MiB, GiB)")
}

func (b *bufferMemory) String() string { return fmt.Sprintf("%dMiB", int64(*b)>>20) }

func (b *bufferMemory) Set(s string) error {
	n, err := replicator.ParseBytes(s)
	if err != nil {
		return err
	}
	*b = bufferMemory(n)
	return nil
}

// options are the replicators' options with this budget, and the
// process's heap bounded by what it commits (embeddedengine.LimitMemory):
// called once a process.
func (b bufferMemory) options() replicator.Options {
	budget := replicator.NewBudget(int64(b))
	embeddedengine.LimitMemory(budget)
	return replicator.Options{Budget: budget}
}

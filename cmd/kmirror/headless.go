package main

import (
	"context"
	"errors"
	"io"
)

// headlessCommand is `kmirror run -f spec.json`. TODO(run): headless
// replication from a spec file, without the console, goes here.
func headlessCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return errors.New("kmirror run is not available yet: use 'kmirror serve'")
}

package main

import (
	"context"
	"errors"
	"io"

	"github.com/kmirror/kmirror/internal/cluster"
)

// demoClusters is the hook `kmirror serve --demo` calls to start embedded
// clusters that live until ctx is done; the returned settings are registered
// as instances. TODO(demo): start internal/embedded clusters here. Until then
// --demo registers nothing.
func demoClusters(ctx context.Context) ([]cluster.Settings, error) {
	return nil, nil
}

// demoCommand is `kmirror demo`. TODO(demo): the self-contained run on
// embedded clusters (internal/demo) goes here.
func demoCommand(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return errors.New("kmirror demo is not available yet: use 'kmirror serve --demo'")
}

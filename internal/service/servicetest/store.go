package servicetest

import (
	"context"
	"testing"

	"github.com/kmirror/kmirror/internal/secrets"
	"github.com/kmirror/kmirror/internal/store"
)

// OpenStore opens the store and the secrets box of data directory dir (a
// fresh one when dir is ""), closed when the test ends. It returns the
// directory too, for tests that open it again.
func OpenStore(t testing.TB, dir string) (string, *store.DB, *secrets.Box) {
	t.Helper()
	if dir == "" {
		dir = t.TempDir()
	}
	db, err := store.Open(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	box, err := secrets.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	return dir, db, box
}

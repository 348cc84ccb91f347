package secrets_test

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/kmirror/kmirror/internal/secrets"
)

func TestSealOpenRoundTrip(t *testing.T) {
	dir := t.TempDir()
	box, err := secrets.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	sealed, err := box.Seal([]byte("hunter2-password"), "east")
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(sealed, []byte("hunter2")) {
		t.Fatal("sealed value contains the clear password")
	}
	// A second start reads the same key and opens what the first sealed.
	again, err := secrets.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	plain, err := again.Open(sealed, "east")
	if err != nil {
		t.Fatal(err)
	}
	if string(plain) != "hunter2-password" {
		t.Fatalf("opened %q", plain)
	}
	if _, err := again.Open(sealed, "west"); !errors.Is(err, secrets.ErrOpen) {
		t.Fatalf("open under another label: err = %v, want ErrOpen", err)
	}
	sealed[len(sealed)-1] ^= 1
	if _, err := again.Open(sealed, "east"); !errors.Is(err, secrets.ErrOpen) {
		t.Fatalf("open damaged value: err = %v, want ErrOpen", err)
	}
}

func TestKeyFileMode(t *testing.T) {
	dir := t.TempDir()
	if _, err := secrets.Load(dir); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(dir, secrets.KeyFile))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Fatalf("key file mode %v, want 0600", fi.Mode().Perm())
	}
}

func TestDamagedKeyFileIsAnError(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, secrets.KeyFile), []byte("nope"), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := secrets.Load(dir); err == nil {
		t.Fatal("damaged key file loaded without error")
	}
}

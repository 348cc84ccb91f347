// Package secrets keeps kmirror's secrets at rest: it seals Kafka passwords
// with AES-256-GCM under a key that lives in the data directory, outside the
// database, and creates the other random files the service needs on first
// start (session keys, the API token).
//
// Invariants: the key file is created with mode 0600 and never rewritten, so
// a restart can always open what an earlier start sealed; a sealed value is
// bound to its label (the cluster name), so a ciphertext copied to another
// row does not open.
package secrets

import (
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// KeyFile is the name of the sealing key in the data directory.
const KeyFile = "secret.key"

// version prefixes every ciphertext so the format can change later without
// guessing what an old row holds.
const version byte = 1

// Box seals and opens secrets with one AES-256-GCM key.
type Box struct {
	aead cipher.AEAD
}

// New returns a Box for a 32-byte key.
func New(key []byte) (*Box, error) {
	if len(key) != 32 {
		return nil, fmt.Errorf("secret key is %d bytes, want 32: delete nothing, restore the original %s", len(key), KeyFile)
	}
	block, err := aes.NewCipher(key)
	if err != nil {
		return nil, fmt.Errorf("create AES cipher: %w", err)
	}
	aead, err := cipher.NewGCM(block)
	if err != nil {
		return nil, fmt.Errorf("create GCM: %w", err)
	}
	return &Box{aead: aead}, nil
}

// Load opens the Box whose key is <dataDir>/secret.key, generating the key on
// first start.
func Load(dataDir string) (*Box, error) {
	key, err := LoadOrCreate(filepath.Join(dataDir, KeyFile), 32)
	if err != nil {
		return nil, err
	}
	return New(key)
}

// Seal encrypts plaintext, binding it to label (for example the cluster name).
// The result is version || nonce || ciphertext+tag.
func (b *Box) Seal(plaintext []byte, label string) ([]byte, error) {
	nonce := make([]byte, b.aead.NonceSize())
	if _, err := rand.Read(nonce); err != nil {
		return nil, fmt.Errorf("read random nonce: %w", err)
	}
	out := make([]byte, 0, 1+len(nonce)+len(plaintext)+b.aead.Overhead())
	out = append(out, version)
	out = append(out, nonce...)
	return b.aead.Seal(out, nonce, plaintext, []byte(label)), nil
}

// ErrOpen says a sealed value could not be opened: wrong key, wrong label or
// a damaged value.
var ErrOpen = errors.New("sealed secret does not open with this key: was secret.key replaced? re-enter the password")

// Open decrypts what Seal returned for the same label.
func (b *Box) Open(sealed []byte, label string) ([]byte, error) {
	n := b.aead.NonceSize()
	if len(sealed) < 1+n+b.aead.Overhead() || sealed[0] != version {
		return nil, ErrOpen
	}
	plain, err := b.aead.Open(nil, sealed[1:1+n], sealed[1+n:], []byte(label))
	if err != nil {
		return nil, ErrOpen
	}
	return plain, nil
}

// LoadOrCreate returns the n random bytes stored hex-encoded in path,
// creating the file (mode 0600, and its directory 0700) with fresh random
// bytes when it does not exist. Creation uses O_EXCL so two starts racing on
// an empty data directory cannot end up with different keys.
func LoadOrCreate(path string, n int) ([]byte, error) {
	if b, err := readHex(path, n); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return b, err
	}
	if err := os.MkdirAll(filepath.Dir(path), 0o700); err != nil {
		return nil, fmt.Errorf("create data directory for %s: %w", path, err)
	}
	key := make([]byte, n)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("read random bytes for %s: %w", path, err)
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, fs.ErrExist) {
		return readHex(path, n) // another start won the race
	}
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", path, err)
	}
	if _, err := f.WriteString(hex.EncodeToString(key) + "\n"); err != nil {
		f.Close()
		return nil, fmt.Errorf("write %s: %w", path, err)
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return nil, fmt.Errorf("sync %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return nil, fmt.Errorf("close %s: %w", path, err)
	}
	return key, nil
}

func readHex(path string, n int) ([]byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("read %s: %w", path, err)
	}
	b, err := hex.DecodeString(strings.TrimSpace(string(raw)))
	if err != nil || len(b) != n {
		return nil, fmt.Errorf("%s is damaged (want %d hex-encoded bytes): restore it from a backup; deleting it makes stored secrets unreadable", path, n)
	}
	return b, nil
}

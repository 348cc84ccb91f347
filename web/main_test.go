package web_test

import (
	"os"
	"testing"

	"github.com/kmirror/kmirror/internal/account"
)

// TestMain makes test accounts' password hashes cheap: the web tests sign
// in hundreds of times, and what they test is the console, not bcrypt.
func TestMain(m *testing.M) {
	account.UseTestHashCost()
	os.Exit(m.Run())
}

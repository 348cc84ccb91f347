package account_test

import (
	"context"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/crypto/bcrypt"

	"github.com/kmirror/kmirror/internal/account"
	"github.com/kmirror/kmirror/internal/store"
)

func TestEnsureAdminGeneratesOnceThenNothing(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	pw, err := account.EnsureAdmin(ctx, db, "")
	if err != nil {
		t.Fatal(err)
	}
	if len(pw) < 20 {
		t.Fatalf("generated password %q too short", pw)
	}
	if ok, err := account.Check(ctx, db, account.AdminName, pw); err != nil || !ok {
		t.Fatalf("Check(generated) = %v, %v", ok, err)
	}
	again, err := account.EnsureAdmin(ctx, db, "")
	if err != nil || again != "" {
		t.Fatalf("second EnsureAdmin = %q, %v; want nothing", again, err)
	}
	if ok, _ := account.Check(ctx, db, account.AdminName, "wrong"); ok {
		t.Fatal("wrong password accepted")
	}
	if ok, _ := account.Check(ctx, db, "nobody", pw); ok {
		t.Fatal("unknown user accepted")
	}
}

func TestEnsureAdminUsesGivenPassword(t *testing.T) {
	ctx := context.Background()
	db, err := store.Open(ctx, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := account.EnsureAdmin(ctx, db, "short"); err == nil {
		t.Fatal("short admin password accepted")
	}
	pw, err := account.EnsureAdmin(ctx, db, "correct horse battery")
	if err != nil || pw != "" {
		t.Fatalf("EnsureAdmin = %q, %v; want no generated password", pw, err)
	}
	u, err := db.User(ctx, account.AdminName)
	if err != nil {
		t.Fatal(err)
	}
	if u.PasswordHash == "correct horse battery" || !account.Verify(u.PasswordHash, "correct horse battery") {
		t.Fatal("stored value is not a hash of the given password")
	}
}

func TestThrottleBacksOff(t *testing.T) {
	now := time.Unix(1000, 0)
	th := account.NewThrottle()
	th.Now = func() time.Time { return now }
	for i := 0; i < th.Free; i++ {
		if w := th.Wait("k"); w != 0 {
			t.Fatalf("attempt %d must wait %v, want free", i, w)
		}
		th.Fail("k")
	}
	if w := th.Wait("k"); w != 0 {
		t.Fatalf("after %d failures wait = %v, want 0", th.Free, w)
	}
	th.Fail("k")
	if w := th.Wait("k"); w != time.Second {
		t.Fatalf("wait = %v, want 1s", w)
	}
	th.Fail("k")
	if w := th.Wait("k"); w != 2*time.Second {
		t.Fatalf("wait = %v, want 2s", w)
	}
	if w := th.Wait("other"); w != 0 {
		t.Fatalf("other key waits %v", w)
	}
	now = now.Add(3 * time.Second)
	if w := th.Wait("k"); w != 0 {
		t.Fatalf("after waiting, wait = %v", w)
	}
	th.Succeed("k")
	th.Fail("k")
	if w := th.Wait("k"); w != 0 {
		t.Fatalf("after success the count must restart, wait = %v", w)
	}
}

func TestThrottleMemoryIsBounded(t *testing.T) {
	now := time.Unix(1000, 0)
	th := account.NewThrottle()
	th.Now = func() time.Time { return now }
	th.MaxKeys = 1000
	// One key held back before the spray.
	for i := 0; i <= th.Free; i++ {
		th.Fail("victim")
	}
	long := strings.Repeat("n", 1024)
	for i := 0; i < 20*th.MaxKeys; i++ {
		th.Fail(long + strconv.Itoa(i))
		if n := th.Len(); n > th.MaxKeys {
			t.Fatalf("after %d keys the throttle holds %d, more than %d", i+1, n, th.MaxKeys)
		}
	}
	if th.Wait("victim") == 0 {
		t.Fatal("a spray of one-off keys freed a key that was being held back")
	}
}

// FailDistinct counts a key's names, not its attempts: one name failing a
// hundred times makes no wait, the Free+1st different name does, and a
// name seen before counts again once the key has tried more names than it
// remembers (stricter, never looser).
func TestThrottleFailDistinctCountsNames(t *testing.T) {
	now := time.Unix(1000, 0)
	th := account.NewThrottle()
	th.Free = 20
	th.Now = func() time.Time { return now }
	for range 100 {
		th.FailDistinct("addr", "admin")
	}
	if w := th.Wait("addr"); w != 0 {
		t.Fatalf("one name failing 100 times: wait %v, want none", w)
	}
	for i := 1; i < th.Free; i++ {
		th.FailDistinct("addr", "user"+strconv.Itoa(i))
		th.FailDistinct("addr", "admin")
	}
	if w := th.Wait("addr"); w != 0 {
		t.Fatalf("after %d names: wait %v, want none", th.Free, w)
	}
	th.FailDistinct("addr", "one-more")
	if w := th.Wait("addr"); w != time.Second {
		t.Fatalf("after %d names: wait %v, want 1s", th.Free+1, w)
	}
	for i := range 40 {
		th.FailDistinct("addr", "more"+strconv.Itoa(i))
	}
	now = now.Add(th.Max)
	th.FailDistinct("addr", "admin") // forgotten among the last 32 names: counts
	if w := th.Wait("addr"); w != th.Max {
		t.Fatalf("a name older than the remembered ones: wait %v, want %v", w, th.Max)
	}
	// Forget still forgets.
	now = now.Add(th.Forget + time.Second)
	th.FailDistinct("addr", "admin")
	if w := th.Wait("addr"); w != 0 {
		t.Fatalf("after Forget: wait %v, want none", w)
	}
}

// kmirror's own hashes cost bcrypt's default: UseTestHashCost is for other
// packages' test binaries only, and this one never calls it.
func TestHashUsesTheDefaultCost(t *testing.T) {
	h, err := account.Hash("a-password-1")
	if err != nil {
		t.Fatal(err)
	}
	if cost, err := bcrypt.Cost([]byte(h)); err != nil || cost != bcrypt.DefaultCost {
		t.Fatalf("hash cost %d (%v), want %d", cost, err, bcrypt.DefaultCost)
	}
}

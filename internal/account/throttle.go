package account

import (
	"crypto/sha256"
	"slices"
	"sync"
	"time"
)

// Throttle slows down password guessing. Each key (an account name, or a
// client address) gets a few free failures; after that every further
// attempt must wait twice as long as the last, up to a cap: a key is held
// back, never locked for good, and the right password works again once the
// wait is over. A success forgets the key. It is in memory: a restart
// forgives, which is fine for a console that also needs the attacker to
// beat bcrypt.
//
// Fail counts every failure; FailDistinct counts only the failures of names
// the key has not failed with lately, for an address that many people may
// share (see FailDistinct).
//
// Its memory is bounded whatever is sent: keys are kept as fixed-size
// digests, and at most MaxKeys of them; past that the ones not holding
// anybody back are dropped first.
type Throttle struct {
	// Free is how many failures pass without a wait.
	Free int
	// Base is the wait after the first failure past Free; it doubles each time.
	Base time.Duration
	// Max caps the wait.
	Max time.Duration
	// Forget drops a key this long after its last failure.
	Forget time.Duration
	// MaxKeys caps how many keys are remembered.
	MaxKeys int
	// Now is the clock; tests set it.
	Now func() time.Time

	mu   sync.Mutex
	keys map[keyDigest]*attempts
}

// keyDigest keeps a key's memory the same whatever its length.
type keyDigest [16]byte

func digest(key string) keyDigest {
	sum := sha256.Sum256([]byte(key))
	return keyDigest(sum[:16])
}

type attempts struct {
	failures int
	last     time.Time
	until    time.Time // no attempt before this
	// names are FailDistinct's last distinct names, a ring of digests of
	// which the first held are in use and next is where the next goes; nil
	// for a key only Fail counts.
	names      *[distinctNames]uint32
	held, next int
}

// distinctNames is how many of a key's names FailDistinct remembers: more
// than an address's Free, so that up to the wait one name is counted once.
// A name older than that counts again, which only makes a key that tried
// so many names wait sooner.
const distinctNames = 32

// DefaultMaxKeys bounds a throttle's memory to about a megabyte (two and a
// half for keys that FailDistinct counts).
const DefaultMaxKeys = 10000

// NewThrottle returns a Throttle with defaults fit for a sign-in form: five
// free failures, then 1 s, 2 s, 4 s ... up to 5 minutes.
func NewThrottle() *Throttle {
	return &Throttle{Free: 5, Base: time.Second, Max: 5 * time.Minute, Forget: 15 * time.Minute, MaxKeys: DefaultMaxKeys, Now: time.Now}
}

// Wait returns how long key must still wait before its next attempt; 0 means
// it may try now.
func (t *Throttle) Wait(key string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	a := t.keys[digest(key)]
	if a == nil {
		return 0
	}
	if d := a.until.Sub(t.Now()); d > 0 {
		return d
	}
	return 0
}

// Fail records a failed attempt for key.
func (t *Throttle) Fail(key string) { t.fail(key, "", false) }

// FailDistinct records a failed attempt for key with name (the account
// tried), counted only when key has not failed with name lately (among its
// last 32 names, within Forget): key then waits after Free different
// names, however often each was tried. It is meant for a client address,
// which a proxy or a NAT may give many users at once: counted per attempt,
// one person mistyping a password, or an attacker hammering one account,
// would make everyone behind that address wait, while what an address
// limit is for is a client trying many accounts (password spraying, or
// guessing which names exist). The attempts on one account are that
// account's throttle's business.
func (t *Throttle) FailDistinct(key, name string) { t.fail(key, name, true) }

func (t *Throttle) fail(key, name string, distinct bool) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.Now()
	if t.keys == nil {
		t.keys = map[keyDigest]*attempts{}
	}
	k := digest(key)
	a := t.keys[k]
	if a == nil {
		t.makeRoom(now)
	}
	if a == nil || now.Sub(a.last) > t.Forget {
		a = &attempts{}
		t.keys[k] = a
	}
	if distinct {
		n := digest(name)
		h := uint32(n[0]) | uint32(n[1])<<8 | uint32(n[2])<<16 | uint32(n[3])<<24
		if a.names == nil {
			a.names = new([distinctNames]uint32)
		}
		if slices.Contains(a.names[:a.held], h) {
			a.last = now // still trying: remembered as long as it goes on
			return
		}
		a.names[a.next] = h
		a.next = (a.next + 1) % distinctNames
		a.held = min(a.held+1, distinctNames)
	}
	a.failures++
	a.last = now
	if over := a.failures - t.Free; over > 0 {
		wait := t.Max
		if over < 30 {
			wait = min(t.Base<<(over-1), t.Max)
		}
		a.until = now.Add(wait)
	}
}

// Succeed forgets key.
func (t *Throttle) Succeed(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.keys, digest(key))
}

// Len is how many keys are remembered.
func (t *Throttle) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.keys)
}

// makeRoom keeps the map under MaxKeys before a new key goes in: forgotten
// keys go first, then keys not making anyone wait, then any (a spray from
// very many addresses can then free a key early, but never grow memory).
func (t *Throttle) makeRoom(now time.Time) {
	limit := t.MaxKeys
	if limit <= 0 {
		limit = DefaultMaxKeys
	}
	if len(t.keys) < limit {
		return
	}
	for k, a := range t.keys {
		if now.Sub(a.last) > t.Forget {
			delete(t.keys, k)
		}
	}
	// Drop a tenth at a time so a full map is not swept on every failure.
	target := limit - limit/10
	for k, a := range t.keys {
		if len(t.keys) <= target {
			return
		}
		if !a.until.After(now) {
			delete(t.keys, k)
		}
	}
	for k := range t.keys {
		if len(t.keys) <= target {
			return
		}
		delete(t.keys, k)
	}
}

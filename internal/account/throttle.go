package account

import (
	"sync"
	"time"
)

// Throttle slows down password guessing. Each key (a user name with the
// client's address, or an address alone) gets a few free failures; after that
// every further attempt must wait twice as long as the last, up to a cap. A
// success forgets the key. It is in memory: a restart forgives, which is fine
// for a console that also needs the attacker to beat bcrypt.
type Throttle struct {
	// Free is how many failures pass without a wait.
	Free int
	// Base is the wait after the first failure past Free; it doubles each time.
	Base time.Duration
	// Max caps the wait.
	Max time.Duration
	// Forget drops a key this long after its last failure.
	Forget time.Duration
	// Now is the clock; tests set it.
	Now func() time.Time

	mu   sync.Mutex
	keys map[string]*attempts
}

type attempts struct {
	failures int
	last     time.Time
	until    time.Time // no attempt before this
}

// NewThrottle returns a Throttle with defaults fit for a sign-in form: five
// free failures, then 1 s, 2 s, 4 s ... up to 5 minutes.
func NewThrottle() *Throttle {
	return &Throttle{Free: 5, Base: time.Second, Max: 5 * time.Minute, Forget: 15 * time.Minute, Now: time.Now}
}

// Wait returns how long key must still wait before its next attempt; 0 means
// it may try now.
func (t *Throttle) Wait(key string) time.Duration {
	t.mu.Lock()
	defer t.mu.Unlock()
	a := t.keys[key]
	if a == nil {
		return 0
	}
	if d := a.until.Sub(t.Now()); d > 0 {
		return d
	}
	return 0
}

// Fail records a failed attempt for key.
func (t *Throttle) Fail(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	now := t.Now()
	if t.keys == nil {
		t.keys = map[string]*attempts{}
	}
	if len(t.keys) > 10000 {
		t.prune(now) // bound memory under a spray of addresses
	}
	a := t.keys[key]
	if a == nil || now.Sub(a.last) > t.Forget {
		a = &attempts{}
		t.keys[key] = a
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
	delete(t.keys, key)
}

func (t *Throttle) prune(now time.Time) {
	for k, a := range t.keys {
		if now.Sub(a.last) > t.Forget {
			delete(t.keys, k)
		}
	}
}

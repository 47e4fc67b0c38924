package player

import (
	"crypto/sha256"
	"sync"
	"time"
)

// tokenCache keeps verified tokens by the SHA-256 of their bytes, each until
// its exp (plus skew) and only for the key generation that verified it. A
// hit costs a hash and a map read instead of a signature check. Full, it
// drops one arbitrary entry per insert (Go's map order): bounded memory, no
// bookkeeping on the hit path.
type tokenCache struct {
	max int
	mu  sync.RWMutex
	m   map[[sha256.Size]byte]cached
}

type cached struct {
	c     Claims
	gen   uint64
	until time.Time
}

func newTokenCache(max int) *tokenCache {
	return &tokenCache{max: max, m: make(map[[sha256.Size]byte]cached)}
}

func (t *tokenCache) get(h [sha256.Size]byte, gen uint64, now time.Time) (Claims, bool) {
	t.mu.RLock()
	e, ok := t.m[h]
	t.mu.RUnlock()
	if !ok || e.gen != gen || !now.Before(e.until) {
		return Claims{}, false
	}
	return e.c, true
}

func (t *tokenCache) put(h [sha256.Size]byte, e cached) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if _, ok := t.m[h]; !ok && len(t.m) >= t.max {
		for k := range t.m {
			delete(t.m, k)
			break
		}
	}
	t.m[h] = e
}

func (t *tokenCache) clear() {
	t.mu.Lock()
	clear(t.m)
	t.mu.Unlock()
}

package store

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/rankgate/rankgate/internal/shard"
)

// Lease is a named lease in Redis with a fencing token: one holder at a
// time, the holder's claim expiring after ttl unless renewed. Each
// acquisition takes a new, larger token, so work stamped with a token can be
// told from a newer holder's. Safe for concurrent use.
type Lease struct {
	s     *Store
	keys  shard.LeaseKeys
	owner string
	ttl   time.Duration

	mu    sync.Mutex
	token int64 // held token, 0: not held
}

// NewLease returns the lease at keys for owner (a unique id of this process,
// without spaces). ttl is how long a claim lives without renewal.
func (s *Store) NewLease(keys shard.LeaseKeys, owner string, ttl time.Duration) *Lease {
	return &Lease{s: s, keys: keys, owner: owner, ttl: ttl}
}

// Hold takes the lease or renews it; it returns the fencing token while this
// owner holds the lease and 0 while another does.
func (l *Lease) Hold(ctx context.Context) (int64, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	ctx, cancel := l.s.deadline(ctx)
	defer cancel()
	ttl := strconv.FormatInt(l.ttl.Milliseconds(), 10)
	keys := []string{l.keys.Owner, l.keys.Fence}
	if l.token != 0 {
		ok, err := leaseScript.Run(ctx, l.s.rw, keys, "renew", l.owner, l.token, ttl).Int64()
		if err != nil {
			return 0, l.s.fail("lease", fmt.Errorf("renewing lease %s: %w", l.keys.Owner, err))
		}
		if ok == 1 {
			return l.token, nil
		}
		l.token = 0 // lost it (expired, maybe taken): try afresh
	}
	tok, err := leaseScript.Run(ctx, l.s.rw, keys, "acquire", l.owner, 0, ttl).Int64()
	if err != nil {
		return 0, l.s.fail("lease", fmt.Errorf("acquiring lease %s: %w", l.keys.Owner, err))
	}
	l.token = tok
	return tok, nil
}

// Release gives the lease up if this owner holds it.
func (l *Lease) Release(ctx context.Context) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.token == 0 {
		return nil
	}
	ctx, cancel := l.s.deadline(ctx)
	defer cancel()
	err := leaseScript.Run(ctx, l.s.rw, []string{l.keys.Owner, l.keys.Fence}, "release", l.owner, l.token, 0).Err()
	l.token = 0
	return l.s.fail("lease", err)
}

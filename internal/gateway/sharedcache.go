package gateway

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash/fnv"
	"strconv"
	"sync"
	"time"

	"github.com/rankgate/rankgate/internal/cache"
)

// The shared cache level (family option cache_shared): a cached answer is
// also kept in Redis, under the board's own hash tag, as "<stored-at unix
// ms>\n<JSON>" for 2 × cache_ttl. A copy younger than cache_ttl is served by
// every gateway. When it is older, one gateway — the one that takes the
// lease (SET NX PX) — recomputes it with a fan-out and stores it; the others
// serve the previous copy meanwhile, or, with no copy at all, wait briefly
// for the new one (then compute it themselves rather than wait longer). N
// gateways so cost about one fan-out per TTL per hot query, not N.
//
// With CacheServeStale, the gateway that takes the lease while a previous
// copy is still there (it is kept for 2 × cache_ttl) serves that copy too
// and recomputes in the background (detached from the request, bounded by
// sharedRefreshTimeout); a recompute the local cache runs as its own
// background refresh (cache.Refreshing) computes in place. Either way no
// reader waits for the fan-out while a copy exists.

// sharedWait bounds how long a gateway without any copy waits for the lease
// holder's, and sharedPoll is how often it looks.
const (
	sharedWait = 200 * time.Millisecond
	sharedPoll = 5 * time.Millisecond

	// sharedRefreshTimeout bounds a background recompute of the shared
	// level (as cache.DefaultLoadTimeout bounds the local cache's), and
	// sharedRefreshLogEvery how often its failures are logged.
	sharedRefreshTimeout  = cache.DefaultLoadTimeout
	sharedRefreshLogEvery = 10 * time.Second
)

// rateLog lets a line through at most once per interval and counts the
// ones it held back.
type rateLog struct {
	mu      sync.Mutex
	last    time.Time
	dropped int
}

// allow reports whether to log at now, and how many lines were held back
// since the last one let through.
func (r *rateLog) allow(now time.Time, every time.Duration) (bool, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.last.IsZero() && now.Sub(r.last) < every {
		r.dropped++
		return false, 0
	}
	n := r.dropped
	r.last, r.dropped = now, 0
	return true, n
}

// sharedKeys returns the copy and lease keys of a cache key on rc's board.
func (s *Service) sharedKeys(rc *readCtx, key string) (copyKey, leaseKey string) {
	h := fnv.New64a()
	_, _ = h.Write([]byte(key))
	q := strconv.FormatUint(h.Sum64(), 16)
	return s.layout.SharedCache(rc.b.b, rc.b.n, q), s.layout.SharedLease(rc.b.b, rc.b.n, q)
}

// sharedCopy is a decoded copy from Redis.
type sharedCopy[V metaOf] struct {
	v  V
	at time.Time
}

// served is the copy as an answer: from the cache, as of its date.
func (c sharedCopy[V]) served() (V, time.Time, error) {
	m := readMeta(&c.v)
	m.Source, m.AsOf = SourceCache, c.at.UTC()
	return c.v, c.at, nil
}

func encodeShared[V metaOf](v *V, at time.Time) ([]byte, error) {
	body, err := json.Marshal(v)
	if err != nil {
		return nil, err
	}
	out := strconv.AppendInt(nil, at.UnixMilli(), 10)
	out = append(out, '\n')
	return append(out, body...), nil
}

func decodeShared[V metaOf](b []byte) (sharedCopy[V], error) {
	var c sharedCopy[V]
	i := 0
	for i < len(b) && b[i] != '\n' {
		i++
	}
	if i == len(b) {
		return c, errors.New("shared cache: malformed copy")
	}
	ms, err := strconv.ParseInt(string(b[:i]), 10, 64)
	if err != nil {
		return c, fmt.Errorf("shared cache: malformed stamp: %w", err)
	}
	if err := json.Unmarshal(b[i+1:], &c.v); err != nil {
		return c, fmt.Errorf("shared cache: %w", err)
	}
	c.at = time.UnixMilli(ms)
	return c, nil
}

// readShared returns the copy at copyKey, if any; a copy that cannot be
// read counts as absent (it is replaced by the next recompute).
func readShared[V metaOf](ctx context.Context, s *Service, fam, copyKey string) (sharedCopy[V], bool) {
	cctx, cancel := context.WithTimeout(ctx, s.timeout)
	defer cancel()
	b, ok, err := s.readBE.SharedGet(cctx, copyKey)
	if err != nil || !ok {
		if err != nil {
			s.m.shared.WithLabelValues(fam, "error").Inc()
		}
		return sharedCopy[V]{}, false
	}
	c, err := decodeShared[V](b)
	if err != nil {
		s.m.shared.WithLabelValues(fam, "error").Inc()
		return sharedCopy[V]{}, false
	}
	return c, true
}

// loadShared is the local cache's loader under cache_shared: it answers
// from the shared copy when fresh, else recomputes under the lease, else
// serves the previous copy or waits for the new one. It returns the answer
// and when it was made (a copy's answer says source cache, as of its date).
func loadShared[V metaOf](ctx context.Context, s *Service, rc *readCtx, key string, ttl time.Duration,
	compute func(ctx context.Context, rc *readCtx) (V, error)) (V, time.Time, error) {
	fam := rc.b.fam.cfg.Name
	copyKey, leaseKey := s.sharedKeys(rc, key)
	fresh := func(c sharedCopy[V]) bool { return s.now().Sub(c.at) < ttl }
	prev, havePrev := readShared[V](ctx, s, fam, copyKey)
	if havePrev && fresh(prev) {
		s.m.shared.WithLabelValues(fam, "hit").Inc()
		return prev.served()
	}
	var token [8]byte
	_, _ = rand.Read(token[:])
	lctx, cancel := context.WithTimeout(ctx, s.timeout)
	won, err := s.readBE.SharedLease(lctx, leaseKey, hex.EncodeToString(token[:]), ttl)
	cancel()
	own := won // this gateway holds the lease (and releases it)
	if err != nil {
		// Redis did not answer the lease: compute alone, as without the level.
		s.m.shared.WithLabelValues(fam, "error").Inc()
		won = true
	}
	if won && err == nil {
		// Another gateway may have stored a copy and released its lease
		// between our first look and our lease: look again.
		if c, ok := readShared[V](ctx, s, fam, copyKey); ok && fresh(c) {
			rctx, cancel := context.WithTimeout(ctx, s.timeout)
			_ = s.readBE.SharedRelease(rctx, leaseKey)
			cancel()
			s.m.shared.WithLabelValues(fam, "hit").Inc()
			return c.served()
		}
	}
	if !won {
		if havePrev {
			s.m.shared.WithLabelValues(fam, "stale").Inc()
			return prev.served()
		}
		t := time.NewTicker(sharedPoll)
		defer t.Stop()
		deadline := time.NewTimer(sharedWait)
		defer deadline.Stop()
	wait:
		for {
			select {
			case <-ctx.Done():
				var zero V
				return zero, time.Time{}, ctx.Err()
			case <-deadline.C:
				break wait
			case <-t.C:
				if c, ok := readShared[V](ctx, s, fam, copyKey); ok && fresh(c) {
					s.m.shared.WithLabelValues(fam, "waited").Inc()
					return c.served()
				}
			}
		}
		s.m.shared.WithLabelValues(fam, "fallback").Inc()
	} else if own && havePrev && s.serveStale && !cache.Refreshing(ctx) {
		// Serve the previous copy; recompute it in the background under
		// the lease this gateway holds.
		s.m.shared.WithLabelValues(fam, "refresh").Inc()
		brc := *rc
		brc.pb = nil
		bctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), sharedRefreshTimeout)
		go func() {
			defer cancel()
			if _, _, err := computeShared(bctx, s, &brc, fam, copyKey, leaseKey, own, ttl, compute); err != nil {
				s.m.shared.WithLabelValues(fam, "refresh_error").Inc()
				if ok, dropped := s.sharedRefreshLog.allow(s.now(), sharedRefreshLogEvery); ok {
					s.log.Warn("shared cache: background recompute failed; the copy expires and the next read recomputes",
						"family", fam, "key", key, "err", err, "not_logged_since_last", dropped)
				}
				// The lease expires by itself (ttl): another gateway may try.
			}
		}()
		return prev.served()
	} else {
		s.m.shared.WithLabelValues(fam, "computed").Inc()
	}
	return computeShared(ctx, s, rc, fam, copyKey, leaseKey, own, ttl, compute)
}

// computeShared fans out and stores the answer as the shared copy (unless
// partial), releasing the lease when this gateway holds it (own).
func computeShared[V metaOf](ctx context.Context, s *Service, rc *readCtx, fam, copyKey, leaseKey string, own bool, ttl time.Duration,
	compute func(ctx context.Context, rc *readCtx) (V, error)) (V, time.Time, error) {
	at := s.now()
	v, err := compute(ctx, rc)
	if err != nil {
		var zero V
		return zero, time.Time{}, err
	}
	if !readMeta(&v).Partial { // never shared, like never cached
		if b, err := encodeShared(&v, at); err == nil {
			sctx, cancel := context.WithTimeout(ctx, s.timeout)
			if err := s.readBE.SharedSet(sctx, copyKey, b, 2*ttl); err != nil {
				s.m.shared.WithLabelValues(fam, "error").Inc()
			}
			if own {
				// The copy is there: the next recompute is due in a TTL.
				_ = s.readBE.SharedRelease(sctx, leaseKey)
			}
			cancel()
		}
	}
	return v, at, nil
}

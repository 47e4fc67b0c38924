// Package cache is rankgate's best-effort read cache for hot leaderboard
// reads.
//
// A Cache is an expirable LRU plus singleflight: a fresh value is served from
// memory, and concurrent misses on one key share a single load, so a stampede
// on a hot board costs one fan-out per TTL per gateway.
//
// Rules the cache keeps:
//   - Freshness is decided with the injected clock (Options.Now); the LRU's own
//     TTL (Options.MaxTTL, real time) is only a backstop that reclaims memory.
//   - Errors and uncacheable (partial) answers go back to the callers that
//     shared the load and are never stored.
//   - A ttl <= 0 disables caching for that call.
//   - The shared load runs detached from every caller: a caller that gives up
//     gets its own ctx.Err(), the others (and the store) are unaffected.
//   - The cache never turns a successful load into an error.
//   - With Options.ServeStale, an entry past its ttl but younger than 2 × ttl
//     is served (Result.Stale, with its own older StoredAt) while exactly one
//     background refresh runs; past 2 × ttl, or after that refresh failed, a
//     caller waits like a miss. Readers so get answers at most ttl + one
//     refresh (bounded by another ttl) old, and no caller of a hot key waits
//     for a refresh.
//
// It must not import Redis, net/http or any other rankgate package.
package cache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"runtime/debug"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/golang-lru/v2/expirable"
	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/sync/singleflight"
)

// Defaults applied by New to zero-valued Options fields.
const (
	DefaultSize        = 10000
	DefaultMaxTTL      = time.Minute
	DefaultLoadTimeout = 5 * time.Second

	// refreshLogEvery bounds how often failed background refreshes are
	// logged (the others are counted, and the next log line says how many
	// were left out).
	refreshLogEvery = 10 * time.Second
)

// ErrLoadPanicked is wrapped by the error returned to the callers of a shared
// load that panicked. The shared load runs on a goroutine no caller owns, where
// an unrecovered panic would crash the process, so it is recovered, logged with
// its stack and returned as an error instead.
var ErrLoadPanicked = errors.New("cache: load panicked")

// errNilLoad is returned by Get when it is called without a load function.
var errNilLoad = errors.New("cache: nil load function")

// Options configures a Cache. The zero value is usable.
type Options struct {
	// Size is the maximum number of entries (LRU bound). 0 means DefaultSize.
	Size int
	// MaxTTL is the upper bound of any per-call TTL (longer TTLs are
	// clamped) and the expirable LRU's own real-time TTL, a backstop that
	// frees stale entries. 0 means DefaultMaxTTL.
	MaxTTL time.Duration
	// Now is the clock used for freshness and Result.StoredAt. nil means
	// time.Now.
	Now func() time.Time
	// LoadTimeout bounds a shared load, which runs detached from the
	// callers' cancellation. 0 means DefaultLoadTimeout.
	LoadTimeout time.Duration
	// Registerer receives the cache's metrics; nil registers nothing.
	// Registering two caches on the same Registerer fails (the metric names
	// collide) and New returns that error: give each cache its own registry,
	// or wrap it with prometheus.WrapRegistererWith and a distinguishing
	// label.
	Registerer prometheus.Registerer
	// Logger logs recovered load panics and (at most once per 10 s)
	// failed background refreshes; nil discards.
	Logger *slog.Logger
	// ServeStale turns on stale-while-revalidate: an entry in [ttl, 2·ttl)
	// is served at once, marked Result.Stale and dated by its own StoredAt,
	// while one background refresh (a load detached from the caller's
	// cancellation, bounded by LoadTimeout) replaces it. Past 2·ttl, or when
	// the refresh failed, callers wait like on a miss. The LRU backstop then
	// keeps entries for 2 × MaxTTL.
	ServeStale bool
}

func (o Options) withDefaults() (Options, error) {
	if o.Size < 0 {
		return o, fmt.Errorf("cache: Size must be >= 0, got %d", o.Size)
	}
	if o.MaxTTL < 0 {
		return o, fmt.Errorf("cache: MaxTTL must be >= 0, got %s", o.MaxTTL)
	}
	if o.LoadTimeout < 0 {
		return o, fmt.Errorf("cache: LoadTimeout must be >= 0, got %s", o.LoadTimeout)
	}
	if o.Size == 0 {
		o.Size = DefaultSize
	}
	if o.MaxTTL == 0 {
		o.MaxTTL = DefaultMaxTTL
	}
	if o.LoadTimeout == 0 {
		o.LoadTimeout = DefaultLoadTimeout
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return o, nil
}

// Result says how a value was obtained.
type Result struct {
	// Hit is true when the value was served from the cache.
	Hit bool
	// Shared is true when the value (or error) came from a load started by
	// another caller of the same key.
	Shared bool
	// Stale is true when the value is past its ttl (but within 2 × ttl) and
	// served while a background refresh runs (Options.ServeStale). Hit is
	// true as well.
	Stale bool
	// StoredAt is when the value was loaded (the load's start time, by the
	// injected clock): the answer is at least this fresh. Use it for "as_of"
	// and Cache-Control max-age. Zero when an error is returned.
	StoredAt time.Time
}

// LoadFunc loads the value for a key. cacheable=false marks an answer that
// may be returned but must not be stored (e.g. a partial result).
type LoadFunc[V any] func(ctx context.Context) (value V, cacheable bool, err error)

// Cache is a best-effort, size-bounded read cache with per-call TTLs and
// singleflight loads. It is safe for concurrent use.
type Cache[V any] struct {
	lru         *expirable.LRU[entryKey, *entry[V]]
	group       singleflight.Group
	now         func() time.Time
	maxTTL      time.Duration
	loadTimeout time.Duration
	logger      *slog.Logger
	metrics     *metrics
	serveStale  bool

	// refreshLog rate-limits the log lines of failed background refreshes.
	refreshLog struct {
		sync.Mutex
		last    time.Time
		dropped int
	}

	// purging is > 0 while Purge runs, so its removals are not counted as
	// evictions.
	purging atomic.Int32

	// testHookJoined, if set, is called by Get after it has joined (or
	// started) a shared load and before it waits for it. Tests only.
	testHookJoined func()
	// testHookRefreshed, if set, is called when a background refresh has
	// ended (its entry's flags updated). Tests only.
	testHookRefreshed func()
}

// entryKey is the LRU key. The family is part of it, so equal keys of two
// families never serve each other's values, and the eviction callback knows
// which family to count.
type entryKey struct {
	family, key string
}

type entry[V any] struct {
	value     V
	storedAt  time.Time
	expiresAt time.Time

	// refreshing is set by the one caller that starts the entry's
	// background refresh (ServeStale) and cleared when it ends; failed is
	// set when that refresh returned an error, so callers then wait like on
	// a miss instead of being served this entry again. A successful load
	// replaces the entry (and with it both flags).
	refreshing atomic.Bool
	failed     atomic.Bool
}

// loaded is what a shared load hands to every caller that waited on it.
type loaded[V any] struct {
	value    V
	storedAt time.Time
	hit      bool // found fresh in the cache when the flight started
}

// refreshKey marks the context of a background refresh (see Refreshing).
type refreshKey struct{}

// Refreshing reports whether ctx is that of a background refresh: the load
// runs while callers are served the previous value, so it may take its time
// (wait for a lease, compute) rather than hand back a stale copy of its own.
func Refreshing(ctx context.Context) bool {
	v, _ := ctx.Value(refreshKey{}).(bool)
	return v
}

// New builds a Cache. It returns an error for invalid options or when the
// metrics cannot be registered (for example, on a Registerer that already
// holds another cache's metrics).
//
// The expirable LRU starts a cleanup goroutine that lives as long as the
// process (golang-lru v2 has no Close); create caches at startup, not per
// request.
func New[V any](opts Options) (*Cache[V], error) {
	opts, err := opts.withDefaults()
	if err != nil {
		return nil, err
	}
	c := &Cache[V]{
		now:         opts.Now,
		maxTTL:      opts.MaxTTL,
		loadTimeout: opts.LoadTimeout,
		logger:      opts.Logger,
		serveStale:  opts.ServeStale,
	}
	backstop := opts.MaxTTL
	if opts.ServeStale {
		backstop = 2 * opts.MaxTTL
	}
	c.lru = expirable.NewLRU(opts.Size, c.onEvict, backstop)
	c.metrics = newMetrics(c.Len, opts.ServeStale)
	if err := c.metrics.register(opts.Registerer); err != nil {
		return nil, err
	}
	return c, nil
}

// Get returns the cached value for key if it is fresh (younger than ttl, and
// than the ttl it was stored with); otherwise it runs load once for all
// concurrent callers of the same family and key (singleflight).
//
// ttl <= 0 disables caching for this call: load runs directly on the caller's
// ctx, without singleflight, and nothing is stored. ttl > MaxTTL is clamped.
//
// A shared load runs with context.WithoutCancel(ctx) bounded by LoadTimeout,
// where ctx is that of the caller that started it: a caller whose ctx ends
// while waiting gets ctx.Err(), and the load carries on for the others (and
// is stored if it succeeds). Errors and !cacheable values are returned to the
// callers that shared the load, never stored. family labels the metrics and
// scopes the key.
func (c *Cache[V]) Get(ctx context.Context, family, key string, ttl time.Duration, load LoadFunc[V]) (V, Result, error) {
	if load == nil {
		var zero V
		return zero, Result{}, errNilLoad
	}
	return c.GetAt(ctx, family, key, ttl, load.dated())
}

// dated is load as a LoadAtFunc whose values are made when loaded.
func (load LoadFunc[V]) dated() LoadAtFunc[V] {
	return func(ctx context.Context) (V, time.Time, bool, error) {
		v, cacheable, err := load(ctx)
		return v, time.Time{}, cacheable, err
	}
}

// LoadAtFunc is a LoadFunc that also says when its value was made. A value
// copied from an older source (a cache level shared between processes) is
// fresh until storedAt + ttl, not load time + ttl; a zero storedAt means
// the load's start.
type LoadAtFunc[V any] func(ctx context.Context) (value V, storedAt time.Time, cacheable bool, err error)

// GetAt is Get with a loader that dates its value (LoadAtFunc).
func (c *Cache[V]) GetAt(ctx context.Context, family, key string, ttl time.Duration, load LoadAtFunc[V]) (V, Result, error) {
	var zero V
	if load == nil {
		return zero, Result{}, errNilLoad
	}
	if ttl <= 0 {
		storedAt := c.now()
		v, at, _, err := load(ctx)
		if err != nil {
			return zero, Result{}, err
		}
		if !at.IsZero() {
			storedAt = at
		}
		return v, Result{StoredAt: storedAt}, nil
	}
	ttl = min(ttl, c.maxTTL)
	fm := c.metrics.family(family)
	k := entryKey{family: family, key: key}

	if e, ok := c.fresh(k, ttl); ok {
		fm.hit.Inc()
		return e.value, Result{Hit: true, StoredAt: e.storedAt}, nil
	} else if e != nil {
		// Stale but servable: serve it, and start the one refresh.
		if e.refreshing.CompareAndSwap(false, true) {
			c.refresh(ctx, fm, k, e, ttl, load)
		}
		fm.hit.Inc()
		fm.stale.Inc()
		return e.value, Result{Hit: true, Stale: true, StoredAt: e.storedAt}, nil
	}
	if err := ctx.Err(); err != nil {
		fm.miss.Inc()
		return zero, Result{}, err
	}

	// leader is written by the flight's goroutine only if this caller's
	// function is the one that runs; the channel receive below orders that
	// write before our read.
	leader := false
	ch := c.group.DoChan(flightKey(family, key), func() (any, error) {
		leader = true
		return c.runLoad(ctx, fm, k, ttl, load)
	})
	if hook := c.testHookJoined; hook != nil {
		hook()
	}

	select {
	case <-ctx.Done():
		fm.miss.Inc()
		return zero, Result{}, ctx.Err()
	case r := <-ch:
		res := Result{Shared: !leader}
		if res.Shared {
			fm.shared.Inc()
		}
		if r.Err != nil {
			fm.miss.Inc()
			return zero, res, r.Err
		}
		l, ok := r.Val.(loaded[V])
		if !ok { // unreachable: runLoad returns loaded[V] whenever err is nil
			fm.miss.Inc()
			return zero, res, fmt.Errorf("cache: internal: unexpected flight value %T", r.Val)
		}
		res.Hit, res.StoredAt = l.hit, l.storedAt
		if res.Hit {
			fm.hit.Inc()
		} else {
			fm.miss.Inc()
		}
		return l.value, res, nil
	}
}

// Len returns the number of entries held, including entries that are stale
// by the injected clock but not yet reclaimed by the LRU.
func (c *Cache[V]) Len() int { return c.lru.Len() }

// Purge removes every entry. Removals by Purge are not counted as evictions.
// Loads in flight are not affected and may store their result afterwards.
func (c *Cache[V]) Purge() {
	c.purging.Add(1)
	defer c.purging.Add(-1)
	c.lru.Purge()
}

// fresh returns the entry for k and true if it exists and is fresh at
// c.now() for a caller asking for ttl. With ServeStale, it returns the entry
// and false when the entry is stale but servable while a refresh runs: its
// age is under twice the shorter of its own ttl and ttl, and no refresh of it
// failed. Otherwise it returns nil, false.
func (c *Cache[V]) fresh(k entryKey, ttl time.Duration) (*entry[V], bool) {
	e, ok := c.lru.Get(k)
	if !ok || e == nil {
		return nil, false
	}
	now := c.now()
	if now.Before(e.expiresAt) && now.Before(e.storedAt.Add(ttl)) {
		return e, true
	}
	if !c.serveStale || e.failed.Load() {
		return nil, false
	}
	life := min(e.expiresAt.Sub(e.storedAt), ttl)
	if now.Before(e.storedAt.Add(2 * life)) {
		return e, false
	}
	return nil, false
}

// refresh starts the background refresh of the stale entry e, whose
// refreshing flag the caller has just set. The load runs as a shared flight
// (a caller that misses meanwhile joins it rather than loading again), on a
// context detached from the caller's cancellation and bounded by
// LoadTimeout, marked Refreshing. An error is counted, logged at a bounded
// rate and marks e failed; it never removes or replaces e. A value that is
// not stored (uncacheable, or already stale) leaves e as it is, so the next
// caller may start another refresh.
func (c *Cache[V]) refresh(ctx context.Context, fm *familyMetrics, k entryKey, e *entry[V], ttl time.Duration, load LoadAtFunc[V]) {
	fm.refreshes.Inc()
	rctx := context.WithValue(context.WithoutCancel(ctx), refreshKey{}, true)
	ch := c.group.DoChan(flightKey(k.family, k.key), func() (any, error) {
		return c.runLoad(rctx, fm, k, ttl, load)
	})
	go func() {
		r := <-ch
		if r.Err != nil {
			fm.refreshErrors.Inc()
			e.failed.Store(true)
			c.logRefreshError(k, r.Err)
		}
		e.refreshing.Store(false)
		if hook := c.testHookRefreshed; hook != nil {
			hook()
		}
	}()
}

// logRefreshError logs a failed background refresh, at most once per
// refreshLogEvery; the next line says how many were left out meanwhile.
func (c *Cache[V]) logRefreshError(k entryKey, err error) {
	l := &c.refreshLog
	l.Lock()
	now := c.now()
	if !l.last.IsZero() && now.Sub(l.last) < refreshLogEvery {
		l.dropped++
		l.Unlock()
		return
	}
	dropped := l.dropped
	l.last, l.dropped = now, 0
	l.Unlock()
	c.logger.Warn("cache refresh failed; the entry is served no more and the next read loads it",
		"family", k.family, "key", k.key, "err", err, "not_logged_since_last", dropped)
}

// runLoad is the body of a shared load. It never panics and always returns
// a loaded[V] when err is nil.
func (c *Cache[V]) runLoad(ctx context.Context, fm *familyMetrics, k entryKey, ttl time.Duration, load LoadAtFunc[V]) (any, error) {
	// A caller that missed just before the previous flight stored and
	// finished would otherwise load again.
	if e, ok := c.fresh(k, ttl); ok {
		return loaded[V]{value: e.value, storedAt: e.storedAt, hit: true}, nil
	}

	lctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.loadTimeout)
	defer cancel()
	start := c.now()
	v, at, cacheable, err := c.safeLoad(lctx, k, load)
	if err == nil && !at.IsZero() {
		start = at
	}
	switch {
	case err != nil:
		fm.errored.Inc()
		return nil, err
	case !cacheable || !c.now().Before(start.Add(ttl)):
		fm.uncacheable.Inc()
	default:
		c.lru.Add(k, &entry[V]{value: v, storedAt: start, expiresAt: start.Add(ttl)})
		fm.stored.Inc()
	}
	return loaded[V]{value: v, storedAt: start}, nil
}

// safeLoad calls load, turning a panic into an error wrapping ErrLoadPanicked.
func (c *Cache[V]) safeLoad(ctx context.Context, k entryKey, load LoadAtFunc[V]) (v V, at time.Time, cacheable bool, err error) {
	defer func() {
		if r := recover(); r != nil {
			c.logger.Error("cache load panicked",
				"family", k.family, "key", k.key, "panic", r, "stack", string(debug.Stack()))
			var zero V
			v, at, cacheable, err = zero, time.Time{}, false, fmt.Errorf("%w: %v", ErrLoadPanicked, r)
		}
	}()
	return load(ctx)
}

// onEvict is the LRU's eviction callback. It runs under the LRU's lock for
// capacity evictions, backstop expiries and Purge; only the first two count.
// (Purge is flagged by c.purging; an expiry that the background cleanup
// happens to run at the very instant a Purge starts may go uncounted.)
func (c *Cache[V]) onEvict(k entryKey, _ *entry[V]) {
	if c.purging.Load() > 0 {
		return
	}
	c.metrics.family(k.family).evicted.Inc()
}

// flightKey scopes singleflight keys by family, like the LRU key. It
// allocates, so it is only built on a miss.
func flightKey(family, key string) string {
	return family + "\x00" + key
}

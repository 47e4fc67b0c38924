package cache

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

var errBoom = errors.New("boom")

// fakeClock is a manually advanced clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2030, 1, 2, 3, 4, 5, 0, time.UTC)}
}

func (f *fakeClock) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

func (f *fakeClock) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
}

// newTestCache builds a cache on its own pedantic registry.
func newTestCache(t *testing.T, opts Options) (*Cache[string], *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewPedanticRegistry()
	opts.Registerer = reg
	c, err := New[string](opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return c, reg
}

// countingLoad returns "<prefix><n>" for the n-th call (1-based), cacheable.
func countingLoad(calls *atomic.Int32, prefix string) LoadFunc[string] {
	return func(context.Context) (string, bool, error) {
		n := calls.Add(1)
		return fmt.Sprintf("%s%d", prefix, n), true, nil
	}
}

// value reads a counter or gauge. (prometheus/testutil is not used: it
// pulls a module that go.mod does not carry.)
func value(m prometheus.Metric) float64 {
	var pb dto.Metric
	if err := m.Write(&pb); err != nil {
		panic(err)
	}
	switch {
	case pb.Counter != nil:
		return pb.Counter.GetValue()
	case pb.Gauge != nil:
		return pb.Gauge.GetValue()
	}
	panic("value: not a counter or gauge")
}

func loadsMetric(c *Cache[string], family, outcome string) float64 {
	return value(c.metrics.loads.WithLabelValues(family, outcome))
}

// gatherText renders every sample in reg as sorted
// `name{label="v",...} value` lines, with the family's type.
func gatherText(t *testing.T, reg prometheus.Gatherer) string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	var lines []string
	for _, mf := range mfs {
		lines = append(lines, fmt.Sprintf("# TYPE %s %s", mf.GetName(), strings.ToLower(mf.GetType().String())))
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, lp := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", lp.GetName(), lp.GetValue()))
			}
			v := m.GetCounter().GetValue() + m.GetGauge().GetValue()
			name := mf.GetName()
			if len(labels) > 0 {
				name += "{" + strings.Join(labels, ",") + "}"
			}
			lines = append(lines, fmt.Sprintf("%s %g", name, v))
		}
	}
	return strings.Join(lines, "\n")
}

func TestGetTTL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		maxTTL   time.Duration
		storeTTL time.Duration
		readTTL  time.Duration
		advance  time.Duration
		wantHit  bool
	}{
		{name: "fresh at zero age", storeTTL: time.Second, readTTL: time.Second, advance: 0, wantHit: true},
		{name: "fresh just before ttl", storeTTL: time.Second, readTTL: time.Second, advance: time.Second - time.Nanosecond, wantHit: true},
		{name: "stale exactly at ttl", storeTTL: time.Second, readTTL: time.Second, advance: time.Second, wantHit: false},
		{name: "stale after ttl", storeTTL: time.Second, readTTL: time.Second, advance: 5 * time.Second, wantHit: false},
		{name: "shorter read ttl wins", storeTTL: 10 * time.Second, readTTL: time.Second, advance: time.Second, wantHit: false},
		{name: "longer read ttl does not extend stored ttl", storeTTL: time.Second, readTTL: 10 * time.Second, advance: time.Second, wantHit: false},
		{name: "ttl clamped to MaxTTL, fresh before", maxTTL: 2 * time.Second, storeTTL: time.Hour, readTTL: time.Hour, advance: 2*time.Second - 1, wantHit: true},
		{name: "ttl clamped to MaxTTL, stale at", maxTTL: 2 * time.Second, storeTTL: time.Hour, readTTL: time.Hour, advance: 2 * time.Second, wantHit: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clock := newFakeClock()
			c, _ := newTestCache(t, Options{MaxTTL: tt.maxTTL, Now: clock.Now})
			var calls atomic.Int32
			load := countingLoad(&calls, "v")
			ctx := context.Background()
			t0 := clock.Now()

			v, res, err := c.Get(ctx, "top", "k", tt.storeTTL, load)
			if err != nil || v != "v1" || res.Hit || res.Shared || !res.StoredAt.Equal(t0) {
				t.Fatalf("first Get = %q, %+v, %v; want v1, miss stored at %v", v, res, err, t0)
			}

			clock.Advance(tt.advance)
			v, res, err = c.Get(ctx, "top", "k", tt.readTTL, load)
			if err != nil {
				t.Fatalf("second Get: %v", err)
			}
			wantV, wantLoads, wantStoredAt := "v1", int32(1), t0
			if !tt.wantHit {
				wantV, wantLoads, wantStoredAt = "v2", 2, t0.Add(tt.advance)
			}
			if v != wantV || res.Hit != tt.wantHit || !res.StoredAt.Equal(wantStoredAt) {
				t.Errorf("second Get = %q, %+v; want %q, Hit=%v, StoredAt=%v", v, res, wantV, tt.wantHit, wantStoredAt)
			}
			if got := calls.Load(); got != wantLoads {
				t.Errorf("loads = %d, want %d", got, wantLoads)
			}
		})
	}
}

func TestGetLoadOutcomes(t *testing.T) {
	t.Parallel()
	type want struct {
		val string
		err error
		hit bool
	}
	tests := []struct {
		name       string
		ttl        time.Duration
		load       func(call int32) (string, bool, error) // call is 1-based
		want       []want                                 // one per Get
		wantLoads  int32
		wantLen    int
		wantMetric map[string]float64 // rankgate_cache_loads_total by outcome
	}{
		{
			name:       "cacheable value is stored and reused",
			ttl:        time.Second,
			load:       func(int32) (string, bool, error) { return "v", true, nil },
			want:       []want{{val: "v"}, {val: "v", hit: true}},
			wantLoads:  1,
			wantLen:    1,
			wantMetric: map[string]float64{"stored": 1},
		},
		{
			name:       "error is returned and not cached",
			ttl:        time.Second,
			load:       func(int32) (string, bool, error) { return "ignored", true, errBoom },
			want:       []want{{err: errBoom}, {err: errBoom}},
			wantLoads:  2,
			wantLen:    0,
			wantMetric: map[string]float64{"error": 2},
		},
		{
			name:       "uncacheable value is returned and not stored",
			ttl:        time.Second,
			load:       func(int32) (string, bool, error) { return "partial", false, nil },
			want:       []want{{val: "partial"}, {val: "partial"}},
			wantLoads:  2,
			wantLen:    0,
			wantMetric: map[string]float64{"uncacheable": 2},
		},
		{
			name: "error then success stores the success",
			ttl:  time.Second,
			load: func(call int32) (string, bool, error) {
				if call == 1 {
					return "", false, errBoom
				}
				return "v", true, nil
			},
			want:       []want{{err: errBoom}, {val: "v"}, {val: "v", hit: true}},
			wantLoads:  2,
			wantLen:    1,
			wantMetric: map[string]float64{"error": 1, "stored": 1},
		},
		{
			name:      "ttl zero bypasses the cache",
			ttl:       0,
			load:      func(int32) (string, bool, error) { return "v", true, nil },
			want:      []want{{val: "v"}, {val: "v"}},
			wantLoads: 2,
			wantLen:   0,
		},
		{
			name:      "negative ttl bypasses the cache",
			ttl:       -time.Second,
			load:      func(int32) (string, bool, error) { return "v", true, nil },
			want:      []want{{val: "v"}, {val: "v"}},
			wantLoads: 2,
			wantLen:   0,
		},
		{
			name:      "bypass returns load errors",
			ttl:       0,
			load:      func(int32) (string, bool, error) { return "ignored", true, errBoom },
			want:      []want{{err: errBoom}},
			wantLoads: 1,
			wantLen:   0,
		},
		{
			name:       "panic becomes an error and is not cached",
			ttl:        time.Second,
			load:       func(int32) (string, bool, error) { panic("kaboom") },
			want:       []want{{err: ErrLoadPanicked}, {err: ErrLoadPanicked}},
			wantLoads:  2,
			wantLen:    0,
			wantMetric: map[string]float64{"error": 2},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clock := newFakeClock()
			c, _ := newTestCache(t, Options{Now: clock.Now})
			var calls atomic.Int32
			load := func(context.Context) (string, bool, error) {
				return tt.load(calls.Add(1))
			}
			for i, w := range tt.want {
				v, res, err := c.Get(context.Background(), "top", "k", tt.ttl, load)
				if !errors.Is(err, w.err) || (w.err == nil && err != nil) {
					t.Fatalf("Get #%d error = %v, want %v", i+1, err, w.err)
				}
				if v != w.val || res.Hit != w.hit || res.Shared {
					t.Errorf("Get #%d = %q, %+v; want %q, Hit=%v, Shared=false", i+1, v, res, w.val, w.hit)
				}
				if err == nil && !res.StoredAt.Equal(clock.Now()) {
					t.Errorf("Get #%d StoredAt = %v, want %v", i+1, res.StoredAt, clock.Now())
				}
			}
			if got := calls.Load(); got != tt.wantLoads {
				t.Errorf("loads = %d, want %d", got, tt.wantLoads)
			}
			if got := c.Len(); got != tt.wantLen {
				t.Errorf("Len = %d, want %d", got, tt.wantLen)
			}
			for _, outcome := range []string{"stored", "error", "uncacheable"} {
				if got, want := loadsMetric(c, "top", outcome), tt.wantMetric[outcome]; got != want {
					t.Errorf("loads_total{outcome=%q} = %v, want %v", outcome, got, want)
				}
			}
		})
	}
}

type getOutcome struct {
	val string
	res Result
	err error
}

func TestGetSingleflight(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		callers   int
		cacheable bool
		loadErr   error
		wantLen   int
	}{
		{name: "100 concurrent misses share one stored load", callers: 100, cacheable: true, wantLen: 1},
		{name: "100 concurrent misses share one uncacheable load", callers: 100, cacheable: false, wantLen: 0},
		{name: "100 concurrent misses share one error", callers: 100, loadErr: errBoom, wantLen: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, _ := newTestCache(t, Options{Now: newFakeClock().Now})
			joined := make(chan struct{}, tt.callers)
			c.testHookJoined = func() { joined <- struct{}{} }

			var calls atomic.Int32
			started := make(chan struct{})
			release := make(chan struct{})
			load := func(context.Context) (string, bool, error) {
				if calls.Add(1) == 1 {
					close(started)
				}
				<-release
				return "v", tt.cacheable, tt.loadErr
			}

			out := make(chan getOutcome, tt.callers)
			get := func() {
				v, res, err := c.Get(context.Background(), "top", "hot", time.Second, load)
				out <- getOutcome{v, res, err}
			}
			go get()
			<-started // the first caller is inside load
			for range tt.callers - 1 {
				go get()
			}
			for range tt.callers {
				<-joined // every caller has joined the flight and is waiting
			}
			close(release)

			var shared int
			for range tt.callers {
				o := <-out
				if !errors.Is(o.err, tt.loadErr) || (tt.loadErr == nil && o.err != nil) {
					t.Fatalf("Get error = %v, want %v", o.err, tt.loadErr)
				}
				if tt.loadErr == nil && o.val != "v" {
					t.Errorf("Get = %q, want v", o.val)
				}
				if o.res.Hit {
					t.Errorf("Get Hit = true, want false")
				}
				if o.res.Shared {
					shared++
				}
			}
			if got := calls.Load(); got != 1 {
				t.Errorf("loads = %d, want 1", got)
			}
			if want := tt.callers - 1; shared != want {
				t.Errorf("callers with Shared = %d, want %d", shared, want)
			}
			if got, want := value(c.metrics.shared.WithLabelValues("top")), float64(tt.callers-1); got != want {
				t.Errorf("shared_loads_total = %v, want %v", got, want)
			}
			if got, want := value(c.metrics.requests.WithLabelValues("top", "miss")), float64(tt.callers); got != want {
				t.Errorf("requests_total{result=miss} = %v, want %v", got, want)
			}
			if got := c.Len(); got != tt.wantLen {
				t.Errorf("Len = %d, want %d", got, tt.wantLen)
			}
		})
	}
}

func TestGetCancellationIsolation(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name           string
		cancelLeader   bool
		cancelFollower bool
	}{
		{name: "leader gives up, follower gets the value", cancelLeader: true},
		{name: "follower gives up, leader gets the value", cancelFollower: true},
		{name: "everyone gives up, load still completes and stores", cancelLeader: true, cancelFollower: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, _ := newTestCache(t, Options{Now: newFakeClock().Now, LoadTimeout: time.Hour})
			joined := make(chan struct{}, 8)
			c.testHookJoined = func() { joined <- struct{}{} }

			var calls atomic.Int32
			loadCtx := make(chan context.Context, 1)
			loadCtxErr := make(chan error, 1)
			release := make(chan struct{})
			load := func(ctx context.Context) (string, bool, error) {
				calls.Add(1)
				loadCtx <- ctx
				<-release
				loadCtxErr <- ctx.Err()
				return "v", true, nil
			}

			type caller struct {
				cancel context.CancelFunc
				out    chan getOutcome
				gaveUp bool
			}
			start := func(gaveUp bool) caller {
				ctx, cancel := context.WithCancel(context.Background())
				cl := caller{cancel: cancel, out: make(chan getOutcome, 1), gaveUp: gaveUp}
				go func() {
					v, res, err := c.Get(ctx, "top", "k", time.Second, load)
					cl.out <- getOutcome{v, res, err}
				}()
				<-joined
				return cl
			}
			leader := start(tt.cancelLeader)
			lctx := <-loadCtx // the leader's load is running
			follower := start(tt.cancelFollower)
			defer leader.cancel()
			defer follower.cancel()

			for _, cl := range []caller{leader, follower} {
				if !cl.gaveUp {
					continue
				}
				cl.cancel()
				if o := <-cl.out; !errors.Is(o.err, context.Canceled) || o.val != "" {
					t.Errorf("caller that gave up got %q, %v; want context.Canceled", o.val, o.err)
				}
			}
			if err := lctx.Err(); err != nil {
				t.Errorf("load ctx after callers gave up: %v, want nil", err)
			}
			if _, ok := lctx.Deadline(); !ok {
				t.Errorf("load ctx has no deadline, want LoadTimeout")
			}

			close(release)
			for _, cl := range []caller{leader, follower} {
				if cl.gaveUp {
					continue
				}
				o := <-cl.out
				wantShared := cl.out == follower.out
				if o.err != nil || o.val != "v" || o.res.Shared != wantShared {
					t.Errorf("remaining caller got %q, %+v, %v; want v, Shared=%v", o.val, o.res, o.err, wantShared)
				}
			}
			if err := <-loadCtxErr; err != nil {
				t.Errorf("load ctx when load returned: %v, want nil", err)
			}

			// The load was stored: a later caller either hits it or joins the
			// still-running flight, which stores before it answers.
			v, _, err := c.Get(context.Background(), "top", "k", time.Second, load)
			if err != nil || v != "v" {
				t.Errorf("later Get = %q, %v; want v", v, err)
			}
			if got := calls.Load(); got != 1 {
				t.Errorf("loads = %d, want 1", got)
			}
			if got := c.Len(); got != 1 {
				t.Errorf("Len = %d, want 1", got)
			}
		})
	}
}

func TestGetCancelledBeforeMiss(t *testing.T) {
	t.Parallel()
	c, _ := newTestCache(t, Options{Now: newFakeClock().Now})
	var calls atomic.Int32
	load := countingLoad(&calls, "v")
	if _, _, err := c.Get(context.Background(), "top", "warm", time.Second, load); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()

	tests := []struct {
		name    string
		key     string
		wantErr error
	}{
		{name: "hit is still served", key: "warm"},
		{name: "miss does not start a load", key: "cold", wantErr: context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, _, err := c.Get(ctx, "top", tt.key, time.Second, load)
			if !errors.Is(err, tt.wantErr) || (tt.wantErr == nil && err != nil) {
				t.Errorf("Get error = %v, want %v", err, tt.wantErr)
			}
		})
	}
	if got := calls.Load(); got != 1 {
		t.Errorf("loads = %d, want 1", got)
	}
}

func TestGetDistinctKeysDoNotShare(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name          string
		family1, key1 string
		family2, key2 string
	}{
		{name: "different keys in one family", family1: "top", key1: "a", family2: "top", key2: "b"},
		{name: "same key in different families", family1: "top", key1: "a", family2: "count", key2: "a"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, _ := newTestCache(t, Options{Now: newFakeClock().Now})
			started := make(chan struct{})
			release := make(chan struct{})
			var calls1, calls2 atomic.Int32
			blocking := func(context.Context) (string, bool, error) {
				calls1.Add(1)
				close(started)
				<-release
				return "first", true, nil
			}
			out := make(chan getOutcome, 1)
			go func() {
				v, res, err := c.Get(context.Background(), tt.family1, tt.key1, time.Second, blocking)
				out <- getOutcome{v, res, err}
			}()
			<-started

			// While the first load is blocked, the second must run its own.
			v, res, err := c.Get(context.Background(), tt.family2, tt.key2, time.Second, countingLoad(&calls2, "second"))
			if err != nil || v != "second1" || res.Shared || res.Hit {
				t.Errorf("second Get = %q, %+v, %v; want own load second1", v, res, err)
			}
			close(release)
			if o := <-out; o.err != nil || o.val != "first" || o.res.Shared {
				t.Errorf("first Get = %q, %+v, %v; want own load first", o.val, o.res, o.err)
			}
			if calls1.Load() != 1 || calls2.Load() != 1 {
				t.Errorf("loads = %d, %d; want 1, 1", calls1.Load(), calls2.Load())
			}

			// And neither serves the other's stored value.
			v1, _, _ := c.Get(context.Background(), tt.family1, tt.key1, time.Second, countingLoad(&calls1, "x"))
			v2, _, _ := c.Get(context.Background(), tt.family2, tt.key2, time.Second, countingLoad(&calls2, "x"))
			if v1 != "first" || v2 != "second1" {
				t.Errorf("cached values = %q, %q; want first, second1", v1, v2)
			}
		})
	}
}

func TestEvictions(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		size        int
		gets        []string // keys read in order, family "top"
		wantLen     int
		wantEvicted float64
		thenGet     string
		wantHit     bool
	}{
		{name: "within capacity keeps everything", size: 3, gets: []string{"a", "b", "c"}, wantLen: 3, thenGet: "a", wantHit: true},
		{name: "over capacity evicts least recently used", size: 2, gets: []string{"a", "b", "c"}, wantLen: 2, wantEvicted: 1, thenGet: "a", wantHit: false},
		{name: "a read refreshes recency", size: 2, gets: []string{"a", "b", "a", "c"}, wantLen: 2, wantEvicted: 1, thenGet: "a", wantHit: true},
		{name: "many inserts evict many", size: 1, gets: []string{"a", "b", "c", "d"}, wantLen: 1, wantEvicted: 3, thenGet: "d", wantHit: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, _ := newTestCache(t, Options{Size: tt.size, Now: newFakeClock().Now})
			var calls atomic.Int32
			load := countingLoad(&calls, "v")
			for _, k := range tt.gets {
				if _, _, err := c.Get(context.Background(), "top", k, time.Second, load); err != nil {
					t.Fatal(err)
				}
			}
			evicted := func() float64 { return value(c.metrics.evictions.WithLabelValues("top")) }
			if got := c.Len(); got != tt.wantLen {
				t.Errorf("Len = %d, want %d", got, tt.wantLen)
			}
			if got := value(c.metrics.entries); got != float64(tt.wantLen) {
				t.Errorf("entries gauge = %v, want %d", got, tt.wantLen)
			}
			if got := evicted(); got != tt.wantEvicted {
				t.Errorf("evictions_total = %v, want %v", got, tt.wantEvicted)
			}
			_, res, err := c.Get(context.Background(), "top", tt.thenGet, time.Second, load)
			if err != nil || res.Hit != tt.wantHit {
				t.Errorf("Get(%q) Hit = %v, %v; want %v", tt.thenGet, res.Hit, err, tt.wantHit)
			}

			before := evicted()
			c.Purge()
			if got := c.Len(); got != 0 {
				t.Errorf("Len after Purge = %d, want 0", got)
			}
			if got := evicted(); got != before {
				t.Errorf("evictions_total after Purge = %v, want %v (Purge is not eviction)", got, before)
			}
		})
	}
}

func TestMetricsExposition(t *testing.T) {
	t.Parallel()
	c, reg := newTestCache(t, Options{Size: 1, Now: newFakeClock().Now})
	var calls atomic.Int32
	load := countingLoad(&calls, "v")
	ctx := context.Background()
	for _, k := range []string{"a", "a", "b"} { // miss+store, hit, miss+store+evict a
		if _, _, err := c.Get(ctx, "top", k, time.Second, load); err != nil {
			t.Fatal(err)
		}
	}
	want := strings.Join([]string{
		`# TYPE rankgate_cache_entries gauge`,
		`rankgate_cache_entries 1`,
		`# TYPE rankgate_cache_evictions_total counter`,
		`rankgate_cache_evictions_total{family="top"} 1`,
		`# TYPE rankgate_cache_loads_total counter`,
		`rankgate_cache_loads_total{family="top",outcome="error"} 0`,
		`rankgate_cache_loads_total{family="top",outcome="stored"} 2`,
		`rankgate_cache_loads_total{family="top",outcome="uncacheable"} 0`,
		`# TYPE rankgate_cache_requests_total counter`,
		`rankgate_cache_requests_total{family="top",result="hit"} 1`,
		`rankgate_cache_requests_total{family="top",result="miss"} 2`,
		`# TYPE rankgate_cache_shared_loads_total counter`,
		`rankgate_cache_shared_loads_total{family="top"} 0`,
	}, "\n")
	if got := gatherText(t, reg); got != want {
		t.Errorf("gathered metrics:\n%s\nwant:\n%s", got, want)
	}
}

func TestNew(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		opts    Options
		wantErr bool
	}{
		{name: "zero options with nil registerer", opts: Options{}},
		{name: "explicit options", opts: Options{Size: 5, MaxTTL: time.Second, LoadTimeout: time.Second, Now: time.Now}},
		{name: "negative size", opts: Options{Size: -1}, wantErr: true},
		{name: "negative max ttl", opts: Options{MaxTTL: -time.Second}, wantErr: true},
		{name: "negative load timeout", opts: Options{LoadTimeout: -time.Second}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, err := New[int](tt.opts)
			if (err != nil) != tt.wantErr {
				t.Fatalf("New error = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil {
				return
			}
			v, _, err := c.Get(context.Background(), "top", "k", time.Second, func(context.Context) (int, bool, error) {
				return 7, true, nil
			})
			if err != nil || v != 7 || c.Len() != 1 {
				t.Errorf("Get = %d, %v, Len %d; want 7, nil, 1", v, err, c.Len())
			}
		})
	}
}

func TestNewRegistration(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		sameRegistry bool
		wantErr      bool
	}{
		{name: "two caches on distinct registries", sameRegistry: false},
		{name: "two caches on one registry collide", sameRegistry: true, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			reg1 := prometheus.NewPedanticRegistry()
			reg2 := reg1
			if !tt.sameRegistry {
				reg2 = prometheus.NewPedanticRegistry()
			}
			if _, err := New[string](Options{Registerer: reg1}); err != nil {
				t.Fatalf("first New: %v", err)
			}
			_, err := New[string](Options{Registerer: reg2})
			if (err != nil) != tt.wantErr {
				t.Fatalf("second New error = %v, wantErr %v", err, tt.wantErr)
			}
			if err != nil {
				var are prometheus.AlreadyRegisteredError
				if !errors.As(err, &are) {
					t.Errorf("error %v is not an AlreadyRegisteredError", err)
				}
			}
		})
	}
}

func TestRunLoadRechecksCache(t *testing.T) {
	t.Parallel()
	// A caller that missed just before another flight stored must not load
	// again when its own flight starts.
	c, _ := newTestCache(t, Options{Now: newFakeClock().Now})
	var calls atomic.Int32
	load := countingLoad(&calls, "v")
	if _, _, err := c.Get(context.Background(), "top", "k", time.Second, load); err != nil {
		t.Fatal(err)
	}
	fm := c.metrics.family("top")
	got, err := c.runLoad(context.Background(), fm, entryKey{"top", "k"}, time.Second, load.dated())
	l, ok := got.(loaded[string])
	if err != nil || !ok || l.value != "v1" || !l.hit {
		t.Errorf("runLoad = %#v, %v; want cached v1 as hit", got, err)
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("loads = %d, want 1", n)
	}
}

// TestGetAtDatesEntries: a value loaded with its own date (a copy from a
// shared cache level) is fresh until that date + ttl, answers with that
// StoredAt, and is not kept at all when already stale.
func TestGetAtDatesEntries(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		age       time.Duration // how old the loaded value is
		wantKept  bool
		wantFresh time.Duration // how long a kept value stays fresh
	}{
		{"made now", 0, true, time.Second},
		{"made 400ms ago", 400 * time.Millisecond, true, 600 * time.Millisecond},
		{"already stale", 1500 * time.Millisecond, false, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			clk := newFakeClock()
			cc, _ := newTestCache(t, Options{Now: clk.Now})
			var calls atomic.Int32
			load := func(context.Context) (string, time.Time, bool, error) {
				n := calls.Add(1)
				return fmt.Sprint("v", n), clk.Now().Add(-c.age), true, nil
			}
			ctx := context.Background()
			v, res, err := cc.GetAt(ctx, "top", "k", time.Second, load)
			if err != nil || v != "v1" || !res.StoredAt.Equal(clk.Now().Add(-c.age)) {
				t.Fatalf("first GetAt = %q, %+v, %v; want v1 stored at now-%s", v, res, err, c.age)
			}
			if !c.wantKept {
				if v, _, _ := cc.GetAt(ctx, "top", "k", time.Second, load); v != "v2" {
					t.Fatalf("a stale value was kept: second GetAt = %q, want a new load v2", v)
				}
				return
			}
			clk.Advance(c.wantFresh - time.Millisecond)
			if v, res, _ := cc.GetAt(ctx, "top", "k", time.Second, load); v != "v1" || !res.Hit {
				t.Fatalf("just before date+ttl: %q hit=%v, want the kept v1", v, res.Hit)
			}
			clk.Advance(time.Millisecond)
			if v, _, _ := cc.GetAt(ctx, "top", "k", time.Second, load); v != "v2" {
				t.Fatalf("at date+ttl: %q, want a new load v2", v)
			}
		})
	}
}

package cache

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// staleCache builds a ServeStale cache whose background refreshes report
// their end on the returned channel (buffered, so a refresh never waits on
// the test).
func staleCache(t *testing.T, opts Options) (*Cache[string], <-chan struct{}) {
	t.Helper()
	opts.ServeStale = true
	c, _ := newTestCache(t, opts)
	done := make(chan struct{}, 64)
	c.testHookRefreshed = func() { done <- struct{}{} }
	return c, done
}

// blockingLoad is a fake load that announces each call on entered, then
// waits for one value on release: a string to return, or an error.
type blockingLoad struct {
	calls   atomic.Int32
	entered chan context.Context
	release chan any
}

func newBlockingLoad() *blockingLoad {
	return &blockingLoad{entered: make(chan context.Context, 64), release: make(chan any)}
}

func (b *blockingLoad) load(ctx context.Context) (string, bool, error) {
	b.calls.Add(1)
	b.entered <- ctx
	switch r := (<-b.release).(type) {
	case error:
		return "", false, r
	case string:
		return r, true, nil
	default:
		return fmt.Sprint(r), false, nil // anything else: an uncacheable answer
	}
}

func wait[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(10 * time.Second):
		t.Fatalf("timed out waiting for %s", what)
		panic("unreachable")
	}
}

// TestServeStaleWindows: with ServeStale, an entry is fresh for ttl, served
// stale (with its own StoredAt) in [ttl, 2·ttl) while one refresh runs, and
// loaded like a miss from 2·ttl on; a shorter read ttl shortens both.
func TestServeStaleWindows(t *testing.T) {
	t.Parallel()
	tests := []struct {
		title       string
		readTTL     time.Duration
		advance     time.Duration
		wantStale   bool
		wantHit     bool
		wantRefresh bool
	}{
		{title: "fresh just before ttl", readTTL: time.Second, advance: time.Second - 1, wantHit: true},
		{title: "stale exactly at ttl", readTTL: time.Second, advance: time.Second, wantHit: true, wantStale: true, wantRefresh: true},
		{title: "stale just before 2 ttl", readTTL: time.Second, advance: 2*time.Second - 1, wantHit: true, wantStale: true, wantRefresh: true},
		{title: "miss at 2 ttl", readTTL: time.Second, advance: 2 * time.Second},
		{title: "miss long after", readTTL: time.Second, advance: time.Minute},
		{title: "shorter read ttl: stale at its ttl", readTTL: 100 * time.Millisecond, advance: 150 * time.Millisecond, wantHit: true, wantStale: true, wantRefresh: true},
		{title: "shorter read ttl: miss at twice its ttl", readTTL: 100 * time.Millisecond, advance: 200 * time.Millisecond},
		{title: "longer read ttl does not extend the window", readTTL: 10 * time.Second, advance: 2 * time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.title, func(t *testing.T) {
			t.Parallel()
			clk := newFakeClock()
			c, refreshed := staleCache(t, Options{Now: clk.Now, MaxTTL: time.Hour})
			var calls atomic.Int32
			load := countingLoad(&calls, "v")
			ctx := context.Background()
			t0 := clk.Now()
			if _, _, err := c.Get(ctx, "top", "k", time.Second, load); err != nil {
				t.Fatal(err)
			}
			clk.Advance(tt.advance)
			v, res, err := c.Get(ctx, "top", "k", tt.readTTL, load)
			if err != nil {
				t.Fatal(err)
			}
			wantV, wantAt := "v1", t0
			if !tt.wantHit {
				wantV, wantAt = "v2", clk.Now()
			}
			if v != wantV || res.Hit != tt.wantHit || res.Stale != tt.wantStale || !res.StoredAt.Equal(wantAt) {
				t.Fatalf("Get = %q, %+v; want %q hit=%v stale=%v stored at %v", v, res, wantV, tt.wantHit, tt.wantStale, wantAt)
			}
			fm := c.metrics.family("top")
			if got, want := value(fm.refreshes), b2f(tt.wantRefresh); got != want {
				t.Errorf("refreshes = %v, want %v", got, want)
			}
			if got, want := value(fm.stale), b2f(tt.wantStale); got != want {
				t.Errorf("stale serves = %v, want %v", got, want)
			}
			if !tt.wantRefresh {
				return
			}
			wait(t, refreshed, "the refresh")
			v, res, err = c.Get(ctx, "top", "k", tt.readTTL, load)
			if err != nil || v != "v2" || !res.Hit || res.Stale || !res.StoredAt.Equal(clk.Now()) {
				t.Fatalf("after the refresh: %q, %+v, %v; want the refreshed v2, fresh", v, res, err)
			}
			if n := calls.Load(); n != 2 {
				t.Errorf("loads = %d, want 2", n)
			}
		})
	}
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

// TestServeStaleDoesNotWaitForRefresh: while the one refresh is blocked,
// every caller within 2·ttl gets the stale value at once; one load runs;
// its context is detached from the caller that started it, bounded and
// marked Refreshing.
func TestServeStaleDoesNotWaitForRefresh(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	c, refreshed := staleCache(t, Options{Now: clk.Now, LoadTimeout: 3 * time.Second})
	bl := newBlockingLoad()
	ctx := context.Background()
	go func() { bl.release <- "v1" }()
	if v, _, err := c.Get(ctx, "top", "k", time.Second, bl.load); err != nil || v != "v1" {
		t.Fatalf("first Get = %q, %v", v, err)
	}
	<-bl.entered
	t0 := clk.Now()
	clk.Advance(1500 * time.Millisecond)

	cctx, cancel := context.WithCancel(ctx)
	v, res, err := c.Get(cctx, "top", "k", time.Second, bl.load)
	cancel() // the caller that started the refresh goes away
	if err != nil || v != "v1" || !res.Stale || !res.StoredAt.Equal(t0) {
		t.Fatalf("Get at 1.5 ttl = %q, %+v, %v; want stale v1 stored at %v", v, res, err, t0)
	}
	lctx := wait(t, bl.entered, "the refresh's load")
	if lctx.Err() != nil {
		t.Errorf("refresh context ended with its caller's: %v", lctx.Err())
	}
	if dl, ok := lctx.Deadline(); !ok || dl.After(time.Now().Add(3*time.Second)) {
		t.Errorf("refresh context deadline = %v, %v; want one within LoadTimeout", dl, ok)
	}
	if !Refreshing(lctx) {
		t.Error("Refreshing(refresh ctx) = false")
	}
	if Refreshing(ctx) {
		t.Error("Refreshing(caller ctx) = true")
	}

	// 32 concurrent callers while the refresh is blocked: all stale, at once.
	var wg sync.WaitGroup
	errs := make(chan error, 32)
	for range 32 {
		wg.Go(func() {
			v, res, err := c.Get(ctx, "top", "k", time.Second, bl.load)
			if err != nil || v != "v1" || !res.Stale {
				errs <- fmt.Errorf("concurrent Get = %q, %+v, %v; want stale v1", v, res, err)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := bl.calls.Load(); n != 2 {
		t.Fatalf("loads = %d, want 2 (the first and one refresh)", n)
	}
	bl.release <- "v2"
	wait(t, refreshed, "the refresh")
	v, res, err = c.Get(ctx, "top", "k", time.Second, bl.load)
	if err != nil || v != "v2" || res.Stale || !res.Hit {
		t.Fatalf("after the refresh = %q, %+v, %v; want fresh v2", v, res, err)
	}
	fm := c.metrics.family("top")
	if value(fm.refreshes) != 1 || value(fm.stale) != 33 || value(fm.refreshErrors) != 0 {
		t.Errorf("refreshes=%v stale=%v refresh errors=%v; want 1, 33, 0", value(fm.refreshes), value(fm.stale), value(fm.refreshErrors))
	}
}

// TestServeStalePastWindowJoinsRefresh: a caller arriving past 2·ttl while
// the refresh is still running waits for that refresh (one load), not a
// second one.
func TestServeStalePastWindowJoinsRefresh(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	c, refreshed := staleCache(t, Options{Now: clk.Now})
	bl := newBlockingLoad()
	ctx := context.Background()
	go func() { bl.release <- "v1" }()
	if _, _, err := c.Get(ctx, "top", "k", time.Second, bl.load); err != nil {
		t.Fatal(err)
	}
	<-bl.entered
	clk.Advance(1500 * time.Millisecond)
	if _, res, _ := c.Get(ctx, "top", "k", time.Second, bl.load); !res.Stale {
		t.Fatalf("want a stale serve, got %+v", res)
	}
	wait(t, bl.entered, "the refresh's load")
	clk.Advance(time.Second) // 2.5 ttl: no longer servable
	joined := make(chan struct{}, 1)
	c.testHookJoined = func() { joined <- struct{}{} }
	got := make(chan string, 1)
	go func() {
		v, _, _ := c.Get(ctx, "top", "k", time.Second, bl.load)
		got <- v
	}()
	wait(t, joined, "the late caller joining")
	select {
	case v := <-got:
		t.Fatalf("a caller past 2·ttl got %q without waiting for the refresh", v)
	default:
	}
	bl.release <- "v2"
	if v := wait(t, got, "the late caller"); v != "v2" {
		t.Fatalf("late caller got %q, want the refresh's v2", v)
	}
	wait(t, refreshed, "the refresh")
	if n := bl.calls.Load(); n != 2 {
		t.Fatalf("loads = %d, want 2", n)
	}
}

// TestServeStaleRefreshFailure: a failed refresh is counted and logged (at
// most once per 10 s), does not remove the entry nor store the error, and
// makes the next caller wait like on a miss. An uncacheable refresh answer
// is not stored and leaves the entry servable, so a later caller starts
// another refresh.
func TestServeStaleRefreshFailure(t *testing.T) {
	t.Parallel()
	clk := newFakeClock()
	logs := &recordHandler{}
	c, refreshed := staleCache(t, Options{Now: clk.Now, Logger: slog.New(logs), MaxTTL: time.Hour})
	bl := newBlockingLoad()
	ctx := context.Background()
	fm := c.metrics.family("top")
	get := func() (string, Result, error) { return c.Get(ctx, "top", "k", 10*time.Second, bl.load) }

	go func() { bl.release <- "v1" }()
	if _, _, err := get(); err != nil {
		t.Fatal(err)
	}
	<-bl.entered

	// An uncacheable refresh (a partial answer): the entry stays servable.
	clk.Advance(11 * time.Second)
	if v, res, _ := get(); v != "v1" || !res.Stale {
		t.Fatalf("stale Get = %q, %+v", v, res)
	}
	<-bl.entered
	bl.release <- 7 // uncacheable
	wait(t, refreshed, "the uncacheable refresh")
	if v, res, _ := get(); v != "v1" || !res.Stale {
		t.Fatalf("after an uncacheable refresh: %q, %+v; want stale v1 again", v, res)
	}
	<-bl.entered
	if got := loadsMetric(c, "top", "uncacheable"); got != 1 {
		t.Errorf("uncacheable loads = %v, want 1", got)
	}

	// That second refresh fails.
	bl.release <- errBoom
	wait(t, refreshed, "the failing refresh")
	if value(fm.refreshErrors) != 1 || value(fm.refreshes) != 2 {
		t.Errorf("refresh errors=%v refreshes=%v; want 1, 2", value(fm.refreshErrors), value(fm.refreshes))
	}
	if c.Len() != 1 {
		t.Errorf("Len = %d, want 1: a failed refresh keeps the entry", c.Len())
	}
	// The next caller waits like on a miss, and gets that load's error.
	errc := make(chan error, 1)
	go func() { _, _, err := get(); errc <- err }()
	<-bl.entered
	select {
	case err := <-errc:
		t.Fatalf("after a failed refresh a caller did not wait: %v", err)
	default:
	}
	bl.release <- errBoom
	if err := wait(t, errc, "the waiting caller"); !errors.Is(err, errBoom) {
		t.Fatalf("waiting caller err = %v, want boom", err)
	}
	// A successful load replaces the entry: fresh again.
	go func() { bl.release <- "v2" }()
	if v, res, err := get(); err != nil || v != "v2" || res.Hit {
		t.Fatalf("reload = %q, %+v, %v; want loaded v2", v, res, err)
	}
	<-bl.entered
	if v, res, _ := get(); v != "v2" || !res.Hit || res.Stale {
		t.Fatalf("after the reload: %q, %+v; want fresh v2", v, res)
	}

	// Failed refreshes of another key: two within 10 s of the first one are
	// not logged; one 10 s later is, and says two were left out.
	getR := func() (string, Result, error) { return c.Get(ctx, "top", "r", time.Second, bl.load) }
	go func() { bl.release <- "r1" }()
	if _, _, err := getR(); err != nil {
		t.Fatal(err)
	}
	<-bl.entered
	for i := range 3 {
		clk.Advance(1500 * time.Millisecond)
		if _, res, _ := getR(); !res.Stale {
			t.Fatalf("round %d: want a stale serve, got %+v", i, res)
		}
		<-bl.entered
		bl.release <- errBoom
		wait(t, refreshed, "a failing refresh")
		if i == 1 {
			clk.Advance(10 * time.Second) // the next failure is logged
		}
		// The entry is now served no more: a load like a miss renews it.
		go func() { bl.release <- "r" }()
		if _, res, err := getR(); err != nil || res.Hit {
			t.Fatalf("round %d: after a failed refresh = %+v, %v; want a load", i, res, err)
		}
		<-bl.entered
	}
	recs := logs.records()
	if len(recs) != 2 {
		t.Fatalf("logged %d refresh failures, want 2 (of 4, two rate-limited): %v", len(recs), recs)
	}
	if got := recs[1]["not_logged_since_last"]; got != "2" {
		t.Errorf("second log line not_logged_since_last = %q, want 2", got)
	}
	if recs[0]["family"] != "top" || recs[0]["key"] != "k" || recs[0]["err"] != "boom" {
		t.Errorf("first log line = %v; want family top, key k, err boom", recs[0])
	}
	if value(fm.refreshErrors) != 4 {
		t.Errorf("refresh errors = %v, want 4", value(fm.refreshErrors))
	}
}

// TestServeStaleColdMissCoalesces: on a cold key, concurrent callers still
// share one load.
func TestServeStaleColdMissCoalesces(t *testing.T) {
	t.Parallel()
	c, _ := staleCache(t, Options{Now: newFakeClock().Now})
	bl := newBlockingLoad()
	const n = 16
	joined := make(chan struct{}, n)
	c.testHookJoined = func() { joined <- struct{}{} }
	got := make(chan string, n)
	for range n {
		go func() {
			v, _, _ := c.Get(context.Background(), "top", "cold", time.Second, bl.load)
			got <- v
		}()
	}
	for range n {
		wait(t, joined, "callers joining")
	}
	bl.release <- "v1"
	for range n {
		if v := wait(t, got, "callers"); v != "v1" {
			t.Fatalf("got %q, want v1", v)
		}
	}
	if c := bl.calls.Load(); c != 1 {
		t.Fatalf("loads = %d, want 1", c)
	}
}

// recordHandler records log records' attributes as strings.
type recordHandler struct {
	mu   sync.Mutex
	recs []map[string]string
}

func (h *recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordHandler) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *recordHandler) WithGroup(string) slog.Handler            { return h }
func (h *recordHandler) Handle(_ context.Context, r slog.Record) error {
	m := map[string]string{"msg": r.Message}
	r.Attrs(func(a slog.Attr) bool { m[a.Key] = a.Value.String(); return true })
	h.mu.Lock()
	defer h.mu.Unlock()
	h.recs = append(h.recs, m)
	return nil
}

func (h *recordHandler) records() []map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return append([]map[string]string(nil), h.recs...)
}

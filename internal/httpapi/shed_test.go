package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rankgate/rankgate/internal/gateway"
	"github.com/rankgate/rankgate/internal/rank"
)

func newGuardedHarness(t *testing.T, svc *fakeService, opts Options) *harness {
	t.Helper()
	svc.t = t
	reg := prometheus.NewRegistry()
	buf := &syncBuffer{}
	opts.Logger = slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: slog.LevelDebug}))
	opts.Registerer, opts.Gatherer = reg, reg
	h, err := New(svc, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return &harness{h: contractChecked(t, h), raw: h, reg: reg, log: buf}
}

// TestShedding fills the in-flight bound with requests blocked in the
// service; the next one is answered 503 at once, the service endpoints are
// never shed, and a freed slot serves again.
func TestShedding(t *testing.T) {
	t.Parallel()
	const bound = 2
	entered := make(chan struct{})
	release := make(chan struct{})
	var block sync.Mutex // guarded: whether top blocks
	blocking := true
	svc := &fakeService{
		ready: func(context.Context) error { return nil },
		top: func(ctx context.Context, _ gateway.BoardRef, _ int, _ gateway.ReadOptions) (gateway.Page, error) {
			block.Lock()
			b := blocking
			block.Unlock()
			if b {
				entered <- struct{}{}
				select {
				case <-release:
				case <-ctx.Done():
					return gateway.Page{}, ctx.Err()
				}
			}
			return samplePage(gateway.SourcePrimary, 0), nil
		},
	}
	hs := newGuardedHarness(t, svc, Options{MaxInflight: bound})

	var wg sync.WaitGroup
	codes := make([]int, bound)
	for i := range bound {
		wg.Go(func() { codes[i] = hs.do("GET", natPath+"/top", nil).Code })
	}
	for range bound {
		<-entered // both slots are taken
	}
	block.Lock()
	blocking = false
	block.Unlock()

	rec := hs.do("GET", natPath+"/top", nil)
	check(t, "status over the bound", rec.Code, http.StatusServiceUnavailable)
	check(t, "Retry-After", rec.Header().Get("Retry-After"), "1")
	check(t, "code", rank.Code(decodeError(t, rec).Error.Code), rank.CodeUnavailable)
	check(t, "a write is shed too", hs.do("POST", "/v1/events", strings.NewReader(`{}`)).Code, http.StatusServiceUnavailable)
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		check(t, p+" while full", hs.do("GET", p, nil).Code, http.StatusOK)
	}

	close(release)
	wg.Wait()
	check(t, "the blocked requests", codes, []int{200, 200})
	check(t, "after a slot is freed", hs.do("GET", natPath+"/top", nil).Code, http.StatusOK)

	body := metricsText(t, hs.reg)
	for _, want := range []string{
		"rankgate_http_shed_total 2",
		`rankgate_http_requests_total{code="503",method="GET",route="GET /v1/boards/{family}/{period}/{dimension}/top"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// TestShedBeforeAuth: a full gateway sheds without checking tokens.
func TestShedBeforeAuth(t *testing.T) {
	t.Parallel()
	entered := make(chan struct{})
	release := make(chan struct{})
	svc := &fakeService{top: func(context.Context, gateway.BoardRef, int, gateway.ReadOptions) (gateway.Page, error) {
		entered <- struct{}{}
		<-release
		return samplePage(gateway.SourcePrimary, 0), nil
	}}
	var checked int
	var mu sync.Mutex
	auth := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			checked++
			mu.Unlock()
			next.ServeHTTP(w, r)
		})
	}
	hs := newGuardedHarness(t, svc, Options{MaxInflight: 1, Auth: auth})
	done := make(chan int)
	go func() { done <- hs.do("GET", natPath+"/top", nil).Code }()
	<-entered
	check(t, "second", hs.do("GET", natPath+"/top", nil).Code, 503)
	close(release)
	check(t, "first", <-done, 200)
	mu.Lock()
	check(t, "auth calls", checked, 1)
	mu.Unlock()
}

func TestRequestTimeout(t *testing.T) {
	t.Parallel()
	const timeout = 20 * time.Millisecond
	t.Run("deadline set", func(t *testing.T) {
		t.Parallel()
		svc := &fakeService{top: func(ctx context.Context, _ gateway.BoardRef, _ int, _ gateway.ReadOptions) (gateway.Page, error) {
			dl, ok := ctx.Deadline()
			if !ok || time.Until(dl) > timeout {
				t.Errorf("deadline %v, %v; want within %s", dl, ok, timeout)
			}
			return samplePage(gateway.SourcePrimary, 0), nil
		}}
		hs := newGuardedHarness(t, svc, Options{RequestTimeout: timeout})
		check(t, "status", hs.do("GET", natPath+"/top", nil).Code, 200)
	})
	t.Run("running out answers 503", func(t *testing.T) {
		t.Parallel()
		svc := &fakeService{top: func(ctx context.Context, _ gateway.BoardRef, _ int, _ gateway.ReadOptions) (gateway.Page, error) {
			<-ctx.Done() // a Redis call that never answers
			return gateway.Page{}, ctx.Err()
		}}
		hs := newGuardedHarness(t, svc, Options{RequestTimeout: timeout})
		rec := hs.do("GET", natPath+"/top", nil)
		check(t, "status", rec.Code, 503)
		check(t, "Retry-After", rec.Header().Get("Retry-After"), "1")
		e := decodeError(t, rec)
		check(t, "code", rank.Code(e.Error.Code), rank.CodeUnavailable)
	})
	t.Run("none by default", func(t *testing.T) {
		t.Parallel()
		svc := &fakeService{top: func(ctx context.Context, _ gateway.BoardRef, _ int, _ gateway.ReadOptions) (gateway.Page, error) {
			if _, ok := ctx.Deadline(); ok {
				t.Error("a deadline without RequestTimeout")
			}
			return samplePage(gateway.SourcePrimary, 0), nil
		}}
		hs := newGuardedHarness(t, svc, Options{})
		check(t, "status", hs.do("GET", natPath+"/top", nil).Code, 200)
	})
	t.Run("client gone is still 499", func(t *testing.T) {
		t.Parallel()
		svc := &fakeService{top: func(ctx context.Context, _ gateway.BoardRef, _ int, _ gateway.ReadOptions) (gateway.Page, error) {
			return gateway.Page{}, ctx.Err()
		}}
		hs := newGuardedHarness(t, svc, Options{RequestTimeout: time.Minute})
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		rec := httptest.NewRecorder()
		hs.h.ServeHTTP(rec, httptest.NewRequest("GET", natPath+"/top", nil).WithContext(ctx))
		check(t, "status", rec.Code, statusClientClosed)
	})
}

func TestNewGuardRefusesNegatives(t *testing.T) {
	t.Parallel()
	for _, o := range []Options{{MaxInflight: -1}, {RequestTimeout: -time.Second}} {
		if _, err := New(&fakeService{t: t}, o); err == nil {
			t.Errorf("New(%+v) succeeded", o)
		}
	}
}

package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/rankgate/rankgate/internal/awards"
	"github.com/rankgate/rankgate/internal/ledger"
	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/store"
	"github.com/rankgate/rankgate/internal/testpg"
)

// receiver is a webhook receiver that checks every signature, fails a share
// of calls, can be down, and dedupes by Idempotency-Key.
type receiver struct {
	mu       sync.Mutex
	secret   []byte
	now      func() time.Time
	rng      *rand.Rand
	failRate float64
	down     bool
	calls    int
	badSigs  int
	got      map[string]int // 2xx answers per key
	kinds    map[string]string
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.calls++
	if rc.down {
		// Down: the connection drops without an answer.
		if hj, ok := w.(http.Hijacker); ok {
			if c, _, err := hj.Hijack(); err == nil {
				c.Close()
				return
			}
		}
		w.WriteHeader(http.StatusServiceUnavailable)
		return
	}
	if err := awards.Verify(rc.secret, r.Header.Get(awards.HeaderSignature), body, rc.now(), 5*time.Minute); err != nil {
		rc.badSigs++
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if rc.rng.Float64() < rc.failRate {
		w.WriteHeader(http.StatusInternalServerError)
		return
	}
	key := r.Header.Get(awards.HeaderIdempotencyKey)
	rc.got[key]++
	var kind struct {
		Type string `json:"type"`
	}
	_ = json.Unmarshal(body, &kind)
	rc.kinds[key] = kind.Type
	w.WriteHeader(http.StatusNoContent)
}

func (rc *receiver) set(down bool) { rc.mu.Lock(); rc.down = down; rc.mu.Unlock() }

// crashyStore plays a gateway that crashes after the receiver took a
// delivery and before the ledger recorded it: the outcome is lost.
type crashyStore struct {
	*ledger.Ledger
	mu    sync.Mutex
	every int
	n     int
	lost  map[string]int
}

func (c *crashyStore) RecordAttempt(ctx context.Context, d ledger.Delivery, a ledger.Attempt) error {
	c.mu.Lock()
	c.n++
	crash := a.Delivered && c.every > 0 && c.n%c.every == 0
	if crash {
		c.lost[d.Key]++
	}
	c.mu.Unlock()
	if crash {
		return errors.New("injected crash before recording the delivery")
	}
	return c.Ledger.RecordAttempt(ctx, d, a)
}

// A settlement's awards and the period notices reach a receiver that fails
// 30 % of calls and is down for a stretch, across a gateway restart and lost
// delivery records: every award arrives, each key is answered 2xx once —
// twice only where a record was lost (the receiver's dedupe absorbs it) —
// and every signature checks.
func TestAwardsDeliveredExactlyOnce(t *testing.T) {
	t.Parallel()
	dsn, schema := testpg.DSN(t), testpg.Schema(t)
	open := func() *ledger.Ledger {
		l, err := ledger.Open(context.Background(), dsn, ledger.Options{Schema: schema, MaxConns: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(l.Close)
		return l
	}
	l := open()
	clk := &clock{t: time.Date(2026, 12, 9, 12, 0, 0, 0, time.UTC)}
	svc := newClusterServiceWith(t, lifecycleFamilies, func(o *Options, _ *store.Store) { o.Ledger, o.Now = l, clk.Now })
	ctx := context.Background()
	for i := 0; i < 60; i++ {
		if _, err := svc.ApplyEvent(ctx, Event{EventID: fmt.Sprintf("e%d", i), Family: "wk", User: fmt.Sprintf("u%02d", i%25),
			Delta: ptr(int64(i%7 + 1)), Dims: map[string]string{"province": fmt.Sprintf("p%d", i%3)}}); err != nil {
			t.Fatal(err)
		}
	}
	clk.t = time.Date(2026, 12, 14, 0, 10, 0, 0, time.UTC)
	if _, err := svc.Freeze(ctx, "wk", "2026-W50"); err != nil {
		t.Fatal(err)
	}
	sv, err := svc.Settle(ctx, "wk", "2026-W50", 10)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	for _, a := range sv.Outbox {
		want[a.IdempotencyKey] = true
	}
	want[ledger.NoticeKey(ledger.NoticeFrozen, "wk", "2026-W50")] = true
	want[ledger.NoticeKey(ledger.NoticeSettled, "wk", "2026-W50")] = true

	secret := []byte("0123456789abcdef-secret")
	rc := &receiver{secret: secret, now: clk.Now, rng: rand.New(rand.NewPCG(14, 30)), failRate: 0.3,
		got: map[string]int{}, kinds: map[string]string{}}
	srv := httptest.NewUnstartedServer(rc)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv.Listener = ln
	srv.Start()
	t.Cleanup(srv.Close)

	cs := &crashyStore{Ledger: l, every: 7, lost: map[string]int{}}
	newDeliverer := func(st awards.Store) *awards.Deliverer {
		d, err := awards.New(st, awards.Options{URL: srv.URL, Secret: secret, Timeout: 2 * time.Second, MaxAttempts: 20, Batch: 25})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	d := newDeliverer(cs)
	start := clk.Now()
	for step := 0; step < 2000; step++ {
		clk.Add(5 * time.Second)
		el := clk.Now().Sub(start)
		rc.set(el >= 20*time.Second && el < 3*time.Minute) // down for a stretch
		if step == 60 {
			// A gateway restart: a new process, a new ledger handle on the
			// same schema, no memory of what was being delivered.
			d = newDeliverer(open())
		}
		d.Pump(ctx, clk.Now())
		if len(rc.got) == len(want) {
			pending, err := svc.Awards(ctx, AwardQuery{State: "pending"})
			if err != nil {
				t.Fatal(err)
			}
			if len(pending.Awards) == 0 {
				break
			}
		}
	}
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.badSigs != 0 {
		t.Errorf("%d deliveries with a bad signature", rc.badSigs)
	}
	for k := range want {
		n := rc.got[k]
		switch {
		case n == 0:
			t.Errorf("%s (%s) never arrived", k, rc.kinds[k])
		case n != 1+cs.lost[k]:
			t.Errorf("%s arrived %d times, %d records of it lost: want one arrival more than lost records", k, n, cs.lost[k])
		}
	}
	if len(rc.got) != len(want) {
		t.Errorf("the receiver got %d distinct keys, want %d", len(rc.got), len(want))
	}
	if len(cs.lost) == 0 {
		t.Error("no delivery record was lost: the crash path was not exercised")
	}
	kinds := map[string]int{}
	for _, k := range rc.kinds {
		kinds[k]++
	}
	if kinds["period.frozen"] != 1 || kinds["period.settled"] != 1 || kinds["award"] != len(sv.Outbox) {
		t.Errorf("kinds received: %v, want 1 frozen, 1 settled, %d awards", kinds, len(sv.Outbox))
	}
	t.Logf("%d awards + 2 notices; %d calls (30%% failing, down for 160 s, restart, %d lost records) until all arrived",
		len(sv.Outbox), rc.calls, len(cs.lost))
	all, err := svc.Awards(ctx, AwardQuery{Family: "wk", Period: "2026-W50", State: "delivered", Limit: 1000})
	if err != nil || len(all.Awards) != len(sv.Outbox) {
		t.Fatalf("delivered awards: %d of %d, %v", len(all.Awards), len(sv.Outbox), err)
	}
	for _, a := range all.Awards {
		if a.DeliveredVia != "webhook" || a.DeliveredAt == nil || a.Attempts < 1 {
			t.Fatalf("award %+v", a)
		}
	}
}

// Pull consumers acknowledge awards; a failed award is retried by an admin;
// bad keys and filters are 4xx.
func TestAwardsAckAndRetry(t *testing.T) {
	t.Parallel()
	l := openTestLedger(t)
	clk := &clock{t: time.Date(2026, 12, 9, 12, 0, 0, 0, time.UTC)}
	svc := newClusterServiceWith(t, lifecycleFamilies, func(o *Options, _ *store.Store) { o.Ledger, o.Now = l, clk.Now })
	ctx := context.Background()
	for i := 0; i < 5; i++ {
		if _, err := svc.ApplyEvent(ctx, Event{EventID: fmt.Sprintf("e%d", i), Family: "wk", User: fmt.Sprintf("u%d", i),
			Delta: ptr(int64(i + 1))}); err != nil {
			t.Fatal(err)
		}
	}
	per := "2026-W50"
	clk.t = time.Date(2026, 12, 15, 0, 0, 0, 0, time.UTC)
	if _, err := svc.Freeze(ctx, "wk", per); err != nil {
		t.Fatal(err)
	}
	sv, err := svc.Settle(ctx, "wk", per, 3)
	if err != nil || len(sv.Outbox) != 3 {
		t.Fatalf("settle: %+v %v", sv, err)
	}
	key := sv.Outbox[0].IdempotencyKey
	pending, err := svc.Awards(ctx, AwardQuery{Family: "wk", Period: per, State: "pending"})
	if err != nil || len(pending.Awards) != len(sv.Outbox) {
		t.Fatalf("pending: %+v %v", pending, err)
	}
	a, err := svc.AckAward(ctx, key)
	if err != nil || a.State != "delivered" || a.DeliveredVia != "ack" {
		t.Fatalf("ack: %+v %v", a, err)
	}
	if again, err := svc.AckAward(ctx, key); err != nil || !again.DeliveredAt.Equal(*a.DeliveredAt) {
		t.Fatalf("a second ack changed it: %+v %v", again, err)
	}
	// A receiver that is always down: max_attempts 2 → failed; retry → pending.
	down := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusBadGateway) }))
	t.Cleanup(down.Close)
	d, err := awards.New(l, awards.Options{URL: down.URL, Secret: []byte("0123456789abcdef"), MaxAttempts: 2})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	for i := 0; i < 4; i++ {
		now = now.Add(time.Hour)
		d.Pump(ctx, now)
	}
	failed, err := svc.Awards(ctx, AwardQuery{Family: "wk", Period: per, State: "failed"})
	if err != nil || len(failed.Awards) != len(sv.Outbox)-1 {
		t.Fatalf("failed: %d, want %d (%v)", len(failed.Awards), len(sv.Outbox)-1, err)
	}
	if f := failed.Awards[0]; f.Attempts != 2 || f.LastError == "" {
		t.Fatalf("failed award %+v", f)
	}
	r, err := svc.RetryAward(ctx, failed.Awards[0].IdempotencyKey)
	if err != nil || r.State != "pending" || r.Attempts != 0 {
		t.Fatalf("retry: %+v %v", r, err)
	}
	if r, err := svc.RetryAward(ctx, key); err != nil || r.State != "delivered" {
		t.Fatalf("retry of a delivered award: %+v %v", r, err)
	}
	for _, tc := range []struct {
		name string
		err  error
		code rank.Code
	}{
		{"unknown key", func() error { _, err := svc.AckAward(ctx, fmt.Sprintf("%064x", 7)); return err }(), rank.CodeNotFound},
		{"malformed key", func() error { _, err := svc.RetryAward(ctx, "nope"); return err }(), rank.CodeInvalidArgument},
		{"bad state", func() error { _, err := svc.Awards(ctx, AwardQuery{State: "lost"}); return err }(), rank.CodeInvalidArgument},
		{"period without family", func() error { _, err := svc.Awards(ctx, AwardQuery{Period: per}); return err }(), rank.CodeInvalidArgument},
		{"unknown family", func() error { _, err := svc.Awards(ctx, AwardQuery{Family: "nosuch"}); return err }(), rank.CodeUnknownFamily},
	} {
		if rank.CodeOf(tc.err) != tc.code {
			t.Errorf("%s: %v, want %s", tc.name, tc.err, tc.code)
		}
	}
}

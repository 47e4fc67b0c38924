package gateway

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/internal/ledger"
	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/store"
	"github.com/rankgate/rankgate/internal/testpg"
)

// openTestLedger opens a ledger in a fresh schema of the test database.
func openTestLedger(t testing.TB) *ledger.Ledger {
	t.Helper()
	dsn := testpg.DSN(t)
	l, err := ledger.Open(context.Background(), dsn, ledger.Options{Schema: testpg.Schema(t), MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	return l
}

// newLedgerService is a Service in ledger mode on the real cluster and the
// real PostgreSQL.
func newLedgerService(t *testing.T, families string, hook func(string) error) (*Service, *ledger.Ledger) {
	t.Helper()
	l := openTestLedger(t)
	svc := newClusterServiceWith(t, families, func(o *Options, _ *store.Store) {
		o.Ledger = l
		o.AfterLedgerCommit = hook
	})
	return svc, l
}

const ledgerFamilies = `  f:
    period: week
    timezone: UTC
    tie: first
    rank: competition
    dimensions:
      national: {shards: 4}
      province: {shards: 2}
  best:
    aggregate: max
    period: all
    dimensions:
      national: {shards: 2}
`

// A crash between the ledger commit and the Redis projection leaves the
// event unprojected; the projector projects it, and a client retry is a
// duplicate that counts nothing twice.
func TestLedgerCrashBetweenCommitAndProjection(t *testing.T) {
	t.Parallel()
	crash := map[string]bool{"e2": true}
	svc, _ := newLedgerService(t, ledgerFamilies, func(id string) error {
		if crash[id] {
			return errors.New("injected crash after commit")
		}
		return nil
	})
	ctx := context.Background()
	ref := BoardRef{Family: "f", Period: "current", Dimension: "national"}
	for i, d := range []int64{10, 20, 30} {
		_, err := svc.ApplyEvent(ctx, Event{EventID: fmt.Sprintf("e%d", i+1), Family: "f", User: fmt.Sprintf("u%d", i+1), Delta: ptr(d)})
		if i == 1 {
			if rank.CodeOf(err) != rank.CodeUnavailable {
				t.Fatalf("crashed event: %v, want unavailable", err)
			}
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if got := topOf(t, svc, ref, 10, ReadOptions{Consistency: ConsistencyPrimary}); len(got) != 2 {
		t.Fatalf("before re-projection Redis has %d members, want 2", len(got))
	}
	n, err := svc.ProjectPending(ctx, 0)
	if err != nil || n != 1 {
		t.Fatalf("ProjectPending = %d, %v; want 1", n, err)
	}
	got := topOf(t, svc, ref, 10, ReadOptions{Consistency: ConsistencyPrimary})
	if len(got) != 3 || got[1].User != "u2" || got[1].Points != 20 {
		t.Fatalf("after re-projection: %+v", got)
	}
	crash["e2"] = false
	res, err := svc.ApplyEvent(ctx, Event{EventID: "e2", Family: "f", User: "u2", Delta: ptr(int64(20))})
	if err != nil || !res.Duplicate || res.Boards[0].Points != 20 {
		t.Fatalf("client retry: %+v %v", res, err)
	}
	if n, _ := svc.ProjectPending(ctx, 0); n != 0 {
		t.Fatalf("nothing is left to project, but %d were", n)
	}
}

// Freeze, then: a replay is a duplicate, a new event is refused and kept in
// the ledger's reviews; settle twice gives the same standings and one set of
// awards; archive puts the retention TTL on the period's keys.
func TestLedgerFreezeSettleArchive(t *testing.T) {
	t.Parallel()
	svc, _ := newLedgerService(t, ledgerFamilies, nil)
	ctx := context.Background()
	for i, d := range []int64{50, 40, 40, 10} {
		if _, err := svc.ApplyEvent(ctx, Event{EventID: fmt.Sprintf("e%d", i), Family: "f", User: fmt.Sprintf("u%d", i), Delta: ptr(d),
			Dims: map[string]string{"province": "zj"}}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.Settle(ctx, "f", "current", 3); rank.CodeOf(err) != rank.CodePeriodClosed {
		t.Fatalf("settling an open period: %v", err)
	}
	if _, err := svc.Freeze(ctx, "f", "current"); err != nil {
		t.Fatal(err)
	}
	res, err := svc.ApplyEvent(ctx, Event{EventID: "e1", Family: "f", User: "u1", Delta: ptr(int64(40)), Dims: map[string]string{"province": "zj"}})
	if err != nil || !res.Duplicate {
		t.Fatalf("replay after freeze: %+v %v", res, err)
	}
	if _, err := svc.ApplyEvent(ctx, Event{EventID: "late", Family: "f", User: "u9", Delta: ptr(int64(99))}); rank.CodeOf(err) != rank.CodePeriodClosed {
		t.Fatalf("event after freeze: %v", err)
	}
	rv, err := svc.Reviews(ctx, "f", "current", 10)
	if err != nil || rv.Source != "ledger" || len(rv.Reviews) != 1 {
		t.Fatalf("reviews: %+v %v", rv, err)
	}
	first, err := svc.Settle(ctx, "f", "current", 3)
	if err != nil {
		t.Fatal(err)
	}
	period := first.Period
	nat := first.Boards["f/"+period+"/national"]
	// competition ranks with tie first: 50 → 1; the two 40s → 2, 2 (u1 reached 40 first).
	if len(nat) != 3 || nat[0].User != "u0" || nat[1].User != "u1" || nat[2].User != "u2" || nat[1].Rank != 2 || nat[2].Rank != 2 {
		t.Fatalf("national standings: %+v", nat)
	}
	again, err := svc.Settle(ctx, "f", "current", 3)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(again.Boards) != fmt.Sprint(first.Boards) || len(again.Outbox) != len(first.Outbox) || len(first.Outbox) != 6 {
		t.Fatalf("re-settling changed the answer or the outbox: %d vs %d awards", len(again.Outbox), len(first.Outbox))
	}
	keys := map[string]bool{}
	for _, a := range again.Outbox {
		if keys[a.IdempotencyKey] {
			t.Fatalf("award %s twice", a.IdempotencyKey)
		}
		keys[a.IdempotencyKey] = true
	}
	d, err := svc.Archive(ctx, "f", "current")
	if err != nil || d.State != "archived" {
		t.Fatalf("archive: %+v %v", d, err)
	}
	z := svc.layout.ZKey(shard.Board{Family: "f", Period: period, DimType: shard.National}, shard.Of("u0", 4), 4)
	ttl, err := st(svc).Primary().PTTL(ctx, z).Result()
	if err != nil || ttl <= 0 || ttl > svc.families["f"].cfg.Retention {
		t.Fatalf("archived key %s has TTL %v (%v)", z, ttl, err)
	}
}

// A flushed shard is rebuilt from the ledger, identical to before; reconcile
// finds drift made behind the gateway's back, and a rebuild repairs it.
func TestLedgerRebuildAndReconcile(t *testing.T) {
	t.Parallel()
	svc, _ := newLedgerService(t, ledgerFamilies, nil)
	ctx := context.Background()
	ref := BoardRef{Family: "f", Period: "current", Dimension: "national"}
	for i := 0; i < 60; i++ {
		if _, err := svc.ApplyEvent(ctx, Event{EventID: fmt.Sprintf("e%d", i), Family: "f", User: fmt.Sprintf("u%d", i%25),
			Delta: ptr(int64(1 + i%4))}); err != nil {
			t.Fatal(err)
		}
	}
	before := topOf(t, svc, ref, 100, ReadOptions{Consistency: ConsistencyPrimary})
	b, err := svc.resolve(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	// Flush one shard's data (as a flushed master would lose it).
	k := svc.layout.Keys(b.b, 1, b.n)
	if err := st(svc).Primary().Del(ctx, k.Z, k.M).Err(); err != nil {
		t.Fatal(err)
	}
	rep, err := svc.Reconcile(ctx, ref)
	if err != nil || rep.Drifted == 0 {
		t.Fatalf("reconcile after a flush found no drift: %+v %v", rep, err)
	}
	// Drift the other way: a console edit.
	if err := st(svc).Primary().ZAdd(ctx, svc.layout.ZKey(b.b, 0, b.n), redisZ(999, "intruder")).Err(); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Rebuild(ctx, ref); err != nil {
		t.Fatal(err)
	}
	after := topOf(t, svc, ref, 100, ReadOptions{Consistency: ConsistencyPrimary})
	if fmt.Sprint(after) != fmt.Sprint(before) {
		t.Fatalf("rebuilt board differs:\n%v\n%v", before, after)
	}
	rep, err = svc.Reconcile(ctx, ref)
	if err != nil || rep.Drifted != 0 || rep.Checked != 25 {
		t.Fatalf("reconcile after rebuild: %+v %v", rep, err)
	}
	// A late re-projection of an older total cannot undo the rebuild.
	w := store.Write{Kind: store.KindProject, Keys: svc.layout.Keys(b.b, shard.Of("u3", b.n), b.n), Member: "u3", Version: 1,
		Value: 1, B: b.fam.enc.B, Seq: 1, SetSeq: true, MaxPoints: b.fam.enc.MaxPoints}
	if r := st(svc).Write(ctx, []store.Write{w})[0]; r.Err != nil || r.Status != "stale" {
		t.Fatalf("old re-projection after rebuild: %+v", r)
	}
}

// A correction is an audited ledger event; its reversal takes it back.
func TestLedgerCorrectionAndReversal(t *testing.T) {
	t.Parallel()
	svc, _ := newLedgerService(t, ledgerFamilies, nil)
	ctx := context.Background()
	if _, err := svc.ApplyEvent(ctx, Event{EventID: "e1", Family: "f", User: "u1", Delta: ptr(int64(10))}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Correct(ctx, Correction{CorrectionID: "c1", Family: "f", User: "u1", Delta: ptr(int64(5)), Reason: "missed"}); rank.CodeOf(err) != rank.CodeInvalidArgument {
		t.Fatalf("correction without operator: %v", err)
	}
	res, err := svc.Correct(ctx, Correction{CorrectionID: "c1", Family: "f", User: "u1", Delta: ptr(int64(5)), Operator: "ops@x", Reason: "missed"})
	if err != nil || res.Boards[0].Points != 15 {
		t.Fatalf("correction: %+v %v", res, err)
	}
	res, err = svc.ApplyEvent(ctx, Event{EventID: "r1", Family: "f", User: "u1", Reverses: "c1"})
	if err != nil || res.Boards[0].Points != 10 {
		t.Fatalf("reversal of the correction: %+v %v", res, err)
	}
	ms, err := svc.Member(ctx, BoardRef{Family: "f", Period: "current", Dimension: "national"}, "u1", ReadOptions{})
	if err != nil || ms.Points != 10 {
		t.Fatalf("member after reversal: %+v %v", ms, err)
	}
	// max families: a reversal recomputes the best from the ledger.
	for i, v := range []int64{70, 90, 80} {
		if _, err := svc.ApplyEvent(ctx, Event{EventID: fmt.Sprintf("b%d", i), Family: "best", User: "p1", Value: ptr(v)}); err != nil {
			t.Fatal(err)
		}
	}
	res, err = svc.ApplyEvent(ctx, Event{EventID: "rb", Family: "best", User: "p1", Reverses: "b1"})
	if err != nil || res.Boards[0].Points != 80 {
		t.Fatalf("max reversal: %+v %v", res, err)
	}
	ms, err = svc.Member(ctx, BoardRef{Family: "best", Period: "all", Dimension: "national"}, "p1", ReadOptions{})
	if err != nil || ms.Points != 80 {
		t.Fatalf("max member after reversal: %+v %v", ms, err)
	}
}

// Redis-only mode says so: the ledger-only operations answer 412.
func TestLedgerRequired(t *testing.T) {
	t.Parallel()
	svc := newClusterService(t, ledgerFamilies)
	ctx := context.Background()
	ref := BoardRef{Family: "f", Period: "current", Dimension: "national"}
	for _, c := range []struct {
		title string
		err   error
	}{
		{"settle", second(svc.Settle(ctx, "f", "current", 10))},
		{"archive", second(svc.Archive(ctx, "f", "current"))},
		{"rebuild", second(svc.Rebuild(ctx, ref))},
		{"reconcile", second(svc.Reconcile(ctx, ref))},
		{"correction", second(svc.Correct(ctx, Correction{CorrectionID: "c", Family: "f", User: "u", Delta: ptr(int64(1)), Operator: "o", Reason: "r"}))},
		{"max reversal", second(svc.ApplyEvent(ctx, Event{EventID: "r", Family: "best", User: "u", Reverses: "x"}))},
	} {
		if rank.CodeOf(c.err) != rank.CodeLedgerRequired {
			t.Errorf("%s: %v, want ledger_required", c.title, c.err)
		}
	}
}

func second[T any](_ T, err error) error { return err }

func redisZ(score float64, member string) redis.Z { return redis.Z{Score: score, Member: member} }

// A late event is kept for review in the ledger; accepting it makes an
// audited correction of the current period; deciding again is a no-op.
func TestLedgerReviewAcceptedAsCorrection(t *testing.T) {
	t.Parallel()
	svc, _ := newLedgerService(t, `  d:
    period: day
    timezone: UTC
    grace: 1m
    dimensions:
      national: {shards: 2}
`, nil)
	ctx := context.Background()
	at := time.Now().Add(-49 * time.Hour)
	_, err := svc.ApplyEvent(ctx, Event{EventID: "old", Family: "d", User: "u1", Delta: ptr(int64(7)), At: &at})
	if rank.CodeOf(err) != rank.CodePeriodClosed {
		t.Fatalf("late event: %v", err)
	}
	oldPeriod := svc.families["d"].spec.At(at).ID
	rv, err := svc.Reviews(ctx, "d", oldPeriod, 10)
	if err != nil || len(rv.Reviews) != 1 || rv.Reviews[0].Reason != "past_grace" {
		t.Fatalf("reviews: %+v %v", rv, err)
	}
	id := rv.Reviews[0].ID
	if _, err := svc.DecideReview(ctx, id, "d", oldPeriod, "", true); rank.CodeOf(err) != rank.CodeInvalidArgument {
		t.Fatalf("decision without operator: %v", err)
	}
	dec, err := svc.DecideReview(ctx, id, "d", oldPeriod, "ops@x", true)
	if err != nil || !dec.Accepted || dec.Correction == nil || dec.Correction.Boards[0].Points != 7 {
		t.Fatalf("accept: %+v %v", dec, err)
	}
	again, err := svc.DecideReview(ctx, id, "d", oldPeriod, "ops@x", true)
	if err != nil || !again.Correction.Duplicate {
		t.Fatalf("accepting twice: %+v %v", again, err)
	}
	ms, err := svc.Member(ctx, BoardRef{Family: "d", Period: "current", Dimension: "national"}, "u1", ReadOptions{})
	if err != nil || ms.Points != 7 {
		t.Fatalf("member after the accepted review: %+v %v", ms, err)
	}
	if _, err := svc.DecideReview(ctx, id, "d", oldPeriod, "ops@x", false); rank.CodeOf(err) != rank.CodeInvalidArgument {
		t.Fatalf("rejecting an accepted review: %v", err)
	}
}

const groupFamilies = `  f:
    period: week
    timezone: UTC
    tie: first
    max_points: 1000
    dimensions:
      national: {shards: 4}
      province: {shards: 2}
  best:
    aggregate: max
    period: all
    dimensions:
      national: {shards: 2}
`

// One batch is one group commit: duplicates (of a recorded event and within
// the batch), refused events (a frozen period, points out of range, invalid
// input) and fine events each get their own answer, and a refused event
// fails alone.
func TestLedgerGroupMixed(t *testing.T) {
	t.Parallel()
	svc, l := newLedgerService(t, groupFamilies, nil)
	ctx := context.Background()
	if _, err := svc.ApplyEvent(ctx, Event{EventID: "old", Family: "f", User: "a", Delta: ptr(int64(100))}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.ApplyEvent(ctx, Event{EventID: "b0", Family: "best", User: "a", Value: ptr(int64(5))}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Freeze(ctx, "best", "current"); err != nil {
		t.Fatal(err)
	}
	zj := map[string]string{"province": "zj"}
	evs := []Event{
		{EventID: "g1", Family: "f", User: "a", Delta: ptr(int64(50))},           // a: 150
		{EventID: "old", Family: "f", User: "a", Delta: ptr(int64(100))},         // recorded before
		{EventID: "b1", Family: "best", User: "b", Value: ptr(int64(9))},         // frozen period
		{EventID: "big", Family: "f", User: "a", Delta: ptr(int64(900))},         // 1050 > max_points
		{EventID: "g2", Family: "f", User: "b", Delta: ptr(int64(20)), Dims: zj}, // b: 20 on two boards
		{EventID: "g1", Family: "f", User: "a", Delta: ptr(int64(50))},           // duplicate within the batch
		{EventID: "bad id!", Family: "f", User: "a", Delta: ptr(int64(1))},       // invalid
		{EventID: "g3", Family: "f", User: "a", Delta: ptr(int64(800))},          // a: 950, fits without "big"
	}
	items, err := svc.ApplyBatch(ctx, evs)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name     string
		wantCode rank.Code
		dup      bool
		points   []int64
	}{
		{name: "fine", points: []int64{150}},
		{name: "recorded duplicate: the totals after the group", dup: true, points: []int64{950}},
		{name: "frozen period", wantCode: rank.CodePeriodClosed},
		{name: "out of range", wantCode: rank.CodeOutOfRange},
		{name: "two boards", points: []int64{20, 20}},
		{name: "duplicate within the batch", dup: true, points: []int64{950}},
		{name: "invalid", wantCode: rank.CodeInvalidArgument},
		{name: "after a refused event", points: []int64{950}},
	}
	for i, c := range cases {
		it := items[i]
		if c.wantCode != "" {
			if rank.CodeOf(it.Err) != c.wantCode {
				t.Errorf("%s: err = %v, want %s", c.name, it.Err, c.wantCode)
			}
			continue
		}
		if it.Err != nil {
			t.Errorf("%s: %v", c.name, it.Err)
			continue
		}
		var pts []int64
		for _, b := range it.Result.Boards {
			pts = append(pts, b.Points)
		}
		if it.Result.Duplicate != c.dup || fmt.Sprint(pts) != fmt.Sprint(c.points) {
			t.Errorf("%s: duplicate=%v points %v, want %v %v", c.name, it.Result.Duplicate, pts, c.dup, c.points)
		}
	}
	wantTop(t, svc, BoardRef{Family: "f", Period: "current", Dimension: "national"}, []userPts{{"a", 950}, {"b", 20}})
	wantTop(t, svc, BoardRef{Family: "f", Period: "current", Dimension: "province:zj"}, []userPts{{"b", 20}})
	wantTop(t, svc, BoardRef{Family: "best", Period: "current", Dimension: "national"}, []userPts{{"a", 5}})
	// The frozen period's event is kept for review, nothing of "big" is.
	rv, err := svc.Reviews(ctx, "best", "current", 10)
	if err != nil || len(rv.Reviews) != 1 {
		t.Fatalf("reviews of best: %+v %v", rv, err)
	}
	if p, err := svc.ProjectPending(ctx, 0); err != nil || p != 0 {
		t.Errorf("ProjectPending = %d, %v; want nothing left to project", p, err)
	}
	if got, err := l.Total(ctx, "f", items[0].Result.Period, "national", "a"); err != nil || got.Points != 950 || got.Version != 3 {
		t.Errorf("ledger total of a = %+v, %v; want 950 at version 3", got, err)
	}
}

// One group holds a member's events of two periods (a late event within
// grace and one of today): each period's board gets its own projection, even
// when the older period's total has the higher version. Keyed by tag, member
// and board alone, the two collided and today's write was dropped (answered
// with yesterday's result, marked projected, so the projector never sent it).
func TestLedgerGroupSpansTwoPeriods(t *testing.T) {
	t.Parallel()
	svc, l := newLedgerService(t, `  d:
    period: day
    timezone: UTC
    grace: 48h
    dimensions:
      national: {shards: 2}
`, nil)
	ctx := context.Background()
	yesterday := time.Now().Add(-24 * time.Hour)
	for i := range 3 { // u1's total of yesterday at version 3
		if _, err := svc.ApplyEvent(ctx, Event{EventID: fmt.Sprintf("y%d", i), Family: "d", User: "u1", Delta: ptr(int64(1)), At: &yesterday}); err != nil {
			t.Fatal(err)
		}
	}
	items, err := svc.ApplyBatch(ctx, []Event{
		{EventID: "late", Family: "d", User: "u1", Delta: ptr(int64(10)), At: &yesterday}, // yesterday: 13, version 4
		{EventID: "today", Family: "d", User: "u1", Delta: ptr(int64(7))},                 // today: 7, version 1
	})
	if err != nil {
		t.Fatal(err)
	}
	want := []int64{13, 7}
	for i, it := range items {
		if it.Err != nil || len(it.Result.Boards) != 1 || it.Result.Boards[0].Points != want[i] {
			t.Fatalf("item %d = %+v, %v; want %d points", i, it.Result, it.Err, want[i])
		}
	}
	old := svc.families["d"].spec.At(yesterday).ID
	wantTop(t, svc, BoardRef{Family: "d", Period: old, Dimension: "national"}, []userPts{{"u1", 13}})
	wantTop(t, svc, BoardRef{Family: "d", Period: "current", Dimension: "national"}, []userPts{{"u1", 7}})
	if got, err := l.Total(ctx, "d", items[1].Result.Period, "national", "u1"); err != nil || got.Points != 7 || got.Version != 1 {
		t.Errorf("ledger total of today = %+v, %v; want 7 at version 1", got, err)
	}
}

// Two gateways on one ledger and one cluster write the same event ids at
// once, as batches and as single events: each id applies exactly once, one
// gateway answers it applied and the other duplicate, and Redis equals the
// ledger.
func TestLedgerTwoGatewaysSameIDs(t *testing.T) {
	t.Parallel()
	svcA, l := newLedgerService(t, groupFamilies, nil)
	l2, err := ledger.Open(context.Background(), testpg.DSN(t), ledger.Options{Schema: l.Schema(), MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l2.Close)
	svcB, err := New(Options{Config: svcA.cfg, Backend: svcA.writeBE.(Backend), ShardTimeout: 5 * time.Second, Ledger: l2})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	const n, users = 60, 7
	ev := func(i int) Event {
		return Event{EventID: fmt.Sprintf("e%02d", i), Family: "f", User: fmt.Sprintf("u%d", i%users), Delta: ptr(int64(i + 1)),
			Dims: map[string]string{"province": fmt.Sprintf("p%d", i%2)}}
	}
	var batch, reversed []Event
	for i := range n / 2 {
		batch = append(batch, ev(i))
	}
	for i := n / 2; i > 0; i-- {
		reversed = append(reversed, ev(i-1))
	}
	// Per id: how many answers said applied (not duplicate).
	applied := make([]atomic.Int32, n)
	count := func(items []BatchItem, errs ...error) {
		for _, e := range errs {
			if e != nil {
				t.Error(e)
			}
		}
		for _, it := range items {
			if it.Err != nil {
				t.Errorf("item: %v", it.Err)
				continue
			}
			if !it.Result.Duplicate {
				var i int
				fmt.Sscanf(it.Result.EventID, "e%02d", &i)
				applied[i].Add(1)
			}
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() { items, err := svcA.ApplyBatch(ctx, batch); count(items, err) })
	wg.Go(func() { items, err := svcB.ApplyBatch(ctx, reversed); count(items, err) })
	for i := n / 2; i < n; i++ {
		for _, svc := range []*Service{svcA, svcB} {
			wg.Go(func() {
				res, err := svc.ApplyEvent(ctx, ev(i))
				count([]BatchItem{{Result: &res}}, err)
			})
		}
	}
	wg.Wait()
	want := map[string]int64{}
	for i := range n {
		if c := applied[i].Load(); c != 1 {
			t.Errorf("e%02d answered applied %d times, want once", i, c)
		}
		want[fmt.Sprintf("u%d", i%users)] += int64(i + 1)
	}
	got := topOf(t, svcA, BoardRef{Family: "f", Period: "current", Dimension: "national"}, 100, primaryRead)
	if len(got) != users {
		t.Fatalf("national has %d members, want %d", len(got), users)
	}
	pid := svcA.families["f"].spec.At(svcA.now()).ID
	for _, e := range got {
		lt, err := l.Total(ctx, "f", pid, "national", e.User)
		if err != nil || e.Points != want[e.User] || lt.Points != want[e.User] {
			t.Errorf("%s: Redis %d, ledger %+v (%v), want %d", e.User, e.Points, lt, err, want[e.User])
		}
	}
}

// A ledger-mode write observes its stages: the request's queue wait, the
// group's transaction, projection and whole run, and the group's size. A
// reversal commits alone, outside the queue, and observes the others.
func TestLedgerGroupStageMetrics(t *testing.T) {
	t.Parallel()
	award := Event{EventID: "e1", Family: "f", User: "u1", Delta: ptr(int64(5))}
	tests := []struct {
		name string
		evs  []Event
		want map[string]uint64 // series → observations
	}{
		{"an award", []Event{award}, map[string]uint64{
			"rankgate_ledger_group_stage_seconds/queue": 1, "rankgate_ledger_group_stage_seconds/record": 1,
			"rankgate_ledger_group_stage_seconds/project": 1, "rankgate_ledger_group_stage_seconds/group": 1,
			"rankgate_ledger_group_events": 1,
		}},
		{"an award and its reversal", []Event{award, {EventID: "r1", Family: "f", User: "u1", Reverses: "e1"}}, map[string]uint64{
			"rankgate_ledger_group_stage_seconds/queue": 1, "rankgate_ledger_group_stage_seconds/record": 2,
			"rankgate_ledger_group_stage_seconds/project": 2, "rankgate_ledger_group_stage_seconds/group": 2,
			"rankgate_ledger_group_events": 2,
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			reg := prometheus.NewRegistry()
			l := openTestLedger(t)
			svc := newClusterServiceWith(t, ledgerFamilies, func(o *Options, _ *store.Store) {
				o.Ledger, o.Registerer = l, reg
			})
			for _, ev := range tc.evs {
				if res, err := svc.ApplyEvent(t.Context(), ev); err != nil || res.Duplicate {
					t.Fatalf("%s: %+v, %v", ev.EventID, res, err)
				}
			}
			mfs, err := reg.Gather()
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]uint64{}
			for _, mf := range mfs {
				for _, m := range mf.GetMetric() {
					key := mf.GetName()
					for _, lp := range m.GetLabel() {
						key += "/" + lp.GetValue()
					}
					got[key] = m.GetHistogram().GetSampleCount()
				}
			}
			for k, want := range tc.want {
				if got[k] != want {
					t.Errorf("%s observed %d times, want %d (all: %v)", k, got[k], want, got)
				}
			}
		})
	}
}

package gateway

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rankgate/rankgate/internal/ledger"
	"github.com/rankgate/rankgate/internal/soon"
	"github.com/rankgate/rankgate/internal/store"
	"github.com/rankgate/rankgate/internal/testcluster"
	"github.com/rankgate/rankgate/internal/testpg"
)

// flowClock is real time shifted by an offset that a test can jump ahead:
// weeks pass at once, while the scheduler's reaction to a jump still takes
// real time, so the lag it measures is the one a running gateway has.
type flowClock struct {
	mu     sync.Mutex
	offset time.Duration
}

func newFlowClock(at time.Time) *flowClock { return &flowClock{offset: time.Until(at)} }

func (c *flowClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

// JumpTo moves the clock forward to t.
func (c *flowClock) JumpTo(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if d := time.Until(t) - c.offset; d > 0 {
		c.offset += d
	}
}

const lifecycleFamilies = `  wk:
    period: week
    timezone: UTC
    grace: 5m
    tie: first
    lifecycle:
      freeze: auto
      settle: {after: 10m, top: 10}
      archive: {after: 24h}
    dimensions:
      national: {shards: 4}
      province: {shards: 2}
`

// gatewayUnderTest is one gateway of a race: its Service, scheduler and
// metrics.
type gatewayUnderTest struct {
	svc    *Service
	sched  *Scheduler
	reg    *prometheus.Registry
	cancel context.CancelFunc
	done   chan struct{}
}

func (g *gatewayUnderTest) start(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	g.cancel, g.done = cancel, make(chan struct{})
	go func() { defer close(g.done); g.sched.Run(ctx) }()
	t.Cleanup(g.stop)
}

func (g *gatewayUnderTest) stop() {
	g.cancel()
	<-g.done
}

// stepCount sums rankgate_lifecycle_steps_total{step, outcome} of gateways.
func stepCount(t *testing.T, step, outcome string, gws ...*gatewayUnderTest) float64 {
	t.Helper()
	var n float64
	for _, g := range gws {
		n += metricValue(t, g.reg, "rankgate_lifecycle_steps_total", map[string]string{"step": step, "outcome": outcome})
	}
	return n
}

// lagWithin returns how many lag observations of step the gateways made and
// how many of them were within bound seconds (a histogram bucket bound).
func lagWithin(t *testing.T, step string, bound float64, gws ...*gatewayUnderTest) (count uint64, within uint64) {
	count, within, _ = lagStats(t, step, bound, gws...)
	return count, within
}

// lagStats is lagWithin with the sum of the observed lags, in seconds.
func lagStats(t *testing.T, step string, bound float64, gws ...*gatewayUnderTest) (count uint64, within uint64, sum float64) {
	t.Helper()
	for _, g := range gws {
		mfs, err := g.reg.Gather()
		if err != nil {
			t.Fatal(err)
		}
		for _, mf := range mfs {
			if mf.GetName() != "rankgate_lifecycle_step_lag_seconds" {
				continue
			}
			for _, m := range mf.GetMetric() {
				if !hasLabel(m, "step", step) {
					continue
				}
				h := m.GetHistogram()
				count += h.GetSampleCount()
				sum += h.GetSampleSum()
				for _, b := range h.GetBucket() {
					if b.GetUpperBound() == bound {
						within += b.GetCumulativeCount()
					}
				}
			}
		}
	}
	return count, within, sum
}

// ticked waits until every gateway's scheduler looked at the clock at or
// after t.
func ticked(t *testing.T, at time.Time, gws ...*gatewayUnderTest) {
	t.Helper()
	soon.Eventually(t, 5*time.Second, func() error {
		for i, g := range gws {
			if v := metricValue(t, g.reg, "rankgate_lifecycle_last_tick_timestamp_seconds", nil); v < float64(at.UnixNano())/1e9 {
				return fmt.Errorf("gateway %d last ticked at %v", i, v)
			}
		}
		return nil
	})
}

// Two gateways race the scheduler of one ledger: a week rolls over, grace
// ends, the period freezes, settles and archives on schedule — each step run
// once, by whichever gateway holds the advisory lock, within 2 s of its time —
// and when the holder stops, the other takes over.
func TestSchedulerTwoGatewaysLedger(t *testing.T) {
	t.Parallel()
	dsn, schema := testpg.DSN(t), testpg.Schema(t)
	clk := newFlowClock(time.Date(2026, 12, 9, 12, 0, 0, 0, time.UTC)) // in 2026-W50 (Dec 7 – Dec 14)
	var prefix string
	gws := make([]*gatewayUnderTest, 2)
	for i := range gws {
		l, err := ledger.Open(context.Background(), dsn, ledger.Options{Schema: schema, MaxConns: 4})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(l.Close)
		g := &gatewayUnderTest{reg: prometheus.NewRegistry()}
		g.svc = newClusterServiceWith(t, lifecycleFamilies, func(o *Options, _ *store.Store) {
			if prefix == "" {
				prefix = o.Config.Redis.Prefix
			}
			o.Config.Redis.Prefix = prefix // both gateways on the same keys
			o.Ledger, o.Now = l, clk.Now
		})
		g.sched, err = g.svc.NewScheduler(SchedulerOptions{Lease: l.NewLease("lifecycle", fmt.Sprintf("gw-%d", i)),
			Tick: 20 * time.Millisecond, Registerer: g.reg})
		if err != nil {
			t.Fatal(err)
		}
		gws[i] = g
	}
	ctx := context.Background()
	for i := 0; i < 30; i++ {
		if _, err := gws[i%2].svc.ApplyEvent(ctx, Event{EventID: fmt.Sprintf("e%d", i), Family: "wk", User: fmt.Sprintf("u%d", i%12),
			Delta: ptr(int64(i + 1)), Dims: map[string]string{"province": fmt.Sprintf("p%d", i%3)}}); err != nil {
			t.Fatal(err)
		}
	}
	for _, g := range gws {
		g.start(t)
	}
	week := "2026-W50"
	end := time.Date(2026, 12, 14, 0, 0, 0, 0, time.UTC)
	freezeAt, settleAt, archiveAt := end.Add(5*time.Minute), end.Add(15*time.Minute), end.Add(24*time.Hour+15*time.Minute)

	d, err := gws[0].svc.PeriodDetail(ctx, "wk", week)
	if err != nil {
		t.Fatal(err)
	}
	if d.NextStep == nil || d.NextStep.Step != StepFreeze || !d.NextStep.At.Equal(freezeAt) || !d.Schedule[StepArchive].Equal(archiveAt) {
		t.Fatalf("before the end: next step %+v, schedule %v", d.NextStep, d.Schedule)
	}
	state := func(want string) func() error {
		return func() error {
			d, err := gws[1].svc.PeriodDetail(ctx, "wk", week)
			if err != nil {
				return err
			}
			st, err := gws[1].svc.ledger.State(ctx, "wk", week)
			if err != nil {
				return err
			}
			if st != want || d.State != want {
				return fmt.Errorf("ledger state %s, redis state %s, want %s", st, d.State, want)
			}
			return nil
		}
	}
	// The week rolls over; within grace nothing happens.
	clk.JumpTo(freezeAt.Add(-time.Minute))
	ticked(t, freezeAt.Add(-time.Minute), gws...)
	if n := stepCount(t, StepFreeze, "done", gws...); n != 0 {
		t.Fatalf("froze %v times before end + grace", n)
	}
	if err := state("open")(); err != nil {
		t.Fatalf("before end + grace: %v", err)
	}
	// A step is counted (and its lag observed) when it returns, just after
	// the state changed: wait for that before moving the clock or stopping
	// its gateway, or the count and the lag are the test's doing.
	counted := func(step string) {
		t.Helper()
		soon.Eventually(t, 5*time.Second, func() error {
			if n := stepCount(t, step, "done", gws...); n == 0 {
				return fmt.Errorf("%s not counted yet", step)
			}
			return nil
		})
	}
	clk.JumpTo(freezeAt)
	// Grace ends: frozen.
	soon.Eventually(t, 10*time.Second, state("frozen"))
	counted(StepFreeze)
	if _, err := gws[0].svc.ApplyEvent(ctx, Event{EventID: "late", Family: "wk", User: "u1", Delta: ptr(int64(1)),
		At: ptr(end.Add(-time.Hour))}); err == nil {
		t.Fatal("an event for the frozen week was applied")
	}
	d, err = gws[0].svc.PeriodDetail(ctx, "wk", week)
	if err != nil || d.NextStep == nil || d.NextStep.Step != StepSettle || !d.NextStep.At.Equal(settleAt) {
		t.Fatalf("after the freeze: %+v %v", d.NextStep, err)
	}
	clk.JumpTo(settleAt)
	soon.Eventually(t, 10*time.Second, state("settled"))
	counted(StepSettle)
	sv, err := gws[1].svc.SettlementOf(ctx, "wk", week)
	if err != nil || len(sv.Boards) != 4 || len(sv.Outbox) == 0 {
		t.Fatalf("settlement: %d boards, %d awards, %v", len(sv.Boards), len(sv.Outbox), err)
	}
	// The holder stops; the other gateway takes over and archives.
	holder := -1
	for i, g := range gws {
		if metricValue(t, g.reg, "rankgate_lifecycle_leader", nil) == 1 {
			if holder >= 0 {
				t.Fatalf("gateways %d and %d both hold the lease", holder, i)
			}
			holder = i
		}
	}
	if holder < 0 {
		t.Fatal("no gateway holds the lease")
	}
	gws[holder].stop()
	other := gws[1-holder]
	soon.Eventually(t, 10*time.Second, func() error {
		if metricValue(t, other.reg, "rankgate_lifecycle_leader", nil) != 1 {
			return fmt.Errorf("gateway %d does not hold the lease yet", 1-holder)
		}
		return nil
	})
	clk.JumpTo(archiveAt)
	soon.Eventually(t, 10*time.Second, state("archived"))
	counted(StepArchive)

	for _, step := range []string{StepFreeze, StepSettle, StepArchive} {
		if n := stepCount(t, step, "done", gws...); n != 1 {
			t.Errorf("%s ran %v times, want once", step, n)
		}
		if n := stepCount(t, step, "error", gws...); n != 0 {
			t.Errorf("%s failed %v times", step, n)
		}
		count, within, sum := lagStats(t, step, 2, gws...)
		if count != 1 || within != 1 {
			t.Errorf("%s: %d lag observations, %d within 2 s", step, count, within)
		}
		t.Logf("%s: lag %.3f s behind schedule", step, sum)
	}
	if d, err := other.svc.PeriodDetail(ctx, "wk", week); err != nil || d.NextStep != nil {
		t.Fatalf("archived period: next step %+v, %v", d.NextStep, err)
	}
}

// Redis-only mode: a Redis lease with a fencing token picks the runner;
// settle is skipped (no ledger), archive follows the freeze and sets TTLs.
func TestSchedulerRedisOnly(t *testing.T) {
	t.Parallel()
	clk := newFlowClock(time.Date(2026, 12, 31, 23, 0, 0, 0, time.UTC))
	var st *store.Store
	svc := newClusterServiceWith(t, `  hr:
    period: hour
    timezone: Asia/Shanghai
    grace: 0s
    lifecycle:
      settle: {}
      archive: {after: 30m}
    dimensions:
      national: {shards: 2}
`, func(o *Options, s *store.Store) { o.Now, st = clk.Now, s })
	reg := prometheus.NewRegistry()
	g := &gatewayUnderTest{svc: svc, reg: reg}
	var err error
	g.sched, err = svc.NewScheduler(SchedulerOptions{Lease: st.NewLease(svc.layout.Lease("lifecycle"), "gw-a", 5*time.Second),
		Tick: 20 * time.Millisecond, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	res, err := svc.ApplyEvent(ctx, Event{EventID: "e1", Family: "hr", User: "u1", Delta: ptr(int64(5))})
	if err != nil || res.Period != "2027-01-01T07" {
		t.Fatalf("event: %+v %v", res, err)
	}
	g.start(t)
	end := time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC) // 08:00 in Shanghai
	clk.JumpTo(end)
	soon.Eventually(t, 10*time.Second, func() error {
		d, err := svc.PeriodDetail(ctx, "hr", res.Period)
		if err != nil {
			return err
		}
		if d.State != "frozen" || d.NextStep == nil || d.NextStep.Step != StepArchive || !d.NextStep.At.Equal(end.Add(30*time.Minute)) {
			return fmt.Errorf("state %s, next %+v", d.State, d.NextStep)
		}
		// Counted (and its lag observed) when the step returns, just after
		// the state changed: before the clock moves on.
		if n := stepCount(t, StepFreeze, "done", g); n == 0 {
			return fmt.Errorf("freeze not counted yet")
		}
		return nil
	})
	clk.JumpTo(end.Add(30 * time.Minute))
	soon.Eventually(t, 10*time.Second, func() error {
		d, err := svc.PeriodDetail(ctx, "hr", res.Period)
		if err != nil {
			return err
		}
		if d.State != "archived" {
			return fmt.Errorf("state %s", d.State)
		}
		if n := stepCount(t, StepArchive, "done", g); n == 0 {
			return fmt.Errorf("archive not counted yet")
		}
		return nil
	})
	rc := testcluster.Client(t)
	b := svc.families["hr"].board(res.Period, "national", "")
	for i := 0; i < 2; i++ {
		k := svc.layout.Keys(b, i, 2)
		if ttl, err := rc.PTTL(ctx, k.Meta).Result(); err != nil || ttl <= 0 {
			t.Fatalf("shard %d meta TTL after archive: %v %v", i, ttl, err)
		}
	}
	for _, step := range []string{StepFreeze, StepArchive} {
		if n := stepCount(t, step, "done", g); n != 1 {
			t.Errorf("%s ran %v times, want once", step, n)
		}
		if count, within := lagWithin(t, step, 2, g); count != 1 || within != 1 {
			t.Errorf("%s: %d lag observations, %d within 2 s", step, count, within)
		}
	}
	if n := stepCount(t, StepSettle, "done", g); n != 0 {
		t.Errorf("settle ran %v times in Redis-only mode", n)
	}
}

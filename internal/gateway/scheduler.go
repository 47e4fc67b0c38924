package gateway

import (
	"context"
	"errors"
	"log/slog"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rankgate/rankgate/internal/config"
	"github.com/rankgate/rankgate/internal/period"
	"github.com/rankgate/rankgate/internal/store"
)

// Lease lets one gateway at a time run the scheduler: Hold takes or keeps it
// and returns the fencing token while held (0 while another holds it).
// *store.Lease (Redis-only mode) and *ledger.Lease (a PostgreSQL advisory
// lock, ledger mode) implement it.
type Lease interface {
	Hold(ctx context.Context) (int64, error)
	Release(ctx context.Context) error
}

var _ Lease = (*store.Lease)(nil)

// Task is more work for the lease holder, run on every tick after the steps
// (the award delivery). now is the gateway's clock.
type Task func(ctx context.Context, now time.Time)

// Lifecycle steps.
const (
	StepFreeze  = "freeze"
	StepSettle  = "settle"
	StepArchive = "archive"
)

// SchedulerOptions configure a Scheduler.
type SchedulerOptions struct {
	Lease Lease
	// Tick is the longest the scheduler sleeps between looks (default
	// 500ms); it wakes earlier for a step due sooner.
	Tick time.Duration
	// Lookback is how far back (by scheduled freeze time) it catches up on
	// periods a stopped fleet left behind (default 35 days, at most
	// maxLookbackPeriods periods per family).
	Lookback   time.Duration
	Registerer prometheus.Registerer
	Tasks      []Task
}

const (
	defaultTick        = 500 * time.Millisecond
	defaultLookback    = 35 * 24 * time.Hour
	maxLookbackPeriods = 1000
	// emptyMargin: a period nobody wrote to is left alone once this long
	// past its freeze time (a write accepted just before may still land).
	emptyMargin = time.Minute
)

// Scheduler runs the lifecycle steps of every family with `lifecycle` on
// schedule — freeze at end + grace, settle, archive — while its gateway
// holds the lease. Every step is idempotent, so a step repeated by a holder
// that lost the lease changes nothing; before each step the holder checks
// that its token still holds.
type Scheduler struct {
	svc      *Service
	lease    Lease
	tick     time.Duration
	lookback time.Duration
	tasks    []Task
	log      *slog.Logger
	m        *schedMetrics

	families []*family
	done     map[string]bool      // family/period: every step done, or nothing to do
	cands    map[string]candCache // family → periods in reach
	token    int64
}

type candCache struct {
	current string
	list    []period.Period // oldest first
}

type schedMetrics struct {
	steps    *prometheus.CounterVec
	lag      *prometheus.HistogramVec
	overdue  *prometheus.GaugeVec
	leader   prometheus.Gauge
	token    prometheus.Gauge
	lastTick prometheus.Gauge
}

func newSchedMetrics(reg prometheus.Registerer) (*schedMetrics, error) {
	m := &schedMetrics{
		steps: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rankgate_lifecycle_steps_total", Help: "Scheduled lifecycle steps run by this gateway, by family, step (freeze, settle, archive) and outcome (done, error).",
		}, []string{"family", "step", "outcome"}),
		lag: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "rankgate_lifecycle_step_lag_seconds", Help: "How long after its scheduled time a lifecycle step completed, by step.",
			Buckets: []float64{.05, .1, .25, .5, 1, 2, 5, 10, 30, 60, 300, 3600},
		}, []string{"step"}),
		overdue: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rankgate_lifecycle_overdue_seconds", Help: "On the lease holder: how far behind schedule the most overdue step of a family is (0: none due).",
		}, []string{"family"}),
		leader: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rankgate_lifecycle_leader", Help: "1 while this gateway holds the lifecycle lease and runs the scheduler.",
		}),
		token: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rankgate_lifecycle_lease_token", Help: "The fencing token of the lifecycle lease this gateway holds (0: none).",
		}),
		lastTick: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rankgate_lifecycle_last_tick_timestamp_seconds", Help: "When the scheduler last looked at the schedule (any gateway, leader or not).",
		}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.steps, m.lag, m.overdue, m.leader, m.token, m.lastTick} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// HasLifecycle reports whether any family runs its lifecycle by schedule
// (tournaments, when on, always do).
func (s *Service) HasLifecycle() bool {
	if s.tournamentsOn() == nil {
		return true
	}
	for _, f := range s.families {
		if f.cfg.Lifecycle != nil {
			return true
		}
	}
	return false
}

// NewScheduler builds the scheduler of the families with `lifecycle`.
func (s *Service) NewScheduler(o SchedulerOptions) (*Scheduler, error) {
	if o.Lease == nil {
		return nil, errors.New("gateway: the scheduler needs a lease")
	}
	if o.Tick <= 0 {
		o.Tick = defaultTick
	}
	if o.Lookback <= 0 {
		o.Lookback = defaultLookback
	}
	m, err := newSchedMetrics(o.Registerer)
	if err != nil {
		return nil, err
	}
	sc := &Scheduler{svc: s, lease: o.Lease, tick: o.Tick, lookback: o.Lookback, tasks: o.Tasks,
		log: s.log.With("component", "scheduler"), m: m, done: map[string]bool{}, cands: map[string]candCache{}}
	names := make([]string, 0, len(s.families))
	for name, f := range s.families {
		if f.cfg.Lifecycle != nil {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	for _, name := range names {
		f := s.families[name]
		sc.families = append(sc.families, f)
		m.overdue.WithLabelValues(name).Set(0)
		if f.cfg.Lifecycle.Settle != nil && s.ledger == nil {
			sc.log.Warn("lifecycle.settle is ignored in Redis-only mode (settlement needs the ledger); archive follows the freeze",
				"family", name)
		}
	}
	return sc, nil
}

// Run looks at the schedule until ctx ends, then gives the lease up.
func (sc *Scheduler) Run(ctx context.Context) {
	defer func() {
		rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Second)
		defer cancel()
		if err := sc.lease.Release(rctx); err != nil {
			sc.log.Warn("releasing the lifecycle lease failed", "err", err)
		}
		sc.m.leader.Set(0)
		sc.m.token.Set(0)
	}()
	for {
		wait := sc.Tick(ctx)
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C:
		}
	}
}

// Tick takes or keeps the lease and, while held, runs every step that is
// due, then the tasks. It returns how long to wait before the next look.
func (sc *Scheduler) Tick(ctx context.Context) time.Duration {
	now := sc.svc.now()
	sc.m.lastTick.Set(float64(now.UnixNano()) / 1e9)
	tok, err := sc.lease.Hold(ctx)
	if err != nil {
		sc.log.Warn("the lifecycle lease could not be checked", "err", err)
		tok = 0
	}
	if tok != sc.token {
		if tok != 0 {
			sc.log.Info("this gateway runs the lifecycle scheduler", "token", tok)
		} else if sc.token != 0 {
			sc.log.Warn("the lifecycle lease was lost", "token", sc.token)
		}
		sc.token = tok
	}
	sc.m.token.Set(float64(tok))
	if tok == 0 {
		sc.m.leader.Set(0)
		for _, f := range sc.families {
			sc.m.overdue.WithLabelValues(f.cfg.Name).Set(0)
		}
		return sc.tick
	}
	sc.m.leader.Set(1)
	next := now.Add(sc.tick)
	for _, f := range sc.families {
		if ctx.Err() != nil {
			return sc.tick
		}
		due, overdue := sc.family(ctx, f)
		if !due.IsZero() && due.Before(next) {
			next = due
		}
		sc.m.overdue.WithLabelValues(f.cfg.Name).Set(overdue.Seconds())
	}
	// Tournaments, as the registry knows them now (no overdue gauge per
	// tournament: their ids are unbounded label values).
	for _, f := range sc.svc.tournamentFamilies(ctx) {
		if ctx.Err() != nil {
			return sc.tick
		}
		if due, _ := sc.family(ctx, f); !due.IsZero() && due.Before(next) {
			next = due
		}
	}
	for _, task := range sc.tasks {
		if ctx.Err() != nil {
			break
		}
		task(ctx, sc.svc.now())
	}
	wait := next.Sub(sc.svc.now())
	return min(max(wait, 10*time.Millisecond), sc.tick)
}

// candidates lists the family's periods whose freeze lies within the
// lookback, oldest first (cached until the current period changes).
func (sc *Scheduler) candidates(f *family, now time.Time) []period.Period {
	cur := f.spec.At(now)
	if c, ok := sc.cands[f.cfg.Name]; ok && c.current == cur.ID {
		return c.list
	}
	var list []period.Period
	horizon := now.Add(-sc.lookback)
	for p := cur; p.ID != "" && len(list) < maxLookbackPeriods; p = f.spec.Prev(p) {
		if p.End.IsZero() || p.End.Add(f.cfg.Grace).Before(horizon) {
			break
		}
		list = append(list, p)
	}
	for i, j := 0, len(list)-1; i < j; i, j = i+1, j-1 {
		list[i], list[j] = list[j], list[i]
	}
	sc.cands[f.cfg.Name] = candCache{current: cur.ID, list: list}
	return list
}

// family runs the due steps of one family. It returns the earliest future
// step time it saw and how overdue the most overdue step it could not run is.
func (sc *Scheduler) family(ctx context.Context, f *family) (next time.Time, overdue time.Duration) {
	soonest := func(t time.Time) {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	for _, p := range sc.candidates(f, sc.svc.now()) {
		key := f.cfg.Name + "/" + p.ID
		if sc.done[key] {
			continue
		}
		sch := sc.svc.schedule(f, p)
		if now := sc.svc.now(); now.Before(sch.FreezeAt) {
			soonest(sch.FreezeAt)
			continue
		}
		// Run the steps that are due, one after the other (an `after` of 0
		// makes the next one due at once).
		for range 4 {
			now := sc.svc.now()
			st, err := sc.svc.lifecycleState(ctx, f, p.ID)
			if err != nil {
				sc.log.Warn("reading a period's state failed", "family", f.cfg.Name, "period", p.ID, "err", err)
				overdue = max(overdue, now.Sub(sch.FreezeAt))
				break
			}
			if !st.exists {
				if sch.unwritten(false, now) {
					sc.done[key] = true
				} else {
					soonest(sch.FreezeAt.Add(emptyMargin))
				}
				break
			}
			ns := sch.next(st.state, sc.svc.ledger != nil, st.boards)
			if ns.Step == "" {
				sc.done[key] = true
				break
			}
			if ns.Waiting != "" {
				break // an operator's move; not late on our side
			}
			if now.Before(ns.At) {
				soonest(ns.At)
				break
			}
			if !sc.stillHeld(ctx) {
				return next, 0
			}
			if err := sc.run(ctx, f, p, ns.Step, sch); err != nil {
				sc.m.steps.WithLabelValues(f.cfg.Name, ns.Step, "error").Inc()
				sc.log.Error("a scheduled lifecycle step failed; retrying on the next tick", "family", f.cfg.Name, "period", p.ID,
					"step", ns.Step, "scheduled", ns.At, "err", err)
				overdue = max(overdue, sc.svc.now().Sub(ns.At))
				break
			}
			lag := sc.svc.now().Sub(ns.At)
			sc.m.steps.WithLabelValues(f.cfg.Name, ns.Step, "done").Inc()
			sc.m.lag.WithLabelValues(ns.Step).Observe(lag.Seconds())
			sc.log.Info("scheduled lifecycle step done", "family", f.cfg.Name, "period", p.ID, "step", ns.Step,
				"scheduled", ns.At, "lag", lag.String(), "token", sc.token)
		}
	}
	return next, overdue
}

// stillHeld checks the fencing token before a step: a holder whose lease
// moved on stops.
func (sc *Scheduler) stillHeld(ctx context.Context) bool {
	tok, err := sc.lease.Hold(ctx)
	if err != nil || tok != sc.token || tok == 0 {
		sc.log.Warn("the lifecycle lease moved on; stopping this tick", "token", sc.token, "now", tok, "err", err)
		sc.token = tok
		return false
	}
	return true
}

func (sc *Scheduler) run(ctx context.Context, f *family, p period.Period, step string, sch lifecycleSchedule) error {
	switch step {
	case StepFreeze:
		_, err := sc.svc.Freeze(ctx, f.cfg.Name, p.ID)
		return err
	case StepSettle:
		_, err := sc.svc.Settle(ctx, f.cfg.Name, p.ID, sch.Top)
		return err
	case StepArchive:
		_, err := sc.svc.archive(ctx, f, p)
		return err
	}
	return errors.New("unknown step " + step)
}

// lifecycleSchedule is when each step of one period is due.
type lifecycleSchedule struct {
	Auto      bool // freeze: auto
	FreezeAt  time.Time
	Settle    bool // settle on schedule (ledger mode and lifecycle.settle)
	SettleAt  time.Time
	Top       int
	Archive   bool
	ArchiveAt time.Time
}

// schedule computes a period's step times from its bounds.
func (s *Service) schedule(f *family, p period.Period) lifecycleSchedule {
	lc := f.cfg.Lifecycle
	sch := lifecycleSchedule{Auto: lc.Freeze != config.FreezeManual, FreezeAt: p.End.Add(f.cfg.Grace)}
	after := sch.FreezeAt
	if lc.Settle != nil && s.ledger != nil {
		sch.Settle, sch.SettleAt, sch.Top = true, sch.FreezeAt.Add(lc.Settle.After), lc.Settle.Top
		after = sch.SettleAt
	}
	if lc.Archive != nil {
		sch.Archive, sch.ArchiveAt = true, after.Add(lc.Archive.After)
	}
	return sch
}

// unwritten reports a period the scheduler leaves alone: nobody wrote to it
// (exists false) and emptyMargin has passed since its freeze time, so there
// is nothing to freeze, settle or award. The scheduler and GET …/periods
// (its next step) both decide by it.
func (sch lifecycleSchedule) unwritten(exists bool, now time.Time) bool {
	return !exists && !now.Before(sch.FreezeAt.Add(emptyMargin))
}

// next is the step a period in state needs ("" when none is left).
func (sch lifecycleSchedule) next(state string, ledgerMode, boards bool) NextStep {
	switch state {
	case "", "open":
		if !sch.Auto {
			return NextStep{Step: StepFreeze, At: sch.FreezeAt, Waiting: "a manual freeze (lifecycle.freeze: manual)"}
		}
		return NextStep{Step: StepFreeze, At: sch.FreezeAt}
	case "frozen":
		if !boards {
			return NextStep{} // nothing was written: nothing to settle or keep
		}
		switch {
		case sch.Settle:
			return NextStep{Step: StepSettle, At: sch.SettleAt}
		case sch.Archive && ledgerMode:
			return NextStep{Step: StepArchive, At: sch.ArchiveAt, Waiting: "a settlement (POST …/settle; lifecycle.settle is not set)"}
		case sch.Archive:
			return NextStep{Step: StepArchive, At: sch.ArchiveAt}
		}
	case "settled":
		if sch.Archive {
			return NextStep{Step: StepArchive, At: sch.ArchiveAt}
		}
	}
	return NextStep{}
}

type lcState struct {
	exists bool
	state  string
	boards bool
}

// lifecycleState reads what the scheduler needs of a period: whether it was
// ever written, its state (the ledger's in ledger mode) and, when frozen (the
// only state whose next step depends on it), whether it has boards.
func (s *Service) lifecycleState(ctx context.Context, f *family, periodID string) (lcState, error) {
	pk := s.layout.Period(f.cfg.Name, periodID)
	ps, err := s.lifeBE.Period(ctx, pk)
	if err != nil {
		return lcState{}, err
	}
	out := lcState{exists: ps.Exists, state: ps.State}
	if !ps.Exists {
		return out, nil
	}
	if s.ledger != nil {
		if out.state, err = s.ledger.State(ctx, f.cfg.Name, periodID); err != nil {
			return lcState{}, err
		}
	}
	if out.state != "frozen" {
		return out, nil
	}
	dims, err := s.lifeBE.Boards(ctx, pk)
	if err != nil {
		return lcState{}, err
	}
	out.boards = len(dims) > 0
	return out, nil
}

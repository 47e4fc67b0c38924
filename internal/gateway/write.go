package gateway

import (
	"context"
	"encoding/json"
	"log/slog"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/rankgate/rankgate/internal/config"
	"github.com/rankgate/rankgate/internal/ledger"
	"github.com/rankgate/rankgate/internal/period"
	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/store"
)

// plan is one validated event, ready to become board writes.
type plan struct {
	ev     Event
	fam    *family
	period period.Period
	boards []shard.Board
	value  int64   // stored delta (sum) or stored value (max/min)
	cols   []int64 // sort column values, in the family's column order
	seq    int64
	first  int // index of its first write in the batch's write list
	err    error
	late   string // reason when refused as late
	// periodClosed: the period is known frozen (see store.Write.PeriodClosed).
	periodClosed bool
	// correction and operator mark a correction (ledger mode).
	correction bool
	operator   string
	lateKept   bool      // recorded for review already
	received   time.Time // when the batch arrived (ledger mode)
	// gate: the tournament checks of its batch (ledger mode; nil: none);
	// gateAt: its own check's index + 1 among them (0: not checked).
	gate   *gateCheck
	gateAt int
	// fp is "family/period" (famPeriod), built once per plan.
	fp string
}

// famPeriod is the plan's "family/period": the key of its shard counts,
// period state and achievement numbers within a batch.
func (p *plan) famPeriod() string {
	if p.fp == "" {
		p.fp = p.fam.cfg.Name + "/" + p.period.ID
	}
	return p.fp
}

// writeStrategy is how a mode applies a batch's planned events: Redis-only
// (in-slot scripts dedupe and apply, redisWrites) or ledger (commit, then
// project, ledgerWrites). Planning, validation, the period state and late
// events before, and metrics and the board listing after, are ApplyBatch's,
// written once.
type writeStrategy interface {
	// apply answers every plan, in order: a plan with err set answers it.
	// An error fails the whole batch (nothing was applied).
	apply(ctx context.Context, plans []plan, shards map[string]map[string]int, now time.Time) ([]BatchItem, error)
}

var (
	_ writeStrategy = redisWrites{}
	_ writeStrategy = (*ledgerWrites)(nil)
)

// ApplyEvent applies one point event (or reversal) to every board of its
// period that the member belongs to.
func (s *Service) ApplyEvent(ctx context.Context, ev Event) (EventResult, error) {
	items, err := s.ApplyBatch(ctx, []Event{ev})
	if err != nil {
		return EventResult{}, err
	}
	if items[0].Err != nil {
		return EventResult{}, items[0].Err
	}
	return *items[0].Result, nil
}

// ApplyBatch applies events in array order: their board writes go out in one
// pipelined round trip, and under tie "first" their achievement numbers follow
// the array (one INCRBY per family period).
func (s *Service) ApplyBatch(ctx context.Context, evs []Event) ([]BatchItem, error) {
	if len(evs) == 0 {
		return nil, rank.Invalid("events", "events must hold at least one event")
	}
	if len(evs) > s.cfg.Limits.MaxBatch {
		return nil, rank.Invalid("events", "at most %d events per batch", s.cfg.Limits.MaxBatch)
	}
	now := s.now()
	plans := make([]plan, len(evs))
	for i := range evs {
		plans[i] = s.planEvent(evs[i], now)
	}
	if err := s.refuseBanned(ctx, plans); err != nil {
		return nil, err
	}
	// Shard counts per family period, recorded at first write; and the
	// period's state: a frozen period refuses events even on boards that do
	// not exist yet (existing board shards also refuse them atomically).
	shards := map[string]map[string]int{}
	states := map[string]string{}
	for i := range plans {
		p := &plans[i]
		if p.err != nil {
			continue
		}
		key := p.famPeriod()
		if _, ok := shards[key]; !ok {
			sc, err := s.ensurePeriod(ctx, p.fam, p.period.ID)
			if err != nil {
				return nil, err
			}
			shards[key] = sc
			if states[key], err = s.periodState(ctx, p.fam, p.period.ID); err != nil {
				return nil, err
			}
		}
		// The scripts refuse (or answer a replay as a duplicate) atomically.
		p.periodClosed = states[key] != "" && states[key] != "open"
	}
	if err := s.placeCohorts(ctx, plans); err != nil {
		return nil, err
	}
	s.recordLate(ctx, plans, now)
	out, err := s.writes.apply(ctx, plans, shards, now)
	if err != nil {
		return nil, err
	}
	applied := make([]plan, 0, len(plans))
	for i := range plans {
		p := &plans[i]
		switch {
		case out[i].Err != nil:
			s.m.events.WithLabelValues(familyLabel(p), string(rank.CodeOf(out[i].Err))).Inc()
			continue
		case out[i].Result.Duplicate:
			s.m.eventsOf.with(p.fam.cfg.Name, "duplicate").Inc()
		default:
			s.m.eventsOf.with(p.fam.cfg.Name, "applied").Inc()
		}
		// Only boards that took an event join the period's listing.
		applied = append(applied, *p)
	}
	s.registerBoards(ctx, applied)
	return out, nil
}

// redisWrites is the write strategy of Redis-only mode: every board write is
// one in-slot script that dedupes on the event id, checks the shard is open
// and applies; the batch's writes go out in one pipelined round trip, and
// under tie "first" achievement numbers are taken per family period (one
// INCRBY) in array order.
type redisWrites struct{ s *Service }

func (w redisWrites) apply(ctx context.Context, plans []plan, shards map[string]map[string]int, now time.Time) ([]BatchItem, error) {
	s := w.s
	if err := s.takeSeqs(ctx, plans); err != nil {
		return nil, err
	}
	n := 0
	for i := range plans {
		if plans[i].err == nil {
			n += len(plans[i].boards)
		}
	}
	writes := make([]store.Write, 0, n)
	nowMs := now.UnixMilli()
	for i := range plans {
		p := &plans[i]
		if p.err != nil {
			continue
		}
		p.first = len(writes)
		sc := shards[p.famPeriod()]
		// The member's board index learns every board shard an event may
		// place them on (a reversal places nobody).
		var idx string
		if p.ev.Reverses == "" {
			idx = s.layout.MemberBoards(p.ev.User)
		}
		for _, b := range p.boards {
			n := sc[b.DimType]
			w := store.Write{
				Keys: s.layout.Keys(b, shard.Of(p.ev.User, n), n), Member: p.ev.User, EventID: p.ev.EventID,
				B: p.fam.enc.B, Seq: p.seq, MaxPoints: p.fam.enc.MaxPoints, NowMs: nowMs, Rules: p.fam.cfg.RulesVersion,
				PeriodClosed: p.periodClosed, FeedLen: p.fam.feedLen, Index: idx,
			}
			if p.ev.Reverses != "" {
				w.Kind, w.Reverses = store.KindReverse, p.ev.Reverses
			} else {
				w.Kind, w.Mode, w.Value = store.KindApply, p.fam.agg, p.value
			}
			if c := p.fam.enc.Cols; c != nil {
				w.HasCols, w.B, w.Columns = true, c.B, store.ColArgs(c, p.cols, p.fam.agg == "sum")
			}
			if p.fam.tour != nil && p.ev.Reverses == "" {
				w.Gate = tourGate(p.fam, w.Keys.Z)
			}
			w.Metadata, w.KeepMetadata = string(p.ev.Metadata), true
			writes = append(writes, w)
		}
	}
	var results []store.WriteResult
	if len(writes) > 0 {
		results = s.writeBE.Write(ctx, writes)
	}
	out := make([]BatchItem, len(plans))
	for i := range plans {
		p := &plans[i]
		if p.err != nil {
			out[i].Err = p.err
			continue
		}
		res, err := s.eventOutcome(ctx, p, results[p.first:p.first+len(p.boards)], now)
		if err != nil {
			out[i].Err = err
			continue
		}
		out[i].Result = &res
	}
	return out, nil
}

func familyLabel(p *plan) string {
	if p.fam == nil {
		return "unknown"
	}
	return p.fam.cfg.Name
}

// planEvent validates one event and names its boards.
func (s *Service) planEvent(ev Event, now time.Time) plan {
	p := plan{ev: ev}
	fail := func(err error) plan { p.err = err; return p }
	if !rank.ValidEventID(ev.EventID) {
		return fail(rank.Invalid("event_id", "event_id must match [A-Za-z0-9_.:@/-]{1,128}"))
	}
	f, err := s.family(ev.Family)
	if err != nil {
		return fail(err)
	}
	p.fam = f
	if f.cfg.Projection() {
		return fail(rank.Errorf(rank.CodeWrongSource, "family %s takes projections (PUT …/members/{member}), not events", f.cfg.Name))
	}
	if f.cfg.Derived() {
		return fail(rank.Errorf(rank.CodeWrongSource, "family %s is derived from other families; send events to its inputs", f.cfg.Name))
	}
	if !rank.ValidMember(ev.User) {
		return fail(rank.Invalid("user", "user must match [A-Za-z0-9_.@-]{1,64}"))
	}
	if len(ev.Reason) > 256 || !utf8.ValidString(ev.Reason) {
		return fail(rank.Invalid("reason", "reason must be valid UTF-8 of at most 256 bytes"))
	}
	switch {
	case ev.Reverses != "":
		if ev.Delta != nil || ev.Value != nil {
			return fail(rank.Invalid("reverses", "a reversal carries no delta or value: it subtracts what the original added"))
		}
		if !rank.ValidEventID(ev.Reverses) || ev.Reverses == ev.EventID {
			return fail(rank.Invalid("reverses", "reverses must name another event id"))
		}
		if f.cfg.Aggregate != config.AggregateSum && s.ledger == nil {
			return fail(rank.Errorf(rank.CodeLedgerRequired,
				"reversing an event of a %s family recomputes the best value from the ledger; this gateway runs in Redis-only mode", f.cfg.Aggregate))
		}
	case f.cfg.Aggregate == config.AggregateSum:
		if ev.Value != nil {
			return fail(rank.Invalid("value", "family %s sums deltas: send delta, not value", f.cfg.Name))
		}
		if ev.Delta == nil || *ev.Delta == 0 {
			return fail(rank.Invalid("delta", "delta must be a non-zero integer"))
		}
		if err := f.enc.CheckPoints("delta", *ev.Delta); err != nil {
			return fail(err)
		}
		p.value = f.enc.Stored(*ev.Delta)
	default:
		if ev.Delta != nil {
			return fail(rank.Invalid("delta", "family %s keeps each member's %s value: send value, not delta", f.cfg.Name, f.cfg.Aggregate))
		}
		if ev.Value == nil {
			return fail(rank.Invalid("value", "value is required"))
		}
		if err := f.enc.CheckPoints("value", *ev.Value); err != nil {
			return fail(err)
		}
		p.value = f.enc.Stored(*ev.Value)
	}
	if err := checkColumns(f, ev.Columns, ev.Reverses != ""); err != nil {
		return fail(err)
	}
	if f.enc.Cols != nil && ev.Reverses == "" {
		if p.cols, err = f.enc.Cols.Values(ev.Columns); err != nil {
			return fail(err)
		}
	}
	if err := s.checkMetadata(ev.Metadata); err != nil {
		return fail(err)
	}
	at := now
	if ev.At != nil {
		at = *ev.At
		if at.After(now.Add(MaxFuture)) {
			return fail(rank.Invalid("at", "at lies more than %s in the future", MaxFuture))
		}
	}
	p.period = f.spec.At(at)
	boards, err := s.boardsOf(f, p.period.ID, ev.Dims)
	if err != nil {
		return fail(err)
	}
	p.boards = boards
	if why := tourClosed(f, at); why != "" {
		p.late = "tournament_closed"
		return fail(rank.Errorf(rank.CodePeriodClosed, "%s; the event is kept for review", why))
	}
	if !p.period.Contains(at) {
		// Only seasons (and cron windows cut to a duration) leave gaps: no
		// period is open at `at`. The event is kept for review under the
		// period before it (or the first one).
		p.late = "between_seasons"
		if f.tour != nil {
			return fail(rank.Errorf(rank.CodePeriodClosed, "tournament %s is not running at %s; the event is kept for review under period %s",
				f.cfg.Name, at.UTC().Format(time.RFC3339), p.period.ID))
		}
		return fail(rank.Errorf(rank.CodePeriodClosed, "no season of %s is open at %s; the event is kept for review under season %s",
			f.cfg.Name, at.UTC().Format(time.RFC3339), p.period.ID))
	}
	if f.closedAt(p.period, now) {
		p.late = "past_grace"
		return fail(rank.Errorf(rank.CodePeriodClosed, "period %s of %s closed at %s (end + grace); the event is kept for review",
			p.period.ID, f.cfg.Name, p.period.End.Add(f.cfg.Grace).UTC().Format("2006-01-02T15:04:05Z07:00")))
	}
	return p
}

// boardsOf validates dims and returns national plus one board per dimension.
func (s *Service) boardsOf(f *family, periodID string, dims map[string]string) ([]shard.Board, error) {
	boards := make([]shard.Board, 1, 1+len(dims))
	boards[0] = f.board(periodID, shard.National, "")
	var buf [4]string // the dimension types, sorted: on the stack for up to 4
	types := buf[:0]
	for t := range dims {
		types = append(types, t)
	}
	slices.Sort(types)
	for _, t := range types {
		v := dims[t]
		if t == shard.National {
			return nil, rank.Invalid("dims."+t, "national is implied; dims name the other dimensions")
		}
		if t == shard.DimCohort && f.cfg.Cohorts != nil {
			return nil, rank.Invalid("dims."+t, "family %s is a league: the gateway places each member in a cohort", f.cfg.Name)
		}
		if _, ok := f.cfg.Dimensions[t]; !ok || !rank.ValidDimType(t) {
			return nil, rank.Invalid("dims", "family %s has no dimension %q", f.cfg.Name, t)
		}
		if !rank.ValidDimValue(v) {
			return nil, rank.Invalid("dims."+t, "dimension value must match [A-Za-z0-9_.-]{1,64}")
		}
		boards = append(boards, f.board(periodID, t, v))
	}
	return boards, nil
}

// takeSeqs reserves achievement numbers for tie "first" families: one INCRBY
// per family period, handed out in array order.
func (s *Service) takeSeqs(ctx context.Context, plans []plan) error {
	type take struct {
		key   string
		p     *plan // the first plan of the family period
		count int64
		next  int64
	}
	var takes []take // in order of first appearance; few (one per family period)
	at := func(key string) int {
		for j := range takes {
			if takes[j].key == key {
				return j
			}
		}
		return -1
	}
	for i := range plans {
		p := &plans[i]
		if p.err != nil || !p.fam.enc.TakesSeq() {
			continue
		}
		key := p.famPeriod()
		if j := at(key); j >= 0 {
			takes[j].count++
		} else {
			takes = append(takes, take{key: key, p: p, count: 1})
		}
	}
	for j := range takes {
		t := &takes[j]
		first, err := s.writeBE.TakeSeq(ctx, s.layout.Period(t.p.fam.cfg.Name, t.p.period.ID), t.count)
		if err != nil {
			return writeUnavailable(err, "taking achievement numbers for %s", t.key)
		}
		t.next = first
	}
	for i := range plans {
		p := &plans[i]
		if p.err != nil || !p.fam.enc.TakesSeq() {
			continue
		}
		t := &takes[at(p.famPeriod())]
		p.seq = t.next
		t.next++
		if p.seq >= p.fam.enc.SeqCap() {
			p.err = rank.Errorf(rank.CodeOutOfRange, "period %s used up its %d achievement numbers (seq_capacity)", p.period.ID, p.fam.enc.SeqCap())
		}
	}
	return nil
}

// registerBoards adds boards seen for the first time by this process to
// their period's set (best effort: the listing is informational).
func (s *Service) registerBoards(ctx context.Context, plans []plan) {
	for i := range plans {
		p := &plans[i]
		if p.err != nil {
			continue
		}
		var fresh []string
		for _, b := range p.boards {
			if _, seen := s.boards.Load(b.String()); !seen {
				fresh = append(fresh, b.Dimension())
			}
		}
		if len(fresh) == 0 {
			continue
		}
		if err := s.lifeBE.RegisterBoards(ctx, s.layout.Period(p.fam.cfg.Name, p.period.ID), fresh); err != nil {
			s.log.Warn("registering boards failed", "family", p.fam.cfg.Name, "period", p.period.ID, "err", err)
			continue
		}
		for _, b := range p.boards {
			s.boards.Store(b.String(), struct{}{})
		}
	}
}

// recordLate keeps events refused as late for review.
func (s *Service) recordLate(ctx context.Context, plans []plan, now time.Time) {
	for i := range plans {
		p := &plans[i]
		if p.late == "" || p.lateKept {
			continue
		}
		p.lateKept = true
		s.m.late.WithLabelValues(p.fam.cfg.Name, p.late).Inc()
		var err error
		if s.ledger != nil {
			body, _ := json.Marshal(p.ev)
			_, err = s.ledger.AddReview(ctx, ledger.Review{Family: p.fam.cfg.Name, Period: p.period.ID, EventID: p.ev.EventID,
				Event: body, Reason: p.late, ReceivedAt: now})
		} else {
			body, _ := json.Marshal(p.ev)
			_, err = s.writeBE.RecordLate(ctx, s.layout.Period(p.fam.cfg.Name, p.period.ID),
				store.LateEvent{Reason: p.late, Event: body, ReceivedAt: now})
		}
		if err != nil {
			s.log.Error("keeping a late event for review failed", "family", p.fam.cfg.Name, "period", p.period.ID,
				"event_id", p.ev.EventID, "err", err)
			p.err = rank.Unavailable(err, "the period is closed and the event could not be kept for review; retry")
		}
	}
}

// eventOutcome turns one event's board results into its answer.
func (s *Service) eventOutcome(ctx context.Context, p *plan, rs []store.WriteResult, now time.Time) (EventResult, error) {
	res := EventResult{EventID: p.ev.EventID, Period: p.period.ID, Duplicate: true, Boards: make([]BoardPoints, len(rs))}
	var closed, unknown, reversed, notReversible, outOfRange, notJoinedN, exhausted int
	var firstErr error
	improvedAny, sawImprove := false, false
	for j, r := range rs {
		b := p.boards[j]
		bp := BoardPoints{Board: b.String()}
		if r.Err != nil {
			if firstErr == nil {
				firstErr = r.Err
			}
			continue
		}
		if r.After != nil {
			bp.Points = p.fam.enc.PointsOf(*r.After)
		}
		switch r.Status {
		case store.StatusOK, store.StatusSame:
			res.Duplicate = false
			if p.ev.Reverses == "" && p.fam.agg != "sum" {
				imp := r.Status == store.StatusOK
				bp.Improved = &imp
				sawImprove, improvedAny = true, improvedAny || imp
			}
			if s.log.Enabled(ctx, slog.LevelDebug) {
				s.logApplied(ctx, p, b, r)
			}
		case store.StatusDup:
			s.m.dedupeOf.with(p.fam.cfg.Name, "").Inc()
		case store.StatusClosed:
			closed++
		case store.StatusUnknown:
			unknown++
		case store.StatusReversed:
			reversed++
		case store.StatusNotReversible:
			notReversible++
		case store.StatusRange:
			outOfRange++
		case store.StatusNotJoined:
			notJoinedN++
		case store.StatusExhausted:
			exhausted++
		}
		res.Boards[j] = bp
	}
	switch {
	case firstErr != nil:
		// Boards that answered keep their writes; a retry of the whole event is
		// safe because each board dedupes on the event id.
		return EventResult{}, writeUnavailable(firstErr, "event %s reached only part of its boards; retry it", p.ev.EventID)
	case closed > 0:
		p.late = "frozen"
		kept := []plan{*p}
		s.recordLate(ctx, kept, now)
		if kept[0].err != nil {
			return EventResult{}, kept[0].err
		}
		return EventResult{}, rank.Errorf(rank.CodePeriodClosed, "period %s of %s is frozen; the event is kept for review", p.period.ID, p.fam.cfg.Name)
	case notJoinedN > 0:
		return EventResult{}, notJoined(p)
	case exhausted > 0:
		return EventResult{}, attemptsExhausted(p)
	case outOfRange > 0:
		return EventResult{}, &rank.Error{Code: rank.CodeOutOfRange, Field: "delta",
			Message: "points would leave ±max_points (" + strconv.FormatInt(p.fam.enc.MaxPoints, 10) + ") on " + strconv.Itoa(outOfRange) + " board(s)"}
	case notReversible > 0:
		return EventResult{}, rank.Invalid("reverses", "event %s is itself a reversal and cannot be reversed", p.ev.Reverses)
	case unknown == len(rs):
		return EventResult{}, rank.Errorf(rank.CodeUnknownEvent, "event %s is unknown on every board of %s", p.ev.Reverses, p.ev.User)
	}
	if reversed > 0 && unknown+reversed == len(rs) {
		res.Duplicate = true // already reversed (by this or another reversal): nothing changed
	}
	if sawImprove {
		res.Improved = &improvedAny
	}
	return res, nil
}

// logApplied logs one applied board write at debug (every
// applied write logs, structured). It is a line per event and board, so the
// callers ask s.log.Enabled first: at the default level (info) nothing is
// built.
func (s *Service) logApplied(ctx context.Context, p *plan, b shard.Board, r store.WriteResult) {
	var before, after int64
	if r.Before != nil {
		before = p.fam.enc.PointsOf(*r.Before)
	}
	if r.After != nil {
		after = p.fam.enc.PointsOf(*r.After)
	}
	attrs := []slog.Attr{slog.String("family", p.fam.cfg.Name), slog.String("period", p.period.ID), slog.String("board", b.String()),
		slog.String("member", p.ev.User), slog.String("event_id", p.ev.EventID), slog.Int64("points_before", before),
		slog.Int64("points_after", after), slog.String("rules_version", p.fam.cfg.RulesVersion)}
	switch {
	case p.ev.Reverses != "":
		attrs = append(attrs, slog.String("reverses", p.ev.Reverses), slog.Int64("delta", after-before))
	case p.ev.Delta != nil:
		attrs = append(attrs, slog.Int64("delta", *p.ev.Delta))
	case p.ev.Value != nil:
		attrs = append(attrs, slog.Int64("value", *p.ev.Value), slog.Bool("improved", r.Status == store.StatusOK))
	}
	s.log.LogAttrs(ctx, slog.LevelDebug, "event applied", attrs...)
}

// Project sets a member's absolute total on one board of a projection
// family, applied only for a newer version.
func (s *Service) Project(ctx context.Context, ref BoardRef, user string, pr Projection) (ProjectionResult, error) {
	f, err := s.family(ref.Family)
	if err != nil {
		return ProjectionResult{}, err
	}
	if !f.cfg.Projection() {
		return ProjectionResult{}, rank.Errorf(rank.CodeWrongSource, "family %s takes events (POST /v1/events), not projections", f.cfg.Name)
	}
	if !rank.ValidMember(user) {
		return ProjectionResult{}, rank.Invalid("user", "user must match [A-Za-z0-9_.@-]{1,64}")
	}
	if pr.Version < 1 || pr.Version >= rank.MaxSafe {
		return ProjectionResult{}, rank.Invalid("version", "version must be within 1..2^53−1")
	}
	if err := f.enc.CheckPoints("points", pr.Points); err != nil {
		return ProjectionResult{}, err
	}
	if err := checkColumns(f, pr.Columns, false); err != nil {
		return ProjectionResult{}, err
	}
	var cols []int64
	if f.enc.Cols != nil {
		if cols, err = f.enc.Cols.Values(pr.Columns); err != nil {
			return ProjectionResult{}, err
		}
	}
	if err := s.checkMetadata(pr.Metadata); err != nil {
		return ProjectionResult{}, err
	}
	if err := s.checkBan(ctx, user, f.cfg.Name); err != nil {
		return ProjectionResult{}, err
	}
	b, err := s.resolve(ctx, ref)
	if err != nil {
		return ProjectionResult{}, err
	}
	now := s.now()
	if f.closedAt(b.period, now) {
		return ProjectionResult{}, rank.Errorf(rank.CodePeriodClosed, "period %s of %s is closed", b.period.ID, f.cfg.Name)
	}
	if !b.period.Start.IsZero() && b.period.Start.After(now.Add(MaxFuture)) {
		return ProjectionResult{}, rank.Invalid("period", "period %s has not started yet", b.period.ID)
	}
	sc, err := s.ensurePeriod(ctx, f, b.period.ID)
	if err != nil {
		return ProjectionResult{}, err
	}
	if st, err := s.periodState(ctx, f, b.period.ID); err != nil {
		return ProjectionResult{}, err
	} else if st != "" && st != "open" {
		return ProjectionResult{}, rank.Errorf(rank.CodePeriodClosed, "period %s of %s is %s", b.period.ID, f.cfg.Name, st)
	}
	n := sc[b.b.DimType]
	if s.ledger != nil {
		return s.projectLedger(ctx, f, b, user, pr, cols, now)
	}
	var seq int64
	if f.enc.TakesSeq() {
		if seq, err = s.writeBE.TakeSeq(ctx, s.layout.Period(f.cfg.Name, b.period.ID), 1); err != nil {
			return ProjectionResult{}, writeUnavailable(err, "taking an achievement number")
		}
	}
	w := store.Write{Kind: store.KindProject, Keys: s.layout.Keys(b.b, shard.Of(user, n), n), Member: user,
		Version: pr.Version, Value: f.enc.Stored(pr.Points), B: f.enc.B, Seq: seq, MaxPoints: f.enc.MaxPoints,
		NowMs: now.UnixMilli(), Rules: f.cfg.RulesVersion, Metadata: string(pr.Metadata), KeepMetadata: true, FeedLen: f.feedLen,
		Index: s.layout.MemberBoards(user)}
	if c := f.enc.Cols; c != nil {
		w.HasCols, w.B, w.Columns = true, c.B, store.ColArgs(c, cols, false)
	}
	r := s.writeBE.Write(ctx, []store.Write{w})[0]
	if r.Err != nil {
		return ProjectionResult{}, writeUnavailable(r.Err, "projection on %s; retry", b.name())
	}
	s.registerBoards(ctx, []plan{{fam: f, period: b.period, boards: []shard.Board{b.b}}})
	out := ProjectionResult{Board: b.name()}
	if r.After != nil {
		out.Points = f.enc.PointsOf(*r.After)
	}
	switch r.Status {
	case store.StatusOK:
		out.Applied, out.Version = true, r.Version
		s.m.events.WithLabelValues(f.cfg.Name, "projected").Inc()
		if s.log.Enabled(ctx, slog.LevelDebug) {
			s.log.LogAttrs(ctx, slog.LevelDebug, "projection applied", slog.String("family", f.cfg.Name), slog.String("period", b.period.ID),
				slog.String("board", b.name()), slog.String("member", user), slog.Int64("version", pr.Version),
				slog.Int64("points", pr.Points), slog.String("rules_version", f.cfg.RulesVersion))
		}
	case store.StatusStale:
		out.CurrentVersion = r.Version
		s.m.events.WithLabelValues(f.cfg.Name, "stale").Inc()
	case store.StatusClosed:
		return ProjectionResult{}, rank.Errorf(rank.CodePeriodClosed, "period %s of %s is frozen", b.period.ID, f.cfg.Name)
	case store.StatusRange:
		return ProjectionResult{}, &rank.Error{Code: rank.CodeOutOfRange, Field: "points", Message: "points or achievement number out of range"}
	default:
		return ProjectionResult{}, rank.Unavailable(nil, "unexpected projection status %q", r.Status)
	}
	return out, nil
}

// PutProfile stores a member's display profile.
func (s *Service) PutProfile(ctx context.Context, user string, p Profile) error {
	if !rank.ValidMember(user) {
		return rank.Invalid("user", "user must match [A-Za-z0-9_.@-]{1,64}")
	}
	if len(p.Name) > 128 || !rank.Printable(p.Name) {
		return rank.Invalid("name", "name must be printable UTF-8 of at most 128 bytes")
	}
	if len(p.Avatar) > 1024 || !rank.Printable(p.Avatar) {
		return rank.Invalid("avatar", "avatar must be printable UTF-8 of at most 1024 bytes")
	}
	fields := map[string]string{}
	if p.Name != "" {
		fields["name"] = p.Name
	}
	if p.Avatar != "" {
		fields["avatar"] = p.Avatar
	}
	if err := s.writeBE.PutProfile(ctx, s.layout.Profile(user), fields); err != nil {
		return writeUnavailable(err, "storing profile")
	}
	return nil
}

// checkColumns refuses columns on a family without them and on a reversal
// (which gives back what its original added).
func checkColumns(f *family, cols map[string]int64, reversal bool) error {
	switch {
	case len(cols) == 0:
		return nil
	case f.enc.Cols == nil:
		return rank.Invalid("columns", "family %s has no sort columns", f.cfg.Name)
	case reversal:
		return rank.Invalid("columns", "a reversal carries no columns: it gives back what the original added")
	}
	return nil
}

// MaxMetadata bounds an event's or projection's metadata (encoded JSON).
const MaxMetadata = 512

// checkMetadata: absent, or a JSON object of at most MaxMetadata bytes (in
// ledger mode kept with the event, byte for byte, and in the member's totals).
func (s *Service) checkMetadata(md json.RawMessage) error {
	if len(md) == 0 {
		return nil
	}
	if len(md) > MaxMetadata {
		return &rank.Error{Code: rank.CodeTooLarge, Field: "metadata",
			Message: "metadata must be a JSON object of at most " + strconv.Itoa(MaxMetadata) + " bytes; got " + strconv.Itoa(len(md))}
	}
	var obj map[string]json.RawMessage
	if md[0] != '{' || json.Unmarshal(md, &obj) != nil {
		return rank.Invalid("metadata", "metadata must be a JSON object")
	}
	return nil
}

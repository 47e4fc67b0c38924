package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"github.com/rankgate/rankgate/internal/ledger"
	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/store"
)

// Ledger is what the gateway needs from the PostgreSQL ledger; nil means
// Redis-only mode. *ledger.Ledger implements it.
type Ledger interface {
	Record(ctx context.Context, ev ledger.Event, r ledger.Rules) (ledger.Outcome, error)
	RecordGroup(ctx context.Context, evs []ledger.GroupEvent) ([]ledger.GroupResult, error)
	Project(ctx context.Context, ev ledger.Event, r ledger.Rules) (ledger.Outcome, error)
	Remove(ctx context.Context, ev ledger.Event, r ledger.Rules) ([]ledger.Removed, error)
	History(ctx context.Context, family, period, board, member string, before *ledger.HistoryCursor, limit int) ([]ledger.HistoryEntry, error)
	MarkProjected(ctx context.Context, eventIDs ...string) error
	MarkGroupProjected(ctx context.Context, pending int64) error
	Unprojected(ctx context.Context, olderThan time.Duration, limit int) ([]ledger.Pending, error)
	Totals(ctx context.Context, family, period, board, afterMember string, limit int) ([]ledger.MemberTotal, error)
	Total(ctx context.Context, family, period, board, member string) (ledger.MemberTotal, error)
	Freeze(ctx context.Context, family, period string) (string, error)
	State(ctx context.Context, family, period string) (string, error)
	SetArchived(ctx context.Context, family, period string) (string, error)
	AddReview(ctx context.Context, r ledger.Review) (int64, error)
	Reviews(ctx context.Context, family, period string, limit int) ([]ledger.Review, error)
	DecideReview(ctx context.Context, id int64, accept bool, operator, correctionID string) error
	Settle(ctx context.Context, family, period string, top int, boards []string, comp bool, r ledger.Rules) (ledger.Settlement, error)
	Settlement(ctx context.Context, family, period string) (ledger.Settlement, bool, error)
	Outbox(ctx context.Context, family, period string) ([]ledger.Award, error)
	QueueMoves(ctx context.Context, family, period string, members []string, payloads [][]byte) error
	Ping(ctx context.Context) error
	// The tournament registry and seats of ledger mode (tournaments.go).
	TournamentRegistry
	RecordJoins(ctx context.Context, tournament, period string, members []string) error
	Seats(ctx context.Context, tournament, period string) ([]string, map[string]int64, error)
	// A member's data rights (erasure.go).
	MemberBoards(ctx context.Context, member string) ([]ledger.MemberBoard, error)
	EraseMember(ctx context.Context, member string) (ledger.Erased, error)
	MemberEvents(ctx context.Context, member string, limit int) ([]ledger.MemberEvent, error)
}

var _ Ledger = (*ledger.Ledger)(nil)

// ledgerErr maps ledger failures to API errors.
func ledgerErr(err error) error {
	var re *rank.Error
	switch {
	case err == nil:
		return nil
	case errors.As(err, &re):
		return err
	case errors.Is(err, ledger.ErrPeriodClosed):
		return rank.Errorf(rank.CodePeriodClosed, "the period is closed; the event is kept for review")
	case errors.Is(err, ledger.ErrUnknownEvent):
		return rank.Errorf(rank.CodeUnknownEvent, "the reversed event is unknown")
	case errors.Is(err, ledger.ErrNotReversible):
		return rank.Invalid("reverses", "that event cannot be reversed (it is itself a reversal)")
	case errors.Is(err, ledger.ErrOutOfRange):
		return &rank.Error{Code: rank.CodeOutOfRange, Field: "delta", Message: "points or achievement number would leave the configured range"}
	case errors.Is(err, ledger.ErrNotFrozen):
		return rank.Errorf(rank.CodePeriodClosed, "settle needs a frozen period: freeze it first")
	case errors.Is(err, ledger.ErrNotSettled):
		return rank.Errorf(rank.CodePeriodClosed, "archive needs saved standings: settle the period first")
	case errors.Is(err, ledger.ErrInvalid):
		return &rank.Error{Code: rank.CodeInvalidArgument, Message: err.Error()}
	case errors.Is(err, context.Canceled):
		return err
	}
	return rank.Unavailable(err, "the ledger did not answer; retry")
}

func (f *family) ledgerRules() ledger.Rules {
	r := ledger.Rules{Aggregate: f.cfg.Aggregate, Desc: f.cfg.Desc(), TieFirst: f.enc.TakesSeq(),
		MaxPoints: f.enc.MaxPoints, SeqCapacity: f.enc.SeqCap(), Projection: f.cfg.Projection()}
	if c := f.enc.Cols; c != nil {
		r.Columns = c.Cols
	}
	return r
}

func (s *Service) requireLedger(what string) error {
	if s.ledger == nil {
		return rank.Errorf(rank.CodeLedgerRequired, "%s needs the ledger; this gateway runs in Redis-only mode (set ledger.dsn_env)", what)
	}
	return nil
}

// ledgerWrites is the write strategy of ledger mode: events
// are committed to the ledger first (the event, its boards' totals, versions
// and achievement seqs), then their absolute totals go to Redis through the
// versioned projection script, so retries, re-projection and out-of-order
// delivery converge and Redis keeps no per-event dedupe. Awards and
// corrections go through the commit queue: events arriving together (a batch,
// or single events within the linger) share one transaction and one
// projection pipeline. A reversal commits alone, in its place in the batch.
// What a crash leaves unprojected, ProjectPending projects.
type ledgerWrites struct {
	s *Service
	q *commitQueue
	// marks: MarkProjected calls in flight (read-locked each); the projector
	// write-locks it before it looks for unprojected events, so it never
	// re-projects what is being marked.
	marks sync.RWMutex
}

// markTimeout bounds one MarkProjected after a group was answered.
const markTimeout = 10 * time.Second

func newLedgerWrites(s *Service, linger time.Duration, maxEvents int) *ledgerWrites {
	if maxEvents <= 0 {
		maxEvents = 500
	}
	w := &ledgerWrites{s: s}
	w.q = newCommitQueue(linger, maxEvents, commitGroups, w.commit)
	w.q.waited = s.m.groupStage.WithLabelValues("queue")
	return w
}

// commitGroups bounds the groups committing at once: one, while the next one
// fills (its slot is freed when its transaction ends, before its projection).
// Groups of one family period serialize in PostgreSQL anyway (the period's
// seq row, hot members' totals rows, held to COMMIT), so concurrent groups
// there only queue on row locks and each pays its own flush; one group at a
// time carries everything that arrived meanwhile in one transaction and one
// flush (docs/performance.md, issue 10: 4 slots measured worse). The price:
// a group stuck on a lock (a settlement, a slow PostgreSQL) holds every
// group of the gateway, of any family, until it ends or groupTimeout.
const commitGroups = 1

func (w *ledgerWrites) apply(ctx context.Context, plans []plan, shards map[string]map[string]int, now time.Time) ([]BatchItem, error) {
	chk := w.startChecks(ctx, plans, shards)
	out := make([]BatchItem, len(plans))
	var run []*plan
	var at []int
	flush := func() {
		if len(run) == 0 {
			return
		}
		for j, item := range w.q.submit(ctx, run, chk.readyCh()) {
			out[at[j]] = item
		}
		run, at = run[:0], at[:0]
	}
	for i := range plans {
		p := &plans[i]
		p.received = now
		switch {
		case p.err != nil:
			out[i].Err = p.err
		case p.ev.Reverses != "":
			flush() // the events before it commit first
			if chk.wait() != nil {
				continue // nothing of the batch commits
			}
			out[i] = w.group(ctx, []*plan{p}, func() {})[0]
		default:
			run, at = append(run, p), append(at, i)
		}
	}
	flush()
	if chk == nil {
		return out, nil
	}
	if err := chk.wait(); err != nil {
		return nil, err // each plan got the error in its group: none committed
	}
	w.giveBack(ctx, chk, out)
	return out, nil
}

// gateCheck is the tournament checks of one batch's gated events, in Redis
// while the batch waits in the commit queue (startChecks).
type gateCheck struct {
	ready chan struct{} // closed when sts or err is set
	holds []store.Hold
	held  []int    // the plan index of each hold
	sts   []string // gate.lua's answer to each hold
	err   error
}

// readyCh is the channel the commit queue waits on (nil: no checks).
func (c *gateCheck) readyCh() <-chan struct{} {
	if c == nil {
		return nil
	}
	return c.ready
}

// wait waits for the checks and answers their error.
func (c *gateCheck) wait() error {
	if c == nil {
		return nil
	}
	<-c.ready
	return c.err
}

// startChecks sends the tournament checks of a batch's gated events to
// Redis, in one pipeline, and returns at once (nil: none to check); the
// commit queue holds the batch's plans until the answers are in, and the
// group refuses those the checks refused (verdict) before the ledger
// commits the rest. On the member's board shard, gate.lua refuses a member
// who has not joined (when joins are required) or has used max_attempts, and
// otherwise lets the event take an attempt, held under its event id so that
// a retried event never takes a second one.
func (w *ledgerWrites) startChecks(ctx context.Context, plans []plan, shards map[string]map[string]int) *gateCheck {
	s := w.s
	var c *gateCheck
	for i := range plans {
		p := &plans[i]
		if p.err != nil || p.fam.tour == nil || p.ev.Reverses != "" || p.correction {
			continue
		}
		b := p.boards[0] // a tournament has one board: national
		n := shards[p.famPeriod()][b.DimType]
		g := tourGate(p.fam, s.layout.ZKey(b, shard.Of(p.ev.User, n), n))
		if g == nil {
			continue
		}
		if c == nil {
			c = &gateCheck{ready: make(chan struct{})}
		}
		c.holds, c.held = append(c.holds, store.Hold{Gate: *g, EventID: p.ev.EventID, Member: p.ev.User}), append(c.held, i)
		p.gateAt = len(c.holds)
	}
	if c == nil {
		return nil
	}
	for i := range plans {
		plans[i].gate = c
	}
	go func() {
		defer close(c.ready)
		if c.sts, c.err = s.tourBE.HoldAttempts(ctx, c.holds); c.err != nil {
			c.err = writeUnavailable(c.err, "checking the tournament's joins and attempts")
		}
	}()
	return c
}

// checked answers whether the checks of p's batch let it commit, once they
// are in: nil, or the refusal (not joined, attempts used) — or, when the
// checks failed, their error, for every plan of the batch.
func (p *plan) checked() error {
	c := p.gate
	switch {
	case c == nil:
		return nil
	case c.err != nil:
		return c.err
	case p.gateAt == 0:
		return nil
	}
	switch c.sts[p.gateAt-1] {
	case store.HoldNotJoined:
		return notJoined(p)
	case store.HoldExhausted:
		return attemptsExhausted(p)
	}
	return nil
}

// commit is the commit queue's group: the plans their checks refused are
// answered so, the rest commit together (group).
func (w *ledgerWrites) commit(ctx context.Context, plans []*plan, done func()) []BatchItem {
	out := make([]BatchItem, len(plans))
	keep, at := make([]*plan, 0, len(plans)), make([]int, 0, len(plans))
	for i, p := range plans {
		if err := p.checked(); err != nil {
			out[i].Err = err
			continue
		}
		keep, at = append(keep, p), append(at, i)
	}
	if len(keep) == 0 {
		done()
		return out
	}
	for j, item := range w.group(ctx, keep, done) {
		out[at[j]] = item
	}
	return out
}

// giveBack returns the attempts of admitted events the ledger refused for
// good (out of range, closed and kept for review): only an accepted event is
// an attempt. So does an event that took an attempt now although the ledger
// had it already (a duplicate whose hold a rebuild did not restore: the
// rebuild counted it from the ledger). An event that failed for a transient
// reason keeps its attempt for its retry. Best effort, logged: a lost
// give-back costs the member one attempt, never grants one more.
func (w *ledgerWrites) giveBack(ctx context.Context, c *gateCheck, out []BatchItem) {
	var gives []store.Hold
	for k, i := range c.held {
		if st := c.sts[k]; st != store.HoldOK && st != store.HoldHeld {
			continue // refused by the checks: it took no attempt
		}
		err := out[i].Err
		refused := err != nil && rank.CodeOf(err) != rank.CodeUnavailable && rank.CodeOf(err) != rank.CodeInternal
		counted := err == nil && out[i].Result != nil && out[i].Result.Duplicate && c.sts[k] == store.HoldOK
		if refused || counted {
			h := c.holds[k]
			h.Give = true
			gives = append(gives, h)
		}
	}
	if len(gives) == 0 {
		return
	}
	if _, err := w.s.tourBE.HoldAttempts(context.WithoutCancel(ctx), gives); err != nil {
		w.s.log.Warn("giving back the attempts of refused tournament events failed", "events", len(gives), "err", err)
	}
}

// ledgerEvent is the ledger's form of a planned event.
func ledgerEvent(p *plan) ledger.Event {
	ev := ledger.Event{EventID: p.ev.EventID, Kind: ledger.KindAward, Family: p.fam.cfg.Name, Period: p.period.ID, Member: p.ev.User,
		Dims: p.ev.Dims, Boards: dims(p.boards), Delta: p.ev.Delta, Value: p.ev.Value, Reason: p.ev.Reason,
		RulesVersion: p.fam.cfg.RulesVersion, ReceivedAt: p.received, OccurredAt: p.received,
		Columns: p.cols, Metadata: string(p.ev.Metadata)}
	if p.ev.At != nil {
		ev.OccurredAt = *p.ev.At
	}
	if p.ev.Reverses != "" {
		ev.Kind, ev.Reverses = ledger.KindReversal, p.ev.Reverses
	}
	if p.correction {
		ev.Kind, ev.Operator = ledger.KindCorrection, p.operator
	}
	return ev
}

// group commits plans (awards and corrections together, or one reversal),
// projects every committed event's totals in one pipeline, marks them
// projected in the ledger and answers each plan.
func (w *ledgerWrites) group(ctx context.Context, plans []*plan, done func()) []BatchItem {
	s := w.s
	start := time.Now()
	defer func() { s.m.groupStage.WithLabelValues("group").Observe(time.Since(start).Seconds()) }()
	s.m.groupEvents.Observe(float64(len(plans)))
	out := make([]BatchItem, len(plans))
	results := make([]ledger.GroupResult, len(plans))
	if len(plans) == 1 && plans[0].ev.Reverses != "" {
		results[0].Outcome, results[0].Err = s.ledger.Record(ctx, ledgerEvent(plans[0]), plans[0].fam.ledgerRules())
		s.m.groupStage.WithLabelValues("record").Observe(time.Since(start).Seconds())
	} else {
		evs := make([]ledger.GroupEvent, len(plans))
		for i, p := range plans {
			evs[i] = ledger.GroupEvent{Event: ledgerEvent(p), Rules: p.fam.ledgerRules()}
		}
		var err error
		results, err = s.ledger.RecordGroup(ctx, evs)
		s.m.groupStage.WithLabelValues("record").Observe(time.Since(start).Seconds())
		done() // the ledger transaction ended: the next group may commit
		if err != nil {
			for i := range out {
				out[i].Err = ledgerErr(err)
			}
			return out
		}
	}
	var committed []int
	for i, r := range results {
		p := plans[i]
		switch {
		case errors.Is(r.Err, ledger.ErrPeriodClosed):
			p.late, p.err = "frozen", ledgerErr(r.Err)
			kept := []plan{*p}
			s.recordLate(ctx, kept, p.received)
			p.err, p.lateKept = kept[0].err, true
			out[i].Err = p.err
		case r.Err != nil:
			out[i].Err = ledgerErr(r.Err)
		default:
			if s.afterCommit != nil {
				if err := s.afterCommit(p.ev.EventID); err != nil {
					// The test hook plays a crash between the two steps.
					out[i].Err = rank.Unavailable(err, "event %s is in the ledger but not yet projected; retry is safe", p.ev.EventID)
					continue
				}
			}
			committed = append(committed, i)
		}
	}

	// One pipeline projects every committed event's boards; of several
	// totals of one member on one board, only the newest goes to Redis.
	var writes []store.Write
	// Keyed by the board shard's sorted set (family, period, board and shard)
	// and the member: versions compare only within one totals row, and the
	// hash tag alone names neither the period nor a family keyed under
	// another's group (TestLedgerGroupSpansTwoPeriods).
	newest := map[string]int{} // sorted set + member → index in writes
	idx := make([][]int, len(plans))
	for _, i := range committed {
		p := plans[i]
		ws := s.projections(ctx, p.fam, p.period.ID, p.ev.User, results[i].Outcome.Boards, p.received)
		idx[i] = make([]int, len(ws))
		for k, wr := range ws {
			key := wr.Keys.Z + "\x00" + wr.Member
			j, seen := newest[key]
			switch {
			case !seen:
				j = len(writes)
				newest[key] = j
				writes = append(writes, wr)
			case wr.Version > writes[j].Version:
				writes[j] = wr
			}
			idx[i][k] = j
		}
	}
	pstart := time.Now()
	rs := s.projectGroup(ctx, writes)
	s.m.groupStage.WithLabelValues("project").Observe(time.Since(pstart).Seconds())
	projected := make([]bool, len(plans))
	for _, i := range committed {
		p, res := plans[i], results[i].Outcome
		var werr error
		for _, j := range idx[i] {
			if rs[j].Err != nil {
				werr = rs[j].Err
				break
			}
			// status "closed": the ledger took it, Redis is frozen; the
			// ledger is the truth and settlement reads it; nothing to undo.
		}
		if werr != nil {
			out[i].Err = writeUnavailable(werr, "event %s is in the ledger but its projection failed; retry is safe", p.ev.EventID)
			continue
		}
		projected[i] = true
		out[i].Result = w.answer(ctx, p, res)
	}
	w.mark(ctx, plans, results, projected)
	return out
}

// mark notes in the ledger which of a group's events Redis received, off the
// callers' path (they are answered by then): the group's pending row in one
// statement when every event it lists was projected, else the projected ids
// one by one. A lost mark is harmless: the projector projects those events
// again (versions guard).
func (w *ledgerWrites) mark(ctx context.Context, plans []*plan, results []ledger.GroupResult, projected []bool) {
	var pending int64
	var ids []string
	whole := true
	for i, r := range results {
		switch {
		case r.Pending != 0 && !projected[i]:
			whole = false
		case r.Pending != 0:
			pending = r.Pending
		case projected[i] && (r.Outcome.Duplicate || r.Outcome.Changed()):
			ids = append(ids, plans[i].ev.EventID) // a reversal, or a retry of an event a crash left unprojected
		}
	}
	if !whole {
		pending = 0
		for i, r := range results {
			if r.Pending != 0 && projected[i] {
				ids = append(ids, plans[i].ev.EventID)
			}
		}
	}
	if pending == 0 && len(ids) == 0 {
		return
	}
	s := w.s
	w.marks.RLock()
	go func() {
		defer w.marks.RUnlock()
		mctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), markTimeout)
		defer cancel()
		if err := s.ledger.MarkGroupProjected(mctx, pending); err != nil {
			s.log.Warn("marking a group projected failed", "err", err)
		}
		if err := s.ledger.MarkProjected(mctx, ids...); err != nil {
			s.log.Warn("marking events projected failed", "events", len(ids), "err", err)
		}
	}()
}

// projectGroup sends one group's projections to Redis in one pipelined round
// trip (one per node). It is the one place a group's writes reach Redis: a
// WAIT per touched master (redis.wait_replicas) belongs here.
func (s *Service) projectGroup(ctx context.Context, writes []store.Write) []store.WriteResult {
	if len(writes) == 0 {
		return nil
	}
	return s.writeBE.Write(ctx, writes)
}

// answer turns a committed event's ledger outcome into its API answer.
func (w *ledgerWrites) answer(ctx context.Context, p *plan, res ledger.Outcome) *EventResult {
	s := w.s
	out := EventResult{EventID: p.ev.EventID, Period: p.period.ID, Duplicate: res.Duplicate, Boards: make([]BoardPoints, len(res.Boards))}
	improvedAny, sawImprove := false, false
	for k, bt := range res.Boards {
		b := p.boards[k]
		bp := BoardPoints{Board: b.String(), Points: bt.Points}
		if p.ev.Reverses == "" && p.fam.agg != "sum" && !res.Duplicate {
			imp := bt.Changed
			bp.Improved = &imp
			sawImprove, improvedAny = true, improvedAny || imp
		}
		out.Boards[k] = bp
		if !res.Duplicate && bt.Changed && s.log.Enabled(ctx, slog.LevelDebug) {
			// Per event and board: debug (see logApplied).
			s.log.LogAttrs(ctx, slog.LevelDebug, "event applied", slog.String("family", p.fam.cfg.Name), slog.String("period", p.period.ID),
				slog.String("board", b.String()), slog.String("member", p.ev.User), slog.String("event_id", p.ev.EventID),
				slog.Int64("points_after", bt.Points), slog.Int64("version", bt.Version),
				slog.String("rules_version", p.fam.cfg.RulesVersion), slog.String("mode", "ledger"))
		}
	}
	if sawImprove {
		out.Improved = &improvedAny
	}
	if res.Duplicate {
		s.m.dedupeOf.with(p.fam.cfg.Name, "").Inc()
	}
	return &out
}

func dims(boards []shard.Board) []string {
	out := make([]string, len(boards))
	for i, b := range boards {
		out[i] = b.Dimension()
	}
	return out
}

// projections builds the versioned-projection writes of a member's totals.
func (s *Service) projections(ctx context.Context, f *family, periodID, member string, totals []ledger.BoardTotal, now time.Time) []store.Write {
	shards, err := s.shardCounts(ctx, f, periodID)
	if err != nil {
		shards = map[string]int{}
		for t, d := range f.cfg.Dimensions {
			shards[t] = d.Shards
		}
	}
	ws := make([]store.Write, 0, len(totals))
	idx := s.layout.MemberBoards(member)
	for _, bt := range totals {
		t, v, _ := shard.ParseDimension(bt.Board)
		n := max(shards[t], 1)
		b := f.board(periodID, t, v)
		seq := max(bt.Seq, 0)
		w := store.Write{Kind: store.KindProject, Keys: s.layout.Keys(b, shard.Of(member, n), n), Member: member,
			Version: bt.Version, Value: f.enc.Stored(bt.Points), B: f.enc.B, Seq: seq, SetSeq: true, Absent: !bt.Present,
			MaxPoints: f.enc.MaxPoints, NowMs: now.UnixMilli(), Rules: f.cfg.RulesVersion,
			Metadata: bt.Metadata, KeepMetadata: true, FeedLen: f.feedLen}
		if bt.Present {
			// The member's board index learns the shard (an absent total
			// places nobody).
			w.Index = idx
		}
		if c := f.enc.Cols; c != nil {
			// The ledger's tuple and seq, through columns.lua (seq mode set).
			w.HasCols, w.B, w.Columns = true, c.B, store.ColArgs(c, bt.Columns, false)
		}
		ws = append(ws, w)
	}
	return ws
}

// ProjectPending re-projects events the ledger holds but Redis may not (a
// crash between commit and projection): the current totals of their boards,
// version-guarded, so it is always safe to run. It returns how many events
// it projected.
func (s *Service) ProjectPending(ctx context.Context, olderThan time.Duration) (int, error) {
	if s.ledger == nil {
		return 0, nil
	}
	if w := s.ledgerWrites; w != nil {
		// The marks in flight land first: waiting for their read locks is
		// the point of this empty critical section.
		w.marks.Lock()
		//lint:ignore SA2001 waits for the MarkProjected calls in flight
		w.marks.Unlock()
	}
	pending, err := s.ledger.Unprojected(ctx, olderThan, 500)
	if err != nil {
		return 0, ledgerErr(err)
	}
	var done []string
	for _, p := range pending {
		f, ok := s.families[p.Family]
		if !ok {
			continue
		}
		if _, err = s.ensurePeriod(ctx, f, p.Period); err != nil {
			break
		}
		ws := s.projections(ctx, f, p.Period, p.Member, p.Boards, s.now())
		ok = true
		for _, r := range s.writeBE.Write(ctx, ws) {
			if r.Err != nil {
				ok = false
				s.log.Warn("re-projection failed", "event_id", p.EventID, "err", r.Err)
			}
		}
		if ok {
			done = append(done, p.EventID)
		}
	}
	// One mark for the run: the marks of the events done so far land even
	// when a period could not be prepared.
	if merr := s.ledger.MarkProjected(ctx, done...); merr != nil {
		return 0, ledgerErr(merr)
	}
	if err != nil {
		return len(done), err
	}
	total := len(done)
	if total > 0 {
		s.log.Info("re-projected events left unprojected", "events", total)
	}
	return total, nil
}

// RunProjector calls ProjectPending every interval until ctx ends.
func (s *Service) RunProjector(ctx context.Context, interval time.Duration) {
	if s.ledger == nil {
		return
	}
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if _, err := s.ProjectPending(ctx, interval); err != nil && ctx.Err() == nil {
				s.log.Warn("projector", "err", err)
			}
		}
	}
}

func (s *Service) ledgerReviews(ctx context.Context, family, period string, limit int) ([]Review, error) {
	rs, err := s.ledger.Reviews(ctx, family, period, limit)
	if err != nil {
		return nil, ledgerErr(err)
	}
	out := make([]Review, len(rs))
	for i, r := range rs {
		out[i] = Review{ID: strconv.FormatInt(r.ID, 10), Family: r.Family, Period: r.Period, Reason: r.Reason,
			Status: r.Status, ReceivedAt: r.ReceivedAt.UTC(), Event: json.RawMessage(r.Event)}
	}
	return out, nil
}

// projectLedger records a projection in the ledger (applied only for a newer
// version), then projects the ledger's total.
func (s *Service) projectLedger(ctx context.Context, f *family, b *board, user string, pr Projection, cols []int64, now time.Time) (ProjectionResult, error) {
	v := pr.Points
	id := "projection:" + b.name() + ":" + user + ":" + strconv.FormatInt(pr.Version, 10)
	res, err := s.ledger.Project(ctx, ledger.Event{EventID: id,
		Kind: ledger.KindProjection, Family: f.cfg.Name, Period: b.period.ID, Member: user, Boards: []string{b.b.Dimension()},
		Value: &v, Version: pr.Version, RulesVersion: f.cfg.RulesVersion, ReceivedAt: now, OccurredAt: now,
		Columns: cols, Metadata: string(pr.Metadata)}, f.ledgerRules())
	if err != nil {
		return ProjectionResult{}, ledgerErr(err)
	}
	bt := res.Boards[0]
	out := ProjectionResult{Board: b.name(), Points: bt.Points}
	if !bt.Changed {
		out.CurrentVersion = bt.Version
		s.m.events.WithLabelValues(f.cfg.Name, "stale").Inc()
		return out, nil
	}
	r := s.writeBE.Write(ctx, s.projections(ctx, f, b.period.ID, user, res.Boards, now))[0]
	if r.Err != nil {
		return ProjectionResult{}, rank.Unavailable(r.Err, "projection is in the ledger; its Redis write failed and will be retried")
	}
	out.Applied, out.Version = true, bt.Version
	if err := s.ledger.MarkProjected(ctx, id); err != nil {
		s.log.Warn("marking a projection projected failed", "err", err)
	}
	s.m.events.WithLabelValues(f.cfg.Name, "projected").Inc()
	return out, nil
}

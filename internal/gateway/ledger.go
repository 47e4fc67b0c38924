package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"strconv"
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
	Project(ctx context.Context, ev ledger.Event, r ledger.Rules) (ledger.Outcome, error)
	MarkProjected(ctx context.Context, eventIDs ...string) error
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
	Ping(ctx context.Context) error
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
	return ledger.Rules{Aggregate: f.cfg.Aggregate, Desc: f.cfg.Desc(), TieFirst: f.enc.TieFirst(),
		MaxPoints: f.enc.MaxPoints, SeqCapacity: f.enc.B}
}

func (s *Service) requireLedger(what string) error {
	if s.ledger == nil {
		return rank.Errorf(rank.CodeLedgerRequired, "%s needs the ledger; this gateway runs in Redis-only mode (set ledger.dsn_env)", what)
	}
	return nil
}

// applyLedger is the write path of ledger mode (DESIGN.md §5): each event is
// committed to the ledger first (one transaction: the event, its boards'
// totals, versions and achievement seq), then the absolute totals go to
// Redis through the versioned projection script, so retries, re-projection
// and out-of-order delivery converge and Redis keeps no per-event dedupe.
// What a crash leaves unprojected, ProjectPending projects.
func (s *Service) applyLedger(ctx context.Context, plans []plan, now time.Time) []BatchItem {
	out := make([]BatchItem, len(plans))
	type done struct {
		i   int
		res ledger.Outcome
	}
	var committed []done
	for i := range plans {
		p := &plans[i]
		if p.err != nil {
			continue
		}
		ev := ledger.Event{EventID: p.ev.EventID, Kind: "award", Family: p.fam.cfg.Name, Period: p.period.ID, Member: p.ev.User,
			Dims: p.ev.Dims, Boards: dims(p.boards), Delta: p.ev.Delta, Value: p.ev.Value, Reason: p.ev.Reason,
			RulesVersion: p.fam.cfg.RulesVersion, ReceivedAt: now, OccurredAt: now}
		if p.ev.At != nil {
			ev.OccurredAt = *p.ev.At
		}
		if p.ev.Reverses != "" {
			ev.Kind, ev.Reverses = "reversal", p.ev.Reverses
		}
		if p.kind != "" {
			ev.Kind, ev.Operator = p.kind, p.operator
		}
		res, err := s.ledger.Record(ctx, ev, p.fam.ledgerRules())
		if errors.Is(err, ledger.ErrPeriodClosed) {
			p.late = "frozen"
			p.err = ledgerErr(err)
			continue
		}
		if err != nil {
			p.err = ledgerErr(err)
			continue
		}
		if s.afterCommit != nil {
			if err := s.afterCommit(p.ev.EventID); err != nil {
				// The test hook plays a crash between the two steps.
				p.err = rank.Unavailable(err, "event %s is in the ledger but not yet projected; retry is safe", p.ev.EventID)
				continue
			}
		}
		committed = append(committed, done{i, res})
	}
	s.recordLate(ctx, plans, now)

	// One pipelined round trip projects every committed event's boards.
	var writes []store.Write
	first := make([]int, len(committed))
	for j, c := range committed {
		p := &plans[c.i]
		first[j] = len(writes)
		writes = append(writes, s.projections(ctx, p.fam, p.period.ID, p.ev.User, c.res.Boards, now)...)
	}
	var results []store.WriteResult
	if len(writes) > 0 {
		results = s.be.Write(ctx, writes)
	}
	var projected []string
	for j, c := range committed {
		p := &plans[c.i]
		rs := results[first[j] : first[j]+len(c.res.Boards)]
		var werr error
		for _, r := range rs {
			if r.Err != nil {
				werr = r.Err
				break
			}
			if r.Status == "closed" {
				// The ledger took it, Redis is frozen: the ledger is the truth
				// and settlement reads it; nothing to undo.
				continue
			}
		}
		if werr != nil {
			p.err = rank.Unavailable(werr, "event %s is in the ledger but its projection failed; retry is safe", p.ev.EventID)
			continue
		}
		projected = append(projected, p.ev.EventID)
		res := EventResult{EventID: p.ev.EventID, Period: p.period.ID, Duplicate: c.res.Duplicate, Boards: make([]BoardPoints, len(c.res.Boards))}
		improvedAny, sawImprove := false, false
		for k, bt := range c.res.Boards {
			b := p.boards[k]
			bp := BoardPoints{Board: b.String(), Points: bt.Points}
			if p.ev.Reverses == "" && p.fam.agg != "sum" && !c.res.Duplicate {
				imp := bt.Changed
				bp.Improved = &imp
				sawImprove, improvedAny = true, improvedAny || imp
			}
			res.Boards[k] = bp
			if !c.res.Duplicate && bt.Changed {
				s.log.Info("event applied", "family", p.fam.cfg.Name, "period", p.period.ID, "board", b.String(), "member", p.ev.User,
					"event_id", p.ev.EventID, "points_after", bt.Points, "version", bt.Version, "rules_version", p.fam.cfg.RulesVersion, "mode", "ledger")
			}
		}
		if sawImprove {
			res.Improved = &improvedAny
		}
		if c.res.Duplicate {
			s.m.dedupe.WithLabelValues(p.fam.cfg.Name).Inc()
		}
		out[c.i].Result = &res
	}
	if len(projected) > 0 {
		if err := s.ledger.MarkProjected(ctx, projected...); err != nil {
			// Harmless: the projector projects them again (versions guard).
			s.log.Warn("marking events projected failed", "err", err)
		}
	}
	for i := range plans {
		if out[i].Result == nil && plans[i].err != nil {
			out[i].Err = plans[i].err
		}
	}
	return out
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
	for _, bt := range totals {
		t, v, _ := shard.ParseDimension(bt.Board)
		n := max(shards[t], 1)
		b := f.board(periodID, t, v)
		seq := max(bt.Seq, 0)
		ws = append(ws, store.Write{Kind: store.KindProject, Keys: s.layout.Keys(b, shard.Of(member, n), n), Member: member,
			Version: bt.Version, Value: f.enc.Stored(bt.Points), B: f.enc.B, Seq: seq, SetSeq: true, Absent: !bt.Present,
			MaxPoints: f.enc.MaxPoints, NowMs: now.UnixMilli(), Rules: f.cfg.RulesVersion})
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
	pending, err := s.ledger.Unprojected(ctx, olderThan, 500)
	if err != nil {
		return 0, ledgerErr(err)
	}
	var total int
	for _, p := range pending {
		f, ok := s.families[p.Family]
		if !ok {
			continue
		}
		if _, err := s.ensurePeriod(ctx, f, p.Period); err != nil {
			return total, err
		}
		ws := s.projections(ctx, f, p.Period, p.Member, p.Boards, s.now())
		ok = true
		for _, r := range s.be.Write(ctx, ws) {
			if r.Err != nil {
				ok = false
				s.log.Warn("re-projection failed", "event_id", p.EventID, "err", r.Err)
			}
		}
		if ok {
			if err := s.ledger.MarkProjected(ctx, p.EventID); err != nil {
				return total, ledgerErr(err)
			}
			total++
		}
	}
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
func (s *Service) projectLedger(ctx context.Context, f *family, b *board, user string, pr Projection, now time.Time) (ProjectionResult, error) {
	v := pr.Points
	id := "projection:" + b.name() + ":" + user + ":" + strconv.FormatInt(pr.Version, 10)
	res, err := s.ledger.Project(ctx, ledger.Event{EventID: id,
		Kind: "projection", Family: f.cfg.Name, Period: b.period.ID, Member: user, Boards: []string{b.b.Dimension()},
		Value: &v, Version: pr.Version, RulesVersion: f.cfg.RulesVersion, ReceivedAt: now, OccurredAt: now}, f.ledgerRules())
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
	r := s.be.Write(ctx, s.projections(ctx, f, b.period.ID, user, res.Boards, now))[0]
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

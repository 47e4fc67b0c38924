package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"time"

	"github.com/rankgate/rankgate/internal/ledger"
	"github.com/rankgate/rankgate/internal/period"
	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/store"
)

func (s *Service) settlementView(ctx context.Context, f *family, st ledger.Settlement) (SettlementView, error) {
	v := SettlementView{Family: st.Family, Period: st.Period, Top: st.Top, RankMode: st.RankMode, CreatedAt: st.CreatedAt.UTC(),
		Boards: map[string][]Standing{}, Outbox: []Award{}}
	for b, rows := range st.Boards {
		name := f.cfg.Name + "/" + st.Period + "/" + b
		out := make([]Standing, len(rows))
		for i, r := range rows {
			out[i] = Standing{User: r.Member, Points: r.Points, Position: r.Position, Rank: r.Rank}
		}
		v.Boards[name] = out
	}
	awards, err := s.ledger.Outbox(ctx, st.Family, st.Period)
	if err != nil {
		return SettlementView{}, ledgerErr(err)
	}
	for _, a := range awards {
		aw := Award{Board: f.cfg.Name + "/" + a.Period + "/" + a.Board, User: a.Member, Rank: a.Rank, Points: a.Points, IdempotencyKey: a.IdempotencyKey}
		if !a.DeliveredAt.IsZero() {
			d := a.DeliveredAt.UTC()
			aw.DeliveredAt = &d
		}
		v.Outbox = append(v.Outbox, aw)
	}
	return v, nil
}

// Settle writes the final standings of every board of a frozen period and an
// award outbox keyed by (period, board, member), in one ledger transaction.
// Re-running returns the same standings and never creates an award twice.
func (s *Service) Settle(ctx context.Context, familyName, periodID string, top int) (SettlementView, error) {
	if err := s.requireLedger("settlement"); err != nil {
		return SettlementView{}, err
	}
	if top < 1 || top > 10000 {
		return SettlementView{}, rank.Invalid("top", "top must be within 1..10000")
	}
	f, p, err := s.familyPeriod(familyName, periodID)
	if err != nil {
		return SettlementView{}, err
	}
	boards, err := s.lifeBE.Boards(ctx, s.layout.Period(f.cfg.Name, p.ID))
	if err != nil {
		return SettlementView{}, rank.Unavailable(err, "listing boards")
	}
	sort.Strings(boards)
	st, err := s.ledger.Settle(ctx, f.cfg.Name, p.ID, top, boards, f.cfg.Competition(), f.ledgerRules())
	if err != nil {
		return SettlementView{}, ledgerErr(err)
	}
	if _, err := s.ensurePeriod(ctx, f, p.ID); err == nil {
		if metas, err := s.boardShardMetas(ctx, f, p.ID); err == nil {
			_ = s.lifeBE.SetStates(ctx, metas, "settled")
			s.states.Delete(f.cfg.Name + "/" + p.ID)
		}
	}
	s.log.Info("period settled", "family", f.cfg.Name, "period", p.ID, "boards", len(st.Boards), "top", top)
	if f.cfg.Cohorts != nil {
		// Ledger mode: a league's period ends at its settlement.
		if _, err := s.weekEnd(ctx, f, p.ID); err != nil {
			return SettlementView{}, err
		}
	}
	return s.settlementView(ctx, f, st)
}

// SettlementOf returns a saved settlement.
func (s *Service) SettlementOf(ctx context.Context, familyName, periodID string) (SettlementView, error) {
	if err := s.requireLedger("settlement"); err != nil {
		return SettlementView{}, err
	}
	f, p, err := s.familyPeriod(familyName, periodID)
	if err != nil {
		return SettlementView{}, err
	}
	st, ok, err := s.ledger.Settlement(ctx, f.cfg.Name, p.ID)
	if err != nil {
		return SettlementView{}, ledgerErr(err)
	}
	if !ok {
		return SettlementView{}, rank.Errorf(rank.CodeNotFound, "period %s of %s is not settled", p.ID, f.cfg.Name)
	}
	return s.settlementView(ctx, f, st)
}

// Archive sets the family's retention TTL on every Redis key of a settled
// period (board shards, their dedupe and version hashes, the period's keys):
// Redis frees them itself; nothing big is DEL'd on the request path.
func (s *Service) Archive(ctx context.Context, familyName, periodID string) (PeriodDetail, error) {
	if err := s.requireLedger("archive (it needs saved standings)"); err != nil {
		return PeriodDetail{}, err
	}
	f, p, err := s.familyPeriod(familyName, periodID)
	if err != nil {
		return PeriodDetail{}, err
	}
	return s.archive(ctx, f, p)
}

// archive sets the retention TTLs of a period. In ledger mode it needs saved
// standings; in Redis-only mode (the scheduler's archive after a freeze)
// it needs a frozen period.
func (s *Service) archive(ctx context.Context, f *family, p period.Period) (PeriodDetail, error) {
	if s.ledger != nil {
		if _, ok, err := s.ledger.Settlement(ctx, f.cfg.Name, p.ID); err != nil {
			return PeriodDetail{}, ledgerErr(err)
		} else if !ok {
			return PeriodDetail{}, rank.Errorf(rank.CodePeriodClosed, "archive needs saved standings: settle %s first", p.ID)
		}
	} else if st, err := s.periodState(ctx, f, p.ID); err != nil {
		return PeriodDetail{}, err
	} else if st == "" || st == "open" {
		return PeriodDetail{}, rank.Errorf(rank.CodePeriodClosed, "archive needs a frozen period: freeze %s first", p.ID)
	}
	pk := s.layout.Period(f.cfg.Name, p.ID)
	dimsList, err := s.lifeBE.Boards(ctx, pk)
	if err != nil {
		return PeriodDetail{}, rank.Unavailable(err, "listing boards")
	}
	shards, err := s.shardCounts(ctx, f, p.ID)
	if err != nil {
		return PeriodDetail{}, err
	}
	metas, err := s.boardShardMetas(ctx, f, p.ID)
	if err != nil {
		return PeriodDetail{}, err
	}
	if err := s.lifeBE.SetStates(ctx, metas, "archived"); err != nil {
		return PeriodDetail{}, rank.Unavailable(err, "marking %s archived", p.ID)
	}
	keys := []string{pk.Seq, pk.Meta, pk.Boards, pk.Late}
	for _, d := range dimsList {
		t, v, ok := shard.ParseDimension(d)
		if !ok {
			continue
		}
		n := shards[t]
		b := f.board(p.ID, t, v)
		for i := 0; i < n; i++ {
			k := s.layout.Keys(b, i, n)
			keys = append(keys, k.Z, k.M, k.Ev, k.Meta, k.Cols, k.Md, k.Feed)
			if f.tour != nil {
				keys = append(keys, shard.JoinsKey(k.Z), shard.AttemptsKey(k.Z))
			}
		}
	}
	if err := s.lifeBE.Expire(ctx, keys, f.cfg.Retention); err != nil {
		return PeriodDetail{}, rank.Unavailable(err, "setting retention on %s; retry (archive is idempotent)", p.ID)
	}
	if s.ledger != nil {
		if _, err := s.ledger.SetArchived(ctx, f.cfg.Name, p.ID); err != nil {
			return PeriodDetail{}, ledgerErr(err)
		}
	}
	s.states.Delete(f.cfg.Name + "/" + p.ID)
	s.log.Info("period archived", "family", f.cfg.Name, "period", p.ID, "keys", len(keys), "retention", f.cfg.Retention.String())
	return s.PeriodDetail(ctx, f.cfg.Name, p.ID)
}

// rebuildPage is how many ledger totals a rebuild reads at a time.
const rebuildPage = 5000

// Rebuild recomputes a board from the ledger into fresh keys per shard and
// swaps them in with RENAME inside each shard's slot, versions included (a
// late re-projection of an older total cannot undo it). Progress is logged.
func (s *Service) Rebuild(ctx context.Context, ref BoardRef) (RebuildReport, error) {
	if err := s.requireLedger("rebuild"); err != nil {
		return RebuildReport{}, err
	}
	start := time.Now()
	b, err := s.resolve(ctx, ref)
	if err != nil {
		return RebuildReport{}, err
	}
	f := b.fam
	perShard := make([][]store.RebuildEntry, b.n)
	after := ""
	var read int
	for {
		page, err := s.ledger.Totals(ctx, f.cfg.Name, b.period.ID, b.b.Dimension(), after, rebuildPage)
		if err != nil {
			return RebuildReport{}, ledgerErr(err)
		}
		for _, t := range page {
			if !t.Present {
				continue
			}
			e, err := rebuildEntry(f, t)
			if err != nil {
				return RebuildReport{}, fmt.Errorf("rebuild %s: member %s: %w", b.name(), t.Member, err)
			}
			i := shard.Of(t.Member, b.n)
			perShard[i] = append(perShard[i], e)
		}
		read += len(page)
		if len(page) < rebuildPage {
			break
		}
		after = page[len(page)-1].Member
		s.log.Info("rebuild: reading the ledger", "board", b.name(), "members_read", read)
	}
	var members int64
	for i := 0; i < b.n; i++ {
		n, err := s.lifeBE.Rebuild(ctx, s.layout.Keys(b.b, i, b.n), perShard[i], b.fam.feedLen)
		if err != nil {
			return RebuildReport{}, rank.Unavailable(err, "rebuild of %s shard %d; retry (rebuild is idempotent)", b.name(), i)
		}
		members += n
		s.log.Info("rebuild: shard swapped in", "board", b.name(), "shard", i, "of", b.n, "members", n)
	}
	if f.tour != nil {
		if err := s.restoreSeats(ctx, b); err != nil {
			return RebuildReport{}, err
		}
	}
	s.registerBoards(ctx, []plan{{fam: f, period: b.period, boards: []shard.Board{b.b}}})
	return RebuildReport{Board: b.name(), Members: members, Shards: b.n, Took: time.Since(start)}, nil
}

// rebuildEntry is what Redis holds for a member's ledger totals: the score,
// and on a family with sort columns the stored member's prefix (columns and
// tie-first seq, as columns.lua writes it); the metadata either way.
func rebuildEntry(f *family, t ledger.MemberTotal) (store.RebuildEntry, error) {
	e := store.RebuildEntry{Member: t.Member, Version: t.Version, Metadata: t.Metadata}
	c := f.enc.Cols
	if c == nil {
		score, err := f.enc.Score(t.Points, max(t.Seq, 0))
		e.Score = score
		return e, err
	}
	if err := f.enc.CheckPoints("points", t.Points); err != nil {
		return e, err
	}
	if len(t.Columns) != len(c.Cols) {
		return e, fmt.Errorf("the ledger holds %d column values for %d columns", len(t.Columns), len(c.Cols))
	}
	if err := c.Check(t.Columns); err != nil {
		return e, err
	}
	seq := int64(0)
	if c.B > 0 {
		seq = t.Seq
		if seq < 0 || seq >= c.B {
			return e, fmt.Errorf("achievement seq %d outside 0..%d", seq, c.B-1)
		}
	}
	e.Score, e.Prefix = f.enc.Stored(t.Points), c.Prefix(t.Columns, seq)
	return e, nil
}

// maxDriftListed bounds the drift a report lists (it counts them all).
const maxDriftListed = 1000

// Reconcile compares a board's Redis points with the ledger, both ways.
func (s *Service) Reconcile(ctx context.Context, ref BoardRef) (ReconcileReport, error) {
	if err := s.requireLedger("reconcile"); err != nil {
		return ReconcileReport{}, err
	}
	b, err := s.resolve(ctx, ref)
	if err != nil {
		return ReconcileReport{}, err
	}
	f := b.fam
	rep := ReconcileReport{Board: b.name(), Drift: []Drift{}}
	add := func(d Drift) {
		rep.Drifted++
		if len(rep.Drift) < maxDriftListed {
			rep.Drift = append(rep.Drift, d)
		} else {
			rep.Truncated = true
		}
	}
	ledgerHas := map[string]bool{}
	after := ""
	for {
		page, err := s.ledger.Totals(ctx, f.cfg.Name, b.period.ID, b.b.Dimension(), after, rebuildPage)
		if err != nil {
			return ReconcileReport{}, ledgerErr(err)
		}
		byShard := make([][]ledger.MemberTotal, b.n)
		for _, t := range page {
			if t.Present {
				i := shard.Of(t.Member, b.n)
				byShard[i] = append(byShard[i], t)
				ledgerHas[t.Member] = true
			}
		}
		for i, ts := range byShard {
			if len(ts) == 0 {
				continue
			}
			members := make([]string, len(ts))
			for j, t := range ts {
				members[j] = t.Member
			}
			scores, cols, ok, err := s.redisStandings(ctx, b, i, members)
			if err != nil {
				return ReconcileReport{}, rank.Unavailable(err, "reading shard %d", i)
			}
			for j, t := range ts {
				rep.Checked++
				lp := t.Points
				if !ok[j] {
					add(Drift{User: t.Member, LedgerPoints: &lp})
					continue
				}
				rp := f.enc.PointsOf(scores[j])
				d := Drift{User: t.Member, LedgerPoints: &lp, RedisPoints: &rp}
				if c := f.enc.Cols; c != nil && !slices.Equal(cols[j], t.Columns) {
					d.LedgerColumns, d.RedisColumns = colsMap(c, t.Columns), colsMap(c, cols[j])
					if d.LedgerColumns == nil {
						d.LedgerColumns = map[string]int64{} // the ledger holds none: still a drift
					}
				}
				if rp != lp || d.LedgerColumns != nil {
					add(d)
				}
			}
		}
		if len(page) < rebuildPage {
			break
		}
		after = page[len(page)-1].Member
	}
	// Members Redis has and the ledger does not.
	for i := 0; i < b.n; i++ {
		var cursor uint64
		for {
			ms, scores, next, err := s.lifeBE.ShardMembers(ctx, s.layout.ZKey(b.b, i, b.n), cursor, 1000)
			if err != nil {
				return ReconcileReport{}, rank.Unavailable(err, "scanning shard %d", i)
			}
			for j, m := range ms {
				if c := f.enc.Cols; c != nil {
					if user, _, _, ok := c.Split(m); ok {
						m = user
					}
				}
				if !ledgerHas[m] {
					rp := f.enc.PointsOf(scores[j])
					add(Drift{User: m, RedisPoints: &rp})
				}
			}
			if next == 0 {
				break
			}
			cursor = next
		}
	}
	return rep, nil
}

// colsMap is c.Map, nil for no values.
func colsMap(c *rank.Columns, vals []int64) map[string]int64 {
	if c == nil || len(vals) != len(c.Cols) {
		return nil
	}
	return c.Map(vals)
}

// colsMap names a family's column values (nil: none, or no columns).
func (f *family) colsMap(vals []int64) map[string]int64 { return colsMap(f.enc.Cols, vals) }

// redisStandings reads users' scores on shard i of a board, and on a family
// with sort columns their columns (through the cols hash, members.lua).
func (s *Service) redisStandings(ctx context.Context, b *board, i int, users []string) ([]int64, [][]int64, []bool, error) {
	c := b.fam.enc.Cols
	if c == nil {
		scores, ok, err := s.lifeBE.Scores(ctx, s.layout.ZKey(b.b, i, b.n), users, false)
		return scores, nil, ok, err
	}
	k := s.layout.Keys(b.b, i, b.n)
	out := make([]store.ShardReply, 1)
	s.readBE.ReadShards(ctx, []store.ShardRead{{Kind: store.ReadScores, Key: k.Z, Cols: k.Cols, Members: users}}, false, out)
	if out[0].Err != nil {
		return nil, nil, nil, out[0].Err
	}
	cols := make([][]int64, len(users))
	for j, stored := range out[0].Stored {
		if out[0].Found[j] {
			if _, vals, _, ok := c.Split(stored); ok {
				cols[j] = vals
			}
		}
	}
	return out[0].Scores, cols, out[0].Found, nil
}

// Correct applies an audited correction: an event of kind correction in the
// ledger, with operator and reason, projected like any other. Never an edit
// in a Redis console, which the next rebuild would silently undo.
func (s *Service) Correct(ctx context.Context, c Correction) (EventResult, error) {
	if err := s.requireLedger("a correction (an audited ledger event)"); err != nil {
		return EventResult{}, err
	}
	if c.Operator == "" || len(c.Operator) > 128 || !rank.Printable(c.Operator) {
		return EventResult{}, rank.Invalid("operator", "operator is required (printable, at most 128 bytes)")
	}
	if c.Reason == "" {
		return EventResult{}, rank.Invalid("reason", "reason is required")
	}
	f, err := s.family(c.Family)
	if err != nil {
		return EventResult{}, err
	}
	now := s.now()
	ev := Event{EventID: c.CorrectionID, Family: c.Family, User: c.User, Delta: c.Delta, Dims: c.Dims, Reason: c.Reason,
		Columns: c.Columns, Metadata: c.Metadata}
	p := s.planEvent(ev, now)
	if p.err == nil && c.Period != "" && c.Period != "current" {
		per, err := f.spec.Parse(c.Period)
		if err != nil {
			return EventResult{}, rank.Invalid("period", "%v", err)
		}
		p.period = per
		if p.boards, err = s.boardsOf(f, per.ID, c.Dims); err != nil {
			return EventResult{}, err
		}
	}
	if p.err != nil {
		var re *rank.Error
		if errors.As(p.err, &re) && re.Field == "event_id" {
			re.Field = "correction_id"
		}
		return EventResult{}, p.err
	}
	if err := s.checkBan(ctx, c.User, f.cfg.Name); err != nil {
		return EventResult{}, err
	}
	p.correction, p.operator = true, c.Operator
	if _, err := s.ensurePeriod(ctx, f, p.period.ID); err != nil {
		return EventResult{}, err
	}
	out, err := s.ledgerWrites.apply(ctx, []plan{p}, nil, now)
	if err != nil {
		return EventResult{}, err
	}
	if out[0].Err != nil {
		return EventResult{}, out[0].Err
	}
	s.registerBoards(ctx, []plan{p})
	s.log.Info("correction applied", "family", f.cfg.Name, "period", p.period.ID, "member", c.User, "correction_id", c.CorrectionID,
		"delta", *c.Delta, "operator", c.Operator, "reason", c.Reason)
	return *out[0].Result, nil
}

// DecideReview accepts a late event kept for review — as an audited
// correction of the family's current (open) period, with the operator named
// — or rejects it. Deciding again the same way is a no-op.
func (s *Service) DecideReview(ctx context.Context, id, familyName, periodID, operator string, accept bool) (ReviewDecision, error) {
	if err := s.requireLedger("deciding reviews"); err != nil {
		return ReviewDecision{}, err
	}
	n, err := strconv.ParseInt(id, 10, 64)
	if err != nil || n < 1 {
		return ReviewDecision{}, rank.Invalid("id", "review id must be a positive integer")
	}
	if operator == "" || len(operator) > 128 || !rank.Printable(operator) {
		return ReviewDecision{}, rank.Invalid("operator", "operator is required (printable, at most 128 bytes)")
	}
	f, p, err := s.familyPeriod(familyName, periodID)
	if err != nil {
		return ReviewDecision{}, err
	}
	rs, err := s.ledger.Reviews(ctx, f.cfg.Name, p.ID, 1000)
	if err != nil {
		return ReviewDecision{}, ledgerErr(err)
	}
	var rv *ledger.Review
	for i := range rs {
		if rs[i].ID == n {
			rv = &rs[i]
		}
	}
	if rv == nil {
		return ReviewDecision{}, rank.Errorf(rank.CodeNotFound, "no review %d in %s/%s", n, f.cfg.Name, p.ID)
	}
	out := ReviewDecision{ReviewID: id, Accepted: accept}
	correctionID := ""
	if accept {
		var ev Event
		if err := json.Unmarshal(rv.Event, &ev); err != nil {
			return ReviewDecision{}, rank.Invalid("id", "review %d does not hold an event", n)
		}
		if ev.Delta == nil || ev.Reverses != "" {
			return ReviewDecision{}, rank.Invalid("id", "only a point event with a delta can become a correction")
		}
		correctionID = "review-" + id
		res, err := s.Correct(ctx, Correction{CorrectionID: correctionID, Family: f.cfg.Name, User: ev.User, Dims: ev.Dims,
			Delta: ev.Delta, Columns: ev.Columns, Metadata: ev.Metadata,
			Operator: operator, Reason: "accepted review " + id + " (" + rv.Reason + ") of event " + ev.EventID})
		if err != nil {
			return ReviewDecision{}, err
		}
		out.Correction = &res
	}
	if err := s.ledger.DecideReview(ctx, n, accept, operator, correctionID); err != nil {
		if errors.Is(err, ledger.ErrReviewDecided) {
			return ReviewDecision{}, rank.Errorf(rank.CodeInvalidArgument, "review %d was decided the other way already", n)
		}
		return ReviewDecision{}, ledgerErr(err)
	}
	return out, nil
}

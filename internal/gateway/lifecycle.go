package gateway

import (
	"context"
	"sort"
	"time"

	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/shard"
)

// periodStateTTL bounds how long a gateway trusts its copy of a period's
// state: a freeze made through another gateway reaches brand-new boards of
// this one within it (existing board shards refuse at once, atomically).
const periodStateTTL = time.Second

type cachedState struct {
	state string
	until time.Time
}

// periodState returns the period's recorded state ("" when never written).
func (s *Service) periodState(ctx context.Context, f *family, periodID string) (string, error) {
	key := f.cfg.Name + "/" + periodID
	now := s.now()
	if v, ok := s.states.Load(key); ok && now.Before(v.(cachedState).until) {
		return v.(cachedState).state, nil
	}
	st, err := s.lifeBE.Period(ctx, s.layout.Period(f.cfg.Name, periodID))
	if err != nil {
		return "", rank.Unavailable(err, "reading period %s", key)
	}
	s.states.Store(key, cachedState{state: st.State, until: now.Add(periodStateTTL)})
	return st.State, nil
}

// Mode is "ledger" or "redis-only".
func (s *Service) Mode() string {
	if s.ledger != nil {
		return "ledger"
	}
	return "redis-only"
}

// PeriodDetail reports a period's state, boards, shard counts and rules.
func (s *Service) PeriodDetail(ctx context.Context, familyName, periodID string) (PeriodDetail, error) {
	f, p, err := s.familyPeriod(familyName, periodID)
	if err != nil {
		return PeriodDetail{}, err
	}
	pk := s.layout.Period(f.cfg.Name, p.ID)
	st, err := s.lifeBE.Period(ctx, pk)
	if err != nil {
		return PeriodDetail{}, rank.Unavailable(err, "reading period %s", p.ID)
	}
	dims, err := s.lifeBE.Boards(ctx, pk)
	if err != nil {
		return PeriodDetail{}, rank.Unavailable(err, "listing boards of %s", p.ID)
	}
	sort.Strings(dims)
	d := PeriodDetail{Family: f.cfg.Name, Period: p.ID, State: st.State, Boards: dims, Shards: s.mergeShards(f.cfg.Name+"/"+p.ID, f, st),
		RulesVersion: st.Rules, Mode: s.Mode()}
	if d.State == "" {
		d.State = "open"
	}
	if d.RulesVersion == "" {
		d.RulesVersion = f.cfg.RulesVersion
	}
	if !p.End.IsZero() {
		a, b, c := p.Start, p.End, p.End.Add(f.cfg.Grace)
		d.Starts, d.Ends, d.WritesUntil = &a, &b, &c
	}
	d.Writable = d.State == "open" && !f.closedAt(p, s.now())
	if d.Boards == nil {
		d.Boards = []string{}
	}
	if f.cfg.Lifecycle != nil && !p.End.IsZero() {
		sch := s.schedule(f, p)
		d.Schedule = map[string]time.Time{StepFreeze: sch.FreezeAt}
		if sch.Settle {
			d.Schedule[StepSettle] = sch.SettleAt
		}
		if sch.Archive {
			d.Schedule[StepArchive] = sch.ArchiveAt
		}
		state := st.State
		if s.ledger != nil {
			if state, err = s.ledger.State(ctx, f.cfg.Name, p.ID); err != nil {
				return PeriodDetail{}, ledgerErr(err)
			}
		}
		if ns := sch.next(state, s.ledger != nil, len(dims) > 0); ns.Step != "" && !sch.unwritten(st.Exists, s.now()) {
			d.NextStep = &ns
		}
	}
	return d, nil
}

// boardShardMetas lists the meta key of every shard of every board of a
// period, plus the period's own meta.
func (s *Service) boardShardMetas(ctx context.Context, f *family, periodID string) ([]string, error) {
	pk := s.layout.Period(f.cfg.Name, periodID)
	dims, err := s.lifeBE.Boards(ctx, pk)
	if err != nil {
		return nil, rank.Unavailable(err, "listing boards of %s", periodID)
	}
	shards, err := s.shardCounts(ctx, f, periodID)
	if err != nil {
		return nil, err
	}
	metas := []string{pk.Meta}
	for _, d := range dims {
		t, v, ok := shard.ParseDimension(d)
		if !ok {
			continue
		}
		n := shards[t]
		b := f.board(periodID, t, v)
		for i := 0; i < n; i++ {
			metas = append(metas, s.layout.Keys(b, i, n).Meta)
		}
	}
	return metas, nil
}

// Freeze marks every shard of every board of the period (and the period)
// frozen: from then on the scripts refuse writes atomically and refused
// events are kept for review. In ledger mode the ledger refuses them first.
// Idempotent.
func (s *Service) Freeze(ctx context.Context, familyName, periodID string) (PeriodDetail, error) {
	f, p, err := s.familyPeriod(familyName, periodID)
	if err != nil {
		return PeriodDetail{}, err
	}
	if f.cfg.Derived() {
		// A derived period freezes with its boards computed one last time.
		if st, err := s.periodState(ctx, f, p.ID); err != nil {
			return PeriodDetail{}, err
		} else if st == "" || st == "open" {
			if _, err := s.derive(ctx, f, p.ID); err != nil {
				return PeriodDetail{}, err
			}
		}
	}
	if s.ledger != nil {
		if _, err := s.ledger.Freeze(ctx, f.cfg.Name, p.ID); err != nil {
			return PeriodDetail{}, ledgerErr(err)
		}
	}
	if _, err := s.ensurePeriod(ctx, f, p.ID); err != nil {
		return PeriodDetail{}, err
	}
	metas, err := s.boardShardMetas(ctx, f, p.ID)
	if err != nil {
		return PeriodDetail{}, err
	}
	st, err := s.periodState(ctx, f, p.ID)
	if err != nil {
		return PeriodDetail{}, err
	}
	if st == "" || st == "open" {
		st = "frozen"
	}
	if err := s.lifeBE.SetStates(ctx, metas, st); err != nil {
		return PeriodDetail{}, rank.Unavailable(err, "freezing %s/%s; retry (freeze is idempotent)", f.cfg.Name, p.ID)
	}
	s.states.Delete(f.cfg.Name + "/" + p.ID)
	s.log.Info("period frozen", "family", f.cfg.Name, "period", p.ID, "shards", len(metas)-1)
	if f.cfg.Cohorts != nil && s.ledger == nil {
		// Redis-only mode: a league's period ends at its freeze.
		if _, err := s.weekEnd(ctx, f, p.ID); err != nil {
			return PeriodDetail{}, err
		}
	}
	return s.PeriodDetail(ctx, f.cfg.Name, p.ID)
}

// Reviews lists the late events kept for review in a family period.
func (s *Service) Reviews(ctx context.Context, familyName, periodID string, limit int) (ReviewList, error) {
	if limit <= 0 {
		limit = 100
	}
	if limit > 1000 {
		return ReviewList{}, rank.Invalid("limit", "limit must be within 1..1000")
	}
	f, p, err := s.familyPeriod(familyName, periodID)
	if err != nil {
		return ReviewList{}, err
	}
	out := ReviewList{Family: f.cfg.Name, Period: p.ID, Reviews: []Review{}}
	if s.ledger != nil {
		out.Source = "ledger"
		rs, err := s.ledgerReviews(ctx, f.cfg.Name, p.ID, limit)
		if err != nil {
			return ReviewList{}, err
		}
		out.Reviews = append(out.Reviews, rs...)
		return out, nil
	}
	out.Source = "redis"
	msgs, err := s.lifeBE.LateEvents(ctx, s.layout.Period(f.cfg.Name, p.ID), int64(limit))
	if err != nil {
		return ReviewList{}, rank.Unavailable(err, "reading reviews")
	}
	for _, m := range msgs {
		out.Reviews = append(out.Reviews, Review{ID: m.ID, Family: f.cfg.Name, Period: p.ID, Status: "pending",
			Reason: m.Reason, Event: m.Event, ReceivedAt: m.ReceivedAt})
	}
	return out, nil
}

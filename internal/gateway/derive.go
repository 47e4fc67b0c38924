package gateway

import (
	"context"
	"sort"
	"time"

	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/shard"
)

// Derive computes every board of a derived family for a period from its
// inputs' boards, shard by shard: dst = ZUNIONSTORE WEIGHTS … AGGREGATE …
// of the inputs' shard keys, all under the family's key group, so each shard
// is one atomic command in one slot. It runs on demand and when the derived
// period is frozen; a frozen or settled derived board does not change.
func (s *Service) Derive(ctx context.Context, familyName, periodID string) (DeriveReport, error) {
	f, err := s.family(familyName)
	if err != nil {
		return DeriveReport{}, err
	}
	if !f.cfg.Derived() {
		return DeriveReport{}, rank.Errorf(rank.CodeWrongSource, "family %s is not derived (source: %s)", f.cfg.Name, f.cfg.Source)
	}
	p, err := s.periodOf(f, periodID)
	if err != nil {
		return DeriveReport{}, err
	}
	if st, err := s.periodState(ctx, f, p.ID); err != nil {
		return DeriveReport{}, err
	} else if st != "" && st != "open" {
		return DeriveReport{}, rank.Errorf(rank.CodePeriodClosed, "period %s of %s is %s: its derived boards are final", p.ID, f.cfg.Name, st)
	}
	return s.derive(ctx, f, p.ID)
}

func (s *Service) derive(ctx context.Context, f *family, periodID string) (DeriveReport, error) {
	start := time.Now()
	dv := f.cfg.DerivedFrom
	own, err := s.ensurePeriod(ctx, f, periodID)
	if err != nil {
		return DeriveReport{}, err
	}
	inputs := make([]*family, len(dv.Inputs))
	weights := make([]int64, len(dv.Inputs))
	dimSet := map[string]bool{}
	for i, in := range dv.Inputs {
		inputs[i], weights[i] = s.families[in.Family], in.Weight
		sc, err := s.shardCounts(ctx, inputs[i], periodID)
		if err != nil {
			return DeriveReport{}, err
		}
		for t, n := range sc {
			if _, declared := f.cfg.Dimensions[t]; declared && n != own[t] {
				return DeriveReport{}, rank.Errorf(rank.CodeInvalidArgument,
					"period %s of %s records %d shards for %s, %s has %d: derived boards need equal shard counts", periodID, in.Family, n, t, f.cfg.Name, own[t])
			}
		}
		dims, err := s.lifeBE.Boards(ctx, s.layout.Period(in.Family, periodID))
		if err != nil {
			return DeriveReport{}, rank.Unavailable(err, "listing boards of %s/%s", in.Family, periodID)
		}
		for _, d := range dims {
			if t, _, ok := shard.ParseDimension(d); ok {
				if _, declared := f.cfg.Dimensions[t]; declared {
					dimSet[d] = true
				}
			}
		}
	}
	dims := make([]string, 0, len(dimSet))
	for d := range dimSet {
		dims = append(dims, d)
	}
	sort.Strings(dims)
	rep := DeriveReport{Family: f.cfg.Name, Period: periodID, Boards: []BoardSummary{}}
	var boards []shard.Board
	for _, d := range dims {
		t, v, _ := shard.ParseDimension(d)
		n := own[t]
		dst := f.board(periodID, t, v)
		counts, err := fanout(ctx, s, "derive", n, func(ctx context.Context, i int) (int64, error) {
			srcs := make([]string, len(inputs))
			for j, in := range inputs {
				srcs[j] = s.layout.ZKey(in.board(periodID, t, v), i, n)
			}
			return s.lifeBE.Derive(ctx, s.layout.ZKey(dst, i, n), srcs, weights, dv.Aggregate, f.feedLen)
		})
		if err != nil {
			return DeriveReport{}, err
		}
		var members int64
		for _, c := range counts {
			members += c
		}
		boards = append(boards, dst)
		rep.Boards = append(rep.Boards, BoardSummary{Board: dst.String(), Dimension: d, Shards: n, Members: members})
	}
	if len(boards) > 0 {
		p, _ := f.spec.Parse(periodID)
		s.registerBoards(ctx, []plan{{fam: f, period: p, boards: boards}})
	}
	rep.Took = time.Since(start)
	s.log.Info("derived boards computed", "family", f.cfg.Name, "period", periodID, "boards", len(boards), "took", rep.Took.String())
	return rep, nil
}

package gateway

import (
	"context"
	"encoding/json"
	"github.com/rankgate/rankgate/api/wire"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rankgate/rankgate/internal/competition"
	"github.com/rankgate/rankgate/internal/config"
	"github.com/rankgate/rankgate/internal/ledger"
	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/store"
)

// LeagueBackend carries leagues: placement (one script in the slot of a
// tier's placement state), the members' tiers (each under the member's own
// tag), cohort sizes, the cohorts' standings and the record of moves.
type LeagueBackend interface {
	Place(ctx context.Context, pk shard.PlacementKeys, member string, size int) (int64, bool, error)
	PlacedIn(ctx context.Context, pk shard.PlacementKeys, member string) (int64, bool, error)
	LeagueMembers(ctx context.Context, keys []string, period string) ([]store.LeagueState, error)
	SetLeagueCohort(ctx context.Context, key, period, cohort string) error
	CohortSizes(ctx context.Context, pks []shard.PlacementKeys) ([][]int64, error)
	BoardMembers(ctx context.Context, keys []string) ([][]string, error)
	RecordMoves(ctx context.Context, mk shard.MovesKeys, members []string, moves [][]byte, tiers []store.TierWrite) error
	MovesDone(ctx context.Context, mk shard.MovesKeys) (bool, error)
	Moves(ctx context.Context, mk shard.MovesKeys) (map[string]string, error)
}

var _ LeagueBackend = (*store.Store)(nil)

// tierOf is the tier a member's league hash names, or the first tier (a new
// member, or a tier no longer configured).
func tierOf(c *config.Cohorts, st store.LeagueState) string {
	if c.TierIndex(st.Tier) >= 0 {
		return st.Tier
	}
	return c.Tiers[0]
}

// placeCohorts adds each league event's cohort board to its plan: the
// member's cohort of the period (from their league hash), or — at their
// first event of the period — a place in the open cohort of their tier,
// taken by place.lua in the tier's slot (idempotent per member, so two
// first events on two gateways agree). Closed periods and reversals never
// place anyone. Members are placed in the batch's array order.
func (s *Service) placeCohorts(ctx context.Context, plans []plan) error {
	var idx []int
	var keys []string
	for i := range plans {
		p := &plans[i]
		if p.err == nil && p.fam.cfg.Cohorts != nil {
			idx = append(idx, i)
			keys = append(keys, s.layout.LeagueMember(p.ev.User, p.fam.cfg.Name))
		}
	}
	if len(idx) == 0 {
		return nil
	}
	// One pipeline reads every member's hash (several periods in one batch
	// are rare: read per distinct period).
	states := make([]store.LeagueState, len(idx))
	byPeriod := map[string][]int{}
	for j, i := range idx {
		byPeriod[plans[i].period.ID] = append(byPeriod[plans[i].period.ID], j)
	}
	for pid, js := range byPeriod {
		ks := make([]string, len(js))
		for k, j := range js {
			ks[k] = keys[j]
		}
		got, err := s.leagueBE.LeagueMembers(ctx, ks, pid)
		if err != nil {
			return writeUnavailable(err, "reading the league members of period %s", pid)
		}
		for k, j := range js {
			states[j] = got[k]
		}
	}
	placed := map[string]string{} // key + period → cohort, within this batch
	for j, i := range idx {
		p := &plans[i]
		c := p.fam.cfg.Cohorts
		cohort := states[j].Cohort
		if cohort == "" {
			cohort = placed[keys[j]+" "+p.period.ID]
		}
		if cohort == "" && !p.periodClosed && p.ev.Reverses == "" {
			tier := tierOf(c, states[j])
			n, _, err := s.leagueBE.Place(ctx, s.layout.Placement(p.fam.cfg.Name, p.period.ID, tier), p.ev.User, c.Size)
			if err != nil {
				return writeUnavailable(err, "placing %s in a cohort", p.ev.User)
			}
			cohort = shard.CohortName(tier, n)
			placed[keys[j]+" "+p.period.ID] = cohort
			if err := s.leagueBE.SetLeagueCohort(ctx, keys[j], p.period.ID, cohort); err != nil {
				// The placement is the truth; the member's copy is a shortcut.
				s.log.Warn("recording a member's cohort failed", "family", p.fam.cfg.Name, "member", p.ev.User, "err", err)
			}
		}
		if cohort != "" {
			p.boards = append(p.boards, p.fam.board(p.period.ID, shard.DimCohort, cohort))
		}
	}
	return nil
}

// league resolves a league family (a family without cohorts: 400 naming
// the field family).
func (s *Service) league(name string) (*family, error) {
	f, err := s.family(name)
	if err != nil {
		return nil, err
	}
	if f.cfg.Cohorts == nil {
		return nil, rank.Invalid("family", "family %s has no cohorts: it is not a league", f.cfg.Name)
	}
	return f, nil
}

// League returns a member's tier and their cohort of a period (nil before
// their first event of it).
func (s *Service) League(ctx context.Context, familyName, member, periodID string) (LeagueStanding, error) {
	f, err := s.league(familyName)
	if err != nil {
		return LeagueStanding{}, err
	}
	if !rank.ValidMember(member) {
		return LeagueStanding{}, rank.Invalid("member", "member must match [A-Za-z0-9_.@-]{1,64}")
	}
	p, err := s.periodOf(f, periodID)
	if err != nil {
		return LeagueStanding{}, err
	}
	key := s.layout.LeagueMember(member, f.cfg.Name)
	sts, err := s.leagueBE.LeagueMembers(ctx, []string{key}, p.ID)
	if err != nil {
		return LeagueStanding{}, rank.Unavailable(err, "reading the league of %s", member)
	}
	c := f.cfg.Cohorts
	out := LeagueStanding{Family: f.cfg.Name, Period: p.ID, Member: member, Tier: tierOf(c, sts[0])}
	cohort := sts[0].Cohort
	if cohort == "" {
		// The member's copy may be missing (a failed write after placement):
		// ask the placement of their tier.
		n, ok, err := s.leagueBE.PlacedIn(ctx, s.layout.Placement(f.cfg.Name, p.ID, out.Tier), member)
		if err != nil {
			return LeagueStanding{}, rank.Unavailable(err, "reading the placement of %s", member)
		}
		if ok {
			cohort = shard.CohortName(out.Tier, n)
		}
	}
	if cohort != "" {
		b := f.board(p.ID, shard.DimCohort, cohort).String()
		out.Cohort, out.Board = &cohort, &b
		if t, _, ok := cutCohort(cohort); ok {
			out.Tier = t // the tier they play this period in
		}
	}
	return out, nil
}

// cutCohort splits "<tier>-<n>".
func cutCohort(name string) (string, int64, bool) {
	i := strings.LastIndexByte(name, '-')
	if i <= 0 {
		return "", 0, false
	}
	n, err := strconv.ParseInt(name[i+1:], 10, 64)
	return name[:i], n, err == nil && n >= 1
}

// LeagueStanding answers GET /v1/families/{family}/members/{member}/league.
type LeagueStanding = wire.LeagueStanding

// CohortInfo is one cohort of a league period.
type CohortInfo = wire.Cohort

// CohortList answers GET /v1/families/{family}/cohorts.
type CohortList = wire.CohortList

// MoveList answers GET /v1/families/{family}/moves.
type MoveList = wire.MoveList

// Cohorts lists a league period's cohorts, by tier (lowest first) and number.
func (s *Service) Cohorts(ctx context.Context, familyName, periodID string) (CohortList, error) {
	f, err := s.league(familyName)
	if err != nil {
		return CohortList{}, err
	}
	p, err := s.periodOf(f, periodID)
	if err != nil {
		return CohortList{}, err
	}
	cs, err := s.cohortsOf(ctx, f, p.ID)
	if err != nil {
		return CohortList{}, err
	}
	return CohortList{Family: f.cfg.Name, Period: p.ID, Cohorts: cs}, nil
}

func (s *Service) cohortsOf(ctx context.Context, f *family, periodID string) ([]CohortInfo, error) {
	tiers := f.cfg.Cohorts.Tiers
	pks := make([]shard.PlacementKeys, len(tiers))
	for i, t := range tiers {
		pks[i] = s.layout.Placement(f.cfg.Name, periodID, t)
	}
	sizes, err := s.leagueBE.CohortSizes(ctx, pks)
	if err != nil {
		return nil, rank.Unavailable(err, "reading the cohorts of %s/%s", f.cfg.Name, periodID)
	}
	out := []CohortInfo{}
	for i, t := range tiers {
		for n, size := range sizes[i] {
			out = append(out, CohortInfo{Cohort: shard.CohortName(t, int64(n+1)), Tier: t, Size: size})
		}
	}
	return out, nil
}

// Moves lists the recorded moves of a league period, by tier, cohort and
// position.
func (s *Service) Moves(ctx context.Context, familyName, periodID string) (MoveList, error) {
	f, err := s.league(familyName)
	if err != nil {
		return MoveList{}, err
	}
	p, err := s.periodOf(f, periodID)
	if err != nil {
		return MoveList{}, err
	}
	mk := s.layout.Moves(f.cfg.Name, p.ID)
	done, err := s.leagueBE.MovesDone(ctx, mk)
	if err != nil {
		return MoveList{}, rank.Unavailable(err, "reading the moves of %s/%s", f.cfg.Name, p.ID)
	}
	out := MoveList{Family: f.cfg.Name, Period: p.ID, Recorded: done, Moves: []competition.Move{}}
	if !done {
		return out, nil
	}
	all, err := s.leagueBE.Moves(ctx, mk)
	if err != nil {
		return MoveList{}, rank.Unavailable(err, "reading the moves of %s/%s", f.cfg.Name, p.ID)
	}
	for _, v := range all {
		var m competition.Move
		if json.Unmarshal([]byte(v), &m) == nil {
			out.Moves = append(out.Moves, m)
		}
	}
	c := f.cfg.Cohorts
	slices.SortFunc(out.Moves, func(a, b competition.Move) int {
		at, an, _ := cutCohort(a.Cohort)
		bt, bn, _ := cutCohort(b.Cohort)
		if d := c.TierIndex(at) - c.TierIndex(bt); d != 0 {
			return d
		}
		if an != bn {
			return int(an - bn)
		}
		return int(a.Position - b.Position)
	})
	return out, nil
}

// MovedBody is the JSON of a league.moved delivery to the awards webhook.
type MovedBody struct {
	Type           string `json:"type"` // league.moved
	IdempotencyKey string `json:"idempotency_key"`
	Family         string `json:"family"`
	Period         string `json:"period"`
	competition.Move
}

// weekEnd computes and records the moves of a league period that has ended
// (frozen, or settled in ledger mode): every cohort's standing is read in
// pipelines, the moves computed (competition.Moves), recorded with the
// members' new tiers, and in ledger mode queued for the awards webhook as
// league.moved. A member's new tier is their cohort's tier ± 1 — never
// their current tier ± 1 — so running it again writes the same; once done
// it is not run again.
func (s *Service) weekEnd(ctx context.Context, f *family, periodID string) (int, error) {
	c := f.cfg.Cohorts
	mk := s.layout.Moves(f.cfg.Name, periodID)
	if done, err := s.leagueBE.MovesDone(ctx, mk); err != nil {
		return 0, rank.Unavailable(err, "reading the moves of %s/%s", f.cfg.Name, periodID)
	} else if done {
		return 0, nil
	}
	start := time.Now()
	infos, err := s.cohortsOf(ctx, f, periodID)
	if err != nil {
		return 0, err
	}
	shards, err := s.shardCounts(ctx, f, periodID)
	if err != nil {
		return 0, err
	}
	n := max(shards[shard.DimCohort], 1)
	cohorts := make([]competition.Cohort, len(infos))
	var keys []string
	for i, ci := range infos {
		cohorts[i] = competition.Cohort{Tier: ci.Tier, Name: ci.Cohort}
		b := f.board(periodID, shard.DimCohort, ci.Cohort)
		for sh := 0; sh < n; sh++ {
			keys = append(keys, s.layout.ZKey(b, sh, n))
		}
	}
	members, err := s.leagueBE.BoardMembers(ctx, keys)
	if err != nil {
		return 0, rank.Unavailable(err, "reading the cohorts of %s/%s", f.cfg.Name, periodID)
	}
	if n != 1 {
		return 0, rank.Errorf(rank.CodeInternal, "cohort boards of %s/%s have %d shards; a cohort is one", f.cfg.Name, periodID, n)
	}
	for i := range cohorts {
		cohorts[i].Members = members[i]
	}
	moves := competition.Moves(c, cohorts)
	names := make([]string, len(moves))
	bodies := make([][]byte, len(moves))
	tiers := make([]store.TierWrite, len(moves))
	for i, m := range moves {
		names[i] = m.Member
		bodies[i], _ = json.Marshal(m)
		tiers[i] = store.TierWrite{Key: s.layout.LeagueMember(m.Member, f.cfg.Name), Tier: m.To}
	}
	if s.ledger != nil {
		if err := s.queueMoves(ctx, f, periodID, moves); err != nil {
			return 0, err
		}
	}
	if err := s.leagueBE.RecordMoves(ctx, mk, names, bodies, tiers); err != nil {
		return 0, rank.Unavailable(err, "recording the moves of %s/%s; retry (it is idempotent)", f.cfg.Name, periodID)
	}
	s.log.Info("league period ended", "family", f.cfg.Name, "period", periodID, "cohorts", len(cohorts), "moves", len(moves),
		"took", time.Since(start))
	return len(moves), nil
}

// queueMoves queues a league period's moves in the ledger for the awards
// webhook (league.moved), once per member and period.
func (s *Service) queueMoves(ctx context.Context, f *family, periodID string, moves []competition.Move) error {
	members := make([]string, len(moves))
	bodies := make([][]byte, len(moves))
	for i, m := range moves {
		members[i] = m.Member
		bodies[i], _ = json.Marshal(MovedBody{Type: competition.MovedKind, IdempotencyKey: ledger.MovedKey(f.cfg.Name, periodID, m.Member),
			Family: f.cfg.Name, Period: periodID, Move: m})
	}
	if err := s.ledger.QueueMoves(ctx, f.cfg.Name, periodID, members, bodies); err != nil {
		return ledgerErr(err)
	}
	return nil
}

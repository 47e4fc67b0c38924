package gateway

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rankgate/rankgate/internal/competition"
	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/store"
)

// leagueFamilies: a league (tiers b, s, g) beside a plain weekly family.
func leagueFamilies(size, promote, demote int) string {
	return fmt.Sprintf(`  league:
    period: week
    timezone: UTC
    tie: first
    cohorts: {size: %d, tiers: [b, s, g], promote: %d, demote: %d}
    dimensions:
      national: {shards: 2}
  weekly:
    period: week
    timezone: UTC
    dimensions:
      national: {shards: 1}
`, size, promote, demote)
}

func newLeagueService(t testing.TB, size, promote, demote int) (*Service, *store.Store) {
	var st *store.Store
	svc := newClusterServiceWith(t, leagueFamilies(size, promote, demote), func(_ *Options, s *store.Store) { st = s })
	return svc, st
}

// setTier writes a member's tier as a past week end would have.
func setTier(t testing.TB, svc *Service, st *store.Store, member, tier string) {
	t.Helper()
	if err := st.Primary().HSet(ctxT(t, 5*time.Second), svc.layout.LeagueMember(member, "league"), "tier", tier).Err(); err != nil {
		t.Fatal(err)
	}
}

func leagueEvent(id, user string, delta int64) Event {
	return Event{EventID: id, Family: "league", User: user, Delta: &delta}
}

// TestLeaguePlacementStorm: 10 000 members' concurrent first events (500 of
// them sending two at once; 500 in flight at a time, as a gateway's
// server.max_inflight bounds them) into a league of size 30 over three tiers: no
// cohort over 30, every member in exactly one cohort — the one of their
// tier that the member route names, whose board holds them — and the
// cohorts of each tier filled in order (only the last one not full).
func TestLeaguePlacementStorm(t *testing.T) {
	t.Parallel()
	svc, st := newLeagueService(t, 30, 7, 5)
	const n = 10000
	tiers := []string{"b", "s", "g"}
	tierOfMember := func(i int) string { return tiers[i%3] }
	ctx := ctxT(t, 120*time.Second)
	for i := range n {
		if tierOfMember(i) != "b" { // b is the default: new members
			setTier(t, svc, st, fmt.Sprintf("m%05d", i), tierOfMember(i))
		}
	}
	var wg sync.WaitGroup
	errs := make([]error, n+500)
	start := make(chan struct{})
	inflight := make(chan struct{}, 500)
	for i := range n + 500 {
		wg.Go(func() {
			<-start
			inflight <- struct{}{}
			defer func() { <-inflight }()
			m := i % n
			_, errs[i] = svc.ApplyEvent(ctx, leagueEvent(fmt.Sprintf("e%05d", i), fmt.Sprintf("m%05d", m), 1+int64(m%17)))
		})
	}
	close(start)
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Fatalf("event %d: %v", i, err)
		}
	}
	list, err := svc.Cohorts(ctx, "league", "current")
	if err != nil {
		t.Fatal(err)
	}
	perTier := map[string][]CohortInfo{}
	total := int64(0)
	for _, c := range list.Cohorts {
		perTier[c.Tier] = append(perTier[c.Tier], c)
		total += c.Size
		if c.Size < 1 || c.Size > 30 {
			t.Errorf("cohort %s holds %d members; want 1..30", c.Cohort, c.Size)
		}
	}
	if total != n {
		t.Errorf("cohorts hold %d members in all; want %d", total, n)
	}
	for _, tier := range tiers {
		cs := perTier[tier]
		want := (n/3 + 29) / 30
		if tier == "b" {
			want = (n/3 + 1 + 29) / 30 // 3334 members
		}
		if len(cs) != want {
			t.Errorf("tier %s: %d cohorts; want %d", tier, len(cs), want)
		}
		for k, c := range cs {
			if c.Cohort != shard.CohortName(tier, int64(k+1)) {
				t.Errorf("tier %s cohort %d is %s", tier, k, c.Cohort)
			}
			if k < len(cs)-1 && c.Size != 30 {
				t.Errorf("tier %s: cohort %s holds %d but a later one is open; cohorts fill in order", tier, c.Cohort, c.Size)
			}
		}
	}
	// Every cohort board: its members, exactly once over all boards.
	where := map[string]string{}
	for _, c := range list.Cohorts {
		page, err := svc.Top(ctx, BoardRef{Family: "league", Period: "current", Dimension: "cohort:" + c.Cohort}, 1000, ReadOptions{Consistency: ConsistencyPrimary})
		if err != nil {
			t.Fatalf("top of %s: %v", c.Cohort, err)
		}
		if int64(len(page.Entries)) != c.Size {
			t.Errorf("board of %s holds %d; the placement says %d", c.Cohort, len(page.Entries), c.Size)
		}
		for _, e := range page.Entries {
			if prev, dup := where[e.User]; dup {
				t.Errorf("%s is in %s and %s", e.User, prev, c.Cohort)
			}
			where[e.User] = c.Cohort
		}
	}
	if len(where) != n {
		t.Errorf("%d members on cohort boards; want %d", len(where), n)
	}
	for _, i := range []int{0, 1, 2, 499, 4242, n - 1} {
		m := fmt.Sprintf("m%05d", i)
		ls, err := svc.League(ctx, "league", m, "current")
		if err != nil {
			t.Fatal(err)
		}
		if ls.Cohort == nil || *ls.Cohort != where[m] || ls.Tier != tierOfMember(i) {
			t.Errorf("League(%s) = %+v; want tier %s, cohort %s", m, ls, tierOfMember(i), where[m])
		}
	}
}

// TestLeagueWeekEnd: a freeze (Redis-only mode) ends a league period: the
// moves follow the points and the tie rule (first to reach the points ranks
// higher), stop at the top and bottom tiers, leave members who did not play
// alone, write the new tiers, and a second freeze changes nothing.
func TestLeagueWeekEnd(t *testing.T) {
	t.Parallel()
	svc, st := newLeagueService(t, 5, 2, 1)
	ctx := ctxT(t, 60*time.Second)
	for m, tier := range map[string]string{"s1": "s", "s2": "s", "s3": "s", "s4": "s", "s5": "s", "g1": "g", "g2": "g", "g3": "g", "idle": "s"} {
		setTier(t, svc, st, m, tier)
	}
	// Cohort b-1: new members. Ties: b2 reaches 50 before b3 (tie first).
	evs := []Event{
		leagueEvent("1", "b1", 90), leagueEvent("2", "b2", 50), leagueEvent("3", "b3", 50), leagueEvent("4", "b4", 10), leagueEvent("5", "b5", 5),
		leagueEvent("6", "s1", 10), leagueEvent("7", "s2", 20), leagueEvent("8", "s3", 30), leagueEvent("9", "s4", 40), leagueEvent("10", "s5", 50),
		leagueEvent("11", "g1", 3), leagueEvent("12", "g2", 4), leagueEvent("15", "g3", 2),
		leagueEvent("13", "b6", 1), // cohort b-2, alone
	}
	if _, err := svc.ApplyBatch(ctx, evs); err != nil {
		t.Fatal(err)
	}
	// A reversal and a later event keep b1's cohort.
	if _, err := svc.ApplyEvent(ctx, leagueEvent("14", "b1", 1)); err != nil {
		t.Fatal(err)
	}
	pid := svc.families["league"].spec.At(svc.now()).ID
	next := svc.families["league"].spec.At(svc.now().Add(8 * 24 * time.Hour)).ID
	if ml, err := svc.Moves(ctx, "league", pid); err != nil || ml.Recorded || len(ml.Moves) != 0 {
		t.Fatalf("moves before the end: %+v, %v; want none, not recorded", ml, err)
	}
	want := []competition.Move{
		{Member: "b1", From: "b", To: "s", Cohort: "b-1", Position: 0},
		{Member: "b2", From: "b", To: "s", Cohort: "b-1", Position: 1},
		{Member: "b6", From: "b", To: "s", Cohort: "b-2", Position: 0},
		{Member: "s5", From: "s", To: "g", Cohort: "s-1", Position: 0},
		{Member: "s4", From: "s", To: "g", Cohort: "s-1", Position: 1},
		{Member: "s1", From: "s", To: "b", Cohort: "s-1", Position: 4},
		{Member: "g3", From: "g", To: "s", Cohort: "g-1", Position: 2},
	}
	wantTier := map[string]string{"b1": "s", "b2": "s", "b3": "b", "b4": "b", "b5": "b", "b6": "s",
		"s1": "b", "s2": "s", "s3": "s", "s4": "g", "s5": "g", "g1": "g", "g2": "g", "g3": "s", "idle": "s", "new": "b"}
	for round := 1; round <= 2; round++ {
		if _, err := svc.Freeze(ctx, "league", pid); err != nil {
			t.Fatalf("freeze %d: %v", round, err)
		}
		ml, err := svc.Moves(ctx, "league", pid)
		if err != nil {
			t.Fatal(err)
		}
		if !ml.Recorded || !slices.Equal(ml.Moves, want) {
			t.Errorf("freeze %d: moves %+v (recorded %v)\nwant %+v", round, ml.Moves, ml.Recorded, want)
		}
		for m, tier := range wantTier {
			ls, err := svc.League(ctx, "league", m, next)
			if err != nil {
				t.Fatal(err)
			}
			if ls.Tier != tier || ls.Cohort != nil {
				t.Errorf("freeze %d: %s in the next period: %+v; want tier %s, no cohort yet", round, m, ls, tier)
			}
		}
	}
	// The frozen period still answers each member's cohort and tier of then.
	if ls, err := svc.League(ctx, "league", "s4", pid); err != nil || ls.Tier != "s" || ls.Cohort == nil || *ls.Cohort != "s-1" ||
		*ls.Board != "league/"+pid+"/cohort:s-1" {
		t.Errorf("League(s4, %s) = %+v, %v; want tier s, cohort s-1", pid, ls, err)
	}
}

// TestLeagueBadInput: a family without cohorts, a bad member, an event
// naming a cohort itself, an unknown family — 4xx naming the field, and
// nothing placed.
func TestLeagueBadInput(t *testing.T) {
	t.Parallel()
	svc, _ := newLeagueService(t, 30, 7, 5)
	ctx := ctxT(t, 20*time.Second)
	check := func(what string, err error, code rank.Code, field string) {
		t.Helper()
		var re *rank.Error
		if rank.CodeOf(err) != code || (field != "" && (!asRank(err, &re) || re.Field != field)) {
			t.Errorf("%s: %v; want %s naming %q", what, err, code, field)
		}
	}
	_, err := svc.League(ctx, "weekly", "u1", "current")
	check("league of a family without cohorts", err, rank.CodeInvalidArgument, "family")
	_, err = svc.Cohorts(ctx, "weekly", "current")
	check("cohorts of a family without cohorts", err, rank.CodeInvalidArgument, "family")
	_, err = svc.Moves(ctx, "weekly", "current")
	check("moves of a family without cohorts", err, rank.CodeInvalidArgument, "family")
	_, err = svc.Moves(ctx, "nope", "current")
	check("unknown family", err, rank.CodeUnknownFamily, "")
	_, err = svc.League(ctx, "league", "bad member!", "current")
	check("bad member", err, rank.CodeInvalidArgument, "member")
	_, err = svc.Cohorts(ctx, "league", "2026-W99")
	check("bad period", err, rank.CodeInvalidArgument, "period")
	ev := leagueEvent("x1", "u1", 5)
	ev.Dims = map[string]string{"cohort": "b-1"}
	_, err = svc.ApplyEvent(ctx, ev)
	check("an event naming its cohort", err, rank.CodeInvalidArgument, "dims.cohort")
	if list, err := svc.Cohorts(ctx, "league", "current"); err != nil || len(list.Cohorts) != 0 {
		t.Errorf("cohorts after refused input: %+v, %v; want none", list, err)
	}
}

func asRank(err error, re **rank.Error) bool {
	e, ok := err.(*rank.Error)
	if ok {
		*re = e
	}
	return ok
}

var _ = context.Background

// TestLeagueErasure: erasing a member removes their placement, their move
// and their league hash; another member's stay.
func TestLeagueErasure(t *testing.T) {
	t.Parallel()
	svc, st := newLeagueService(t, 5, 1, 1)
	ctx := ctxT(t, 60*time.Second)
	evs := []Event{leagueEvent("1", "gone", 90), leagueEvent("2", "stays", 50), leagueEvent("3", "third", 10)}
	if _, err := svc.ApplyBatch(ctx, evs); err != nil {
		t.Fatal(err)
	}
	pid := svc.families["league"].spec.At(svc.now()).ID
	if _, err := svc.Freeze(ctx, "league", pid); err != nil {
		t.Fatal(err)
	}
	ml, err := svc.Moves(ctx, "league", pid)
	if err != nil || len(ml.Moves) != 1 || ml.Moves[0].Member != "gone" {
		t.Fatalf("moves before the erasure: %+v %v; want gone up (b is the bottom tier: nobody moves down)", ml, err)
	}
	res, err := svc.EraseMember(ctx, "gone", Erasure{Operator: "dpo@x", Reason: "asked"})
	if err != nil || res.Boards == 0 {
		t.Fatalf("EraseMember: %+v %v", res, err)
	}
	if ml, err = svc.Moves(ctx, "league", pid); err != nil || !ml.Recorded || len(ml.Moves) != 0 {
		t.Errorf("moves after the erasure: %+v %v; want none left, still recorded", ml, err)
	}
	placed := svc.layout.Placement("league", pid, "b").Placed
	hs, err := st.HashesOf(ctx, []string{placed, svc.layout.LeagueMember("gone", "league"), svc.layout.LeagueMember("stays", "league")})
	if err != nil {
		t.Fatal(err)
	}
	if _, in := hs[0]["gone"]; in || hs[0]["stays"] == "" || hs[0]["third"] == "" {
		t.Errorf("placement after the erasure: %v; want stays and third, not gone", hs[0])
	}
	if len(hs[1]) != 0 {
		t.Errorf("gone's league hash after the erasure: %v; want none", hs[1])
	}
	if hs[2]["p:"+pid] != "b-1" {
		t.Errorf("stays' league hash: %v; want its cohort b-1 kept", hs[2])
	}
	if ls, err := svc.League(ctx, "league", "stays", pid); err != nil || ls.Cohort == nil || *ls.Cohort != "b-1" {
		t.Errorf("stays' league after the erasure: %+v %v", ls, err)
	}
}

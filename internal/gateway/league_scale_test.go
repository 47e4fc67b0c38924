package gateway

import (
	"fmt"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/internal/shard"
)

// TestLeagueWeekEndScale measures the goal: a league week end over 100 000
// members in 3 334 cohorts of 30, computed and recorded in ≤ 10 s. The
// cohorts are prefilled with pipelines (as placement and events would leave
// them); the yardstick, measured in the same run on a copy of the same
// cohorts, is the hand-written loop: one ZREVRANGE per cohort and one HSET
// per move and per tier, each a round trip. Off by default:
//
//	RANKGATE_LEAGUE_SCALE=1 go test ./internal/gateway -run TestLeagueWeekEndScale -v
func TestLeagueWeekEndScale(t *testing.T) {
	if os.Getenv("RANKGATE_LEAGUE_SCALE") == "" {
		t.Skip("set RANKGATE_LEAGUE_SCALE=1 to measure a week end of 100 000 members")
	}
	svc, st := newLeagueService(t, 30, 7, 5)
	ctx := ctxT(t, 5*time.Minute)
	c := st.Primary()
	const members, size = 100_000, 30
	f := svc.families["league"]
	pid := f.spec.At(svc.now()).ID
	tiers := f.cfg.Cohorts.Tiers
	// Prefill: members spread over the tiers, cohorts of 30 in order.
	prefill := func(periodID string) []string {
		var keys []string
		pipe := c.Pipeline()
		flush := func() {
			if _, err := pipe.Exec(ctx); err != nil {
				t.Fatal(err)
			}
		}
		// Cohort i of ⌈members/size⌉ is in tier i mod 3, numbered in
		// order within its tier; only the last one is short.
		next := make([]int64, len(tiers))
		for i, m := 0, 0; m < members; i++ {
			ti := i % len(tiers)
			tier := tiers[ti]
			next[ti]++
			n := next[ti]
			k := min(members-m, size)
			pk := svc.layout.Placement("league", periodID, tier)
			name := shard.CohortName(tier, n)
			z := svc.layout.ZKey(f.board(periodID, shard.DimCohort, name), 0, 1)
			keys = append(keys, z)
			zs := make([]redis.Z, k)
			placed := make([]any, 0, 2*k)
			for j := range k {
				u := fmt.Sprintf("u%06d", m)
				m++
				zs[j] = redis.Z{Score: float64((j*7919)%1000 + 1), Member: u}
				placed = append(placed, u, n)
			}
			pipe.ZAdd(ctx, z, zs...)
			pipe.HSet(ctx, pk.Placed, placed...)
			pipe.HSet(ctx, pk.Cohorts, strconv.FormatInt(n, 10), k, "open", n)
			if pipe.Len() >= 600 {
				flush()
			}
		}
		flush()
		return keys
	}
	t0 := time.Now()
	keys := prefill(pid)
	t.Logf("prefill: %d members in %d cohorts in %s", members, len(keys), time.Since(t0))
	if len(keys) != 3334 {
		t.Fatalf("%d cohorts; want 3334", len(keys))
	}
	if _, err := svc.ensurePeriod(ctx, f, pid); err != nil {
		t.Fatal(err)
	}

	start := time.Now()
	moved, err := svc.weekEnd(ctx, f, pid)
	took := time.Since(start)
	if err != nil {
		t.Fatal(err)
	}
	// Per three cohorts of 30 (b, s, g): 7 + 12 + 5 moves; the last,
	// short cohort (10, in tier b) promotes 7.
	if want := 3333/3*24 + 7; moved != want {
		t.Errorf("%d moves; want %d", moved, want)
	}
	ml, err := svc.Moves(ctx, "league", pid)
	if err != nil || len(ml.Moves) != moved {
		t.Fatalf("moves recorded: %d, %v; want %d", len(ml.Moves), err, moved)
	}

	// The yardstick: the same cohorts under another period, read one cohort
	// per round trip and each move and tier written one per round trip.
	other := f.spec.At(svc.now().Add(-7 * 24 * time.Hour)).ID
	okeys := prefill(other)
	bstart := time.Now()
	nb := 0
	mk := svc.layout.Moves("league", other)
	for i, z := range okeys {
		ms, err := c.ZRevRange(ctx, z, 0, -1).Result()
		if err != nil {
			t.Fatal(err)
		}
		ti := i % len(tiers)
		for p, m := range ms {
			if (p < 7 && ti < len(tiers)-1) || (p >= len(ms)-5 && ti > 0) {
				if err := c.HSet(ctx, mk.Moves, m, "{}").Err(); err != nil {
					t.Fatal(err)
				}
				if err := c.HSet(ctx, svc.layout.LeagueMember(m, "league"), "tier", tiers[0]).Err(); err != nil {
					t.Fatal(err)
				}
				nb++
			}
		}
	}
	base := time.Since(bstart)
	t.Logf("week end: %d members, %d cohorts, %d moves computed and recorded in %s; one round trip per cohort and per write: %s (%d moves); ratio %.3f",
		members, len(keys), moved, took.Round(time.Millisecond), base.Round(time.Millisecond), nb, float64(took)/float64(base))
	if took > 10*time.Second {
		t.Errorf("week end took %s; the goal is ≤ 10 s", took)
	}
}

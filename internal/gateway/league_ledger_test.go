package gateway

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/rankgate/rankgate/internal/competition"
	"github.com/rankgate/rankgate/internal/ledger"
	"github.com/rankgate/rankgate/internal/store"
)

// TestLeagueWeekEndLedger: in ledger mode a league period ends at its
// settlement (not its freeze): the moves are recorded and each is queued
// once for the awards webhook as league.moved; settling again queues
// nothing more.
func TestLeagueWeekEndLedger(t *testing.T) {
	t.Parallel()
	l := openTestLedger(t)
	var st *store.Store
	svc := newClusterServiceWith(t, leagueFamilies(3, 1, 1), func(o *Options, s *store.Store) { o.Ledger, st = l, s })
	ctx := ctxT(t, 60*time.Second)
	for _, m := range []string{"s1", "s2", "s3"} {
		setTier(t, svc, st, m, "s")
	}
	evs := []Event{leagueEvent("1", "b1", 30), leagueEvent("2", "b2", 20), leagueEvent("3", "b3", 10),
		leagueEvent("4", "s1", 5), leagueEvent("5", "s2", 15), leagueEvent("6", "s3", 25)}
	if _, err := svc.ApplyBatch(ctx, evs); err != nil {
		t.Fatal(err)
	}
	pid := svc.families["league"].spec.At(svc.now()).ID
	if _, err := svc.Freeze(ctx, "league", pid); err != nil {
		t.Fatal(err)
	}
	if ml, err := svc.Moves(ctx, "league", pid); err != nil || ml.Recorded {
		t.Fatalf("moves after the freeze in ledger mode: %+v, %v; want none before the settlement", ml, err)
	}
	want := []competition.Move{
		{Member: "b1", From: "b", To: "s", Cohort: "b-1", Position: 0},
		{Member: "s3", From: "s", To: "g", Cohort: "s-1", Position: 0},
		{Member: "s1", From: "s", To: "b", Cohort: "s-1", Position: 2},
	}
	for round := 1; round <= 2; round++ {
		if _, err := svc.Settle(ctx, "league", pid, 30); err != nil {
			t.Fatalf("settle %d: %v", round, err)
		}
		ml, err := svc.Moves(ctx, "league", pid)
		if err != nil || !slices.Equal(ml.Moves, want) {
			t.Errorf("settle %d: moves %+v, %v; want %+v", round, ml.Moves, err, want)
		}
		ds, err := l.DueDeliveries(ctx, time.Now().Add(time.Minute), 1000)
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]MovedBody{}
		for _, d := range ds {
			if d.Kind != ledger.NoticeMoved {
				continue
			}
			var b MovedBody
			if err := json.Unmarshal(d.Body, &b); err != nil {
				t.Fatal(err)
			}
			if b.Family != "league" || b.Period != pid || b.Type != "league.moved" || b.IdempotencyKey != d.Key ||
				d.Key != ledger.MovedKey("league", pid, b.Member) {
				t.Errorf("delivery %+v: body %+v", d, b)
			}
			if _, dup := got[b.Member]; dup {
				t.Errorf("settle %d: %s queued twice", round, b.Member)
			}
			got[b.Member] = b
		}
		if len(got) != len(want) {
			t.Errorf("settle %d: %d league.moved deliveries; want %d", round, len(got), len(want))
		}
		for _, m := range want {
			if got[m.Member].Move != m {
				t.Errorf("settle %d: delivery of %s = %+v; want %+v", round, m.Member, got[m.Member].Move, m)
			}
		}
	}
}

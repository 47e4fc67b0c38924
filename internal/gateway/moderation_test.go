package gateway

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rankgate/rankgate/internal/ledger"
	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/soon"
	"github.com/rankgate/rankgate/internal/store"
)

// moderationService builds a Service in Redis-only or ledger mode on the real
// cluster (and PostgreSQL); the ledger is nil in Redis-only mode.
func moderationService(t *testing.T, withLedger bool, families string) (*Service, *ledger.Ledger) {
	t.Helper()
	if withLedger {
		return newLedgerService(t, families, nil)
	}
	return newClusterService(t, families), nil
}

// peerService is a second gateway on the same Redis keys (and ledger).
func peerService(t *testing.T, of *Service, l *ledger.Ledger, families string) *Service {
	t.Helper()
	return newClusterServiceWith(t, families, func(o *Options, _ *store.Store) {
		o.Config.Redis.Prefix = of.cfg.Redis.Prefix
		if l != nil {
			o.Ledger = l
		}
	})
}

func modes() []struct {
	name   string
	ledger bool
} {
	return []struct {
		name   string
		ledger bool
	}{{"redis-only", false}, {"ledger", true}}
}

var moderator = Removal{Operator: "ops@x", Reason: "cheating"}

// DELETE member takes the member off that board only, answers its points,
// then 404; a reversal of an event from before the removal changes nothing
// on that board (and undoes it on the others); later events start afresh;
// in ledger mode rebuild and reconcile keep the member removed.
func TestRemoveMember(t *testing.T) {
	t.Parallel()
	for _, m := range modes() {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			svc, _ := moderationService(t, m.ledger, ledgerFamilies)
			ctx := context.Background()
			nat := BoardRef{Family: "f", Period: "current", Dimension: "national"}
			zj := BoardRef{Family: "f", Period: "current", Dimension: "province:zj"}
			dims := map[string]string{"province": "zj"}
			for _, ev := range []Event{
				{EventID: "e1", Family: "f", User: "u1", Delta: ptr(int64(10)), Dims: dims},
				{EventID: "e2", Family: "f", User: "u1", Delta: ptr(int64(5)), Dims: dims},
				{EventID: "e3", Family: "f", User: "u2", Delta: ptr(int64(20)), Dims: dims},
			} {
				if _, err := svc.ApplyEvent(ctx, ev); err != nil {
					t.Fatal(err)
				}
			}
			res, err := svc.RemoveMember(ctx, nat, "u1", moderator)
			if err != nil || !res.Removed || res.Points != 15 {
				t.Fatalf("remove: %+v %v; want removed with 15 points", res, err)
			}
			wantTop(t, svc, nat, []userPts{{"u2", 20}})
			wantTop(t, svc, zj, []userPts{{"u2", 20}, {"u1", 15}})
			if _, err := svc.Member(ctx, nat, "u1", primaryRead); rank.CodeOf(err) != rank.CodeNotRanked {
				t.Fatalf("removed member's standing: %v, want not_ranked", err)
			}
			if _, err := svc.RemoveMember(ctx, nat, "u1", moderator); rank.CodeOf(err) != rank.CodeNotRanked {
				t.Fatalf("second removal: %v, want not_ranked", err)
			}
			// Reversing e1 (from before the removal): nothing on national,
			// −10 on the province board.
			if _, err := svc.ApplyEvent(ctx, Event{EventID: "r1", Family: "f", User: "u1", Reverses: "e1", Dims: dims}); err != nil {
				t.Fatalf("reversal of a removed event: %v", err)
			}
			wantTop(t, svc, nat, []userPts{{"u2", 20}})
			wantTop(t, svc, zj, []userPts{{"u2", 20}, {"u1", 5}})
			// Later events start afresh.
			if _, err := svc.ApplyEvent(ctx, Event{EventID: "e4", Family: "f", User: "u1", Delta: ptr(int64(7)), Dims: dims}); err != nil {
				t.Fatal(err)
			}
			wantTop(t, svc, nat, []userPts{{"u2", 20}, {"u1", 7}})
			wantTop(t, svc, zj, []userPts{{"u2", 20}, {"u1", 12}})
			// And reversing the new one takes the member off again.
			if _, err := svc.ApplyEvent(ctx, Event{EventID: "r4", Family: "f", User: "u1", Reverses: "e4", Dims: dims}); err != nil {
				t.Fatal(err)
			}
			wantTop(t, svc, nat, []userPts{{"u2", 20}})
			if !m.ledger {
				return
			}
			if _, err := svc.ApplyEvent(ctx, Event{EventID: "e5", Family: "f", User: "u1", Delta: ptr(int64(3)), Dims: dims}); err != nil {
				t.Fatal(err)
			}
			if _, err := svc.Rebuild(ctx, nat); err != nil {
				t.Fatal(err)
			}
			wantTop(t, svc, nat, []userPts{{"u2", 20}, {"u1", 3}})
			rep, err := svc.Reconcile(ctx, nat)
			if err != nil || rep.Drifted != 0 {
				t.Fatalf("reconcile after removal and rebuild: %+v %v", rep, err)
			}
		})
	}
}

// A max family: after a removal, a reversal recomputes the best from the
// events after the removal only.
func TestRemoveMemberMaxLedger(t *testing.T) {
	t.Parallel()
	svc, _ := newLedgerService(t, ledgerFamilies, nil)
	ctx := context.Background()
	ref := BoardRef{Family: "best", Period: "current", Dimension: "national"}
	for i, v := range []int64{90, 40, 30} {
		if i == 1 {
			if _, err := svc.RemoveMember(ctx, ref, "u1", moderator); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := svc.ApplyEvent(ctx, Event{EventID: fmt.Sprintf("b%d", i), Family: "best", User: "u1", Value: ptr(v)}); err != nil {
			t.Fatal(err)
		}
	}
	wantTop(t, svc, ref, []userPts{{"u1", 40}})
	if _, err := svc.ApplyEvent(ctx, Event{EventID: "rb1", Family: "best", User: "u1", Reverses: "b1"}); err != nil {
		t.Fatal(err)
	}
	// 90 was removed: the best left is 30, not 90.
	wantTop(t, svc, ref, []userPts{{"u1", 30}})
}

// A removal answers period_closed on a frozen period, and refuses bad input.
func TestRemoveMemberRefusals(t *testing.T) {
	t.Parallel()
	for _, m := range modes() {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			svc, _ := moderationService(t, m.ledger, ledgerFamilies)
			ctx := context.Background()
			nat := BoardRef{Family: "f", Period: "current", Dimension: "national"}
			if _, err := svc.ApplyEvent(ctx, Event{EventID: "e1", Family: "f", User: "u1", Delta: ptr(int64(10))}); err != nil {
				t.Fatal(err)
			}
			for _, tc := range []struct {
				title string
				user  string
				r     Removal
				field string
			}{
				{"no operator", "u1", Removal{Reason: "x"}, "operator"},
				{"no reason", "u1", Removal{Operator: "ops"}, "reason"},
				{"bad member", "u 1", moderator, "member"},
			} {
				_, err := svc.RemoveMember(ctx, nat, tc.user, tc.r)
				var re *rank.Error
				if rank.CodeOf(err) != rank.CodeInvalidArgument || !asRankErr(err, &re) || re.Field != tc.field {
					t.Errorf("%s: %v, want invalid_argument on %s", tc.title, err, tc.field)
				}
			}
			if _, err := svc.Freeze(ctx, "f", "current"); err != nil {
				t.Fatal(err)
			}
			if _, err := svc.RemoveMember(ctx, nat, "u1", moderator); rank.CodeOf(err) != rank.CodePeriodClosed {
				t.Fatalf("removal on a frozen period: %v, want period_closed", err)
			}
			wantTop(t, svc, nat, []userPts{{"u1", 10}})
		})
	}
}

func asRankErr(err error, re **rank.Error) bool {
	e, ok := err.(*rank.Error)
	if ok {
		*re = e
	}
	return ok
}

// The history of a member on a board, newest first, with points before and
// after each event, paged by cursor; Redis-only mode answers ledger_required.
func TestMemberHistory(t *testing.T) {
	t.Parallel()
	svc, _ := newLedgerService(t, ledgerFamilies, nil)
	ctx := context.Background()
	nat := BoardRef{Family: "f", Period: "current", Dimension: "national"}
	for _, ev := range []Event{
		{EventID: "e1", Family: "f", User: "u1", Delta: ptr(int64(10))},
		{EventID: "e2", Family: "f", User: "u1", Delta: ptr(int64(5)), Reason: "bonus"},
		{EventID: "x1", Family: "f", User: "u2", Delta: ptr(int64(99))},
	} {
		if _, err := svc.ApplyEvent(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := svc.RemoveMember(ctx, nat, "u1", moderator); err != nil {
		t.Fatal(err)
	}
	for _, ev := range []Event{
		{EventID: "r1", Family: "f", User: "u1", Reverses: "e1"},
		{EventID: "e3", Family: "f", User: "u1", Delta: ptr(int64(7))},
		{EventID: "e4", Family: "f", User: "u1", Delta: ptr(int64(-2))},
	} {
		if _, err := svc.ApplyEvent(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	type step struct {
		id, kind      string
		before, after int64
		changed       bool
	}
	want := []step{
		{"e4", "award", 7, 5, true},
		{"e3", "award", 0, 7, true},
		{"r1", "reversal", 0, 0, false},
		{"", "removal", 15, 0, true},
		{"e2", "award", 10, 15, true},
		{"e1", "award", 0, 10, true},
	}
	var got []HistoryEvent
	cursor, pages := "", 0
	for {
		h, err := svc.MemberHistory(ctx, nat, "u1", 4, cursor)
		if err != nil {
			t.Fatal(err)
		}
		pages++
		got = append(got, h.Events...)
		if h.NextCursor == "" {
			break
		}
		cursor = h.NextCursor
	}
	if pages != 2 || len(got) != len(want) {
		t.Fatalf("history: %d events in %d pages, want %d in 2: %+v", len(got), pages, len(want), got)
	}
	for i, w := range want {
		g := got[i]
		if (w.id != "" && g.EventID != w.id) || g.Kind != w.kind || g.PointsBefore != w.before || g.PointsAfter != w.after || g.Changed != w.changed {
			t.Errorf("history[%d] = %+v, want %+v", i, g, w)
		}
	}
	if rm := got[3]; rm.Operator != "ops@x" || rm.Reason != "cheating" || rm.Ranked || !strings.HasPrefix(rm.EventID, "removal:") {
		t.Errorf("removal entry: %+v", rm)
	}
	if got[4].Reason != "bonus" || got[4].Delta == nil || *got[4].Delta != 5 {
		t.Errorf("e2 entry: %+v", got[4])
	}
	// A cursor of another member or board is refused.
	h, _ := svc.MemberHistory(ctx, nat, "u1", 1, "")
	if _, err := svc.MemberHistory(ctx, nat, "u2", 1, h.NextCursor); rank.CodeOf(err) != rank.CodeInvalidCursor {
		t.Errorf("foreign cursor: %v, want invalid_cursor", err)
	}
	if _, err := svc.MemberHistory(ctx, nat, "u1", 0, ""); rank.CodeOf(err) != rank.CodeInvalidArgument {
		t.Errorf("limit 0: %v, want invalid_argument", err)
	}
	if h, err := svc.MemberHistory(ctx, nat, "nobody", 10, ""); err != nil || len(h.Events) != 0 {
		t.Errorf("a member without events: %+v %v", h, err)
	}
	redisOnly := newClusterService(t, ledgerFamilies)
	if _, err := redisOnly.MemberHistory(ctx, nat, "u1", 10, ""); rank.CodeOf(err) != rank.CodeLedgerRequired {
		t.Errorf("Redis-only history: %v, want ledger_required", err)
	}
}

// A ban on one gateway: the member leaves every board of the current period
// of the families named; once the call has answered, another gateway (which
// had just checked the bans) refuses the member's events with member_banned
// and keeps them for review; other families and members are untouched;
// lifting the ban lets events in again, starting from nothing.
func TestBanAcrossGateways(t *testing.T) {
	t.Parallel()
	for _, m := range modes() {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			a, l := moderationService(t, m.ledger, ledgerFamilies)
			b := peerService(t, a, l, ledgerFamilies)
			ctx := context.Background()
			nat := BoardRef{Family: "f", Period: "current", Dimension: "national"}
			zj := BoardRef{Family: "f", Period: "current", Dimension: "province:zj"}
			best := BoardRef{Family: "best", Period: "current", Dimension: "national"}
			dims := map[string]string{"province": "zj"}
			for _, ev := range []Event{
				{EventID: "e1", Family: "f", User: "u1", Delta: ptr(int64(10)), Dims: dims},
				{EventID: "e2", Family: "f", User: "u2", Delta: ptr(int64(5)), Dims: dims},
				{EventID: "b1", Family: "best", User: "u1", Value: ptr(int64(70))},
			} {
				if _, err := b.ApplyEvent(ctx, ev); err != nil { // b checks the bans now: none
					t.Fatal(err)
				}
			}
			res, err := a.PutBan(ctx, "u1", BanRequest{Operator: "ops@x", Reason: "bot", Families: []string{"f"}})
			if err != nil {
				t.Fatal(err)
			}
			if len(res.Removed) != 2 || res.Removed[0].Points != 10 || res.Removed[1].Points != 10 {
				t.Fatalf("ban removed %+v, want national and province:zj with 10 points", res.Removed)
			}
			for _, svc := range []*Service{a, b} {
				wantTop(t, svc, nat, []userPts{{"u2", 5}})
				wantTop(t, svc, zj, []userPts{{"u2", 5}})
				wantTop(t, svc, best, []userPts{{"u1", 70}})
			}
			_, err = b.ApplyEvent(ctx, Event{EventID: "e3", Family: "f", User: "u1", Delta: ptr(int64(1))})
			if rank.CodeOf(err) != rank.CodeMemberBanned {
				t.Fatalf("event of a banned member on the other gateway: %v, want member_banned", err)
			}
			items, err := b.ApplyBatch(ctx, []Event{
				{EventID: "e4", Family: "f", User: "u1", Delta: ptr(int64(1))},
				{EventID: "e5", Family: "f", User: "u2", Delta: ptr(int64(1))},
				{EventID: "b2", Family: "best", User: "u1", Value: ptr(int64(80))},
			})
			if err != nil || rank.CodeOf(items[0].Err) != rank.CodeMemberBanned || items[1].Err != nil || items[2].Err != nil {
				t.Fatalf("batch: %+v %v; want only the banned family's event refused", items, err)
			}
			rv, err := a.Reviews(ctx, "f", "current", 10)
			if err != nil {
				t.Fatal(err)
			}
			kept := map[string]bool{}
			for _, r := range rv.Reviews {
				if r.Reason == "banned" {
					kept[string(r.Event)] = true
				}
			}
			if len(kept) != 2 {
				t.Fatalf("reviews: %+v; want e3 and e4 kept with reason banned", rv.Reviews)
			}
			list, err := b.ListBans(ctx)
			if err != nil || len(list.Bans) != 1 || list.Bans[0].User != "u1" || list.Bans[0].Families[0] != "f" {
				t.Fatalf("bans: %+v %v", list, err)
			}
			if _, err := a.DeleteBan(ctx, "u1"); err != nil {
				t.Fatal(err)
			}
			if _, err := a.DeleteBan(ctx, "u1"); rank.CodeOf(err) != rank.CodeNotFound {
				t.Fatalf("lifting a lifted ban: %v, want not_found", err)
			}
			soonAccepted(t, b, Event{EventID: "e6", Family: "f", User: "u1", Delta: ptr(int64(2))})
			wantTop(t, a, nat, []userPts{{"u2", 6}, {"u1", 2}})
		})
	}
}

// soonAccepted retries ev until the gateway takes it (its copy of the bans
// is at most banPoll old).
func soonAccepted(t *testing.T, svc *Service, ev Event) {
	t.Helper()
	soon.Eventually(t, 3*banStale, func() error {
		_, err := svc.ApplyEvent(context.Background(), ev)
		return err
	})
}

// The fake backend holds no bans.
func (f *fakeBackend) BanVersion(context.Context, shard.BanKeys) (int64, error) { return 0, nil }

func (f *fakeBackend) Bans(context.Context, shard.BanKeys) (map[string]string, int64, error) {
	return nil, 0, nil
}

// A family with sort columns (Redis-only mode): the removal finds the stored
// member through its columns prefix; a reversal of an event from before the
// removal changes nothing; a later event starts afresh, columns included.
func TestRemoveMemberWithColumns(t *testing.T) {
	t.Parallel()
	svc := newClusterService(t, `  lap:
    period: all
    columns:
      - {name: laps, max: 1000}
    dimensions:
      national: {shards: 2}
`)
	ctx := context.Background()
	ref := BoardRef{Family: "lap", Period: "current", Dimension: "national"}
	ev := func(id, user string, d, laps int64) Event {
		return Event{EventID: id, Family: "lap", User: user, Delta: ptr(d), Columns: map[string]int64{"laps": laps}}
	}
	for _, e := range []Event{ev("e1", "u1", 10, 3), ev("e2", "u1", 5, 2), ev("e3", "u2", 15, 4)} {
		if _, err := svc.ApplyEvent(ctx, e); err != nil {
			t.Fatal(err)
		}
	}
	wantTop(t, svc, ref, []userPts{{"u1", 15}, {"u2", 15}}) // laps 5 before 4
	res, err := svc.RemoveMember(ctx, ref, "u1", moderator)
	if err != nil || res.Points != 15 {
		t.Fatalf("remove: %+v %v", res, err)
	}
	wantTop(t, svc, ref, []userPts{{"u2", 15}})
	if _, err := svc.ApplyEvent(ctx, Event{EventID: "r1", Family: "lap", User: "u1", Reverses: "e1"}); err != nil {
		t.Fatal(err)
	}
	wantTop(t, svc, ref, []userPts{{"u2", 15}})
	if _, err := svc.ApplyEvent(ctx, ev("e4", "u1", 15, 1)); err != nil {
		t.Fatal(err)
	}
	got := wantTop(t, svc, ref, []userPts{{"u2", 15}, {"u1", 15}}) // laps 1 now, not 6
	if got[1].Columns["laps"] != 1 {
		t.Fatalf("u1's columns after the removal: %+v, want laps 1", got[1])
	}
}

// A family of projections: a removal takes no upstream version, so the
// upstream's next version puts the member back with its total (both modes);
// a replay of the removed version stays stale.
func TestRemoveProjectedMember(t *testing.T) {
	t.Parallel()
	const fams = `  course:
    source: projection
    period: all
    dimensions:
      national: {shards: 2}
`
	for _, m := range modes() {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			svc, _ := moderationService(t, m.ledger, fams)
			ctx := context.Background()
			ref := BoardRef{Family: "course", Period: "current", Dimension: "national"}
			for _, p := range []struct {
				user    string
				version int64
				points  int64
			}{{"u1", 1, 40}, {"u1", 2, 50}, {"u2", 1, 45}} {
				if _, err := svc.Project(ctx, ref, p.user, Projection{Version: p.version, Points: p.points}); err != nil {
					t.Fatal(err)
				}
			}
			if res, err := svc.RemoveMember(ctx, ref, "u1", moderator); err != nil || res.Points != 50 {
				t.Fatalf("remove: %+v %v", res, err)
			}
			wantTop(t, svc, ref, []userPts{{"u2", 45}})
			if res, err := svc.Project(ctx, ref, "u1", Projection{Version: 2, Points: 50}); err != nil || res.Applied {
				t.Fatalf("replay of the removed version: %+v %v, want not applied", res, err)
			}
			wantTop(t, svc, ref, []userPts{{"u2", 45}})
			if res, err := svc.Project(ctx, ref, "u1", Projection{Version: 3, Points: 7}); err != nil || !res.Applied {
				t.Fatalf("the upstream's next version: %+v %v, want applied", res, err)
			}
			wantTop(t, svc, ref, []userPts{{"u2", 45}, {"u1", 7}})
		})
	}
}

// cachedFamilies: one family whose answers are cached locally and in Redis
// (cache_shared) for a minute, far longer than the test.
const cachedFamilies = `  f:
    period: all
    cache_ttl: 1m
    cache_shared: true
    dimensions:
      national: {shards: 4}
`

// cachedTop reads the top 10 at the default (cached) consistency and
// answers the users and where the answer came from.
func cachedTop(t *testing.T, svc *Service) ([]string, Source) {
	t.Helper()
	page, err := svc.Top(context.Background(), BoardRef{Family: "f", Period: "all", Dimension: "national"}, 10, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	users := make([]string, len(page.Entries))
	for i, e := range page.Entries {
		users[i] = e.User
	}
	return users, page.Source
}

// A removal and a ban drop the cached pages of the boards they touched: the
// gateway's own cache and the boards' shared copies in Redis, so a cached
// read (on this gateway, or on a gateway that never cached the page itself)
// no longer shows the member; a gateway that sees the ban version move drops
// its own cache.
func TestRemovalDropsCachedPages(t *testing.T) {
	t.Parallel()
	for _, m := range modes() {
		t.Run(m.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			a, l := moderationService(t, m.ledger, cachedFamilies)
			b := peerService(t, a, l, cachedFamilies)
			for i, d := range []int64{30, 20, 10} {
				if _, err := a.ApplyEvent(ctx, Event{EventID: fmt.Sprintf("e%d", i), Family: "f", User: fmt.Sprintf("u%d", i+1), Delta: ptr(d)}); err != nil {
					t.Fatal(err)
				}
			}
			want := []string{"u1", "u2", "u3"}
			for _, svc := range []*Service{a, b} {
				cachedTop(t, svc)
				got, src := cachedTop(t, svc)
				if !slices.Equal(got, want) || src != SourceCache {
					t.Fatalf("before: %v from %s, want %v from the cache", got, src, want)
				}
			}
			if _, err := a.RemoveMember(ctx, BoardRef{Family: "f", Period: "all", Dimension: "national"}, "u2", moderator); err != nil {
				t.Fatal(err)
			}
			if got, _ := cachedTop(t, a); !slices.Equal(got, []string{"u1", "u3"}) {
				t.Fatalf("removing gateway after the removal: %v", got)
			}
			c := peerService(t, a, l, cachedFamilies) // no page of its own: the shared copy or a fan-out
			if got, _ := cachedTop(t, c); !slices.Equal(got, []string{"u1", "u3"}) {
				t.Fatalf("another gateway after the removal: %v", got)
			}

			if _, err := a.PutBan(ctx, "u3", BanRequest{Operator: "ops@x", Reason: "bot"}); err != nil {
				t.Fatal(err)
			}
			if got, _ := cachedTop(t, a); !slices.Equal(got, []string{"u1"}) {
				t.Fatalf("banning gateway after the ban: %v", got)
			}
			// b cached u2 and u3 itself; its next write sees the ban version
			// move and drops its cache.
			if got, _ := cachedTop(t, b); !slices.Equal(got, want) {
				t.Fatalf("b's own page before it looked at the bans: %v (the test needs it cached)", got)
			}
			if _, err := b.ApplyEvent(ctx, Event{EventID: "e9", Family: "f", User: "u9", Delta: ptr(int64(1))}); err != nil {
				t.Fatal(err)
			}
			// (Its answer may be the shared copy a stored after the ban,
			// from before u9's event: fresh within cache_ttl.)
			if got, _ := cachedTop(t, b); len(got) == 0 || got[0] != "u1" || slices.Contains(got, "u2") || slices.Contains(got, "u3") {
				t.Fatalf("b after it saw the ban: %v", got)
			}
		})
	}
}

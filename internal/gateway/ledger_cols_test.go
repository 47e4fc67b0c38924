package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"maps"
	"slices"
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/store"
)

// ledgerColFamilies: a max family with an asc sort column (a time: lower is
// better), and a max family without columns, both tie first.
const ledgerColFamilies = `  race:
    aggregate: max
    period: all
    tie: first
    rank: competition
    seq_capacity: 1000000
    columns:
      - {name: t, order: asc, max: 1000}
    dimensions:
      national: {shards: 4}
  plain:
    aggregate: max
    period: all
    dimensions:
      national: {shards: 2}
`

// standingOf reads one member with columns and metadata from the primaries.
func standingOf(t *testing.T, svc *Service, ref BoardRef, user string) MemberStanding {
	t.Helper()
	ms, err := svc.Member(context.Background(), ref, user, ReadOptions{Consistency: ConsistencyPrimary, Metadata: true})
	if err != nil {
		t.Fatalf("member %s on %s: %v", user, ref.Family, err)
	}
	return ms
}

func wantStanding(t *testing.T, what string, ms MemberStanding, points int64, cols map[string]int64, md string) {
	t.Helper()
	if ms.Points != points || !maps.Equal(ms.Columns, cols) || string(ms.Metadata) != md {
		t.Fatalf("%s: %s has %d %v %q, want %d %v %q", what, ms.User, ms.Points, ms.Columns, ms.Metadata, points, cols, md)
	}
}

// In ledger mode a max family keeps the metadata (and, with sort columns,
// the whole tuple) of the event that set the best; reversing that event
// brings back the best remaining event's tuple and metadata; the history
// names each event's columns; a rebuild and the projector of events a
// crash left unprojected restore columns and metadata from the ledger.
func TestLedgerColumnsAndMetadataOfTheBest(t *testing.T) {
	t.Parallel()
	crash := map[string]bool{}
	svc, _ := newLedgerService(t, ledgerColFamilies, func(id string) error {
		if crash[id] {
			return errors.New("injected crash after commit")
		}
		return nil
	})
	ctx := context.Background()
	race := BoardRef{Family: "race", Period: "all", Dimension: "national"}
	plain := BoardRef{Family: "plain", Period: "all", Dimension: "national"}
	send := func(ev Event) {
		t.Helper()
		if _, err := svc.ApplyEvent(ctx, ev); err != nil {
			t.Fatalf("event %s: %v", ev.EventID, err)
		}
	}
	md := func(s string) json.RawMessage { return json.RawMessage(`{"run":"` + s + `"}`) }
	send(Event{EventID: "r1", Family: "race", User: "u1", Value: ptr(int64(10)), Columns: map[string]int64{"t": 500}, Metadata: md("r1")})
	send(Event{EventID: "r2", Family: "race", User: "u1", Value: ptr(int64(10)), Columns: map[string]int64{"t": 400}, Metadata: md("r2")})
	send(Event{EventID: "r3", Family: "race", User: "u1", Value: ptr(int64(10)), Columns: map[string]int64{"t": 450}, Metadata: md("r3")})
	send(Event{EventID: "r4", Family: "race", User: "u2", Value: ptr(int64(10)), Columns: map[string]int64{"t": 420}})
	wantStanding(t, "equal points, the lower time wins", standingOf(t, svc, race, "u1"), 10, map[string]int64{"t": 400}, `{"run":"r2"}`)
	if ms := standingOf(t, svc, race, "u1"); ms.Rank != 1 {
		t.Fatalf("u1 (t 400) ranks %d, want 1 ahead of u2 (t 420)", ms.Rank)
	}

	send(Event{EventID: "p1", Family: "plain", User: "u1", Value: ptr(int64(10)), Metadata: md("p1")})
	send(Event{EventID: "p2", Family: "plain", User: "u1", Value: ptr(int64(5)), Metadata: md("p2")})
	send(Event{EventID: "p3", Family: "plain", User: "u1", Value: ptr(int64(20))})
	send(Event{EventID: "p4", Family: "plain", User: "u1", Value: ptr(int64(15)), Metadata: md("p4")})
	wantStanding(t, "the best carries no metadata", standingOf(t, svc, plain, "u1"), 20, nil, "")

	// Reversing the event that set the best: the best remaining one counts,
	// with its tuple and its metadata.
	send(Event{EventID: "x2", Family: "race", User: "u1", Reverses: "r2"})
	wantStanding(t, "r2 reversed", standingOf(t, svc, race, "u1"), 10, map[string]int64{"t": 450}, `{"run":"r3"}`)
	if ms := standingOf(t, svc, race, "u1"); ms.Rank != 2 {
		t.Fatalf("u1 (t 450) ranks %d after the reversal, want 2 behind u2 (t 420)", ms.Rank)
	}
	send(Event{EventID: "x3", Family: "plain", User: "u1", Reverses: "p3"})
	wantStanding(t, "p3 reversed", standingOf(t, svc, plain, "u1"), 15, nil, `{"run":"p4"}`)

	// The history names what each event carried.
	h, err := svc.MemberHistory(ctx, race, "u1", 10, "")
	if err != nil {
		t.Fatal(err)
	}
	wantIDs := []string{"x2", "r3", "r2", "r1"}
	if len(h.Events) != len(wantIDs) {
		t.Fatalf("history: %+v", h.Events)
	}
	wantT := map[string]int64{"r1": 500, "r2": 400, "r3": 450}
	for i, e := range h.Events {
		if e.EventID != wantIDs[i] {
			t.Fatalf("history entry %d is %s, want %s", i, e.EventID, wantIDs[i])
		}
		if v, ok := wantT[e.EventID]; (ok && !maps.Equal(e.Columns, map[string]int64{"t": v})) || (!ok && e.Columns != nil) {
			t.Fatalf("history entry %s: columns %v", e.EventID, e.Columns)
		}
	}

	// A crash between commit and projection: the projector projects the
	// ledger's tuple and metadata.
	crash["r5"] = true
	if _, err := svc.ApplyEvent(ctx, Event{EventID: "r5", Family: "race", User: "u1", Value: ptr(int64(10)), Columns: map[string]int64{"t": 100},
		Metadata: md("r5")}); rank.CodeOf(err) != rank.CodeUnavailable {
		t.Fatalf("crashed event: %v", err)
	}
	wantStanding(t, "before the projector", standingOf(t, svc, race, "u1"), 10, map[string]int64{"t": 450}, `{"run":"r3"}`)
	if n, err := svc.ProjectPending(ctx, 0); err != nil || n != 1 {
		t.Fatalf("ProjectPending = %d, %v", n, err)
	}
	wantStanding(t, "after the projector", standingOf(t, svc, race, "u1"), 10, map[string]int64{"t": 100}, `{"run":"r5"}`)

	// Rebuilt from the ledger: the same standings, columns and metadata.
	for _, ref := range []BoardRef{race, plain} {
		if _, err := svc.Rebuild(ctx, ref); err != nil {
			t.Fatalf("rebuild %s: %v", ref.Family, err)
		}
	}
	wantStanding(t, "rebuilt", standingOf(t, svc, race, "u1"), 10, map[string]int64{"t": 100}, `{"run":"r5"}`)
	wantStanding(t, "rebuilt", standingOf(t, svc, race, "u2"), 10, map[string]int64{"t": 420}, "")
	wantStanding(t, "rebuilt", standingOf(t, svc, plain, "u1"), 15, nil, `{"run":"p4"}`)
	if ms := standingOf(t, svc, race, "u2"); ms.Rank != 2 {
		t.Fatalf("u2 ranks %d after the rebuild, want 2", ms.Rank)
	}

	// Settlement orders by (points, columns…, seq) and gives equal points
	// and columns one competition rank: u3 equals u2 on both; u4 has the
	// same points and a worse time.
	send(Event{EventID: "r6", Family: "race", User: "u3", Value: ptr(int64(10)), Columns: map[string]int64{"t": 420}})
	send(Event{EventID: "r7", Family: "race", User: "u4", Value: ptr(int64(10)), Columns: map[string]int64{"t": 999}})
	if _, err := svc.Freeze(ctx, "race", "all"); err != nil {
		t.Fatal(err)
	}
	sv, err := svc.Settle(ctx, "race", "all", 10)
	if err != nil {
		t.Fatal(err)
	}
	want := []Standing{{User: "u1", Points: 10, Position: 0, Rank: 1}, {User: "u2", Points: 10, Position: 1, Rank: 2},
		{User: "u3", Points: 10, Position: 2, Rank: 2}, {User: "u4", Points: 10, Position: 3, Rank: 4}}
	if got := sv.Boards["race/all/national"]; !slices.Equal(got, want) {
		t.Fatalf("settled: %+v, want %+v", got, want)
	}
}

// Reconcile on a family with sort columns compares the columns too: a member
// whose stored member in Redis carries other columns than the ledger's is
// drift, named with both tuples.
func TestLedgerReconcileColumns(t *testing.T) {
	t.Parallel()
	l := openTestLedger(t)
	var st *store.Store
	svc := newClusterServiceWith(t, ledgerColFamilies, func(o *Options, s *store.Store) { o.Ledger, st = l, s })
	ctx := context.Background()
	race := BoardRef{Family: "race", Period: "all", Dimension: "national"}
	for _, ev := range []Event{
		{EventID: "r1", Family: "race", User: "u1", Value: ptr(int64(10)), Columns: map[string]int64{"t": 500}},
		{EventID: "r2", Family: "race", User: "u2", Value: ptr(int64(12)), Columns: map[string]int64{"t": 300}},
	} {
		if _, err := svc.ApplyEvent(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	rep, err := svc.Reconcile(ctx, race)
	if err != nil || rep.Checked != 2 || rep.Drifted != 0 {
		t.Fatalf("reconcile: %+v %v", rep, err)
	}
	// A stray write behind the ledger's back: u1 gets t 200 in Redis only
	// (same points, same seq).
	b, err := svc.resolve(ctx, race)
	if err != nil {
		t.Fatal(err)
	}
	c := b.fam.enc.Cols
	k := svc.layout.Keys(b.b, shard.Of("u1", b.n), b.n)
	rc := st.Primary()
	prefix, err := rc.HGet(ctx, k.Cols, "u1").Result()
	if err != nil {
		t.Fatal(err)
	}
	_, _, seq, ok := c.Split(prefix + "u1")
	if !ok {
		t.Fatalf("stored member %q does not split", prefix+"u1")
	}
	stray := c.Prefix([]int64{200}, seq)
	score, err := rc.ZScore(ctx, k.Z, prefix+"u1").Result()
	if err != nil {
		t.Fatal(err)
	}
	if err := rc.ZRem(ctx, k.Z, prefix+"u1").Err(); err != nil {
		t.Fatal(err)
	}
	if err := rc.ZAdd(ctx, k.Z, redis.Z{Score: score, Member: stray + "u1"}).Err(); err != nil {
		t.Fatal(err)
	}
	if err := rc.HSet(ctx, k.Cols, "u1", stray).Err(); err != nil {
		t.Fatal(err)
	}
	rep, err = svc.Reconcile(ctx, race)
	if err != nil || rep.Drifted != 1 || len(rep.Drift) != 1 {
		t.Fatalf("reconcile after the stray write: %+v %v", rep, err)
	}
	d := rep.Drift[0]
	if d.User != "u1" || *d.LedgerPoints != 10 || *d.RedisPoints != 10 ||
		!maps.Equal(d.LedgerColumns, map[string]int64{"t": 500}) || !maps.Equal(d.RedisColumns, map[string]int64{"t": 200}) {
		t.Fatalf("drift: %+v", d)
	}
	if _, err := svc.Rebuild(ctx, race); err != nil {
		t.Fatal(err)
	}
	if rep, err = svc.Reconcile(ctx, race); err != nil || rep.Drifted != 0 || rep.Checked != 2 {
		t.Fatalf("reconcile after the rebuild: %+v %v", rep, err)
	}
	wantStanding(t, "rebuilt", standingOf(t, svc, race, "u1"), 10, map[string]int64{"t": 500}, "")
}

// The same projections (columns, metadata, a stale version, a removal and
// the upstream's next version) give the same board in both modes, entry by
// entry; in ledger mode a rebuild gives it again.
func TestProjectionColumnsBothModes(t *testing.T) {
	t.Parallel()
	const fams = `  proj:
    source: projection
    period: all
    tie: first
    seq_capacity: 1000000
    columns:
      - {name: wins, max: 100}
      - {name: ms, order: asc, max: 9999}
    dimensions:
      national: {shards: 2}
`
	ctx := context.Background()
	ref := BoardRef{Family: "proj", Period: "all", Dimension: "national"}
	run := func(t *testing.T, ledgerMode bool) []rank.Entry {
		svc, _ := moderationService(t, ledgerMode, fams)
		for _, p := range []struct {
			user         string
			version, pts int64
			wins, ms     int64
			md           string
			wantApplied  bool
		}{
			{"u1", 1, 10, 3, 500, `{"a":1}`, true},
			{"u2", 1, 10, 5, 900, "", true},
			{"u3", 1, 10, 5, 800, `{"c":3}`, true},
			{"u1", 2, 10, 7, 500, "", true},
			{"u1", 2, 99, 0, 0, `{"stale":1}`, false},
			{"u4", 1, 12, 0, 0, `{"d":4}`, true},
		} {
			pr := Projection{Version: p.version, Points: p.pts, Columns: map[string]int64{"wins": p.wins, "ms": p.ms}}
			if p.md != "" {
				pr.Metadata = json.RawMessage(p.md)
			}
			res, err := svc.Project(ctx, ref, p.user, pr)
			if err != nil || res.Applied != p.wantApplied {
				t.Fatalf("projection %s@%d: %+v %v, want applied=%v", p.user, p.version, res, err, p.wantApplied)
			}
		}
		if _, err := svc.RemoveMember(ctx, ref, "u4", moderator); err != nil {
			t.Fatal(err)
		}
		if _, err := svc.Project(ctx, ref, "u4", Projection{Version: 2, Points: 10, Columns: map[string]int64{"wins": 5, "ms": 800},
			Metadata: json.RawMessage(`{"d":5}`)}); err != nil {
			t.Fatal(err)
		}
		top := func() []rank.Entry {
			page, err := svc.Top(ctx, ref, 10, ReadOptions{Consistency: ConsistencyPrimary, Metadata: true})
			if err != nil {
				t.Fatal(err)
			}
			return page.Entries
		}
		got := top()
		if ledgerMode {
			if _, err := svc.Rebuild(ctx, ref); err != nil {
				t.Fatal(err)
			}
			if again := top(); !sameEntryList(again, got) {
				t.Fatalf("after a rebuild: %+v, live %+v", again, got)
			}
		}
		return got
	}
	redisOnly, inLedger := run(t, false), run(t, true)
	if !sameEntryList(redisOnly, inLedger) {
		t.Fatalf("Redis-only %+v\nledger      %+v", redisOnly, inLedger)
	}
	// u1 most wins; u3 and u4 equal on points and columns (u3 reached them
	// first); u2 more time.
	want := []string{"u1", "u3", "u4", "u2"}
	if len(redisOnly) != len(want) {
		t.Fatalf("top: %+v", redisOnly)
	}
	for i, e := range redisOnly {
		if e.User != want[i] {
			t.Fatalf("entry %d is %s, want %s (%+v)", i, e.User, want[i], redisOnly)
		}
	}
	if md := string(redisOnly[0].Metadata); md != "" {
		t.Fatalf("u1's last projection carried no metadata, got %q", md)
	}
	if md := string(redisOnly[2].Metadata); md != `{"d":5}` {
		t.Fatalf("u4's metadata %q", md)
	}
}

// sameEntryList compares entries as a client sees them.
func sameEntryList(a, b []rank.Entry) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		x, y := a[i], b[i]
		if x.User != y.User || x.Points != y.Points || x.Rank != y.Rank || x.Position != y.Position ||
			!maps.Equal(x.Columns, y.Columns) || string(x.Metadata) != string(y.Metadata) {
			return false
		}
	}
	return true
}

// Metadata on a sum family without columns (the ledger's delta path for
// groups): the same batches and reversal give the same board, metadata
// included, in both modes, and again after a ledger rebuild.
func TestSumMetadataBothModes(t *testing.T) {
	t.Parallel()
	const fams = `  f:
    period: all
    tie: first
    rank: competition
    dimensions:
      national: {shards: 4}
`
	ctx := context.Background()
	ref := BoardRef{Family: "f", Period: "all", Dimension: "national"}
	md := func(s string) json.RawMessage { return json.RawMessage(`{"m":"` + s + `"}`) }
	run := func(t *testing.T, ledgerMode bool) []rank.Entry {
		svc, _ := moderationService(t, ledgerMode, fams)
		for _, batch := range [][]Event{
			{{EventID: "e1", Family: "f", User: "u1", Delta: ptr(int64(5)), Metadata: md("e1")},
				{EventID: "e2", Family: "f", User: "u2", Delta: ptr(int64(3)), Metadata: md("e2")},
				{EventID: "e3", Family: "f", User: "u1", Delta: ptr(int64(1)), Metadata: md("e3")},
				{EventID: "e4", Family: "f", User: "u3", Delta: ptr(int64(6))}},
			{{EventID: "e5", Family: "f", User: "u2", Delta: ptr(int64(3))}, // no metadata: clears u2's
				{EventID: "e6", Family: "f", User: "u3", Delta: ptr(int64(1)), Metadata: md("e6")},
				{EventID: "e1", Family: "f", User: "u1", Delta: ptr(int64(5)), Metadata: md("retry")}}, // a retry changes nothing
			{{EventID: "r3", Family: "f", User: "u1", Reverses: "e3"}}, // keeps u1's metadata, as Redis does
		} {
			items, err := svc.ApplyBatch(ctx, batch)
			if err != nil {
				t.Fatal(err)
			}
			for i, it := range items {
				if it.Err != nil {
					t.Fatalf("event %s: %v", batch[i].EventID, it.Err)
				}
			}
		}
		page, err := svc.Top(ctx, ref, 10, ReadOptions{Consistency: ConsistencyPrimary, Metadata: true})
		if err != nil {
			t.Fatal(err)
		}
		if ledgerMode {
			if _, err := svc.Rebuild(ctx, ref); err != nil {
				t.Fatal(err)
			}
			again, err := svc.Top(ctx, ref, 10, ReadOptions{Consistency: ConsistencyPrimary, Metadata: true})
			if err != nil || !sameEntryList(again.Entries, page.Entries) {
				t.Fatalf("after a rebuild: %+v %v, live %+v", again.Entries, err, page.Entries)
			}
		}
		return page.Entries
	}
	redisOnly, inLedger := run(t, false), run(t, true)
	if !sameEntryList(redisOnly, inLedger) {
		t.Fatalf("Redis-only %+v\nledger      %+v", redisOnly, inLedger)
	}
	want := []struct{ user, md string }{{"u3", `{"m":"e6"}`}, {"u2", ""}, {"u1", `{"m":"e3"}`}}
	if len(redisOnly) != len(want) {
		t.Fatalf("top: %+v", redisOnly)
	}
	for i, w := range want {
		if e := redisOnly[i]; e.User != w.user || string(e.Metadata) != w.md {
			t.Fatalf("entry %d: %s %q, want %s %q", i, e.User, e.Metadata, w.user, w.md)
		}
	}
}

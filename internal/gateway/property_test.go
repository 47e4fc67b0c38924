package gateway

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/rankgate/rankgate/internal/config"
	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/soon"
	"github.com/rankgate/rankgate/internal/store"
	"github.com/rankgate/rankgate/internal/testcluster"
)

// newClusterService builds a Service on the real test cluster under a fresh
// key prefix, with the families given as YAML.
func newClusterService(t testing.TB, familiesYAML string) *Service {
	return newClusterServiceWith(t, familiesYAML, nil)
}

// newClusterServiceWith is newClusterService with a hook to adjust the
// options (clock, registry, a wrapping backend) before the Service is built.
func newClusterServiceWith(t testing.TB, familiesYAML string, adjust func(*Options, *store.Store)) *Service {
	t.Helper()
	addrs := testcluster.Addrs(t)
	prefix := testcluster.Prefix(t)
	y := fmt.Sprintf("listen: \"127.0.0.1:0\"\nredis:\n  addrs: [%q]\n  prefix: %q\nfamilies:\n%s", addrs[0], prefix, familiesYAML)
	cfg, err := config.Parse([]byte(y))
	if err != nil {
		t.Fatalf("config: %v\n%s", err, y)
	}
	cfg.Redis.Addrs = addrs
	c, err := store.NewClient(store.ClientOptions{Addrs: addrs, Cluster: true, DialTimeout: 2 * time.Second,
		ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second, ReloadInterval: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	st, err := store.New(c, nil, store.Options{Timeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	o := Options{Config: cfg, Backend: st, ShardTimeout: 5 * time.Second}
	if adjust != nil {
		adjust(&o, st)
	}
	svc, err := New(o)
	if err != nil {
		t.Fatal(err)
	}
	return svc
}

func ptr[T any](v T) *T { return &v }

// propCase is one family shape of the property test.
type propCase struct {
	tie, order, agg, rankMode string
	shards                    int
	skew                      bool // members of national shard 0 hold the whole top
	ledger                    bool // ledger mode: PostgreSQL first, then projection
	index                     bool // index.enabled: every read checked from the read index too
}

func (c propCase) name() string {
	name := fmt.Sprintf("%s_%s_%s_%s_%dshards", c.agg, c.tie, c.order, c.rankMode, c.shards)
	if c.skew {
		name += "_skewed"
	}
	if c.ledger {
		name += "_ledger"
	}
	if c.index {
		name += "_index"
	}
	return name
}

func (c propCase) yaml() string {
	y := fmt.Sprintf("  f:\n    aggregate: %s\n    order: %s\n    tie: %s\n    rank: %s\n    period: all\n    max_points: 100000\n",
		c.agg, c.order, c.tie, c.rankMode)
	if c.tie == "first" {
		y += "    seq_capacity: 1000000\n"
	}
	if c.index {
		y += indexYAML
	}
	return y + fmt.Sprintf("    dimensions:\n      national: {shards: %d}\n      province: {shards: %d}\n", c.shards, max(1, c.shards/2))
}

// indexYAML turns a test family's read index on, with a max_lag that a
// loaded test board never exceeds (the default reads then come from it).
const indexYAML = "    index: {enabled: true, max_lag: 30s}\n"

// startIndex runs the Service's read index until the test ends.
func startIndex(t testing.TB, svc *Service) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		svc.RunIndex(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}

// waitIndex waits until the board answers from the read index with every
// write acknowledged before since (its as_of is not earlier).
func waitIndex(t testing.TB, svc *Service, ref BoardRef, since time.Time) {
	t.Helper()
	soon.Eventually(t, 60*time.Second, func() error {
		c, err := svc.Count(context.Background(), ref, -1<<62, 1<<62, ReadOptions{Consistency: ConsistencyIndex})
		switch {
		case err != nil:
			return err
		case c.Source != SourceIndex:
			return fmt.Errorf("%s: source %s, not index yet", ref.Dimension, c.Source)
		case c.AsOf.Before(since):
			return fmt.Errorf("%s: index as of %s, before %s", ref.Dimension, c.AsOf, since)
		case c.LagMs == nil:
			return fmt.Errorf("%s: an index answer without lag_ms", ref.Dimension)
		}
		return nil
	})
}

// TestShardedBoardsEqualOneSortedSet drives random workloads — many equal
// points, retries, reversals, batches — through the service on the real
// cluster and compares every read, entry by entry (user, points, position,
// rank), with an in-memory reference of one unsharded board.
func TestShardedBoardsEqualOneSortedSet(t *testing.T) {
	t.Parallel()
	var cases []propCase
	for _, shards := range []int{1, 4, 16} {
		for _, tie := range []string{"member", "first"} {
			for _, order := range []string{"desc", "asc"} {
				rm := "competition"
				if order == "asc" {
					rm = "ordinal"
				}
				cases = append(cases, propCase{tie: tie, order: order, agg: "sum", rankMode: rm, shards: shards})
			}
		}
		cases = append(cases, propCase{tie: "first", order: "desc", agg: "sum", rankMode: "competition", shards: shards, skew: true},
			propCase{tie: "member", order: "asc", agg: "sum", rankMode: "ordinal", shards: shards, skew: true},
			propCase{tie: "first", order: "desc", agg: "max", rankMode: "competition", shards: shards},
			propCase{tie: "member", order: "asc", agg: "min", rankMode: "competition", shards: shards})
	}
	// The read index: the same workloads on 16 shards, every read checked
	// from the index (once it caught up) and from the masters.
	for _, c := range []propCase{
		{tie: "member", order: "desc", agg: "sum", rankMode: "competition", shards: 16},
		{tie: "first", order: "desc", agg: "sum", rankMode: "competition", shards: 16},
		{tie: "member", order: "asc", agg: "sum", rankMode: "ordinal", shards: 16, skew: true},
		{tie: "first", order: "asc", agg: "sum", rankMode: "ordinal", shards: 16},
		{tie: "first", order: "desc", agg: "max", rankMode: "competition", shards: 16},
		{tie: "member", order: "asc", agg: "min", rankMode: "competition", shards: 4},
	} {
		c.index = true
		cases = append(cases, c)
	}
	cases = append(cases,
		propCase{tie: "first", order: "desc", agg: "sum", rankMode: "competition", shards: 16, ledger: true},
		propCase{tie: "member", order: "asc", agg: "sum", rankMode: "ordinal", shards: 4, ledger: true, skew: true},
		propCase{tie: "first", order: "desc", agg: "max", rankMode: "competition", shards: 4, ledger: true},
		propCase{tie: "first", order: "desc", agg: "sum", rankMode: "competition", shards: 16, ledger: true, index: true},
		propCase{tie: "member", order: "asc", agg: "sum", rankMode: "ordinal", shards: 4, ledger: true, skew: true, index: true})
	for i, c := range cases {
		t.Run(c.name(), func(t *testing.T) {
			t.Parallel()
			runProperty(t, c, uint64(i+1))
		})
	}
}

type refEvent struct {
	user                string
	delta               int64
	seqBefore, seqAfter int64
	absentBefore        bool
	reversed            bool
	province            string
}

func runProperty(t *testing.T, c propCase, seed uint64) {
	ctx := context.Background()
	var svc *Service
	if c.ledger {
		svc, _ = newLedgerService(t, c.yaml(), nil)
	} else {
		svc = newClusterService(t, c.yaml())
	}
	if c.index {
		startIndex(t, svc)
	}
	rng := rand.New(rand.NewPCG(seed, 42))
	asc, tieFirst, comp := c.order == "asc", c.tie == "first", c.rankMode == "competition"
	national := newRef(asc, tieFirst, comp)
	provinces := map[string]*refBoard{}
	for _, p := range []string{"zj", "gd"} {
		provinces[p] = newRef(asc, tieFirst, comp)
	}
	var seq int64
	events := map[string]*refEvent{}
	var eventIDs []string
	nUsers := 60 + rng.IntN(60)
	userOf := func() string { return fmt.Sprintf("u%03d", rng.IntN(nUsers)) }
	provinceOf := func(u string) string {
		if u[len(u)-1]%2 == 0 {
			return "zj"
		}
		return "gd"
	}
	apply := func(id, u string, v int64) {
		seq++
		p := provinceOf(u)
		ev := Event{EventID: id, Family: "f", User: u, Dims: map[string]string{"province": p}}
		if c.agg == "sum" {
			ev.Delta = ptr(v)
		} else {
			ev.Value = ptr(v)
		}
		res, err := svc.ApplyEvent(ctx, ev)
		if err != nil {
			t.Fatalf("event %s: %v", id, err)
		}
		if res.Duplicate {
			t.Fatalf("event %s: fresh event answered duplicate", id)
		}
		for _, b := range []*refBoard{national, provinces[p]} {
			before, had := b.members[u]
			var sb int64 = -1
			if had {
				sb = before.seq
			}
			switch c.agg {
			case "sum":
				b.add(u, v, seq)
				if b == national {
					events[id] = &refEvent{user: u, delta: v, seqBefore: sb, seqAfter: seq, absentBefore: !had, province: p}
				}
			case "max":
				b.best(u, v, seq, true)
			case "min":
				b.best(u, v, seq, false)
			}
		}
		eventIDs = append(eventIDs, id)
	}
	// A workload with many equal points: small values, few events per member.
	nEvents := 250 + rng.IntN(150)
	for i := 0; i < nEvents; i++ {
		u := userOf()
		v := int64(1 + rng.IntN(4))
		if c.agg != "sum" {
			v = int64(rng.IntN(8) * 10)
		}
		if rng.IntN(10) == 0 && c.agg == "sum" {
			v = -v
		}
		if c.skew && shard.Of(u, c.shards) == 0 {
			// Better points for every member of one shard: it holds the whole top.
			if asc {
				v -= 100
			} else {
				v += 100
			}
		}
		id := fmt.Sprintf("e%d", i)
		apply(id, u, v)
		if c.index && i == 20 {
			// The boards enter the index now: what follows reaches it
			// through the change feeds.
			for _, dim := range []string{"national", "province:zj", "province:gd"} {
				if _, err := svc.Count(ctx, BoardRef{Family: "f", Period: "all", Dimension: dim}, 0, 0, ReadOptions{Consistency: ConsistencyIndex}); err != nil {
					t.Fatal(err)
				}
			}
		}
		if rng.IntN(8) == 0 { // a retry of the same event: must not count twice
			seq++
			ev := Event{EventID: id, Family: "f", User: u, Dims: map[string]string{"province": provinceOf(u)}}
			if c.agg == "sum" {
				ev.Delta = ptr(v)
			} else {
				ev.Value = ptr(v)
			}
			res, err := svc.ApplyEvent(ctx, ev)
			if err != nil || !res.Duplicate {
				t.Fatalf("retry of %s: duplicate=%v err=%v", id, res.Duplicate, err)
			}
		}
		if c.agg == "sum" && rng.IntN(15) == 0 && len(eventIDs) > 0 { // a reversal
			orig := eventIDs[rng.IntN(len(eventIDs))]
			re := events[orig]
			seq++
			rid := "r" + id
			res, err := svc.ApplyEvent(ctx, Event{EventID: rid, Family: "f", User: re.user, Reverses: orig,
				Dims: map[string]string{"province": re.province}})
			if err != nil {
				t.Fatalf("reversal of %s: %v", orig, err)
			}
			if re.reversed != res.Duplicate {
				t.Fatalf("reversal of %s: duplicate=%v, want %v", orig, res.Duplicate, re.reversed)
			}
			if !re.reversed {
				re.reversed = true
				for _, b := range []*refBoard{national, provinces[re.province]} {
					m := b.members[re.user]
					latest := !tieFirst || m.seq == re.seqAfter
					newP := m.points - re.delta
					gone := b.live[re.user] <= 1
					b.live[re.user]--
					switch {
					case gone && newP == 0:
						// The member's only live change is undone: off the board.
						delete(b.members, re.user)
					case latest && !re.absentBefore:
						m.points, m.seq = newP, re.seqBefore
					default:
						m.points, m.seq = newP, seq
					}
				}
			}
		}
	}
	if c.index {
		// First from the index, once it caught up (the default reads of
		// checkBoard come from it too, within max_lag).
		checkIndexed(t, svc, map[string]*refBoard{"national": national, "province:zj": provinces["zj"], "province:gd": provinces["gd"]}, rng)
	}
	checkBoard(t, svc, BoardRef{Family: "f", Period: "all", Dimension: "national"}, national, rng)
	for p, ref := range provinces {
		checkBoard(t, svc, BoardRef{Family: "f", Period: "all", Dimension: "province:" + p}, ref, rng)
	}
}

// checkIndexed checks every board from the read index once it caught up
// with every write made so far.
func checkIndexed(t *testing.T, svc *Service, boards map[string]*refBoard, rng *rand.Rand) {
	t.Helper()
	since := time.Now()
	for dim, b := range boards {
		ref := BoardRef{Family: "f", Period: "all", Dimension: dim}
		waitIndex(t, svc, ref, since)
		checkBoardAt(t, svc, ref, b, rng, ConsistencyIndex)
	}
}

func sameEntries(t *testing.T, what string, got []rank.Entry, want []refEntry) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d entries, want %d\ngot  %v\nwant %v", what, len(got), len(want), got, want)
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.User != w.user || g.Points != w.points || g.Position != w.position || g.Rank != w.rank || !maps.Equal(g.Columns, w.cols) {
			t.Fatalf("%s: entry %d = {%s %d %v pos %d rank %d}, want {%s %d %v pos %d rank %d}", what, i,
				g.User, g.Points, g.Columns, g.Position, g.Rank, w.user, w.points, w.cols, w.position, w.rank)
		}
	}
}

// wantPercentile is the share of the board strictly behind want[i] — fewer
// points under competition ranking, later positions under ordinal — as
// Member answers it (hundredths, rounded down).
func wantPercentile(want []refEntry, i int, comp bool) float64 {
	n := int64(len(want))
	last := i // the last entry with at least want[i]'s standing
	// (On a family with sort columns: equal on points and every column.)
	for comp && last+1 < len(want) && want[last+1].points == want[i].points && maps.Equal(want[last+1].cols, want[i].cols) {
		last++
	}
	behind := n - int64(last) - 1
	if behind <= 0 {
		return 0
	}
	return float64(behind*10000/n) / 100
}

func checkBoard(t *testing.T, svc *Service, ref BoardRef, board *refBoard, rng *rand.Rand) {
	t.Helper()
	checkBoardAt(t, svc, ref, board, rng, ConsistencyPrimary)
}

// checkBoardAt compares every read at one consistency (primary or index)
// with the reference, and checks that each answer came from there.
func checkBoardAt(t *testing.T, svc *Service, ref BoardRef, board *refBoard, rng *rand.Rand, level Consistency) {
	t.Helper()
	ctx := context.Background()
	want := board.sorted()
	o := ReadOptions{Consistency: level}
	name := ref.Dimension
	src := SourcePrimary
	if level == ConsistencyIndex {
		src = SourceIndex
	}
	// The default level: the index on an indexed family (ready, within its
	// max_lag), else the cache (from the cache the second time).
	defSrc := SourceCache
	if svc.families[ref.Family].feedLen > 0 {
		defSrc = SourceIndex
	}
	from := func(what string, m ReadMeta) {
		t.Helper()
		if m.Source != src {
			t.Fatalf("%s %s: source %s, want %s", name, what, m.Source, src)
		}
		if (src == SourceIndex) != (m.LagMs != nil) {
			t.Fatalf("%s %s: source %s with lag_ms %v", name, what, m.Source, m.LagMs)
		}
	}

	// Top N for several N, including past the end.
	for _, n := range []int{1, 3, 10, 50, len(want) + 5} {
		n = min(n, 1000)
		page, err := svc.Top(ctx, ref, n, o)
		if err != nil {
			t.Fatalf("%s top %d: %v", name, n, err)
		}
		sameEntries(t, fmt.Sprintf("%s top %d", name, n), page.Entries, want[:min(n, len(want))])
		from("top", page.ReadMeta)
		if page.AsOf.IsZero() || page.Board != "f/all/"+name {
			t.Fatalf("%s top: meta %+v", name, page.ReadMeta)
		}
	}
	// The default (cached) level answers the same, from the cache the second time.
	for k := 0; k < 2; k++ {
		page, err := svc.Top(ctx, ref, 20, ReadOptions{})
		if err != nil {
			t.Fatalf("%s cached top: %v", name, err)
		}
		sameEntries(t, name+" cached top", page.Entries, want[:min(20, len(want))])
		if (k == 1 || defSrc == SourceIndex) && page.Source != defSrc {
			t.Fatalf("%s: default top (try %d) came from %s, want %s", name, k, page.Source, defSrc)
		}
	}
	// Offset pages.
	for _, off := range []int{0, 1, 7, len(want) / 2, len(want) - 1, len(want) + 3} {
		off = max(off, 0)
		page, err := svc.Entries(ctx, ref, PageQuery{Limit: 9, Offset: off, HasOffset: true}, o)
		if err != nil {
			t.Fatalf("%s offset %d: %v", name, off, err)
		}
		lo, hi := min(off, len(want)), min(off+9, len(want))
		sameEntries(t, fmt.Sprintf("%s offset %d", name, off), page.Entries, want[lo:hi])
		from("offset page", page.ReadMeta)
	}
	// Cursor walk over the whole board.
	var walked []rank.Entry
	cur := ""
	for pages := 0; ; pages++ {
		if pages > len(want)+2 {
			t.Fatalf("%s cursor walk does not end", name)
		}
		page, err := svc.Entries(ctx, ref, PageQuery{Limit: 7, Cursor: cur}, o)
		if err != nil {
			t.Fatalf("%s cursor page %d: %v", name, pages, err)
		}
		from("cursor page", page.ReadMeta)
		walked = append(walked, page.Entries...)
		if page.NextCursor == "" {
			break
		}
		cur = page.NextCursor
	}
	sameEntries(t, name+" cursor walk", walked, want)
	// Every member's standing, percentile included: natively (every points
	// group here is smaller than the default band), then with a band of two,
	// where the shards whose points group holds two members or more are asked
	// again with position.lua and the others answer natively, in one read.
	for _, band := range []int{0, 2} {
		svc.rp.Band = band
		for i, w := range want {
			ms, err := svc.Member(ctx, ref, w.user, o)
			if err != nil {
				t.Fatalf("%s member %s (band %d): %v", name, w.user, band, err)
			}
			if ms.Points != w.points || ms.Position != w.position || ms.Rank != w.rank || ms.Members != int64(len(want)) || !maps.Equal(ms.Columns, w.cols) {
				t.Fatalf("%s member %s (band %d) = %+v, want %+v of %d", name, w.user, band, ms, w, len(want))
			}
			if p := wantPercentile(want, i, board.comp); ms.Percentile != p {
				t.Fatalf("%s member %s (band %d): percentile %v, want %v", name, w.user, band, ms.Percentile, p)
			}
			from("member", ms.ReadMeta)
		}
	}
	svc.rp.Band = 0
	if _, err := svc.Member(ctx, ref, "nobody", o); rank.CodeOf(err) != rank.CodeNotRanked {
		t.Fatalf("%s absent member: %v, want not_ranked", name, err)
	}
	// Around random members with random radii: natively, then with a band of
	// two (seek.lua on the shards whose points group holds two or more).
	for _, band := range []int{0, 2} {
		svc.rp.Band = band
		for k := 0; k < 12 && len(want) > 0; k++ {
			p := rng.IntN(len(want))
			r := rng.IntN(6)
			page, err := svc.Around(ctx, ref, want[p].user, r, o)
			if err != nil {
				t.Fatalf("%s around %s (band %d): %v", name, want[p].user, band, err)
			}
			sameEntries(t, fmt.Sprintf("%s around %s r=%d band %d", name, want[p].user, r, band), page.Entries, want[max(0, p-r):min(len(want), p+r+1)])
			from("around", page.ReadMeta)
		}
	}
	svc.rp.Band = 0
	// Lookups of random subsets, with absent users mixed in.
	for k := 0; k < 5; k++ {
		var users []string
		var exp []refEntry
		pick := map[int]bool{}
		for j := 0; j < 1+rng.IntN(15) && len(want) > 0; j++ {
			pick[rng.IntN(len(want))] = true
		}
		for i, w := range want {
			if pick[i] {
				users = append(users, w.user)
				exp = append(exp, w)
			}
		}
		users = append(users, "ghost1", "ghost2")
		rng.Shuffle(len(users), func(i, j int) { users[i], users[j] = users[j], users[i] })
		page, err := svc.Lookup(ctx, ref, users, o)
		if err != nil {
			t.Fatalf("%s lookup: %v", name, err)
		}
		sameEntries(t, name+" lookup", page.Entries, exp)
		from("lookup", page.ReadMeta)
	}
	// Counts and ranges over random bands.
	var lo, hi int64 = 0, 0
	for _, w := range want {
		lo, hi = min(lo, w.points), max(hi, w.points)
	}
	for k := 0; k < 8; k++ {
		a := lo - 1 + rng.Int64N(hi-lo+3)
		b := a + rng.Int64N(hi-lo+3)
		var exp []refEntry
		for _, w := range want {
			if w.points >= a && w.points <= b {
				exp = append(exp, w)
			}
		}
		cnt, err := svc.Count(ctx, ref, a, b, o)
		if err != nil {
			t.Fatalf("%s count: %v", name, err)
		}
		if cnt.Count != int64(len(exp)) {
			t.Fatalf("%s count [%d,%d] = %d, want %d", name, a, b, cnt.Count, len(exp))
		}
		from("count", cnt.ReadMeta)
		var got []rank.Entry
		cur := ""
		for pages := 0; ; pages++ {
			if pages > len(want)+2 {
				t.Fatalf("%s range walk does not end", name)
			}
			page, err := svc.Range(ctx, ref, RangeQuery{Min: a, Max: b, Limit: 4, Cursor: cur}, o)
			if err != nil {
				t.Fatalf("%s range [%d,%d]: %v", name, a, b, err)
			}
			from("range", page.ReadMeta)
			got = append(got, page.Entries...)
			if page.NextCursor == "" {
				break
			}
			cur = page.NextCursor
		}
		sameEntries(t, fmt.Sprintf("%s range [%d,%d]", name, a, b), got, exp)
	}
	// A cursor is bound to its board and query.
	if len(want) > 8 {
		page, err := svc.Entries(ctx, ref, PageQuery{Limit: 3}, o)
		if err != nil {
			t.Fatal(err)
		}
		other := ref
		other.Dimension = "province:elsewhere"
		_, err = svc.Entries(ctx, other, PageQuery{Limit: 3, Cursor: page.NextCursor}, o)
		var re *rank.Error
		if !errors.As(err, &re) || re.Code != rank.CodeInvalidCursor {
			t.Fatalf("foreign cursor: %v, want invalid_cursor", err)
		}
	}
}

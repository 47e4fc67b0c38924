package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// colCase is one family shape of the sort-column property test.
type colCase struct {
	tie, order, agg, rankMode string
	shards                    int
	ledger                    bool // ledger mode (real PostgreSQL): the same reference, then a rebuild
	index                     bool // index.enabled: every read checked from the read index too
}

func (c colCase) name() string {
	n := fmt.Sprintf("cols_%s_%s_%s_%s_%dshards", c.agg, c.tie, c.order, c.rankMode, c.shards)
	if c.ledger {
		n += "_ledger"
	}
	if c.index {
		n += "_index"
	}
	return n
}

// refCols: c0 asc (lower is better, e.g. a time), c1 desc, c2 asc; in sum
// families c0 keeps the last value, c1 sums, c2 keeps the lowest. Their
// small ranges make ties on points and on columns common.
func (c colCase) refCols() []refCol {
	cols := []refCol{{name: "c0", asc: true, max: 7, agg: "last"}, {name: "c1", max: 999, agg: "sum"}, {name: "c2", asc: true, max: 3, agg: "min"}}
	if c.agg != "sum" {
		for i := range cols {
			cols[i].agg = ""
		}
	}
	return cols
}

func (c colCase) yaml() string {
	y := fmt.Sprintf("  f:\n    aggregate: %s\n    order: %s\n    tie: %s\n    rank: %s\n    period: all\n    max_points: 100000\n    columns:\n",
		c.agg, c.order, c.tie, c.rankMode)
	for _, col := range c.refCols() {
		order := "desc"
		if col.asc {
			order = "asc"
		}
		y += fmt.Sprintf("      - {name: %s, order: %s, max: %d", col.name, order, col.max)
		if col.agg != "" {
			y += ", aggregate: " + col.agg
		}
		y += "}\n"
	}
	if c.tie == "first" {
		y += "    seq_capacity: 1000000\n"
	}
	if c.index {
		y += indexYAML
	}
	return y + fmt.Sprintf("    dimensions:\n      national: {shards: %d}\n      province: {shards: %d}\n", c.shards, max(1, c.shards/2))
}

// TestShardedColumnBoardsEqualOneSortedSet is the property test for families
// with sort columns: random workloads with many equal points and equal
// columns, retries and reversals, through the service on the real cluster;
// every read (top, offset and cursor pages, members, around, lookups,
// counts, ranges, snapshots) must equal the in-memory reference of one
// unsharded board ordered by (points, columns…, tie), entry by entry.
func TestShardedColumnBoardsEqualOneSortedSet(t *testing.T) {
	t.Parallel()
	var cases []colCase
	for _, shards := range []int{1, 4, 16} {
		for _, tie := range []string{"member", "first"} {
			cases = append(cases,
				colCase{tie: tie, order: "desc", agg: "sum", rankMode: "competition", shards: shards},
				colCase{tie: tie, order: "asc", agg: "sum", rankMode: "ordinal", shards: shards},
				colCase{tie: tie, order: "desc", agg: "max", rankMode: "competition", shards: shards},
				colCase{tie: tie, order: "asc", agg: "min", rankMode: "competition", shards: shards})
		}
	}
	// Ledger mode: the same workloads (same seeds as the Redis-only cases
	// above, so both modes meet the same reference on the same stream), then
	// every board rebuilt from the ledger must answer the same again and
	// reconcile must find no drift.
	for _, tie := range []string{"member", "first"} {
		for _, c := range []colCase{
			{tie: tie, order: "desc", agg: "sum", rankMode: "competition", shards: 4},
			{tie: tie, order: "desc", agg: "max", rankMode: "competition", shards: 4},
			{tie: tie, order: "asc", agg: "min", rankMode: "competition", shards: 4},
		} {
			c.ledger = true
			cases = append(cases, c)
		}
	}
	// The read index: sort columns and tie rules from the index, in both
	// modes (in ledger mode a rebuild swap makes every follower reload).
	cases = append(cases, []colCase{
		{tie: "member", order: "desc", agg: "sum", rankMode: "competition", shards: 16, index: true},
		{tie: "first", order: "asc", agg: "sum", rankMode: "ordinal", shards: 16, index: true},
		{tie: "first", order: "desc", agg: "max", rankMode: "competition", shards: 4, index: true},
		{tie: "first", order: "desc", agg: "sum", rankMode: "competition", shards: 4, ledger: true, index: true},
		{tie: "member", order: "asc", agg: "min", rankMode: "competition", shards: 4, ledger: true, index: true},
	}...)
	seeds := map[string]uint64{}
	for i, c := range cases {
		key := c
		key.ledger, key.index = false, false
		if _, ok := seeds[key.name()]; !ok {
			seeds[key.name()] = uint64(100 + i)
		}
		seed := seeds[key.name()]
		t.Run(c.name(), func(t *testing.T) {
			t.Parallel()
			runColProperty(t, c, seed)
		})
	}
}

// colEvent is what the reference remembers of an applied sum event.
type colEvent struct {
	refEvent
	colsBefore, colsAfter []int64 // colsBefore nil: the member was new
}

func runColProperty(t *testing.T, c colCase, seed uint64) {
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
	rng := rand.New(rand.NewPCG(seed, 7))
	asc, tieFirst, comp := c.order == "asc", c.tie == "first", c.rankMode == "competition"
	cols := c.refCols()
	mk := func() *refBoard { b := newRef(asc, tieFirst, comp); b.cols = cols; return b }
	national := mk()
	provinces := map[string]*refBoard{"zj": mk(), "gd": mk()}
	var seq int64
	events := map[string]*colEvent{}
	var eventIDs []string
	nUsers := 50 + rng.IntN(50)
	userOf := func() string { return fmt.Sprintf("u%03d", rng.IntN(nUsers)) }
	provinceOf := func(u string) string {
		if u[len(u)-1]%2 == 0 {
			return "zj"
		}
		return "gd"
	}
	mdOf := func(id string) string { // half the events carry metadata
		if len(id)%2 == 0 {
			return ""
		}
		return `{"ev":"` + id + `"}`
	}
	event := func(id, u string, v int64, vals []int64) Event {
		ev := Event{EventID: id, Family: "f", User: u, Dims: map[string]string{"province": provinceOf(u)}, Columns: map[string]int64{},
			Metadata: json.RawMessage(mdOf(id))}
		for k, col := range cols {
			ev.Columns[col.name] = vals[k]
		}
		if c.agg == "sum" {
			ev.Delta = ptr(v)
		} else {
			ev.Value = ptr(v)
		}
		return ev
	}
	apply := func(id, u string, v int64, vals []int64) {
		seq++
		p := provinceOf(u)
		res, err := svc.ApplyEvent(ctx, event(id, u, v, vals))
		if err != nil {
			t.Fatalf("event %s: %v", id, err)
		}
		if res.Duplicate {
			t.Fatalf("event %s: fresh event answered duplicate", id)
		}
		for _, b := range []*refBoard{national, provinces[p]} {
			before, had := b.members[u]
			switch c.agg {
			case "sum":
				var sb int64 = -1
				var cb []int64
				if had {
					sb, cb = before.seq, slices.Clone(before.cols)
				}
				b.add(u, v, seq)
				m := b.members[u]
				m.md = mdOf(id)
				if !had {
					m.cols = slices.Clone(vals)
				} else {
					for k, col := range cols {
						switch col.agg {
						case "sum":
							m.cols[k] += vals[k]
						case "last":
							m.cols[k] = vals[k]
						case "max":
							m.cols[k] = max(m.cols[k], vals[k])
						case "min":
							m.cols[k] = min(m.cols[k], vals[k])
						}
					}
				}
				if b == national {
					events[id] = &colEvent{refEvent: refEvent{user: u, delta: v, seqBefore: sb, seqAfter: seq, absentBefore: !had, province: p},
						colsBefore: cb, colsAfter: slices.Clone(m.cols)}
				}
			default:
				higher := c.agg == "max"
				better := !had || (higher && v > before.points) || (!higher && v < before.points) ||
					(v == before.points && b.cmpCols(vals, before.cols) > 0)
				if better {
					b.members[u] = &refMember{points: v, seq: seq, cols: slices.Clone(vals), md: mdOf(id)}
				}
			}
		}
		eventIDs = append(eventIDs, id)
	}
	reverse := func(id string) {
		orig := eventIDs[rng.IntN(len(eventIDs))]
		re := events[orig]
		seq++
		res, err := svc.ApplyEvent(ctx, Event{EventID: "r" + id, Family: "f", User: re.user, Reverses: orig,
			Dims: map[string]string{"province": re.province}})
		if err != nil {
			t.Fatalf("reversal of %s: %v", orig, err)
		}
		if re.reversed != res.Duplicate {
			t.Fatalf("reversal of %s: duplicate=%v, want %v", orig, res.Duplicate, re.reversed)
		}
		if re.reversed {
			return
		}
		re.reversed = true
		for _, b := range []*refBoard{national, provinces[re.province]} {
			m := b.members[re.user]
			latest := !tieFirst || m.seq == re.seqAfter
			latestCols := slices.Equal(m.cols, re.colsAfter)
			newP := m.points - re.delta
			gone := b.live[re.user] <= 1
			b.live[re.user]--
			if gone && newP == 0 {
				delete(b.members, re.user)
				continue
			}
			for k, col := range cols {
				switch {
				case col.agg == "sum" && re.colsBefore != nil:
					m.cols[k] -= re.colsAfter[k] - re.colsBefore[k]
				case col.agg == "sum":
					m.cols[k] -= re.colsAfter[k]
				case latestCols && re.colsBefore != nil:
					m.cols[k] = re.colsBefore[k]
				}
			}
			if latest && !re.absentBefore {
				m.points, m.seq = newP, re.seqBefore
			} else {
				m.points, m.seq = newP, seq
			}
		}
	}
	nEvents := 200 + rng.IntN(120)
	for i := 0; i < nEvents; i++ {
		u := userOf()
		v := int64(rng.IntN(3)) // many equal points, zero included
		if c.agg == "sum" {
			v = int64(1 + rng.IntN(2))
			if rng.IntN(10) == 0 {
				v = -v
			}
		}
		vals := []int64{int64(rng.IntN(4)), int64(rng.IntN(3)), int64(rng.IntN(4))}
		id := fmt.Sprintf("e%d", i)
		apply(id, u, v, vals)
		if c.index && i == 20 {
			for _, dim := range []string{"national", "province:zj", "province:gd"} {
				if _, err := svc.Count(ctx, BoardRef{Family: "f", Period: "all", Dimension: dim}, 0, 0, ReadOptions{Consistency: ConsistencyIndex}); err != nil {
					t.Fatal(err)
				}
			}
		}
		if rng.IntN(8) == 0 { // a retry: never counts twice, whatever it carries
			seq++
			res, err := svc.ApplyEvent(ctx, event(id, u, v, []int64{0, 0, 0}))
			if err != nil || !res.Duplicate {
				t.Fatalf("retry of %s: duplicate=%v err=%v", id, res.Duplicate, err)
			}
		}
		if c.agg == "sum" && rng.IntN(12) == 0 {
			reverse(id)
		}
	}
	if c.index {
		checkIndexed(t, svc, map[string]*refBoard{"national": national, "province:zj": provinces["zj"], "province:gd": provinces["gd"]}, rng)
	}
	for _, ref := range []BoardRef{{Family: "f", Period: "all", Dimension: "national"}} {
		checkBoard(t, svc, ref, national, rng)
		checkSnapshot(t, svc, ref, national)
		checkMetadata(t, svc, ref, national)
	}
	for p, b := range provinces {
		checkBoard(t, svc, BoardRef{Family: "f", Period: "all", Dimension: "province:" + p}, b, rng)
	}
	if !c.ledger {
		return
	}
	// Rebuilt from the ledger, every board answers the same (columns, seqs
	// and metadata included), and reconcile finds nothing to report.
	boards := map[string]*refBoard{"national": national, "province:zj": provinces["zj"], "province:gd": provinces["gd"]}
	for dim, b := range boards {
		ref := BoardRef{Family: "f", Period: "all", Dimension: dim}
		if _, err := svc.Rebuild(ctx, ref); err != nil {
			t.Fatalf("rebuild %s: %v", dim, err)
		}
		if c.index {
			// The swap's reset entry reloads the shards: the index answers
			// the rebuilt board once it caught up again.
			waitIndex(t, svc, ref, time.Now())
			checkBoardAt(t, svc, ref, b, rng, ConsistencyIndex)
		}
		checkBoard(t, svc, ref, b, rng)
		checkMetadata(t, svc, ref, b)
		rep, err := svc.Reconcile(ctx, ref)
		if err != nil || rep.Drifted != 0 || rep.Checked != int64(len(b.members)) {
			t.Fatalf("reconcile %s after rebuild: %+v, %v (want %d checked, no drift)", dim, rep, err, len(b.members))
		}
	}
}

// checkSnapshot: a snapshot of the whole board pages exactly like the reference.
func checkSnapshot(t *testing.T, svc *Service, ref BoardRef, board *refBoard) {
	t.Helper()
	ctx := context.Background()
	want := board.sorted()
	info, err := svc.CreateSnapshot(ctx, ref, len(want)+5, time.Minute)
	if err != nil {
		t.Fatalf("snapshot: %v", err)
	}
	for off := 0; off < len(want)+9; off += 9 {
		page, err := svc.Entries(ctx, ref, PageQuery{Limit: 9, Offset: off, HasOffset: true, Snapshot: info.Snapshot}, ReadOptions{Consistency: ConsistencyPrimary})
		if err != nil {
			t.Fatalf("snapshot page %d: %v", off, err)
		}
		sameEntries(t, fmt.Sprintf("snapshot offset %d", off), page.Entries, want[min(off, len(want)):min(off+9, len(want))])
	}
}

// checkMetadata: with metadata=1 every entry carries the metadata of the
// change that last moved it (none when that change carried none).
func checkMetadata(t *testing.T, svc *Service, ref BoardRef, board *refBoard) {
	t.Helper()
	want := board.sorted()
	page, err := svc.Top(context.Background(), ref, min(len(want)+1, 1000), ReadOptions{Consistency: ConsistencyPrimary, Metadata: true})
	if err != nil {
		t.Fatalf("top with metadata: %v", err)
	}
	for i, e := range page.Entries {
		if got, exp := string(e.Metadata), board.members[want[i].user].md; got != exp {
			t.Fatalf("entry %d (%s): metadata %q, want %q", i, e.User, got, exp)
		}
	}
	ms, err := svc.Member(context.Background(), ref, want[0].user, ReadOptions{Consistency: ConsistencyPrimary, Metadata: true})
	if err != nil || string(ms.Metadata) != board.members[want[0].user].md {
		t.Fatalf("member %s with metadata: %q, %v", want[0].user, ms.Metadata, err)
	}
}

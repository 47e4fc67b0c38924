package gateway

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/store"
)

// countReads wraps the real store and counts the reads of one kind.
type countReads struct {
	Backend
	kind store.ReadKind
	n    atomic.Int64
}

func (c *countReads) ReadShards(ctx context.Context, reads []store.ShardRead, replica bool, out []store.ShardReply) {
	for i := range reads {
		if reads[i].Kind == c.kind {
			c.n.Add(1)
		}
	}
	c.Backend.ReadShards(ctx, reads, replica, out)
}

// TestAroundFirstRankFromShardReplies: under competition ranking an
// around-me window that starts above the member's points, where the entry
// just before the window has the first entry's points, needs the count of
// members with strictly more points than that first entry. The shards'
// window replies give it (readplan.Window.FirstMore) unless some shard's
// entries before the member all lie within those points — then one ZCOUNT
// fan-out. Every window of a 16-shard board of the real cluster with large
// groups of equal points, pairs and unique points is checked entry by entry
// against the reference, and both ways must have been taken.
func TestAroundFirstRankFromShardReplies(t *testing.T) {
	t.Parallel()
	for _, order := range []string{"desc", "asc"} {
		t.Run(order, func(t *testing.T) {
			t.Parallel()
			fam := fmt.Sprintf("  a:\n    aggregate: sum\n    order: %s\n    tie: member\n    rank: competition\n    period: all\n    max_points: 100000\n    dimensions:\n      national: {shards: 16}\n", order)
			var cr *countReads
			svc := newClusterServiceWith(t, fam, func(o *Options, st *store.Store) {
				cr = &countReads{Backend: st, kind: store.ReadCount}
				o.Backend = cr
			})
			ctx := context.Background()
			ref := newRef(order == "asc", false, true)
			for j := 0; j < 360; j++ {
				u := fmt.Sprintf("u%03d", j)
				var p int64
				switch {
				case j < 80:
					p = 500 // a group of 80: ≈ 5 per shard, more than a window reads
				case j < 110:
					p = 300
				case j < 250:
					p = 1000 + int64(j/2) // pairs
				default:
					p = 2000 + int64(j) // unique
				}
				if _, err := svc.ApplyEvent(ctx, sumEv("e"+u, "a", u, p, nil)); err != nil {
					t.Fatal(err)
				}
				ref.add(u, p, 0)
			}
			want := ref.sorted()
			tied, counted := 0, int64(0)
			for p := 0; p < len(want); p += 2 {
				for _, r := range []int{1, 3, 5} {
					f := max(0, p-r)
					if want[f].points != want[p].points && f > 0 && want[f-1].points == want[f].points {
						tied++ // the window's first entry shares its points with the entry before it
					}
					before := cr.n.Load()
					page, err := svc.Around(ctx, nationalRef("a", "all"), want[p].user, r, primaryRead)
					if err != nil {
						t.Fatalf("around %s r=%d: %v", want[p].user, r, err)
					}
					counted += (cr.n.Load() - before) / 16
					sameEntries(t, fmt.Sprintf("around %s r=%d", want[p].user, r), page.Entries, want[f:min(len(want), p+r+1)])
				}
			}
			if counted == 0 || counted >= int64(tied) {
				t.Fatalf("%d count fan-outs for %d windows whose first entry ties with the one before: want some, and fewer", counted, tied)
			}
			t.Logf("%d windows whose first entry ties with the one before, %d needed a count fan-out", tied, counted)
		})
	}
}

// TestAroundAsksCrowdedShardsAgain: around-me asks each shard for
// readplan.FirstDepth(radius+1, n) entries on either side first (3 of 6 at
// radius 5 on 16 shards); a shard that gave them all and could hold more of
// the window is asked again, whole (seek.lua's around mode). On 16-shard
// boards of the real cluster every window at radius 3, 5 and 10 equals the
// reference entry by entry:
//   - "crowded": runs of 8 consecutive members live on one shard, so a first
//     round alone would leave holes where a run meets the window; the second
//     round must have been taken for some windows, not all;
//   - "flat" (runs of 64 members with equal points) and "sort column"
//     (points tied in pairs, broken by a column) spread their members by
//     hash: a shard is asked again only when it really holds more of the
//     window (or of Window.FirstMore's points), so for a few per cent of
//     the shard reads — not whenever the window's first entry shares its
//     points, nor on every shard of a family with sort columns.
func TestAroundAsksCrowdedShardsAgain(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name, order string
		cols        bool
		crowded     bool
		points      func(k int) int64 // points of the k-th member in board order (desc)
	}{
		{"crowded desc", "desc", false, true, func(k int) int64 { return int64(50000 - 3*k) }},
		{"crowded asc", "asc", false, true, func(k int) int64 { return int64(50000 - 3*k) }},
		{"flat", "desc", false, false, func(k int) int64 { return int64(50000 - 3*(k/64)) }},
		{"sort column", "desc", true, false, func(k int) int64 { return int64(50000 - 3*(k/2)) }},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			agg, cols := "sum", ""
			if c.cols {
				agg, cols = "max", "    columns:\n      - {name: t, order: asc, max: 1000}\n"
			}
			fam := fmt.Sprintf("  a:\n    aggregate: %s\n    order: %s\n    tie: member\n    rank: competition\n    period: all\n    max_points: 100000\n%s    dimensions:\n      national: {shards: 16}\n", agg, c.order, cols)
			var cr *countReads
			svc := newClusterServiceWith(t, fam, func(o *Options, st *store.Store) {
				cr = &countReads{Backend: st, kind: store.ReadSeek}
				o.Backend = cr
			})
			ctx := context.Background()
			var crowd, spread []string // members of shard 3, of any other shard
			for j := 0; len(crowd) < 80 || len(spread) < 80; j++ {
				u := fmt.Sprintf("u%04d", j)
				if shard.Of(u, 16) == 3 {
					crowd = append(crowd, u)
				} else {
					spread = append(spread, u)
				}
			}
			ref := newRef(c.order == "asc", false, true)
			if c.cols {
				ref.cols = []refCol{{name: "t", asc: true, max: 1000}}
			}
			const members = 160
			for k := 0; k < members; k++ {
				var u string
				switch {
				case !c.crowded:
					u = fmt.Sprintf("u%04d", k)
				case k/8%2 == 0: // positions 0-7, 16-23, …: a run on shard 3
					u, crowd = crowd[0], crowd[1:]
				default:
					u, spread = spread[0], spread[1:]
				}
				p := c.points(k)
				if c.order == "asc" {
					p = 100000 - p
				}
				ev := sumEv("e"+u, "a", u, p, nil)
				if c.cols {
					tcol := int64(k % 2 * 7) // pairs of equal points: the lower t ranks first
					ev = Event{EventID: "e" + u, Family: "a", User: u, Value: ptr(p), Columns: map[string]int64{"t": tcol}}
					ref.members[u] = &refMember{points: p, cols: []int64{tcol}}
				} else {
					ref.add(u, p, 0)
				}
				if _, err := svc.ApplyEvent(ctx, ev); err != nil {
					t.Fatal(err)
				}
			}
			want := ref.sorted()
			windows, asked, again := 0, 0, int64(0)
			for p := range want {
				for _, r := range []int{3, 5, 10} {
					before := cr.n.Load()
					page, err := svc.Around(ctx, nationalRef("a", "all"), want[p].user, r, primaryRead)
					if err != nil {
						t.Fatalf("around %s r=%d: %v", want[p].user, r, err)
					}
					windows++
					if d := cr.n.Load() - before; d > 0 {
						asked++
						again += d
					}
					sameEntries(t, fmt.Sprintf("around %s (position %d) r=%d", want[p].user, p, r), page.Entries, want[max(0, p-r):min(len(want), p+r+1)])
				}
			}
			t.Logf("%d of %d windows asked a shard again, %d shard reads of %d", asked, windows, again, 16*windows)
			if c.crowded && (asked == 0 || asked == windows) {
				t.Fatalf("%d of %d windows asked a shard again: want some, not all", asked, windows)
			}
			if !c.crowded && again*10 > int64(16*windows) {
				t.Fatalf("%d shard reads of %d asked again: want under a tenth", again, 16*windows)
			}
		})
	}
}

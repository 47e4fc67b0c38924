package store_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/store"
)

// feedOf reads a whole change feed.
func feedOf(t *testing.T, e *env, k shard.Keys) []store.FeedEntry {
	t.Helper()
	out := make([]store.FeedReply, 1)
	e.s.Feed(ctxT(t, 5*time.Second), []store.FeedOp{{Kind: store.FeedRead, Key: k.Feed, Count: 10000}}, out)
	if out[0].Err != nil {
		t.Fatal(out[0].Err)
	}
	return out[0].Entries
}

// TestFeedEntries: what each kind of write appends to a shard's change
// feed — sort-column placements (one entry with the new stored member),
// moderator removals, rebuild swaps and derives (reset entries) — and the
// feed operations the read index uses (tail, read from an id inclusive,
// scan, card).
func TestFeedEntries(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const feedLen = 1000

	t.Run("columns: one entry per placement, keyed by the stored member", func(t *testing.T) {
		t.Parallel()
		ctx := ctxT(t, 10*time.Second)
		codec := rank.NewColumns(colFamily, 0)
		k := e.layout.Keys(shard.Board{Family: "racef", Period: "all", DimType: shard.National}, 0, 1)
		writes := []store.Write{
			colWrite(codec, store.KindApply, "e1", "u1", "sum", 10, 0, 500, 3),
			colWrite(codec, store.KindApply, "e2", "u1", "sum", 5, 0, 400, 2), // columns move: re-placed
			colWrite(codec, store.KindApply, "e3", "u2", "sum", 7, 0, 100, 1),
			{Kind: store.KindRemove, Member: "u2"},
		}
		for _, w := range writes {
			w.Keys, w.FeedLen = k, feedLen
			if r := e.s.Write(ctx, []store.Write{w})[0]; r.Err != nil || r.Status != store.StatusOK {
				t.Fatalf("%s %s: %v %v", w.EventID, w.Member, r.Status, r.Err)
			}
		}
		got := feedOf(t, e, k)
		want := []struct {
			user    string
			cols    []int64
			score   int64
			removed bool
		}{{"u1", []int64{500, 3}, 10, false}, {"u1", []int64{400, 5}, 15, false}, {"u2", []int64{100, 1}, 7, false}, {"u2", []int64{100, 1}, 0, true}}
		if len(got) != len(want) {
			t.Fatalf("%d feed entries, want %d: %+v", len(got), len(want), got)
		}
		for i, w := range want {
			stored := codec.Stored(w.cols, 0, w.user)
			if got[i].Member != stored || got[i].Removed != w.removed || (!w.removed && got[i].Score != w.score) {
				t.Errorf("entry %d = %+v, want member %q score %d removed %v", i, got[i], stored, w.score, w.removed)
			}
		}
		// The last entry for a user is where the sorted set has it.
		zs := zset(t, e, k)
		if len(zs) != 1 || zs[0].Member != codec.Stored([]int64{400, 5}, 0, "u1") {
			t.Fatalf("sorted set %v", zs)
		}
	})

	t.Run("remove: one entry, the member left", func(t *testing.T) {
		t.Parallel()
		ctx := ctxT(t, 10*time.Second)
		k := e.layout.Keys(shard.Board{Family: "rm", Period: "all", DimType: shard.National}, 0, 1)
		for _, w := range []store.Write{apply("e1", "u1", "sum", 5, 0), apply("e2", "u2", "sum", 3, 0), {Kind: store.KindRemove, Member: "u1"},
			{Kind: store.KindRemove, Member: "u1"}} { // the second removal finds nothing: no entry
			w.Keys, w.FeedLen, w.MaxPoints, w.NowMs, w.Rules = k, feedLen, 1000, testNowMs, testRules
			if r := e.s.Write(ctx, []store.Write{w})[0]; r.Err != nil {
				t.Fatal(r.Err)
			}
		}
		got := feedOf(t, e, k)
		if len(got) != 3 || got[2].Member != "u1" || !got[2].Removed || got[0].Score != 5 || got[1].Member != "u2" {
			t.Fatalf("feed %+v, want u1=5, u2=3, u1 removed", got)
		}
	})

	t.Run("rebuild swap and derive append a reset entry; without a feed they append nothing", func(t *testing.T) {
		t.Parallel()
		ctx := ctxT(t, 10*time.Second)
		b := shard.Board{Family: "sw", Period: "all", DimType: shard.National}
		for _, withFeed := range []bool{false, true} {
			b.Period = fmt.Sprintf("p%v", withFeed)
			k := e.layout.Keys(b, 0, 1)
			fl := int64(0)
			if withFeed {
				fl = feedLen
			}
			if n, err := e.s.Rebuild(ctx, k, []store.RebuildEntry{{Member: "a", Score: 3, Version: 1}, {Member: "b", Score: 4, Version: 1}}, fl); err != nil || n != 2 {
				t.Fatalf("rebuild: %d %v", n, err)
			}
			// A derived shard of the same tag: dst = 2 × src.
			dst := strings.TrimSuffix(k.Z, "z") + "final:z"
			if n, err := e.s.Derive(ctx, dst, []string{k.Z}, []int64{2}, "sum", fl); err != nil || n != 2 {
				t.Fatalf("derive: %d %v", n, err)
			}
			if sc := zscore(t, ctx, e.c, dst, "b"); sc != "8" {
				t.Fatalf("derived score of b = %s, want 8", sc)
			}
			got := feedOf(t, e, k)
			dk := k
			dk.Feed = shard.FeedKey(dst)
			dgot := feedOf(t, e, dk)
			if !withFeed {
				if len(got)+len(dgot) != 0 {
					t.Fatalf("without a feed: entries %+v %+v", got, dgot)
				}
				continue
			}
			if len(got) != 1 || got[0].Reset != "swap" || len(dgot) != 1 || dgot[0].Reset != "derive" {
				t.Fatalf("feed %+v, derived feed %+v: want one swap and one derive reset", got, dgot)
			}
		}
	})

	t.Run("operations: tail, read from an id inclusive, scan, card", func(t *testing.T) {
		t.Parallel()
		ctx := ctxT(t, 10*time.Second)
		k := e.layout.Keys(shard.Board{Family: "ops", Period: "all", DimType: shard.National}, 0, 1)
		out := make([]store.FeedReply, 3)
		e.s.Feed(ctx, []store.FeedOp{{Kind: store.FeedTail, Key: k.Feed}, {Kind: store.FeedCard, Key: k.Z},
			{Kind: store.FeedRead, Key: k.Feed, Count: 10}}, out)
		for i, r := range out {
			if r.Err != nil || len(r.Entries) != 0 || r.N != 0 {
				t.Fatalf("op %d on an absent shard: %+v", i, r)
			}
		}
		for i := 0; i < 30; i++ {
			w := apply(fmt.Sprintf("e%d", i), fmt.Sprintf("u%02d", i%20), "sum", int64(i+1), 0)
			w.Keys, w.FeedLen, w.MaxPoints, w.NowMs, w.Rules = k, feedLen, 1000, testNowMs, testRules
			if r := e.s.Write(ctx, []store.Write{w})[0]; r.Err != nil {
				t.Fatal(r.Err)
			}
		}
		all := feedOf(t, e, k)
		if len(all) != 30 {
			t.Fatalf("%d entries, want 30", len(all))
		}
		out = make([]store.FeedReply, 4)
		e.s.Feed(ctx, []store.FeedOp{{Kind: store.FeedTail, Key: k.Feed}, {Kind: store.FeedRead, Key: k.Feed, From: all[9].ID, Count: 5},
			{Kind: store.FeedScan, Key: k.Z, Count: 1000}, {Kind: store.FeedCard, Key: k.Z}}, out)
		for i, r := range out {
			if r.Err != nil {
				t.Fatalf("op %d: %v", i, r.Err)
			}
		}
		if len(out[0].Entries) != 1 || out[0].Entries[0] != all[29] {
			t.Fatalf("tail %+v, want %+v", out[0].Entries, all[29])
		}
		if len(out[1].Entries) != 5 || out[1].Entries[0] != all[9] || out[1].Entries[4] != all[13] {
			t.Fatalf("read from %s: %+v, want entries 9..13", all[9].ID, out[1].Entries)
		}
		if out[1].Entries[0].Ms <= 0 || out[1].Entries[0].Ms > time.Now().UnixMilli()+60_000 {
			t.Fatalf("entry time %d ms is not a recent unix time", out[1].Entries[0].Ms)
		}
		if len(out[2].Items) != 20 || out[2].Cursor != 0 || out[3].N != 20 {
			t.Fatalf("scan: %d items, cursor %d; card %d — want 20, 0, 20", len(out[2].Items), out[2].Cursor, out[3].N)
		}
	})
}

package store_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/store"
)

// A Write whose projections share board shards (one project.lua call per
// shard) answers every write and leaves every key exactly as the same writes
// sent one Write each: statuses, versions, scores before and after, the
// sorted sets, version and metadata hashes, and the state hash; a frozen
// shard refuses each of its writes.
func TestGroupedProjectionsMatchOneByOne(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t, 20*time.Second)
	const B = 1 << 10
	keys := func(set, v string) shard.Keys {
		return e.layout.Keys(shard.Board{Family: "grp", Period: "2026-W34", DimType: set, DimValue: v}, 0, 1)
	}
	type w struct {
		shard         string
		member        string
		version, p, s int64
		absent, keep  bool
		md            string
	}
	seq := []w{
		{shard: "a", member: "u1", version: 1, p: 10, s: 1, md: `{"x":1}`},
		{shard: "b", member: "u1", version: 1, p: 10, s: 1},
		{shard: "a", member: "u2", version: 1, p: 10, s: 2},
		{shard: "a", member: "u1", version: 2, p: 15, s: 3, md: `{"x":2}`},
		{shard: "a", member: "u1", version: 2, p: 99, s: 4},             // stale: same version
		{shard: "a", member: "u2", version: 1, p: 20, s: 5},             // stale
		{shard: "a", member: "u3", version: 1, p: 5000, s: 6},           // range: points
		{shard: "a", member: "u4", version: 1, p: 30, s: B},             // range: seq
		{shard: "b", member: "u1", version: 2, absent: true},            // removed
		{shard: "a", member: "u2", version: 3, p: 10, s: 9, keep: true}, // keep: same points, seq kept
		{shard: "f", member: "u1", version: 1, p: 1, s: 1},              // frozen shard
		{shard: "f", member: "u2", version: 1, p: 1, s: 1},              // frozen shard
		{shard: "b", member: "u5", version: 4, p: -7, s: 7, md: `{"y":true}`},
		{shard: "a", member: "u1", version: 5, p: 15, s: 8, md: ""}, // clears u1's metadata
	}
	build := func(set string) []store.Write {
		out := make([]store.Write, len(seq))
		for i, x := range seq {
			out[i] = store.Write{Kind: store.KindProject, Keys: keys(set, x.shard), Member: x.member, Version: x.version,
				Value: x.p, B: B, Seq: x.s, SetSeq: !x.keep, Absent: x.absent, MaxPoints: 1000, NowMs: testNowMs,
				Rules: testRules, Metadata: x.md, KeepMetadata: true}
		}
		return out
	}
	for _, set := range []string{"one", "all"} {
		freeze(t, ctx, e.c, keys(set, "f"))
	}
	one := build("one")
	var got1 []store.WriteResult
	for _, wr := range one {
		got1 = append(got1, e.s.Write(ctx, []store.Write{wr})...)
	}
	got2 := e.s.Write(ctx, build("all"))
	for i := range seq {
		a, b := got1[i], got2[i]
		desc := fmt.Sprintf("write %d (%+v)", i, seq[i])
		if a.Err != nil || b.Err != nil {
			t.Fatalf("%s: errors %v / %v", desc, a.Err, b.Err)
		}
		if a.Status != b.Status || a.Version != b.Version || a.State != b.State ||
			scoreStr(a.Before) != scoreStr(b.Before) || scoreStr(a.After) != scoreStr(b.After) {
			t.Errorf("%s: one by one %s v%d %q %s→%s, grouped %s v%d %q %s→%s", desc,
				a.Status, a.Version, a.State, scoreStr(a.Before), scoreStr(a.After),
				b.Status, b.Version, b.State, scoreStr(b.Before), scoreStr(b.After))
		}
	}
	// The answers themselves (so that both runs being wrong the same way fails).
	wantStatus := []store.WriteStatus{"ok", "ok", "ok", "ok", "stale", "stale", "range", "range", "ok", "ok", "closed", "closed", "ok", "ok"}
	for i, st := range wantStatus {
		if got2[i].Status != st {
			t.Errorf("write %d: status %s, want %s", i, got2[i].Status, st)
		}
	}
	if got, want := scoreStr(got2[9].After), tf(10, B, 2); got != want {
		t.Errorf("keep-seq projection: after %s, want %s (seq kept at 2)", got, want)
	}
	for _, sh := range []string{"a", "b", "f"} {
		k1, k2 := keys("one", sh), keys("all", sh)
		z1, err1 := e.c.ZRangeWithScores(ctx, k1.Z, 0, -1).Result()
		z2, err2 := e.c.ZRangeWithScores(ctx, k2.Z, 0, -1).Result()
		if err1 != nil || err2 != nil {
			t.Fatal(err1, err2)
		}
		if fmt.Sprint(z1) != fmt.Sprint(z2) {
			t.Errorf("shard %s: sorted set %v one by one, %v grouped", sh, z1, z2)
		}
		for _, pair := range [][2]string{{k1.M, k2.M}, {k1.Md, k2.Md}, {k1.Meta, k2.Meta}} {
			h1, err1 := e.c.HGetAll(ctx, pair[0]).Result()
			h2, err2 := e.c.HGetAll(ctx, pair[1]).Result()
			if err1 != nil || err2 != nil {
				t.Fatal(err1, err2)
			}
			if fmt.Sprint(h1) != fmt.Sprint(h2) {
				t.Errorf("shard %s: hash %v one by one, %v grouped", sh, h1, h2)
			}
		}
	}
	if md, err := e.c.HGetAll(ctx, keys("all", "b").Md).Result(); err != nil || fmt.Sprint(md) != `map[u5:{"y":true}]` {
		t.Errorf("shard b metadata %v (%v), want only u5's", md, err)
	}
}

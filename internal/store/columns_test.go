package store_test

import (
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/store"
)

// colFamily: time_ms asc (max 1000), kills desc (max 999).
var colFamily = []rank.Column{{Name: "time_ms", Asc: true, Max: 1000, Agg: "last"}, {Name: "kills", Max: 999, Agg: "sum"}}

func colWrite(codec *rank.Columns, kind store.WriteKind, id, user, mode string, v, seq int64, vals ...int64) store.Write {
	w := store.Write{Kind: kind, EventID: id, Member: user, Mode: mode, Value: v, Seq: seq, B: codec.B, HasCols: true,
		MaxPoints: 1_000_000, NowMs: testNowMs, Rules: testRules}
	for i, c := range codec.Cols {
		agg := c.Agg
		if mode != "sum" {
			agg = ""
		}
		var val int64
		if i < len(vals) {
			val = vals[i]
		}
		w.Columns = append(w.Columns, store.ColArg{Agg: agg, Value: val, Max: c.Max, Width: codec.Width(i), Asc: c.Asc})
	}
	return w
}

// zset reads a shard's sorted set in board order.
func zset(t *testing.T, e *env, k shard.Keys) []redis.Z {
	t.Helper()
	zs, err := e.c.ZRevRangeWithScores(ctxT(t, 5*time.Second), k.Z, 0, -1).Result()
	if err != nil {
		t.Fatalf("ZREVRANGE: %v", err)
	}
	return zs
}

func TestColumnsScript(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t, 20*time.Second)
	codec := rank.NewColumns(colFamily, 0)
	k := e.layout.Keys(shard.Board{Family: "race", Period: "all", DimType: shard.National}, 0, 1)
	run := func(w store.Write, status string) store.WriteResult {
		t.Helper()
		w.Keys = k
		r := e.s.Write(ctx, []store.Write{w})[0]
		if r.Err != nil || string(r.Status) != status {
			t.Fatalf("%s %s: status %q err %v, want %q", w.EventID, w.Member, r.Status, r.Err, status)
		}
		return r
	}
	want := func(zs ...redis.Z) {
		t.Helper()
		got := zset(t, e, k)
		if len(got) != len(zs) {
			t.Fatalf("zset %v, want %v", got, zs)
		}
		for i := range zs {
			if got[i].Member != zs[i].Member || got[i].Score != zs[i].Score {
				t.Fatalf("zset %v, want %v", got, zs)
			}
		}
	}
	st := func(user string, vals ...int64) string { return codec.Stored(vals, 0, user) }

	run(colWrite(codec, store.KindApply, "e1", "u1", "sum", 10, 0, 100, 5), "ok")
	want(redis.Z{Score: 10, Member: st("u1", 100, 5)})
	if got := st("u1", 100, 5); got != "384005u1" {
		t.Fatalf("stored member %q, want 384005u1 (asc 1000-100 = 0x384, kills 5)", got)
	}
	run(colWrite(codec, store.KindApply, "e2", "u1", "sum", 5, 0, 200, 3), "ok") // time last, kills sum
	want(redis.Z{Score: 15, Member: st("u1", 200, 8)})
	run(colWrite(codec, store.KindApply, "e2", "u1", "sum", 5, 0, 200, 3), "dup")
	// u2: equal points, faster time → ahead of u1.
	run(colWrite(codec, store.KindApply, "e3", "u2", "sum", 15, 0, 150, 0), "ok")
	want(redis.Z{Score: 15, Member: st("u2", 150, 0)}, redis.Z{Score: 15, Member: st("u1", 200, 8)})
	// Reversing e2: points and the summed kills go back; time (last) returns
	// to its value before e2, which is still u1's latest change.
	r := e.s.Write(ctx, []store.Write{func() store.Write {
		w := colWrite(codec, store.KindReverse, "r2b", "u1", "sum", 0, 0)
		w.Reverses, w.Keys = "e2", k
		return w
	}()})[0]
	if r.Err != nil || r.Status != "ok" {
		t.Fatalf("reverse: %+v", r)
	}
	want(redis.Z{Score: 15, Member: st("u2", 150, 0)}, redis.Z{Score: 10, Member: st("u1", 100, 5)})
	// A sum column past its max is refused and leaves no trace.
	run(colWrite(codec, store.KindApply, "e4", "u1", "sum", 1, 0, 100, 995), "range")
	want(redis.Z{Score: 15, Member: st("u2", 150, 0)}, redis.Z{Score: 10, Member: st("u1", 100, 5)})
	if n, _ := e.c.HLen(ctx, k.Cols).Result(); n != 2 {
		t.Fatalf("cols hash holds %d users, want 2", n)
	}

	// members.lua finds users by their stored members.
	var out [1]store.ShardReply
	e.s.ReadShards(ctx, []store.ShardRead{{Kind: store.ReadScores, Key: k.Z, Cols: shard.ColsKey(k.Z), Members: []string{"u1", "nobody", "u2"}}}, false, out[:])
	if out[0].Err != nil {
		t.Fatal(out[0].Err)
	}
	if !reflect.DeepEqual(out[0].Stored, []string{st("u1", 100, 5), "", st("u2", 150, 0)}) ||
		!reflect.DeepEqual(out[0].Found, []bool{true, false, true}) || out[0].Scores[0] != 10 || out[0].Scores[2] != 15 {
		t.Fatalf("members: %+v", out[0])
	}
	// Position probes: u3 ties u2 on points and columns: same "more" count.
	run(colWrite(codec, store.KindApply, "e5", "u3", "sum", 15, 0, 150, 0), "ok")
	key := codec.Key(st("u3", 150, 0))
	ps, err := e.s.Positions(ctx, k.Z, []store.Probe{{Score: 15, Member: st("u3", 150, 0), MoreMin: 15, SameMin: 15,
		MoreMember: rank.BetterKey(key), SameMember: key}}, false)
	if err != nil {
		t.Fatal(err)
	}
	if ps.Card != 3 || ps.Ahead[0] != 0 || ps.More[0] != 0 || ps.AtLeast[0] != 2 {
		t.Fatalf("positions %+v, want card 3, ahead 0 (u3 > u2 by member bytes), more 0, at least 2", ps)
	}
	// The native probe (ReadPlace) answers what position.lua answers, for
	// every member, on (points, columns).
	for _, z := range zset(t, e, k) {
		m := z.Member.(string)
		sc := int64(z.Score)
		key := codec.Key(m)
		pr := store.Probe{Score: sc, Member: m, MoreMin: sc + 1, SameMin: sc, MoreMember: rank.BetterKey(key), SameMember: key}
		want, err := e.s.Positions(ctx, k.Z, []store.Probe{pr}, false)
		if err != nil {
			t.Fatal(err)
		}
		var got [1]store.ShardReply
		e.s.ReadShards(ctx, []store.ShardRead{{Kind: store.ReadPlace, Key: k.Z, Probes: []store.Probe{pr}}}, false, got[:])
		if got[0].Err != nil || got[0].Open || !reflect.DeepEqual(got[0].Positions, want) {
			t.Fatalf("%s: native %+v, script %+v", m, got[0], want)
		}
	}
}

func TestColumnsScriptBestAndProjection(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t, 20*time.Second)
	const B = 1000
	codec := rank.NewColumns(colFamily, B)
	k := e.layout.Keys(shard.Board{Family: "race", Period: "all", DimType: shard.National}, 0, 1)
	run := func(w store.Write, status string) {
		t.Helper()
		w.Keys = k
		r := e.s.Write(ctx, []store.Write{w})[0]
		if r.Err != nil || string(r.Status) != status {
			t.Fatalf("%s %s: status %q err %v, want %q", w.EventID, w.Member, r.Status, r.Err, status)
		}
	}
	want := func(zs ...redis.Z) {
		t.Helper()
		got := zset(t, e, k)
		if !reflect.DeepEqual(got, zs) {
			t.Fatalf("zset %v, want %v", got, zs)
		}
	}
	run(colWrite(codec, store.KindApply, "e1", "u1", "gt", 50, 3, 300, 1), "ok")
	run(colWrite(codec, store.KindApply, "e2", "u1", "gt", 50, 4, 300, 1), "same") // equal tuple: not better
	run(colWrite(codec, store.KindApply, "e3", "u1", "gt", 40, 5, 10, 9), "same")  // fewer points
	run(colWrite(codec, store.KindApply, "e4", "u1", "gt", 50, 6, 200, 0), "ok")   // faster time wins
	want(redis.Z{Score: 50, Member: codec.Stored([]int64{200, 0}, 6, "u1")})
	// Tie first: u2 reaches the same tuple later and ranks behind u1.
	run(colWrite(codec, store.KindApply, "e5", "u2", "gt", 50, 7, 200, 0), "ok")
	want(redis.Z{Score: 50, Member: codec.Stored([]int64{200, 0}, 6, "u1")}, redis.Z{Score: 50, Member: codec.Stored([]int64{200, 0}, 7, "u2")})

	// Projections: versioned; the seq stays when points and columns stay.
	p := func(user string, version, total, seq int64, vals ...int64) store.Write {
		w := colWrite(codec, store.KindProject, "", user, "", total, seq, vals...)
		w.Version = version
		return w
	}
	run(p("u9", 1, 70, 10, 5, 5), "ok")
	run(p("u9", 1, 80, 11, 5, 5), "stale")
	run(p("u9", 2, 70, 12, 5, 5), "ok")
	want(redis.Z{Score: 70, Member: codec.Stored([]int64{5, 5}, 10, "u9")},
		redis.Z{Score: 50, Member: codec.Stored([]int64{200, 0}, 6, "u1")}, redis.Z{Score: 50, Member: codec.Stored([]int64{200, 0}, 7, "u2")})
	run(p("u9", 3, 70, 13, 5, 6), "ok")
	want(redis.Z{Score: 70, Member: codec.Stored([]int64{5, 6}, 13, "u9")},
		redis.Z{Score: 50, Member: codec.Stored([]int64{200, 0}, 6, "u1")}, redis.Z{Score: 50, Member: codec.Stored([]int64{200, 0}, 7, "u2")})
}

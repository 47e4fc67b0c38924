package store_test

import (
	"context"
	"fmt"
	"reflect"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/store"
)

// batchBoard writes members u000… onto a 16-shard board (ties included) and
// returns its shard keys.
func batchBoard(t testing.TB, e *env, members int) []string {
	t.Helper()
	ctx := ctxT(t, 20*time.Second)
	b := shard.Board{Family: "learning", Period: "2026-W34", DimType: shard.National}
	const n = 16
	var ws []store.Write
	for j := 0; j < members; j++ {
		m := fmt.Sprintf("u%03d", j)
		ws = append(ws, store.Write{Kind: store.KindApply, Keys: e.layout.Keys(b, shard.Of(m, n), n),
			EventID: "e" + m, Member: m, Mode: "sum", Value: int64(j%9) * 10, MaxPoints: 1 << 40, NowMs: 1, Rules: "r1"})
	}
	for i, r := range e.s.Write(ctx, ws) {
		if r.Err != nil {
			t.Fatalf("write %d: %v", i, r.Err)
		}
	}
	keys := make([]string, n)
	for i := range keys {
		keys[i] = e.layout.ZKey(b, i, n)
	}
	return keys
}

// TestReadShardsMatchesPerShardReads: one pipelined batch of every read kind
// — native ZREVRANGE seeks, scripted seeks, position probes, ZMSCORE with an
// absent member, ZCOUNT, ZCARD — answers exactly what the per-shard calls
// answer, each reply in its read's slot.
func TestReadShardsMatchesPerShardReads(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	keys := batchBoard(t, e, 200)
	ctx := ctxT(t, 20*time.Second)
	more := int64(30)
	var reads []store.ShardRead
	for i, k := range keys {
		reads = append(reads,
			store.ShardRead{Kind: store.ReadSeek, Key: k, Seek: store.SeekArgs{Mode: store.SeekTop, Limit: 5}},
			store.ShardRead{Kind: store.ReadSeek, Key: k, Seek: store.SeekArgs{Mode: store.SeekAfter, Score: 40, Member: "u100", Limit: 4, MoreMin: &more}},
			store.ShardRead{Kind: store.ReadPositions, Key: k, Probes: []store.Probe{{Score: 40, Member: "u050", MoreMin: 41, SameMin: 40}, {Score: 0, Member: "zz", MoreMin: 1, SameMin: 0}}},
			store.ShardRead{Kind: store.ReadScores, Key: k, Members: []string{fmt.Sprintf("u%03d", i), "absent"}},
			store.ShardRead{Kind: store.ReadCount, Key: k, Lo: 20, Hi: 50},
			store.ShardRead{Kind: store.ReadCard, Key: k},
		)
	}
	if !reads[0].Seek.Native() || reads[1].Seek.Native() {
		t.Fatal("the first seek must be native and the second scripted")
	}
	out := make([]store.ShardReply, len(reads))
	e.s.ReadShards(ctx, reads, false, out)
	for j, r := range reads {
		var want store.ShardReply
		switch r.Kind {
		case store.ReadSeek:
			want.Seek, want.Err = e.s.Seek(ctx, r.Key, r.Seek, false)
		case store.ReadPositions:
			want.Positions, want.Err = e.s.Positions(ctx, r.Key, r.Probes, false)
		case store.ReadScores:
			want.Scores, want.Found, want.Err = e.s.Scores(ctx, r.Key, r.Members, false)
		case store.ReadCount:
			want.N, want.Err = e.s.Count(ctx, r.Key, r.Lo, r.Hi, false)
		case store.ReadCard:
			want.N, want.Err = e.s.Card(ctx, r.Key, false)
		}
		if want.Err != nil {
			t.Fatalf("read %d per shard: %v", j, want.Err)
		}
		if r.Kind == store.ReadSeek && len(want.Seek.Items) == 0 {
			want.Seek.Items = []rank.Item{}
		}
		if r.Kind == store.ReadSeek && len(out[j].Seek.Items) == 0 {
			out[j].Seek.Items = []rank.Item{}
		}
		if !reflect.DeepEqual(out[j], want) {
			t.Fatalf("read %d (%+v):\n batch %+v\n alone %+v", j, r, out[j], want)
		}
	}
	if out[3].Found[1] || !out[3].Found[0] {
		t.Fatalf("ZMSCORE found = %v, want [true false]", out[3].Found)
	}
}

// TestReadShardsNoScript: a node with an empty script cache answers NOSCRIPT
// to a pipelined EVALSHA; ReadShards re-runs those reads alone (EVAL) and
// answers them. Not parallel (it flushes the scripts), like
// TestNoScriptRecoveredInPipeline.
func TestReadShardsNoScript(t *testing.T) {
	e := newEnv(t)
	keys := batchBoard(t, e, 64)
	ctx := ctxT(t, 20*time.Second)
	reads := make([]store.ShardRead, len(keys))
	for i, k := range keys {
		reads[i] = store.ShardRead{Kind: store.ReadSeek, Key: k, Seek: store.SeekArgs{Mode: store.SeekAfter, Score: 1 << 30, Member: "", Limit: 3}}
	}
	want := make([]store.ShardReply, len(keys))
	e.s.ReadShards(ctx, reads, false, want)
	before := counterValue(t, e.reg, noscriptMetric)
	flushScripts(t, ctx, e.cc)
	got := make([]store.ShardReply, len(keys))
	e.s.ReadShards(ctx, reads, false, got)
	for i := range got {
		if got[i].Err != nil || !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("shard %d after SCRIPT FLUSH: %+v (%v), want %+v", i, got[i], got[i].Err, want[i])
		}
	}
	if d := counterValue(t, e.reg, noscriptMetric) - before; d < 1 {
		t.Logf("no NOSCRIPT met: another process reloaded the scripts right after the flush")
	}
	if err := store.Preload(ctx, e.c); err != nil {
		t.Fatalf("Preload: %v", err)
	}
}

// seedProbeBoard fills key with n members m000… in points groups of 10
// scores with equal scores inside (and a negative group) and returns each
// member's score.
func seedProbeBoard(t *testing.T, ctx context.Context, e *env, key string, n int) map[string]int64 {
	t.Helper()
	var zs []redis.Z
	score := map[string]int64{}
	for j := 0; j < n; j++ {
		m := fmt.Sprintf("m%03d", (j*37)%n)
		s := int64(j%4)*10 + int64(j%3)
		if j%11 == 0 {
			s = -25 // a negative group
		}
		zs = append(zs, redis.Z{Score: float64(s), Member: m})
		score[m] = s
	}
	if err := e.c.ZAdd(ctx, key, zs...).Err(); err != nil {
		t.Fatal(err)
	}
	return score
}

// probeIn is the probe of (score, member) with the points group of an
// encoding of base b (b = 0: the group is the score itself).
func probeIn(s int64, m string, b int64) store.Probe {
	if b == 0 {
		return store.Probe{Score: s, Member: m, MoreMin: s + 1, SameMin: s}
	}
	lo := s - ((s%b)+b)%b
	return store.Probe{Score: s, Member: m, MoreMin: lo + b, SameMin: lo}
}

// TestNativeProbeMatchesScript: a native position probe (ReadPlace: ZCARD,
// ZCOUNT and a bounded read of the probe's points group) answers exactly
// what position.lua answers — present and absent members, equal scores,
// points groups with several scores (tie "first") and with one (tie
// "member") — or says Open exactly when the points group holds band members
// or more, in which case it claims nothing.
func TestNativeProbeMatchesScript(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t, 20*time.Second)
	key := e.layout.ZKey(shard.Board{Family: "place", Period: "all", DimType: shard.National}, 0, 1)
	score := seedProbeBoard(t, ctx, e, key, 80)
	var probes []store.Probe
	for _, b := range []int64{0, 10} {
		for m, s := range score {
			probes = append(probes, probeIn(s, m, b))
		}
		for _, s := range []int64{-30, -25, 0, 1, 5, 11, 21, 22, 32, 99} {
			for _, m := range []string{"", "m040", "m0405", "zz"} {
				probes = append(probes, probeIn(s, m, b))
			}
		}
	}
	groupSize := func(p store.Probe) int {
		n := 0
		for _, s := range score {
			if s >= p.SameMin && s < p.MoreMin {
				n++
			}
		}
		return n
	}
	opened := 0
	for _, band := range []int{1, 2, 3, 8, 0} {
		var reads []store.ShardRead
		for _, p := range probes {
			reads = append(reads, store.ShardRead{Kind: store.ReadPlace, Key: key, Probes: []store.Probe{p}, Band: band})
		}
		// and all of them at once per group of four
		for i := 0; i+4 <= len(probes); i += 4 {
			reads = append(reads, store.ShardRead{Kind: store.ReadPlace, Key: key, Probes: probes[i : i+4], Band: band})
		}
		out := make([]store.ShardReply, len(reads))
		e.s.ReadShards(ctx, reads, false, out)
		for i, r := range reads {
			if out[i].Err != nil {
				t.Fatalf("band %d probe %+v: %v", band, r.Probes, out[i].Err)
			}
			limit := band
			if limit == 0 {
				limit = store.DefaultBand
			}
			open := false
			for _, p := range r.Probes {
				open = open || groupSize(p) >= limit
			}
			if out[i].Open != open {
				t.Fatalf("band %d probes %+v: open %v, want %v", band, r.Probes, out[i].Open, open)
			}
			if open {
				opened++
				if out[i].Positions.Ahead != nil {
					t.Fatalf("band %d: an open reply claims positions %+v", band, out[i].Positions)
				}
				continue
			}
			want, err := e.s.Positions(ctx, key, r.Probes, false)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(out[i].Positions, want) {
				t.Fatalf("band %d probes %+v:\n native %+v\n script %+v", band, r.Probes, out[i].Positions, want)
			}
		}
	}
	if opened == 0 {
		t.Fatal("no probe met a points group larger than its band")
	}
	// A probe outside its own points group is refused, not answered wrong.
	out := make([]store.ShardReply, 1)
	e.s.ReadShards(ctx, []store.ShardRead{{Kind: store.ReadPlace, Key: key, Probes: []store.Probe{{Score: 5, MoreMin: 5, SameMin: 0}}}}, false, out)
	if out[0].Err == nil {
		t.Fatal("a probe with Score ≥ MoreMin was answered")
	}
}

// TestNativeWindowMatchesScript: a native around-me read (ReadWindow: the
// points group and the nearest entries above and below the score) answers
// exactly what seek.lua's around mode answers — start, more, the entries
// before and after — for present and absent members, equal scores, several
// radii, or says Open exactly when the points group fills the band.
func TestNativeWindowMatchesScript(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t, 20*time.Second)
	key := e.layout.ZKey(shard.Board{Family: "window", Period: "all", DimType: shard.National}, 0, 1)
	score := seedProbeBoard(t, ctx, e, key, 60)
	var probes []store.Probe
	for _, b := range []int64{0, 10} {
		for m, s := range score {
			probes = append(probes, probeIn(s, m, b))
			if b == 0 { // sort columns: more counts those above (s, a better member key)
				p := probeIn(s, m, b)
				p.MoreMember = m + "~"
				probes = append(probes, p)
			}
		}
		for _, s := range []int64{-30, -25, 0, 1, 11, 21, 32, 99} {
			for _, m := range []string{"", "m030", "m0305", "zz"} {
				probes = append(probes, probeIn(s, m, b))
			}
		}
	}
	groupSize := func(p store.Probe) int {
		n := 0
		for _, s := range score {
			if s >= p.SameMin && s < p.MoreMin {
				n++
			}
		}
		return n
	}
	opened, compared := 0, 0
	for _, band := range []int{1, 3, 0} {
		for _, radius := range []int{0, 1, 2, 5, 70} {
			reads := make([]store.ShardRead, len(probes))
			for i, p := range probes {
				reads[i] = store.ShardRead{Kind: store.ReadWindow, Key: key, Probes: []store.Probe{p}, Seek: store.SeekArgs{Limit: radius}, Band: band}
			}
			out := make([]store.ShardReply, len(reads))
			e.s.ReadShards(ctx, reads, false, out)
			limit := band
			if limit == 0 {
				limit = store.DefaultBand
			}
			for i, p := range probes {
				if out[i].Err != nil {
					t.Fatalf("band %d radius %d probe %+v: %v", band, radius, p, out[i].Err)
				}
				if open := groupSize(p) >= limit; out[i].Open != open {
					t.Fatalf("band %d probe %+v: open %v, want %v", band, p, out[i].Open, open)
				}
				if out[i].Open {
					opened++
					if out[i].Seek.Items != nil || out[i].Seek.Start != 0 {
						t.Fatalf("band %d: an open reply claims a window %+v", band, out[i].Seek)
					}
					continue
				}
				a := store.SeekArgs{Mode: store.SeekAround, Score: p.Score, Member: p.Member, Limit: radius, MoreMin: &p.MoreMin}
				if p.MoreMember != "" {
					a.MoreMin, a.MoreMember = &p.Score, p.MoreMember
				}
				want, err := e.s.Seek(ctx, key, a, false)
				if err != nil {
					t.Fatal(err)
				}
				got := out[i].Seek
				if len(got.Items) == 0 && len(want.Items) == 0 {
					got.Items, want.Items = nil, nil
				}
				if !reflect.DeepEqual(got, want) {
					t.Fatalf("band %d radius %d probe %+v:\n native %+v\n script %+v", band, radius, p, got, want)
				}
				compared++
			}
		}
	}
	if opened == 0 || compared == 0 {
		t.Fatalf("%d open and %d compared windows: want both", opened, compared)
	}
}

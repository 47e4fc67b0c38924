package store_test

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/store"
)

// refBoard is the Go reference of one sorted set in ZREVRANGE order.
type refBoard []rank.Item

func (r refBoard) ahead(p rank.Item) int {
	n := 0
	for _, x := range r {
		if rank.Before(x, p) {
			n++
		}
	}
	return n
}

func (r refBoard) has(p rank.Item) bool { return slices.Contains(r, p) }

func (r refBoard) atLeast(min int64) int64 {
	var n int64
	for _, x := range r {
		if x.Score >= min {
			n++
		}
	}
	return n
}

func TestSeekAndPositionsOnLargeTieGroup(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t, 20*time.Second)
	key := e.layout.ZKey(shard.Board{Family: "seek", Period: "all", DimType: shard.National}, 0, 1)

	// Ids whose byte order differs from a case-insensitive or locale order.
	specials := []string{"B", "a", "_", "-", ".", "@", "Z9", "b", "A0", "0", "zz", "Z", "a-", "a.", "a@", "a_"}
	absentIDs := []string{"zzzzzzzzzzzzzz", "--------------", "Mmmmmmmmmmmmmmm", "a0b1c2d3e4f5g6", ""}
	others := map[string]int64{"top1": 100, "top2": 5, "x": 1, "B0": 1, "low1": -1, "a0": -1, "low2": -50}

	const groupSize = 20000
	alphabet := []byte("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_.@-")
	rng := rand.New(rand.NewPCG(1, 2))
	group := map[string]bool{}
	for _, s := range specials {
		group[s] = true
	}
	for len(group) < groupSize {
		b := make([]byte, 1+rng.IntN(10)) // ≤ 10 bytes: absentIDs cannot be drawn
		for i := range b {
			b[i] = alphabet[rng.IntN(len(alphabet))]
		}
		if _, other := others[string(b)]; !other {
			group[string(b)] = true
		}
	}

	var ref refBoard
	for m := range group {
		ref = append(ref, rank.Item{Score: 0, Member: m})
	}
	for m, s := range others {
		ref = append(ref, rank.Item{Score: s, Member: m})
	}
	slices.SortFunc(ref, func(a, b rank.Item) int {
		switch {
		case rank.Before(a, b):
			return -1
		case rank.Before(b, a):
			return 1
		}
		return 0
	})

	// Load in batches of 1000 members, in one pipeline.
	pipe := e.c.Pipeline()
	for i := 0; i < len(ref); i += 1000 {
		zs := make([]redis.Z, 0, 1000)
		for _, it := range ref[i:min(i+1000, len(ref))] {
			zs = append(zs, redis.Z{Score: float64(it.Score), Member: it.Member})
		}
		pipe.ZAdd(ctx, key, zs...)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatalf("ZADD: %v", err)
	}
	if n, err := e.c.ZCard(ctx, key).Result(); err != nil || n != int64(len(ref)) {
		t.Fatalf("ZCARD = %d, %v; want %d", n, err, len(ref))
	}
	// The reference agrees with Redis at a few places.
	for _, i := range []int{0, 1, 3, 4, 5, 10000, len(ref) - 4, len(ref) - 1} {
		got, err := e.c.ZRevRangeWithScores(ctx, key, int64(i), int64(i)).Result()
		if err != nil || len(got) != 1 || got[0].Member != ref[i].Member || int64(got[0].Score) != ref[i].Score {
			t.Fatalf("ZREVRANGE %d %d = %v, %v; reference has %+v", i, i, got, err, ref[i])
		}
	}

	groupStart := ref.ahead(rank.Item{Score: 0, Member: "\xff"})
	type probe struct {
		name string
		it   rank.Item
	}
	probes := []probe{
		{"first of the group", ref[groupStart]},
		{"second of the group", ref[groupStart+1]},
		{"middle of the group", ref[groupStart+groupSize/2]},
		{"last of the group", ref[groupStart+groupSize-1]},
		{"present above the group", rank.Item{Score: 5, Member: "top2"}},
		{"present below the group", rank.Item{Score: -1, Member: "a0"}},
		{"tie group of two above", rank.Item{Score: 1, Member: "x"}},
		{"present member probed at another score", rank.Item{Score: 1, Member: "B"}},
		{"absent above everything", rank.Item{Score: 200, Member: "q"}},
		{"absent below everything", rank.Item{Score: -100, Member: "q"}},
		{"absent between groups", rank.Item{Score: -1, Member: "zzzzzzzzzzzzzz"}},
	}
	for _, s := range specials {
		probes = append(probes, probe{fmt.Sprintf("present %q", s), rank.Item{Score: 0, Member: s}})
	}
	for _, s := range absentIDs {
		probes = append(probes, probe{fmt.Sprintf("absent %q", s), rank.Item{Score: 0, Member: s}})
	}
	if probes[3].it.Member != "-" {
		t.Fatalf("last of the group is %q, want \"-\" (the smallest id)", probes[3].it.Member)
	}

	check := func(t *testing.T, what string, got store.SeekResult, wantStart int, want []rank.Item, wantMore int64) {
		t.Helper()
		if got.Start != int64(wantStart) {
			t.Errorf("%s: start %d, want %d", what, got.Start, wantStart)
		}
		if got.More != wantMore {
			t.Errorf("%s: more %d, want %d", what, got.More, wantMore)
		}
		if !slices.Equal(got.Items, want) {
			t.Errorf("%s: items\n got %v\nwant %v", what, got.Items, want)
		}
	}

	for _, p := range probes {
		t.Run(p.name, func(t *testing.T) {
			t.Parallel()
			a := ref.ahead(p.it)
			const limit = 7

			start := a
			if ref.has(p.it) {
				start++
			}
			moreMin := p.it.Score + 1
			r, err := e.s.Seek(ctx, key, store.SeekArgs{Mode: store.SeekAfter, Score: p.it.Score, Member: p.it.Member, Limit: limit, MoreMin: &moreMin}, false)
			if err != nil {
				t.Fatalf("Seek after: %v", err)
			}
			check(t, "after", r, start, ref[start:min(start+limit, len(ref))], ref.atLeast(moreMin))

			bs := max(0, a-limit)
			r, err = e.s.Seek(ctx, key, store.SeekArgs{Mode: store.SeekBefore, Score: p.it.Score, Member: p.it.Member, Limit: limit}, false)
			if err != nil {
				t.Fatalf("Seek before: %v", err)
			}
			check(t, "before", r, bs, ref[bs:a], -1)

			// stop_min ends the page at the first score below it.
			stop := p.it.Score
			r, err = e.s.Seek(ctx, key, store.SeekArgs{Mode: store.SeekAfter, Score: p.it.Score, Member: p.it.Member, Limit: 3, StopMin: &stop}, false)
			if err != nil {
				t.Fatalf("Seek after with stop_min: %v", err)
			}
			var want []rank.Item
			for _, it := range ref[start:min(start+3, len(ref))] {
				if it.Score < stop {
					break
				}
				want = append(want, it)
			}
			check(t, "after stop_min", r, start, want, -1)
		})
	}

	t.Run("positions of every probe in one call", func(t *testing.T) {
		t.Parallel()
		ps := make([]store.Probe, len(probes))
		for i, p := range probes {
			ps[i] = store.Probe{Score: p.it.Score, Member: p.it.Member, MoreMin: p.it.Score + 1, SameMin: p.it.Score}
		}
		got, err := e.s.Positions(ctx, key, ps, false)
		if err != nil {
			t.Fatalf("Positions: %v", err)
		}
		if got.Card != int64(len(ref)) {
			t.Errorf("card %d, want %d", got.Card, len(ref))
		}
		for i, p := range probes {
			if want := int64(ref.ahead(p.it)); got.Ahead[i] != want {
				t.Errorf("%s: ahead %d, want %d", p.name, got.Ahead[i], want)
			}
			if want := ref.atLeast(p.it.Score + 1); got.More[i] != want {
				t.Errorf("%s: more %d, want %d", p.name, got.More[i], want)
			}
			if want := ref.atLeast(p.it.Score); got.AtLeast[i] != want {
				t.Errorf("%s: at least %d, want %d", p.name, got.AtLeast[i], want)
			}
		}
	})

	t.Run("top and le", func(t *testing.T) {
		t.Parallel()
		r, err := e.s.Seek(ctx, key, store.SeekArgs{Mode: store.SeekTop, Limit: 10}, false)
		if err != nil {
			t.Fatal(err)
		}
		check(t, "top", r, 0, ref[:10], -1)
		for _, s := range []int64{0, 1, -1, -2, 1000} {
			start := int(ref.atLeast(s + 1))
			r, err := e.s.Seek(ctx, key, store.SeekArgs{Mode: store.SeekLE, Score: s, Limit: 5}, false)
			if err != nil {
				t.Fatal(err)
			}
			check(t, fmt.Sprintf("le %d", s), r, start, ref[start:min(start+5, len(ref))], -1)
		}
	})
}

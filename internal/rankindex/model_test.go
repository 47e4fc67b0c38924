package rankindex

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"

	"github.com/rankgate/rankgate/internal/rank"
)

// model is the naive reference: a map from id to entry, sorted on demand.
type model struct {
	prefixLen int
	m         map[string]rank.Item
}

func newModel(prefixLen int) *model { return &model{prefixLen: prefixLen, m: map[string]rank.Item{}} }

func (r *model) id(member string) string {
	if r.prefixLen > 0 && len(member) > r.prefixLen {
		return member[r.prefixLen:]
	}
	return member
}

func (r *model) upsert(member string, score int64) bool {
	id := r.id(member)
	if old, ok := r.m[id]; ok && old == (rank.Item{Score: score, Member: member}) {
		return false
	}
	r.m[id] = rank.Item{Score: score, Member: member}
	return true
}

func (r *model) removeID(id string) bool {
	_, ok := r.m[id]
	delete(r.m, id)
	return ok
}

func (r *model) load(items []rank.Item) {
	r.m = map[string]rank.Item{}
	for _, it := range items {
		r.m[r.id(it.Member)] = it
	}
}

func (r *model) removeIf(drop func(string) bool) int {
	n := 0
	for id := range r.m {
		if drop(id) {
			delete(r.m, id)
			n++
		}
	}
	return n
}

func (r *model) sorted() []rank.Item {
	all := make([]rank.Item, 0, len(r.m))
	for _, it := range r.m {
		all = append(all, it)
	}
	sort.Slice(all, func(i, j int) bool { return rank.Before(all[i], all[j]) })
	return all
}

// checkInvariants verifies the structure itself: blocks sorted, non-empty,
// within maxBlock with capacity maxBlock, keys, lasts, the Fenwick tree, the
// map, the string byte count.
func checkInvariants(t *testing.T, x *Index) {
	t.Helper()
	total := 0
	var prev *rank.Item
	var strBytes int64
	for b, blk := range x.blocks {
		if len(blk) == 0 || len(blk) > x.maxBlock || cap(blk) != x.maxBlock {
			t.Fatalf("block %d: len %d cap %d (maxBlock %d)", b, len(blk), cap(blk), x.maxBlock)
		}
		if len(x.blocks) > 1 && len(blk) < x.minBlock {
			t.Fatalf("block %d of %d: len %d, below minBlock %d", b, len(x.blocks), len(blk), x.minBlock)
		}
		if x.lasts[b] != blk[len(blk)-1] {
			t.Fatalf("block %d: last %v, want %v", b, x.lasts[b], blk[len(blk)-1])
		}
		if got := x.prefix(b); got != total {
			t.Fatalf("block %d: Fenwick prefix %d, want %d", b, got, total)
		}
		for i := range blk {
			it := blk[i].item()
			if blk[i].key != keyOf(it.Member) {
				t.Fatalf("block %d: %v has key %x", b, it, blk[i].key)
			}
			if prev != nil && !rank.Before(*prev, it) {
				t.Fatalf("block %d: %v not before %v", b, *prev, it)
			}
			prev = &it
			strBytes += strSize(it.Member)
			got, ok := x.lookup(x.id(it.Member))
			if !ok || got != it {
				t.Fatalf("map has %v, %v for item %v", got, ok, it)
			}
		}
		if tail := blk[len(blk):cap(blk)]; slices.ContainsFunc(tail, func(e entry) bool { return e != entry{} }) {
			t.Fatalf("block %d keeps entries past its length", b)
		}
		total += len(blk)
	}
	if len(x.lasts) != len(x.blocks) || len(x.fen) != len(x.blocks)+1 {
		t.Fatalf("%d blocks, %d lasts, %d Fenwick cells", len(x.blocks), len(x.lasts), len(x.fen))
	}
	if tail := x.lasts[len(x.lasts):cap(x.lasts)]; slices.ContainsFunc(tail, func(e entry) bool { return e != entry{} }) {
		t.Fatalf("lasts keeps entries past its length")
	}
	mapLen := len(x.ids) + len(x.entries)
	if total != x.n || mapLen != x.n {
		t.Fatalf("n %d, blocks hold %d, map holds %d", x.n, total, mapLen)
	}
	if strBytes != x.strBytes {
		t.Fatalf("strBytes %d, want %d", x.strBytes, strBytes)
	}
}

// compareAll checks every read of x against the reference.
func compareAll(t *testing.T, x *Index, r *model, rng *rand.Rand, members []string, scores int64) {
	t.Helper()
	checkInvariants(t, x)
	want := r.sorted()
	if x.Len() != len(want) {
		t.Fatalf("Len %d, want %d", x.Len(), len(want))
	}
	var got []rank.Item
	x.Each(func(it rank.Item) bool { got = append(got, it); return true })
	if !slices.Equal(got, want) {
		t.Fatalf("Each:\n got %v\nwant %v", got, want)
	}
	ahead := func(p rank.Item) int {
		return sort.Search(len(want), func(i int) bool { return !rank.Before(want[i], p) })
	}
	// Ahead: every present entry, and absent probes.
	for i, it := range want {
		if n := x.Ahead(it); n != i {
			t.Fatalf("Ahead(%v) = %d, want %d", it, n, i)
		}
	}
	for range 20 {
		p := rank.Item{Score: rng.Int64N(scores+4) - scores/2 - 2, Member: members[rng.IntN(len(members))]}
		if n, w := x.Ahead(p), ahead(p); n != w {
			t.Fatalf("Ahead(%v) = %d, want %d", p, n, w)
		}
	}
	countRef := func(lo, hi int64) int {
		n := 0
		for _, it := range want {
			if it.Score >= lo && it.Score <= hi {
				n++
			}
		}
		return n
	}
	for range 10 {
		s := rng.Int64N(scores+4) - scores/2 - 2
		if n, w := x.AtLeast(s), countRef(s, 1<<62); n != w {
			t.Fatalf("AtLeast(%d) = %d, want %d", s, n, w)
		}
		lo, hi := rng.Int64N(scores+4)-scores/2-2, rng.Int64N(scores+4)-scores/2-2
		if n, w := x.Count(lo, hi), countRef(lo, hi); n != w {
			t.Fatalf("Count(%d, %d) = %d, want %d", lo, hi, n, w)
		}
	}
	for i := -1; i <= len(want); i++ {
		it, ok := x.At(i)
		if wantOK := i >= 0 && i < len(want); ok != wantOK || (ok && it != want[i]) {
			t.Fatalf("At(%d) = %v, %v", i, it, ok)
		}
	}
	for range 10 {
		i, n := rng.IntN(len(want)+6)-3, rng.IntN(25)
		prefix := []rank.Item{{Score: 7, Member: "dst"}}
		got := x.AppendFrom(slices.Clone(prefix), i, n)
		w := slices.Clone(prefix)
		for p := i; p < i+n && p < len(want); p++ {
			if p >= 0 {
				w = append(w, want[p])
			}
		}
		if !slices.Equal(got, w) {
			t.Fatalf("AppendFrom(%d, %d) = %v, want %v", i, n, got, w)
		}
	}
	for _, m := range members {
		id := r.id(m)
		it, ok := x.Get(id)
		w, wok := r.m[id]
		if ok != wok || (ok && it != w) {
			t.Fatalf("Get(%q) = %v, %v; want %v, %v", id, it, ok, w, wok)
		}
	}
}

// universe makes the members of a random run: ids from a small alphabet
// (many are byte-prefixes of others), some of them longer than 8 bytes
// with a shared first 8 bytes, a few with zero bytes (equal zero-padded
// keys), under a few column prefixes when prefixLen > 0.
func universe(prefixLen, ids int) []string {
	users := []string{"a\x00", "a\x00\x00\x00\x00\x00\x00\x00", "a\x00\x00\x00\x00\x00\x00\x00\x00", "a\x00\x00\x00\x00\x00\x00\x00\x01"}
	for i := 0; len(users) < ids; i++ {
		// a, b, aa, ab, ba, bb, aaa, …
		s, k := "", i+2
		for ; k > 1; k /= 2 {
			s = string(rune('a'+k%2)) + s
		}
		if i%3 == 1 {
			s = "abaabbab" + s // 8 bytes shared with many others
		}
		users = append(users, s)
	}
	users = users[:ids]
	if prefixLen == 0 {
		return users
	}
	var members []string
	for _, p := range []string{"00", "7f", "ff"} {
		for _, u := range users {
			members = append(members, p[:min(prefixLen, 2)]+u)
		}
	}
	return members
}

type runConfig struct {
	prefixLen, maxBlock, ids int
	scores                   int64
	empty                    bool // members may be "" (not produced by rankgate, still exact)
}

func randomRun(t *testing.T, cfg runConfig, seed uint64, ops int) {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	members := universe(cfg.prefixLen, cfg.ids)
	if cfg.empty {
		members = append(members, "")
	}
	x, r := newWithBlock(cfg.prefixLen, cfg.maxBlock), newModel(cfg.prefixLen)
	score := func() int64 { return rng.Int64N(cfg.scores) - cfg.scores/2 }
	for op := range ops {
		m := members[rng.IntN(len(members))]
		switch k := rng.IntN(100); {
		case k < 60:
			s := score()
			if got, want := x.Upsert(m, s), r.upsert(m, s); got != want {
				t.Fatalf("op %d: Upsert(%q, %d) = %v, want %v", op, m, s, got, want)
			}
		case k < 75:
			if got, want := x.Remove(m), r.removeID(r.id(m)); got != want {
				t.Fatalf("op %d: Remove(%q) = %v, want %v", op, m, got, want)
			}
		case k < 90:
			id := r.id(m)
			if got, want := x.RemoveID(id), r.removeID(id); got != want {
				t.Fatalf("op %d: RemoveID(%q) = %v, want %v", op, id, got, want)
			}
		case k < 96:
			mod, rem := rng.IntN(4)+1, rng.IntN(4)
			drop := func(id string) bool {
				if id == "" {
					return rem == 0
				}
				return (len(id)+int(id[len(id)-1]))%mod == rem
			}
			if got, want := x.RemoveIf(drop), r.removeIf(drop); got != want {
				t.Fatalf("op %d: RemoveIf = %d, want %d", op, got, want)
			}
		default:
			items := make([]rank.Item, rng.IntN(len(members)*2))
			for i := range items {
				items[i] = rank.Item{Score: score(), Member: members[rng.IntN(len(members))]}
			}
			x.Load(items)
			r.load(items)
		}
		if op%7 == 0 || op == ops-1 {
			compareAll(t, x, r, rng, members, cfg.scores)
		}
	}
}

// TestRandomAgainstModel runs thousands of random operations (many equal
// scores, a small member alphabet) against the naive reference, with the
// default block size and with tiny blocks that split and merge constantly.
func TestRandomAgainstModel(t *testing.T) {
	t.Parallel()
	for _, cfg := range []runConfig{
		{prefixLen: 0, maxBlock: 2, ids: 14, scores: 5},
		{prefixLen: 0, maxBlock: 3, ids: 40, scores: 7},
		{prefixLen: 0, maxBlock: 4, ids: 200, scores: 9},
		{prefixLen: 0, maxBlock: 8, ids: 300, scores: 40},
		{prefixLen: 2, maxBlock: 2, ids: 10, scores: 5},
		{prefixLen: 2, maxBlock: 5, ids: 100, scores: 6},
		{prefixLen: 2, maxBlock: 16, ids: 400, scores: 30},
		{prefixLen: 0, maxBlock: defaultMaxBlock, ids: 2000, scores: 50},
		{prefixLen: 2, maxBlock: defaultMaxBlock, ids: 1500, scores: 11},
		{prefixLen: 0, maxBlock: 4, ids: 30, scores: 5, empty: true},
		{prefixLen: 2, maxBlock: 3, ids: 30, scores: 5, empty: true},
	} {
		for seed := uint64(1); seed <= 3; seed++ {
			t.Run(fmt.Sprintf("prefix%d/block%d/ids%d/seed%d", cfg.prefixLen, cfg.maxBlock, cfg.ids, seed), func(t *testing.T) {
				t.Parallel()
				ops := 3000
				if cfg.ids > 1000 {
					ops = 1500 // each check is O(N log N): fewer, larger runs
				}
				randomRun(t, cfg, seed, ops)
			})
		}
	}
}

// FuzzIndex reads the fuzz input as an operation sequence: the first byte
// picks prefixLen and the block size, then each 3 bytes are one operation
// (kind, member, score) run on the index and on the reference.
func FuzzIndex(f *testing.F) {
	f.Add([]byte{0x00, 0, 1, 5, 0, 2, 5, 0, 3, 4, 1, 2, 0})
	f.Add([]byte{0x13, 0, 9, 1, 0, 40, 1, 0, 41, 1, 0, 3, 2, 3, 0, 0, 4, 1, 0})
	f.Add([]byte{0x21, 0, 0, 0, 0, 1, 0, 0, 2, 0, 0, 3, 0, 0, 4, 0, 2, 1, 0, 5, 7, 0})
	f.Add([]byte{0x02, 4, 3, 7, 0, 3, 8, 0, 5, 8, 4, 9, 1, 3, 5, 3, 4, 0, 0, 200})
	f.Fuzz(func(t *testing.T, data []byte) {
		if len(data) == 0 {
			return
		}
		prefixLen, maxBlock := int(data[0]>>4)%3, int(data[0]&0x0f)%6+2
		members := universe(prefixLen, 24)
		x, r := newWithBlock(prefixLen, maxBlock), newModel(prefixLen)
		rng := rand.New(rand.NewPCG(uint64(len(data)), 1))
		data = data[1:]
		for op := 0; len(data) >= 3; op++ {
			kind, m, s := data[0]%6, members[int(data[1])%len(members)], int64(data[2]%16)-8
			data = data[3:]
			switch kind {
			case 0, 1:
				if got, want := x.Upsert(m, s), r.upsert(m, s); got != want {
					t.Fatalf("op %d: Upsert(%q, %d) = %v, want %v", op, m, s, got, want)
				}
			case 2:
				if got, want := x.Remove(m), r.removeID(r.id(m)); got != want {
					t.Fatalf("op %d: Remove(%q) = %v, want %v", op, m, got, want)
				}
			case 3:
				if got, want := x.RemoveID(r.id(m)), r.removeID(r.id(m)); got != want {
					t.Fatalf("op %d: RemoveID = %v, want %v", op, got, want)
				}
			case 4:
				mod := int(s&3) + 1
				drop := func(id string) bool { return len(id)%mod == 0 }
				if got, want := x.RemoveIf(drop), r.removeIf(drop); got != want {
					t.Fatalf("op %d: RemoveIf = %d, want %d", op, got, want)
				}
			case 5:
				var items []rank.Item
				for i := range int(s + 8) {
					items = append(items, rank.Item{Score: int64(i % 3), Member: members[(int(data0(data))+i*7)%len(members)]})
				}
				x.Load(items)
				r.load(items)
			}
			if op%8 == 7 {
				compareAll(t, x, r, rng, members, 16)
			}
		}
		compareAll(t, x, r, rng, members, 16)
	})
}

func data0(b []byte) byte {
	if len(b) == 0 {
		return 0
	}
	return b[0]
}

package merge

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"testing"
)

// item carries its origin so stability can be checked: key is what is
// compared, list and pos identify the element.
type item struct {
	key  int
	list int
	pos  int
}

func byKey(a, b item) bool { return a.key < b.key }

// mkLists builds lists from keys, tagging every element with its origin.
func mkLists(keys ...[]int) [][]item {
	lists := make([][]item, len(keys))
	for i, ks := range keys {
		for j, k := range ks {
			lists[i] = append(lists[i], item{key: k, list: i, pos: j})
		}
	}
	return lists
}

// reference is the specification: a stable sort of the concatenation.
func reference(lists [][]item, limit int) []item {
	var all []item
	for _, l := range lists {
		all = append(all, l...)
	}
	sort.SliceStable(all, func(i, j int) bool { return byKey(all[i], all[j]) })
	if limit >= 0 && limit < len(all) {
		all = all[:limit]
	}
	return all
}

func referenceLast(lists [][]item, n int) []item {
	all := reference(lists, -1)
	if n >= 0 && n < len(all) {
		all = all[len(all)-n:]
	}
	return all
}

func origins(items []item) []string {
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = fmt.Sprintf("%d@%d.%d", it.key, it.list, it.pos)
	}
	return out
}

func TestMerge(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		lists [][]item
		limit int
		want  []int // keys, in order; origins are checked against reference
	}{
		{name: "nil input", lists: nil, limit: 10, want: nil},
		{name: "no lists", lists: [][]item{}, limit: -1, want: nil},
		{name: "all lists empty", lists: mkLists(nil, []int{}, nil), limit: 5, want: nil},
		{name: "one list", lists: mkLists([]int{1, 2, 3}), limit: -1, want: []int{1, 2, 3}},
		{name: "one list cut", lists: mkLists([]int{1, 2, 3}), limit: 2, want: []int{1, 2}},
		{name: "one non-empty among empties", lists: mkLists(nil, []int{4, 5}, nil, nil), limit: -1, want: []int{4, 5}},
		{name: "two lists", lists: mkLists([]int{1, 3, 5}, []int{2, 4, 6}), limit: -1, want: []int{1, 2, 3, 4, 5, 6}},
		{name: "two lists cut", lists: mkLists([]int{1, 3, 5}, []int{2, 4, 6}), limit: 4, want: []int{1, 2, 3, 4}},
		{name: "two lists one exhausted early", lists: mkLists([]int{1}, []int{2, 3, 4}), limit: -1, want: []int{1, 2, 3, 4}},
		{name: "three lists", lists: mkLists([]int{1, 4, 7}, []int{2, 5, 8}, []int{3, 6, 9}), limit: -1, want: []int{1, 2, 3, 4, 5, 6, 7, 8, 9}},
		{name: "duplicates across lists", lists: mkLists([]int{1, 2, 2, 3}, []int{2, 2}, []int{0, 2, 4}), limit: -1, want: []int{0, 1, 2, 2, 2, 2, 2, 3, 4}},
		{name: "all equal keys keep list order", lists: mkLists([]int{7, 7}, []int{7}, []int{7, 7}, []int{7}), limit: -1, want: []int{7, 7, 7, 7, 7, 7}},
		{name: "limit zero", lists: mkLists([]int{1, 2}, []int{3}, []int{4}), limit: 0, want: nil},
		{name: "limit larger than total", lists: mkLists([]int{1, 2}, []int{3}, []int{0}), limit: 100, want: []int{0, 1, 2, 3}},
		{name: "negative limit means all", lists: mkLists([]int{5}, []int{1, 9}, []int{3}), limit: -7, want: []int{1, 3, 5, 9}},
		{name: "limit equals total", lists: mkLists([]int{5}, []int{1, 9}, []int{3}), limit: 4, want: []int{1, 3, 5, 9}},
		{name: "many lists with empties", lists: mkLists(nil, []int{3}, nil, []int{1, 4}, []int{}, []int{2}, []int{0, 5}), limit: -1, want: []int{0, 1, 2, 3, 4, 5}},
		{name: "one list left after others run out", lists: mkLists([]int{1}, []int{2}, []int{0, 3, 4, 5, 6}), limit: 6, want: []int{0, 1, 2, 3, 4, 5}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := Merge(nil, tc.lists, tc.limit, byKey)
			keys := make([]int, len(got))
			for i, it := range got {
				keys[i] = it.key
			}
			if !slices.Equal(keys, tc.want) {
				t.Fatalf("keys = %v, want %v", keys, tc.want)
			}
			if want := reference(tc.lists, tc.limit); !slices.Equal(got, want) {
				t.Fatalf("order = %v, want %v (stable)", origins(got), origins(want))
			}
			// A reused Merger with a non-empty dst gives the same result.
			m := NewMerger(byKey)
			for range 2 {
				dst := []item{{key: -1}, {key: -2}}
				if got2 := m.Merge(dst, tc.lists, tc.limit); !slices.Equal(got2, got) {
					t.Fatalf("Merger.Merge = %v, want %v", origins(got2), origins(got))
				}
			}
		})
	}
}

func TestMergeDoesNotModifyInput(t *testing.T) {
	t.Parallel()
	lists := mkLists([]int{1, 4}, nil, []int{2, 5}, []int{3, 6})
	before := make([][]item, len(lists))
	for i, l := range lists {
		before[i] = slices.Clone(l)
	}
	outer := slices.Clone(lists)
	_ = Merge(nil, lists, -1, byKey)
	_ = Last(nil, lists, 2, byKey)
	for i := range lists {
		if len(lists[i]) != len(outer[i]) || !slices.Equal(lists[i], before[i]) {
			t.Fatalf("list %d changed: %v, was %v", i, lists[i], before[i])
		}
	}
}

func TestMergerDoesNotRetainInput(t *testing.T) {
	t.Parallel()
	m := NewMerger(byKey)
	_ = m.Merge(nil, mkLists([]int{1}, []int{2}, []int{3}), -1)
	for i, l := range m.cur[:cap(m.cur)] {
		if l != nil {
			t.Fatalf("Merger keeps a reference to input list %d", i)
		}
	}
}

func TestLast(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		lists [][]item
		n     int
		want  []int
	}{
		{name: "nil input", lists: nil, n: 3, want: nil},
		{name: "all lists empty", lists: mkLists(nil, nil), n: 3, want: nil},
		{name: "n zero", lists: mkLists([]int{1, 2}), n: 0, want: nil},
		{name: "negative n means all", lists: mkLists([]int{1, 3}, []int{2}), n: -1, want: []int{1, 2, 3}},
		{name: "one list", lists: mkLists([]int{1, 2, 3, 4}), n: 2, want: []int{3, 4}},
		{name: "n larger than total", lists: mkLists([]int{1, 3}, []int{2}), n: 10, want: []int{1, 2, 3}},
		{name: "tail comes from one list", lists: mkLists([]int{1, 2}, []int{3, 4, 5, 6}, []int{0}), n: 3, want: []int{4, 5, 6}},
		{name: "interleaved", lists: mkLists([]int{1, 4, 7}, []int{2, 5, 8}, []int{3, 6, 9}), n: 4, want: []int{6, 7, 8, 9}},
		{name: "ties at the cut keep list order", lists: mkLists([]int{1, 5, 5}, []int{5, 5}, []int{2, 5}), n: 3, want: []int{5, 5, 5}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			got := Last(nil, tc.lists, tc.n, byKey)
			keys := make([]int, len(got))
			for i, it := range got {
				keys[i] = it.key
			}
			if !slices.Equal(keys, tc.want) {
				t.Fatalf("keys = %v, want %v", keys, tc.want)
			}
			if want := referenceLast(tc.lists, tc.n); !slices.Equal(got, want) {
				t.Fatalf("order = %v, want %v", origins(got), origins(want))
			}
		})
	}
}

func TestMergeRandom(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	m := NewMerger(byKey)
	var dst []item
	for iter := range 3000 {
		k := rng.IntN(40)
		if iter%50 == 0 {
			k = 100 + rng.IntN(1100) // also large fan-outs
		}
		keyRange := 1 + rng.IntN(30) // small ranges force many ties
		keys := make([][]int, k)
		for i := range keys {
			n := rng.IntN(12)
			if rng.IntN(4) == 0 {
				n = 0
			}
			for range n {
				keys[i] = append(keys[i], rng.IntN(keyRange))
			}
			slices.Sort(keys[i])
		}
		lists := mkLists(keys...)
		limit := rng.IntN(80) - 10
		want := reference(lists, limit)
		if got := Merge(nil, lists, limit, byKey); !slices.Equal(got, want) {
			t.Fatalf("iter %d: Merge(k=%d, limit=%d) = %v, want %v", iter, k, limit, origins(got), origins(want))
		}
		dst = m.Merge(dst, lists, limit)
		if !slices.Equal(dst, want) {
			t.Fatalf("iter %d: Merger.Merge(k=%d, limit=%d) = %v, want %v", iter, k, limit, origins(dst), origins(want))
		}
		wantLast := referenceLast(lists, limit)
		dst = m.Last(dst, lists, limit)
		if !slices.Equal(dst, wantLast) {
			t.Fatalf("iter %d: Last(k=%d, n=%d) = %v, want %v", iter, k, limit, origins(dst), origins(wantLast))
		}
	}
}

func TestMergerZeroAllocs(t *testing.T) {
	lists := benchLists(16, 100)
	m := NewMerger(entryLess)
	dst := make([]entry, 0, 100)
	dst = m.Merge(dst, lists, 100) // warm-up
	if allocs := testing.AllocsPerRun(100, func() { dst = m.Merge(dst, lists, 100) }); allocs != 0 {
		t.Fatalf("Merger.Merge allocates %v times per call, want 0", allocs)
	}
	if allocs := testing.AllocsPerRun(100, func() { dst = m.Last(dst, lists, 100) }); allocs != 0 {
		t.Fatalf("Merger.Last allocates %v times per call, want 0", allocs)
	}
}

// entry is a board entry, ordered by score descending, then member
// descending (ZREVRANGE order).
type entry struct {
	Score  float64
	Member string
}

func entryLess(a, b entry) bool {
	if a.Score != b.Score {
		return a.Score > b.Score
	}
	return a.Member > b.Member
}

// benchLists returns k lists of n entries each, every list sorted in board
// order, with scores interleaving across lists and some ties.
func benchLists(k, n int) [][]entry {
	rng := rand.New(rand.NewPCG(uint64(k), uint64(n)))
	lists := make([][]entry, k)
	for i := range lists {
		l := make([]entry, n)
		for j := range l {
			l[j] = entry{Score: float64(rng.IntN(10 * n)), Member: fmt.Sprintf("user:%08d", rng.IntN(1_000_000))}
		}
		slices.SortFunc(l, func(a, b entry) int {
			switch {
			case entryLess(a, b):
				return -1
			case entryLess(b, a):
				return 1
			}
			return 0
		})
		lists[i] = l
	}
	return lists
}

func benchMerge(b *testing.B, k, n, limit int) {
	lists := benchLists(k, n)
	b.Run("Merge", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			_ = Merge(nil, lists, limit, entryLess)
		}
	})
	b.Run("Merger", func(b *testing.B) {
		m := NewMerger(entryLess)
		dst := make([]entry, 0, limit)
		b.ReportAllocs()
		for b.Loop() {
			dst = m.Merge(dst, lists, limit)
		}
	})
}

func BenchmarkMergeTop100_16x100(b *testing.B)   { benchMerge(b, 16, 100, 100) }
func BenchmarkMergeTop100_4x100(b *testing.B)    { benchMerge(b, 4, 100, 100) }
func BenchmarkMergeTop100_1024x100(b *testing.B) { benchMerge(b, 1024, 100, 100) }

func BenchmarkLast100_16x100(b *testing.B) {
	lists := benchLists(16, 100)
	m := NewMerger(entryLess)
	dst := make([]entry, 0, 16*100)
	b.ReportAllocs()
	for b.Loop() {
		dst = m.Last(dst, lists, 100)
	}
}

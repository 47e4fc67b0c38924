package rankindex

import (
	"fmt"
	"math/rand/v2"
	"runtime"
	"slices"
	"sort"
	"testing"

	"github.com/rankgate/rankgate/internal/rank"
)

// go test -run '^$' -bench . -benchmem ./internal/rankindex/
//
// Every benchmark works on a board of 1M members ("u%07d", 8-byte ids) with
// scores drawn from 0..100000 (about 10 members per score: many ties),
// built outside the timer.

const (
	benchN      = 1_000_000
	benchScores = 100_001
)

func benchMembers(prefix string, n int) []string {
	out := make([]string, n)
	for i := range out {
		out[i] = fmt.Sprintf("%s%07d", prefix, i)
	}
	return out
}

func benchItems(rng *rand.Rand, members []string) []rank.Item {
	items := make([]rank.Item, len(members))
	for i, m := range members {
		items[i] = rank.Item{Score: rng.Int64N(benchScores), Member: m}
	}
	return items
}

// benchIndex returns an index of 1M members (built with Load) and the
// members in id order.
func benchIndex(b *testing.B, maxBlock int) (*Index, []string) {
	b.Helper()
	rng := rand.New(rand.NewPCG(1, 2))
	members := benchMembers("u", benchN)
	x := newWithBlock(0, maxBlock)
	x.Load(benchItems(rng, members))
	runtime.GC() // the build's garbage is not the timed loop's
	return x, members
}

func benchUpsert(b *testing.B, x *Index, members []string) {
	rng := rand.New(rand.NewPCG(3, 4))
	b.ResetTimer()
	for range b.N {
		x.Upsert(members[rng.IntN(len(members))], rng.Int64N(benchScores))
	}
}

func benchRank(b *testing.B, x *Index, members []string) {
	rng := rand.New(rand.NewPCG(5, 6))
	sum := 0
	b.ResetTimer()
	for range b.N {
		it, _ := x.Get(members[rng.IntN(len(members))])
		sum += x.Ahead(it)
	}
	sink = sum
}

var sink int

// BenchmarkUpsert1M: score updates of random existing members.
func BenchmarkUpsert1M(b *testing.B) {
	x, members := benchIndex(b, defaultMaxBlock)
	benchUpsert(b, x, members)
}

// BenchmarkUpsertNew: inserts of new members into a board of 1M.
func BenchmarkUpsertNew(b *testing.B) {
	x, _ := benchIndex(b, defaultMaxBlock)
	rng := rand.New(rand.NewPCG(7, 8))
	fresh := benchMembers("n", b.N)
	scores := make([]int64, b.N)
	for i := range scores {
		scores[i] = rng.Int64N(benchScores)
	}
	runtime.GC()
	b.ResetTimer()
	for i := range b.N {
		x.Upsert(fresh[i], scores[i])
	}
}

// BenchmarkRank1M: a member's position (Get + Ahead).
func BenchmarkRank1M(b *testing.B) {
	x, members := benchIndex(b, defaultMaxBlock)
	benchRank(b, x, members)
}

// BenchmarkAround1M: a member's position, then the 11 entries around it.
func BenchmarkAround1M(b *testing.B) {
	x, members := benchIndex(b, defaultMaxBlock)
	rng := rand.New(rand.NewPCG(9, 10))
	dst := make([]rank.Item, 0, 11)
	b.ResetTimer()
	for range b.N {
		it, _ := x.Get(members[rng.IntN(len(members))])
		dst = x.AppendFrom(dst[:0], x.Ahead(it)-5, 11)
	}
}

// BenchmarkTop100: the first page of 100.
func BenchmarkTop100(b *testing.B) {
	x, _ := benchIndex(b, defaultMaxBlock)
	dst := make([]rank.Item, 0, 100)
	b.ResetTimer()
	for range b.N {
		dst = x.AppendFrom(dst[:0], 0, 100)
	}
}

// BenchmarkPageAt100000: a page of 100 at offset 100000.
func BenchmarkPageAt100000(b *testing.B) {
	x, _ := benchIndex(b, defaultMaxBlock)
	dst := make([]rank.Item, 0, 100)
	b.ResetTimer()
	for range b.N {
		dst = x.AppendFrom(dst[:0], 100000, 100)
	}
}

// BenchmarkCount1M: the members within a random score band.
func BenchmarkCount1M(b *testing.B) {
	x, _ := benchIndex(b, defaultMaxBlock)
	rng := rand.New(rand.NewPCG(11, 12))
	sum := 0
	b.ResetTimer()
	for range b.N {
		lo := rng.Int64N(benchScores)
		sum += x.Count(lo, lo+rng.Int64N(1000))
	}
	sink = sum
}

// BenchmarkLoad1M: a bulk build from 1M unsorted items.
func BenchmarkLoad1M(b *testing.B) {
	rng := rand.New(rand.NewPCG(13, 14))
	items := benchItems(rng, benchMembers("u", benchN))
	x := New(0)
	runtime.GC()
	b.ResetTimer()
	for range b.N {
		x.Load(items)
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/benchN, "ns/member")
}

func heapAlloc() uint64 {
	runtime.GC()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	return ms.HeapAlloc
}

// BenchmarkBytesPerMember: the Go heap a 1M-member index holds (its member
// strings, map and blocks), measured as the HeapAlloc delta across the build
// after GC; est-B/member is Bytes() / Len.
func BenchmarkBytesPerMember(b *testing.B) {
	builds := []struct {
		name      string
		prefixLen int
		build     func(x *Index, items []rank.Item)
	}{
		{"load", 0, func(x *Index, items []rank.Item) { x.Load(items) }},
		{"upsert", 0, func(x *Index, items []rank.Item) {
			for _, it := range items {
				x.Upsert(it.Member, it.Score)
			}
		}},
		{"load/prefix6", 6, func(x *Index, items []rank.Item) { x.Load(items) }},
		{"upsert/prefix6", 6, func(x *Index, items []rank.Item) {
			for _, it := range items {
				x.Upsert(it.Member, it.Score)
			}
		}},
	}
	for _, bl := range builds {
		b.Run(bl.name, func(b *testing.B) {
			var perMember, est float64
			for range b.N {
				before := heapAlloc()
				x := func() *Index {
					rng := rand.New(rand.NewPCG(15, 16))
					prefix := "u"
					if bl.prefixLen > 0 {
						prefix = "00a1f3u" // 6 bytes of column prefix + the id
					}
					items := benchItems(rng, benchMembers(prefix, benchN))
					x := New(bl.prefixLen)
					bl.build(x, items)
					return x
				}()
				after := heapAlloc()
				perMember = float64(int64(after)-int64(before)) / float64(x.Len())
				est = float64(x.Bytes()) / float64(x.Len())
				runtime.KeepAlive(x)
			}
			b.ReportMetric(perMember, "B/member")
			b.ReportMetric(est, "est-B/member")
		})
	}
}

// BenchmarkBlockSize: upsert and rank at 1M members per block size (how
// defaultMaxBlock was chosen).
func BenchmarkBlockSize(b *testing.B) {
	for _, mb := range []int{128, 256, 512, 1024, 2048} {
		b.Run(fmt.Sprintf("upsert/%d", mb), func(b *testing.B) {
			x, members := benchIndex(b, mb)
			benchUpsert(b, x, members)
		})
		b.Run(fmt.Sprintf("rank/%d", mb), func(b *testing.B) {
			x, members := benchIndex(b, mb)
			benchRank(b, x, members)
		})
	}
}

// sortedSlice is the naive baseline: one sorted []rank.Item in board order
// and a map from member to score. Reads are a binary search; a write moves
// half the slice on average.
type sortedSlice struct {
	items []rank.Item
	score map[string]int64
}

func newSortedSlice(items []rank.Item) *sortedSlice {
	s := &sortedSlice{items: slices.Clone(items), score: make(map[string]int64, len(items))}
	slices.SortFunc(s.items, func(a, b rank.Item) int {
		switch {
		case rank.Before(a, b):
			return -1
		case rank.Before(b, a):
			return 1
		}
		return 0
	})
	for _, it := range items {
		s.score[it.Member] = it.Score
	}
	return s
}

func (s *sortedSlice) ahead(it rank.Item) int {
	return sort.Search(len(s.items), func(i int) bool { return !rank.Before(s.items[i], it) })
}

func (s *sortedSlice) upsert(member string, score int64) {
	if old, ok := s.score[member]; ok {
		i := s.ahead(rank.Item{Score: old, Member: member})
		s.items = slices.Delete(s.items, i, i+1)
	}
	it := rank.Item{Score: score, Member: member}
	s.items = slices.Insert(s.items, s.ahead(it), it)
	s.score[member] = score
}

func benchSortedSlice(b *testing.B) (*sortedSlice, []string) {
	rng := rand.New(rand.NewPCG(1, 2))
	members := benchMembers("u", benchN)
	s := newSortedSlice(benchItems(rng, members))
	runtime.GC()
	return s, members
}

// BenchmarkRankNaiveSortedSlice: a position on the sorted slice (map lookup
// + sort.Search), the baseline of BenchmarkRank1M.
func BenchmarkRankNaiveSortedSlice(b *testing.B) {
	s, members := benchSortedSlice(b)
	rng := rand.New(rand.NewPCG(5, 6))
	sum := 0
	b.ResetTimer()
	for range b.N {
		m := members[rng.IntN(len(members))]
		sum += s.ahead(rank.Item{Score: s.score[m], Member: m})
	}
	sink = sum
}

// BenchmarkUpsertNaiveSortedSlice: a score update on the sorted slice, the
// baseline of BenchmarkUpsert1M.
func BenchmarkUpsertNaiveSortedSlice(b *testing.B) {
	s, members := benchSortedSlice(b)
	rng := rand.New(rand.NewPCG(3, 4))
	b.ResetTimer()
	for range b.N {
		s.upsert(members[rng.IntN(len(members))], rng.Int64N(benchScores))
	}
}

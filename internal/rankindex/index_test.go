package rankindex

import (
	"slices"
	"testing"

	"github.com/rankgate/rankgate/internal/rank"
)

type op struct {
	member string
	score  int64
	remove bool // Remove(member) instead of Upsert
}

// build runs ops on a fresh index (with tiny blocks when maxBlock > 0) and
// checks its structure.
func build(t *testing.T, prefixLen, maxBlock int, ops ...op) *Index {
	t.Helper()
	x := New(prefixLen)
	if maxBlock > 0 {
		x = newWithBlock(prefixLen, maxBlock)
	}
	for _, o := range ops {
		if o.remove {
			x.Remove(o.member)
		} else {
			x.Upsert(o.member, o.score)
		}
	}
	checkInvariants(t, x)
	return x
}

func all(x *Index) []rank.Item {
	var out []rank.Item
	x.Each(func(it rank.Item) bool { out = append(out, it); return true })
	return out
}

func items(pairs ...any) []rank.Item {
	var out []rank.Item
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, rank.Item{Score: int64(pairs[i].(int)), Member: pairs[i+1].(string)})
	}
	return out
}

func ups(pairs ...any) []op {
	var out []op
	for i := 0; i < len(pairs); i += 2 {
		out = append(out, op{member: pairs[i+1].(string), score: int64(pairs[i].(int))})
	}
	return out
}

func TestOrderAndUpsert(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		prefixLen int
		ops       []op
		want      []rank.Item
	}{
		{"empty", 0, nil, nil},
		{"score descending", 0, ups(1, "a", 3, "b", 2, "c"), items(3, "b", 2, "c", 1, "a")},
		{"ties by member bytes descending", 0, ups(5, "b", 5, "a", 5, "c", 5, "B", 5, "aa"),
			items(5, "c", 5, "b", 5, "aa", 5, "a", 5, "B")},
		{"byte prefixes: ab before a", 0, ups(1, "a", 1, "ab", 1, "abc"), items(1, "abc", 1, "ab", 1, "a")},
		{"zero bytes and members longer than 8 bytes", 0,
			ups(1, "a", 1, "a\x00", 1, "a\x00\x00\x00\x00\x00\x00\x00\x00", 1, "abcdefghij", 1, "abcdefghi", 1, "abcdefgh", 1, "abcdefgha"),
			items(1, "abcdefghij", 1, "abcdefghi", 1, "abcdefgha", 1, "abcdefgh", 1, "a\x00\x00\x00\x00\x00\x00\x00\x00", 1, "a\x00", 1, "a")},
		{"negative scores", 0, ups(-1, "a", 0, "b", -7, "c", 2, "d"), items(2, "d", 0, "b", -1, "a", -7, "c")},
		{"score update moves the member", 0, ups(1, "a", 2, "b", 3, "a"), items(3, "a", 2, "b")},
		{"same score again", 0, ups(1, "a", 1, "a"), items(1, "a")},
		{"remove", 0, append(ups(1, "a", 2, "b"), op{member: "a", remove: true}), items(2, "b")},
		{"remove absent", 0, append(ups(1, "a"), op{member: "z", remove: true}), items(1, "a")},
		{"extreme scores", 0, ups(1<<53, "a", -1<<53, "b", 0, "c"), items(1<<53, "a", 0, "c", -1<<53, "b")},
		{"prefix: user moves to another prefix", 2, ups(5, "00u1", 5, "ffu2", 5, "ffu1"), items(5, "ffu2", 5, "ffu1")},
		{"prefix: move and score change", 2, ups(5, "00u1", 9, "00u2", 1, "7fu1"), items(9, "00u2", 1, "7fu1")},
		{"prefix: remove by another stored member", 2, append(ups(5, "00u1", 4, "00u2"), op{member: "ffu1", remove: true}), items(4, "00u2")},
		{"prefix: short member is its own id", 2, ups(1, "u", 2, "00u"), items(2, "00u")},
		{"prefix: members of prefix length are their own ids", 2, ups(1, "00", 2, "7f"), items(2, "7f", 1, "00")},
		{"prefix: a member of prefix length and a longer one", 2, ups(1, "00", 2, "ff00"), items(2, "ff00")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			for _, mb := range []int{0, 2, 3} {
				x := build(t, c.prefixLen, mb, c.ops...)
				if got := all(x); !slices.Equal(got, c.want) {
					t.Fatalf("maxBlock %d: Each = %v, want %v", mb, got, c.want)
				}
				if x.Len() != len(c.want) {
					t.Fatalf("maxBlock %d: Len = %d, want %d", mb, x.Len(), len(c.want))
				}
			}
		})
	}
}

func TestUpsertAndRemoveResults(t *testing.T) {
	t.Parallel()
	x := New(2)
	steps := []struct {
		name string
		do   func() bool
		want bool
	}{
		{"new member", func() bool { return x.Upsert("00u1", 5) }, true},
		{"same entry", func() bool { return x.Upsert("00u1", 5) }, false},
		{"new score", func() bool { return x.Upsert("00u1", 6) }, true},
		{"same score, new prefix", func() bool { return x.Upsert("ffu1", 6) }, true},
		{"remove by old prefix", func() bool { return x.Remove("00u1") }, true},
		{"remove again", func() bool { return x.Remove("ffu1") }, false},
		{"remove id absent", func() bool { return x.RemoveID("u1") }, false},
		{"add back", func() bool { return x.Upsert("7fu1", 1) }, true},
		{"remove id", func() bool { return x.RemoveID("u1") }, true},
	}
	for _, s := range steps {
		if got := s.do(); got != s.want {
			t.Fatalf("%s: got %v, want %v", s.name, got, s.want)
		}
		checkInvariants(t, x)
	}
	if x.Len() != 0 {
		t.Fatalf("Len = %d after removing everything", x.Len())
	}
}

func TestGet(t *testing.T) {
	t.Parallel()
	x0 := build(t, 0, 0, ups(3, "a", 4, "b")...)
	x2 := build(t, 2, 0, ups(3, "00a", 4, "ffa", 1, "7fb")...)
	cases := []struct {
		name string
		x    *Index
		id   string
		want rank.Item
		ok   bool
	}{
		{"present", x0, "a", rank.Item{Score: 3, Member: "a"}, true},
		{"absent", x0, "c", rank.Item{}, false},
		{"prefix: latest stored member", x2, "a", rank.Item{Score: 4, Member: "ffa"}, true},
		{"prefix: other", x2, "b", rank.Item{Score: 1, Member: "7fb"}, true},
		{"prefix: a stored member is not an id", x2, "ffa", rank.Item{}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got, ok := c.x.Get(c.id)
			if ok != c.ok || (ok && got != c.want) {
				t.Fatalf("Get(%q) = %v, %v; want %v, %v", c.id, got, ok, c.want, c.ok)
			}
		})
	}
}

// tieBoard: 5 c, 5 b, 5 ab, 5 a, 3 z, -2 m, -2 k (positions 0..6).
func tieBoard(t *testing.T, maxBlock int) *Index {
	return build(t, 0, maxBlock, ups(5, "a", 5, "ab", 5, "b", 5, "c", 3, "z", -2, "k", -2, "m")...)
}

func TestAhead(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name  string
		probe rank.Item
		want  int
	}{
		{"first", rank.Item{Score: 5, Member: "c"}, 0},
		{"inside a tie", rank.Item{Score: 5, Member: "ab"}, 2},
		{"last of the tie", rank.Item{Score: 5, Member: "a"}, 3},
		{"absent, between tie members", rank.Item{Score: 5, Member: "aa"}, 3},
		{"absent, byte prefix", rank.Item{Score: 5, Member: "abc"}, 2},
		{"absent, above all", rank.Item{Score: 9, Member: "a"}, 0},
		{"absent, below all", rank.Item{Score: -9, Member: "z"}, 7},
		{"absent score between", rank.Item{Score: 4, Member: "zzz"}, 4},
		{"negative tie", rank.Item{Score: -2, Member: "k"}, 6},
		{"empty member sorts last of its score", rank.Item{Score: 5}, 4},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			for _, mb := range []int{0, 2, 3} {
				if got := tieBoard(t, mb).Ahead(c.probe); got != c.want {
					t.Fatalf("maxBlock %d: Ahead(%v) = %d, want %d", mb, c.probe, got, c.want)
				}
			}
		})
	}
	if got := New(0).Ahead(rank.Item{Score: 1, Member: "a"}); got != 0 {
		t.Fatalf("empty index: Ahead = %d", got)
	}
}

func TestAtLeastAndCount(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name   string
		lo, hi int64
		want   int
	}{
		{"whole tie group", 5, 5, 4},
		{"all", -100, 100, 7},
		{"negative band", -2, -2, 2},
		{"band without members", 0, 2, 0},
		{"lo > hi", 5, 3, 0},
		{"hi at the int64 limit", 3, 1<<63 - 1, 5},
		{"lo at the int64 limit", -1 << 63, -2, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			for _, mb := range []int{0, 2} {
				if got := tieBoard(t, mb).Count(c.lo, c.hi); got != c.want {
					t.Fatalf("maxBlock %d: Count(%d, %d) = %d, want %d", mb, c.lo, c.hi, got, c.want)
				}
			}
		})
	}
	atLeast := []struct {
		score int64
		want  int
	}{{6, 0}, {5, 4}, {4, 4}, {3, 5}, {-2, 7}, {-3, 7}}
	for _, c := range atLeast {
		if got := tieBoard(t, 2).AtLeast(c.score); got != c.want {
			t.Errorf("AtLeast(%d) = %d, want %d", c.score, got, c.want)
		}
	}
	// An empty member sorts last of its score and still counts.
	x := build(t, 0, 2, ups(5, "", 5, "a", 4, "b")...)
	if got := x.AtLeast(5); got != 2 {
		t.Errorf("with an empty member: AtLeast(5) = %d, want 2", got)
	}
	if got := x.Count(4, 4); got != 1 {
		t.Errorf("with an empty member: Count(4, 4) = %d, want 1", got)
	}
}

func TestAtAndAppendFrom(t *testing.T) {
	t.Parallel()
	board := items(5, "c", 5, "b", 5, "ab", 5, "a", 3, "z", -2, "m", -2, "k")
	at := []struct {
		name string
		i    int
		ok   bool
	}{{"first", 0, true}, {"middle", 3, true}, {"last", 6, true}, {"negative", -1, false}, {"at Len", 7, false}, {"far out", 1000, false}}
	for _, c := range at {
		for _, mb := range []int{0, 2, 3} {
			got, ok := tieBoard(t, mb).At(c.i)
			if ok != c.ok || (ok && got != board[c.i]) {
				t.Errorf("%s, maxBlock %d: At(%d) = %v, %v", c.name, mb, c.i, got, ok)
			}
		}
	}
	cases := []struct {
		name string
		i, n int
		want []rank.Item
	}{
		{"top 3", 0, 3, board[:3]},
		{"across blocks", 2, 4, board[2:6]},
		{"to the end", 4, 3, board[4:]},
		{"past the end", 5, 10, board[5:]},
		{"starting at Len", 7, 3, nil},
		{"starting past Len", 9, 3, nil},
		{"n zero", 2, 0, nil},
		{"n negative", 2, -1, nil},
		{"window before the first entry", -2, 4, board[:2]},
		{"window wholly before", -5, 3, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			for _, mb := range []int{0, 2, 3} {
				dst := items(9, "keep")
				got := tieBoard(t, mb).AppendFrom(dst, c.i, c.n)
				if want := append(items(9, "keep"), c.want...); !slices.Equal(got, want) {
					t.Fatalf("maxBlock %d: AppendFrom(%d, %d) = %v, want %v", mb, c.i, c.n, got, want)
				}
			}
		})
	}
}

func TestLoad(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name      string
		prefixLen int
		in        []rank.Item
		want      []rank.Item
	}{
		{"empty", 0, nil, nil},
		{"unsorted with ties", 0, items(1, "a", 3, "b", 1, "c", 3, "a2"), items(3, "b", 3, "a2", 1, "c", 1, "a")},
		{"duplicate ids: the later wins", 0, items(1, "a", 7, "b", 4, "a"), items(7, "b", 4, "a")},
		{"duplicate ids under prefixes", 2, items(1, "00a", 7, "ffb", 4, "7fa", 2, "00b"), items(4, "7fa", 2, "00b")},
		{"same item twice", 0, items(2, "a", 2, "a"), items(2, "a")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			for _, mb := range []int{0, 2, 3} {
				x := build(t, c.prefixLen, mb, ups(9, "old")...)
				in := slices.Clone(c.in)
				x.Load(in)
				checkInvariants(t, x)
				if got := all(x); !slices.Equal(got, c.want) {
					t.Fatalf("maxBlock %d: Each = %v, want %v", mb, got, c.want)
				}
				if !slices.Equal(in, c.in) {
					t.Fatalf("Load changed its input")
				}
				if _, ok := x.Get("old"); ok {
					t.Fatalf("Load kept an old entry")
				}
			}
		})
	}
	// Load then Upserts: blocks cut full split cleanly.
	x := newWithBlock(0, 4)
	x.Load(items(1, "a", 2, "b", 3, "c", 4, "d", 5, "e", 6, "f", 7, "g", 8, "h"))
	x.Upsert("x", 5)
	x.Upsert("a", 9)
	checkInvariants(t, x)
	if got, want := all(x), items(9, "a", 8, "h", 7, "g", 6, "f", 5, "x", 5, "e", 4, "d", 3, "c", 2, "b"); !slices.Equal(got, want) {
		t.Fatalf("after Load and Upserts: %v, want %v", got, want)
	}
}

func TestRemoveIf(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		drop func(string) bool
		n    int
		want []rank.Item
	}{
		{"none", func(string) bool { return false }, 0, items(5, "c", 5, "b", 5, "ab", 5, "a", 3, "z", -2, "m", -2, "k")},
		{"all", func(string) bool { return true }, 7, nil},
		{"some", func(id string) bool { return id == "b" || id == "z" || id == "k" }, 3, items(5, "c", 5, "ab", 5, "a", -2, "m")},
		{"the first", func(id string) bool { return id == "c" }, 1, items(5, "b", 5, "ab", 5, "a", 3, "z", -2, "m", -2, "k")},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			for _, mb := range []int{0, 2, 3} {
				x := tieBoard(t, mb)
				if got := x.RemoveIf(c.drop); got != c.n {
					t.Fatalf("maxBlock %d: RemoveIf = %d, want %d", mb, got, c.n)
				}
				checkInvariants(t, x)
				if got := all(x); !slices.Equal(got, c.want) {
					t.Fatalf("maxBlock %d: Each = %v, want %v", mb, got, c.want)
				}
			}
		})
	}
	// Under a prefix, drop sees the id, not the stored member.
	x := build(t, 2, 2, ups(1, "00u1", 2, "ffu2", 3, "7fv1")...)
	var seen []string
	x.RemoveIf(func(id string) bool { seen = append(seen, id); return id[0] == 'u' })
	slices.Sort(seen)
	if !slices.Equal(seen, []string{"u1", "u2", "v1"}) {
		t.Fatalf("drop saw %v", seen)
	}
	if got := all(x); !slices.Equal(got, items(3, "7fv1")) {
		t.Fatalf("after RemoveIf: %v", got)
	}
}

func TestEachStops(t *testing.T) {
	t.Parallel()
	var got []rank.Item
	tieBoard(t, 2).Each(func(it rank.Item) bool { got = append(got, it); return len(got) < 3 })
	if len(got) != 3 {
		t.Fatalf("Each went on after false: %d calls", len(got))
	}
}

func TestBytes(t *testing.T) {
	t.Parallel()
	x := New(0)
	if x.Bytes() != 0 {
		t.Fatalf("empty index: Bytes = %d", x.Bytes())
	}
	x.Upsert("u0000001", 1)
	one := x.Bytes()
	if one < 24*defaultMaxBlock {
		t.Fatalf("Bytes = %d, less than one block", one)
	}
	x.Upsert("u0000002", 1)
	if d := x.Bytes() - one; d < 24+8 || d > 100 {
		t.Fatalf("one more 8-byte member adds %d bytes", d)
	}
	x.Upsert("u0000002-a-much-longer-member-name", 1)
	x.RemoveID("u0000001")
	x.RemoveID("u0000002")
	x.RemoveID("u0000002-a-much-longer-member-name")
	if x.Bytes() != 0 {
		t.Fatalf("Bytes = %d after removing everything", x.Bytes())
	}
}

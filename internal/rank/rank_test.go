package rank

import (
	"testing"
)

func TestEncodingRoundTrip(t *testing.T) {
	t.Parallel()
	cases := []struct {
		title       string
		enc         Encoding
		points, seq int64
		score       int64
	}{
		{"member desc", Encoding{MaxPoints: 1000}, 42, 0, 42},
		{"member asc stores negated", Encoding{Asc: true, MaxPoints: 1000}, 42, 0, -42},
		{"first desc", Encoding{B: 10, MaxPoints: 1000}, 42, 3, 42*10 + 6},
		{"first desc seq 0 is best", Encoding{B: 10, MaxPoints: 1000}, 42, 0, 429},
		{"first asc negative", Encoding{B: 10, Asc: true, MaxPoints: 1000}, 42, 3, -42*10 + 6},
		{"first negative points", Encoding{B: 10, MaxPoints: 1000}, -5, 9, -50},
		{"bounds of the example config", Encoding{B: 1 << 30, MaxPoints: 1<<23 - 1}, 1<<23 - 1, 0, MaxSafe - 1},
		{"lowest of the example config", Encoding{B: 1 << 30, MaxPoints: 1<<23 - 1}, -(1<<23 - 1), 1<<30 - 1, -(1<<23 - 1) << 30},
	}
	for _, c := range cases {
		t.Run(c.title, func(t *testing.T) {
			t.Parallel()
			s, err := c.enc.Score(c.points, c.seq)
			if err != nil {
				t.Fatal(err)
			}
			if s != c.score {
				t.Fatalf("Score = %d, want %d", s, c.score)
			}
			if int64(float64(s)) != s {
				t.Fatalf("score %d is not exact in a float64", s)
			}
			p, q := c.enc.Decode(s)
			if p != c.points || (c.enc.B > 0 && q != c.seq) {
				t.Fatalf("Decode(%d) = %d, %d; want %d, %d", s, p, q, c.points, c.seq)
			}
		})
	}
}

func TestEncodingRefuses(t *testing.T) {
	t.Parallel()
	e := Encoding{B: 10, MaxPoints: 100}
	for _, c := range []struct {
		title       string
		points, seq int64
	}{
		{"points above max", 101, 0},
		{"points below -max", -101, 0},
		{"seq at capacity", 1, 10},
		{"negative seq", 1, -1},
	} {
		if _, err := e.Score(c.points, c.seq); CodeOf(err) != CodeOutOfRange {
			t.Errorf("%s: err = %v, want out_of_range", c.title, err)
		}
	}
}

// Order: more points first; equal points, earlier seq first; the encoded
// score order must agree for every pair.
func TestEncodingPreservesOrder(t *testing.T) {
	t.Parallel()
	for _, asc := range []bool{false, true} {
		e := Encoding{B: 7, Asc: asc, MaxPoints: 20}
		for p1 := int64(-20); p1 <= 20; p1 += 3 {
			for p2 := int64(-20); p2 <= 20; p2 += 5 {
				for s1 := int64(0); s1 < 7; s1 += 2 {
					for s2 := int64(0); s2 < 7; s2 += 3 {
						a, _ := e.Score(p1, s1)
						b, _ := e.Score(p2, s2)
						better := p1 > p2
						if asc {
							better = p1 < p2
						}
						if p1 == p2 {
							better = s1 < s2
						}
						if better != (a > b) && !(p1 == p2 && s1 == s2) {
							t.Fatalf("asc=%v (%d,%d) vs (%d,%d): scores %d, %d", asc, p1, s1, p2, s2, a, b)
						}
					}
				}
			}
		}
	}
}

func FuzzScoreRoundTrip(f *testing.F) {
	f.Add(int64(5), int64(3), int64(1)<<30, false)
	f.Add(int64(-8388607), int64(1<<30-1), int64(1)<<30, true)
	f.Fuzz(func(t *testing.T, points, seq, b int64, asc bool) {
		if b < 2 || b > 1<<40 {
			return
		}
		maxp := MaxSafe/b - 1
		if maxp < 1 {
			return
		}
		e := Encoding{B: b, Asc: asc, MaxPoints: maxp}
		s, err := e.Score(points, seq)
		if err != nil {
			if points <= maxp && points >= -maxp && seq >= 0 && seq < b {
				t.Fatalf("refused in-range points %d seq %d: %v", points, seq, err)
			}
			return
		}
		if s > MaxSafe || s < -MaxSafe {
			t.Fatalf("score %d leaves ±2^53", s)
		}
		p, q := e.Decode(s)
		if p != points || q != seq {
			t.Fatalf("round trip (%d,%d) → %d → (%d,%d)", points, seq, s, p, q)
		}
	})
}

func TestFillRanks(t *testing.T) {
	t.Parallel()
	mk := func(points ...int64) []Entry {
		out := make([]Entry, len(points))
		for i, p := range points {
			out[i] = Entry{Points: p}
		}
		return out
	}
	cases := []struct {
		title     string
		entries   []Entry
		first     int64
		more      int64
		mode      RankMode
		positions []int64
		ranks     []int64
	}{
		{"competition 1,2,2,4", mk(9, 8, 8, 7), 0, 0, Competition, []int64{0, 1, 2, 3}, []int64{1, 2, 2, 4}},
		{"ordinal", mk(9, 8, 8, 7), 0, 0, Ordinal, []int64{0, 1, 2, 3}, []int64{1, 2, 3, 4}},
		{"page starting inside a tie", mk(8, 8, 7), 5, 3, Competition, []int64{5, 6, 7}, []int64{4, 4, 8}},
		{"empty", nil, 0, 0, Competition, nil, nil},
	}
	for _, c := range cases {
		t.Run(c.title, func(t *testing.T) {
			t.Parallel()
			FillRanks(c.entries, c.first, c.more, c.mode)
			for i, e := range c.entries {
				if e.Position != c.positions[i] || e.Rank != c.ranks[i] {
					t.Fatalf("entry %d = pos %d rank %d, want %d %d", i, e.Position, e.Rank, c.positions[i], c.ranks[i])
				}
			}
		})
	}
}

func TestValidIDs(t *testing.T) {
	t.Parallel()
	cases := []struct {
		title string
		fn    func(string) bool
		in    string
		want  bool
	}{
		{"member plain", ValidMember, "u1001", true},
		{"member email-like", ValidMember, "a.b@c-d_e", true},
		{"member empty", ValidMember, "", false},
		{"member brace", ValidMember, "u{1}", false},
		{"member colon", ValidMember, "u:1", false},
		{"member space", ValidMember, "u 1", false},
		{"member control", ValidMember, "u\x00", false},
		{"member 64", ValidMember, string(make64('a')), true},
		{"member 65", ValidMember, string(make64('a')) + "a", false},
		{"member unicode", ValidMember, "用户", false},
		{"family", ValidFamily, "learning_2", true},
		{"family upper", ValidFamily, "Learning", false},
		{"dim value", ValidDimValue, "zhejiang.north-1", true},
		{"dim value colon", ValidDimValue, "a:b", false},
		{"dim value at", ValidDimValue, "a@b", false},
		{"dim type", ValidDimType, "province", true},
		{"dim type dash", ValidDimType, "pro-vince", false},
		{"event id", ValidEventID, "evt:2026/08/20-1", true},
		{"event id brace", ValidEventID, "evt{1}", false},
		{"printable text", Printable, "Ops: Zoë, ban for spam", true},
		{"printable empty", Printable, "", true},
		{"printable newline", Printable, "a\nb", false},
		{"printable DEL", Printable, "a\x7fb", false},
		{"printable bad UTF-8", Printable, "a\xffb", false},
	}
	for _, c := range cases {
		if got := c.fn(c.in); got != c.want {
			t.Errorf("%s: %q → %v, want %v", c.title, c.in, got, c.want)
		}
	}
}

func make64(c byte) []byte {
	b := make([]byte, 64)
	for i := range b {
		b[i] = c
	}
	return b
}

func TestCodeOf(t *testing.T) {
	t.Parallel()
	if CodeOf(nil) != "" || CodeOf(Invalid("x", "bad")) != CodeInvalidArgument || CodeOf(errString("x")) != CodeInternal {
		t.Fatal("CodeOf mapping wrong")
	}
}

type errString string

func (e errString) Error() string { return string(e) }

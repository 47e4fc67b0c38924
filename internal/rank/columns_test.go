package rank

import (
	"math/rand/v2"
	"testing"
)

var raceCols = []Column{{Name: "time_ms", Asc: true, Max: 86400000, Agg: "last"}, {Name: "kills", Max: 999, Agg: "sum"}}

func TestColumnsEncoding(t *testing.T) {
	for _, tc := range []struct {
		name   string
		b      int64
		vals   []int64
		seq    int64
		user   string
		stored string
	}{
		{"tie member", 0, []int64{35210, 12}, 0, "u1", "525d27600cu1"}, // 86400000−35210 = 0x525d276, 12 = 0x00c
		{"best time", 0, []int64{0, 999}, 0, "u1", "5265c003e7u1"},
		{"worst time", 0, []int64{86400000, 0}, 0, "a", "0000000000a"},
		{"tie first", 1 << 20, []int64{35210, 12}, 5, "u1", "525d27600cffffau1"}, // B−1−5 = 0xffffa
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := NewColumns(raceCols, tc.b)
			got := c.Stored(tc.vals, tc.seq, tc.user)
			if got != tc.stored {
				t.Fatalf("Stored = %q, want %q", got, tc.stored)
			}
			u, vals, seq, ok := c.Split(got)
			if !ok || u != tc.user || vals[0] != tc.vals[0] || vals[1] != tc.vals[1] || (tc.b > 0 && seq != tc.seq) {
				t.Fatalf("Split(%q) = %q %v %d %v", got, u, vals, seq, ok)
			}
			if c.Key(got) != got[:10] {
				t.Fatalf("Key(%q) = %q", got, c.Key(got))
			}
		})
	}
}

func TestColumnsSplitRefuses(t *testing.T) {
	c := NewColumns(raceCols, 0)
	for _, s := range []string{"", "526bc8e00c", "526BC8E00Cu1", "526bc8e00cu 1", "ffffffff00u1", "526bc8e3e8u1", "526bc8e00c{x}"} {
		if c.Valid(s) {
			t.Errorf("Valid(%q) = true", s)
		}
	}
}

// TestColumnsOrder: for random tuples, stored member order under ZREVRANGE
// (member bytes descending, equal scores) is the board order of (columns…,
// seq, user): columns by their own order, then earlier seq, then user bytes
// descending — and BetterKey separates strictly better columns exactly.
func TestColumnsOrder(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	cols := []Column{{Name: "a", Asc: true, Max: 5}, {Name: "b", Max: 300}, {Name: "c", Asc: true, Max: 1}}
	for _, b := range []int64{0, 1000} {
		c := NewColumns(cols, b)
		type tup struct {
			vals []int64
			seq  int64
			user string
		}
		better := func(x, y tup) bool { // x strictly ahead of y in board order
			for i, col := range cols {
				if x.vals[i] != y.vals[i] {
					return (x.vals[i] < y.vals[i]) == col.Asc
				}
			}
			if b > 0 && x.seq != y.seq {
				return x.seq < y.seq
			}
			return x.user > y.user
		}
		for k := 0; k < 5000; k++ {
			x := tup{[]int64{rng.Int64N(6), rng.Int64N(301), rng.Int64N(2)}, rng.Int64N(1000), string(rune('a' + rng.IntN(3)))}
			y := tup{[]int64{rng.Int64N(6), rng.Int64N(301), rng.Int64N(2)}, rng.Int64N(1000), string(rune('a'+rng.IntN(3))) + "x"}
			if rng.IntN(3) == 0 {
				y.vals = x.vals
			}
			sx, sy := c.Stored(x.vals, x.seq, x.user), c.Stored(y.vals, y.seq, y.user)
			if (sx > sy) != better(x, y) {
				t.Fatalf("B=%d: %+v (%q) vs %+v (%q): bytes say %v", b, x, sx, y, sy, sx > sy)
			}
			colsBetter := c.Key(sx) > c.Key(sy)
			if (sx > BetterKey(c.Key(sy))) != colsBetter {
				t.Fatalf("BetterKey: %q vs %q", sx, sy)
			}
		}
	}
}

func TestColumnsValues(t *testing.T) {
	c := NewColumns(raceCols, 0)
	if v, err := c.Values(map[string]int64{"time_ms": 5, "kills": 2}); err != nil || v[0] != 5 || v[1] != 2 {
		t.Fatalf("Values = %v, %v", v, err)
	}
	for _, tc := range []struct {
		m     map[string]int64
		code  Code
		field string
	}{
		{map[string]int64{"time_ms": 5}, CodeInvalidArgument, "columns.kills"},
		{map[string]int64{"time_ms": 5, "kills": 2, "deaths": 1}, CodeInvalidArgument, "columns.deaths"},
		{map[string]int64{"time_ms": -1, "kills": 2}, CodeOutOfRange, "columns.time_ms"},
		{map[string]int64{"time_ms": 1, "kills": 1000}, CodeOutOfRange, "columns.kills"},
	} {
		_, err := c.Values(tc.m)
		e, ok := err.(*Error)
		if !ok || e.Code != tc.code || e.Field != tc.field {
			t.Errorf("Values(%v) = %v, want %s on %s", tc.m, err, tc.code, tc.field)
		}
	}
}

func BenchmarkColumnsSplit(b *testing.B) {
	c := NewColumns(raceCols, 1<<30)
	s := c.Stored([]int64{35210, 12}, 77, "u1001")
	for b.Loop() {
		if _, _, _, ok := c.Split(s); !ok {
			b.Fatal("split")
		}
	}
}

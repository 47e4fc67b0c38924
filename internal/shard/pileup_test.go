package shard

import "testing"

func TestPileUp(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name       string
		onMaster   map[string]int
		n, masters int
		want       string // the master named; "" for none
		shards     int
	}{
		{"even spread", map[string]int{"a": 6, "b": 5, "c": 5}, 16, 3, "", 0},
		{"one over the spread is fine", map[string]int{"a": 7, "b": 5, "c": 4}, 16, 3, "", 0},
		{"two over the spread", map[string]int{"a": 8, "b": 4, "c": 4}, 16, 3, "a", 8},
		{"every shard on one master", map[string]int{"b": 2}, 2, 3, "b", 2},
		{"one shard never piles up", map[string]int{"a": 1}, 1, 3, "", 0},
		{"one master never piles up", map[string]int{"a": 16}, 16, 1, "", 0},
		{"two masters over: the first by name", map[string]int{"z": 9, "m": 9, "a": 0}, 18, 6, "m", 9},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			for range 20 { // map order varies from run to run; the answer must not
				m, shards, _, ok := PileUp(c.onMaster, c.n, c.masters)
				if ok != (c.want != "") || m != c.want || shards != c.shards {
					t.Fatalf("PileUp(%v, %d, %d) = %q %d %v, want %q %d", c.onMaster, c.n, c.masters, m, shards, ok, c.want, c.shards)
				}
			}
		})
	}
}

package shard

import (
	"fmt"
	"strings"
	"testing"
)

func TestKeys(t *testing.T) {
	t.Parallel()
	l := Layout{Prefix: "rk"}
	cases := []struct {
		title string
		b     Board
		i, n  int
		z     string
		tag   string
	}{
		{"national shard 7 of 16", Board{"learning", "2026-W34", National, "", ""}, 7, 16,
			"rk:{learning:national:07}:2026-W34:z", "learning:national:07"},
		{"province single shard", Board{"learning", "2026-W34", "province", "zhejiang", ""}, 0, 1,
			"rk:{learning:province:zhejiang:00}:2026-W34:z", "learning:province:zhejiang:00"},
		{"wide board pads to width", Board{"game", "all", National, "", ""}, 5, 1024,
			"rk:{game:national:0005}:all:z", "game:national:0005"},
		{"a family keyed under a group", Board{"bonus", "2026-W34", National, "", "season"}, 7, 16,
			"rk:{season:national:07}:2026-W34:bonus:z", "season:national:07"},
		{"the group's own family", Board{"season", "2026-W34", National, "", "season"}, 7, 16,
			"rk:{season:national:07}:2026-W34:z", "season:national:07"},
	}
	for _, c := range cases {
		t.Run(c.title, func(t *testing.T) {
			t.Parallel()
			k := l.Keys(c.b, c.i, c.n)
			if k.Z != c.z || k.Tag != c.tag {
				t.Fatalf("Keys = %+v, want z %q tag %q", k, c.z, c.tag)
			}
			if z := l.ZKey(c.b, c.i, c.n); z != c.z {
				t.Fatalf("ZKey = %q, want %q", z, c.z)
			}
			for _, key := range []string{k.Z, k.M, k.Ev, k.Meta, k.Snapshot("abc")} {
				if Slot(key) != Slot(k.Z) {
					t.Fatalf("%s leaves the slot of %s", key, k.Z)
				}
				if !strings.Contains(key, "{"+c.tag+"}") {
					t.Fatalf("%s lacks tag %s", key, c.tag)
				}
			}
		})
	}
}

func TestPeriodKeysShareTag(t *testing.T) {
	t.Parallel()
	pk := Layout{Prefix: "rk"}.Period("learning", "2026-W34")
	if pk.Seq != "rk:{learning:2026-W34}:seq" {
		t.Fatalf("seq key %q", pk.Seq)
	}
	for _, k := range []string{pk.Meta, pk.Boards, pk.Late} {
		if Slot(k) != Slot(pk.Seq) {
			t.Fatalf("%s not in the slot of %s", k, pk.Seq)
		}
	}
}

// Known vectors from the Redis Cluster specification and redis-cli.
func TestSlot(t *testing.T) {
	t.Parallel()
	cases := []struct {
		key  string
		slot int
	}{
		{"123456789", 12739}, // CRC16 check value 0x31C3
		{"foo", 12182},
		{"bar", 5061},
		{"{user1000}.following", 3443},
		{"user1000", 3443},
		{"foo{}{bar}", 8363},    // empty first tag: the whole key is hashed
		{"foo{{bar}}zap", 4015}, // tag is "{bar"
		{"foo{bar}{zap}", 5061}, // first tag only: "bar"
	}
	for _, c := range cases {
		if got := Slot(c.key); got != c.slot {
			t.Errorf("Slot(%q) = %d, want %d", c.key, got, c.slot)
		}
	}
}

// The member → shard mapping must never change: it decides where every
// member of every board lives.
func TestOfIsPinned(t *testing.T) {
	t.Parallel()
	cases := []struct {
		member string
		n      int
		want   int
	}{
		{"u1001", 1, 0},
		{"u1001", 16, 14},
		{"u1001", 1024, 750},
		{"u1002", 16, 11},
		{"alice", 1024, 263},
	}
	for _, c := range cases {
		if got := Of(c.member, c.n); got != c.want {
			t.Errorf("Of(%q, %d) = %d, want %d", c.member, c.n, got, c.want)
		}
	}
	// FNV-1a 64 vectors: "a" → 0xaf63dc4c8601ec8c.
	if got, want := Of("a", 1<<30), int(uint64(0xaf63dc4c8601ec8c)%(1<<30)); got != want {
		t.Fatalf("Of(a) = %d, want %d", got, want)
	}
	// Spread: 16 shards, 16000 members, each shard within ±15% of 1000.
	counts := make([]int, 16)
	for i := 0; i < 16000; i++ {
		counts[Of(fmt.Sprintf("u%d", i), 16)]++
	}
	for s, c := range counts {
		if c < 850 || c > 1150 {
			t.Fatalf("shard %d holds %d of 16000 members: %v", s, c, counts)
		}
	}
}

func TestParseDimension(t *testing.T) {
	t.Parallel()
	cases := []struct {
		in     string
		t, v   string
		wantOK bool
	}{
		{"national", "national", "", true},
		{"province:zhejiang", "province", "zhejiang", true},
		{"province:", "", "", false},
		{":x", "", "", false},
		{"province", "", "", false},
		{"national:x", "", "", false},
	}
	for _, c := range cases {
		tt, v, ok := ParseDimension(c.in)
		if ok != c.wantOK || tt != c.t || v != c.v {
			t.Errorf("ParseDimension(%q) = %q %q %v", c.in, tt, v, ok)
		}
	}
}

func BenchmarkMemberToKey(b *testing.B) {
	l := Layout{Prefix: "rk"}
	bd := Board{"learning", "2026-W34", National, "", ""}
	b.ReportAllocs()
	for b.Loop() {
		i := Of("u1234567", 16)
		_ = l.ZKey(bd, i, 16)
	}
}

func BenchmarkOf(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_ = Of("u1234567", 16)
	}
}

func BenchmarkKeys(b *testing.B) {
	l := Layout{Prefix: "rk"}
	bd := Board{"learning", "2026-W34", "province", "zhejiang", ""}
	b.ReportAllocs()
	for b.Loop() {
		_ = l.Keys(bd, 3, 16)
	}
}

// TestSharedCachePrefixOwnsOnlyCacheKeys: a board's purge prefix
// (SharedCachePrefix) must start no data key of any board in the same slot
// — families keyed under one group name themselves after the period, and a
// family may be called "c" — and no other board's cached copies.
func TestSharedCachePrefixOwnsOnlyCacheKeys(t *testing.T) {
	t.Parallel()
	l := Layout{Prefix: "rk"}
	var boards []Board
	for _, fam := range []string{"season", "c", "c-", "bonus", "lease"} {
		for _, dim := range [][2]string{{National, ""}, {"class", "c"}} {
			boards = append(boards, Board{Family: fam, Period: "2026-W34", DimType: dim[0], DimValue: dim[1], Group: "season"})
		}
	}
	const n = 4
	for _, a := range boards {
		prefix := l.SharedCachePrefix(a, n)
		if !strings.HasPrefix(l.SharedCache(a, n, "q1"), prefix) || !strings.HasPrefix(l.SharedLease(a, n, "q1"), prefix) {
			t.Fatalf("%+v: its own cache key or lease does not start with its prefix %q", a, prefix)
		}
		for _, b := range boards {
			for i := range n {
				k := l.Keys(b, i, n)
				for _, key := range []string{k.Z, k.M, k.Ev, k.Meta, k.Cols, k.Md, k.Snapshot("s1"), k.RebuildZ(), k.RebuildM()} {
					if strings.HasPrefix(key, prefix) {
						t.Errorf("purge prefix %q of %+v starts the data key %q of %+v", prefix, a, key, b)
					}
				}
			}
			if a != b && strings.HasPrefix(l.SharedCache(b, n, "q1"), prefix) {
				t.Errorf("purge prefix %q of %+v starts %+v's cached copy %q", prefix, a, b, l.SharedCache(b, n, "q1"))
			}
		}
	}
}

func TestTournamentKeys(t *testing.T) {
	t.Parallel()
	l := Layout{Prefix: "rk"}
	b := Board{Family: "spring-cup", Period: "20261205T1000", DimType: National}
	k := l.Keys(b, 3, 8)
	tests := []struct {
		title, got, want string
	}{
		{"joins", JoinsKey(k.Z), "rk:{spring-cup:national:03}:20261205T1000:jn"},
		{"attempts", AttemptsKey(k.Z), "rk:{spring-cup:national:03}:20261205T1000:at"},
		{"defs", l.Tournaments().Defs, "rk:{tournaments}:defs"},
		{"audit log", l.Audit(), "rk:{audit}:log"},
	}
	for _, tc := range tests {
		if tc.got != tc.want {
			t.Errorf("%s: %q, want %q", tc.title, tc.got, tc.want)
		}
	}
	// The gate keys share the board shard's slot; the registry is one slot.
	if Slot(JoinsKey(k.Z)) != Slot(k.Z) || Slot(AttemptsKey(k.Z)) != Slot(k.Ev) {
		t.Error("joins or attempts leave the board shard's slot")
	}
	tk := l.Tournaments()
	if Slot(tk.Defs) != Slot(tk.Active) || Slot(tk.Defs) != Slot(tk.Version) {
		t.Error("tournament registry keys span slots")
	}
}

// ParseZKey reads back every sorted-set key Keys builds: the board, a
// family keyed under another's group, the shard and its width; other keys
// are refused.
func TestParseZKey(t *testing.T) {
	t.Parallel()
	l := Layout{Prefix: "rk"}
	cases := []struct {
		name string
		b    Board
		i, n int
	}{
		{"national of 16", Board{Family: "learning", Period: "2026-W34", DimType: National}, 7, 16},
		{"dimension of 1", Board{Family: "learning", Period: "2026-W34", DimType: "province", DimValue: "zhe-jiang.1"}, 0, 1},
		{"1024 shards", Board{Family: "a-b_c", Period: "all", DimType: "class", DimValue: "c42"}, 1001, 1024},
		{"keyed under a group", Board{Family: "bonus", Group: "season", Period: "2026-05-17", DimType: National}, 3, 4},
		{"cron window period", Board{Family: "t1", Period: "20261204T1700", DimType: National}, 0, 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			z := l.Keys(c.b, c.i, c.n).Z
			ref, ok := l.ParseZKey(z)
			if !ok || ref.Board != c.b || ref.Shard != c.i || ref.Width != ShardWidth(c.n) {
				t.Fatalf("ParseZKey(%q) = %+v, %v; want %+v shard %d width %d", z, ref, ok, c.b, c.i, ShardWidth(c.n))
			}
			if back := l.ZKey(ref.Board, ref.Shard, ShardCount(ref.Width)); back != z {
				t.Fatalf("ZKey of the parsed ref = %q, want %q", back, z)
			}
			if k := ShardKeys(z); k != l.Keys(c.b, c.i, c.n) {
				t.Fatalf("ShardKeys(%q) = %+v, want %+v", z, k, l.Keys(c.b, c.i, c.n))
			}
		})
	}
	for _, bad := range []string{"", "rk:{p:u1}:boards", "other:{learning:national:07}:2026-W34:z", "rk:{learning:national:07}:2026-W34:m",
		"rk:{learning:national:x7}:2026-W34:z", "rk:{learning:province:07}:2026-W34:z", "rk:{learning:national:07}:z"} {
		if ref, ok := l.ParseZKey(bad); ok {
			t.Errorf("ParseZKey(%q) = %+v, want refused", bad, ref)
		}
	}
}

package store_test

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/store"
	"github.com/rankgate/rankgate/internal/testcluster"
)

// liveSlots asks the cluster (CLUSTER KEYSLOT, pipelined on one node) for the
// slot of every key.
func liveSlots(t *testing.T, ctx context.Context, node *redis.Client, keys []string) map[string]int {
	t.Helper()
	pipe := node.Pipeline()
	cmds := make([]*redis.IntCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.ClusterKeySlot(ctx, k)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		t.Fatalf("CLUSTER KEYSLOT: %v", err)
	}
	out := make(map[string]int, len(keys))
	for i, k := range keys {
		out[k] = int(cmds[i].Val())
	}
	return out
}

func TestScriptKeysShareOneSlot(t *testing.T) {
	t.Parallel()
	addrs := testcluster.Addrs(t)
	node := redis.NewClient(&redis.Options{Addr: addrs[0], DialTimeout: 2 * time.Second, ReadTimeout: 5 * time.Second})
	t.Cleanup(func() { _ = node.Close() })
	ctx := ctxT(t, 15*time.Second)
	layout := shard.Layout{Prefix: testcluster.Prefix(t)}

	boards := []struct {
		name     string
		b        shard.Board
		n        int
		minSlots int // distinct slots the shards must spread over
	}{
		{"national 16 shards", shard.Board{Family: "learning", Period: "2026-W34", DimType: shard.National}, 16, 14},
		{"province zhejiang 1 shard", shard.Board{Family: "learning", Period: "2026-W34", DimType: "province", DimValue: "zhejiang"}, 1, 1},
		{"class 1024 shards daily", shard.Board{Family: "steps", Period: "2026-05-17", DimType: "class", DimValue: "c42"}, 1024, 950},
		{"national 1024 shards all-time", shard.Board{Family: "quiz", Period: "all", DimType: shard.National}, 1024, 950},
		{"dimension value with dots and dashes", shard.Board{Family: "a-b_c", Period: "2027-W01", DimType: "school", DimValue: "S-1.x_Y"}, 16, 14},
	}
	kinds := []struct {
		name string
		kind store.WriteKind
	}{{"apply", store.KindApply}, {"reverse", store.KindReverse}, {"project", store.KindProject}, {"remove", store.KindRemove}}

	for _, bc := range boards {
		t.Run(bc.name, func(t *testing.T) {
			t.Parallel()
			// groups: each list of keys one script call (or one in-slot
			// operation) touches together.
			type group struct {
				what string
				keys []string
			}
			var groups []group
			var all []string
			for i := 0; i < bc.n; i++ {
				k := layout.Keys(bc.b, i, bc.n)
				if z := layout.ZKey(bc.b, i, bc.n); z != k.Z {
					t.Fatalf("shard %d: ZKey %q != Keys().Z %q", i, z, k.Z)
				}
				for _, kd := range kinds {
					groups = append(groups, group{fmt.Sprintf("shard %d %s script", i, kd.name), store.KeysOf(store.Write{Kind: kd.kind, Keys: k})},
						group{fmt.Sprintf("shard %d %s columns script", i, kd.name), store.KeysOf(store.Write{Kind: kd.kind, Keys: k, HasCols: true})},
						group{fmt.Sprintf("shard %d %s script with a change feed", i, kd.name), store.KeysOf(store.Write{Kind: kd.kind, Keys: k, FeedLen: 100, KeepMetadata: true})},
						group{fmt.Sprintf("shard %d %s columns script with a change feed", i, kd.name), store.KeysOf(store.Write{Kind: kd.kind, Keys: k, HasCols: true, FeedLen: 100})})
					if got := store.KeysOf(store.Write{Kind: kd.kind, Keys: k, FeedLen: 100}); got[len(got)-1] != k.Feed {
						t.Fatalf("shard %d %s: keys %v do not end with the change feed %s", i, kd.name, got, k.Feed)
					}
				}
				gate := &store.Gate{Joins: shard.JoinsKey(k.Z), Attempts: shard.AttemptsKey(k.Z), JoinRequired: true, MaxAttempts: 3}
				groups = append(groups,
					group{fmt.Sprintf("shard %d gated apply script", i), store.KeysOf(store.Write{Keys: k, Gate: gate, KeepMetadata: true, FeedLen: 100})},
					group{fmt.Sprintf("shard %d gated columns script", i), store.KeysOf(store.Write{Keys: k, Gate: gate, HasCols: true})},
					group{fmt.Sprintf("shard %d join script", i), []string{shard.JoinsKey(k.Z), k.Meta}},
					group{fmt.Sprintf("shard %d erase script", i), store.EraseKeys(store.Erase{Z: k.Z})},
					group{fmt.Sprintf("shard %d erase script with a change feed", i), store.EraseKeys(store.Erase{Z: k.Z, FeedLen: 100})})
				if got := store.EraseKeys(store.Erase{Z: k.Z, FeedLen: 100}); got[len(got)-1] != k.Feed || got[1] != k.Ev || got[2] != k.M {
					t.Fatalf("shard %d: erase keys %v do not name the shard's ev, m and feed", i, got)
				}
				if got := store.KeysOf(store.Write{Keys: k, Gate: gate}); got[len(got)-2] != gate.Joins || got[len(got)-1] != gate.Attempts {
					t.Fatalf("shard %d: gated keys %v do not end with the joins and attempts hashes", i, got)
				}
				if got := store.KeysOf(store.Write{Keys: k, HasCols: true}); len(got) != 6 || got[4] != k.Cols || got[5] != k.Md {
					t.Fatalf("shard %d: columns script keys %v do not name the cols and md hashes", i, got)
				}
				groups = append(groups,
					group{fmt.Sprintf("shard %d seek script", i), []string{k.Z}},
					group{fmt.Sprintf("shard %d position script", i), []string{k.Z}},
					group{fmt.Sprintf("shard %d members script", i), []string{k.Z, shard.ColsKey(k.Z)}},
					group{fmt.Sprintf("shard %d metadata read", i), []string{k.Z, shard.MdKey(k.Z), k.Cols, k.Md}},
					group{fmt.Sprintf("shard %d all keys + snapshot", i), []string{k.Z, k.M, k.Ev, k.Meta, k.Snapshot("s1")}},
					// snapshot script: source, copy, marker; a snapshot page
					// seeks the copy guarded by the marker.
					group{fmt.Sprintf("shard %d snapshot script", i), []string{k.Z, k.Snapshot("s1"), k.SnapshotMarker("s1")}},
					group{fmt.Sprintf("shard %d swap script", i), []string{k.RebuildZ(), k.Z, k.RebuildM(), k.M, k.RebuildCols(), k.Cols, k.RebuildMd(), k.Md, k.Feed}},
					group{fmt.Sprintf("shard %d feed read, scan and card (one pipeline)", i), []string{k.Feed, k.Z, shard.FeedKey(k.Z)}},
				)
			}
			seen := map[string]bool{}
			for _, g := range groups {
				for _, k := range g.keys {
					if !seen[k] {
						seen[k] = true
						all = append(all, k)
					}
				}
			}
			slots := liveSlots(t, ctx, node, all)

			for _, g := range groups {
				if len(g.keys) == 0 {
					t.Fatalf("%s: no keys", g.what)
				}
				want := slots[g.keys[0]]
				for _, k := range g.keys {
					if slots[k] != want {
						t.Errorf("%s: key %q is in slot %d, %q in slot %d", g.what, k, slots[k], g.keys[0], want)
					}
					if got := shard.Slot(k); got != slots[k] {
						t.Errorf("%s: shard.Slot(%q) = %d, CLUSTER KEYSLOT = %d", g.what, k, got, slots[k])
					}
				}
			}
			// Different shards must spread over the slot space, not share a tag.
			distinct := map[int]bool{}
			for i := 0; i < bc.n; i++ {
				distinct[slots[layout.Keys(bc.b, i, bc.n).Z]] = true
			}
			if len(distinct) < bc.minSlots {
				t.Errorf("%d shards use only %d distinct slots, want ≥ %d", bc.n, len(distinct), bc.minSlots)
			}
		})
	}

	t.Run("period keys", func(t *testing.T) {
		t.Parallel()
		for _, fp := range [][2]string{{"learning", "2026-W34"}, {"steps", "2026-05-17"}, {"quiz", "all"}, {"a-b_c", "2026-12"}} {
			pk := layout.Period(fp[0], fp[1])
			keys := []string{pk.Seq, pk.Meta, pk.Boards, pk.Late}
			slots := liveSlots(t, ctx, node, keys)
			for _, k := range keys {
				if slots[k] != slots[pk.Seq] {
					t.Errorf("%s/%s: %q in slot %d, %q in slot %d", fp[0], fp[1], k, slots[k], pk.Seq, slots[pk.Seq])
				}
				if shard.Slot(k) != slots[k] {
					t.Errorf("shard.Slot(%q) = %d, CLUSTER KEYSLOT = %d", k, shard.Slot(k), slots[k])
				}
			}
		}
	})

	t.Run("ban keys", func(t *testing.T) {
		t.Parallel()
		k := layout.Bans()
		keys := []string{k.All, k.Version} // unban.lua and PutBan's MULTI touch both
		slots := liveSlots(t, ctx, node, keys)
		if slots[k.All] != slots[k.Version] {
			t.Errorf("%q in slot %d, %q in slot %d", k.All, slots[k.All], k.Version, slots[k.Version])
		}
		for _, key := range keys {
			if shard.Slot(key) != slots[key] {
				t.Errorf("shard.Slot(%q) = %d, CLUSTER KEYSLOT = %d", key, shard.Slot(key), slots[key])
			}
		}
	})

	// place.lua's keys share the tag of a tier's placement state; a
	// member's league hash sits under their own tag (tiers spread over the
	// cluster); the moves share the period's tag.
	t.Run("league keys", func(t *testing.T) {
		t.Parallel()
		var keys []string
		for _, tier := range []string{"bronze", "gold"} {
			pk := layout.Placement("league", "2026-W49", tier)
			keys = append(keys, pk.Placed, pk.Cohorts)
		}
		mk := layout.Moves("league", "2026-W49")
		pk := layout.Period("league", "2026-W49")
		keys = append(keys, mk.Moves, mk.Done, pk.Meta)
		members := []string{"u1001", "B", "a.b@c", "Z9", "u2", "u3", "u4", "u5"}
		for _, m := range members {
			keys = append(keys, layout.LeagueMember(m, "league"), layout.Profile(m))
		}
		slots := liveSlots(t, ctx, node, keys)
		for _, k := range keys {
			if shard.Slot(k) != slots[k] {
				t.Errorf("shard.Slot(%q) = %d, CLUSTER KEYSLOT = %d", k, shard.Slot(k), slots[k])
			}
		}
		for i := 0; i < 4; i += 2 {
			if slots[keys[i]] != slots[keys[i+1]] {
				t.Errorf("place.lua keys %q and %q in slots %d and %d", keys[i], keys[i+1], slots[keys[i]], slots[keys[i+1]])
			}
		}
		if slots[keys[0]] == slots[keys[2]] {
			t.Errorf("two tiers share slot %d: each tier's placement has its own tag", slots[keys[0]])
		}
		if slots[mk.Moves] != slots[pk.Meta] || slots[mk.Done] != slots[pk.Meta] {
			t.Errorf("moves keys not in the period's slot %d", slots[pk.Meta])
		}
		distinct := map[int]bool{}
		for i := 7; i < len(keys); i += 2 {
			if slots[keys[i]] != slots[keys[i+1]] {
				t.Errorf("%q and %q in slots %d and %d: a member's keys share one", keys[i], keys[i+1], slots[keys[i]], slots[keys[i+1]])
			}
			distinct[slots[keys[i]]] = true
		}
		if len(distinct) < len(members)-1 {
			t.Errorf("%d members' league hashes in %d slots; want them spread", len(members), len(distinct))
		}
	})

	// rate.lua's one key and the member's board index sit under the
	// member's own tag, beside the profile (an erasure deletes them in one
	// DEL); different members spread over the slots.
	t.Run("player rate keys", func(t *testing.T) {
		t.Parallel()
		var keys []string
		members := []string{"u1001", "B", "a.b@c", "Z9", "u1002", "u1003", "u1004", "u1005"}
		for _, m := range members {
			keys = append(keys, layout.MemberRate(m, "learning"), layout.MemberRate(m, "game"), layout.Profile(m), layout.MemberBoards(m),
				shard.IndexWork(layout.MemberBoards(m)))
		}
		slots := liveSlots(t, ctx, node, keys)
		distinct := map[int]bool{}
		for i := 0; i < len(keys); i += 5 {
			distinct[slots[keys[i+3]]] = true
			if slots[keys[i]] != slots[keys[i+2]] || slots[keys[i+1]] != slots[keys[i+2]] || slots[keys[i+3]] != slots[keys[i+2]] || slots[keys[i+4]] != slots[keys[i+2]] {
				t.Errorf("%q, %q, %q, %q and %q are in slots %d, %d, %d, %d, %d: a member's keys must share one", keys[i], keys[i+1], keys[i+2], keys[i+3], keys[i+4],
					slots[keys[i]], slots[keys[i+1]], slots[keys[i+2]], slots[keys[i+3]], slots[keys[i+4]])
			}
			if shard.Slot(keys[i+3]) != slots[keys[i+3]] {
				t.Errorf("shard.Slot(%q) = %d, CLUSTER KEYSLOT = %d", keys[i+3], shard.Slot(keys[i+3]), slots[keys[i+3]])
			}
			if shard.Slot(keys[i]) != slots[keys[i]] {
				t.Errorf("shard.Slot(%q) = %d, CLUSTER KEYSLOT = %d", keys[i], shard.Slot(keys[i]), slots[keys[i]])
			}
		}
		if len(distinct) < len(members)-1 {
			t.Errorf("the board indexes of %d members use %d slots: member indexes must spread", len(members), len(distinct))
		}
	})

	t.Run("profile keys", func(t *testing.T) {
		t.Parallel()
		var keys []string
		for _, m := range []string{"u1001", "B", "a", "_", "-", ".", "@", "Z9"} {
			keys = append(keys, layout.Profile(m))
		}
		slots := liveSlots(t, ctx, node, keys)
		for _, k := range keys {
			if shard.Slot(k) != slots[k] {
				t.Errorf("shard.Slot(%q) = %d, CLUSTER KEYSLOT = %d", k, shard.Slot(k), slots[k])
			}
		}
	})
}

// scriptSource reads the source of a go-redis Script. go-redis does not
// export it; reflect may read (not modify) the unexported field.
func scriptSource(t *testing.T, s *redis.Script) (string, bool) {
	f := reflect.ValueOf(s).Elem().FieldByName("src")
	if !f.IsValid() || f.Kind() != reflect.String {
		return "", false
	}
	return f.String(), true
}

// TestScriptsDeclareKeysAndFlags checks that Redis itself enforces what the
// scripts declare: their keys (a cross-slot key list is
// refused), their "#!lua" shebang and, for the read scripts, flags=no-writes.
func TestScriptsDeclareKeysAndFlags(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	ctx := ctxT(t, 15*time.Second)
	b := shard.Board{Family: "learning", Period: "2026-W34", DimType: shard.National}
	// Two shards in different slots.
	ka := e.layout.Keys(b, 0, 16)
	var kb shard.Keys
	for i := 1; i < 16; i++ {
		if kb = e.layout.Keys(b, i, 16); shard.Slot(kb.Z) != shard.Slot(ka.Z) {
			break
		}
	}
	if shard.Slot(kb.Z) == shard.Slot(ka.Z) {
		t.Fatal("no two shards in different slots")
	}
	node, err := e.cc.MasterForKey(ctx, ka.Z)
	if err != nil {
		t.Fatalf("MasterForKey: %v", err)
	}
	scripts := store.Scripts()
	for _, name := range []string{"apply", "reverse", "project", "seek", "position", "columns", "members"} {
		if scripts[name] == nil {
			t.Fatalf("Scripts() has no %q script", name)
		}
	}
	// Every script, including ones added later, starts with a "#!lua" shebang.
	for name, s := range scripts {
		if src, ok := scriptSource(t, s); ok && !strings.HasPrefix(src, "#!lua") {
			first, _, _ := strings.Cut(src, "\n")
			t.Errorf("script %s starts with %q, want a #!lua shebang", name, first)
		}
	}

	type sc struct {
		name     string
		readOnly bool
		keys     []string // one slot
		mixed    []string // two slots
		args     []any
	}
	cases := []sc{
		{"apply", false, []string{ka.Z, ka.Ev, ka.Meta}, []string{ka.Z, kb.Ev, ka.Meta},
			[]any{"e1", "u1", "sum", 5, 0, 0, 1000, 1, "r1"}},
		{"reverse", false, []string{ka.Z, ka.Ev, ka.Meta}, []string{ka.Z, ka.Ev, kb.Meta},
			[]any{"r1", "e1", "u1", 0, 0, 1000, 1, "r1"}},
		{"project", false, []string{ka.Z, ka.M, ka.Meta}, []string{kb.Z, ka.M, ka.Meta},
			[]any{1, "u1", 1, 5, 0, 0, 1000, 1, "r1", "set", "1", ""}},
		{"seek", true, []string{ka.Z}, []string{ka.Z, kb.Z}, []any{"top", "0", "", 10, "", ""}},
		{"position", true, []string{ka.Z}, []string{ka.Z, kb.Z}, []any{1, "0", "u1", "1", "0", "", ""}},
		{"columns", false, []string{ka.Z, ka.Ev, ka.M, ka.Meta, ka.Cols, ka.Md}, []string{ka.Z, ka.Ev, ka.M, ka.Meta, kb.Cols, ka.Md},
			[]any{"apply", "e1", "u1", "sum", 5, 0, 0, 1000, 1, "r1", "0", "", "", 1, "sum", 3, 9, 1}},
		{"members", true, []string{ka.Z, ka.Cols}, []string{ka.Z, kb.Cols}, []any{"u1", "u2"}},
		// Tournaments: the gated writes carry the shard's joins and attempts
		// hashes after their own keys; a join, the seats hash and meta.
		{"gated_apply", false, []string{ka.Z, ka.Ev, ka.Meta, shard.JoinsKey(ka.Z), shard.AttemptsKey(ka.Z)},
			[]string{ka.Z, ka.Ev, ka.Meta, shard.JoinsKey(kb.Z), shard.AttemptsKey(ka.Z)},
			[]any{"e1", "u1", "sum", 5, 0, 0, 1000, 1, "r1", "0", "e1", "u1", "1", 3, "~gate"}},
		{"gated_columns", false, []string{ka.Z, ka.Ev, ka.M, ka.Meta, ka.Cols, ka.Md, shard.JoinsKey(ka.Z), shard.AttemptsKey(ka.Z)},
			[]string{ka.Z, ka.Ev, ka.M, ka.Meta, ka.Cols, ka.Md, shard.JoinsKey(ka.Z), shard.AttemptsKey(kb.Z)},
			[]any{"apply", "e1", "u1", "sum", 5, 0, 0, 1000, 1, "r1", "0", "", "", 1, "sum", 3, 9, 1, "e1", "u1", "1", 3, "~gate"}},
		{"join", false, []string{shard.JoinsKey(ka.Z), ka.Meta}, []string{shard.JoinsKey(ka.Z), kb.Meta}, []any{"u1", 10, 1000}},
		// Ledger mode: the checks before the commit, on the same two hashes.
		{"gate", false, []string{shard.JoinsKey(ka.Z), shard.AttemptsKey(ka.Z)}, []string{shard.JoinsKey(ka.Z), shard.AttemptsKey(kb.Z)},
			[]any{"take", "e1", "u1", "1", 3}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			s := scripts[c.name]
			if src, ok := scriptSource(t, s); ok {
				first, _, _ := strings.Cut(src, "\n")
				want := "#!lua"
				if c.readOnly {
					want = "#!lua flags=no-writes"
				}
				if first != want {
					t.Errorf("first line %q, want %q", first, want)
				}
			} else {
				t.Logf("go-redis Script has no src field any more; relying on behaviour only")
			}

			// A key list over two slots is refused by Redis before the script runs.
			err := s.Eval(ctx, node, c.mixed, c.args...).Err()
			if err == nil || !strings.Contains(err.Error(), "CROSSSLOT") {
				t.Errorf("EVAL with keys in two slots: err = %v, want CROSSSLOT", err)
			}

			// EVAL_RO: a "#!lua" script without no-writes is refused up front
			// ("write flag"); a legacy script without a shebang would start
			// and fail only at its first write. Read scripts must run.
			err = s.EvalRO(ctx, node, c.keys, c.args...).Err()
			if c.readOnly {
				if err != nil {
					t.Errorf("EVAL_RO: %v", err)
				}
			} else if err == nil || !strings.Contains(err.Error(), "write flag") {
				t.Errorf("EVAL_RO of a write script: err = %v, want the shebang's \"write flag\" refusal", err)
			}
		})
	}

	// The read scripts run as EVALSHA_RO on replicas (flags=no-writes).
	t.Run("read scripts on replicas", func(t *testing.T) {
		ro, err := store.NewClient(store.ClientOptions{Addrs: testcluster.Addrs(t), ReadOnly: true,
			DialTimeout: 2 * time.Second, ReadTimeout: 3 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = ro.Close() })
		s, err := store.New(e.c, ro, store.Options{Timeout: 5 * time.Second})
		if err != nil {
			t.Fatal(err)
		}
		if err := store.Preload(ctx, e.c); err != nil {
			t.Fatalf("Preload: %v", err)
		}
		if _, err := s.Seek(ctx, ka.Z, store.SeekArgs{Mode: store.SeekTop, Limit: 10}, true); err != nil {
			t.Errorf("Seek on replica: %v", err)
		}
		if _, err := s.Positions(ctx, ka.Z, []store.Probe{{Score: 0, Member: "u1", MoreMin: 1}}, true); err != nil {
			t.Errorf("Positions on replica: %v", err)
		}
	})
}

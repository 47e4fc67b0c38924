package store_test

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/store"
)

// TestWriteIndexesMemberBoards checks the member board index a write keeps
// (store.Write.Index): every acknowledged write's board shard is listed,
// whatever the script answered and whatever the index held before, and an
// erasure takes the index whole while later writes fill a fresh one.
func TestWriteIndexesMemberBoards(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	// slow: a store whose every write counts as slower than its window, so
	// each is indexed again after its script answered.
	slow, err := store.New(e.c, nil, store.Options{Timeout: 5 * time.Second, IndexWindow: time.Nanosecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(slow.Close)
	// quick: an erasure that waits only a millisecond after taking the index.
	quick, err := store.New(e.c, nil, store.Options{Timeout: 5 * time.Second, IndexWindow: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(quick.Close)

	type fx struct {
		ctx   context.Context
		k     shard.Keys
		idx   string
		write func(s *store.Store, id string) store.WriteResult
	}
	cases := []struct {
		name string
		run  func(t *testing.T, f fx)
	}{
		{"a first write is indexed in its own pipeline", func(t *testing.T, f fx) {
			if r := f.write(e.s, "e1"); r.Err != nil || r.Status != store.StatusOK || r.Before != nil {
				t.Fatalf("first write: %+v, want ok and placed", r)
			}
			wantIndexed(t, f.ctx, e, f.idx, f.k.Z)
		}}, {"one Write of several members indexes each on its own", func(t *testing.T, f fx) {
			var ws []store.Write
			members := []string{"ma", "mb", "ma", "mc", "mb", "ma"}
			for i, m := range members {
				b := shard.Board{Family: "idxm", Period: "all", DimType: "class", DimValue: string(rune('a' + i))}
				w := apply("e1", m, "sum", 5, 0)
				w.Keys, w.Index, w.MaxPoints, w.NowMs, w.Rules = e.layout.Keys(b, 0, 1), e.layout.MemberBoards(m), 1000, 1, testRules
				ws = append(ws, w)
			}
			for i, r := range e.s.Write(f.ctx, ws) {
				if r.Err != nil || r.Status != store.StatusOK {
					t.Fatalf("write %d: %+v", i, r)
				}
			}
			for _, m := range []string{"ma", "mb", "mc"} {
				zs, err := e.s.MemberBoards(f.ctx, e.layout.MemberBoards(m))
				if err != nil {
					t.Fatal(err)
				}
				var want []string
				for i, w := range ws {
					if members[i] == m {
						want = append(want, w.Keys.Z)
					}
				}
				slices.Sort(zs)
				slices.Sort(want)
				if !slices.Equal(zs, want) {
					t.Errorf("index of %s: %v, want %v", m, zs, want)
				}
			}
		}}, {"a slow write is indexed again after its script", func(t *testing.T, f fx) {
			if r := f.write(slow, "e1"); r.Err != nil || r.Status != store.StatusOK {
				t.Fatalf("slow write: %+v", r)
			}
			wantIndexed(t, f.ctx, e, f.idx, f.k.Z)
		}}, {"any write puts back an entry the index lost", func(t *testing.T, f fx) {
			if r := f.write(e.s, "e1"); r.Err != nil {
				t.Fatal(r.Err)
			}
			if err := e.c.Del(f.ctx, f.idx).Err(); err != nil {
				t.Fatal(err)
			}
			// Not a replay, and the member is on the shard already.
			if r := f.write(e.s, "e2"); r.Err != nil || r.Status != store.StatusOK || r.Before == nil {
				t.Fatalf("second write: %+v, want ok on a shard the member was on", r)
			}
			wantIndexed(t, f.ctx, e, f.idx, f.k.Z)
		}}, {"a failed index add fails the write; its retry indexes", func(t *testing.T, f fx) {
			if err := e.c.Set(f.ctx, f.idx, "not a set", 0).Err(); err != nil {
				t.Fatal(err)
			}
			if r := f.write(e.s, "e1"); r.Err == nil {
				t.Fatalf("write with a broken index: %+v, want an error", r)
			}
			if err := e.c.Del(f.ctx, f.idx).Err(); err != nil {
				t.Fatal(err)
			}
			if r := f.write(e.s, "e1"); r.Err != nil || r.Status != store.StatusDup {
				t.Fatalf("retry: %+v, want a replay", r)
			}
			wantIndexed(t, f.ctx, e, f.idx, f.k.Z)
		}}, {"an erasure takes the index; later writes fill a fresh one", func(t *testing.T, f fx) {
			if r := f.write(e.s, "e1"); r.Err != nil {
				t.Fatal(r.Err)
			}
			zs, err := quick.TakeIndex(f.ctx, f.idx)
			if err != nil || !slices.Equal(zs, []string{f.k.Z}) {
				t.Fatalf("TakeIndex: %v %v, want [%s]", zs, err, f.k.Z)
			}
			if n := e.c.Exists(f.ctx, f.idx).Val(); n != 0 {
				t.Fatal("the index is still there after the take")
			}
			// A write during the erasure: in the fresh index.
			if r := f.write(e.s, "e2"); r.Err != nil {
				t.Fatal(r.Err)
			}
			if got := e.c.SMembers(f.ctx, f.idx).Val(); !slices.Equal(got, []string{f.k.Z}) {
				t.Fatalf("fresh index: %v, want [%s]", got, f.k.Z)
			}
			// The erasure forgets what it erased in its work set only.
			if err := e.s.ForgetBoards(f.ctx, shard.IndexWork(f.idx), zs); err != nil {
				t.Fatal(err)
			}
			wantIndexed(t, f.ctx, e, f.idx, f.k.Z)
		}}, {"a take answers what an earlier erasure left", func(t *testing.T, f fx) {
			if r := f.write(e.s, "e1"); r.Err != nil {
				t.Fatal(r.Err)
			}
			if _, err := quick.TakeIndex(f.ctx, f.idx); err != nil {
				t.Fatal(err)
			}
			// Cut short: nothing forgotten. Another board shard meanwhile.
			other := shard.Board{Family: f.k.Tag + "x", Period: "all", DimType: shard.National}
			w := apply("e9", "late", "sum", 1, 0)
			w.Keys, w.Index, w.MaxPoints, w.NowMs, w.Rules = e.layout.Keys(other, 0, 1), f.idx, 1000, 1, testRules
			if r := e.s.Write(f.ctx, []store.Write{w})[0]; r.Err != nil {
				t.Fatal(r.Err)
			}
			zs, err := quick.TakeIndex(f.ctx, f.idx)
			slices.Sort(zs)
			want := []string{f.k.Z, w.Keys.Z}
			slices.Sort(want)
			if err != nil || !slices.Equal(zs, want) {
				t.Fatalf("second TakeIndex: %v %v, want %v", zs, err, want)
			}
		}},
	}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			ctx := ctxT(t, 15*time.Second)
			member := "u" + string(rune('a'+i))
			b := shard.Board{Family: "idx" + string(rune('a'+i)), Period: "all", DimType: shard.National}
			k := e.layout.Keys(b, shard.Of(member, 4), 4)
			idx := e.layout.MemberBoards(member)
			write := func(s *store.Store, id string) store.WriteResult {
				w := apply(id, member, "sum", 5, 0)
				w.Keys, w.Index, w.MaxPoints, w.NowMs, w.Rules = k, idx, 1000, 1, testRules
				return s.Write(ctx, []store.Write{w})[0]
			}
			c.run(t, fx{ctx: ctx, k: k, idx: idx, write: write})
		})
	}
}

func wantIndexed(t *testing.T, ctx context.Context, e *env, idx, z string) {
	t.Helper()
	zs, err := e.s.MemberBoards(ctx, idx)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(zs, z) {
		t.Fatalf("index %s = %v, want it to list %s", idx, zs, z)
	}
}

package gateway

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rankgate/rankgate/internal/config"
	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/readplan"
	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/store"
)

// twoNodes puts the 4 shards of family f on two nodes: even shards on "a",
// odd ones on "b".
func twoNodes(keys map[string]int) func(key string) string {
	return func(key string) string {
		if keys[key]%2 == 0 {
			return "a"
		}
		return "b"
	}
}

// TestFanoutOnePipelinePerNode: every fan-out phase sends one pipeline per
// node carrying all that node's shards — never a call per shard.
func TestFanoutOnePipelinePerNode(t *testing.T) {
	t.Parallel()
	fb := &fakeBackend{}
	svc := newFakeService(t, fb, nil, time.Minute)
	keys := shardKeys(svc, "f")
	// Shards 1 and 3 hold the whole top: both are asked a second time.
	cannedBoardOf(t, svc, fb, "f", 160, func(j, i int) int64 {
		if i%2 == 1 {
			return 1000 + int64(j%7)
		}
		return int64(j % 7)
	})
	fb.nodeOf = twoNodes(keys)
	var mu sync.Mutex
	var calls []string // "node:shard,shard"
	fb.batch = func(ctx context.Context, node string, ks []string) error {
		var idx []string
		for _, k := range ks {
			idx = append(idx, fmt.Sprint(keys[k]))
		}
		mu.Lock()
		calls = append(calls, node+":"+strings.Join(idx, ","))
		mu.Unlock()
		return nil
	}
	if _, err := svc.Top(context.Background(), nationalRef("f", "all"), 40, primaryRead); err != nil {
		t.Fatal(err)
	}
	sort.Strings(calls)
	// First round: one pipeline per node with both its shards; second round:
	// only node b, with both of its shards again.
	want := []string{"a:0,2", "b:1,3", "b:1,3"}
	if !slices.Equal(calls, want) {
		t.Fatalf("pipelines = %v, want %v", calls, want)
	}
}

// TestNodeFailsInsidePipeline: a node that fails (or times out) fails exactly
// the shards it serves — every read of its pipeline — and nothing else. With
// partial=allow the answer is merged from the other node and names exactly
// that node's shards as missing; without it the read fails naming a shard of
// that node.
func TestNodeFailsInsidePipeline(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name    string
		down    string // node that fails
		block   bool   // it hangs until its deadline instead of refusing
		partial bool
		want    []int // shards of the down node
	}{
		{"node a refuses, partial", "a", false, true, []int{0, 2}},
		{"node b refuses, partial", "b", false, true, []int{1, 3}},
		{"node b times out, partial", "b", true, true, []int{1, 3}},
		{"node a refuses", "a", false, false, []int{0, 2}},
		{"node b times out", "b", true, false, []int{1, 3}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			fb := &fakeBackend{}
			timeout := time.Minute
			if c.block {
				timeout = 50 * time.Millisecond
			}
			svc := newFakeService(t, fb, nil, timeout)
			all, home := cannedBoard(t, svc, fb, "f")
			keys := shardKeys(svc, "f")
			fb.nodeOf = twoNodes(keys)
			fb.batch = func(ctx context.Context, node string, _ []string) error {
				if node != c.down {
					return nil
				}
				if c.block {
					<-ctx.Done()
					return ctx.Err()
				}
				return errShardDown
			}
			o := ReadOptions{Consistency: ConsistencyPrimary, AllowPartial: c.partial}
			page, err := svc.Top(context.Background(), nationalRef("f", "all"), 10, o)
			cnt, cerr := svc.Count(context.Background(), nationalRef("f", "all"), 0, 100, o)
			if !c.partial {
				for what, e := range map[string]error{"top": err, "count": cerr} {
					wantRankErr(t, what, e, rank.CodeUnavailable, "")
					named := false
					for _, i := range c.want {
						named = named || strings.Contains(e.Error(), fmt.Sprintf("from shard %d:", i))
					}
					if !named {
						t.Fatalf("%s: %q names none of the down node's shards %v", what, e, c.want)
					}
					if c.block && !errors.Is(e, context.DeadlineExceeded) || !c.block && !errors.Is(e, errShardDown) {
						t.Fatalf("%s: %v does not wrap the node's failure", what, e)
					}
				}
				return
			}
			if err != nil || cerr != nil {
				t.Fatalf("top: %v; count: %v", err, cerr)
			}
			var want []rank.Item
			var wantCount int64
			for _, it := range all {
				if !slices.Contains(c.want, home[it.Member]) {
					want = append(want, it)
					wantCount++
				}
			}
			want = want[:min(10, len(want))]
			if len(page.Entries) != len(want) {
				t.Fatalf("top = %+v, want %+v", page.Entries, want)
			}
			for i, w := range want {
				if e := page.Entries[i]; e.User != w.Member || e.Points != w.Score {
					t.Fatalf("entry %d = %+v, want %+v", i, e, w)
				}
			}
			for what, meta := range map[string]ReadMeta{"top": page.ReadMeta, "count": cnt.ReadMeta} {
				if !meta.Partial || !slices.Equal(meta.MissingShards, c.want) {
					t.Fatalf("%s: partial %v missing %v, want true %v", what, meta.Partial, meta.MissingShards, c.want)
				}
			}
			if cnt.Count != wantCount {
				t.Fatalf("count = %d, want %d", cnt.Count, wantCount)
			}
		})
	}
}

// TestTopReadsPerShard: an uncached Top-100 of a 16-shard board sends at
// most two reads per shard (a first round from every shard's head, a second
// only for shards that may hold more), the first round as native ZREVRANGE.
func TestTopReadsPerShard(t *testing.T) {
	t.Parallel()
	fb, svc := benchService(t, 16, 2000)
	var mu sync.Mutex
	perShard := map[string]int{}
	native := 0
	fb.inspect = func(r *store.ShardRead) {
		mu.Lock()
		defer mu.Unlock()
		perShard[r.Key]++
		if r.Kind == store.ReadSeek && r.Seek.Native() {
			native++
		}
	}
	for _, limit := range []int{100, 10, 1000} {
		clear(perShard)
		native = 0
		p, err := svc.Top(context.Background(), nationalRef("big", "all"), limit, primaryRead)
		if err != nil || len(p.Entries) != limit {
			t.Fatalf("top %d: %d entries, %v", limit, len(p.Entries), err)
		}
		if len(perShard) != 16 || native != 16 {
			t.Fatalf("top %d: %d shards asked, %d native first-round reads; want 16 and 16", limit, len(perShard), native)
		}
		for k, n := range perShard {
			if n > 2 {
				t.Fatalf("top %d: shard %s read %d times, want ≤ 2", limit, k, n)
			}
		}
	}
}

// cannedReads is a Backend for benchmarks: canned shards, answers without
// copying, every key on one of three nodes.
type cannedReads struct {
	fakeBackend
	lists   map[string][]rank.Item
	node    map[string]string
	inspect func(r *store.ShardRead)
}

func (c *cannedReads) NodeOf(ctx context.Context, key string) string { return c.node[key] }

func (c *cannedReads) ReadShards(ctx context.Context, reads []store.ShardRead, replica bool, out []store.ShardReply) {
	for i := range reads {
		r := &reads[i]
		if c.inspect != nil {
			c.inspect(r)
		}
		l := c.lists[r.Key]
		start := 0
		switch {
		case r.Kind != store.ReadSeek:
			out[i] = store.ShardReply{Err: fmt.Errorf("canned: read kind %d", r.Kind)}
			continue
		case r.Seek.Mode == store.SeekAfter:
			place := rank.Item{Score: r.Seek.Score, Member: r.Seek.Member}
			start = sort.Search(len(l), func(j int) bool { return rank.Before(place, l[j]) })
		case !r.Seek.Native():
			out[i] = store.ShardReply{Err: fmt.Errorf("canned: seek %+v", r.Seek)}
			continue
		}
		out[i] = store.ShardReply{Seek: store.SeekResult{Start: int64(start), More: -1, Items: l[start:min(start+r.Seek.Limit, len(l))]}}
	}
}

// benchService is a service over canned boards: family "big" with n shards
// holding members members in all, scores spread so that ties are rare.
func benchService(tb testing.TB, n, members int) (*cannedReads, *Service) {
	tb.Helper()
	cfg, err := config.Parse([]byte(fmt.Sprintf(`listen: "127.0.0.1:0"
redis:
  addrs: ["127.0.0.1:1"]
  prefix: "bn"
families:
  big:
    period: all
    dimensions:
      national: {shards: %d}
`, n)))
	if err != nil {
		tb.Fatal(err)
	}
	cr := &cannedReads{lists: map[string][]rank.Item{}, node: map[string]string{}}
	svc, err := New(Options{Config: cfg, Backend: cr})
	if err != nil {
		tb.Fatal(err)
	}
	b := shard.Board{Family: "big", Period: "all", DimType: shard.National}
	keys := make([]string, n)
	for i := range keys {
		keys[i] = svc.layout.ZKey(b, i, n)
		cr.node[keys[i]] = fmt.Sprint("node", i%3)
	}
	for j := 0; j < members; j++ {
		m := fmt.Sprintf("u%07d", j)
		k := keys[shard.Of(m, n)]
		cr.lists[k] = append(cr.lists[k], rank.Item{Member: m, Score: int64((j * 7919) % (members * 3))})
	}
	for _, k := range keys {
		slices.SortFunc(cr.lists[k], cmpItems)
	}
	return cr, svc
}

// BenchmarkTopUncached pins the gateway's own CPU and allocations for an
// uncached Top-N of a 16-shard board (1 shard for comparison) against canned
// replies: plan, per-node grouping, merge, entries — no Redis, no HTTP.
//
//	go test -run '^$' -bench TopUncached -benchmem ./internal/gateway/
func BenchmarkTopUncached(b *testing.B) {
	for _, bc := range []struct{ shards, limit int }{{16, 100}, {16, 10}, {1, 100}} {
		b.Run(fmt.Sprintf("shards=%d/top=%d", bc.shards, bc.limit), func(b *testing.B) {
			_, svc := benchService(b, bc.shards, 20000)
			ctx := context.Background()
			ref := nationalRef("big", "all")
			b.ReportAllocs()
			for b.Loop() {
				if _, err := svc.Top(ctx, ref, bc.limit, primaryRead); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkSeekAllPlan is the read plan alone (what the load tool's
// baseline runs): first round, second round, merge.
func BenchmarkSeekAllPlan(b *testing.B) {
	cr, svc := benchService(b, 16, 20000)
	r := &readplan.Reader{Backend: cr, Timeout: time.Second}
	bd := &readplan.Board{Keys: make([]string, 16)}
	for i := range bd.Keys {
		bd.Keys[i] = svc.layout.ZKey(shard.Board{Family: "big", Period: "all", DimType: shard.National}, i, 16)
	}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := r.SeekAll(ctx, "top", bd, store.SeekArgs{Mode: store.SeekTop}, 100); err != nil {
			b.Fatal(err)
		}
	}
}

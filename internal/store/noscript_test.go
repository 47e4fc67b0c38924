package store_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/store"
)

const noscriptMetric = "rankgate_redis_noscript_recovered_total"

func flushScripts(t *testing.T, ctx context.Context, cc *redis.ClusterClient) {
	t.Helper()
	err := cc.ForEachShard(ctx, func(ctx context.Context, n *redis.Client) error {
		return n.ScriptFlush(ctx).Err()
	})
	if err != nil {
		t.Fatalf("SCRIPT FLUSH on every node: %v", err)
	}
}

// TestNoScriptRecoveredInPipeline: a node with an empty script cache (restart,
// promoted replica) answers NOSCRIPT to the pipelined EVALSHA, which go-redis
// does not recover (#3228); Store.Write must re-run each such write outside
// the pipeline. Not parallel: the package's parallel tests (which reload the
// scripts through EVAL) wait until it is done.
func TestNoScriptRecoveredInPipeline(t *testing.T) {
	e := newEnv(t)
	ctx := ctxT(t, 20*time.Second)
	if err := store.Preload(ctx, e.c); err != nil {
		t.Fatalf("Preload: %v", err)
	}
	b := shard.Board{Family: "learning", Period: "2026-W34", DimType: shard.National}
	const n = 16
	masters := map[string]bool{}
	for i := 0; i < n; i++ {
		m, err := e.cc.MasterForKey(ctx, e.layout.Keys(b, i, n).Z)
		if err != nil {
			t.Fatal(err)
		}
		masters[m.Options().Addr] = true
	}
	if len(masters) < 2 {
		t.Fatalf("the %d shards live on %d master(s); want several", n, len(masters))
	}

	// Another process may reload the scripts between our SCRIPT FLUSH and our
	// pipeline; then fewer writes meet NOSCRIPT. Try a few rounds and require
	// one in which every write met NOSCRIPT and was recovered.
	const rounds = 5
	recoveredAll := false
	total := map[string]int64{}
	shardOf := map[string]int{}
	for r := 0; r < rounds && !recoveredAll; r++ {
		ws := make([]store.Write, n)
		for i := range ws {
			ws[i] = store.Write{Kind: store.KindApply, Keys: e.layout.Keys(b, i, n),
				EventID: fmt.Sprintf("e%d-%d", r, i), Member: fmt.Sprintf("u%d", i), Mode: "sum",
				Value: int64(i + 1), MaxPoints: 1 << 40, NowMs: 1, Rules: "r1"}
		}
		before := counterValue(t, e.reg, noscriptMetric)
		flushScripts(t, ctx, e.cc)
		res := e.s.Write(ctx, ws)
		for i, w := range ws {
			if res[i].Err != nil || res[i].Status != "ok" {
				t.Fatalf("round %d write %d on %s: status %q err %v", r, i, w.Keys.Tag, res[i].Status, res[i].Err)
			}
			total[w.Member] += w.Value
			shardOf[w.Member] = i
			if res[i].After == nil || *res[i].After != total[w.Member] {
				t.Fatalf("round %d write %d: after %v, want %d", r, i, res[i].After, total[w.Member])
			}
		}
		delta := counterValue(t, e.reg, noscriptMetric) - before
		t.Logf("round %d: %v of %d pipelined writes recovered from NOSCRIPT", r, delta, n)
		if delta < 1 && r == 0 {
			t.Logf("no NOSCRIPT at all: another process reloaded the scripts right after the flush")
		}
		recoveredAll = delta == n
	}
	if !recoveredAll {
		t.Fatalf("%s never rose by %d in %d rounds of flush+write", noscriptMetric, n, rounds)
	}
	for m, want := range total {
		got, err := e.c.ZScore(ctx, e.layout.Keys(b, shardOf[m], n).Z, m).Result()
		if err != nil || int64(got) != want {
			t.Errorf("ZSCORE %s = %v, %v; want %d", m, got, err, want)
		}
	}
	if v := counterValue(t, e.reg, "rankgate_script_errors_total"); v != 0 {
		t.Errorf("rankgate_script_errors_total = %v, want 0", v)
	}

	// Reads use Script.Run, which falls back to EVAL on NOSCRIPT.
	flushScripts(t, ctx, e.cc)
	for i := 0; i < n; i++ {
		k := e.layout.Keys(b, i, n).Z
		r, err := e.s.Seek(ctx, k, store.SeekArgs{Mode: store.SeekTop, Limit: 10}, false)
		if err != nil {
			t.Fatalf("Seek on shard %d after SCRIPT FLUSH: %v", i, err)
		}
		m := fmt.Sprintf("u%d", i)
		if len(r.Items) != 1 || r.Items[0].Member != m || r.Items[0].Score != total[m] {
			t.Errorf("Seek shard %d: %+v, want [%s %d]", i, r.Items, m, total[m])
		}
	}
	flushScripts(t, ctx, e.cc)
	for i := 0; i < n; i++ {
		k := e.layout.Keys(b, i, n).Z
		p, err := e.s.Positions(ctx, k, []store.Probe{{Score: 0, Member: "x", MoreMin: 1, SameMin: 0}}, false)
		if err != nil {
			t.Fatalf("Positions on shard %d after SCRIPT FLUSH: %v", i, err)
		}
		if p.Card != 1 || p.Ahead[0] != 1 || p.More[0] != 1 || p.AtLeast[0] != 1 {
			t.Errorf("Positions shard %d: %+v", i, p)
		}
	}
	// Leave the cluster with the scripts cached, as other tests expect.
	if err := store.Preload(ctx, e.c); err != nil {
		t.Fatalf("Preload: %v", err)
	}
}

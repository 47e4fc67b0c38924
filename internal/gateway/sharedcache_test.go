package gateway

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rankgate/rankgate/internal/store"
)

const sharedFamilies = `  shared:
    period: all
    tie: member
    rank: ordinal
    cache_ttl: 1s
    cache_shared: true
    dimensions:
      national: {shards: 16}
  local:
    period: all
    tie: member
    rank: ordinal
    cache_ttl: 1s
    dimensions:
      national: {shards: 16}
`

// TestSharedCacheOneFanoutPerTTL: three gateways (Services with their own
// local caches) on one cluster. With cache_shared, a burst of cached Top
// reads on all three costs one fan-out per TTL in all; the copy another
// gateway made is answered as source cache, as of its date, and equals the
// board. Without it, every gateway fans out once per TTL.
func TestSharedCacheOneFanoutPerTTL(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)}
	const gateways = 3
	svcs := make([]*Service, gateways)
	regs := make([]*prometheus.Registry, gateways)
	prefix := ""
	for g := range svcs {
		regs[g] = prometheus.NewRegistry()
		svcs[g] = newClusterServiceWith(t, sharedFamilies, func(o *Options, st *store.Store) {
			if g == 0 {
				prefix = o.Config.Redis.Prefix
			}
			o.Config.Redis.Prefix = prefix // one cluster, one key space: three gateways of one deployment
			o.Registerer, o.Now = regs[g], clk.Now
		})
	}
	ctx := context.Background()
	for _, fam := range []string{"shared", "local"} {
		var evs []Event
		for i := 0; i < 200; i++ {
			evs = append(evs, Event{EventID: fmt.Sprintf("%s%d", fam, i), Family: fam, User: fmt.Sprintf("u%04d", i), Delta: ptr(int64(1 + i%53))})
		}
		items, err := svcs[0].ApplyBatch(ctx, evs)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range items {
			if it.Err != nil {
				t.Fatal(it.Err)
			}
		}
	}
	fanouts := func() float64 {
		var n float64
		for _, r := range regs {
			n += metricValue(t, r, "rankgate_fanout_width", map[string]string{"op": "top"})
		}
		return n
	}
	cases := []struct {
		fam  string
		want float64 // fan-outs per TTL, all gateways together
	}{
		{"shared", 1},
		{"local", gateways},
	}
	for _, c := range cases {
		ref := BoardRef{Family: c.fam, Period: "all", Dimension: "national"}
		want, err := svcs[0].Top(ctx, ref, 10, primaryRead)
		if err != nil {
			t.Fatal(err)
		}
		for round := 0; round < 3; round++ {
			before := fanouts()
			var wg sync.WaitGroup
			errs := make(chan error, 2*gateways*40)
			for g := range gateways {
				for range 40 {
					wg.Go(func() {
						p, err := svcs[g].Top(ctx, ref, 10, ReadOptions{})
						if err != nil {
							errs <- err
							return
						}
						if p.Source != SourceCache && p.Source != SourcePrimary || len(p.Entries) != len(want.Entries) {
							errs <- fmt.Errorf("gateway %d: source %q, %d entries, want %d", g, p.Source, len(p.Entries), len(want.Entries))
							return
						}
						for i, e := range p.Entries {
							if e.User != want.Entries[i].User || e.Points != want.Entries[i].Points || e.Rank != want.Entries[i].Rank {
								errs <- fmt.Errorf("gateway %d entry %d = %+v, want %+v", g, i, e, want.Entries[i])
								return
							}
						}
					})
				}
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Fatalf("%s round %d: %v", c.fam, round, err)
			}
			if got := fanouts() - before; got != c.want {
				var out []string
				for g, r := range regs {
					for _, o := range []string{"hit", "computed", "stale", "waited", "fallback", "error"} {
						if v := metricValue(t, r, "rankgate_shared_cache_total", map[string]string{"family": c.fam, "outcome": o}); v > 0 {
							out = append(out, fmt.Sprintf("g%d %s=%v", g, o, v))
						}
					}
				}
				t.Fatalf("%s round %d: %v fan-outs across %d gateways, want %v (shared cache outcomes so far: %v)", c.fam, round, got, gateways, c.want, out)
			}
			clk.Add(time.Second + 10*time.Millisecond) // every copy is now stale
		}
	}
	// A gateway that did not compute the copy answers it as a cache hit,
	// dated when the one that did computed it.
	ref := BoardRef{Family: "shared", Period: "all", Dimension: "national"}
	p0, err := svcs[0].Top(ctx, ref, 5, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	clk.Add(100 * time.Millisecond)
	p1, err := svcs[1].Top(ctx, ref, 5, ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p1.Source != SourceCache || !p1.AsOf.Equal(p0.AsOf) || p1.MaxAge != 900*time.Millisecond {
		t.Fatalf("gateway 1: source %q as of %v max-age %v; want cache as of %v (gateway 0's load), max-age 900ms", p1.Source, p1.AsOf, p1.MaxAge, p0.AsOf)
	}
	if got := metricValue(t, regs[1], "rankgate_shared_cache_total", map[string]string{"family": "shared", "outcome": "hit"}); got < 1 {
		t.Fatalf("rankgate_shared_cache_total{outcome=hit} on gateway 1 = %v, want ≥ 1", got)
	}
}

package gateway

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/store"
)

// The families of BenchmarkColumnsVsPlain: the same rules (max, tie member,
// competition, 16 shards) with no, one and two sort columns.
const benchColsYAML = `  plain:
    aggregate: max
    period: all
    cache_ttl: 0s
    dimensions:
      national: {shards: 16}
  one:
    aggregate: max
    period: all
    cache_ttl: 0s
    columns:
      - {name: time_ms, order: asc, max: 86400000}
    dimensions:
      national: {shards: 16}
  race:
    aggregate: max
    period: all
    cache_ttl: 0s
    columns:
      - {name: time_ms, order: asc, max: 86400000}
      - {name: kills, order: desc, max: 999}
    dimensions:
      national: {shards: 16}
`

// benchMembers is the board size of the column benchmarks
// (RANKGATE_BENCH_MEMBERS, default 20000).
func benchMembers() int {
	if n, err := strconv.Atoi(os.Getenv("RANKGATE_BENCH_MEMBERS")); err == nil && n > 0 {
		return n
	}
	return 20000
}

// prefillColumns writes the same members and points to every family; zero
// is the share of members with 0 points (the rest uniform in 1..999, so
// equal points are common either way).
func prefillColumns(b *testing.B, svc *Service, members int, zero float64) {
	b.Helper()
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(11, 12))
	evs := map[string][]Event{}
	for j := 0; j < members; j++ {
		u := fmt.Sprintf("u%07d", j)
		v := int64(1 + rng.IntN(999))
		if rng.Float64() < zero {
			v = 0
		}
		t, k := int64(rng.IntN(86400001)), int64(rng.IntN(1000))
		evs["plain"] = append(evs["plain"], Event{EventID: "p" + u, Family: "plain", User: u, Value: ptr(v)})
		evs["one"] = append(evs["one"], Event{EventID: "o" + u, Family: "one", User: u, Value: ptr(v), Columns: map[string]int64{"time_ms": t}})
		evs["race"] = append(evs["race"], Event{EventID: "r" + u, Family: "race", User: u, Value: ptr(v), Columns: map[string]int64{"time_ms": t, "kills": k}})
	}
	for _, fam := range []string{"plain", "one", "race"} {
		all := evs[fam]
		for i := 0; i < len(all); i += 1000 {
			items, err := svc.ApplyBatch(ctx, all[i:min(i+1000, len(all))])
			if err != nil {
				b.Fatal(err)
			}
			for _, it := range items {
				if it.Err != nil {
					b.Fatal(it.Err)
				}
			}
		}
	}
}

// boardBytes is MEMORY USAGE … SAMPLES 0 of every key of a family's
// national board (zset, cols hash, meta), summed over the shards.
func boardBytes(b *testing.B, st *store.Store, svc *Service, fam string) int64 {
	b.Helper()
	ctx := context.Background()
	var total int64
	for i := 0; i < 16; i++ {
		k := svc.layout.Keys(shard.Board{Family: fam, Period: "all", DimType: shard.National}, i, 16)
		for _, key := range []string{k.Z, k.Cols, k.Meta} {
			n, err := st.Primary().MemoryUsage(ctx, key, 0).Result()
			if err != nil && err.Error() != "redis: nil" {
				b.Fatal(err)
			}
			total += n
		}
	}
	return total
}

// BenchmarkColumnsVsPlain measures, side by side on the real test cluster,
// uncached (consistency=primary) Top-100 and a member's standing (position,
// competition rank, percentile) on a family with two sort columns ("race")
// against the same reads on a family without columns ("plain"): the same
// members and points, the same 16 shards, the same gateway. Each iteration
// reads both families once, in alternating order, so both see the same
// load; the metrics are the mean µs per read of each and their ratio. The
// memory sub-benchmark reports MEMORY USAGE per member of plain, one column
// and two columns.
//
//	make test-cluster-up TEST_CLUSTER_PORT=7130
//	RANKGATE_TEST_REDIS_CLUSTER=$(deploy/cluster/cluster.sh -p 7130 addrs) \
//	  go test -run '^$' -bench ColumnsVsPlain -benchtime 3000x ./internal/gateway/
func BenchmarkColumnsVsPlain(b *testing.B) {
	for _, dist := range []struct {
		name string
		zero float64
	}{{"uniform", 0}, {"zero90", 0.9}} {
		b.Run(dist.name, func(b *testing.B) { benchColumnsDist(b, dist.zero) })
	}
}

func benchColumnsDist(b *testing.B, zero float64) {
	var st *store.Store
	svc := newClusterServiceWith(b, benchColsYAML, func(_ *Options, s *store.Store) { st = s })
	members := benchMembers()
	prefillColumns(b, svc, members, zero)
	ctx := context.Background()
	o := ReadOptions{Consistency: ConsistencyPrimary}
	plain := BoardRef{Family: "plain", Period: "all", Dimension: "national"}
	race := BoardRef{Family: "race", Period: "all", Dimension: "national"}
	side := func(b *testing.B, read func(ref BoardRef, k int) error) {
		var dp, dc time.Duration
		k := 0
		for b.Loop() {
			refs := []BoardRef{plain, race}
			if k%2 == 1 {
				refs[0], refs[1] = race, plain
			}
			for _, ref := range refs {
				start := time.Now()
				if err := read(ref, k); err != nil {
					b.Fatal(err)
				}
				if ref == plain {
					dp += time.Since(start)
				} else {
					dc += time.Since(start)
				}
			}
			k++
		}
		if k > 0 {
			b.ReportMetric(float64(dp.Microseconds())/float64(k), "plain-µs/read")
			b.ReportMetric(float64(dc.Microseconds())/float64(k), "cols-µs/read")
			b.ReportMetric(float64(dc)/float64(dp), "cols/plain")
		}
	}
	b.Run("top100", func(b *testing.B) {
		side(b, func(ref BoardRef, _ int) error {
			p, err := svc.Top(ctx, ref, 100, o)
			if err == nil && len(p.Entries) != 100 {
				err = fmt.Errorf("top: %d entries", len(p.Entries))
			}
			return err
		})
	})
	b.Run("rank", func(b *testing.B) {
		rng := rand.New(rand.NewPCG(3, 4))
		users := make([]string, 4096) // iteration k reads users[k] on both families
		for i := range users {
			users[i] = fmt.Sprintf("u%07d", rng.IntN(members))
		}
		side(b, func(ref BoardRef, k int) error {
			_, err := svc.Member(ctx, ref, users[k%len(users)], o)
			return err
		})
	})
	b.Run("memory", func(b *testing.B) {
		for b.Loop() {
		}
		n := float64(members)
		p, one, two := boardBytes(b, st, svc, "plain"), boardBytes(b, st, svc, "one"), boardBytes(b, st, svc, "race")
		b.ReportMetric(float64(p)/n, "plain-B/member")
		b.ReportMetric(float64(one)/n, "1col-B/member")
		b.ReportMetric(float64(two)/n, "2cols-B/member")
		b.ReportMetric(float64(two-one)/n, "2nd-col-B/member")
	})
}

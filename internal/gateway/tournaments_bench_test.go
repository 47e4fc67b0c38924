package gateway

import (
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/rankgate/rankgate/internal/competition"
	"github.com/rankgate/rankgate/internal/ledger"
	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/store"
)

// BenchmarkTournamentJoinStorm: 1000 concurrent joins of a tournament with
// max_size 100 on the real cluster, through the gateway's Join (no HTTP).
// Each iteration is one storm on a fresh tournament (a cold period: the
// storm at a tournament's start); it fails unless exactly 100 get in. The
// yardstick, in the same run: 1000 concurrent single commands (HLEN of the
// seats) through the same client — what 1000 concurrent round trips cost on
// this machine now. Reports the latency percentiles of one call.
//
//	go test ./internal/gateway/ -run '^$' -bench TournamentJoinStorm -benchtime 5x
func BenchmarkTournamentJoinStorm(b *testing.B) {
	svc := newClusterService(b, tourFamilies)
	ctx := ctxT(b, 5*time.Minute)
	const n, size = 1000, 100
	it := 0
	storm := func(b *testing.B, shards int, call func(tr competition.Tournament, i int) error) {
		var lat []time.Duration
		for b.Loop() {
			b.StopTimer()
			tr := running(fmt.Sprintf("storm%d", it), time.Now())
			it++
			tr.MaxSize, tr.JoinRequired, tr.Shards = ptr(int64(size)), true, ptr(shards)
			mustCreate(b, svc, tr)
			start := make(chan struct{})
			var wg sync.WaitGroup
			ds := make([]time.Duration, n)
			errs := make([]error, n)
			for i := range n {
				wg.Go(func() {
					<-start
					t0 := time.Now()
					errs[i] = call(tr, i)
					ds[i] = time.Since(t0)
				})
			}
			b.StartTimer()
			close(start)
			wg.Wait()
			b.StopTimer()
			for _, err := range errs {
				if err != nil {
					b.Fatal(err)
				}
			}
			lat = append(lat, ds...)
			b.StartTimer()
		}
		slices.Sort(lat)
		q := func(p float64) float64 { return float64(lat[int(p*float64(len(lat)-1))].Microseconds()) / 1000 }
		b.ReportMetric(q(0.5), "p50-ms")
		b.ReportMetric(q(0.99), "p99-ms")
	}
	join := func(b *testing.B, shards int) {
		var in, full atomic.Int64
		storm(b, shards, func(tr competition.Tournament, i int) error {
			r, err := svc.Join(ctx, tr.ID, fmt.Sprintf("u%d", i))
			switch {
			case err == nil && r.Joined:
				in.Add(1)
			case rank.CodeOf(err) == rank.CodeTournamentFull:
				full.Add(1)
			default:
				return fmt.Errorf("join %d: %+v, %v", i, r, err)
			}
			return nil
		})
		if in.Load() != int64(size*b.N) || full.Load() != int64((n-size)*b.N) {
			b.Fatalf("%d in, %d full over %d storms; want %d and %d each", in.Load(), full.Load(), b.N, size, n-size)
		}
	}
	// One shard: every seat and mark in the seats shard; 16: a joined
	// member is marked on their own shard too.
	b.Run("join", func(b *testing.B) { join(b, 1) })
	b.Run("join_16_shards", func(b *testing.B) { join(b, 16) })
	b.Run("one_command_yardstick", func(b *testing.B) {
		storm(b, 1, func(tr competition.Tournament, i int) error {
			_, err := svc.tourBE.JoinSize(ctx, "{"+tr.ID+"}:x")
			return err
		})
	})
}

// BenchmarkTournamentWrite: event writes to a tournament board with join
// required and max_attempts (the gated script), and to one without per-member
// checks, against the same writes to a configured family of the same shape
// (one shard, sum), in the same run, through the gateway's ApplyEvent (no
// HTTP): per iteration, 2000 events by 32 writers to each, in rotating order;
// in Redis-only mode and in ledger mode.
//
//	go test ./internal/gateway/ -run '^$' -bench TournamentWrite -benchtime 20x
func BenchmarkTournamentWrite(b *testing.B) {
	b.Run("redis-only", func(b *testing.B) { tournamentWrites(b, false) })
	b.Run("ledger", func(b *testing.B) { tournamentWrites(b, true) })
}

// tournamentWrites is BenchmarkTournamentWrite in one mode (ledger: the
// checks run in gate.lua before the ledger commit).
func tournamentWrites(b *testing.B, inLedger bool) {
	var st *store.Store
	var l *ledger.Ledger
	if inLedger {
		l = openTestLedger(b)
	}
	svc := newClusterServiceWith(b, tourFamilies, func(o *Options, s *store.Store) {
		st = s
		if l != nil {
			o.Ledger = l
		}
	})
	ctx := ctxT(b, 5*time.Minute)
	// Every board on the master that serves the configured family's board:
	// the comparison is of the write paths, not of two Redis processes.
	f, err := svc.family("weekly")
	if err != nil {
		b.Fatal(err)
	}
	node := st.NodeOf(ctx, svc.layout.ZKey(f.board(f.spec.At(time.Now()).ID, "national", ""), 0, 1))
	sameNode := func(prefix string) string {
		for i := range 1000 {
			id := fmt.Sprintf("%s%d", prefix, i)
			if st.NodeOf(ctx, svc.layout.ZKey(shard.Board{Family: id, Period: "p", DimType: "national"}, 0, 1)) == node {
				return id
			}
		}
		b.Fatalf("no id for %s on node %s", prefix, node)
		return ""
	}
	gated, plain := sameNode("wcup"), sameNode("wplain")
	tr := running(gated, time.Now())
	tr.JoinRequired, tr.MaxAttempts = true, ptr(int64(1_000_000))
	mustCreate(b, svc, tr)
	mustCreate(b, svc, running(plain, time.Now())) // a tournament without per-member checks
	const members = 1000
	for i := range members {
		if _, err := svc.Join(ctx, gated, fmt.Sprintf("u%d", i)); err != nil {
			b.Fatal(err)
		}
	}
	// Rounds interleave the three, in a rotating order, so that the load of
	// the (shared) machine falls on all of them alike.
	fams := []string{"weekly", gated, plain}
	var spent [3]time.Duration
	const perRound, writers = 2000, 32
	round := 0
	for b.Loop() {
		for k := range fams {
			j := (k + round) % len(fams)
			fam := fams[j]
			var seq atomic.Int64
			var wg sync.WaitGroup
			t0 := time.Now()
			for range writers {
				wg.Go(func() {
					for {
						i := seq.Add(1)
						if i > perRound {
							return
						}
						ev := sumEv(fmt.Sprintf("%s-%d-%d", fam, round, i), fam, fmt.Sprintf("u%d", i%members), 1, nil)
						if _, err := svc.ApplyEvent(ctx, ev); err != nil {
							b.Error(err)
							return
						}
					}
				})
			}
			wg.Wait()
			spent[j] += time.Since(t0)
		}
		round++
	}
	rate := func(j int) float64 { return float64(perRound*round) / spent[j].Seconds() }
	b.ReportMetric(rate(0), "configured-ev/s")
	b.ReportMetric(rate(1), "gated-ev/s")
	b.ReportMetric(rate(2), "plain-ev/s")
	b.ReportMetric(rate(1)/rate(0), "gated/configured")
	b.ReportMetric(rate(2)/rate(0), "plain/configured")
}

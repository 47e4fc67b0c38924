package main

// Freshness and idle cost of fanoutbench -index (index.go).

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"math"
	"math/rand/v2"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/internal/monitor"
	"github.com/rankgate/rankgate/internal/store"
)

// Freshness.

// freshLoop is one freshness open loop: rate events/s in requests of batch.
type freshLoop struct{ rate, batch int }

func (l freshLoop) String() string {
	if l.batch == 1 {
		return fmt.Sprintf("%d events/s, single events", l.rate)
	}
	return fmt.Sprintf("%d events/s in batches of %d", l.rate, l.batch)
}

type freshResult struct {
	freshLoop
	shed, shedPolls int64   // answered 503 (the gateway's max_inflight): events, polls
	cpu             float64 // the gateway's CPU over the loop, cores
	// Controls of the machine's own stalls over the same loop: the writes'
	// latency (send → ack), the polls' (an HTTP read answered from
	// memory) and a PING of every master every 10 ms from this process.
	ackLat, pollLat, pingLat []time.Duration
	sent, acked, skipped     int64
	took                     time.Duration
	samples                  []time.Duration // ack → visible, sorted
	notVisible               int64           // not visible within 5 s
	notIndex                 int64           // polls answered by another source
	polls                    int64
	hist                     []bucket // rankgate_index_visible_seconds over the loop
}

func pct(ds []time.Duration, q float64) time.Duration {
	if len(ds) == 0 {
		return 0
	}
	i := int(math.Ceil(q*float64(len(ds)))) - 1
	return ds[min(max(i, 0), len(ds)-1)]
}

func (f freshResult) print(r int) {
	n := f.hist[len(f.hist)-1].n
	fmt.Printf("round %d  freshness, %s: %d events in %.1fs (%.0f/s acknowledged, %d shed by the gateway (503), %d not sent: too many in flight), %d sampled: ack → visible through consistency=index p50 %.1f ms, p99 %.1f ms, max %.1f ms (%d not visible within 5 s, %d polls, %d shed, %d answered by another source); rankgate_index_visible_seconds (%.0f entries): p50 %.1f ms, p99 %.1f ms; gateway CPU %.0f%% of a core; the machine's stalls: write ack p50/p99 %.1f/%.1f ms, poll (read from memory over HTTP) p50/p99 %.1f/%.1f ms, PING of a master p50/p99 %.2f/%.1f ms\n",
		r, f.freshLoop, f.sent, f.took.Seconds(), float64(f.acked)/f.took.Seconds(), f.shed, f.skipped, len(f.samples),
		ms(pct(f.samples, .5)), ms(pct(f.samples, .99)), ms(pct(f.samples, 1)), f.notVisible, f.polls, f.shedPolls, f.notIndex,
		n, 1000*quantile(.5, f.hist), 1000*quantile(.99, f.hist), 100*f.cpu,
		ms(pct(f.ackLat, .5)), ms(pct(f.ackLat, .99)), ms(pct(f.pollLat, .5)), ms(pct(f.pollLat, .99)), ms(pct(f.pingLat, .5)), ms(pct(f.pingLat, .99)))
}

func ms(d time.Duration) float64 { return float64(d) / 1e6 }

// freshness runs the open loop on the indexed family and polls a sample of
// its writes until they are visible through consistency=index.
func freshness(ctx context.Context, o options, hc *http.Client, rc redis.UniversalClient, base string, g *gatewayProc, l freshLoop) (freshResult, error) {
	x := o.ix
	fam := x.family
	f := freshResult{freshLoop: l}
	batch := l.batch
	before, err := scrape(ctx, hc, g.url)
	if err != nil {
		return f, err
	}
	interval := time.Duration(float64(time.Second) * float64(batch) / float64(l.rate))
	every := max(x.freshEvery/batch, 1)
	// Fewer in flight than the gateway's max_inflight (1000): past it the
	// loop counts events not sent instead of tripping the gateway's limit.
	sem := make(chan struct{}, 512)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var sent, acked, shed, shedPolls, notVisible, notIndex, polls atomic.Int64
	var firstErr atomic.Pointer[error]
	fail := func(err error) { firstErr.CompareAndSwap(nil, &err) }
	start := time.Now()
	end := start.Add(x.freshDuration)
	pingDone := make(chan struct{})
	var pingWG sync.WaitGroup
	pingWG.Go(func() {
		t := time.NewTicker(10 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-pingDone:
				return
			case <-t.C:
			}
			_ = store.ForEachMaster(ctx, rc, func(ctx context.Context, c *redis.Client) error {
				t0 := time.Now()
				err := c.Ping(ctx).Err()
				if err == nil {
					mu.Lock()
					f.pingLat = append(f.pingLat, time.Since(t0))
					mu.Unlock()
				}
				return err
			})
		}
	})
	for i := 0; ; i++ {
		due := start.Add(time.Duration(i) * interval)
		if !due.Before(end) || firstErr.Load() != nil {
			break
		}
		if d := time.Until(due); d > 0 {
			time.Sleep(d)
		}
		select {
		case sem <- struct{}{}:
		default:
			f.skipped += int64(batch)
			continue
		}
		sample := i%every == 0
		wg.Go(func() {
			defer func() { <-sem }()
			r := rand.New(rand.NewPCG(uint64(i), 7))
			user := member(r.IntN(o.members))
			var pts int64
			var err error
			sent.Add(int64(batch))
			t0 := time.Now()
			if batch == 1 {
				pts, err = postEvent(ctx, hc, base, fam, user, 1+r.IntN(10))
			} else {
				pts, err = postBatch(ctx, hc, base, fam, r, o.members, batch, user)
			}
			if err != nil {
				if strings.Contains(err.Error(), ": 503 ") {
					shed.Add(int64(batch))
					return
				}
				fail(err)
				return
			}
			acked.Add(int64(batch))
			ack := time.Now()
			mu.Lock()
			f.ackLat = append(f.ackLat, ack.Sub(t0))
			mu.Unlock()
			if !sample {
				return
			}
			url := base + "/v1/boards/" + fam + "/all/national/members/" + user + "?consistency=index"
			for time.Since(ack) < 5*time.Second {
				p0 := time.Now()
				a, err := getRead(ctx, hc, url)
				polls.Add(1)
				if err == nil {
					mu.Lock()
					f.pollLat = append(f.pollLat, time.Since(p0))
					mu.Unlock()
				}
				switch {
				case err != nil && strings.Contains(err.Error(), ": 503 "):
					shedPolls.Add(1) // the gateway's max_inflight: poll again
				case err != nil:
					fail(err)
					return
				case a.Source != "index":
					notIndex.Add(1)
				case a.Points >= pts: // sum of positive deltas: points only grow
					d := time.Since(ack)
					mu.Lock()
					f.samples = append(f.samples, d)
					mu.Unlock()
					return
				}
				time.Sleep(time.Millisecond)
			}
			notVisible.Add(1)
		})
	}
	f.took = time.Since(start)
	wg.Wait()
	close(pingDone)
	pingWG.Wait()
	for _, l := range [][]time.Duration{f.ackLat, f.pollLat, f.pingLat} {
		slices.Sort(l)
	}
	if e := firstErr.Load(); e != nil {
		return f, fmt.Errorf("freshness: %w", *e)
	}
	after, err := scrape(ctx, hc, g.url)
	if err != nil {
		return f, err
	}
	f.cpu = (after.sum("process_cpu_seconds_total") - before.sum("process_cpu_seconds_total")) / time.Since(start).Seconds()
	f.shedPolls = shedPolls.Load()
	f.sent, f.acked, f.shed, f.notVisible, f.notIndex, f.polls = sent.Load(), acked.Load(), shed.Load(), notVisible.Load(), notIndex.Load(), polls.Load()
	slices.Sort(f.samples)
	match := `family="` + fam + `"`
	f.hist = deltaBuckets(before.buckets("rankgate_index_visible_seconds", match), after.buckets("rankgate_index_visible_seconds", match))
	if len(f.hist) == 0 {
		return f, errors.New("freshness: no rankgate_index_visible_seconds buckets on /metrics")
	}
	return f, nil
}

// Idle.

type idleResult struct {
	cpu, cpuBaseline float64 // gateway CPU seconds per second: indexed, baseline
	indexCmds        float64 // rankgate_index_commands_total per second
	rounds           float64 // rankgate_index_rounds_total per second
	feedCmds         float64 // INFO commandstats: xrange + xrevrange + zcard + zscan per second
	allCmds          float64 // every command but INFO, per second
	byName           map[string]float64
}

func (i idleResult) print(r int, d time.Duration) {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(i.byName)) {
		parts = append(parts, fmt.Sprintf("%s %.1f", k, i.byName[k]))
	}
	fmt.Printf("round %d  idle %s: gateway CPU %.2f%% of a core (baseline gateway without the board %.2f%%), index commands %.1f/s in %.1f rounds/s (rankgate_index_commands_total, _rounds_total), masters' xrange+xrevrange+zcard+zscan %.1f/s, every command but INFO %.1f/s (%s)\n",
		r, d, 100*i.cpu, 100*i.cpuBaseline, i.indexCmds, i.rounds, i.feedCmds, i.allCmds, strings.Join(parts, ", "))
}

// idleCost waits for the follower to settle, then measures x.idle of
// nothing: the gateways' CPU, the index's commands and the masters'.
func idleCost(ctx context.Context, x indexOptions, hc *http.Client, rc redis.UniversalClient, g, baseline *gatewayProc) (idleResult, error) {
	time.Sleep(2 * time.Second) // the feed reads back off to poll_idle
	type snap struct {
		at           time.Time
		cpu, cpuBase float64
		cmds, rounds float64
		stats        map[string]int64
	}
	take := func() (snap, error) {
		var s snap
		s.at = time.Now()
		m, err := scrape(ctx, hc, g.url)
		if err != nil {
			return s, err
		}
		s.cpu, s.cmds, s.rounds = m.sum("process_cpu_seconds_total"), m.sum("rankgate_index_commands_total"), m.sum("rankgate_index_rounds_total")
		mb, err := scrape(ctx, hc, baseline.url)
		if err != nil {
			return s, err
		}
		s.cpuBase = mb.sum("process_cpu_seconds_total")
		s.stats = map[string]int64{}
		var mu sync.Mutex
		err = store.ForEachMaster(ctx, rc, func(ctx context.Context, c *redis.Client) error {
			info, err := c.InfoMap(ctx, "commandstats").Result()
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			for name, st := range monitor.ParseCommandStats(info["Commandstats"]) {
				s.stats[name] += st.Calls
			}
			return nil
		})
		return s, err
	}
	a, err := take()
	if err != nil {
		return idleResult{}, err
	}
	time.Sleep(x.idle)
	b, err := take()
	if err != nil {
		return idleResult{}, err
	}
	sec := b.at.Sub(a.at).Seconds()
	out := idleResult{cpu: (b.cpu - a.cpu) / sec, cpuBaseline: (b.cpuBase - a.cpuBase) / sec, indexCmds: (b.cmds - a.cmds) / sec, rounds: (b.rounds - a.rounds) / sec, byName: map[string]float64{}}
	for name, n := range b.stats {
		d := float64(n-a.stats[name]) / sec
		if name == "info" || d == 0 {
			continue
		}
		out.allCmds += d
		out.byName[name] = d
		switch name {
		case "xrange", "xrevrange", "zcard", "zscan":
			out.feedCmds += d
		}
	}
	return out, nil
}

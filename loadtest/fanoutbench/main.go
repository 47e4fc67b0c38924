// Command fanoutbench is the yardstick of issue 9 (`make bench-fanout`): on
// one cluster, in interleaved rounds, it measures an uncached Top-100, a
// member's rank and around-me through the gateway over HTTP on a board of
// 16 shards and on a 1-shard board of the same members (which is one
// unsharded sorted set), against what a program would do straight on Redis:
// the naive fan-out (a goroutine per shard asking each shard for 100), the
// same fan-out in one cluster pipeline, ZREVRANGE on the one sorted set, and
// ZREVRANK+ZSCORE on it — and, to split HTTP from the read itself, the
// gateway's read plan (internal/readplan) for a rank without HTTP, with
// native position probes and with position.lua. Inside a round the
// measurements take turns in short slices. It prints req/s per round and the
// ratios.
//
// With -index it is the read index's yardstick instead (`make bench-index`,
// index.go): reads from the index against the same fan-outs and sorted set,
// event throughput with the change feed on and off, freshness, the load
// time, heap per member and idle cost of an indexed board — on gateways it
// starts itself (-gateway-bin).
//
// It talks HTTP to the gateway and, for the prefill and the direct-to-Redis
// yardsticks, straight to Redis — like the load tool's baseline.
//
// It speaks HTTP to the gateway and RESP (through internal/store) to Redis: it
// must not import internal/gateway or internal/httpapi.
package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"net/http"
	"os"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/internal/config"
	"github.com/rankgate/rankgate/internal/merge"
	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/readplan"
	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/store"
	"github.com/rankgate/rankgate/internal/workload"
)

type options struct {
	config, gateway string
	fam16, fam1     string
	members         int
	rounds, workers int
	slices          int
	commandStats    int
	duration        time.Duration
	prefill         bool
	limit, radius   int
	only            string
	cacheLocal      string
	cacheShared     string
	// compare: a gateway of the same config but read_transport
	// compareTransport; its reads (and the read plan on that transport)
	// are measured beside the main gateway's.
	compare, compareTransport string
	// cpu: charge every slice's CPU (this process, the gateway, the
	// masters) to its measurement and print CPU per request.
	cpu bool
	// ix: the read index's yardstick (-index, `make bench-index`; index.go).
	ix indexOptions
}

func main() {
	var o options
	flag.StringVar(&o.config, "config", "deploy/bench-fanout.yaml", "gateway config (Redis addresses, prefix, families)")
	flag.StringVar(&o.gateway, "gateway", "http://127.0.0.1:18200", "gateway base URL")
	flag.StringVar(&o.fam16, "family16", "fan16", "family whose national board has many shards")
	flag.StringVar(&o.fam1, "family1", "fan1", "family whose national board has one shard")
	flag.IntVar(&o.members, "members", 1_000_000, "members on each board")
	flag.IntVar(&o.rounds, "rounds", 2, "interleaved rounds")
	flag.IntVar(&o.workers, "workers", 8, "closed-loop workers")
	flag.DurationVar(&o.duration, "duration", 5*time.Second, "time per measurement and round")
	flag.IntVar(&o.commandStats, "commandstats", 100, "calls of each read (one after another) counted with INFO commandstats after the rounds; 0: none")
	flag.IntVar(&o.slices, "slices", 10, "slices per measurement and round: the measurements take turns slice by slice")
	flag.BoolVar(&o.prefill, "prefill", true, "load the boards straight into Redis first (pipelined ZADD)")
	flag.IntVar(&o.limit, "limit", 100, "Top-N")
	flag.IntVar(&o.radius, "radius", 5, "around-me radius (2r+1 entries)")
	flag.StringVar(&o.only, "only", "", "comma list of measurements to run (default all)")
	flag.StringVar(&o.cacheLocal, "cache-local", "", "comma list of gateway URLs serving -family16 with cache_shared: false (the cache measurement)")
	flag.StringVar(&o.cacheShared, "cache-shared", "", "comma list of gateway URLs serving -family16 with cache_shared: true")
	flag.StringVar(&o.compare, "compare", "", "URL of a gateway with redis.read_transport -compare-transport: its 16- and 1-shard reads and the read plan on that transport are measured too (the *_b measurements)")
	flag.StringVar(&o.compareTransport, "compare-transport", store.TransportGoRedis, "the read transport of the -compare gateway")
	flag.BoolVar(&o.cpu, "cpu", true, "sample CPU around every slice (this process's rusage, the gateway's process_cpu_seconds_total, the masters' INFO cpu) and print CPU per request and the ceiling Redis's own CPU sets on each goal")
	indexFlags(&o.ix)
	flag.Parse()
	o.slices = max(o.slices, 1)
	do := run
	if o.ix.on {
		do = runIndex
	}
	if err := do(o); err != nil {
		fmt.Fprintln(os.Stderr, "fanoutbench:", err)
		os.Exit(1)
	}
}

// board is one family's national board: its shard keys and encoding.
type board struct {
	fam   string
	keys  []string
	enc   rank.Encoding
	pk    shard.PeriodKeys
	rules string
}

func boardOf(cfg *config.Config, name string) (board, error) {
	f, ok := cfg.Families[name]
	if !ok {
		return board{}, fmt.Errorf("family %q is not in the config", name)
	}
	d, ok := f.Dimensions[shard.National]
	if !ok {
		return board{}, fmt.Errorf("family %q has no national dimension", name)
	}
	p := f.PeriodSpec().At(time.Now())
	layout := shard.Layout{Prefix: cfg.Redis.Prefix}
	b := shard.Board{Family: name, Period: p.ID, DimType: shard.National}
	if f.KeyGroup != name {
		b.Group = f.KeyGroup // keyed under another family's hash tags, as the gateway keys it
	}
	out := board{fam: name, keys: make([]string, d.Shards), enc: f.Encoding(), pk: layout.Period(name, p.ID), rules: f.RulesVersion}
	for i := range out.keys {
		out.keys[i] = layout.ZKey(b, i, d.Shards)
	}
	return out, nil
}

// boardsOf answers boardOf of each family, in order.
func boardsOf(cfg *config.Config, names ...string) ([]board, error) {
	out := make([]board, len(names))
	for i, name := range names {
		b, err := boardOf(cfg, name)
		if err != nil {
			return nil, err
		}
		out[i] = b
	}
	return out, nil
}

// loadConfig reads the gateway's config file (with the environment's
// overrides) and refuses Redis addresses that are not loopback.
func loadConfig(path string) (*config.Config, error) {
	cfg, err := config.Load(path)
	if err != nil {
		return nil, err
	}
	cfg.ApplyEnv(os.Getenv)
	for _, a := range cfg.Redis.Addrs {
		if !strings.HasPrefix(a, "127.") && !strings.HasPrefix(a, "localhost:") {
			return nil, fmt.Errorf("redis address %s is not loopback", a)
		}
	}
	return cfg, nil
}

// openStore opens the Redis client and a store on it, sharing one
// NodeHealth as the gateway shares it, and records each board's period as a
// gateway's first write would, so the gateway reads the boards' shard counts
// once, not on every request. closeAll closes the store and the client.
func openStore(ctx context.Context, cfg *config.Config, workers int, boards ...board) (rc redis.UniversalClient, st *store.Store, health *store.NodeHealth, closeAll func(), err error) {
	health = new(store.NodeHealth)
	rc, err = store.NewClient(store.ClientOptions{Addrs: cfg.Redis.Addrs, PoolSize: 4 * workers, Cluster: len(cfg.Redis.Addrs) > 1, Health: health})
	if err != nil {
		return nil, nil, nil, nil, err
	}
	st, err = store.New(rc, nil, store.Options{Health: health})
	if err != nil {
		rc.Close()
		return nil, nil, nil, nil, err
	}
	closeAll = func() {
		st.Close()
		rc.Close()
	}
	for _, b := range boards {
		if _, err := st.EnsurePeriod(ctx, b.pk, map[string]int{shard.National: len(b.keys)}, b.rules, time.Now().UnixMilli()); err != nil {
			closeAll()
			return nil, nil, nil, nil, err
		}
	}
	return rc, st, health, closeAll, nil
}

func member(j int) string { return fmt.Sprintf("u%07d", j) }

func run(o options) error {
	cfg, err := loadConfig(o.config)
	if err != nil {
		return err
	}
	bs, err := boardsOf(cfg, o.fam16, o.fam1)
	if err != nil {
		return err
	}
	b16, b1 := bs[0], bs[1]
	if len(b1.keys) != 1 {
		return fmt.Errorf("family %s has %d shards, want 1", o.fam1, len(b1.keys))
	}
	ctx := context.Background()
	rc, st, health, closeStore, err := openStore(ctx, cfg, o.workers, b16, b1)
	if err != nil {
		return err
	}
	defer closeStore()
	if o.prefill {
		if err := prefill(ctx, rc, o.members, b16, b1); err != nil {
			return err
		}
	}
	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4 * o.workers, MaxConnsPerHost: 4 * o.workers}, Timeout: 10 * time.Second}
	ms := measurements(o, hc, rc, st, b16, b1)
	if o.compare != "" {
		stB, err := store.New(rc, nil, store.Options{ReadTransport: o.compareTransport, Health: health})
		if err != nil {
			return err
		}
		defer stB.Close()
		// Each compared measurement right after its own, so that both
		// see the same moment of the machine's load in every slice.
		bs := map[string]measurement{}
		for _, m := range compared(o, hc, stB, b16, b1) {
			bs[strings.TrimSuffix(m.name, "_b")] = m
		}
		var both []measurement
		for _, m := range ms {
			both = append(both, m)
			if b, ok := bs[m.name]; ok {
				both = append(both, b)
			}
		}
		ms = both
	}
	if o.only != "" {
		keep := strings.Split(o.only, ",")
		ms = slices.DeleteFunc(ms, func(m measurement) bool { return !slices.Contains(keep, m.name) })
	}
	// Check every measurement once before timing anything.
	r0 := rand.New(rand.NewPCG(1, 2))
	for _, m := range ms {
		if err := m.do(ctx, r0); err != nil {
			return fmt.Errorf("%s: %w", m.name, err)
		}
	}
	fmt.Printf("fanoutbench: %d members, %d shards vs 1, Top-%d, radius %d, %d workers closed loop, %s per measurement in %d slices, %d interleaved rounds\n",
		o.members, len(b16.keys), o.limit, o.radius, o.workers, o.duration, o.slices, o.rounds)
	var caches []cacheRun
	if o.cacheLocal != "" && o.cacheShared != "" {
		caches = []cacheRun{{"local", strings.Split(o.cacheLocal, ",")}, {"shared", strings.Split(o.cacheShared, ",")}}
	}
	ttl := cfg.Families[o.fam16].CacheTTL
	var meter *cpuMeter
	if o.cpu {
		meter = &cpuMeter{rc: rc, hc: hc}
	}
	rates, fanoutsPerTTL, cpu, err := rounds(ctx, o, hc, ms, caches, ttl, meter)
	if err != nil {
		return err
	}
	printRates(ms, rates)
	printRatios(rates)
	if cpu != nil {
		printCPU(ms, cpu)
	}
	printCache(o, caches, fanoutsPerTTL, ttl)
	if o.commandStats > 0 {
		return commandStats(ctx, rc, ms, o.commandStats)
	}
	return nil
}

// measurements lists what a round measures, in the order it runs them.
func measurements(o options, hc *http.Client, rc redis.UniversalClient, st *store.Store, b16, b1 board) []measurement {
	flat := b1.keys[0]
	top := func(fam string) op {
		url := fmt.Sprintf("%s/v1/boards/%s/all/national/top?limit=%d&consistency=primary", o.gateway, fam, o.limit)
		return func(ctx context.Context, r *rand.Rand) error { return get(ctx, hc, url) }
	}
	memberURL := func(fam, suffix string) op {
		return func(ctx context.Context, r *rand.Rand) error {
			return get(ctx, hc, fmt.Sprintf("%s/v1/boards/%s/all/national/members/%s%s", o.gateway, fam, member(r.IntN(o.members)), suffix))
		}
	}
	around := fmt.Sprintf("/around?radius=%d&consistency=primary", o.radius)
	return []measurement{
		{"gw16_top", "(a) gateway, 16 shards, uncached Top-100 over HTTP", top(o.fam16), o.gateway},
		{"naive_goroutines", "(b) naive fan-out: a goroutine per shard, ZREVRANGE 0 N-1 each, heap merge", naiveGoroutines(rc, b16.keys, o.limit), ""},
		{"naive_pipeline", "(c) naive fan-out in one cluster pipeline (one round trip per node), heap merge", naivePipeline(rc, b16.keys, o.limit), ""},
		{"flat_top", "(d) one unsharded sorted set: ZREVRANGE 0 N-1 WITHSCORES", flatTop(rc, flat, o.limit), ""},
		{"gw16_rank", "(e) gateway, 16 shards: a member's rank and points over HTTP", memberURL(o.fam16, "?consistency=primary"), o.gateway},
		{"flat_rank", "(e) one sorted set: ZREVRANK + ZSCORE pipelined", flatRank(rc, flat, o.members), ""},
		{"plan16_rank", "(e) read plan without HTTP, 16 shards: home score, native position probes", planRank(st, b16, o.members, false), ""},
		{"plan16_rank_lua", "(e) read plan without HTTP, 16 shards: home score, position.lua probes", planRank(st, b16, o.members, true), ""},
		{"plan16_around", "(f) read plan without HTTP, 16 shards: around-me, native windows", planAround(st, b16, o.members, o.radius, false), ""},
		{"plan16_around_lua", "(f) read plan without HTTP, 16 shards: around-me, seek.lua windows", planAround(st, b16, o.members, o.radius, true), ""},
		{"gw1_top", "(f) gateway, 1 shard: uncached Top-100 over HTTP", top(o.fam1), o.gateway},
		{"gw1_rank", "(f) gateway, 1 shard: rank and points over HTTP", memberURL(o.fam1, "?consistency=primary"), o.gateway},
		{"gw16_around", "(f) gateway, 16 shards: around-me over HTTP", memberURL(o.fam16, around), o.gateway},
		{"gw1_around", "(f) gateway, 1 shard: around-me over HTTP", memberURL(o.fam1, around), o.gateway},
	}
}

// compared: the main gateway's 16- and 1-shard reads on the -compare
// gateway, and the read plan on its transport (stB).
func compared(o options, hc *http.Client, stB *store.Store, b16, b1 board) []measurement {
	oB := o
	oB.gateway = o.compare
	var out []measurement
	for _, m := range measurements(oB, hc, nil, stB, b16, b1) {
		switch m.name {
		case "gw16_top", "gw16_rank", "gw16_around", "gw1_rank", "plan16_rank", "plan16_around":
			m.name += "_b"
			m.title += " — read transport " + o.compareTransport
			out = append(out, m)
		}
	}
	return out
}

// rounds runs every measurement in o.rounds rounds. Inside a round the
// measurements take turns in o.slices slices of o.duration/o.slices each, so
// that each of them sees the machine's load of the whole round (on a shared
// machine the load swings within seconds); a measurement's rate is its
// completed calls over its own time. The cache level follows each round.
//
// With meter set, the CPU of each slice is charged to its measurement (the
// samples are taken between slices, outside the timed loop); cpu is then
// each measurement's CPU per request over all rounds.
func rounds(ctx context.Context, o options, hc *http.Client, ms []measurement, caches []cacheRun, ttl time.Duration, meter *cpuMeter) (rates, fanoutsPerTTL map[string][]float64, cpu map[string]cpuPer, err error) {
	rates, fanoutsPerTTL = map[string][]float64{}, map[string][]float64{}
	slice := o.duration / time.Duration(o.slices)
	spent := make([]cpuSample, len(ms))
	total := make([]int64, len(ms))
	for r := 1; r <= o.rounds; r++ {
		done := make([]int64, len(ms))
		took := make([]time.Duration, len(ms))
		for range o.slices {
			for i, m := range ms {
				var before cpuSample
				if meter != nil {
					if before, err = meter.sample(ctx, m.gateway); err != nil {
						return nil, nil, nil, fmt.Errorf("CPU before %s: %w", m.name, err)
					}
				}
				n, d, errs := closedLoop(ctx, m.do, o.workers, slice)
				if errs > 0 {
					return nil, nil, nil, fmt.Errorf("round %d %s: %d errors", r, m.name, errs)
				}
				if meter != nil {
					after, err := meter.sample(ctx, m.gateway)
					if err != nil {
						return nil, nil, nil, fmt.Errorf("CPU after %s: %w", m.name, err)
					}
					spent[i].client += after.client - before.client
					spent[i].gateway += after.gateway - before.gateway
					spent[i].redis += after.redis - before.redis
				}
				done[i] += n
				took[i] += d
			}
		}
		for i := range ms {
			total[i] += done[i]
		}
		for i, m := range ms {
			rate := float64(done[i]) / took[i].Seconds()
			rates[m.name] = append(rates[m.name], rate)
			fmt.Printf("round %d  %-17s %9.0f req/s\n", r, m.name, rate)
		}
		for _, c := range caches {
			reads, fo, err := measureCache(ctx, hc, c, o.fam16, o.limit, o.workers, o.duration)
			if err != nil {
				return nil, nil, nil, err
			}
			per := fo * ttl.Seconds()
			fanoutsPerTTL[c.name] = append(fanoutsPerTTL[c.name], per)
			fmt.Printf("round %d  cache_%-11s %9.0f req/s over %d gateways, %.2f fan-outs/s = %.2f per TTL (%s)\n", r, c.name, reads, len(c.gateways), fo, per, ttl)
		}
	}
	if meter != nil {
		cpu = map[string]cpuPer{}
		for i, m := range ms {
			if total[i] > 0 {
				k := 1e6 / float64(total[i])
				cpu[m.name] = cpuPer{client: spent[i].client * k, gateway: spent[i].gateway * k, redis: spent[i].redis * k}
			}
		}
	}
	return rates, fanoutsPerTTL, cpu, nil
}

func printRates(ms []measurement, rates map[string][]float64) {
	fmt.Println()
	fmt.Println("| measurement | req/s per round |")
	fmt.Println("| --- | --- |")
	for _, m := range ms {
		var parts []string
		for _, v := range rates[m.name] {
			parts = append(parts, fmt.Sprintf("%.0f", v))
		}
		fmt.Printf("| %s | %s |\n", m.title, strings.Join(parts, " / "))
	}
}

// goals: the ratios the bench prints, num ÷ den, with the goal (0:
// none).
var goals = []struct {
	what, num, den string
	goal           float64
}{
	{"uncached Top-100, 16 shards ÷ naive pipelined fan-out", "gw16_top", "naive_pipeline", 2.0},
	{"uncached Top-100, 16 shards ÷ naive goroutine fan-out", "gw16_top", "naive_goroutines", 0},
	{"uncached Top-100, 16 shards ÷ one sorted set", "gw16_top", "flat_top", 0.25},
	{"rank, 16 shards ÷ ZREVRANK+ZSCORE on one sorted set", "gw16_rank", "flat_rank", 0.2},
	{"Top-100, 16 shards ÷ 1 shard (gateway both)", "gw16_top", "gw1_top", 0.5},
	{"rank, 16 shards ÷ 1 shard (gateway both)", "gw16_rank", "gw1_rank", 0.5},
	{"around-me, 16 shards ÷ 1 shard (gateway both)", "gw16_around", "gw1_around", 0.5},
	{"Top-100, 1 shard over HTTP ÷ one sorted set direct", "gw1_top", "flat_top", 0},
	{"rank, 1 shard over HTTP ÷ ZREVRANK+ZSCORE direct", "gw1_rank", "flat_rank", 0},
	{"rank, 16 shards, read plan without HTTP ÷ ZREVRANK+ZSCORE direct", "plan16_rank", "flat_rank", 0},
	{"rank, 16 shards, read plan: native probes ÷ position.lua probes", "plan16_rank", "plan16_rank_lua", 0},
	{"around-me, 16 shards, read plan: native windows ÷ seek.lua windows", "plan16_around", "plan16_around_lua", 0},
	{"uncached Top-100, 16 shards: default read transport ÷ -compare's", "gw16_top", "gw16_top_b", 0},
	{"rank, 16 shards: default read transport ÷ -compare's", "gw16_rank", "gw16_rank_b", 0},
	{"around-me, 16 shards: default read transport ÷ -compare's", "gw16_around", "gw16_around_b", 0},
	{"rank, 1 shard: default read transport ÷ -compare's", "gw1_rank", "gw1_rank_b", 0},
	{"rank, 16 shards, read plan: default read transport ÷ -compare's", "plan16_rank", "plan16_rank_b", 0},
	{"around-me, 16 shards, read plan: default read transport ÷ -compare's", "plan16_around", "plan16_around_b", 0},
	{"rank, 16 ÷ 1 shard (gateway both), -compare's read transport", "gw16_rank_b", "gw1_rank_b", 0},
	{"around-me, 16 shards (-compare's transport) ÷ 1 shard", "gw16_around_b", "gw1_around", 0},
}

// printRatios prints each ratio per round, its worst round and its goal.
func printRatios(rates map[string][]float64) {
	fmt.Println()
	fmt.Println("| ratio (per round) | goal | rounds | worst |")
	fmt.Println("| --- | --- | --- | --- |")
	for _, q := range goals {
		n, d := rates[q.num], rates[q.den]
		if len(n) == 0 || len(d) == 0 {
			continue
		}
		var parts []string
		worst := 0.0
		for i := range n {
			v := n[i] / d[i]
			parts = append(parts, fmt.Sprintf("%.2f×", v))
			if i == 0 || v < worst {
				worst = v
			}
		}
		goal := "—"
		if q.goal > 0 {
			mark := "met"
			if worst < q.goal {
				mark = "NOT met"
			}
			goal = fmt.Sprintf("≥ %.2f× (%s)", q.goal, mark)
		}
		fmt.Printf("| %s | %s | %s | %.2f× |\n", q.what, goal, strings.Join(parts, " / "), worst)
	}
}

func printCache(o options, caches []cacheRun, fanoutsPerTTL map[string][]float64, ttl time.Duration) {
	if len(caches) == 0 {
		return
	}
	fmt.Println()
	fmt.Printf("| hot cached Top-%d, %d gateways, cache_ttl %s | fan-outs per TTL (per round) | goal |\n", o.limit, len(caches[1].gateways), ttl)
	fmt.Println("| --- | --- | --- |")
	for _, c := range caches {
		var parts []string
		worst := 0.0
		for _, v := range fanoutsPerTTL[c.name] {
			parts = append(parts, fmt.Sprintf("%.2f", v))
			worst = max(worst, v)
		}
		goal := "—"
		if c.name == "shared" {
			mark := "met"
			if worst > 1.1 {
				mark = "NOT met"
			}
			goal = fmt.Sprintf("≤ 1.1 (%s)", mark)
		}
		fmt.Printf("| cache_shared: %v | %s | %s |\n", c.name == "shared", strings.Join(parts, " / "), goal)
	}
}

type op func(ctx context.Context, r *rand.Rand) error

type measurement struct {
	name, title string
	do          op
	gateway     string // the gateway's URL when it measures one ("": none)
}

// closedLoop runs do on workers goroutines for d and returns the completed
// calls, the time they took and the number of errors.
func closedLoop(ctx context.Context, do op, workers int, d time.Duration) (int64, time.Duration, int64) {
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	var n, errs atomic.Int64
	var wg sync.WaitGroup
	start := time.Now()
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), uint64(start.UnixNano())))
			for ctx.Err() == nil {
				err := do(context.Background(), r)
				if ctx.Err() != nil {
					return // the last call may straddle the end: not counted
				}
				if err != nil {
					errs.Add(1)
					continue
				}
				n.Add(1)
			}
		})
	}
	wg.Wait()
	return n.Load(), time.Since(start), errs.Load()
}

func get(ctx context.Context, hc *http.Client, url string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return err
	}
	var v struct {
		Partial bool `json:"partial"`
	}
	if err := call(hc, req, url, &v); err != nil {
		return err
	}
	if v.Partial {
		return fmt.Errorf("GET %s: partial answer", url)
	}
	return nil
}

func items(zs []redis.Z) []rank.Item {
	out := make([]rank.Item, len(zs))
	for i, z := range zs {
		s, _ := rank.FromFloat(z.Score)
		m, _ := z.Member.(string)
		out[i] = rank.Item{Score: s, Member: m}
	}
	return out
}

// naiveGoroutines asks each shard for n on its own goroutine and merges.
func naiveGoroutines(rc redis.UniversalClient, keys []string, n int) op {
	return func(ctx context.Context, r *rand.Rand) error {
		lists := make([][]rank.Item, len(keys))
		errs := make([]error, len(keys))
		var wg sync.WaitGroup
		for i, k := range keys {
			wg.Go(func() {
				zs, err := rc.ZRevRangeWithScores(ctx, k, 0, int64(n)-1).Result()
				lists[i], errs[i] = items(zs), err
			})
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				return err
			}
		}
		if got := merge.Merge(nil, lists, n, rank.Before); len(got) != n {
			return fmt.Errorf("merged %d entries", len(got))
		}
		return nil
	}
}

// naivePipeline asks every shard for n in one cluster pipeline and merges.
func naivePipeline(rc redis.UniversalClient, keys []string, n int) op {
	return func(ctx context.Context, r *rand.Rand) error {
		p := rc.Pipeline()
		cmds := make([]*redis.ZSliceCmd, len(keys))
		for i, k := range keys {
			cmds[i] = p.ZRevRangeWithScores(ctx, k, 0, int64(n)-1)
		}
		if _, err := p.Exec(ctx); err != nil {
			return err
		}
		lists := make([][]rank.Item, len(keys))
		for i, c := range cmds {
			lists[i] = items(c.Val())
		}
		if got := merge.Merge(nil, lists, n, rank.Before); len(got) != n {
			return fmt.Errorf("merged %d entries", len(got))
		}
		return nil
	}
}

func flatTop(rc redis.UniversalClient, key string, n int) op {
	return func(ctx context.Context, r *rand.Rand) error {
		zs, err := rc.ZRevRangeWithScores(ctx, key, 0, int64(n)-1).Result()
		if err == nil && len(zs) != n {
			err = fmt.Errorf("%d entries", len(zs))
		}
		_ = items(zs)
		return err
	}
}

func flatRank(rc redis.UniversalClient, key string, members int) op {
	return func(ctx context.Context, r *rand.Rand) error {
		m := member(r.IntN(members))
		p := rc.Pipeline()
		rk := p.ZRevRank(ctx, key, m)
		sc := p.ZScore(ctx, key, m)
		if _, err := p.Exec(ctx); err != nil {
			return err
		}
		_, _ = rk.Val(), sc.Val()
		return nil
	}
}

// planRank is a member's rank and points through the gateway's read plan
// without HTTP: the home score, then position probes on every shard —
// natively, or as position.lua on every shard (script).
func planRank(st *store.Store, b board, members int, script bool) op {
	rp := &readplan.Reader{Backend: st, Timeout: 2 * time.Second, Scripts: script}
	pb := &readplan.Board{Keys: b.keys}
	mode := rank.Competition
	return func(ctx context.Context, r *rand.Rand) error {
		m := member(r.IntN(members))
		sc, found, err := rp.Score(ctx, pb, shard.Of(m, len(b.keys)), m)
		if err != nil || !found {
			return fmt.Errorf("score of %s: found %v, %w", m, found, err)
		}
		st, _, err := rp.Probe(ctx, "member", pb, b.enc, []rank.Item{{Score: sc, Member: m}})
		if err != nil {
			return err
		}
		if st.Card != int64(members) || st.RankOf(mode, 0) < 1 {
			return fmt.Errorf("%s: rank %d of %d", m, st.RankOf(mode, 0), st.Card)
		}
		return nil
	}
}

// planAround is around-me through the read plan without HTTP: the home
// score, then a window on every shard — native, or seek.lua (script).
func planAround(st *store.Store, b board, members, radius int, script bool) op {
	rp := &readplan.Reader{Backend: st, Timeout: 2 * time.Second, Scripts: script}
	pb := &readplan.Board{Keys: b.keys}
	return func(ctx context.Context, r *rand.Rand) error {
		m := member(r.IntN(members))
		sc, found, err := rp.Score(ctx, pb, shard.Of(m, len(b.keys)), m)
		if err != nil || !found {
			return fmt.Errorf("score of %s: found %v, %w", m, found, err)
		}
		w, err := rp.Around(ctx, "around", pb, b.enc, sc, m, radius, true) // bench-fanout.yaml ranks by competition
		if err != nil {
			return err
		}
		if len(w.Items) < radius+1 || w.Items[w.Up].Member != m {
			return fmt.Errorf("around %s: %d entries, %d up", m, len(w.Items), w.Up)
		}
		return nil
	}
}

// prefill loads members into both boards with pipelined ZADDs (tie-first
// scores: points and an achievement seq, as the gateway would store them).
// A board that already holds the members is left alone.
func prefill(ctx context.Context, rc redis.UniversalClient, members int, boards ...board) error {
	var todo []board
	for _, b := range boards {
		var card int64
		for _, k := range b.keys {
			n, err := rc.ZCard(ctx, k).Result()
			if err != nil {
				return err
			}
			card += n
		}
		if card == int64(members) {
			fmt.Printf("fanoutbench: %s already holds %d members\n", b.fam, card)
			continue
		}
		for _, k := range b.keys {
			if err := rc.Del(ctx, k).Err(); err != nil {
				return err
			}
		}
		todo = append(todo, b)
	}
	if len(todo) == 0 {
		return nil
	}
	start := time.Now()
	const batch = 2000
	jobs := make(chan int)
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	for range 6 {
		wg.Go(func() {
			for from := range jobs {
				p := rc.Pipeline()
				for _, b := range todo {
					per := make([][]redis.Z, len(b.keys))
					for j := from; j < min(from+batch, members); j++ {
						m := member(j)
						pts := 1 + int64(workload.Mix64(uint64(j))%1_000_000)
						s, err := b.enc.Score(pts, int64(j))
						if err != nil {
							failed.Store(&err)
							return
						}
						i := shard.Of(m, len(b.keys))
						per[i] = append(per[i], redis.Z{Score: float64(s), Member: m})
					}
					for i, zs := range per {
						if len(zs) > 0 {
							p.ZAdd(ctx, b.keys[i], zs...)
						}
					}
				}
				if _, err := p.Exec(ctx); err != nil {
					failed.Store(&err)
					return
				}
			}
		})
	}
	for from := 0; from < members; from += batch {
		if failed.Load() != nil {
			break
		}
		jobs <- from
	}
	close(jobs)
	wg.Wait()
	if e := failed.Load(); e != nil {
		return fmt.Errorf("prefill: %w", *e)
	}
	names := make([]string, len(todo))
	for i, b := range todo {
		names[i] = b.fam
	}
	sort.Strings(names)
	fmt.Printf("fanoutbench: prefilled %d members into %s in %.1fs\n", members, strings.Join(names, ", "), time.Since(start).Seconds())
	return nil
}

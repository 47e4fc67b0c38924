package main

// The read index's yardstick (`make bench-index`, deploy/bench-index.sh):
// fanoutbench -index. On the same 1M-member boards as bench-fanout (a
// 16-shard board fan16, a 1-shard board fan1) plus an indexed 16-shard
// board (-family-index, idx16: index.enabled), each round
//
//  1. starts a gateway whose index may hold no board (index.max_members: 1,
//     the heap baseline) and the measuring gateway, and times the idx16
//     board's load (process start → the first answer with source index),
//     and the measuring gateway's heap per indexed member (after a GC);
//  2. reads — rank, around-me, Top-100, the page at -offset — from the
//     index over HTTP (consistency=index), through the 16- and the 1-shard
//     fan-out (consistency=primary), and on one sorted set directly, the
//     measurements taking turns in short slices; every answer's source is
//     checked (an index read that fell back is counted, and makes its
//     measurement invalid);
//  3. event throughput, single events and batches, on idx16 (feed on) and
//     fan16 (feed off), in turns;
//  4. freshness: an open loop of -fresh-rate events/s on idx16, a sample of
//     them polled through consistency=index until their points show, and
//     the gateway's rankgate_index_visible_seconds over the same time;
//  5. idle: no reads or writes for -idle; the gateway's CPU and the Redis
//     commands its index sends.
//
// Then it prints every ratio and figure per round, against its goal.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/internal/readplan"
	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/store"
)

type indexOptions struct {
	on bool
	// family: the indexed family (its national board has as many shards
	// as -family16's).
	family string
	// bin: the gateway binary this mode starts (twice a round).
	bin string
	// listen/pprof: the measuring gateway's API and pprof addresses;
	// beforeListen/beforePprof: the heap baseline's.
	listen, pprof             string
	beforeListen, beforePprof string
	// out: gateway logs, ready files and the baseline's config.
	out    string
	offset int
	// pageWorkers: the closed loop of the deep-page measurements (a
	// fan-out page at offset 100 000 reads ~100 000 entries: 8 at once
	// overrun the gateway's 1 s per node round trip).
	pageWorkers int
	batch       int
	// Freshness: one open loop per entry of fresh ("RATE/BATCH": RATE
	// events/s in requests of BATCH events; 1: POST /v1/events), each for
	// freshDuration; every freshEvery-th event is polled until visible.
	fresh         string
	freshEvery    int
	freshDuration time.Duration
	// idle: the quiet window of the idle measurement.
	idle time.Duration
	// loadTimeout bounds the wait for the board's first index answer.
	loadTimeout time.Duration
	// profile: after the rounds, CPU profiles of the gateway (pprof) under
	// each kind of load, written to this directory ("": none).
	profile        string
	profileSeconds int
	// phases: what each round measures besides the load and heap
	// (reads, writes, fresh, idle).
	phases string
}

func (x indexOptions) has(phase string) bool {
	return slices.Contains(strings.Split(x.phases, ","), phase)
}

func indexFlags(x *indexOptions) {
	flag.BoolVar(&x.on, "index", false, "the read index's yardstick (make bench-index): starts its own gateways with -gateway-bin; see index.go")
	flag.StringVar(&x.family, "family-index", "idx16", "indexed family (index.enabled) whose national board has as many shards as -family16's")
	flag.StringVar(&x.bin, "gateway-bin", "", "-index: the gateway binary to start")
	flag.StringVar(&x.listen, "index-listen", "127.0.0.1:18220", "-index: the measuring gateway's listen address")
	flag.StringVar(&x.pprof, "index-pprof", "127.0.0.1:18230", "-index: the measuring gateway's -pprof address")
	flag.StringVar(&x.beforeListen, "before-listen", "127.0.0.1:18221", "-index: the heap baseline gateway's listen address (index.max_members: 1, so the board stays out)")
	flag.StringVar(&x.beforePprof, "before-pprof", "127.0.0.1:18231", "-index: the heap baseline gateway's -pprof address")
	flag.StringVar(&x.out, "out", "", "-index: directory for gateway logs and the baseline's config (default: a temporary directory)")
	flag.IntVar(&x.offset, "offset", 100_000, "-index: offset of the deep page (limits.max_offset must allow it)")
	flag.IntVar(&x.pageWorkers, "page-workers", 2, "-index: closed-loop workers of the deep-page measurements (all four alike)")
	flag.IntVar(&x.batch, "batch", 100, "-index: events per POST /v1/events:batch")
	flag.StringVar(&x.fresh, "fresh", "2000/20,2000/1", "-index: the freshness open loops, comma list of RATE/BATCH: events/s in requests of BATCH events (1: POST /v1/events, else :batch)")
	flag.IntVar(&x.freshEvery, "fresh-every", 20, "-index: every n-th event of the freshness loop is polled until visible")
	flag.DurationVar(&x.freshDuration, "fresh-duration", 10*time.Second, "-index: length of the freshness open loop")
	flag.DurationVar(&x.idle, "idle", 10*time.Second, "-index: the quiet window of the idle measurement")
	flag.StringVar(&x.profile, "profile", "", "-index: after the rounds, write CPU profiles of the gateway under each load (index reads, batches feed on/off, freshness, idle) to this directory")
	flag.IntVar(&x.profileSeconds, "profile-seconds", 10, "-index: length of each -profile capture")
	flag.StringVar(&x.phases, "phases", "reads,writes,fresh,idle", "-index: comma list of what each round measures after the load and heap: reads, writes, fresh, idle")
	flag.DurationVar(&x.loadTimeout, "load-timeout", 2*time.Minute, "-index: longest wait for the indexed board's first answer from the index")
}

// indexRound is what one round measured besides the closed-loop rates.
type indexRound struct {
	loadTook, readyTook time.Duration // process start → first index answer, → ready file
	loadSeconds         float64       // rankgate_index_load_seconds (sum ÷ count)
	members             float64       // rankgate_index_members
	indexBytes          float64       // rankgate_index_bytes
	heapBefore, heapAft heapSample
	fresh               []freshResult // one per -fresh-batch
	idle                idleResult
}

type heapSample struct{ inuse, alloc float64 }

func runIndex(o options) error {
	x := o.ix
	if x.bin == "" {
		return errors.New("-index needs -gateway-bin")
	}
	for _, a := range []string{x.listen, x.pprof, x.beforeListen, x.beforePprof} {
		if !loopback(a) {
			return fmt.Errorf("address %s is not loopback", a)
		}
	}
	cfg, err := loadConfig(o.config)
	if err != nil {
		return err
	}
	if f, ok := cfg.Families[x.family]; !ok || !f.Index.Enabled {
		return fmt.Errorf("family %s is not in the config with index.enabled", x.family)
	}
	if x.offset > cfg.Limits.MaxOffset {
		return fmt.Errorf("-offset %d is over the config's limits.max_offset %d", x.offset, cfg.Limits.MaxOffset)
	}
	if x.offset+o.limit > o.members {
		return fmt.Errorf("-offset %d + Top-%d is past the %d members", x.offset, o.limit, o.members)
	}
	bs, err := boardsOf(cfg, o.fam16, o.fam1, x.family)
	if err != nil {
		return err
	}
	b16, b1, bx := bs[0], bs[1], bs[2]
	if len(b1.keys) != 1 || len(bx.keys) != len(b16.keys) {
		return fmt.Errorf("shards: %s %d (want 1), %s %d (want %d, as %s)", o.fam1, len(b1.keys), x.family, len(bx.keys), len(b16.keys), o.fam16)
	}
	if x.out == "" {
		if x.out, err = os.MkdirTemp("", "bench-index-"); err != nil {
			return err
		}
	}
	if err := os.MkdirAll(x.out, 0o755); err != nil {
		return err
	}
	var loops []freshLoop
	for _, f := range strings.Split(x.fresh, ",") {
		rate, batch, ok := strings.Cut(strings.TrimSpace(f), "/")
		l := freshLoop{}
		var err1, err2 error
		l.rate, err1 = strconv.Atoi(rate)
		l.batch, err2 = strconv.Atoi(batch)
		if !ok || err1 != nil || err2 != nil || l.rate < 1 || l.batch < 1 {
			return fmt.Errorf("-fresh %q: want a comma list of RATE/BATCH (positive integers)", x.fresh)
		}
		loops = append(loops, l)
	}
	beforeCfg, err := baselineConfig(o.config, x.out)
	if err != nil {
		return err
	}

	ctx := context.Background()
	rc, st, _, closeStore, err := openStore(ctx, cfg, o.workers, b16, b1, bx)
	if err != nil {
		return err
	}
	defer closeStore()
	if o.prefill {
		// A board loaded again starts with an empty change feed, as a
		// board written before its family kept one would.
		var card int64
		for _, k := range bx.keys {
			n, err := rc.ZCard(ctx, k).Result()
			if err != nil {
				return err
			}
			card += n
		}
		if card != int64(o.members) {
			for _, k := range bx.keys {
				if err := rc.Del(ctx, shard.FeedKey(k)).Err(); err != nil {
					return err
				}
			}
		}
		if err := prefill(ctx, rc, o.members, b16, b1, bx); err != nil {
			return err
		}
	}

	hc := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 4 * o.workers, MaxConnsPerHost: 4 * o.workers}, Timeout: 10 * time.Second}
	// The open loop has many requests in flight at once.
	hcOpen := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024}, Timeout: 10 * time.Second}
	base := "http://" + x.listen
	reads, fellBack, timedOut := indexReads(o, hc, rc, st, base, b16, b1)
	writes := indexWrites(o, hc, base)
	var meter *cpuMeter
	if o.cpu {
		meter = &cpuMeter{rc: rc, hc: hc}
	}
	fmt.Printf("fanoutbench -index: %d members, %s (%d shards, index) vs %s (%d shards) and %s (1 shard), radius %d, Top-%d, page at offset %d, %d workers closed loop (%d for the pages), %s per measurement in %d slices, %d interleaved rounds\n",
		o.members, x.family, len(bx.keys), o.fam16, len(b16.keys), o.fam1, o.radius, o.limit, x.offset, o.workers, x.pageWorkers, o.duration, o.slices, o.rounds)

	rates := map[string][]float64{}
	spent := map[string]cpuSample{}
	done := map[string]int64{}
	var rounds []indexRound
	for r := 1; r <= o.rounds; r++ {
		var ir indexRound
		// 1. The heap baseline, then the measuring gateway: load time and
		// heap per member.
		before, err := startGateway(ctx, x, beforeCfg, x.beforeListen, x.beforePprof, fmt.Sprintf("before-r%d", r))
		if err != nil {
			return err
		}
		stopAll := func(gs ...*gatewayProc) {
			for _, g := range gs {
				g.stop()
			}
		}
		if err := before.waitReady(ctx, time.Minute); err != nil {
			stopAll(before)
			return err
		}
		if err := waitMetric(ctx, hc, before.url, `rankgate_index_boards{state="too_big"}`, 1, 30*time.Second); err != nil {
			stopAll(before)
			return fmt.Errorf("baseline gateway: the board did not stay out of its index: %w", err)
		}
		if ir.heapBefore, err = heapAfterGC(ctx, hc, before); err != nil {
			stopAll(before)
			return err
		}
		gw, err := startGateway(ctx, x, o.config, x.listen, x.pprof, fmt.Sprintf("main-r%d", r))
		if err != nil {
			stopAll(before)
			return err
		}
		if err := measureLoad(ctx, hc, gw, x, &ir); err != nil {
			stopAll(before, gw)
			return err
		}
		fmt.Printf("round %d  load: %.2fs to the first index answer (ready file %.2fs, rankgate_index_load_seconds %.2fs), %.0f members; heap in use %.1f → %.1f MB: %.1f B/member (heap alloc %.1f B/member), rankgate_index_bytes %.1f B/member\n",
			r, ir.loadTook.Seconds(), ir.readyTook.Seconds(), ir.loadSeconds, ir.members, ir.heapBefore.inuse/1e6, ir.heapAft.inuse/1e6,
			(ir.heapAft.inuse-ir.heapBefore.inuse)/ir.members, (ir.heapAft.alloc-ir.heapBefore.alloc)/ir.members, ir.indexBytes/ir.members)

		// 2. Reads, every answer's source checked once first.
		r0 := rand.New(rand.NewPCG(1, uint64(r)))
		for _, m := range append(slices.Clone(reads), writes...) {
			if err := m.do(ctx, r0); err != nil && !errors.Is(err, errTimedOut) {
				stopAll(before, gw)
				return fmt.Errorf("%s: %w", m.name, err)
			}
		}
		for name, n := range fellBack {
			if v := n.Load(); v > 0 {
				stopAll(before, gw)
				return fmt.Errorf("%s: the check answered from another source %d times (is the board loaded?)", name, v)
			}
		}
		if x.has("reads") {
			if err := sliceRound(ctx, o, r, reads, meter, rates, spent, done); err != nil {
				stopAll(before, gw)
				return err
			}
		}
		// 3. Events, feed on and off.
		if x.has("writes") {
			if err := sliceRound(ctx, o, r, writes, meter, rates, spent, done); err != nil {
				stopAll(before, gw)
				return err
			}
		}
		// 4. Freshness, once the board answers from the index again (a
		// shard whose feed was empty at the load reloads at its first
		// entries).
		if _, err := waitIndexAnswer(ctx, hc, base, x.family, 30*time.Second); err != nil {
			stopAll(before, gw)
			return err
		}
		for _, l := range loops {
			if !x.has("fresh") {
				break
			}
			f, err := freshness(ctx, o, hcOpen, rc, base, gw, l)
			if err != nil {
				stopAll(before, gw)
				return err
			}
			f.print(r)
			ir.fresh = append(ir.fresh, f)
			// As many events on the feed-off board, unmeasured: both boards
			// keep the same history (dedupe records, live counts), so the
			// next round's writes compare the feed alone.
			if err := balance(ctx, o, hc, base, f.acked); err != nil {
				stopAll(before, gw)
				return err
			}
		}
		// 5. Idle.
		if x.has("idle") {
			if ir.idle, err = idleCost(ctx, x, hc, rc, gw, before); err != nil {
				stopAll(before, gw)
				return err
			}
			ir.idle.print(r, x.idle)
		}
		// 6. After the last round: Redis commands per call (INFO
		// commandstats) of each read but the deep pages, and of the writes
		// with the feed on and off (the follower's reads included).
		if r == o.rounds && o.commandStats > 0 {
			var cs []measurement
			for _, m := range append(slices.Clone(reads), writes...) {
				if !strings.HasSuffix(m.name, "_page") {
					cs = append(cs, m)
				}
			}
			if err := commandStats(ctx, rc, cs, o.commandStats); err != nil {
				stopAll(before, gw)
				return err
			}
		}
		stopAll(before, gw)
		rounds = append(rounds, ir)
	}
	if x.profile != "" {
		if err := profiles(ctx, o, hc, hcOpen, rc, reads, writes, loops); err != nil {
			return err
		}
	}
	var invalid []string
	for _, m := range reads {
		if c := fellBack[m.name]; c != nil && c.Load() > 0 {
			n := c.Load()
			invalid = append(invalid, fmt.Sprintf("%s: %d answers not from %s", m.name, n, wantSource(m.name)))
		}
	}
	var timeouts []string
	for _, m := range reads {
		if c := timedOut[m.name]; c != nil && c.Load() > 0 {
			timeouts = append(timeouts, fmt.Sprintf("%s: %d answers 503 (a node past the gateway's 1 s timeout), not counted", m.name, c.Load()))
		}
	}
	all := append(slices.Clone(reads), writes...)
	printRates(all, rates)
	if len(timeouts) > 0 {
		fmt.Println()
		fmt.Println("Timed out:", strings.Join(timeouts, "; "))
	}
	printIndexSummary(o, rates, rounds, invalid)
	if meter != nil {
		printIndexCPU(all, spent, done)
	}
	if len(invalid) > 0 {
		return fmt.Errorf("invalid measurements: %s", strings.Join(invalid, "; "))
	}
	return nil
}

func loopback(addr string) bool {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return false
	}
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}

// baselineConfig writes the config with index.max_members: 1: the same
// gateway, whose index can hold no board of the bench (the heap baseline).
func baselineConfig(path, dir string) (string, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	re := regexp.MustCompile(`(?m)^(\s+max_members:)\s*\S+`)
	if !re.Match(b) {
		return "", fmt.Errorf("%s has no index.max_members line to lower for the heap baseline", path)
	}
	out := filepath.Join(dir, "before.yaml")
	return out, os.WriteFile(out, re.ReplaceAll(b, []byte("${1} 1")), 0o644)
}

// wantSource is the source a read measurement's answers must name.
func wantSource(name string) string {
	if strings.HasPrefix(name, "idx_") {
		return "index"
	}
	return "primary"
}

// errTimedOut: a fan-out read the gateway answered 503 because a node did
// not answer within its per-node timeout (1 s): closedLoopAll counts it
// neither as a call nor as an error (the op counts it).
var errTimedOut = errors.New("a shard did not answer within the gateway's timeout")

// indexReads lists the read measurements of a round; fellBack counts, per
// measurement, the answers whose source was not the one asked for, and
// timedOut the fan-out pages that timed out.
func indexReads(o options, hc *http.Client, rc redis.UniversalClient, st *store.Store, base string, b16, b1 board) ([]measurement, map[string]*atomic.Int64, map[string]*atomic.Int64) {
	x := o.ix
	flat := b1.keys[0]
	fellBack := map[string]*atomic.Int64{}
	timedOut := map[string]*atomic.Int64{}
	read := func(name, fam, consistency string, path func(r *rand.Rand) string) op {
		n := new(atomic.Int64)
		fellBack[name] = n
		to := new(atomic.Int64)
		timedOut[name] = to
		return func(ctx context.Context, r *rand.Rand) error {
			a, err := getRead(ctx, hc, base+"/v1/boards/"+fam+"/all/national"+path(r)+"consistency="+consistency)
			if err != nil && strings.HasSuffix(name, "_page") && strings.Contains(err.Error(), "a shard did not answer") {
				to.Add(1)
				return errTimedOut
			}
			if err != nil {
				return err
			}
			if a.Source != consistency {
				n.Add(1)
			}
			return nil
		}
	}
	rankPath := func(r *rand.Rand) string { return "/members/" + member(r.IntN(o.members)) + "?" }
	aroundPath := func(r *rand.Rand) string {
		return "/members/" + member(r.IntN(o.members)) + "/around?radius=" + strconv.Itoa(o.radius) + "&"
	}
	topPath := func(*rand.Rand) string { return "/top?limit=" + strconv.Itoa(o.limit) + "&" }
	pagePath := func(*rand.Rand) string {
		return "/entries?offset=" + strconv.Itoa(x.offset) + "&limit=" + strconv.Itoa(o.limit) + "&"
	}
	var ms []measurement
	for _, s := range []struct{ key, fam, consistency, what string }{
		{"idx", x.family, "index", x.family + " from the index over HTTP"},
		{"gw16", o.fam16, "primary", o.fam16 + ", 16-shard fan-out over HTTP"},
		{"gw1", o.fam1, "primary", o.fam1 + ", 1-shard fan-out over HTTP"},
	} {
		ms = append(ms,
			measurement{s.key + "_rank", "rank: " + s.what, read(s.key+"_rank", s.fam, s.consistency, rankPath), base},
			measurement{s.key + "_around", fmt.Sprintf("around-me r=%d: %s", o.radius, s.what), read(s.key+"_around", s.fam, s.consistency, aroundPath), base},
			measurement{s.key + "_top", fmt.Sprintf("Top-%d: %s", o.limit, s.what), read(s.key+"_top", s.fam, s.consistency, topPath), base},
			measurement{s.key + "_page", fmt.Sprintf("page at offset %d: %s", x.offset, s.what), read(s.key+"_page", s.fam, s.consistency, pagePath), base},
		)
	}
	ms = append(ms,
		measurement{"flat_rank", "rank: one sorted set, ZREVRANK + ZSCORE pipelined", flatRank(rc, flat, o.members), ""},
		measurement{"flat_top", fmt.Sprintf("Top-%d: one sorted set, ZREVRANGE 0 %d WITHSCORES", o.limit, o.limit-1), flatTop(rc, flat, o.limit), ""},
		measurement{"flat_page", fmt.Sprintf("page: one sorted set, ZREVRANGE %d %d WITHSCORES", x.offset, x.offset+o.limit-1), flatPage(rc, flat, x.offset, o.limit), ""},
		measurement{"plan16_page", fmt.Sprintf("page at offset %d: %s's read plan without HTTP (the gateway's fan-out, 10 s timeout)", x.offset, o.fam16), planPage(st, b16, x.offset, o.limit), ""},
		measurement{"plan1_page", fmt.Sprintf("page at offset %d: %s's read plan without HTTP (10 s timeout)", x.offset, o.fam1), planPage(st, b1, x.offset, o.limit), ""},
	)
	return ms, fellBack, timedOut
}

// planPage is the offset page through the gateway's read plan without HTTP
// (readplan.SeekAll of offset + n, as the gateway's fan-out does), with a
// timeout the deep page fits in.
func planPage(st *store.Store, b board, offset, n int) op {
	rp := &readplan.Reader{Backend: st, Timeout: 10 * time.Second}
	pb := &readplan.Board{Keys: b.keys}
	return func(ctx context.Context, r *rand.Rand) error {
		res, err := rp.SeekAll(ctx, "entries_offset", pb, store.SeekArgs{Mode: store.SeekTop}, offset+n)
		if err != nil {
			return err
		}
		if got := len(res.Items) - offset; got != n {
			return fmt.Errorf("page: %d entries", got)
		}
		return nil
	}
}

func flatPage(rc redis.UniversalClient, key string, offset, n int) op {
	return func(ctx context.Context, r *rand.Rand) error {
		zs, err := rc.ZRevRangeWithScores(ctx, key, int64(offset), int64(offset+n-1)).Result()
		if err == nil && len(zs) != n {
			err = fmt.Errorf("%d entries", len(zs))
		}
		_ = items(zs)
		return err
	}
}

// readAnswer is what the bench checks of a read's answer.
type readAnswer struct {
	Partial bool   `json:"partial"`
	Source  string `json:"source"`
	Points  int64  `json:"points"`
	LagMs   *int64 `json:"lag_ms"`
}

func getRead(ctx context.Context, hc *http.Client, url string) (readAnswer, error) {
	var a readAnswer
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return a, err
	}
	res, err := hc.Do(req)
	if err != nil {
		return a, err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 512))
		return a, fmt.Errorf("GET %s: %d %s", url, res.StatusCode, b)
	}
	if err := json.NewDecoder(res.Body).Decode(&a); err != nil {
		return a, err
	}
	if a.Partial {
		return a, fmt.Errorf("GET %s: partial answer", url)
	}
	return a, nil
}

// Summary.

type check struct {
	what   string
	rounds []float64
	unit   string
	goal   float64
	atMost bool   // the goal is an upper bound
	num    string // the measurement whose answers must come from the index
	note   string
}

func (c check) worst() float64 {
	w := c.rounds[0]
	for _, v := range c.rounds {
		if (c.atMost && v > w) || (!c.atMost && v < w) {
			w = v
		}
	}
	return w
}

func (c check) met() string {
	if c.goal == 0 {
		return "—"
	}
	w := c.worst()
	ok := (c.atMost && w <= c.goal) || (!c.atMost && w >= c.goal)
	cmp := "≥"
	if c.atMost {
		cmp = "≤"
	}
	mark := "met"
	if !ok {
		mark = "NOT met"
	}
	if c.note != "" {
		mark = c.note
	}
	return fmt.Sprintf("%s %s%s (%s)", cmp, fmtNum(c.goal), c.unit, mark)
}

func fmtNum(v float64) string {
	switch {
	case math.IsNaN(v):
		return "n/a"
	case math.Abs(v) >= 100:
		return fmt.Sprintf("%.0f", v)
	case math.Abs(v) >= 10:
		return fmt.Sprintf("%.1f", v)
	default:
		return fmt.Sprintf("%.2f", v)
	}
}

func printIndexSummary(o options, rates map[string][]float64, rounds []indexRound, invalid []string) {
	x := o.ix
	ratio := func(num, den string) []float64 {
		n, d := rates[num], rates[den]
		out := make([]float64, min(len(n), len(d)))
		for i := range out {
			out[i] = n[i] / d[i]
		}
		return out
	}
	per := func(f func(ir indexRound) float64) []float64 {
		out := make([]float64, len(rounds))
		for i, ir := range rounds {
			out[i] = f(ir)
		}
		return out
	}
	bad := map[string]bool{}
	for _, s := range invalid {
		bad[strings.SplitN(s, ":", 2)[0]] = true
	}
	pg := strconv.Itoa(x.offset)
	checks := []check{
		{what: "rank: index ÷ 1-shard fan-out (" + o.fam1 + ")", num: "idx_rank", rounds: ratio("idx_rank", "gw1_rank"), unit: "×", goal: 2},
		{what: "around-me: index ÷ 1-shard fan-out", num: "idx_around", rounds: ratio("idx_around", "gw1_around"), unit: "×", goal: 2},
		{what: "rank: index over HTTP ÷ ZREVRANK+ZSCORE direct", num: "idx_rank", rounds: ratio("idx_rank", "flat_rank"), unit: "×", goal: 0.5},
		{what: fmt.Sprintf("Top-%d: index over HTTP ÷ ZREVRANGE direct", o.limit), num: "idx_top", rounds: ratio("idx_top", "flat_top"), unit: "×", goal: 0.5},
		{what: "page at offset " + pg + ": index over HTTP ÷ " + o.fam16 + "'s fan-out (its read plan without HTTP, 10 s timeout)", num: "idx_page", rounds: ratio("idx_page", "plan16_page"), unit: "×", goal: 5},
		{what: "page at offset " + pg + ": index ÷ " + o.fam16 + " over HTTP (answered pages only: see Timed out)", num: "idx_page", rounds: ratio("idx_page", "gw16_page"), unit: "×"},
		{what: "rank: index ÷ 16-shard fan-out", num: "idx_rank", rounds: ratio("idx_rank", "gw16_rank"), unit: "×"},
		{what: "around-me: index ÷ 16-shard fan-out", num: "idx_around", rounds: ratio("idx_around", "gw16_around"), unit: "×"},
		{what: fmt.Sprintf("Top-%d: index ÷ 16-shard fan-out", o.limit), num: "idx_top", rounds: ratio("idx_top", "gw16_top"), unit: "×"},
		{what: fmt.Sprintf("Top-%d: index ÷ 1-shard fan-out", o.limit), num: "idx_top", rounds: ratio("idx_top", "gw1_top"), unit: "×"},
		{what: "page at offset " + pg + ": index ÷ 1-shard read plan without HTTP", num: "idx_page", rounds: ratio("idx_page", "plan1_page"), unit: "×"},
		{what: "page at offset " + pg + ": index over HTTP ÷ ZREVRANGE direct", num: "idx_page", rounds: ratio("idx_page", "flat_page"), unit: "×"},
		{what: "rank: 1-shard fan-out over HTTP ÷ ZREVRANK+ZSCORE direct", rounds: ratio("gw1_rank", "flat_rank"), unit: "×"},
		{what: "events: feed on ÷ off, POST /v1/events (" + x.family + " ÷ " + o.fam16 + ")", rounds: ratio("idx_event", "gw16_event"), unit: "×", goal: 0.8},
		{what: fmt.Sprintf("events: feed on ÷ off, batches of %d", x.batch), rounds: ratio("idx_batch", "gw16_batch"), unit: "×", goal: 0.8},
	}
	for k := range rounds[0].fresh {
		l := rounds[0].fresh[k].freshLoop
		fr := func(f func(freshResult) float64) []float64 {
			return per(func(ir indexRound) float64 { return f(ir.fresh[k]) })
		}
		checks = append(checks,
			check{what: fmt.Sprintf("freshness at %s: ack → visible p99 (polled, consistency=index)", l), rounds: fr(func(f freshResult) float64 { return ms(pct(f.samples, .99)) }), unit: " ms", goal: 50, atMost: true},
			check{what: "… ack → visible p50 (polled)", rounds: fr(func(f freshResult) float64 { return ms(pct(f.samples, .5)) }), unit: " ms"},
			check{what: "… rankgate_index_visible_seconds p99 (feed entry → applied)", rounds: fr(func(f freshResult) float64 { return 1000 * quantile(.99, f.hist) }), unit: " ms", goal: 50, atMost: true},
			check{what: "… rankgate_index_visible_seconds p50", rounds: fr(func(f freshResult) float64 { return 1000 * quantile(.5, f.hist) }), unit: " ms"},
			check{what: "… control: PING of a master p99 (this process, every 10 ms)", rounds: fr(func(f freshResult) float64 { return ms(pct(f.pingLat, .99)) }), unit: " ms"},
			check{what: "… control: poll (an index read over HTTP) p99", rounds: fr(func(f freshResult) float64 { return ms(pct(f.pollLat, .99)) }), unit: " ms"},
		)
	}
	checks = append(checks, []check{
		{what: fmt.Sprintf("load of the %d-member board: process start → first index answer", o.members), rounds: per(func(ir indexRound) float64 { return ir.loadTook.Seconds() }), unit: " s", goal: 5, atMost: true},
		{what: "load: rankgate_index_load_seconds", rounds: per(func(ir indexRound) float64 { return ir.loadSeconds }), unit: " s", goal: 5, atMost: true},
		{what: "gateway heap in use per indexed member (after GC, − the baseline gateway's)", rounds: per(func(ir indexRound) float64 { return (ir.heapAft.inuse - ir.heapBefore.inuse) / ir.members }), unit: " B", goal: 120, atMost: true},
		{what: "gateway heap alloc per indexed member (after GC)", rounds: per(func(ir indexRound) float64 { return (ir.heapAft.alloc - ir.heapBefore.alloc) / ir.members }), unit: " B"},
		{what: "rankgate_index_bytes per member", rounds: per(func(ir indexRound) float64 { return ir.indexBytes / ir.members }), unit: " B", goal: 120, atMost: true},
	}...)
	if x.has("idle") {
		checks = append(checks, []check{
			{what: fmt.Sprintf("idle %s: gateway CPU, %% of a core", x.idle), rounds: per(func(ir indexRound) float64 { return 100 * ir.idle.cpu }), unit: " %", goal: 1, atMost: true},
			{what: "idle: baseline gateway (no board held) CPU, % of a core", rounds: per(func(ir indexRound) float64 { return 100 * ir.idle.cpuBaseline }), unit: " %"},
			{what: "idle: the index's share (gateway − baseline gateway), % of a core", rounds: per(func(ir indexRound) float64 { return 100 * (ir.idle.cpu - ir.idle.cpuBaseline) }), unit: " %"},
			{what: "idle: index commands/s (rankgate_index_commands_total)", rounds: per(func(ir indexRound) float64 { return ir.idle.indexCmds }), unit: "/s", goal: 100, atMost: true},
			{what: "idle: masters' xrange+xrevrange+zcard+zscan calls/s (INFO commandstats)", rounds: per(func(ir indexRound) float64 { return ir.idle.feedCmds }), unit: "/s", goal: 100, atMost: true},
			{what: "idle: index follower rounds/s (rankgate_index_rounds_total)", rounds: per(func(ir indexRound) float64 { return ir.idle.rounds }), unit: "/s"},
		}...)
	}
	for i := range checks {
		if c := &checks[i]; c.num != "" && bad[c.num] {
			c.note = "INVALID: index reads fell back"
		}
	}
	fmt.Println()
	fmt.Println("| summary | per round | worst | goal |")
	fmt.Println("| --- | --- | --- | --- |")
	for _, c := range checks {
		if len(c.rounds) == 0 {
			continue
		}
		var parts []string
		for _, v := range c.rounds {
			parts = append(parts, fmtNum(v)+c.unit)
		}
		fmt.Printf("| %s | %s | %s%s | %s |\n", c.what, strings.Join(parts, " / "), fmtNum(c.worst()), c.unit, c.met())
	}
	if len(invalid) > 0 {
		fmt.Println()
		fmt.Println("INVALID measurements (answers not from the source asked for):", strings.Join(invalid, "; "))
	}
}

func printIndexCPU(ms []measurement, spent map[string]cpuSample, done map[string]int64) {
	fmt.Println()
	fmt.Println("| CPU per request, µs (all rounds) | load generator + in-process reads | gateway | Redis masters | total |")
	fmt.Println("| --- | --- | --- | --- | --- |")
	for _, m := range ms {
		n := done[m.name]
		if n == 0 {
			continue
		}
		c := spent[m.name]
		k := 1e6 / float64(n)
		gw := "—"
		if m.gateway != "" {
			gw = fmt.Sprintf("%.0f", c.gateway*k)
		}
		fmt.Printf("| %s | %.0f | %s | %.0f | %.0f |\n", m.name, c.client*k, gw, c.redis*k, c.total()*k)
	}
}

package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/client"
	"github.com/rankgate/rankgate/internal/config"
)

// The live scenario (-live K1,K2,…): for each K, phases of K clients
// following boards (docs/loadtest.md, "Live boards"):
//
//	live       K streams GET {board}/live (some with member=, the rest top only)
//	poll       K clients reading the same answers (top, member, around) every interval
//	plainlive  K streams of the plain Go server (-live-plain; loadtest/plainhttp)
//	           at the events per client-second the live phases of that K got
//	plainpoll  K clients polling the plain Go server as poll does the gateway
//
// while events are written open loop at -rate. Delivery delay is measured
// from a write's acknowledgement to the first standing (event or polled read)
// of a client following that member on that board whose points reflect it.

// liveFlags are the flags of the live scenario.
type liveFlags struct {
	ks       string
	phases   string
	interval time.Duration
	topOnly  float64
	top      int
	radius   int
	settle   time.Duration
	connect  int
	plain    string
}

func bindLiveFlags(fs interface {
	StringVar(*string, string, string, string)
	DurationVar(*time.Duration, string, time.Duration, string)
	Float64Var(*float64, string, float64, string)
	IntVar(*int, string, int, string)
}, l *liveFlags) {
	fs.StringVar(&l.plain, "live-plain", "", "live scenario: base URL of the plain Go server (loadtest/plainhttp), the yardstick of the plainlive and plainpoll phases")
	fs.StringVar(&l.ks, "live", "", `live scenario: subscriber counts, e.g. "1000,5000" (each K runs -live-phases; -duration per phase, -rate writes/s)`)
	fs.StringVar(&l.phases, "live-phases", "writes,live,writes,poll,writes,poll,writes,live,writes", "live scenario: phase order per K (live = streams, poll = the same reads polled every -live-interval, writes = the writes alone: the CPU the others are net of, warm = a poll phase left out of every summary: it makes the gateway load and follow every board the others read, so that no measured phase pays for that; plainlive and plainpoll = the same clients on the plain Go server of -live-plain, plainlive after a live phase of the same K, whose events per client-second it takes)")
	fs.DurationVar(&l.interval, "live-interval", time.Second, "live scenario: the family's live.interval (the poll interval and the delay goal's base)")
	fs.Float64Var(&l.topOnly, "live-top-only", 0.5, "live scenario: share of clients following the Top only (the others add member= and radius)")
	fs.IntVar(&l.top, "live-top", 10, "live scenario: Top N of every client")
	fs.IntVar(&l.radius, "live-radius", 2, "live scenario: around radius of member clients")
	fs.DurationVar(&l.settle, "live-settle", 3*time.Second, "live scenario: wait after the clients are attached before measuring")
	fs.IntVar(&l.connect, "live-connect", 64, "live scenario: streams opened at a time")
}

// livePhase is the outcome of one phase.
type livePhase struct {
	Kind          string  `json:"kind"` // live | poll
	K             int     `json:"k"`
	Seconds       float64 `json:"seconds"`
	Attached      int     `json:"attached"`
	Refused       int     `json:"refused"`
	Writes        int64   `json:"writes"`
	WriteErrors   int64   `json:"write_errors"`
	WritesBehind  int64   `json:"writes_behind"`       // not sent: too many in flight
	Events        int64   `json:"events"`              // live: snapshots + updates received
	EventRate     float64 `json:"events_per_client_s"` // live: events received while writing, per client and second
	Overloaded    int64   `json:"overloaded"`          // live: "overloaded" events
	Closed        int64   `json:"closed"`              // live: streams ended by the gateway during the phase
	Reads         int64   `json:"reads"`               // poll: requests
	ReadErrors    int64   `json:"read_errors"`         // poll: failed requests
	Samples       int     `json:"samples"`
	Missed        int     `json:"missed"`
	DelayP50ms    float64 `json:"delay_p50_ms"`
	DelayP99ms    float64 `json:"delay_p99_ms"`
	DelayMaxms    float64 `json:"delay_max_ms"`
	CPUSeconds    float64 `json:"gateway_cpu_seconds"`         // plainlive, plainpoll: the plain server's
	CPUPerClient  float64 `json:"gateway_cpu_us_per_client_s"` // µs of gateway CPU per client per second
	RSSDelta      float64 `json:"rss_delta_bytes"`             // after attaching − before
	HeapDelta     float64 `json:"heap_inuse_delta_bytes"`      // after attaching − before
	RSSMean       float64 `json:"rss_mean_bytes"`              // sampled every second while writing
	HeapMean      float64 `json:"heap_inuse_mean_bytes"`       // sampled every second while writing
	HeapMin       float64 `json:"heap_inuse_min_bytes"`        // the least of those samples: near the live heap after a GC
	Shapes        int     `json:"shapes"`                      // distinct (board, member) followed; top-only clients: one per board
	ReadsDue      int64   `json:"reads_due"`                   // poll: requests the clients' schedule called for
	RedisCmds     int64   `json:"redis_commands"`
	RedisCmdsRate float64 `json:"redis_commands_per_s"`
}

// follower is one client: its board, its member ("" top only), and the
// standings it received (its own goroutine appends; read after the phase).
type follower struct {
	board  int
	dim    string
	member string
	obs    []observation
}

// liveRun holds what the phases of a live scenario share.
type liveRun struct {
	sc     *Scenario
	lf     *liveFlags
	w      *World
	rdb    *redis.ClusterClient // nil: no Redis command counts
	stderr io.Writer
	quiet  bool
	seed   uint64
	// rates: per K, the events per client-second of its live phases so
	// far (what its plainlive phases push).
	rates map[int][]float64
}

// isPlain: a phase on the plain Go server.
func isPlain(kind string) bool { return kind == "plainlive" || kind == "plainpoll" }

// raiseNoFile lifts RLIMIT_NOFILE to its hard limit: K streams need K
// sockets in this process (and in the gateway).
func raiseNoFile() (from, to uint64, err error) {
	var r syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
		return 0, 0, err
	}
	from = r.Cur
	if r.Cur < r.Max {
		r.Cur = r.Max
		if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &r); err != nil {
			return from, from, err
		}
	}
	return from, r.Cur, nil
}

func runLive(ctx context.Context, sc *Scenario, c *cli, w *World, cfg *config.Config, dir string, stdout, stderr io.Writer) error {
	ks, err := parseIntList(c.live.ks)
	if err != nil {
		return fmt.Errorf("-live: want subscriber counts like 1000,5000: %w", err)
	}
	var phases []string
	for p := range strings.SplitSeq(c.live.phases, ",") {
		switch p = strings.TrimSpace(p); p {
		case "live", "poll", "writes", "warm":
		case "plainlive", "plainpoll":
			if c.live.plain == "" {
				return fmt.Errorf("-live-phases: %s needs -live-plain (the plain Go server's URL)", p)
			}
		default:
			return fmt.Errorf("-live-phases: %q is not live, poll, writes, warm, plainlive or plainpoll", p)
		}
		phases = append(phases, p)
	}
	if c.live.interval < 100*time.Millisecond || c.live.topOnly < 0 || c.live.topOnly > 1 || c.live.connect < 1 {
		return errors.New("-live-interval must be ≥ 100ms, -live-top-only within 0..1, -live-connect ≥ 1")
	}
	if err := gatewayReady(ctx, sc.Gateway); err != nil {
		return err
	}
	if c.live.plain != "" {
		if err := gatewayReady(ctx, c.live.plain); err != nil {
			return fmt.Errorf("-live-plain: %w", err)
		}
	}
	from, to, err := raiseNoFile()
	if err != nil {
		fmt.Fprintf(stdout, "RLIMIT_NOFILE: could not raise %d: %v\n", from, err)
	} else if from < to {
		fmt.Fprintf(stdout, "RLIMIT_NOFILE raised from %d to %d (the hard limit)\n", from, to)
	} else {
		fmt.Fprintf(stdout, "RLIMIT_NOFILE is %d, already the hard limit\n", to)
	}
	if need := uint64(slices.Max(ks)) + 256; to < need {
		fmt.Fprintf(stdout, "warning: %d clients need about %d file descriptors, the limit is %d\n", slices.Max(ks), need, to)
	}
	lr := &liveRun{sc: sc, lf: &c.live, w: w, stderr: stderr, quiet: c.quiet, seed: sc.Seed, rates: map[int][]float64{}}
	if cfg != nil && len(cfg.Redis.Addrs) > 0 {
		lr.rdb = redis.NewClusterClient(&redis.ClusterOptions{Addrs: cfg.Redis.Addrs, Username: cfg.Redis.Username,
			Password: os.Getenv(cfg.Redis.PasswordEnv)})
		defer lr.rdb.Close()
		if _, err := lr.redisCommands(ctx); err != nil {
			fmt.Fprintf(stdout, "note: no Redis command counts (%v)\n", err)
			lr.rdb = nil
		}
	} else {
		fmt.Fprintln(stdout, "note: no -config: no Redis command counts")
	}
	fmt.Fprintf(stdout, "live scenario: K = %v, phases %s per K, %s each, %d writes/s, %d members (member skew %.2f), %.0f%% top only, top %d, radius %d, interval %s\n",
		ks, strings.Join(phases, ","), sc.Duration, sc.Rate, sc.Members, sc.MemberSkew, 100*c.live.topOnly, c.live.top, c.live.radius, c.live.interval)
	var all []livePhase
	for _, k := range ks {
		for _, kind := range phases {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			p, err := lr.phase(ctx, kind, k)
			if err != nil {
				return fmt.Errorf("%s phase, K=%d: %w", kind, k, err)
			}
			fmt.Fprintf(stdout, "%s K=%d: %s\n", kind, k, p.line())
			all = append(all, p)
			time.Sleep(2 * time.Second)
		}
	}
	sum := liveSummary(all, ks, c.live.interval)
	fmt.Fprint(stdout, "\n"+sum)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	data, _ := json.MarshalIndent(struct {
		Command string      `json:"command"`
		Host    Host        `json:"host"`
		Phases  []livePhase `json:"phases"`
	}{"loadtest " + strings.Join(os.Args[1:], " "), thisHost(), all}, "", "  ")
	if err := os.WriteFile(filepath.Join(dir, "live.json"), data, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "live.md"), []byte(sum), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nresults: %s (live.json, live.md)\n", dir)
	return nil
}

func (p livePhase) line() string {
	s := fmt.Sprintf("%d shapes, %d attached (%d refused), %d writes (%d errors, %d behind), delay p50 %.0f ms p99 %.0f ms max %.0f ms (%d samples, %d missed), gateway CPU %.1f µs/client/s, memory %.1f KB/client (RSS; heap %.1f KB), Redis %.0f commands/s",
		p.Shapes, p.Attached, p.Refused, p.Writes, p.WriteErrors, p.WritesBehind, p.DelayP50ms, p.DelayP99ms, p.DelayMaxms, p.Samples, p.Missed,
		p.CPUPerClient, p.RSSDelta/float64(p.K)/1024, p.HeapDelta/float64(p.K)/1024, p.RedisCmdsRate)
	if isPlain(p.Kind) {
		s = strings.Replace(s, "gateway CPU", "plain server CPU", 1)
	}
	if p.Kind == "live" || p.Kind == "plainlive" {
		s += fmt.Sprintf(", %d events (%.2f per client-second), %d overloaded, %d closed", p.Events, p.EventRate, p.Overloaded, p.Closed)
	} else {
		s += fmt.Sprintf(", %d reads of %d due (%d errors)", p.Reads, p.ReadsDue, p.ReadErrors)
	}
	return s
}

// metrics reads the CPU seconds, RSS and heap in use of the server at base
// (the gateway, or the plain server).
func (lr *liveRun) metrics(ctx context.Context, base string) (cpu, rss, heap float64, err error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimRight(base, "/")+"/metrics", nil)
	if err != nil {
		return 0, 0, 0, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return 0, 0, 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, 0, 0, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, 0, 0, fmt.Errorf("GET /metrics: %s", resp.Status)
	}
	text := string(b)
	cpu, ok := promValue(text, "process_cpu_seconds_total")
	if !ok {
		return 0, 0, 0, errors.New("GET /metrics: no process_cpu_seconds_total")
	}
	rss, _ = promValue(text, "process_resident_memory_bytes")
	heap, _ = promValue(text, "go_memstats_heap_inuse_bytes")
	return cpu, rss, heap, nil
}

// redisCommands sums the calls of INFO commandstats over the masters.
func (lr *liveRun) redisCommands(ctx context.Context) (int64, error) {
	if lr.rdb == nil {
		return 0, nil
	}
	var mu sync.Mutex
	var n int64
	err := lr.rdb.ForEachMaster(ctx, func(ctx context.Context, m *redis.Client) error {
		s, err := m.Info(ctx, "commandstats").Result()
		if err != nil {
			return err
		}
		mu.Lock()
		n += commandCalls(s)
		mu.Unlock()
		return nil
	})
	return n, err
}

// followers draws K clients: a member by the scenario's member skew, one of
// its boards uniformly, top only with probability -live-top-only. The same
// K draws the same clients in every phase.
func (lr *liveRun) followers(k int) []*follower {
	rng := rand.New(rand.NewPCG(lr.seed, uint64(k)))
	var dst []int
	out := make([]*follower, k)
	for i := range out {
		m := int32(lr.w.memberZipf.Sample(rng))
		dst = lr.w.MemberBoards(m, dst)
		b := dst[rng.IntN(len(dst))]
		f := &follower{board: b, dim: lr.w.boards[b].Dimension()}
		if rng.Float64() >= lr.lf.topOnly {
			f.member = lr.w.MemberName(m)
		}
		out[i] = f
	}
	return out
}

// counters are a phase's running counts (progress and result).
type counters struct {
	attached, refused                        atomic.Int64
	writes, writeErrors, writesBehind        atomic.Int64
	events, overloaded, closed, reads, rerrs atomic.Int64
	observed                                 atomic.Int64
}

func (lr *liveRun) phase(ctx context.Context, kind string, k int) (livePhase, error) {
	p := livePhase{Kind: kind, K: k}
	var fs []*follower
	if kind != "writes" {
		fs = lr.followers(k)
	}
	followed := map[string]bool{}
	shapes := map[string]bool{}
	var memberClients int64
	for _, f := range fs {
		shapes[f.dim+"\x00"+f.member] = true
		if f.member != "" {
			followed[f.dim+"\x00"+f.member] = true
			memberClients++
		}
	}
	p.Shapes = len(shapes)
	board := func(f *follower) client.Board {
		return client.Board{Family: lr.sc.Family, Period: lr.sc.Period, Dimension: f.dim}
	}
	// The server measured: the gateway, or the plain one (whose clients
	// follow no member's standing: no delays).
	server := lr.sc.Gateway
	var plainRate float64
	if isPlain(kind) {
		server = lr.lf.plain
		followed = map[string]bool{}
		if kind == "plainlive" {
			rs := lr.rates[k]
			if len(rs) == 0 {
				return p, errors.New("plainlive needs a live phase of the same K before it (it pushes the events per client-second that got)")
			}
			for _, r := range rs {
				plainRate += r
			}
			plainRate = min(plainRate/float64(len(rs))*lr.lf.interval.Seconds(), 1)
		}
	}
	_, rss0, heap0, err := lr.metrics(ctx, server)
	if err != nil {
		return p, err
	}
	tr := &http.Transport{MaxIdleConns: k + 64, MaxIdleConnsPerHost: k + 64, IdleConnTimeout: time.Minute}
	defer tr.CloseIdleConnections()
	cl, err := client.New(lr.sc.Gateway, client.WithHTTPClient(&http.Client{Transport: tr, Timeout: 10 * time.Second}),
		client.WithRetry(client.Retry{Attempts: 1}))
	if err != nil {
		return p, err
	}
	var cn counters
	pctx, stop := context.WithCancel(ctx)
	defer stop()
	var wg sync.WaitGroup
	stopProgress := lr.progress(kind, k, &cn)
	defer stopProgress()

	switch kind {
	case "live":
		lr.attach(fs, &wg, func(f *follower, attached func()) { lr.subscribe(pctx, cl, board(f), f, &cn, attached) })
	case "plainlive":
		path := "/live?rate=" + strconv.FormatFloat(plainRate, 'f', 4, 64)
		lr.attach(fs, &wg, func(_ *follower, attached func()) { lr.subscribePlain(pctx, path, &cn, attached) })
	case "poll", "warm", "plainpoll":
		for _, f := range fs {
			wg.Go(func() {
				if kind == "plainpoll" {
					lr.pollPlain(pctx, tr, f, &cn)
				} else {
					lr.poll(pctx, cl, board(f), f, &cn)
				}
			})
		}
		cn.attached.Store(int64(k))
	}
	if !sleepCtx(ctx, lr.lf.settle) {
		return p, ctx.Err()
	}
	cpu0, rss1, heap1, err := lr.metrics(ctx, server)
	if err != nil {
		return p, err
	}
	cmd0, err := lr.redisCommands(ctx)
	if err != nil {
		return p, err
	}
	begin := time.Now()
	events0 := cn.events.Load()
	sampled := make(chan [3]float64, 1)
	sctx, stopSampling := context.WithCancel(ctx)
	go func() { sampled <- lr.sampleMemory(sctx, server) }()
	acks := lr.write(ctx, followed, &cn)
	elapsed := time.Since(begin)
	events := cn.events.Load() - events0
	stopSampling()
	mem := <-sampled
	p.RSSMean, p.HeapMean, p.HeapMin = mem[0], mem[1], mem[2]
	cpu1, _, _, err := lr.metrics(ctx, server)
	if err != nil {
		return p, err
	}
	cmd1, err := lr.redisCommands(ctx)
	if err != nil {
		return p, err
	}
	end := begin.Add(elapsed)
	// The last writes' updates: at most one interval, plus the goal's slack.
	sleepCtx(ctx, lr.lf.interval+time.Second)
	stop()
	wg.Wait()

	var delays []time.Duration
	for _, f := range fs {
		if f.member == "" {
			continue
		}
		r := matchDeliveries(acks[f.dim+"\x00"+f.member], f.obs, end)
		delays = append(delays, r.Delays...)
		p.Missed += r.Missed
	}
	slices.Sort(delays)
	p.Seconds = elapsed.Seconds()
	p.Attached, p.Refused = int(cn.attached.Load()), int(cn.refused.Load())
	p.Writes, p.WriteErrors, p.WritesBehind = cn.writes.Load(), cn.writeErrors.Load(), cn.writesBehind.Load()
	p.Events, p.Overloaded, p.Closed = cn.events.Load(), cn.overloaded.Load(), cn.closed.Load()
	p.Reads, p.ReadErrors = cn.reads.Load(), cn.rerrs.Load()
	if kind == "poll" || kind == "plainpoll" {
		// Top for every client, member and around for the member clients,
		// once per interval over the phase (settle and drain included).
		iv := lr.lf.interval.Seconds()
		p.ReadsDue = int64((float64(k) + 2*float64(memberClients)) * (lr.lf.settle.Seconds() + elapsed.Seconds() + iv + 1) / iv)
	}
	p.Samples = len(delays)
	p.DelayP50ms, p.DelayP99ms = ms(Percentile(delays, 0.5)), ms(Percentile(delays, 0.99))
	if len(delays) > 0 {
		p.DelayMaxms = ms(delays[len(delays)-1])
	}
	p.CPUSeconds = cpu1 - cpu0
	p.CPUPerClient = p.CPUSeconds / p.Seconds / float64(k) * 1e6
	p.EventRate = float64(events) / p.Seconds / float64(k)
	if kind == "live" {
		lr.rates[k] = append(lr.rates[k], p.EventRate)
	}
	p.RSSDelta, p.HeapDelta = rss1-rss0, heap1-heap0
	p.RedisCmds = cmd1 - cmd0
	p.RedisCmdsRate = float64(p.RedisCmds) / p.Seconds
	return p, nil
}

// attach runs open for each follower in a goroutine of its own (wg counts
// them), lr.lf.connect at a time, and returns once every one called its
// attached (its stream has its snapshot, or was refused).
func (lr *liveRun) attach(fs []*follower, wg *sync.WaitGroup, open func(f *follower, attached func())) {
	sem := make(chan struct{}, lr.lf.connect)
	var ready sync.WaitGroup
	for _, f := range fs {
		sem <- struct{}{}
		ready.Add(1)
		wg.Go(func() { open(f, func() { <-sem; ready.Done() }) })
	}
	ready.Wait()
}

// sampleMemory averages the RSS and heap in use of the server at base, read
// every second until ctx ends.
func (lr *liveRun) sampleMemory(ctx context.Context, base string) [3]float64 {
	var rss, heap, low float64
	var n int
	t := time.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			if n == 0 {
				return [3]float64{}
			}
			return [3]float64{rss / float64(n), heap / float64(n), low}
		case <-t.C:
			if _, r, h, err := lr.metrics(ctx, base); err == nil {
				rss += r
				heap += h
				if n == 0 || h < low {
					low = h
				}
				n++
			}
		}
	}
}

// sleepCtx waits d; false when ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// subscribe holds one stream until ctx ends; attached is called once the
// snapshot arrived (or the stream was refused).
func (lr *liveRun) subscribe(ctx context.Context, cl *client.Client, b client.Board, f *follower, cn *counters, attached func()) {
	once := sync.OnceFunc(attached)
	defer once()
	if lr.sc.Client == ClientConn {
		lr.subscribeRaw(ctx, b, f, cn, once)
		return
	}
	s, err := cl.Live(ctx, b, client.LiveOptions{Top: lr.lf.top, Member: f.member, Radius: lr.lf.radius})
	if err != nil {
		if ctx.Err() == nil {
			cn.refused.Add(1)
		}
		return
	}
	defer s.Close()
	go func() { <-ctx.Done(); s.Close() }()
	for {
		ev, err := s.Next()
		if err != nil {
			if ctx.Err() == nil {
				cn.closed.Add(1)
			}
			return
		}
		now := time.Now()
		switch ev.Type {
		case "snapshot", "update":
			cn.events.Add(1)
			if ev.Type == "snapshot" {
				cn.attached.Add(1)
				once()
			}
			if ev.Data != nil && ev.Data.Member != nil {
				f.obs = append(f.obs, observation{At: now, Points: ev.Data.Member.Points})
				cn.observed.Add(1)
			}
		case "overloaded":
			cn.overloaded.Add(1)
		case "reconnect":
			cn.closed.Add(1)
		}
	}
}

// subscribeRaw is subscribe over a connection the stream reads itself
// (-client conn): the arrival time is taken as soon as an event's last line
// is read, and only the followed member's points are decoded.
func (lr *liveRun) subscribeRaw(ctx context.Context, b client.Board, f *follower, cn *counters, attached func()) {
	s, err := openRawLive(ctx, lr.sc.Gateway, b, client.LiveOptions{Top: lr.lf.top, Member: f.member, Radius: lr.lf.radius})
	readRaw(ctx, s, err, f, cn, attached)
}

// readRaw reads the events of s until ctx ends or the stream does (err: it
// could not be opened: refused), counting them for f.
func readRaw(ctx context.Context, s *rawLive, err error, f *follower, cn *counters, attached func()) {
	if err != nil {
		if ctx.Err() == nil {
			cn.refused.Add(1)
		}
		return
	}
	defer s.close()
	stop := context.AfterFunc(ctx, s.close)
	defer stop()
	for {
		typ, data, err := s.next()
		if err != nil {
			if ctx.Err() == nil {
				cn.closed.Add(1)
			}
			return
		}
		now := time.Now()
		switch typ {
		case "snapshot", "update":
			cn.events.Add(1)
			if typ == "snapshot" {
				cn.attached.Add(1)
				attached()
			}
			if f.member == "" {
				continue
			}
			if pts, ok := memberPoints(data); ok {
				f.obs = append(f.obs, observation{At: now, Points: pts})
				cn.observed.Add(1)
			}
		case "overloaded":
			cn.overloaded.Add(1)
		case "reconnect":
			cn.closed.Add(1)
		}
	}
}

// subscribePlain holds one stream of the plain server (path: /live?rate=)
// until ctx ends, counting its events; attached is called once the
// snapshot arrived (or the stream was refused).
func (lr *liveRun) subscribePlain(ctx context.Context, path string, cn *counters, attached func()) {
	once := sync.OnceFunc(attached)
	defer once()
	s, err := openRawPath(ctx, lr.lf.plain, path)
	readRaw(ctx, s, err, &follower{}, cn, once) // no member: nothing decoded
}

// pollPlain sends the plain server what poll sends the gateway for f (one
// GET, three for a member client) every interval, from a random offset.
func (lr *liveRun) pollPlain(ctx context.Context, tr http.RoundTripper, f *follower, cn *counters) {
	iv := lr.lf.interval
	if !sleepCtx(ctx, time.Duration(rand.Int64N(int64(iv)))) {
		return
	}
	hc := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	u := strings.TrimRight(lr.lf.plain, "/") + "/v1/boards/" + lr.sc.Family + "/" + lr.sc.Period + "/" + f.dim + "/top"
	get := func() {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
		if err != nil {
			return
		}
		resp, err := hc.Do(req)
		if ctx.Err() != nil {
			return
		}
		cn.reads.Add(1)
		if err != nil {
			cn.rerrs.Add(1)
			return
		}
		_, err = io.Copy(io.Discard, resp.Body)
		_ = resp.Body.Close()
		if err != nil || resp.StatusCode != http.StatusOK {
			cn.rerrs.Add(1)
		}
	}
	t := time.NewTicker(iv)
	defer t.Stop()
	for {
		get()
		if f.member != "" {
			get()
			get()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// poll reads what a live stream of f carries (top; member and around when
// f follows a member) every interval, from a random offset.
func (lr *liveRun) poll(ctx context.Context, cl *client.Client, b client.Board, f *follower, cn *counters) {
	iv := lr.lf.interval
	if !sleepCtx(ctx, time.Duration(rand.Int64N(int64(iv)))) {
		return
	}
	t := time.NewTicker(iv)
	defer t.Stop()
	count := func(err error) bool {
		if ctx.Err() != nil {
			return false
		}
		cn.reads.Add(1)
		if err != nil && client.Code(err) != "not_found" && client.Code(err) != "unknown_member" {
			cn.rerrs.Add(1)
			return false
		}
		return err == nil
	}
	for {
		_, err := cl.Top(ctx, b, lr.lf.top, client.ReadOptions{})
		count(err)
		if f.member != "" {
			m, err := cl.Member(ctx, b, f.member, client.ReadOptions{})
			if count(err) {
				f.obs = append(f.obs, observation{At: time.Now(), Points: m.Points})
				cn.observed.Add(1)
			}
			_, err = cl.Around(ctx, b, f.member, lr.lf.radius, client.ReadOptions{})
			count(err)
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

// write posts events open loop at the scenario's rate for its duration and
// returns the acks of followed (board, member) pairs, by key.
func (lr *liveRun) write(ctx context.Context, followed map[string]bool, cn *counters) map[string][]ack {
	tr := &http.Transport{MaxIdleConns: 512, MaxIdleConnsPerHost: 512}
	defer tr.CloseIdleConnections()
	cl, _ := client.New(lr.sc.Gateway, client.WithHTTPClient(&http.Client{Transport: tr, Timeout: 10 * time.Second}),
		client.WithRetry(client.Retry{Attempts: 1}))
	rng := rand.New(rand.NewPCG(lr.seed^0x9e3779b97f4a7c15, uint64(time.Now().UnixNano())))
	prefix := "lv" + strconv.FormatInt(time.Now().UnixNano(), 36)
	var mu sync.Mutex
	acks := map[string][]ack{}
	var wg sync.WaitGroup
	sem := make(chan struct{}, 1000)
	period := time.Second / time.Duration(max(lr.sc.Rate, 1))
	start := time.Now()
	var dst []int
	for i := 0; ; i++ {
		at := start.Add(time.Duration(i) * period)
		if at.Sub(start) >= lr.sc.Duration || !sleepCtx(ctx, time.Until(at)) {
			break
		}
		m := int32(lr.w.memberZipf.Sample(rng))
		dst = lr.w.MemberBoards(m, dst)
		dims := map[string]string{}
		for _, b := range dst[1:] {
			dims[lr.w.boards[b].Type] = lr.w.boards[b].Value
		}
		delta := 1 + rng.Int64N(max(lr.sc.DeltaMax, 1))
		ev := client.Event{EventID: prefix + "." + strconv.Itoa(i), Family: lr.sc.Family, User: lr.w.MemberName(m), Dims: dims}
		if lr.w.valueField == "value" {
			ev.Value = &delta
		} else {
			ev.Delta = &delta
		}
		select {
		case sem <- struct{}{}:
		default:
			cn.writesBehind.Add(1)
			continue
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			res, err := cl.PostEvent(ctx, ev)
			now := time.Now()
			cn.writes.Add(1)
			if err != nil {
				cn.writeErrors.Add(1)
				return
			}
			mu.Lock()
			defer mu.Unlock()
			for _, bp := range res.Boards {
				dim := bp.Board[strings.LastIndexByte(bp.Board, '/')+1:]
				if key := dim + "\x00" + ev.User; followed[key] {
					acks[key] = append(acks[key], ack{Points: bp.Points, At: now})
				}
			}
		}()
	}
	wg.Wait()
	return acks
}

// progress prints a line every 5 s until the returned func is called.
func (lr *liveRun) progress(kind string, k int, cn *counters) func() {
	if lr.quiet {
		return func() {}
	}
	done := make(chan struct{})
	begin := time.Now()
	go func() {
		t := time.NewTicker(5 * time.Second)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				fmt.Fprintf(lr.stderr, "  %s K=%d %3.0fs: attached %d refused %d | writes %d (errors %d) | events %d overloaded %d closed %d | polls %d (errors %d) | standings seen %d\n",
					kind, k, time.Since(begin).Seconds(), cn.attached.Load(), cn.refused.Load(), cn.writes.Load(), cn.writeErrors.Load(),
					cn.events.Load(), cn.overloaded.Load(), cn.closed.Load(), cn.reads.Load(), cn.rerrs.Load(), cn.observed.Load())
			}
		}
	}()
	return func() { close(done) }
}

// netCPU is the gateway CPU per client and second of the live or poll
// phases of one K, net of the writes alone: each phase less the mean of the
// writes phases next to it (the nearest one before it and the nearest one
// after it, of the same K), so that a baseline that drifts over the run
// (the read index's feeds follow more boards as time goes on) is taken
// where the phase ran; then the mean over the phases. No writes phase: raw.
func netCPU(all []livePhase, k int, kind string) (float64, bool) {
	var sum float64
	n := 0
	for i, p := range all {
		if p.K != k || p.Kind != kind {
			continue
		}
		var base float64
		nb := 0
		for j := i - 1; j >= 0; j-- {
			if all[j].K == k && all[j].Kind == "writes" {
				base, nb = base+all[j].CPUPerClient, nb+1
				break
			}
		}
		for j := i + 1; j < len(all); j++ {
			if all[j].K == k && all[j].Kind == "writes" {
				base, nb = base+all[j].CPUPerClient, nb+1
				break
			}
		}
		v := p.CPUPerClient
		if nb > 0 {
			v -= base / float64(nb)
		}
		sum += v
		n++
	}
	if n == 0 {
		return 0, false
	}
	return sum / float64(n), true
}

// memPerClient is the gateway memory per client of the phases of one K and
// kind: their mean RSS and least heap in use while writing (the heap just
// after a GC: garbage does not count), less the lowest of the writes
// phases' (a writes phase right after a live one still holds part of the
// streams' memory; none: the phases' own before/after attaching), divided by K.
func memPerClient(all []livePhase, k int, kind string) (rss, heap float64, ok bool) {
	var r, h, wr, wh float64
	var n, nw int
	for _, p := range all {
		switch {
		case p.K != k:
		case p.Kind == kind:
			r, h = r+p.RSSMean, h+p.HeapMin
			n++
		case p.Kind == "writes":
			if nw == 0 || p.RSSMean < wr {
				wr = p.RSSMean
			}
			if nw == 0 || p.HeapMin < wh {
				wh = p.HeapMin
			}
			nw++
		}
	}
	if n == 0 {
		return 0, 0, false
	}
	if nw == 0 {
		for _, p := range all {
			if p.K == k && p.Kind == kind {
				rss += p.RSSDelta
				heap += p.HeapDelta
			}
		}
		return rss / float64(n) / float64(k), heap / float64(n) / float64(k), true
	}
	return (r/float64(n) - wr) / float64(k), (h/float64(n) - wh) / float64(k), true
}

// liveSummary renders the phases and, per K, live ÷ poll of the same run.
func liveSummary(all []livePhase, ks []int, interval time.Duration) string {
	var b strings.Builder
	b.WriteString("| K | phase | shapes | delay p50 / p99 / max ms | samples (missed) | drops (overloaded / closed / refused; poll: errors of reads done / due) | gateway CPU µs/client/s (plain phases: the plain server's) | RSS mean / heap in use least MB | Redis commands/s |\n")
	b.WriteString("| ---: | --- | ---: | --- | ---: | --- | ---: | --- | ---: |\n")
	for _, p := range all {
		drops := fmt.Sprintf("%d / %d / %d", p.Overloaded, p.Closed, p.Refused)
		if p.Kind == "poll" || p.Kind == "plainpoll" {
			drops = fmt.Sprintf("%d of %d / %d", p.ReadErrors, p.Reads, p.ReadsDue)
		}
		if p.Kind == "writes" {
			drops = "-"
		}
		fmt.Fprintf(&b, "| %d | %s | %d | %.0f / %.0f / %.0f | %d (%d) | %s | %.1f | %.1f / %.1f | %.0f |\n", p.K, p.Kind, p.Shapes,
			p.DelayP50ms, p.DelayP99ms, p.DelayMaxms, p.Samples, p.Missed, drops, p.CPUPerClient,
			p.RSSMean/(1<<20), p.HeapMin/(1<<20), p.RedisCmdsRate)
	}
	b.WriteString("\n| K | CPU/client live ÷ poll, net of the writes (goal ≤ 0.10) | memory/subscriber live, RSS / least heap, over the lowest writes phase (goal ≤ 20 KB) | delay p99 live / poll (goal ≤ " +
		(interval + 250*time.Millisecond).String() + ") | live drops | Redis commands/s live / poll | plain Go server: CPU/client live ÷ poll (the machine's floor) |\n")
	b.WriteString("| ---: | ---: | --- | --- | ---: | --- | ---: |\n")
	for _, k := range ks {
		var live, poll, plainLive, plainPoll []livePhase
		for _, p := range all {
			switch {
			case p.K != k:
			case p.Kind == "live":
				live = append(live, p)
			case p.Kind == "poll":
				poll = append(poll, p)
			case p.Kind == "plainlive":
				plainLive = append(plainLive, p)
			case p.Kind == "plainpoll":
				plainPoll = append(plainPoll, p)
			}
		}
		mean := func(ps []livePhase, f func(livePhase) float64) float64 {
			if len(ps) == 0 {
				return 0
			}
			var s float64
			for _, p := range ps {
				s += f(p)
			}
			return s / float64(len(ps))
		}
		ratio := "-"
		l, okL := netCPU(all, k, "live")
		q, okQ := netCPU(all, k, "poll")
		if okL && okQ && q > 0 {
			ratio = fmt.Sprintf("%.3f (%.1f ÷ %.1f µs)", l/q, l, q)
		}
		var drops int64
		for _, p := range live {
			drops += p.Overloaded + p.Closed + int64(p.Refused)
		}
		rss, heap, _ := memPerClient(all, k, "live")
		// "-" for a kind that did not run.
		show := func(ps []livePhase, f func(livePhase) float64, format string) string {
			if len(ps) == 0 {
				return "-"
			}
			return fmt.Sprintf(format, mean(ps, f))
		}
		p99 := func(p livePhase) float64 { return p.DelayP99ms }
		cmds := func(p livePhase) float64 { return p.RedisCmdsRate }
		// The plain server does no writes: its CPU is its own.
		floor := "-"
		cpu := func(p livePhase) float64 { return p.CPUPerClient }
		if pl, pp := mean(plainLive, cpu), mean(plainPoll, cpu); len(plainLive) > 0 && len(plainPoll) > 0 && pp > 0 {
			floor = fmt.Sprintf("%.3f (%.1f ÷ %.1f µs)", pl/pp, pl, pp)
		}
		fmt.Fprintf(&b, "| %d | %s | %.1f / %.1f KB | %s / %s ms | %d | %s / %s | %s |\n", k, ratio, rss/1024, heap/1024,
			show(live, p99, "%.0f"), show(poll, p99, "%.0f"), drops, show(live, cmds, "%.0f"), show(poll, cmds, "%.0f"), floor)
	}
	return b.String()
}

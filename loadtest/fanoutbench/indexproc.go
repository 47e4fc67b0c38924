package main

// The gateways fanoutbench -index starts (index.go), their /metrics and
// pprof, and the CPU profiles of -profile.

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// Gateways.

type gatewayProc struct {
	name, url, pprof string
	cmd              *exec.Cmd
	ready            string
	started          time.Time
	exited           chan struct{}
}

// startGateway starts the gateway binary with config on listen (its log
// in x.out), and notes its pid in x.out/pids for the script's cleanup.
func startGateway(ctx context.Context, x indexOptions, cfgPath, listen, pprofAddr, name string) (*gatewayProc, error) {
	g := &gatewayProc{name: name, url: "http://" + listen, pprof: "http://" + pprofAddr,
		ready: filepath.Join(x.out, "ready-"+name), exited: make(chan struct{})}
	_ = os.Remove(g.ready)
	logf, err := os.Create(filepath.Join(x.out, "gateway-"+name+".log"))
	if err != nil {
		return nil, err
	}
	g.cmd = exec.Command(x.bin, "-config", cfgPath, "-listen", listen, "-ready-file", g.ready, "-log-level", "info", "-pprof", pprofAddr)
	g.cmd.Stdout, g.cmd.Stderr = logf, logf
	g.started = time.Now()
	if err := g.cmd.Start(); err != nil {
		logf.Close()
		return nil, err
	}
	go func() {
		_ = g.cmd.Wait()
		logf.Close()
		close(g.exited)
	}()
	running.note(x.out, g.cmd.Process.Pid, true)
	return g, nil
}

// running keeps x.out/pids: the pids of the gateways running now, one a
// line, for the script to stop after an interrupted run.
var running pidFile

type pidFile struct {
	mu   sync.Mutex
	dir  string
	pids []int
}

func (p *pidFile) note(dir string, pid int, up bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if dir != "" {
		p.dir = dir
	}
	if up {
		p.pids = append(p.pids, pid)
	} else {
		p.pids = slices.DeleteFunc(p.pids, func(q int) bool { return q == pid })
	}
	var b strings.Builder
	for _, q := range p.pids {
		fmt.Fprintln(&b, q)
	}
	_ = os.WriteFile(filepath.Join(p.dir, "pids"), []byte(b.String()), 0o644)
}

func (g *gatewayProc) waitReady(ctx context.Context, within time.Duration) error {
	deadline := time.Now().Add(within)
	for time.Now().Before(deadline) {
		select {
		case <-g.exited:
			return fmt.Errorf("gateway %s exited; see its log", g.name)
		default:
		}
		if fi, err := os.Stat(g.ready); err == nil && fi.Size() > 0 {
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("gateway %s not ready within %s", g.name, within)
}

// stop ends the gateway (SIGTERM, then SIGKILL after 10 s).
func (g *gatewayProc) stop() {
	if g == nil || g.cmd.Process == nil {
		return
	}
	_ = g.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-g.exited:
	case <-time.After(10 * time.Second):
		_ = g.cmd.Process.Kill()
		<-g.exited
	}
	running.note("", g.cmd.Process.Pid, false)
}

// waitIndexAnswer polls a member of fam with consistency=index until the
// answer says source index.
func waitIndexAnswer(ctx context.Context, hc *http.Client, base, fam string, within time.Duration) (time.Time, error) {
	url := base + "/v1/boards/" + fam + "/all/national/members/" + member(0) + "?consistency=index"
	deadline := time.Now().Add(within)
	var last error
	for time.Now().Before(deadline) {
		a, err := getRead(ctx, hc, url)
		if err == nil && a.Source == "index" {
			return time.Now(), nil
		}
		if err != nil {
			last = err
		} else {
			last = fmt.Errorf("source %q", a.Source)
		}
		time.Sleep(20 * time.Millisecond)
	}
	return time.Time{}, fmt.Errorf("%s did not answer from the index within %s (last: %v)", fam, within, last)
}

// measureLoad times the board's load on a gateway just started, then reads
// its index metrics and its heap after a GC.
func measureLoad(ctx context.Context, hc *http.Client, g *gatewayProc, x indexOptions, ir *indexRound) error {
	if err := g.waitReady(ctx, x.loadTimeout); err != nil {
		return err
	}
	ir.readyTook = time.Since(g.started)
	at, err := waitIndexAnswer(ctx, hc, g.url, x.family, x.loadTimeout)
	if err != nil {
		return err
	}
	ir.loadTook = at.Sub(g.started)
	time.Sleep(1200 * time.Millisecond) // the index's gauges are published each second
	m, err := scrape(ctx, hc, g.url)
	if err != nil {
		return err
	}
	if c := m.sum("rankgate_index_load_seconds_count"); c > 0 {
		ir.loadSeconds = m.sum("rankgate_index_load_seconds_sum") / c
	}
	ir.members, ir.indexBytes = m.sum("rankgate_index_members"), m.sum("rankgate_index_bytes")
	if ir.members <= 0 {
		return fmt.Errorf("gateway %s: rankgate_index_members is %v after the load", g.name, ir.members)
	}
	ir.heapAft, err = heapAfterGC(ctx, hc, g)
	return err
}

// heapAfterGC forces two GCs through pprof (GET /debug/pprof/heap?gc=1) and
// reads the heap from /metrics.
func heapAfterGC(ctx context.Context, hc *http.Client, g *gatewayProc) (heapSample, error) {
	for range 2 {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, g.pprof+"/debug/pprof/heap?gc=1", nil)
		if err != nil {
			return heapSample{}, err
		}
		res, err := hc.Do(req)
		if err != nil {
			return heapSample{}, fmt.Errorf("pprof of %s: %w", g.name, err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
	}
	m, err := scrape(ctx, hc, g.url)
	if err != nil {
		return heapSample{}, err
	}
	h := heapSample{inuse: m.sum("go_memstats_heap_inuse_bytes"), alloc: m.sum("go_memstats_heap_alloc_bytes")}
	if h.inuse == 0 {
		return h, fmt.Errorf("%s/metrics has no go_memstats_heap_inuse_bytes", g.url)
	}
	return h, nil
}

// Metrics.

// metrics is a scrape of /metrics: each series ("name{labels}") and its value.
type metrics map[string]float64

func scrape(ctx context.Context, hc *http.Client, base string) (metrics, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/metrics", nil)
	if err != nil {
		return nil, err
	}
	res, err := hc.Do(req)
	if err != nil {
		return nil, err
	}
	defer res.Body.Close()
	m := metrics{}
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || line[0] == '#' {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		if i < 0 {
			continue
		}
		v, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			continue
		}
		m[line[:i]] = v
	}
	return m, sc.Err()
}

// sum adds every series of the metric called name (any labels), or the
// one series given with its labels.
func (m metrics) sum(name string) float64 {
	if v, ok := m[name]; ok && strings.ContainsRune(name, '{') {
		return v
	}
	var s float64
	for k, v := range m {
		if k == name || (strings.HasPrefix(k, name) && len(k) > len(name) && k[len(name)] == '{') {
			s += v
		}
	}
	return s
}

// bucket is one cumulative histogram bucket.
type bucket struct{ le, n float64 }

// buckets returns the cumulative buckets of histogram name whose labels
// contain match, summed over series, by le.
func (m metrics) buckets(name, match string) []bucket {
	by := map[float64]float64{}
	for k, v := range m {
		rest, ok := strings.CutPrefix(k, name+"_bucket{")
		if !ok || !strings.Contains(rest, match) {
			continue
		}
		i := strings.Index(rest, `le="`)
		if i < 0 {
			continue
		}
		s := rest[i+4:]
		s = s[:strings.IndexByte(s, '"')]
		le, err := strconv.ParseFloat(s, 64)
		if err != nil {
			continue
		}
		by[le] += v
	}
	out := make([]bucket, 0, len(by))
	for le, n := range by {
		out = append(out, bucket{le, n})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].le < out[j].le })
	return out
}

// deltaBuckets: after − before, bucket by bucket.
func deltaBuckets(before, after []bucket) []bucket {
	b := map[float64]float64{}
	for _, x := range before {
		b[x.le] = x.n
	}
	out := make([]bucket, len(after))
	for i, x := range after {
		out[i] = bucket{x.le, x.n - b[x.le]}
	}
	return out
}

// quantile estimates the q-quantile of cumulative buckets as Prometheus's
// histogram_quantile does (linear within a bucket); +Inf when it falls in
// the last bucket.
func quantile(q float64, bs []bucket) float64 {
	if len(bs) == 0 || bs[len(bs)-1].n == 0 {
		return math.NaN()
	}
	rank := q * bs[len(bs)-1].n
	prevLe, prevN := 0.0, 0.0
	for _, b := range bs {
		if b.n >= rank {
			if math.IsInf(b.le, 1) {
				return prevLe // at least the last finite bound
			}
			if b.n == prevN {
				return b.le
			}
			return prevLe + (b.le-prevLe)*(rank-prevN)/(b.n-prevN)
		}
		prevLe, prevN = b.le, b.n
	}
	return math.NaN()
}

func waitMetric(ctx context.Context, hc *http.Client, base, series string, want float64, within time.Duration) error {
	deadline := time.Now().Add(within)
	var got float64
	for time.Now().Before(deadline) {
		m, err := scrape(ctx, hc, base)
		if err == nil {
			if got = m.sum(series); got == want {
				return nil
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	return fmt.Errorf("%s is %v, want %v, after %s", series, got, want, within)
}

// profiles starts a measuring gateway again and captures a CPU profile
// (GET /debug/pprof/profile) under each load, one after another, outside
// the measured rounds: reads from the index, batches with the feed on and
// off, the first freshness loop, and idle.
func profiles(ctx context.Context, o options, hc, hcOpen *http.Client, rc redis.UniversalClient, reads, writes []measurement, loops []freshLoop) error {
	x := o.ix
	if err := os.MkdirAll(x.profile, 0o755); err != nil {
		return err
	}
	gw, err := startGateway(ctx, x, o.config, x.listen, x.pprof, "profile")
	if err != nil {
		return err
	}
	defer gw.stop()
	if err := gw.waitReady(ctx, x.loadTimeout); err != nil {
		return err
	}
	if _, err := waitIndexAnswer(ctx, hc, gw.url, x.family, x.loadTimeout); err != nil {
		return err
	}
	secs := time.Duration(x.profileSeconds) * time.Second
	by := map[string]measurement{}
	for _, m := range append(slices.Clone(reads), writes...) {
		by[m.name] = m
	}
	capture := func(name string, load func() error) error {
		type got struct {
			b   []byte
			err error
		}
		ch := make(chan got, 1)
		go func() {
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, fmt.Sprintf("%s/debug/pprof/profile?seconds=%d", gw.pprof, x.profileSeconds), nil)
			if err != nil {
				ch <- got{err: err}
				return
			}
			res, err := (&http.Client{Timeout: secs + 30*time.Second}).Do(req)
			if err != nil {
				ch <- got{err: err}
				return
			}
			defer res.Body.Close()
			b, err := io.ReadAll(res.Body)
			ch <- got{b, err}
		}()
		lerr := load()
		g := <-ch
		if lerr != nil {
			return fmt.Errorf("profile %s: %w", name, lerr)
		}
		if g.err != nil {
			return fmt.Errorf("profile %s: %w", name, g.err)
		}
		path := filepath.Join(x.profile, "cpu-"+name+".pprof")
		fmt.Printf("profile: %s (%d bytes)\n", path, len(g.b))
		return os.WriteFile(path, g.b, 0o644)
	}
	closed := func(name string) func() error {
		return func() error {
			workers := o.workers
			if strings.HasSuffix(name, "_page") {
				workers = x.pageWorkers
			}
			n, d, errs, first := closedLoopAll(ctx, by[name].do, workers, secs)
			if errs > 0 {
				return first
			}
			fmt.Printf("profile: %s %.0f req/s\n", name, float64(n)/d.Seconds())
			return nil
		}
	}
	for _, name := range []string{"idx_rank", "idx_top", "idx_batch", "gw16_batch"} {
		if err := capture(name, closed(name)); err != nil {
			return err
		}
	}
	if len(loops) > 0 {
		l := loops[0]
		err := capture(fmt.Sprintf("fresh-%d-%d", l.rate, l.batch), func() error {
			xo := o
			xo.ix.freshDuration = secs
			f, err := freshness(ctx, xo, hcOpen, rc, gw.url, gw, l)
			if err == nil {
				f.print(0)
			}
			return err
		})
		if err != nil {
			return err
		}
	}
	time.Sleep(2 * time.Second)
	return capture("idle", func() error { time.Sleep(secs); return nil })
}

package main

import (
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// Outcome is what one executed operation reports.
type Outcome struct {
	Class string // "" success; else an error class ("503", "timeout", "closed", …)
	Next  any    // page: the next cursor, if any
}

// Recorder collects every completed request: its latency by operation and by
// second of start (exact percentiles: latencies are kept, 8 bytes each).
// Safe for concurrent use.
type Recorder struct {
	names []string
	begin time.Time

	mu     sync.Mutex
	secs   []secBuckets // by second of start since begin
	codes  []map[string]int64
	lags   []time.Duration // open loop: actual start − scheduled start
	live   liveWindow
	phases [][2]time.Duration // load windows since begin (several with -rounds)
	issued atomic.Int64
	done   atomic.Int64
}

type secBuckets []bucket // by op

type bucket struct {
	lats  []time.Duration
	errs  int64
	items int64
}

type liveWindow struct {
	lats []time.Duration
	errs int64
}

// NewRecorder starts recording; begin is the run's time zero.
func NewRecorder(names []string, begin time.Time) *Recorder {
	r := &Recorder{names: names, begin: begin, codes: make([]map[string]int64, len(names))}
	for i := range r.codes {
		r.codes[i] = map[string]int64{}
	}
	return r
}

// Window records that load ran from start to end: seconds outside every
// window (the other target's phases under -rounds) are left out of the series.
func (r *Recorder) Window(start, end time.Time) {
	r.mu.Lock()
	r.phases = append(r.phases, [2]time.Duration{start.Sub(r.begin), end.Sub(r.begin)})
	r.mu.Unlock()
}

// inWindow reports whether load windows cover at least half of second t
// (always true when no window was recorded): the few requests of a second
// that a phase only grazes would read as a collapse of throughput.
func (r *Recorder) inWindow(t int) bool {
	if len(r.phases) == 0 {
		return true
	}
	lo, hi := time.Duration(t)*time.Second, time.Duration(t+1)*time.Second
	var covered time.Duration
	for _, w := range r.phases {
		if w[0] < hi && w[1] > lo {
			covered += min(w[1], hi) - max(w[0], lo)
		}
	}
	return covered >= time.Second/2
}

// Started counts a request as issued (for the in-flight gauge).
func (r *Recorder) Started() { r.issued.Add(1) }

// Add records one completed request.
func (r *Recorder) Add(op int, start time.Time, lat time.Duration, class string, items int, lag time.Duration, hasLag bool) {
	sec := max(int(start.Sub(r.begin)/time.Second), 0)
	r.mu.Lock()
	for len(r.secs) <= sec {
		r.secs = append(r.secs, make(secBuckets, len(r.names)))
	}
	b := &r.secs[sec][op]
	b.lats = append(b.lats, lat)
	b.items += int64(items)
	code := "ok"
	if class != "" {
		b.errs++
		r.live.errs++
		code = class
	}
	r.codes[op][code]++
	r.live.lats = append(r.live.lats, lat)
	if hasLag {
		r.lags = append(r.lags, lag)
	}
	r.mu.Unlock()
	r.done.Add(1)
}

// Tick returns what completed since the last Tick and resets the window.
func (r *Recorder) Tick() (lats []time.Duration, errs int64, inflight int64) {
	r.mu.Lock()
	lats, errs = r.live.lats, r.live.errs
	r.live = liveWindow{lats: make([]time.Duration, 0, len(lats))}
	r.mu.Unlock()
	return lats, errs, r.issued.Load() - r.done.Load()
}

// progress prints one line per second to w until stop is closed.
func progress(w io.Writer, label string, r *Recorder, stop <-chan struct{}) {
	t := time.NewTicker(time.Second)
	defer t.Stop()
	last := time.Now()
	for {
		select {
		case <-stop:
			return
		case now := <-t.C:
			lats, errs, inflight := r.Tick()
			dt := now.Sub(last).Seconds()
			last = now
			slices.Sort(lats)
			fmt.Fprintf(w, "%s %4.0fs  %8.1f req/s  p50 %7.2fms  p99 %7.2fms  errors %d  in-flight %d\n",
				label, now.Sub(r.begin).Seconds(), float64(len(lats))/dt,
				ms(Percentile(lats, 0.50)), ms(Percentile(lats, 0.99)), errs, inflight)
		}
	}
}

// Percentile returns the q-quantile (0 ≤ q ≤ 1) of sorted values by the
// nearest-rank method: the smallest value with at least q·n values ≤ it.
// It returns 0 for no values.
func Percentile(sorted []time.Duration, q float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	if q <= 0 {
		return sorted[0]
	}
	k := int(math.Ceil(q*float64(n)-1e-9)) - 1
	return sorted[min(max(k, 0), n-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// OpStats summarizes one operation (or all of them) over the run.
type OpStats struct {
	Op       string           `json:"op"`
	Kind     string           `json:"kind,omitempty"`
	Count    int64            `json:"count"`
	Errors   int64            `json:"errors"`
	Items    int64            `json:"items"`     // events written (writes) or requests (reads)
	Rate     float64          `json:"rate"`      // completed requests per second
	ItemRate float64          `json:"item_rate"` // items per second
	MeanMs   float64          `json:"mean_ms"`
	P50Ms    float64          `json:"p50_ms"`
	P90Ms    float64          `json:"p90_ms"`
	P99Ms    float64          `json:"p99_ms"`
	P999Ms   float64          `json:"p999_ms"`
	MaxMs    float64          `json:"max_ms"`
	Codes    map[string]int64 `json:"codes"`
	// CDF holds [quantile, latency ms] points for the CDF chart.
	CDF [][2]float64 `json:"cdf,omitempty"`
}

// Point is one second of one operation ("all" for the total).
type Point struct {
	Second int     `json:"t"`
	Op     string  `json:"op"`
	Count  int64   `json:"count"`
	Errors int64   `json:"errors"`
	P50Ms  float64 `json:"p50_ms"`
	P90Ms  float64 `json:"p90_ms"`
	P99Ms  float64 `json:"p99_ms"`
	MaxMs  float64 `json:"max_ms"`
}

// LagStats says how late open-loop requests started against their schedule:
// large values mean the load generator (or its machine) could not keep up.
type LagStats struct {
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
	MaxMs float64 `json:"max_ms"`
}

// cdfQuantiles are the quantiles stored for CDF charts.
var cdfQuantiles = func() []float64 {
	var qs []float64
	for i := 0; i < 100; i++ {
		qs = append(qs, float64(i)/100)
	}
	return append(qs, 0.995, 0.999, 0.9995, 0.9999, 1)
}()

// summarize computes stats over a sorted latency list.
func summarize(name, kind string, sorted []time.Duration, errs, items int64, elapsed float64, withCDF bool) OpStats {
	s := OpStats{Op: name, Kind: kind, Count: int64(len(sorted)), Errors: errs, Items: items}
	if elapsed > 0 {
		s.Rate = float64(s.Count) / elapsed
		s.ItemRate = float64(items) / elapsed
	}
	if len(sorted) == 0 {
		return s
	}
	var sum time.Duration
	for _, d := range sorted {
		sum += d
	}
	s.MeanMs = ms(sum) / float64(len(sorted))
	s.P50Ms = ms(Percentile(sorted, 0.50))
	s.P90Ms = ms(Percentile(sorted, 0.90))
	s.P99Ms = ms(Percentile(sorted, 0.99))
	s.P999Ms = ms(Percentile(sorted, 0.999))
	s.MaxMs = ms(sorted[len(sorted)-1])
	if withCDF {
		for _, q := range cdfQuantiles {
			s.CDF = append(s.CDF, [2]float64{q, ms(Percentile(sorted, q))})
		}
	}
	return s
}

// Finish computes the per-operation and total stats and the per-second
// series. elapsed is the length of the load phase in seconds.
func (r *Recorder) Finish(kinds []string, elapsed float64) (total OpStats, ops []OpStats, series []Point, lag *LagStats) {
	r.mu.Lock()
	defer r.mu.Unlock()
	all := make([]time.Duration, 0, r.done.Load())
	var allErrs, allItems int64
	for op, name := range r.names {
		var lats []time.Duration
		var errs, items int64
		for _, sec := range r.secs {
			b := sec[op]
			lats = append(lats, b.lats...)
			errs += b.errs
			items += b.items
		}
		slices.Sort(lats)
		st := summarize(name, kinds[op], lats, errs, items, elapsed, true)
		st.Codes = r.codes[op]
		ops = append(ops, st)
		all = append(all, lats...)
		allErrs += errs
		allItems += items
	}
	slices.Sort(all)
	total = summarize("all", "", all, allErrs, allItems, elapsed, true)
	total.Codes = map[string]int64{}
	for _, c := range r.codes {
		for k, v := range c {
			total.Codes[k] += v
		}
	}
	for t, sec := range r.secs {
		if !r.inWindow(t) {
			continue
		}
		var secAll []time.Duration
		var secErrs int64
		for op, b := range sec {
			if len(b.lats) == 0 {
				continue
			}
			l := slices.Clone(b.lats)
			slices.Sort(l)
			series = append(series, point(t, r.names[op], l, b.errs))
			secAll = append(secAll, l...)
			secErrs += b.errs
		}
		slices.Sort(secAll)
		series = append(series, point(t, "all", secAll, secErrs))
	}
	sort.SliceStable(series, func(i, j int) bool { return series[i].Second < series[j].Second })
	if len(r.lags) > 0 {
		l := slices.Clone(r.lags)
		slices.Sort(l)
		lag = &LagStats{P50Ms: ms(Percentile(l, 0.5)), P99Ms: ms(Percentile(l, 0.99)), MaxMs: ms(l[len(l)-1])}
	}
	return total, ops, series, lag
}

func point(t int, op string, sorted []time.Duration, errs int64) Point {
	p := Point{Second: t, Op: op, Count: int64(len(sorted)), Errors: errs}
	if len(sorted) > 0 {
		p.P50Ms = ms(Percentile(sorted, 0.5))
		p.P90Ms = ms(Percentile(sorted, 0.9))
		p.P99Ms = ms(Percentile(sorted, 0.99))
		p.MaxMs = ms(sorted[len(sorted)-1])
	}
	return p
}

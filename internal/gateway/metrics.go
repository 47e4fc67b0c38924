package gateway

import (
	"sync"
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	fanoutWidth  *prometheus.HistogramVec
	nodeDuration *prometheus.HistogramVec
	shardErrors  *prometheus.CounterVec
	partial      *prometheus.CounterVec
	events       *prometheus.CounterVec
	dedupe       *prometheus.CounterVec
	// eventsOf and dedupeOf resolve the write path's per-event series of
	// events and dedupe once (WithLabelValues per event hashes and checks
	// its labels every time).
	eventsOf, dedupeOf *counters
	late               *prometheus.CounterVec
	fetched            *prometheus.CounterVec
	returned           *prometheus.CounterVec
	reads              *prometheus.CounterVec
	shared             *prometheus.CounterVec
	// ledger mode's write path, per stage (issue 10: the single-event tail)
	groupStage  *prometheus.HistogramVec
	groupEvents prometheus.Histogram
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		fanoutWidth: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "rankgate_fanout_width", Help: "Shards asked by one fan-out, by operation.",
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 1024},
		}, []string{"op"}),
		nodeDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "rankgate_fanout_node_duration_seconds", Help: "Latency of one node's round trip (one pipeline of its shards' reads) inside a fan-out, by operation.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1},
		}, []string{"op"}),
		shardErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rankgate_fanout_shard_errors_total", Help: "Shard calls that failed inside a fan-out, by operation.",
		}, []string{"op"}),
		partial: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rankgate_partial_answers_total", Help: "Reads answered with partial=true because a shard failed, by operation.",
		}, []string{"op"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rankgate_events_total", Help: "Point events, reversals and projections by family and outcome.",
		}, []string{"family", "outcome"}),
		dedupe: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rankgate_dedupe_hits_total", Help: "Board writes answered as duplicates (retries, replays), by family.",
		}, []string{"family"}),
		late: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rankgate_late_events_total", Help: "Events refused because their period was closed, kept for review.",
		}, []string{"family", "reason"}),
		fetched: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rankgate_read_entries_fetched_total", Help: "Entries read from Redis by ordered reads, by operation.",
		}, []string{"op"}),
		returned: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rankgate_read_entries_returned_total", Help: "Entries returned to clients by ordered reads, by operation.",
		}, []string{"op"}),
		shared: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rankgate_shared_cache_total",
			Help: "Shared cache level (cache_shared) outcomes by family: hit (fresh copy), computed (lease taken, fan-out), stale (previous copy served while another gateway recomputes), waited (new copy awaited), fallback (waited in vain, computed), refresh (lease taken, previous copy served, recomputed in the background), refresh_error (that background recompute failed), error.",
		}, []string{"family", "outcome"}),
		reads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rankgate_reads_total", Help: "Reads by operation, the source that answered (cache, replica, primary) and outcome.",
		}, []string{"op", "source", "outcome"}),
		groupStage: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "rankgate_ledger_group_stage_seconds",
			Help:    "Ledger mode's write path by stage: queue (a request's wait from submission until its group starts: linger and the group ahead), record (the group's ledger transaction, or a reversal's, pool wait included), project (its Redis projection round trip), group (the whole group, queue excluded).",
			Buckets: []float64{.0005, .001, .002, .004, .007, .01, .015, .02, .03, .05, .075, .1, .15, .25, .5, 1, 2.5},
		}, []string{"stage"}),
		groupEvents: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "rankgate_ledger_group_events", Help: "Events per ledger commit group.",
			Buckets: []float64{1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024},
		}),
	}
	m.eventsOf, m.dedupeOf = &counters{vec: m.events}, &counters{vec: m.dedupe}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.fanoutWidth, m.nodeDuration, m.shardErrors, m.partial,
			m.events, m.dedupe, m.late, m.fetched, m.returned, m.reads, m.shared, m.groupStage, m.groupEvents} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// counters resolves the series of a counter vector of at most two labels
// once each and keeps them: a lookup in an immutable map behind an atomic
// pointer, no lock. A series is created on first use, as WithLabelValues
// does, so /metrics shows the same series. For label values from a bounded
// set (family names and fixed outcomes), never from requests.
type counters struct {
	vec  *prometheus.CounterVec
	mu   sync.Mutex // serializes additions
	seen atomic.Pointer[map[[2]string]prometheus.Counter]
}

// with answers the series of the label values a, b; b is "" for a vector
// of one label.
func (c *counters) with(a, b string) prometheus.Counter {
	k := [2]string{a, b}
	if m := c.seen.Load(); m != nil {
		if ctr, ok := (*m)[k]; ok {
			return ctr
		}
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	old := c.seen.Load()
	if old != nil {
		if ctr, ok := (*old)[k]; ok {
			return ctr
		}
	}
	var ctr prometheus.Counter
	if b == "" {
		ctr = c.vec.WithLabelValues(a)
	} else {
		ctr = c.vec.WithLabelValues(a, b)
	}
	next := make(map[[2]string]prometheus.Counter, 8)
	if old != nil {
		for k, v := range *old {
			next[k] = v
		}
	}
	next[k] = ctr
	c.seen.Store(&next)
	return ctr
}

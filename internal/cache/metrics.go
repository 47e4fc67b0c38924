package cache

import (
	"fmt"
	"sync"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics holds one cache's collectors. They always exist, so the code paths
// do not depend on whether a Registerer was given.
type metrics struct {
	requests  *prometheus.CounterVec
	evictions *prometheus.CounterVec
	shared    *prometheus.CounterVec
	loads     *prometheus.CounterVec
	entries   prometheus.GaugeFunc

	// Stale-while-revalidate (Options.ServeStale): their series exist only
	// on a cache that serves stale entries.
	serveStale    bool
	stale         *prometheus.CounterVec
	refreshes     *prometheus.CounterVec
	refreshErrors *prometheus.CounterVec

	// families maps a family name to its resolved counters, so the hit path
	// does not pay for WithLabelValues (hashing, a variadic slice).
	families sync.Map // string -> *familyMetrics
}

// familyMetrics are the counters of one family, resolved once.
type familyMetrics struct {
	hit, miss   prometheus.Counter
	evicted     prometheus.Counter
	shared      prometheus.Counter
	stored      prometheus.Counter
	errored     prometheus.Counter
	uncacheable prometheus.Counter

	// stale, refreshes and refreshErrors are no-op counters unless the
	// cache serves stale entries.
	stale, refreshes, refreshErrors prometheus.Counter
}

func newMetrics(length func() int, serveStale bool) *metrics {
	return &metrics{
		serveStale: serveStale,
		stale: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rankgate_cache_stale_serves_total",
			Help: "Lookups served an entry past its TTL (within 2 × TTL) while one background refresh runs, by family; also counted as hits in rankgate_cache_requests_total.",
		}, []string{"family"}),
		refreshes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rankgate_cache_refreshes_total",
			Help: "Background refreshes started for stale entries, by family (their loads are also counted in rankgate_cache_loads_total).",
		}, []string{"family"}),
		refreshErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rankgate_cache_refresh_errors_total",
			Help: "Background refreshes that failed, by family; the stale entry is then served no more and the next lookup loads like a miss.",
		}, []string{"family"}),
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rankgate_cache_requests_total",
			Help: "Cache lookups by family and result (hit: served from the cache, fresh or stale while a refresh runs; miss: loaded, failed or abandoned).",
		}, []string{"family", "result"}),
		evictions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rankgate_cache_evictions_total",
			Help: "Entries removed by the LRU for capacity or backstop expiry (not Purge), by family.",
		}, []string{"family"}),
		shared: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rankgate_cache_shared_loads_total",
			Help: "Callers that received the result of a load started by another caller, by family.",
		}, []string{"family"}),
		loads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rankgate_cache_loads_total",
			Help: "Loads run by the cache, by family and outcome (stored, error, uncacheable).",
		}, []string{"family", "outcome"}),
		entries: prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Name: "rankgate_cache_entries",
			Help: "Entries held by the cache, including stale ones not yet reclaimed.",
		}, func() float64 { return float64(length()) }),
	}
}

// register registers every collector on reg, or none: on failure the ones
// already registered are unregistered and the error is returned. nil reg
// registers nothing.
func (m *metrics) register(reg prometheus.Registerer) error {
	if reg == nil {
		return nil
	}
	cs := []prometheus.Collector{m.requests, m.evictions, m.shared, m.loads, m.entries,
		m.stale, m.refreshes, m.refreshErrors}
	for i, col := range cs {
		if err := reg.Register(col); err != nil {
			for _, done := range cs[:i] {
				reg.Unregister(done)
			}
			return fmt.Errorf("cache: registering metrics: %w", err)
		}
	}
	return nil
}

// family returns the counters of family, creating them on first use (which
// also makes every series of the family appear at zero).
func (m *metrics) family(family string) *familyMetrics {
	if fm, ok := m.families.Load(family); ok {
		return fm.(*familyMetrics)
	}
	fm := &familyMetrics{
		hit:         m.requests.WithLabelValues(family, "hit"),
		miss:        m.requests.WithLabelValues(family, "miss"),
		evicted:     m.evictions.WithLabelValues(family),
		shared:      m.shared.WithLabelValues(family),
		stored:      m.loads.WithLabelValues(family, "stored"),
		errored:     m.loads.WithLabelValues(family, "error"),
		uncacheable: m.loads.WithLabelValues(family, "uncacheable"),
	}
	fm.stale, fm.refreshes, fm.refreshErrors = nopCounter{}, nopCounter{}, nopCounter{}
	if m.serveStale {
		fm.stale = m.stale.WithLabelValues(family)
		fm.refreshes = m.refreshes.WithLabelValues(family)
		fm.refreshErrors = m.refreshErrors.WithLabelValues(family)
	}
	actual, _ := m.families.LoadOrStore(family, fm)
	return actual.(*familyMetrics)
}

// nopCounter is a counter that counts nothing: the stale-while-revalidate
// counters of a cache that does not serve stale entries, so that their
// series do not appear.
type nopCounter struct{ prometheus.Counter }

func (nopCounter) Inc()        {}
func (nopCounter) Add(float64) {}

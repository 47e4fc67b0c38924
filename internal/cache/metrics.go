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
}

func newMetrics(length func() int) *metrics {
	return &metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rankgate_cache_requests_total",
			Help: "Cache lookups by family and result (hit: served from the cache; miss: loaded, failed or abandoned).",
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
	cs := []prometheus.Collector{m.requests, m.evictions, m.shared, m.loads, m.entries}
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
	actual, _ := m.families.LoadOrStore(family, fm)
	return actual.(*familyMetrics)
}

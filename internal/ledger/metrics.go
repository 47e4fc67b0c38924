package ledger

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics holds the ledger's collectors. They always exist, so code paths do
// not depend on whether a Registerer was given.
type metrics struct {
	writes    *prometheus.CounterVec
	txSeconds *prometheus.HistogramVec
	txStage   *prometheus.HistogramVec
	retries   *prometheus.CounterVec
	pool      *poolCollector // connection pool statistics
}

func newMetrics(p *pool) *metrics {
	return &metrics{
		writes: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rankgate_ledger_writes_total",
			Help: "Ledger writes (Record, Project) by kind and outcome (applied, unchanged, duplicate, stale, period_closed, out_of_range, unknown_event, not_reversible, invalid, error).",
		}, []string{"kind", "outcome"}),
		txSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "rankgate_ledger_tx_duration_seconds",
			Help:    "Duration of ledger transactions (retries included), by operation.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5},
		}, []string{"op"}),
		txStage: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "rankgate_ledger_tx_stage_seconds",
			Help:    "One attempt of a ledger transaction by stage, for the writers that send BEGIN with their first batch (record_group): acquire (waiting for a pool connection), statements (BEGIN to the last statement's answer), commit (the COMMIT round trip: the WAL flush). Every attempt observes the stages it reached, a failed one (a retried transaction's first try) included; an acquire cut off by its context's deadline or cancellation observes its wait up to then (a real, if truncated, wait), but an acquire whose context was done before it started or whose pool was closed observes nothing (it waited for nothing).",
			Buckets: []float64{.0005, .001, .002, .004, .007, .01, .015, .02, .03, .05, .075, .1, .15, .25, .5, 1, 2.5},
		}, []string{"op", "stage"}),
		retries: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rankgate_ledger_tx_retries_total",
			Help: "Ledger transactions rerun after a deadlock or serialization failure, by operation (<op>_locking: a sum group rerun on the locking path, a total out of range).",
		}, []string{"op"}),
		pool: newPoolCollector(p),
	}
}

func (m *metrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.writes, m.txSeconds, m.txStage, m.retries, m.pool}
}

// register registers every collector on reg, or none (nil reg: none).
func (m *metrics) register(reg prometheus.Registerer) error {
	if reg == nil {
		return nil
	}
	cs := m.collectors()
	for i, c := range cs {
		if err := reg.Register(c); err != nil {
			for _, done := range cs[:i] {
				reg.Unregister(done)
			}
			return fmt.Errorf("ledger: registering metrics: %w", err)
		}
	}
	return nil
}

func (m *metrics) unregister(reg prometheus.Registerer) {
	if reg == nil {
		return
	}
	for _, c := range m.collectors() {
		reg.Unregister(c)
	}
}

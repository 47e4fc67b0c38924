package live

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

type metrics struct {
	subscribers  *prometheus.GaugeVec
	events       *prometheus.CounterVec
	drops        *prometheus.CounterVec
	refused      *prometheus.CounterVec
	computations *prometheus.CounterVec
	errors       prometheus.Counter
	seconds      *prometheus.HistogramVec
	// sent holds the events counter of each event type, resolved once:
	// a stream counts every event it writes.
	sent map[string]prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	m := &metrics{
		subscribers: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rankgate_live_subscribers",
			Help: "Open live streams (GET {board}/live), by family.",
		}, []string{"family"}),
		events: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rankgate_live_events_total",
			Help: "Events written to live streams, by type (snapshot, update, overloaded, reconnect).",
		}, []string{"type"}),
		drops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rankgate_live_drops_total",
			Help: "Live subscribers dropped, by reason (overloaded: behind longer than live.max_behind; write: a write failed or passed live.write_timeout).",
		}, []string{"reason"}),
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rankgate_live_refused_total",
			Help: "Live streams refused with 503, by reason (max_subscribers, max_per_token, shutdown).",
		}, []string{"reason"}),
		computations: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rankgate_live_computations_total",
			Help: "Reads the live hub made, by shape (top: one Top N of a board; member: one standing and around-me of a followed member), each shared by every subscriber of that shape.",
		}, []string{"shape"}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "rankgate_live_computation_errors_total",
			Help: "Live answers that could not be computed (subscribers keep the last one).",
		}),
		seconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "rankgate_live_computation_seconds",
			Help:    "Time to compute one board's live answers for one interval, by family.",
			Buckets: prometheus.ExponentialBuckets(0.0005, 2, 14),
		}, []string{"family"}),
	}
	m.sent = map[string]prometheus.Counter{}
	for _, t := range []string{"snapshot", "update", "overloaded", "reconnect"} {
		m.sent[t] = m.events.WithLabelValues(t)
	}
	for _, r := range []string{"overloaded", "write"} {
		m.drops.WithLabelValues(r)
	}
	for _, r := range []string{"max_subscribers", "max_per_token", "shutdown"} {
		m.refused.WithLabelValues(r)
	}
	for _, sh := range []string{"top", "member"} {
		m.computations.WithLabelValues(sh)
	}
	if reg == nil {
		return m, nil
	}
	for _, c := range []prometheus.Collector{m.subscribers, m.events, m.drops, m.refused, m.computations, m.errors, m.seconds} {
		if err := reg.Register(c); err != nil {
			return nil, fmt.Errorf("live: registering metrics: %w", err)
		}
	}
	return m, nil
}

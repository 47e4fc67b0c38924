package indexfeed

import "github.com/prometheus/client_golang/prometheus"

type metrics struct {
	boards       *prometheus.GaugeVec
	members      prometheus.GaugeFunc
	bytes        prometheus.Gauge
	boardLag     *prometheus.GaugeVec
	boardMembers *prometheus.GaugeVec
	visible      *prometheus.HistogramVec
	loads        *prometheus.CounterVec
	loadSeconds  prometheus.Histogram
	reloads      *prometheus.CounterVec
	dropped      *prometheus.CounterVec
	fallbacks    *prometheus.CounterVec
	rounds       prometheus.Counter
	roundOps     prometheus.Counter
	entries      prometheus.Counter
	errors       prometheus.Counter
}

// newMetrics builds the index's metrics (a nil registerer: unregistered).
func newMetrics(reg prometheus.Registerer, x *Index) (*metrics, error) {
	m := &metrics{
		bytes: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "rankgate_index_bytes", Help: "Estimated heap bytes of the read index's structures (entries, member ids, lookup maps), updated each second.",
		}),
		boardLag: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rankgate_index_board_lag_seconds", Help: "How far behind Redis each ready board of the read index may be (now − its oldest shard's last complete feed read), updated each second.",
		}, []string{"board"}),
		boardMembers: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "rankgate_index_board_members", Help: "Entries of each loaded board of the read index, updated each second.",
		}, []string{"board"}),
		visible: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "rankgate_index_visible_seconds",
			Help:    "Write → visible in the read index: from the change-feed entry's time (Redis clock) to its application (gateway clock), for boards already caught up.",
			Buckets: []float64{.001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5},
		}, []string{"family"}),
		loads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rankgate_index_loads_total", Help: "Loads into the read index: a whole board (its first read, or at start), or one shard again (see rankgate_index_reloads_total).",
		}, []string{"kind"}),
		loadSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "rankgate_index_load_seconds", Help: "Time to load a whole board into the read index (sizing, feed positions, scans).",
			Buckets: []float64{.01, .05, .1, .25, .5, 1, 2, 5, 10, 30},
		}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rankgate_index_reloads_total",
			Help: "Shards loaded again because their change feed and the index could disagree: gap (the last applied entry is gone: trimmed, flushed, lost in a failover), reset (a rebuild swap or derive), card (a shard with an empty feed changed size).",
		}, []string{"reason"}),
		dropped: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rankgate_index_dropped_total", Help: "Boards that left the read index: idle (index.idle_after) or max_boards (room for another).",
		}, []string{"reason"}),
		fallbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rankgate_index_fallbacks_total",
			Help: "Reads of an indexed family answered by the fan-out instead of the index: loading (the board is entering or a shard reloads), lag (over the family's max_lag), too_big (over index.max_members).",
		}, []string{"family", "reason"}),
		rounds: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "rankgate_index_rounds_total", Help: "Rounds of the index's follower: one pipeline to the masters (one round trip per node).",
		}),
		roundOps: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "rankgate_index_commands_total", Help: "Redis commands the index's follower sent (feed reads, scans, ZCARDs).",
		}),
		entries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "rankgate_index_feed_entries_total", Help: "Change-feed entries applied to the read index.",
		}),
		errors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "rankgate_index_errors_total", Help: "Failed operations of the index's follower (each is retried; a board whose reads fail grows its lag).",
		}),
	}
	m.boards = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "rankgate_index_boards", Help: "Boards held by the read index, by state (ready, loading, too_big).",
	}, []string{"state"})
	m.members = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "rankgate_index_members", Help: "Entries of every ready board of the read index.",
	}, func() float64 { return float64(x.Members()) })
	for _, r := range []string{"gap", "reset", "card"} {
		m.reloads.WithLabelValues(r)
	}
	for _, k := range []string{"board", "shard"} {
		m.loads.WithLabelValues(k)
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.boards, m.members, m.bytes, m.boardLag, m.boardMembers, m.visible, m.loads,
			m.loadSeconds, m.reloads, m.dropped, m.fallbacks, m.rounds, m.roundOps, m.entries, m.errors} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

package ledger

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// Pool settings: pgxpool pings a connection idle longer than idleCheck before
// handing it out and checks idle ones every healthCheck, so a session the
// server dropped (restart, idle timeout) is replaced, not failed on;
// lifetimes recycle sessions (a failover, a changed setting).
const (
	idleCheck   = 30 * time.Second
	healthCheck = 30 * time.Second
	maxIdleTime = 5 * time.Minute
	maxLifetime = time.Hour
)

// pool is pgxpool with a closed flag, so calls after Close fail with
// ErrClosed.
type pool struct {
	*pgxpool.Pool
	closed atomic.Bool
}

func newPool(ctx context.Context, cfg *pgxpool.Config, maxConns int) (*pool, error) {
	cfg.MaxConns = int32(maxConns)
	cfg.HealthCheckPeriod = healthCheck
	cfg.MaxConnIdleTime = maxIdleTime
	cfg.MaxConnLifetime = maxLifetime
	cfg.MaxConnLifetimeJitter = maxLifetime / 10
	cfg.PingTimeout = 5 * time.Second
	cfg.ShouldPing = func(_ context.Context, p pgxpool.ShouldPingParams) bool { return p.IdleDuration > idleCheck }
	p, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("ledger: creating the pool: %w", err)
	}
	return &pool{Pool: p}, nil
}

// acquire returns a connection for the caller's exclusive use until Release
// (a connection released broken, busy or inside a transaction is closed).
func (p *pool) acquire(ctx context.Context) (*pgxpool.Conn, error) {
	if p.closed.Load() {
		return nil, ErrClosed
	}
	c, err := p.Acquire(ctx)
	if err != nil {
		if p.closed.Load() {
			return nil, ErrClosed
		}
		return nil, fmt.Errorf("ledger: acquiring a connection: %w", err)
	}
	return c, nil
}

// close closes idle connections and refuses further acquires; connections
// in use are closed when released.
func (p *pool) close() {
	if p.closed.CompareAndSwap(false, true) {
		go p.Close() // waits for connections in use: never block the caller on them
	}
}

// retryable reports a deadlock or serialization failure: the transaction was
// rolled back by the server and may simply run again.
func retryable(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001")
}

// poolCollector exports the pool's statistics (pgxpool.Stat), read once per
// scrape.
type poolCollector struct {
	p                                         *pool
	total, idle, acquired, constructing, maxC *prometheus.Desc
	acquires, acquireWait, emptyAcquires      *prometheus.Desc
	emptyWait, canceled, newConns, destroyed  *prometheus.Desc
}

var _ prometheus.Collector = (*poolCollector)(nil)

func newPoolCollector(p *pool) *poolCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("rankgate_ledger_"+name, help, labels, nil)
	}
	return &poolCollector{p: p,
		total:         d("connections", "Open ledger connections (idle, in use and being opened)."),
		idle:          d("connections_idle", "Idle ledger connections."),
		acquired:      d("connections_acquired", "Ledger connections in use."),
		constructing:  d("connections_constructing", "Ledger connections being opened."),
		maxC:          d("connections_max", "The pool's bound on ledger connections."),
		acquires:      d("pool_acquires_total", "Connections handed out by the ledger pool."),
		acquireWait:   d("pool_acquire_seconds_total", "Time spent acquiring ledger connections (successful acquires)."),
		emptyAcquires: d("pool_empty_acquires_total", "Acquires that found no idle connection and waited for one (opened or released)."),
		emptyWait:     d("pool_empty_acquire_wait_seconds_total", "Time acquires waited because no connection was idle."),
		canceled:      d("pool_canceled_acquires_total", "Acquires given up by their caller (context ended)."),
		newConns:      d("pool_new_connections_total", "Ledger connections opened."),
		destroyed:     d("pool_destroyed_connections_total", "Ledger connections closed by the pool, by reason (lifetime, idle).", "reason"),
	}
}

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.total, c.idle, c.acquired, c.constructing, c.maxC, c.acquires, c.acquireWait,
		c.emptyAcquires, c.emptyWait, c.canceled, c.newConns, c.destroyed} {
		ch <- d
	}
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.p.Stat()
	g := func(d *prometheus.Desc, v float64) { ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v) }
	n := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	g(c.total, float64(s.TotalConns()))
	g(c.idle, float64(s.IdleConns()))
	g(c.acquired, float64(s.AcquiredConns()))
	g(c.constructing, float64(s.ConstructingConns()))
	g(c.maxC, float64(s.MaxConns()))
	n(c.acquires, float64(s.AcquireCount()))
	n(c.acquireWait, s.AcquireDuration().Seconds())
	n(c.emptyAcquires, float64(s.EmptyAcquireCount()))
	n(c.emptyWait, s.EmptyAcquireWaitTime().Seconds())
	n(c.canceled, float64(s.CanceledAcquireCount()))
	n(c.newConns, float64(s.NewConnsCount()))
	n(c.destroyed, float64(s.MaxLifetimeDestroyCount()), "lifetime")
	n(c.destroyed, float64(s.MaxIdleDestroyCount()), "idle")
}

// Package ledger is rankgate's durable evidence: a PostgreSQL ledger of every
// point event, reversal, correction and projection, the per-board totals they
// add up to, the lifecycle of each family period, late events kept for review,
// and settlements with their award outbox.
//
// The ledger is the truth and Redis a projection of it: Record commits an
// event and the member's new totals (points, version, achievement seq) in one
// transaction; the gateway then hands Redis the absolute totals with their
// version, and MarkProjected notes that it did. Unprojected lists what a crash
// left behind.
//
// Points are stored as the user sees them (not negated for asc families);
// Rules.Desc only matters for the order of settlement standings.
//
// It imports pgx, internal/rank and internal/audit (the audit log's entry,
// kept in a table) only; it must not import go-redis,
// internal/store, internal/gateway or net/http.
package ledger

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"log/slog"
	"regexp"
	"time"

	"github.com/exaring/otelpgx"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
	metricnoop "go.opentelemetry.io/otel/metric/noop"
	"go.opentelemetry.io/otel/trace"
)

// Sentinel errors. Returned errors wrap them with details: test with errors.Is.
var (
	// ErrPeriodClosed: the event's period is frozen, settled or archived; the
	// caller keeps the event for review.
	ErrPeriodClosed = errors.New("ledger: period closed")
	// ErrUnknownEvent: a reversal names an event the ledger does not hold for
	// that family, member and period (or on none of the named boards).
	ErrUnknownEvent = errors.New("ledger: unknown event")
	// ErrNotReversible: a reversal names a reversal or a projection.
	ErrNotReversible = errors.New("ledger: event is not reversible")
	// ErrOutOfRange: points would leave ±MaxPoints, or the period used up its
	// achievement numbers (seq ≥ SeqCapacity under TieFirst). Nothing is written.
	ErrOutOfRange = errors.New("ledger: out of range")
	// ErrNotFrozen: settlement of a period that is not frozen (nor settled).
	ErrNotFrozen = errors.New("ledger: period not frozen")
	// ErrNotSettled: archiving a period that has no settlement.
	ErrNotSettled = errors.New("ledger: period not settled")
	// ErrInvalid: a malformed event, rule set or argument (a caller bug: the
	// gateway validates input before it reaches the ledger).
	ErrInvalid = errors.New("ledger: invalid argument")
	// ErrReviewNotFound: DecideReview of an unknown review id.
	ErrReviewNotFound = errors.New("ledger: review not found")
	// ErrReviewDecided: DecideReview of a review already decided otherwise.
	ErrReviewDecided = errors.New("ledger: review already decided")
	// ErrClosed: the Ledger was closed.
	ErrClosed = errors.New("ledger: closed")
)

// Event kinds.
const (
	KindAward      = "award"
	KindReversal   = "reversal"
	KindCorrection = "correction"
	KindProjection = "projection"
)

// Period states.
const (
	StateOpen     = "open"
	StateFrozen   = "frozen"
	StateSettled  = "settled"
	StateArchived = "archived"
)

// Review states.
const (
	ReviewPending  = "pending"
	ReviewAccepted = "accepted"
	ReviewRejected = "rejected"
)

// DefaultSchema is the schema the ledger's tables live in unless Options say otherwise.
const DefaultSchema = "rankgate"

// Options configure Open.
type Options struct {
	// Schema holds every table (default "rankgate"); created when missing.
	// Lower-case letters, digits and '_' only.
	Schema string
	// Logger receives migration, lifecycle and (at debug) per-board write
	// logs; nil discards them.
	Logger *slog.Logger
	// Registerer receives the ledger's metrics; nil registers nothing.
	Registerer prometheus.Registerer
	// MaxConns bounds the connection pool (default 10).
	MaxConns int
	// TracerProvider, when set, traces every query, batch and connect
	// (otelpgx: SQL text, never its parameters). Nil: no tracing.
	TracerProvider trace.TracerProvider
}

// Ledger is a handle on the PostgreSQL ledger. It is safe for concurrent use.
type Ledger struct {
	pool *pool
	// connCfg opens the sessions that hold advisory-lock leases, outside
	// the pool (a lease lives as long as its session).
	connCfg *pgx.ConnConfig
	schema  string
	log     *slog.Logger
	m       *metrics
	reg     prometheus.Registerer

	// beforeCommit, when set (tests only), runs inside a write transaction
	// just before its COMMIT.
	beforeCommit func(op, eventID string)
	// lockingOnly, when set (tests only), runs every group on the locking
	// path: the reference the delta path is checked against.
	lockingOnly bool
}

var schemaRe = regexp.MustCompile(`^[a-z_][a-z0-9_]{0,62}$`)

// Open connects to dsn, creates the schema when missing and applies pending
// migrations (under an advisory lock, so concurrent starts are safe), then
// returns the ledger. dsn is a libpq URL or key=value string.
func Open(ctx context.Context, dsn string, opts Options) (*Ledger, error) {
	if opts.Schema == "" {
		opts.Schema = DefaultSchema
	}
	if !schemaRe.MatchString(opts.Schema) {
		return nil, fmt.Errorf("%w: schema %q must match %s", ErrInvalid, opts.Schema, schemaRe)
	}
	if opts.MaxConns <= 0 {
		opts.MaxConns = 10
	}
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	cfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		return nil, fmt.Errorf("ledger: parsing the DSN: %w", err)
	}
	cc := cfg.ConnConfig
	if cc.RuntimeParams == nil {
		cc.RuntimeParams = map[string]string{}
	}
	// Every table is addressed unqualified: the pool's sessions resolve names
	// in the ledger's schema (pg_catalog stays implicitly first).
	cc.RuntimeParams["search_path"] = `"` + opts.Schema + `"`
	if cc.RuntimeParams["application_name"] == "" {
		cc.RuntimeParams["application_name"] = "rankgate-ledger/" + opts.Schema
	}
	if opts.TracerProvider != nil {
		cc.Tracer = otelpgx.NewTracer(otelpgx.WithTracerProvider(opts.TracerProvider),
			otelpgx.WithMeterProvider(metricnoop.NewMeterProvider())) // metrics are Prometheus's
	}
	p, err := newPool(ctx, cfg, opts.MaxConns)
	if err != nil {
		return nil, err
	}
	l := &Ledger{
		connCfg: cc.Copy(),
		pool:    p,
		schema:  opts.Schema,
		log:     log.With("component", "ledger"),
	}
	l.m = newMetrics(l.pool)
	if err := l.migrate(ctx); err != nil {
		l.pool.close()
		return nil, err
	}
	if err := l.m.register(opts.Registerer); err != nil {
		l.pool.close()
		return nil, err
	}
	l.reg = opts.Registerer
	return l, nil
}

// Close closes idle connections and makes further calls fail with ErrClosed;
// connections in use are closed when released. It unregisters the metrics.
func (l *Ledger) Close() {
	l.pool.close()
	l.m.unregister(l.reg)
}

// Ping checks that the database answers.
func (l *Ledger) Ping(ctx context.Context) error {
	return l.withConn(ctx, func(c *pgx.Conn) error { return c.Ping(ctx) })
}

// Schema returns the schema the ledger's tables live in.
func (l *Ledger) Schema() string { return l.schema }

// advisoryKey maps a name to a stable advisory-lock key.
func advisoryKey(name string) int64 {
	h := fnv.New64a()
	h.Write([]byte(name))
	return int64(h.Sum64())
}

// withConn runs fn on a pooled connection.
func (l *Ledger) withConn(ctx context.Context, fn func(*pgx.Conn) error) error {
	c, err := l.pool.acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	return fn(c.Conn())
}

// errRollback makes inTx roll back and return nil: the closure already holds
// its answer (a no-op that must leave no trace).
var errRollback = errors.New("ledger: rollback")

// inTx runs fn in one READ COMMITTED transaction, committing when fn returns
// nil. A deadlock or serialization failure reruns the whole transaction (at
// most three attempts): fn must be safe to rerun.
func (l *Ledger) inTx(ctx context.Context, op, eventID string, fn func(pgx.Tx) error) error {
	return l.retryTx(ctx, op, eventID, func() error { return l.inTxOnce(ctx, op, eventID, fn) })
}

// inBatchTx is inTx for writers that start with a batch: BEGIN travels in
// the transaction's first round trip instead of one of its own (batchTx).
func (l *Ledger) inBatchTx(ctx context.Context, op, eventID string, fn func(txq) error) error {
	return l.retryTx(ctx, op, eventID, func() error { return l.inBatchTxOnce(ctx, op, eventID, fn) })
}

// retryTx runs one attempt of a transaction until it succeeds, fails for
// good, or three attempts ran.
func (l *Ledger) retryTx(ctx context.Context, op, eventID string, once func() error) error {
	start := time.Now()
	defer func() { l.m.txSeconds.WithLabelValues(op).Observe(time.Since(start).Seconds()) }()
	var err error
	for attempt := 1; ; attempt++ {
		err = once()
		if err == nil || attempt == 3 || !retryable(err) || ctx.Err() != nil {
			break
		}
		l.m.retries.WithLabelValues(op).Inc()
		l.log.Warn("retrying a ledger transaction", "op", op, "event_id", eventID, "attempt", attempt, "err", err)
	}
	if errors.Is(err, errRollback) {
		return nil
	}
	return err
}

func (l *Ledger) inTxOnce(ctx context.Context, op, eventID string, fn func(pgx.Tx) error) (err error) {
	c, err := l.pool.acquire(ctx)
	if err != nil {
		return err
	}
	defer c.Release()
	tx, err := c.Begin(ctx)
	if err != nil {
		return fmt.Errorf("ledger: begin: %w", err)
	}
	defer func() {
		if err != nil {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			_ = tx.Rollback(rctx) // a failed rollback closes the connection; the pool drops it
			cancel()
		}
	}()
	if err = fn(tx); err != nil {
		return err
	}
	if l.beforeCommit != nil {
		l.beforeCommit(op, eventID)
	}
	if err = tx.Commit(ctx); err != nil {
		return fmt.Errorf("ledger: commit: %w", err)
	}
	return nil
}

// txq is what a writer needs of its transaction: pgx.Tx, or a batchTx.
type txq interface {
	querier
	Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error)
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}

var (
	_ txq = pgx.Tx(nil)
	_ txq = (*batchTx)(nil)
)

// groupPlanSettings are the planner settings of a group's transaction, sent
// with its BEGIN (no round trip of their own). Every statement of a group
// reads and writes rows by key from arrays of a few elements: index lookups
// in nested loops are right whatever the table statistics say. PostgreSQL
// caches a prepared statement's generic plan per connection once it judges
// it no dearer than the custom ones — after five executions, when a fresh
// ledger's totals table still has a few pages — and keeps it until the next
// ANALYZE: a hash join over a sequential scan of totals, every group paying
// a scan of the whole table (docs/performance.md, issue 10, "Session 4: the
// single-event tail"). With sequential scans, hash and merge joins
// discouraged, the plan is an index plan from the first execution on, and
// the generic plan is used at once (no planning per group). Durability
// settings are untouched.
const groupPlanSettings = `SELECT set_config('plan_cache_mode', 'force_generic_plan', true),
	set_config('enable_seqscan', 'off', true), set_config('enable_hashjoin', 'off', true),
	set_config('enable_mergejoin', 'off', true)`

// planLikeGroups applies groupPlanSettings to a single write's transaction
// (reversals, projections, removals): its statements are byte for byte the
// group locking path's, and pgx caches prepared statements per connection
// by their text, so a generic plan cached here under the default settings
// (a sequential scan of a then small totals table) would be reused by every
// later group on the connection, whatever the group's settings
// (TestGroupPlansUseIndexesOnAGrownTable, "projections first"). One round
// trip more for these rarer writes.
func planLikeGroups(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, groupPlanSettings); err != nil {
		return fmt.Errorf("ledger: plan settings: %w", err)
	}
	return nil
}

// batchTx is a transaction whose BEGIN is sent with its first statement:
// the first batch carries it in the same round trip (a lone statement sends
// it first).
type batchTx struct {
	c     *pgx.Conn
	begun bool
}

func (t *batchTx) begin(ctx context.Context) error {
	if t.begun {
		return nil
	}
	if _, err := t.c.Exec(ctx, `BEGIN`); err != nil {
		return fmt.Errorf("ledger: begin: %w", err)
	}
	t.begun = true
	if _, err := t.c.Exec(ctx, groupPlanSettings); err != nil {
		return fmt.Errorf("ledger: plan settings: %w", err)
	}
	return nil
}

func (t *batchTx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	if !t.begun {
		qs := append([]*pgx.QueuedQuery{{SQL: `BEGIN`}, {SQL: groupPlanSettings}}, b.QueuedQueries...)
		b = &pgx.Batch{QueuedQueries: qs}
		t.begun = true
	}
	return t.c.SendBatch(ctx, b)
}

func (t *batchTx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	if err := t.begin(ctx); err != nil {
		return pgconn.CommandTag{}, err
	}
	return t.c.Exec(ctx, sql, args...)
}

func (t *batchTx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	if err := t.begin(ctx); err != nil {
		return nil, err
	}
	return t.c.Query(ctx, sql, args...)
}

func (t *batchTx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	if err := t.begin(ctx); err != nil {
		return errRow{err}
	}
	return t.c.QueryRow(ctx, sql, args...)
}

type errRow struct{ err error }

func (r errRow) Scan(...any) error { return r.err }

func (l *Ledger) inBatchTxOnce(ctx context.Context, op, eventID string, fn func(txq) error) (err error) {
	// Every attempt observes the stages it reached, failed or not (a retried
	// transaction's first try, a wait for a connection cut off by the
	// context's end), so the stages account for all the attempts' time
	// (rollbacks aside). No outcome label: rankgate_ledger_tx_retries_total
	// counts the failed tries (TestTxStagesObserveFailedAttempts). An
	// acquire that waited for nothing is no sample of the wait: a context
	// already done before it started, a closed pool (pool.acquire reports
	// pgxpool's closed pool as ErrClosed too) — their near-zero samples
	// would pull the quantiles down.
	done := ctx.Err() != nil
	t0 := time.Now()
	c, err := l.pool.acquire(ctx)
	t1 := time.Now()
	if !done && !errors.Is(err, ErrClosed) {
		l.m.txStage.WithLabelValues(op, "acquire").Observe(t1.Sub(t0).Seconds())
	}
	if err != nil {
		return err
	}
	// A connection left inside a transaction (a failed rollback) is
	// destroyed by Release, never reused.
	defer c.Release()
	tx := &batchTx{c: c.Conn()}
	defer func() {
		if err != nil && tx.begun {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
			_, _ = tx.c.Exec(rctx, `ROLLBACK`)
			cancel()
		}
	}()
	err = fn(tx)
	t2 := time.Now()
	l.m.txStage.WithLabelValues(op, "statements").Observe(t2.Sub(t1).Seconds())
	if err != nil {
		return err
	}
	if l.beforeCommit != nil {
		l.beforeCommit(op, eventID)
	}
	if !tx.begun {
		return nil
	}
	tag, err := tx.c.Exec(ctx, `COMMIT`)
	l.m.txStage.WithLabelValues(op, "commit").Observe(time.Since(t2).Seconds())
	if err != nil {
		return fmt.Errorf("ledger: commit: %w", err)
	}
	if tag.String() != "COMMIT" {
		err = fmt.Errorf("ledger: commit: %w", pgx.ErrTxCommitRollback)
		return err
	}
	return nil
}

// Package store runs rankgate's Redis work: the Lua scripts, per-shard seek,
// position and count calls, pipelined writes, period and profile keys. It
// knows go-redis and the scripts' argument order; it does not build keys
// (internal/shard does) nor merge shards (internal/gateway does).
//
// It imports go-redis, internal/shard, internal/rank and internal/audit (the
// audit log's entry, kept in a stream); it must not import
// net/http, internal/gateway or internal/ledger.
package store

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"

	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/shard"
)

// Options configure a Store.
type Options struct {
	// Timeout is the deadline given to a call whose context has none.
	Timeout    time.Duration
	Logger     *slog.Logger
	Registerer prometheus.Registerer
	// WaitReplicas (redis.wait_replicas): after every Write pipeline, WAIT
	// until this many replicas of each master the writes touched have them;
	// a write they did not reach within WaitTimeout fails with
	// ErrNotReplicated. 0: off. Needs a client built by NewClient.
	WaitReplicas int
	// WaitTimeout bounds each WAIT (default 100 ms); keep it well below the
	// client's ReadTimeout, which bounds the whole node batch.
	WaitTimeout time.Duration
	// ReadTransport (redis.read_transport): how a read that one master
	// serves reaches it, TransportRueidis (default) or TransportGoRedis.
	ReadTransport string
	// TracerProvider, when set, traces each read pipeline of the rueidis
	// transport (one span per round trip to a master, TracerName) as
	// ClientOptions.TracerProvider traces go-redis's.
	TracerProvider trace.TracerProvider
	// Health: the NodeHealth given to NewClient for rw (ClientOptions.Health).
	// A rueidis read that meets a network error or timeout records its
	// master there, which keeps that master out of rw's next slot-map
	// reload; and the rueidis transport leaves a master that rw's node
	// clients saw fail just now to go-redis. nil: a record of the Store's
	// own, which rw's reloads do not read.
	Health *NodeHealth
	// ReadClientPrune (read transport rueidis, a cluster): at most once per
	// this interval a read starts a pass in the background that lists rw's
	// masters (ForEachMaster: one CLUSTER SLOTS) and closes the rueidis
	// client of an address that a pass at least this long before found no
	// master either (a failover's demoted master, a node whose slots all
	// moved, a removed node). Default DefaultReadClientPrune.
	ReadClientPrune time.Duration
	// IndexWindow: a write whose pipeline answered within it is indexed by
	// the SADD of that pipeline; a slower one adds its board shards again
	// after its scripts answered (see Write.Index), and an erasure waits
	// this long between taking the index (TakeIndex) and erasing. Default
	// DefaultIndexWindow.
	IndexWindow time.Duration
}

// DefaultIndexWindow is Options.IndexWindow's default.
const DefaultIndexWindow = 250 * time.Millisecond

// TracerName is the instrumentation scope of the rueidis transport's spans.
const TracerName = "github.com/rankgate/rankgate/internal/store"

// Store runs commands and scripts on a primary (masters) client and, for
// stale-ok reads, an optional replica-reading client.
type Store struct {
	rw      redis.UniversalClient
	ro      redis.UniversalClient
	timeout time.Duration
	waitN   int
	waitT   time.Duration
	log     *slog.Logger
	m       *metrics
	// direct: the rueidis clients of the masters (ReadTransport rueidis);
	// nil: direct reads use the master's go-redis client.
	direct *directClients
	tracer trace.Tracer // nil: no spans
	// indexWindow: Options.IndexWindow.
	indexWindow time.Duration
}

type metrics struct {
	errors       *prometheus.CounterVec
	noscript     prometheus.Counter
	scriptErrors *prometheus.CounterVec
	// directRetries: reads sent straight to a master that failed there and
	// went again through the cluster pipeline (ReadShards).
	directRetries prometheus.Counter
	// directReads: reads sent straight to a master, by transport.
	directReads *prometheus.CounterVec
	// directRueidis, directGoRedis: its two series, looked up once.
	directRueidis, directGoRedis prometheus.Counter
	// directDialErrors: failed dials of a master's rueidis client.
	directDialErrors prometheus.Counter
	// directClients: the rueidis clients connected now.
	directClients prometheus.GaugeFunc
}

// newMetrics builds the store's metrics; directClients gives the number of
// rueidis clients connected now.
func newMetrics(reg prometheus.Registerer, directClients func() float64) (*metrics, error) {
	m := &metrics{
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rankgate_redis_errors_total", Help: "Redis calls that failed, by operation.",
		}, []string{"op"}),
		noscript: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "rankgate_redis_noscript_recovered_total", Help: "Pipelined EVALSHA calls re-run outside the pipeline after NOSCRIPT.",
		}),
		scriptErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rankgate_script_errors_total", Help: "Lua script calls that returned an error, by script.",
		}, []string{"script"}),
		directRetries: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "rankgate_redis_read_rerouted_total",
			Help: "Read pipelines sent straight to a master that failed there (a redirect while slots move, a refused connection) and were sent again through the cluster client.",
		}),
		directReads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rankgate_redis_direct_reads_total",
			Help: "Read pipelines sent straight to the master that serves all their keys, by transport (rueidis, go-redis); a rueidis client not yet connected sends them by go-redis.",
		}, []string{"transport"}),
	}
	m.directDialErrors = prometheus.NewCounter(prometheus.CounterOpts{
		Name: "rankgate_redis_direct_dial_errors_total",
		Help: "Failures of a master's rueidis read client (read transport rueidis): a failed dial, or a read that met a network error or timeout on its connection; for a second after either (or after go-redis failed to dial that master; not after a go-redis command merely timed out) its reads go through go-redis, then the client is used (or dialled) again.",
	})
	m.directClients = prometheus.NewGaugeFunc(prometheus.GaugeOpts{
		Name: "rankgate_redis_direct_clients",
		Help: "rueidis read clients connected now (read transport rueidis; one connection each, one per master read since start); the client of an address that stopped being a master is closed one to two prune intervals (10 s) later.",
	}, directClients)
	m.directRueidis = m.directReads.WithLabelValues(TransportRueidis)
	m.directGoRedis = m.directReads.WithLabelValues(TransportGoRedis)
	// Every series exists from the start, so dashboards and alerts see zeros.
	for _, op := range []string{"write", "seek", "position", "zmscore", "zcount", "zcard", "period", "incrby", "sadd",
		"smembers", "xadd", "xrange", "profile", "profiles", "snapshot", "memory", "cluster_slots", "state", "expire",
		"rebuild", "zscan", "derive", "wait", "shared_get", "shared_set", "shared_lease", "hmget", "feed", "srem", "erase", "del", "take_index"} {
		m.errors.WithLabelValues(op)
	}
	for _, sc := range []string{"apply", "reverse", "project", "seek", "position", "snapshot", "swap", "columns", "members", "derive", "erase", "take_index"} {
		m.scriptErrors.WithLabelValues(sc)
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.errors, m.noscript, m.scriptErrors, m.directRetries, m.directReads, m.directDialErrors, m.directClients} {
			if err := reg.Register(c); err != nil {
				return nil, err
			}
		}
	}
	return m, nil
}

// New builds a Store. ro may be nil: replica reads then go to the primaries.
func New(rw, ro redis.UniversalClient, o Options) (*Store, error) {
	if rw == nil {
		return nil, errors.New("store: nil primary client")
	}
	if o.Timeout <= 0 {
		o.Timeout = time.Second
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.WaitReplicas < 0 {
		return nil, fmt.Errorf("store: wait replicas %d < 0", o.WaitReplicas)
	}
	if o.WaitTimeout <= 0 {
		o.WaitTimeout = 100 * time.Millisecond
	}
	if o.ReadClientPrune <= 0 {
		o.ReadClientPrune = DefaultReadClientPrune
	}
	if o.IndexWindow <= 0 {
		o.IndexWindow = DefaultIndexWindow
	}
	// direct: set below for the rueidis transport; atomic, for a scrape of
	// the registry may read it while New still builds it.
	var direct atomic.Pointer[directClients]
	m, err := newMetrics(o.Registerer, func() float64 {
		if d := direct.Load(); d != nil {
			return float64(d.count())
		}
		return 0
	})
	if err != nil {
		return nil, err
	}
	st := &Store{rw: rw, ro: ro, timeout: o.Timeout, waitN: o.WaitReplicas, waitT: o.WaitTimeout, log: o.Logger, m: m,
		indexWindow: o.IndexWindow}
	switch o.ReadTransport {
	case "", TransportRueidis:
		health := o.Health
		if health == nil {
			health = new(NodeHealth)
		}
		d := newDirectClients(o.Logger, m.directDialErrors, health)
		d.timeout, d.pruneEvery = o.Timeout, o.ReadClientPrune
		if cc, ok := rw.(*redis.ClusterClient); ok {
			d.masters = func(ctx context.Context) (map[string]bool, error) { return masterAddrs(ctx, cc) }
		}
		st.direct = d
		direct.Store(d)
		if o.TracerProvider != nil {
			st.tracer = o.TracerProvider.Tracer(TracerName)
		}
	case TransportGoRedis:
	default:
		return nil, fmt.Errorf("store: read transport %q: want %s or %s", o.ReadTransport, TransportRueidis, TransportGoRedis)
	}
	return st, nil
}

// ConnectReaders dials the read transport's client of every master now
// (read transport rueidis; otherwise nothing), within ctx — without it each
// is dialled in the background on the first read of its master, which goes
// through go-redis. An error leaves reads correct: the masters whose client
// is not up are read through go-redis, and their dials are retried.
func (s *Store) ConnectReaders(ctx context.Context) error {
	if s.direct == nil {
		return nil
	}
	return ForEachMaster(ctx, s.rw, func(ctx context.Context, n *redis.Client) error {
		return s.direct.connect(ctx, n)
	})
}

// masterAddrs lists the addresses of cc's masters. ForEachMaster reloads
// the slot map first (one CLUSTER SLOTS), falling back to the one it has.
func masterAddrs(ctx context.Context, cc *redis.ClusterClient) (map[string]bool, error) {
	var mu sync.Mutex
	out := map[string]bool{}
	err := cc.ForEachMaster(ctx, func(_ context.Context, n *redis.Client) error {
		mu.Lock()
		defer mu.Unlock()
		out[n.Options().Addr] = true
		return nil
	})
	return out, err
}

// Close closes the read transport's own connections (not the go-redis
// clients, which the caller owns).
func (s *Store) Close() {
	if s.direct != nil {
		s.direct.close()
	}
}

// Primary returns the masters' client.
func (s *Store) Primary() redis.UniversalClient { return s.rw }

// HasReplica reports whether a replica-reading client is configured.
func (s *Store) HasReplica() bool { return s.ro != nil }

func (s *Store) deadline(ctx context.Context) (context.Context, context.CancelFunc) {
	if _, ok := ctx.Deadline(); ok {
		return ctx, func() {}
	}
	return context.WithTimeout(ctx, s.timeout)
}

// reader picks the client for a read and whether to run scripts read-only.
func (s *Store) reader(replica bool) (redis.UniversalClient, bool) {
	if replica && s.ro != nil {
		return s.ro, true
	}
	return s.rw, false
}

// fail counts a Redis failure; absent keys and cancellations (a fan-out that
// gave up on this call because another shard failed) are not failures.
func (s *Store) fail(op string, err error) error {
	if err != nil && !errors.Is(err, redis.Nil) && !errors.Is(err, context.Canceled) {
		s.m.errors.WithLabelValues(op).Inc()
	}
	return classify(err)
}

// ---- writes ----

// WriteKind selects the script of a Write.
type WriteKind int

// Write kinds.
const (
	KindApply WriteKind = iota
	KindReverse
	KindProject
	// KindRemove: a moderator removes Member from the board shard
	// (remove.lua; Redis-only mode). Status ok (Before: the score it had) |
	// absent | closed.
	KindRemove
)

// Write is one scripted write on one board shard.
type Write struct {
	Kind WriteKind
	Keys shard.Keys

	Member string
	// Apply: EventID, Mode (sum|gt|lt), Value (stored delta or value).
	EventID string
	Mode    string
	Value   int64
	// Reverse: EventID is the reversal's id, Reverses the original's.
	Reverses string
	// Project: Version, Value (stored total); SetSeq makes Seq the member's
	// seq whatever the points (ledger mode); Absent removes the member.
	Version int64
	SetSeq  bool
	Absent  bool

	B   int64 // 0: tie member
	Seq int64
	// PeriodClosed: the period is known frozen; apply and reverse refuse even
	// on a board shard that has no state mark yet (replays still answer dup).
	PeriodClosed bool
	MaxPoints    int64
	NowMs        int64
	Rules        string
	// Columns (a family with sort columns, HasCols): the write runs
	// columns.lua for its Kind, with B the tie-first capacity (the seq
	// lives in the stored member) and one ColArg per column.
	HasCols bool
	Columns []ColArg
	// Metadata is the event's metadata JSON ("" when it carries none).
	// KeepMetadata passes the shard's metadata hash (Keys.Md) to apply,
	// reverse and project: an applied change keeps Metadata for the member
	// (or clears it), a removal clears it. Off: the scripts run as before
	// metadata existed (ledger mode). Column writes always keep it.
	Metadata     string
	KeepMetadata bool
	// FeedLen > 0 (a family with a read index): the script also appends the
	// change to the shard's feed (Keys.Feed), trimmed to about FeedLen
	// entries (XADD MAXLEN ~), atomically with the change.
	FeedLen int64
	// Gate (tournaments, KindApply only): the join and attempt checks run
	// in the same script as the write (gated apply or columns).
	Gate *Gate
	// Index is the member's board index (shard.Layout.MemberBoards). The
	// write's pipeline also adds Keys.Z to it, beside the script (one SADD
	// per index and Write call, whatever the script answers), so every
	// board shard an acknowledged write may have placed the member on is
	// listed without a second round trip. A write whose pipeline took
	// IndexWindow or more adds it again after its script answered: an
	// erasure that took the index (TakeIndex) waits IndexWindow before it
	// erases, so the script of a write whose SADD it took has run by then,
	// and a later SADD lands in the fresh index that erasure leaves alone.
	// A failed SADD fails the writes it carried (a retry is safe: the
	// scripts dedupe). "" (reversals, removals, absent projections): no
	// index.
	Index string
}

// Gate is a tournament's per-member checks on one board shard: the joins
// and attempts hashes are that shard's (shard.JoinsKey, AttemptsKey).
type Gate struct {
	Joins, Attempts string
	JoinRequired    bool
	MaxAttempts     int64 // 0: no bound
}

// ColArgs are a write's columns for columns.lua: in a sum family (sum) each
// column combines by its own aggregate; max/min families and projections
// keep the whole tuple. vals nil (a reversal) sends zeros.
func ColArgs(c *rank.Columns, vals []int64, sum bool) []ColArg {
	out := make([]ColArg, len(c.Cols))
	for i, col := range c.Cols {
		a := ColArg{Max: col.Max, Width: c.Width(i), Asc: col.Asc}
		if sum {
			a.Agg = col.Agg
		}
		if vals != nil {
			a.Value = vals[i]
		}
		out[i] = a
	}
	return out
}

// ColArg is one column of a columns.lua write.
type ColArg struct {
	Agg   string // sum | last | max | min; "" keeps the whole tuple
	Value int64  // value space (asc columns are not flipped)
	Max   int64
	Width int // hex width (rank.Columns.Width)
	Asc   bool
}

// WriteResult is a script's answer.
type WriteResult struct {
	Status  WriteStatus
	Before  *int64 // stored score before, nil when absent
	After   *int64 // stored score after, nil when absent
	Version int64  // project: the applied (ok) or stored (stale) version
	State   string // closed: the board shard's state
	Err     error
}

func (w Write) script() (*redis.Script, string) {
	if w.gated() {
		if w.HasCols {
			return gatedColumnsScript, "gated_columns"
		}
		return gatedApplyScript, "gated_apply"
	}
	if w.HasCols {
		return columnsScript, "columns"
	}
	switch w.Kind {
	case KindReverse:
		return reverseScript, "reverse"
	case KindProject:
		return projectScript, "project"
	case KindRemove:
		return removeScript, "remove"
	default:
		return applyScript, "apply"
	}
}

// keysArgs are the script's KEYS and ARGV, the change feed included.
func (w Write) keysArgs() ([]string, []any) {
	keys, args := w.ownKeysArgs()
	keys, args = w.withFeed(keys, args)
	if w.gated() {
		// After the feed: gate_head.lua takes them off first.
		keys = append(keys, w.Gate.Joins, w.Gate.Attempts)
		args = append(args, w.EventID, w.Member, flag(w.Gate.JoinRequired), w.Gate.MaxAttempts, "~gate")
	}
	return keys, args
}

// gated: the write runs a tournament's checks (apply only: reversals,
// projections and removals are never attempts).
func (w Write) gated() bool { return w.Gate != nil && w.Kind == KindApply }

// withFeed appends the change feed to a script call's KEYS (last) and ARGV
// ('~feed', FeedLen last; common.lua) when the write keeps one.
func (w Write) withFeed(keys []string, args []any) ([]string, []any) {
	if w.FeedLen <= 0 {
		return keys, args
	}
	return append(keys, w.Keys.Feed), append(args, "~feed", w.FeedLen)
}

func (w Write) ownKeysArgs() ([]string, []any) {
	if w.HasCols {
		return w.colsKeysArgs()
	}
	var keys []string
	var args []any
	switch w.Kind {
	case KindReverse:
		keys, args = []string{w.Keys.Z, w.Keys.Ev, w.Keys.Meta},
			[]any{w.EventID, w.Reverses, w.Member, w.B, w.Seq, w.MaxPoints, w.NowMs, w.Rules, flag(w.PeriodClosed)}
	case KindProject:
		return w.projectOwnKeys(), append([]any{1}, w.projectArgs()...)
	case KindRemove:
		return []string{w.Keys.Z, w.Keys.Ev, w.Keys.Meta, w.Keys.Cols, w.Keys.Md}, []any{w.Member, flag(w.PeriodClosed)}
	default:
		keys, args = []string{w.Keys.Z, w.Keys.Ev, w.Keys.Meta},
			[]any{w.EventID, w.Member, w.Mode, w.Value, w.B, w.Seq, w.MaxPoints, w.NowMs, w.Rules, flag(w.PeriodClosed)}
	}
	if w.KeepMetadata {
		keys = append(keys, w.Keys.Md)
		if w.Kind != KindReverse {
			args = append(args, w.Metadata)
		}
	}
	return keys, args
}

// projectKeys are a projection's KEYS (project.lua), the feed included:
// writes with the same keys share one script call.
func (w Write) projectKeys() []string {
	keys := w.projectOwnKeys()
	if w.FeedLen > 0 {
		keys = append(keys, w.Keys.Feed)
	}
	return keys
}

func (w Write) projectOwnKeys() []string {
	if w.KeepMetadata {
		return []string{w.Keys.Z, w.Keys.M, w.Keys.Meta, w.Keys.Md}
	}
	return []string{w.Keys.Z, w.Keys.M, w.Keys.Meta}
}

// projectArgs is a projection's block of ARGV in project.lua.
func (w Write) projectArgs() []any {
	seqMode, present := "keep", "1"
	if w.SetSeq {
		seqMode = "set"
	}
	if w.Absent {
		present = "0"
	}
	return []any{w.Member, w.Version, w.Value, w.B, w.Seq, w.MaxPoints, w.NowMs, w.Rules, seqMode, present, w.Metadata}
}

// colsKeysArgs: see columns.lua.
func (w Write) colsKeysArgs() ([]string, []any) {
	op, id, extra, mode := "apply", w.EventID, "", w.Mode
	switch w.Kind {
	case KindReverse:
		op, extra = "reverse", w.Reverses
	case KindProject:
		op, id, extra, mode = "project", "", strconv.FormatInt(w.Version, 10), "keep"
		switch {
		case w.Absent:
			mode = "absent"
		case w.SetSeq:
			mode = "set"
		}
	}
	args := make([]any, 0, 14+4*len(w.Columns))
	args = append(args, op, id, w.Member, mode, w.Value, w.B, w.Seq, w.MaxPoints, w.NowMs, w.Rules,
		flag(w.PeriodClosed), extra, w.Metadata, len(w.Columns))
	for _, c := range w.Columns {
		width := c.Width
		if c.Asc {
			width = -width
		}
		args = append(args, c.Agg, c.Value, c.Max, width)
	}
	return []string{w.Keys.Z, w.Keys.Ev, w.Keys.M, w.Keys.Meta, w.Keys.Cols, w.Keys.Md}, args
}

func flag(b bool) string {
	if b {
		return "1"
	}
	return "0"
}

// KeysOf returns the keys a write passes through KEYS (for the one-slot test).
func KeysOf(w Write) []string { k, _ := w.keysArgs(); return k }

// Write runs the writes in one pipelined round trip (go-redis splits it per
// node and runs the nodes in parallel). Projections (KindProject without
// columns) on one board shard share one project.lua call, in their order:
// a ledger group pays one script call per shard it touches, not one per
// event and board. A script call whose EVALSHA met NOSCRIPT (a restarted or
// promoted node, go-redis #3228) is re-run with EVAL in a second pipeline.
// With WaitReplicas, each node's batch ends with WAIT on the same connection
// (waitHook), and a write its master could not get to enough replicas fails
// with ErrNotReplicated. Every result carries its own error.
func (s *Store) Write(ctx context.Context, ws []Write) []WriteResult {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	var wait *waitReq
	if s.waitN > 0 {
		wait = newWaitReq(s.waitN, s.waitT)
		ctx = context.WithValue(ctx, waitCtxKey{}, wait)
	}
	out := make([]WriteResult, len(ws))
	calls := scriptCalls(ws)
	var idx []indexAdd
	sent := time.Now()
	cmds := s.evalPipelined(ctx, len(calls), func(i int) (*redis.Script, []string, []any) {
		return calls[i].sc, calls[i].keys, calls[i].args
	}, func(pipe redis.Pipeliner) { idx = indexAdds(ctx, pipe, ws) })
	took := time.Since(sent)
	for i, c := range calls {
		cmd := cmds[i]
		if err := cmd.Err(); err != nil {
			s.m.scriptErrors.WithLabelValues(c.name).Inc()
			for _, j := range c.ws {
				out[j].Err = s.fail("write", fmt.Errorf("%s script on %s: %w", c.name, ws[j].Keys.Tag, err))
			}
			continue
		}
		replies := []any{cmd.Val()}
		if c.many {
			arr, ok := cmd.Val().([]any)
			if !ok || len(arr) != len(c.ws) {
				for _, j := range c.ws {
					out[j].Err = fmt.Errorf("%s script on %s: unexpected reply %v", c.name, ws[j].Keys.Tag, cmd.Val())
				}
				continue
			}
			replies = arr
		}
		for k, j := range c.ws {
			w := ws[j]
			out[j] = parseWrite(w.Kind, replies[k])
			if out[j].Err != nil {
				out[j].Err = fmt.Errorf("%s script on %s: %w", c.name, w.Keys.Tag, out[j].Err)
				continue
			}
			if wait != nil && out[j].Status.Stored() {
				if err := wait.check(cmd); err != nil {
					out[j] = WriteResult{Err: s.fail("wait", fmt.Errorf("%s script on %s: %w", c.name, w.Keys.Tag, err))}
				}
			}
		}
	}
	s.settleIndex(ctx, idx, out, took)
	return out
}

// indexAdd is one SADD of a Write call to a member's board index.
type indexAdd struct {
	key     string
	zs      []any // the board shards' sorted sets
	ws      []int // the writes it lists
	cmd     *redis.IntCmd
	recheck bool
}

// indexAdds queues on pipe, beside the writes' scripts, one SADD per member
// board index the writes name (Write.Index), listing their board shards'
// sorted sets. A batch's writes of one member are neighbours (one event's
// boards), so the last add is tried before the map.
func indexAdds(ctx context.Context, pipe redis.Pipeliner, ws []Write) []indexAdd {
	var adds []indexAdd
	var at map[string]int // index key → its add, once there are several
	for j, w := range ws {
		if w.Index == "" {
			continue
		}
		k := len(adds) - 1
		if k < 0 || adds[k].key != w.Index {
			var ok bool
			if k, ok = at[w.Index]; !ok {
				k = len(adds)
				adds = append(adds, indexAdd{key: w.Index})
				if k == 1 {
					at = map[string]int{adds[0].key: 0}
				}
				if at != nil {
					at[w.Index] = k
				}
			}
		}
		adds[k].ws = append(adds[k].ws, j)
		if !slices.Contains(adds[k].zs, any(w.Keys.Z)) {
			adds[k].zs = append(adds[k].zs, w.Keys.Z)
		}
	}
	for k := range adds {
		adds[k].cmd = pipe.SAdd(ctx, adds[k].key, adds[k].zs...)
	}
	return adds
}

// settleIndex reads the index adds of a Write (took: from sending its
// pipeline to its last answer). A failed add fails the writes it carried.
// When the pipeline took indexWindow or more, the adds of writes that
// succeeded are sent again now that their scripts have answered (a second
// round trip). Why that is enough: an erasure takes the index (moves its
// elements to its work set) and waits indexWindow before it erases; a SADD
// it took was sent less than indexWindow before the write's script
// answered, so that script has run before the erasure reaches its shard; a
// SADD after the take lands in the fresh index, which the erasure leaves
// alone.
func (s *Store) settleIndex(ctx context.Context, adds []indexAdd, out []WriteResult, took time.Duration) {
	var pipe redis.Pipeliner
	fail := func(a indexAdd, err error) {
		err = s.fail("sadd", fmt.Errorf("member board index %s: %w", a.key, err))
		for _, j := range a.ws {
			if out[j].Err == nil {
				out[j] = WriteResult{Err: err}
			}
		}
	}
	for k := range adds {
		a := &adds[k]
		if err := a.cmd.Err(); err != nil {
			fail(*a, err)
			continue
		}
		if took < s.indexWindow || !slices.ContainsFunc(a.ws, func(j int) bool { return out[j].Err == nil }) {
			continue
		}
		if pipe == nil {
			pipe = s.rw.Pipeline()
		}
		a.recheck = true
		a.cmd = pipe.SAdd(ctx, a.key, a.zs...)
	}
	if pipe == nil {
		return
	}
	_, _ = pipe.Exec(ctx)
	for _, a := range adds {
		if a.recheck && a.cmd.Err() != nil {
			fail(a, a.cmd.Err())
		}
	}
}

// scriptCall is one script call of a Write: one write, or (many) every
// projection of the Write on one board shard.
type scriptCall struct {
	sc   *redis.Script
	name string
	keys []string
	args []any
	ws   []int // the writes it carries, in their order
	many bool  // a project.lua call: one reply per write
	// feedLen: the change feed's length of a many call (its ARGV ends with
	// it once, after every block).
	feedLen int64
}

// scriptCalls turns writes into script calls: each projection joins the
// call of the projections before it with the same KEYS (project.lua runs
// them in order; writes with other keys are independent of them), unless a
// write of another form touches the same sorted set, whose order with them
// then matters: that set's writes keep one call each.
func scriptCalls(ws []Write) []scriptCall {
	solo := map[string]bool{} // sorted sets some write other than a projection of one key set touches
	form := map[string]string{}
	for _, w := range ws {
		k := ""
		if w.Kind == KindProject && !w.HasCols {
			k = strings.Join(w.projectKeys(), "\x00")
		}
		if f, ok := form[w.Keys.Z]; ok && (f != k || k == "") {
			solo[w.Keys.Z] = true
		}
		form[w.Keys.Z] = k
	}
	calls := make([]scriptCall, 0, len(ws))
	at := map[string]int{} // sorted set → its projection call
	for i, w := range ws {
		if w.Kind == KindProject && !w.HasCols {
			if c, ok := at[w.Keys.Z]; ok {
				calls[c].ws = append(calls[c].ws, i)
				calls[c].args = append(calls[c].args, w.projectArgs()...)
				continue
			}
			if !solo[w.Keys.Z] {
				at[w.Keys.Z] = len(calls)
			}
			calls = append(calls, scriptCall{sc: projectScript, name: "project", keys: w.projectKeys(),
				args: append([]any{nil}, w.projectArgs()...), ws: []int{i}, many: true, feedLen: w.FeedLen})
			continue
		}
		sc, name := w.script()
		keys, args := w.keysArgs()
		calls = append(calls, scriptCall{sc: sc, name: name, keys: keys, args: args, ws: []int{i}})
	}
	for i := range calls {
		if calls[i].many {
			calls[i].args[0] = len(calls[i].ws)
			if calls[i].feedLen > 0 { // the feed key is in projectKeys already
				calls[i].args = append(calls[i].args, "~feed", calls[i].feedLen)
			}
		}
	}
	return calls
}

// evalPipelined runs n script calls (call(i) names the i-th) in one
// pipelined round trip (one per node), with whatever more (when not nil)
// queues beside them; a call whose EVALSHA met NOSCRIPT (a restarted or
// promoted node, go-redis #3228) is re-run with EVAL in a second pipeline.
// Each command carries its own error.
func (s *Store) evalPipelined(ctx context.Context, n int, call func(i int) (*redis.Script, []string, []any), more func(redis.Pipeliner)) []*redis.Cmd {
	cmds := make([]*redis.Cmd, n)
	pipe := s.rw.Pipeline()
	for i := range n {
		sc, keys, args := call(i)
		cmds[i] = sc.EvalSha(ctx, pipe, keys, args...)
	}
	if more != nil {
		more(pipe)
	}
	_, _ = pipe.Exec(ctx) // per-command errors are read by the caller
	var rerun redis.Pipeliner
	for i := range n {
		if isNoScript(cmds[i].Err()) {
			s.m.noscript.Inc()
			if rerun == nil {
				rerun = s.rw.Pipeline()
			}
			sc, keys, args := call(i)
			cmds[i] = sc.Eval(ctx, rerun, keys, args...)
		}
	}
	if rerun != nil {
		_, _ = rerun.Exec(ctx)
	}
	return cmds
}

func isNoScript(err error) bool {
	return err != nil && (errors.Is(err, redis.ErrNoScript) || redis.HasErrorPrefix(err, "NOSCRIPT"))
}

func parseWrite(kind WriteKind, v any) WriteResult {
	arr, ok := v.([]any)
	if !ok || len(arr) < 3 {
		return WriteResult{Err: fmt.Errorf("unexpected reply %v", v)}
	}
	str := func(i int) string { s, _ := arr[i].(string); return s }
	st, err := parseStatus(kind, str(0))
	if err != nil {
		return WriteResult{Err: err}
	}
	r := WriteResult{Status: st}
	idx := 1
	if kind == KindProject {
		if r.Status != StatusClosed {
			if r.Version, err = strconv.ParseInt(str(1), 10, 64); err != nil {
				return WriteResult{Err: fmt.Errorf("bad version %q", str(1))}
			}
		} else {
			r.State = str(1)
		}
		idx = 2
		if len(arr) < 4 {
			return WriteResult{Err: fmt.Errorf("unexpected reply %v", v)}
		}
	} else if r.Status == StatusClosed {
		r.State = str(1)
		r.Before, err = optScore(str(2))
		r.After = r.Before
		if err != nil {
			return WriteResult{Err: err}
		}
		return r
	}
	if r.Before, err = optScore(str(idx)); err != nil {
		return WriteResult{Err: err}
	}
	if r.After, err = optScore(str(idx + 1)); err != nil {
		return WriteResult{Err: err}
	}
	return r
}

func optScore(s string) (*int64, error) {
	if s == "" {
		return nil, nil
	}
	v, err := ParseScore(s)
	if err != nil {
		return nil, err
	}
	return &v, nil
}

// ParseScore parses a score as Redis prints it, refusing anything that is not
// an exact integer within ±2^53.
func ParseScore(s string) (int64, error) {
	if v, err := strconv.ParseInt(s, 10, 64); err == nil {
		if v > rank.MaxSafe || v < -rank.MaxSafe {
			return 0, fmt.Errorf("score %s outside ±2^53", s)
		}
		return v, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("bad score %q", s)
	}
	v, ok := rank.FromFloat(f)
	if !ok {
		return 0, fmt.Errorf("score %s is not an integer within ±2^53", s)
	}
	return v, nil
}

func fmtScore(v int64) string { return strconv.FormatInt(v, 10) }

// ---- reads (one shard each; internal/gateway fans out and merges) ----

// Seek modes.
const (
	SeekTop    = "top"
	SeekAfter  = "after"
	SeekLE     = "le"
	SeekBefore = "before"
	// SeekAround reads Limit entries before and Limit after (Score,
	// Member) in one call; SeekResult.Before says how many come before.
	SeekAround = "around"
)

// SeekArgs are the arguments of one seek.
type SeekArgs struct {
	Mode    string
	Score   int64
	Member  string
	Limit   int
	MoreMin *int64 // also count members with score ≥ *MoreMin
	// MoreMember (families with sort columns): count instead the members
	// strictly ahead of (*MoreMin, MoreMember) — rank.BetterKey of a column key.
	MoreMember string
	StopMin    *int64 // stop at the first score < *StopMin
	Guard      string // a key that must exist (snapshot marker), else ErrSnapshotExpired
}

// ErrSnapshotExpired: a snapshot page was asked after its copy expired.
var ErrSnapshotExpired = errors.New("snapshot expired")

// SeekResult is one shard's answer: the shard index of the first item, the
// optional count, and items in board order.
type SeekResult struct {
	Start int64
	More  int64
	Items []rank.Item
	// Before (SeekAround only): Items[:Before] precede the member,
	// Items[Before:] follow it.
	Before int
}

// Seek runs the seek script on one shard key.
func (s *Store) Seek(ctx context.Context, key string, a SeekArgs, replica bool) (SeekResult, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	keys, args := seekKeysArgs(key, a)
	c, ro := s.reader(replica)
	var cmd *redis.Cmd
	if ro {
		cmd = seekScript.RunRO(ctx, c, keys, args...)
	} else {
		cmd = seekScript.Run(ctx, c, keys, args...)
	}
	v, err := cmd.Result()
	if redis.HasErrorPrefix(err, "SNAPSHOT_EXPIRED") {
		return SeekResult{}, ErrSnapshotExpired
	}
	if err != nil {
		if !errors.Is(err, context.Canceled) {
			s.m.scriptErrors.WithLabelValues("seek").Inc()
		}
		return SeekResult{}, s.fail("seek", err)
	}
	if a.Mode == SeekAround {
		return parseAround(v)
	}
	return parseSeek(v)
}

func toInt(v any) int64 {
	switch x := v.(type) {
	case int64:
		return x
	case string:
		n, _ := strconv.ParseInt(x, 10, 64)
		return n
	}
	return 0
}

// Probe asks where (Score, Member) stands in a shard: how many members are
// strictly ahead of it, and how many have score ≥ MoreMin.
type Probe struct {
	Score   int64
	Member  string
	MoreMin int64 // count members with score ≥ MoreMin (strictly more points)
	SameMin int64 // count members with score ≥ SameMin (at least as many points)
	// MoreMember and SameMember (families with sort columns): count instead
	// the members strictly ahead of (Score, MoreMember) and (Score,
	// SameMember): strictly better, and at least as good, on (points, columns).
	MoreMember, SameMember string
}

// Positions is one shard's answer to a list of probes.
type Positions struct {
	Card    int64
	Ahead   []int64
	More    []int64
	AtLeast []int64
}

// Positions runs the position script on one shard key.
func (s *Store) Positions(ctx context.Context, key string, probes []Probe, replica bool) (Positions, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	args := positionArgs(probes)
	c, ro := s.reader(replica)
	var cmd *redis.Cmd
	if ro {
		cmd = positionScript.RunRO(ctx, c, []string{key}, args...)
	} else {
		cmd = positionScript.Run(ctx, c, []string{key}, args...)
	}
	v, err := cmd.Result()
	if err != nil {
		s.m.scriptErrors.WithLabelValues("position").Inc()
		return Positions{}, s.fail("position", err)
	}
	return parsePositions(v, len(probes))
}

// Scores returns the stored scores of members in one shard (ZMSCORE); ok[i]
// is false for an absent member.
func (s *Store) Scores(ctx context.Context, key string, members []string, replica bool) (scores []int64, ok []bool, err error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	c, _ := s.reader(replica)
	args := make([]any, 0, 2+len(members))
	args = append(args, "ZMSCORE", key)
	for _, m := range members {
		args = append(args, m)
	}
	v, err := c.Do(ctx, args...).Result()
	if err != nil {
		return nil, nil, s.fail("zmscore", err)
	}
	return parseZMScore(v, len(members))
}

// Count counts members with stored score in [lo, hi] in one shard.
func (s *Store) Count(ctx context.Context, key string, lo, hi int64, replica bool) (int64, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	c, _ := s.reader(replica)
	n, err := c.ZCount(ctx, key, fmtScore(lo), fmtScore(hi)).Result()
	return n, s.fail("zcount", err)
}

// Card returns the number of members of one shard.
func (s *Store) Card(ctx context.Context, key string, replica bool) (int64, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	c, _ := s.reader(replica)
	n, err := c.ZCard(ctx, key).Result()
	return n, s.fail("zcard", err)
}

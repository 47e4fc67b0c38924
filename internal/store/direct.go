package store

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"github.com/redis/rueidis"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/rankgate/rankgate/internal/rank"
)

// Read transports: how a read that one master serves reaches it
// (Options.ReadTransport, redis.read_transport).
const (
	// TransportRueidis: one rueidis client per master address, which
	// pipelines concurrent reads onto one shared connection (auto
	// pipelining): fewer syscalls and wake-ups per read under load.
	TransportRueidis = "rueidis"
	// TransportGoRedis: a go-redis pipeline on the master's own client.
	TransportGoRedis = "go-redis"
)

// directClients holds one rueidis client per master address, dialled in
// the background the first time a read is sent to that master (that read,
// and every read until the client is up, goes through go-redis), or up
// front by Store.ConnectReaders. The client of an address that stopped
// being a master (a failover, a resharding, a removed node) is closed once
// two passes of prune an interval apart found it no master.
type directClients struct {
	mu      sync.Mutex
	clients map[string]*directClient
	closed  bool
	wg      sync.WaitGroup
	// stop ends a prune pass under way when the clients are closed.
	stop   context.Context
	cancel context.CancelFunc
	// masters returns the addresses of the cluster's masters (nil: a
	// standalone node, nothing to prune); timeout bounds one call.
	masters func(ctx context.Context) (map[string]bool, error)
	timeout time.Duration
	// pruneEvery: the interval between prune passes (at most one per
	// interval, started by a read: get) and how long an address must have
	// been seen no master before its client is closed. prunedAt: when the
	// last pass started; pruning: one is under way.
	pruneEvery time.Duration
	prunedAt   time.Time
	pruning    bool
	// retry: how long after a failed dial a master's client is dialled
	// again, and after a failure of the master its reads go through go-redis.
	retry   time.Duration
	log     *slog.Logger
	dialErr prometheus.Counter
	// health: when each node last failed, shared with the go-redis client
	// (ClientOptions.Health and Options.Health).
	health *NodeHealth
}

type directClient struct {
	c        rueidis.Client // nil while dialling or after a failed dial
	err      error          // the last dial's error
	failedAt time.Time
	ready    chan struct{} // closed when the dial under way ends
	// brokeAt: the master's down time in the shared NodeHealth — when a
	// read of its rueidis client last met a network error or timeout (a
	// dead, cut-off or stopped master), or go-redis failed to dial it (a
	// go-redis command that merely timed out does not count: a slow script
	// says nothing about the reads). For the retry interval after it the
	// master's reads go through go-redis, whose pool fails fast after dial
	// errors: rueidis redials inside the next read, and every read of that
	// master would wait for the dial to its own deadline.
	brokeAt *atomic.Int64
	// goneAt: when a prune pass first found the address no master (zero:
	// a master at the last pass).
	goneAt time.Time
}

// DefaultReadClientPrune is Options.ReadClientPrune's default.
const DefaultReadClientPrune = 10 * time.Second

func newDirectClients(log *slog.Logger, dialErr prometheus.Counter, health *NodeHealth) *directClients {
	stop, cancel := context.WithCancel(context.Background())
	return &directClients{clients: map[string]*directClient{}, retry: time.Second, log: log, dialErr: dialErr, health: health,
		stop: stop, cancel: cancel, timeout: time.Second, pruneEvery: DefaultReadClientPrune, prunedAt: time.Now()}
}

// get returns the rueidis client of node's address, or nil when it is not
// up (yet): then it starts dialling it with node's own options (user,
// password, dialer — TLS included), unless a dial failed within the retry
// interval. ready is closed when that dial ends.
func (d *directClients) get(node *redis.Client) (c rueidis.Client, ready <-chan struct{}, err error) {
	o := node.Options()
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return nil, nil, errors.New("store: closed")
	}
	d.maybePrune()
	dc := d.clients[o.Addr]
	switch {
	case dc == nil:
		dc = d.newClient(o.Addr)
		d.clients[o.Addr] = dc
	case dc.c != nil && d.brokeJustNow(dc):
		return nil, nil, errBroken
	case dc.c != nil:
		return dc.c, nil, nil
	case dc.failedAt.IsZero() || time.Since(dc.failedAt) < d.retry: // dialling, or failed just now
		return nil, dc.ready, dc.err
	}
	dc.failedAt, dc.ready = time.Time{}, make(chan struct{})
	d.wg.Add(1)
	go d.dial(dc, o)
	return nil, dc.ready, nil
}

// newClient is the entry of addr's client before its first dial.
func (d *directClients) newClient(addr string) *directClient {
	return &directClient{brokeAt: d.health.downRecord(addr)}
}

// brokeJustNow: dc's master failed within the retry interval.
func (d *directClients) brokeJustNow(dc *directClient) bool {
	_, ok := stampedWithin(dc.brokeAt, d.retry)
	return ok
}

// errBroken: a master looked unreachable within the retry interval (a read
// of its rueidis client met a connection failure, or go-redis failed to
// dial it); its reads go through go-redis meanwhile.
var errBroken = errors.New("store: the master's read connection failed just now")

// broke notes that a read of addr's rueidis client met a connection
// failure: in the shared NodeHealth, where it also keeps addr out of the
// next slot-map reload, and in the dial-error count.
func (d *directClients) broke(addr string) {
	d.health.failed(addr)
	d.mu.Lock()
	defer d.mu.Unlock()
	if dc := d.clients[addr]; dc != nil && dc.c != nil {
		d.dialErr.Inc()
	}
}

func (d *directClients) dial(dc *directClient, o *redis.Options) {
	defer d.wg.Done()
	dialer := o.Dialer // go-redis's own (TLS included) or ClientOptions.Dialer
	c, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress:       []string{o.Addr},
		ForceSingleClient: true,
		PipelineMultiplex: -1, // one connection: the most reads per write
		Username:          o.Username,
		Password:          o.Password,
		Dialer:            net.Dialer{Timeout: o.DialTimeout},
		DialCtxFn: func(ctx context.Context, addr string, _ *net.Dialer, _ *tls.Config) (net.Conn, error) {
			return dialCtx(ctx, dialer, addr)
		},
		// rueidis bounds a lone command's reply and its PINGs with this,
		// so it is the larger of the two socket timeouts.
		ConnWriteTimeout: max(o.ReadTimeout, o.WriteTimeout),
		DisableCache:     true,
		DisableRetry:     true,                         // a failed read goes through the cluster instead
		ClientSetInfo:    rueidis.DisableClientSetInfo, // the ACL of docs/security.md grants no CLIENT
	})
	d.mu.Lock()
	defer d.mu.Unlock()
	defer close(dc.ready)
	if err != nil {
		dc.err, dc.failedAt = fmt.Errorf("rueidis client of %s: %w", o.Addr, err), time.Now()
		d.dialErr.Inc()
		d.log.Warn("redis: read transport rueidis: dial failed; reads of this master go through go-redis", "addr", o.Addr, "err", err)
		return
	}
	if d.closed {
		c.Close()
		return
	}
	dc.c, dc.err = c, nil
}

// dialCtx runs dial and gives up when ctx ends: go-redis's TLS dialer
// (tls.DialWithDialer) does not watch ctx, and rueidis dials inside a read,
// whose deadline must hold. A connection that arrives late is closed.
func dialCtx(ctx context.Context, dial func(context.Context, string, string) (net.Conn, error), addr string) (net.Conn, error) {
	type result struct {
		c   net.Conn
		err error
	}
	ch := make(chan result, 1)
	go func() {
		c, err := dial(ctx, "tcp", addr)
		ch <- result{c, err}
	}()
	select {
	case r := <-ch:
		return r.c, r.err
	case <-ctx.Done():
		go func() {
			if r := <-ch; r.c != nil {
				_ = r.c.Close()
			}
		}()
		return nil, ctx.Err()
	}
}

// maybePrune starts a prune pass in the background (d.mu held) unless one
// started within the interval or the cluster is one standalone node.
func (d *directClients) maybePrune() {
	if d.masters == nil || d.pruning {
		return
	}
	now := time.Now()
	if now.Sub(d.prunedAt) < d.pruneEvery {
		return
	}
	d.pruning, d.prunedAt = true, now
	d.wg.Add(1)
	go d.prune(now)
}

// prune is the pass started at: it asks the cluster client for its masters
// (ForEachMaster: one CLUSTER SLOTS, as a slot-map reload) and closes the
// clients sweep picks. A pass that cannot learn the masters changes nothing.
func (d *directClients) prune(at time.Time) {
	defer d.wg.Done()
	ctx, cancel := context.WithTimeout(d.stop, d.timeout)
	masters, err := d.masters(ctx)
	cancel()
	if err == nil && len(masters) == 0 {
		err = errors.New("no master in the slot map")
	}
	var cs []rueidis.Client
	d.mu.Lock()
	d.pruning = false
	if err != nil {
		d.log.Debug("redis: read transport rueidis: could not list the masters; no client closed", "err", err)
	} else {
		cs = d.sweep(masters, at)
	}
	d.mu.Unlock()
	// Outside the lock: Close waits for the reads in flight on it.
	for _, c := range cs {
		c.Close()
	}
}

// sweep (d.mu held), for the pass started at now, drops the client of every
// address that is not among masters and was not at a pass at least
// pruneEvery before either (passes start at least pruneEvery apart, so an
// address is dropped one to two intervals after it stopped being a master),
// and returns the connected ones, to be closed. A client still dialling is
// left to the next pass. A read that got a client before it was dropped
// meets rueidis.ErrClosing and goes through go-redis (afterFailure does not
// count it as the master's failure); the next read of that address, should
// it be a master again, dials a new one.
func (d *directClients) sweep(masters map[string]bool, now time.Time) []rueidis.Client {
	if d.closed {
		return nil
	}
	var cs []rueidis.Client
	for addr, dc := range d.clients {
		switch {
		case masters[addr]:
			dc.goneAt = time.Time{}
		case dc.c == nil && dc.failedAt.IsZero(): // dialling
		case dc.goneAt.IsZero():
			dc.goneAt = now
		case now.Sub(dc.goneAt) >= d.pruneEvery:
			delete(d.clients, addr)
			if dc.c != nil {
				cs = append(cs, dc.c)
				d.log.Info("redis: read transport rueidis: closing the client of a node that is no longer a master",
					"addr", addr, "since", now.Sub(dc.goneAt).Round(time.Millisecond))
			}
		}
	}
	return cs
}

// count is the number of connected clients.
func (d *directClients) count() int {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.closed {
		return 0
	}
	n := 0
	for _, dc := range d.clients {
		if dc.c != nil {
			n++
		}
	}
	return n
}

// connect dials node's client unless it is up, and waits for it within ctx.
func (d *directClients) connect(ctx context.Context, node *redis.Client) error {
	for {
		c, ready, err := d.get(node)
		switch {
		case c != nil, errors.Is(err, errBroken):
			return nil
		case err != nil:
			return err
		}
		select {
		case <-ready:
		case <-ctx.Done():
			return fmt.Errorf("rueidis client of %s: %w", node.Options().Addr, ctx.Err())
		}
	}
}

// close closes every client and waits for dials and a prune pass under way.
func (d *directClients) close() {
	d.cancel()
	d.mu.Lock()
	d.closed = true
	cs := make([]rueidis.Client, 0, len(d.clients))
	for _, dc := range d.clients {
		if dc.c != nil {
			cs = append(cs, dc.c)
		}
	}
	d.mu.Unlock()
	d.wg.Wait()
	for _, c := range cs {
		c.Close()
	}
}

// readRueidis sends reads as one DoMulti on rc, the rueidis client of the
// master node that serves all their keys: native reads (seeks from the head,
// positions, windows, counts, cards) are built and parsed straight from
// rueidis; the others (scripts, ZMSCORE, HMGET) are built as go-redis
// commands and get their replies as go-redis would have (RESP3 both), so
// they parse as on the go-redis transport. Like readPipeline's direct mode,
// it reports false at the first failed command another route could answer
// while ctx is live: the caller sends the read again through the cluster.
func (s *Store) readRueidis(ctx context.Context, node *redis.Client, rc rueidis.Client, reads []ShardRead, out []ShardReply) bool {
	s.m.directRueidis.Inc()
	cmds := make(rueidis.Commands, 0, len(reads)+len(reads)/2)
	at := make([]int, len(reads)+1) // read i's commands: cmds[at[i]:at[i+1]]
	var gen []redis.Cmder           // read i's go-redis command (nil: native)
	var pipe redis.Pipeliner
	for i := range reads {
		r := &reads[i]
		at[i] = len(cmds)
		switch {
		case r.Kind == ReadPlace:
			cmds = append(cmds, rc.B().Zcard().Key(r.Key).Build())
			for _, pr := range r.Probes {
				cmds = appendProbe(cmds, rc, r, pr)
			}
		case r.Kind == ReadWindow:
			pr := r.Probes[0]
			cmds = appendProbe(cmds, rc, r, pr)
			if r.Seek.Limit > 0 {
				lim, sc := int64(r.Seek.Limit), "("+fmtScore(pr.Score)
				cmds = append(cmds,
					rc.B().Zrange().Key(r.Key).Min(sc).Max("+inf").Byscore().Limit(0, lim).Withscores().Build(),
					rc.B().Zrange().Key(r.Key).Min(sc).Max("-inf").Byscore().Rev().Limit(0, lim).Withscores().Build())
			}
		case r.Kind == ReadSeek && r.Seek.Native():
			cmds = append(cmds, rc.B().Zrevrange().Key(r.Key).Start(0).Stop(int64(r.Seek.Limit)-1).Withscores().Build())
		case r.Kind == ReadCount:
			cmds = append(cmds, rc.B().Zcount().Key(r.Key).Min(fmtScore(r.Lo)).Max(fmtScore(r.Hi)).Build())
		case r.Kind == ReadCard:
			cmds = append(cmds, rc.B().Zcard().Key(r.Key).Build())
		default:
			if pipe == nil {
				pipe, gen = node.Pipeline(), make([]redis.Cmder, len(reads))
			}
			gen[i] = s.queueRead(ctx, pipe, r, false)
			args := gen[i].Args()
			if len(args) == 0 { // no command for this read: go-redis's path answers its error
				return false
			}
			ss := make([]string, len(args))
			for j, a := range args {
				ss[j] = argString(a)
			}
			cmds = append(cmds, rc.B().Arbitrary(ss...).Build())
		}
	}
	at[len(reads)] = len(cmds)
	var span trace.Span
	if s.tracer != nil {
		ctx, span = s.startSpan(ctx, node.Options().Addr, len(cmds))
		defer span.End()
	}
	res := rueidisReplies(rc.DoMulti(ctx, cmds...))
	s.afterFailure(ctx, node.Options().Addr, res)
	if span != nil {
		for i := range res {
			if err := res.err(i); !answered(err) {
				span.RecordError(err)
				span.SetStatus(codes.Error, err.Error())
				break
			}
		}
	}
	if ctx.Err() == nil {
		for i := range res {
			if !answered(res.err(i)) {
				s.m.directRetries.Inc()
				return false
			}
		}
	}
	for i := range reads {
		r, rs := &reads[i], res[at[i]:at[i+1]]
		switch {
		case r.Kind == ReadPlace:
			out[i] = s.parsePlace(r, rs)
		case r.Kind == ReadWindow:
			out[i] = s.parseWindow(r, rs)
		case r.Kind == ReadSeek && r.Seek.Native():
			var o ShardReply
			if err := rs.err(0); err != nil {
				o.Err = s.fail("seek", err)
			} else if items, err := rs.items(0); err != nil {
				o.Err = fmt.Errorf("seek: %w", err)
			} else {
				o.Seek = SeekResult{More: -1, Items: items}
			}
			out[i] = o
		case r.Kind == ReadCount:
			out[i] = intReply("zcount", s, rs)
		case r.Kind == ReadCard:
			out[i] = intReply("zcard", s, rs)
		default:
			cmd := gen[i]
			fill(cmd, rs[0])
			if sc, ok := cmd.(*redis.Cmd); ok && isNoScript(sc.Err()) {
				s.m.noscript.Inc()
				cmd = s.runScriptAlone(ctx, node, r, false)
			}
			out[i] = s.parseRead(r, cmd)
		}
	}
	return true
}

// appendProbe appends a probe's native commands on r's shard: the count of
// strictly more points, then its points group (at most the band).
func appendProbe(cmds rueidis.Commands, rc rueidis.Client, r *ShardRead, pr Probe) rueidis.Commands {
	return append(cmds,
		rc.B().Zcount().Key(r.Key).Min(fmtScore(pr.MoreMin)).Max("+inf").Build(),
		rc.B().Zrange().Key(r.Key).Min(fmtScore(pr.SameMin)).Max(fmtScore(pr.MoreMin-1)).Byscore().Limit(0, r.band()).Withscores().Build())
}

// intReply is a ZCOUNT's or ZCARD's answer.
func intReply(op string, s *Store, rs rueidisReplies) ShardReply {
	if err := rs.err(0); err != nil {
		return ShardReply{Err: s.fail(op, err)}
	}
	n, err := rs.n(0)
	if err != nil {
		return ShardReply{Err: fmt.Errorf("%s: %w", op, err)}
	}
	return ShardReply{N: n}
}

// startSpan starts the span of one rueidis round trip to the master at
// addr, named and tagged as redisotel tags go-redis's pipelines.
func (s *Store) startSpan(ctx context.Context, addr string, cmds int) (context.Context, trace.Span) {
	attrs := []attribute.KeyValue{
		attribute.String("db.system", "redis"),
		attribute.Int("db.redis.num_cmd", cmds),
		attribute.String("rankgate.redis.read_transport", TransportRueidis),
	}
	if host, port, err := net.SplitHostPort(addr); err == nil {
		attrs = append(attrs, attribute.String("server.address", host))
		if p, err := strconv.Atoi(port); err == nil {
			attrs = append(attrs, attribute.Int("server.port", p))
		}
	}
	return s.tracer.Start(ctx, "redis.pipeline", trace.WithSpanKind(trace.SpanKindClient), trace.WithAttributes(attrs...))
}

// afterFailure handles a rueidis read that met a network error or a
// timeout — a dead, stopped or partitioned master — as go-redis's node
// clients handle theirs (reloadOnDialError; the rueidis client has no such
// hook): the failure goes into the master's NodeHealth record, so the
// master's reads go through go-redis for the retry interval
// (directClient.brokeAt) and the slot-map reload asked for next (coalesced,
// lazy) does not ask that master for CLUSTER SLOTS first and wait on it
// (reloadOnDialError.querySlots). A caller that went away
// (context.Canceled), a client the store closed (rueidis.ErrClosing: Close,
// or prune dropped it) or an error reply says nothing about the master and
// changes nothing.
func (s *Store) afterFailure(ctx context.Context, addr string, res rueidisReplies) {
	for i := range res {
		err := res[i].NonRedisError()
		if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, rueidis.ErrClosing) {
			continue
		}
		s.direct.broke(addr) // before the reload: it reads the record
		if cc, ok := s.rw.(*redis.ClusterClient); ok {
			cc.ReloadState(context.WithoutCancel(ctx))
		}
		return
	}
}

// rueidisReplies: the replies of rueidis commands.
type rueidisReplies []rueidis.RedisResult

func (r rueidisReplies) len() int { return len(r) }

// err is the reply's error as go-redis gives it: redis.Nil for a nil reply,
// an error reply as a redis.Error (so redis.HasErrorPrefix and classify
// read it), anything else (a dead connection, ctx) as it is.
func (r rueidisReplies) err(i int) error { return goRedisErr(r[i].Error()) }

// goRedisErr is a rueidis reply's error as go-redis gives it (see err).
func goRedisErr(err error) error {
	if err == nil {
		return nil
	}
	if rueidis.IsRedisNil(err) {
		return redis.Nil
	}
	if re, ok := rueidis.IsRedisErr(err); ok {
		return redisError(re.Error())
	}
	return err
}

func (r rueidisReplies) n(i int) (int64, error) { return r[i].AsInt64() }

// items reads a ZRANGE … WITHSCORES reply: RESP3 pairs [member, score], or
// RESP2's flat member, score, ….
func (r rueidisReplies) items(i int) ([]rank.Item, error) {
	arr, err := r[i].ToArray()
	if err != nil {
		return nil, err
	}
	if len(arr) > 0 && !arr[0].IsArray() { // RESP2
		if len(arr)%2 != 0 {
			return nil, fmt.Errorf("%d elements in a reply WITHSCORES", len(arr))
		}
		out := make([]rank.Item, len(arr)/2)
		for j := range out {
			if out[j], err = zItem(&arr[2*j], &arr[2*j+1]); err != nil {
				return nil, err
			}
		}
		return out, nil
	}
	out := make([]rank.Item, len(arr))
	for j := range arr {
		pair, err := arr[j].ToArray()
		if err != nil {
			return nil, err
		}
		if len(pair) != 2 {
			return nil, fmt.Errorf("an entry of %d elements in a reply WITHSCORES", len(pair))
		}
		if out[j], err = zItem(&pair[0], &pair[1]); err != nil {
			return nil, err
		}
	}
	return out, nil
}

func zItem(member, score *rueidis.RedisMessage) (rank.Item, error) {
	m, err := member.ToString()
	if err != nil {
		return rank.Item{}, err
	}
	f, err := score.AsFloat64()
	if err != nil {
		return rank.Item{}, err
	}
	sc, ok := rank.FromFloat(f)
	if !ok {
		return rank.Item{}, fmt.Errorf("score %v is not an integer within ±2^53", f)
	}
	return rank.Item{Score: sc, Member: m}, nil
}

// argString formats a command argument as go-redis writes it.
func argString(a any) string {
	switch v := a.(type) {
	case string:
		return v
	case int:
		return strconv.Itoa(v)
	case int64:
		return strconv.FormatInt(v, 10)
	case float64:
		return strconv.FormatFloat(v, 'f', -1, 64)
	case []byte:
		return string(v)
	case bool:
		if v {
			return "1"
		}
		return "0"
	}
	return fmt.Sprint(a)
}

// redisError is a Redis error reply, recognised by redis.HasErrorPrefix.
type redisError string

func (e redisError) Error() string { return string(e) }
func (redisError) RedisError()     {}

func fill(cmd redis.Cmder, r rueidis.RedisResult) {
	msg, err := r.ToMessage()
	if err != nil {
		cmd.SetErr(goRedisErr(err))
		return
	}
	switch c := cmd.(type) {
	case *redis.IntCmd:
		v, err := msg.AsInt64()
		c.SetVal(v)
		c.SetErr(err)
	case *redis.ZSliceCmd:
		zs, err := msg.AsZScores()
		if err != nil {
			c.SetErr(err)
			return
		}
		v := make([]redis.Z, len(zs))
		for i, z := range zs {
			v[i] = redis.Z{Score: z.Score, Member: z.Member}
		}
		c.SetVal(v)
	case *redis.SliceCmd:
		arr, err := msg.ToArray()
		if err != nil {
			c.SetErr(err)
			return
		}
		v := make([]any, len(arr))
		for i := range arr {
			if !arr[i].IsNil() {
				v[i], _ = arr[i].ToString()
			}
		}
		c.SetVal(v)
	case *redis.Cmd:
		v, err := msg.ToAny()
		c.SetVal(v)
		c.SetErr(err)
	default:
		cmd.SetErr(fmt.Errorf("store: no rueidis reply for %T", cmd))
	}
}

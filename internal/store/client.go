package store

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/extra/redisotel/v9"
	"github.com/redis/go-redis/v9"
	"github.com/redis/go-redis/v9/maintnotifications"
	"go.opentelemetry.io/otel/trace"
)

// ClientOptions configure a Redis client.
type ClientOptions struct {
	Addrs        []string
	Username     string
	Password     string
	TLS          *tls.Config
	DialTimeout  time.Duration
	ReadTimeout  time.Duration
	WriteTimeout time.Duration
	PoolSize     int
	// ReloadInterval bounds how stale the slot map may get (1–2 s; go-redis
	// defaults to 60 s, far too long after a failover).
	ReloadInterval time.Duration
	// Cluster forces cluster mode. When false, more than one address means a
	// cluster, and a single address is asked (CLUSTER SLOTS) whether it is a
	// cluster node: one seed of a cluster is enough, as with redis-cli -c.
	Cluster bool
	// ReadOnly routes read-only commands to replicas (RouteByLatency).
	ReadOnly bool
	Logger   *slog.Logger
	// TracerProvider, when set, traces every round trip to a node — one
	// span per command or per pipeline, named after it, with the node's
	// address (redisotel; statements are left out: they carry member ids).
	TracerProvider trace.TracerProvider
	// Dialer, when set, opens every connection (go-redis Options.Dialer);
	// nil: go-redis's own TCP dialer. The fault suite dials into network
	// namespaces with it.
	Dialer func(ctx context.Context, network, addr string) (net.Conn, error)
	// Health, when set, is where the node clients record and read which
	// node failed just now (see reloadOnDialError); pass the same one to
	// the Store (Options.Health), so that a read the rueidis transport saw
	// fail keeps its node out of this client's next slot-map reload. nil:
	// a record of this client's own.
	Health *NodeHealth
}

// tracing instruments one node's client (nil tp: nothing).
func tracing(c *redis.Client, tp trace.TracerProvider) {
	if tp == nil {
		return
	}
	// InstrumentTracing fails only for client types it does not know.
	_ = redisotel.InstrumentTracing(c, redisotel.WithTracerProvider(tp), redisotel.WithDBStatement(false))
}

// NewClient builds a go-redis client: a ClusterClient for a cluster, a plain
// Client for one standalone node. Given a single address (and no Cluster),
// it asks that node whether it runs in cluster mode, within DialTimeout +
// ReadTimeout, and fails when the node cannot say: guessing "standalone"
// would answer every key of another node's slots with MOVED.
// ContextTimeoutEnabled is on, so a context deadline cuts a command short; the cluster slot map reloads every
// ReloadInterval and also after a dial error, because go-redis does not reload
// it on "connection refused" (go-redis #3979).
func NewClient(o ClientOptions) (redis.UniversalClient, error) {
	if len(o.Addrs) == 0 {
		return nil, errors.New("redis: no addresses")
	}
	if o.ReloadInterval <= 0 {
		o.ReloadInterval = time.Second
	}
	log := o.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	maint := &maintnotifications.Config{Mode: maintnotifications.ModeDisabled}
	if len(o.Addrs) == 1 && !o.Cluster {
		single := redis.NewClient(&redis.Options{
			Addr: o.Addrs[0], Username: o.Username, Password: o.Password, TLSConfig: o.TLS,
			DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout,
			PoolSize: o.PoolSize, ContextTimeoutEnabled: true, MaintNotificationsConfig: maint, Dialer: o.Dialer,
		})
		tracing(single, o.TracerProvider)
		cluster, err := isClusterNode(single, o)
		if err != nil {
			_ = single.Close()
			return nil, fmt.Errorf("redis %s: asking whether it is a cluster node: %w", o.Addrs[0], err)
		}
		if !cluster {
			single.AddHook(waitHook{addr: o.Addrs[0]})
			return single, nil
		}
		_ = single.Close()
		log.Info("redis: the one seed is a cluster node; using cluster mode", "addr", o.Addrs[0])
	}
	c := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs: o.Addrs, Username: o.Username, Password: o.Password, TLSConfig: o.TLS,
		DialTimeout: o.DialTimeout, ReadTimeout: o.ReadTimeout, WriteTimeout: o.WriteTimeout,
		PoolSize: o.PoolSize, ContextTimeoutEnabled: true, MaintNotificationsConfig: maint, Dialer: o.Dialer,
		ClusterStateReloadInterval: o.ReloadInterval,
		ReadOnly:                   o.ReadOnly, RouteByLatency: o.ReadOnly,
	})
	health := o.Health
	if health == nil {
		health = new(NodeHealth)
	}
	slotsTimeout := o.ReadTimeout
	if slotsTimeout <= 0 || slotsTimeout > maxSlotsTimeout {
		slotsTimeout = maxSlotsTimeout
	}
	c.OnNewNode(func(node *redis.Client) {
		// Traced per node, not per cluster command: a span is a round trip.
		tracing(node, o.TracerProvider)
		addr := node.Options().Addr
		node.AddHook(reloadOnDialError{cluster: c, log: log, addr: addr,
			health: health, failedAt: health.record(addr), down: health.downRecord(addr), answered: health.answeredRecord(addr),
			slotsTimeout: slotsTimeout})
		node.AddHook(waitHook{addr: node.Options().Addr})
	})
	return c, nil
}

// isClusterNode asks a node for its slot map: a cluster node answers, a
// standalone one says its cluster support is disabled. CLUSTER SLOTS is what
// the cluster client itself needs, so the ACL of docs/security.md allows it.
func isClusterNode(c *redis.Client, o ClientOptions) (bool, error) {
	timeout := o.DialTimeout + o.ReadTimeout
	if timeout <= 0 {
		timeout = 10 * time.Second // go-redis defaults: 5 s dial + 3 s read, and a margin
	}
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	//lint:ignore SA1019 CLUSTER SLOTS is what go-redis's cluster client runs itself (so the ACL grants it); CLUSTER SHARDS would need one more grant.
	err := c.ClusterSlots(ctx).Err()
	switch {
	case err == nil:
		return true, nil
	case strings.Contains(err.Error(), "cluster support disabled"):
		return false, nil
	default:
		return false, err
	}
}

// reloadOnDialError asks the cluster client for a (coalesced, lazy) slot-map
// reload whenever dialling a node fails, so a dead master's slots move to its
// promoted replica within one reload rather than one ReloadInterval.
//
// It also keeps a failing node from holding up the reload itself: go-redis
// asks the nodes for CLUSTER SLOTS one after another in random order, with no
// deadline of its own and one reload at a time, so a hung or partitioned
// node it happens to ask first cost up to its pool timeout (read timeout +
// 1 s, all its connections stuck) or dial timeout before the next node was
// asked — measured by internal/faults: the client moved a victim's slots
// 1.4–2 s after the promotion. A node whose command timed out or whose dial
// failed within the last slotsSkip is not asked (the reload goes on to the
// next node at once), and any node's CLUSTER SLOTS is bounded by
// slotsTimeout. "Failed" is whatever the node's NodeHealth record holds: this
// hook's own timeouts and failed dials, and the network errors and timeouts
// of the rueidis read transport's reads of that node (Store.afterFailure) —
// unless every node the record knows failed within slotsSkip: then the node
// is asked all the same, bounded by slotsTimeout, rather than no node at all.
type reloadOnDialError struct {
	cluster *redis.ClusterClient
	log     *slog.Logger
	addr    string
	// failedAt: this node's record in the NodeHealth shared with the
	// Store — when a command to it last timed out or met a network error
	// (either transport) or a dial to it failed (unix ns; 0: never).
	failedAt *atomic.Int64
	// down: the node's down time in the same record (a failed dial marks
	// it: the rueidis transport leaves the node to go-redis for a while).
	down *atomic.Int64
	// answered: when the node last answered a slot-map query (the nodes
	// othersClear may count on).
	answered     *atomic.Int64
	health       *NodeHealth
	slotsTimeout time.Duration
}

// slotsSkip: how long after a timeout or a failed dial a node is left out of
// slot-map reloads; maxSlotsTimeout bounds one node's CLUSTER SLOTS during a
// reload (the read timeout when it is shorter); slotsLive: how recently
// another node must have answered a slot-map query for a failed node to be
// left out (go-redis asks one node per reload, in random order: at the
// default 1-s reload interval each of six nodes answers every few seconds).
const (
	slotsSkip       = time.Second
	maxSlotsTimeout = 500 * time.Millisecond
	slotsLive       = 30 * time.Second
)

func (h reloadOnDialError) DialHook(next redis.DialHook) redis.DialHook {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		conn, err := next(ctx, network, addr)
		if err != nil {
			stampNow(h.failedAt)
			stampNow(h.down)
			h.log.Warn("redis dial failed; reloading slot map", "addr", addr, "err", err)
			h.cluster.ReloadState(context.WithoutCancel(ctx))
		}
		return conn, err
	}
}

// slotMapQuery: the command go-redis reloads the slot map with.
func slotMapQuery(cmd redis.Cmder) bool {
	args := cmd.Args()
	return cmd.Name() == "cluster" && len(args) > 1 && strings.EqualFold(fmt.Sprint(args[1]), "slots")
}

// querySlots runs a slot-map query, unless the node failed just now.
func (h reloadOnDialError) querySlots(ctx context.Context, next redis.ProcessHook, cmd redis.Cmder) error {
	if ago, ok := stampedWithin(h.failedAt, slotsSkip); ok && h.health.othersClear(h.addr, slotsSkip, slotsLive) {
		err := fmt.Errorf("redis %s: not asked for the slot map: it failed %s ago", h.addr, ago.Round(time.Millisecond))
		cmd.SetErr(err)
		return err
	}
	if err := ctx.Err(); err != nil {
		// The reload's own deadline passed while other nodes were asked:
		// that says nothing about this node, which is not asked (go-redis
		// would fail it without a word on the wire) and not marked.
		cmd.SetErr(err)
		return err
	}
	qctx, cancel := context.WithTimeout(ctx, h.slotsTimeout)
	defer cancel()
	err := next(qctx, cmd)
	switch {
	case err == nil:
		stampNow(h.answered)
	case timedOut(err) && ctx.Err() == nil: // its own time ran out, not the reload's
		stampNow(h.failedAt)
	}
	return err
}

// ProcessHook also reloads after a timeout or CLUSTERDOWN: a stopped or
// partitioned master still accepts connections, so no dial error comes, and
// without this the client keeps talking to it until the next periodic reload
// (measured by internal/faults: up to 1.3 s of extra outage after a
// promotion).
func (h reloadOnDialError) ProcessHook(next redis.ProcessHook) redis.ProcessHook {
	return func(ctx context.Context, cmd redis.Cmder) error {
		if slotMapQuery(cmd) {
			// Not followed by a reload of its own: it is part of one.
			return h.querySlots(ctx, next, cmd)
		}
		err := next(ctx, cmd)
		h.maybeReload(ctx, err)
		return err
	}
}

func (h reloadOnDialError) ProcessPipelineHook(next redis.ProcessPipelineHook) redis.ProcessPipelineHook {
	return func(ctx context.Context, cmds []redis.Cmder) error {
		err := next(ctx, cmds)
		h.maybeReload(ctx, err)
		return err
	}
}

func (h reloadOnDialError) maybeReload(ctx context.Context, err error) {
	if err == nil || errors.Is(err, redis.Nil) {
		return
	}
	timeout := timedOut(err)
	if timeout {
		stampNow(h.failedAt)
	}
	if timeout || redis.HasErrorPrefix(err, "CLUSTERDOWN") {
		h.cluster.ReloadState(context.WithoutCancel(ctx))
	}
}

// timedOut: a network timeout (a hung or unreachable node).
func timedOut(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// ForEachMaster runs fn on every master of a cluster (in parallel), or on
// the one node of a standalone client. It is the one such helper: the
// calibration and the store's readiness check both use it.
func ForEachMaster(ctx context.Context, c redis.UniversalClient, fn func(ctx context.Context, n *redis.Client) error) error {
	switch cc := c.(type) {
	case *redis.ClusterClient:
		return cc.ForEachMaster(ctx, fn)
	case *redis.Client:
		return fn(ctx, cc)
	default:
		return fmt.Errorf("redis: unsupported client %T", c)
	}
}

// forEachNode runs fn on every node (masters and replicas).
func forEachNode(ctx context.Context, c redis.UniversalClient, fn func(ctx context.Context, n *redis.Client) error) error {
	switch cc := c.(type) {
	case *redis.ClusterClient:
		return cc.ForEachShard(ctx, fn)
	case *redis.Client:
		return fn(ctx, cc)
	default:
		return fmt.Errorf("redis: unsupported client %T", c)
	}
}

// Preload loads every script on every node, so that the first EVALSHA in a
// pipeline finds it (NOSCRIPT inside a pipeline is not recovered by go-redis,
// #3228). Replicas get them too, for EVALSHA_RO.
func Preload(ctx context.Context, c redis.UniversalClient) error {
	return forEachNode(ctx, c, func(ctx context.Context, n *redis.Client) error {
		for name, s := range Scripts() {
			if err := s.Load(ctx, n).Err(); err != nil {
				return fmt.Errorf("load script %s on %s: %w", name, n.Options().Addr, err)
			}
		}
		return nil
	})
}

// Readiness is what /readyz reports about Redis.
type Readiness struct {
	Cluster  bool     `json:"cluster"`
	State    string   `json:"state"`
	Warnings []string `json:"warnings,omitempty"`
}

// Ready checks that Redis answers, that every slot is covered (cluster) and
// that maxmemory-policy is noeviction on every master (an evicting policy
// silently deletes leaderboards).
func Ready(ctx context.Context, c redis.UniversalClient) (Readiness, error) {
	r := Readiness{State: "ok"}
	if cc, ok := c.(*redis.ClusterClient); ok {
		r.Cluster = true
		info, err := cc.ClusterInfo(ctx).Result()
		if err != nil {
			return r, fmt.Errorf("cluster info: %w", err)
		}
		if !strings.Contains(info, "cluster_state:ok") {
			r.State = "fail"
			return r, errors.New("cluster_state is not ok")
		}
		if !strings.Contains(info, "cluster_slots_ok:16384") {
			r.State = "fail"
			return r, errors.New("not every slot is covered")
		}
	} else if err := c.Ping(ctx).Err(); err != nil {
		return r, fmt.Errorf("ping: %w", err)
	}
	var mu sync.Mutex
	err := ForEachMaster(ctx, c, func(ctx context.Context, n *redis.Client) error {
		v, err := n.ConfigGet(ctx, "maxmemory-policy").Result()
		if redis.HasErrorPrefix(err, "NOPERM") {
			// A restricted ACL user may not read the config (CONFIG GET also
			// shows passwords); the policy is then unknown, not wrong.
			mu.Lock()
			r.Warnings = append(r.Warnings, "cannot read maxmemory-policy on "+n.Options().Addr+" (NOPERM): make sure it is noeviction")
			mu.Unlock()
			return nil
		}
		if err != nil {
			return fmt.Errorf("config get on %s: %w", n.Options().Addr, err)
		}
		if p := v["maxmemory-policy"]; p != "noeviction" {
			return fmt.Errorf("maxmemory-policy is %q on %s: boards would be evicted; set noeviction", p, n.Options().Addr)
		}
		return nil
	})
	if err != nil {
		r.State = "fail"
		return r, err
	}
	return r, nil
}

// Ready is Ready on the store's primary client, under the store's deadline.
func (s *Store) Ready(ctx context.Context) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	_, err := Ready(ctx, s.rw)
	return err
}

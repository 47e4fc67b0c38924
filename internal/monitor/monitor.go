// Package monitor watches the Redis Cluster behind the gateway: it polls every
// node on an interval, off the request path, and exports what it saw as
// Prometheus metrics — node liveness, load, command latency, memory,
// replication lag, the maxmemory policy, and the memory of the biggest board
// keys. Every poll is bounded by a timeout; a failing node is reported down
// and does not stop the others.
//
// It imports go-redis and Prometheus, no rankgate package; it must not import
// net/http, internal/gateway or internal/httpapi.
package monitor

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
)

// Defaults of Options.
const (
	DefaultInterval    = 10 * time.Second
	DefaultTimeout     = 3 * time.Second
	DefaultTopKeys     = 10
	DefaultMaxScanKeys = 2000
)

// DefaultCommands are the commands whose latency is exported: the gateway's
// scripts and its plain sorted-set reads.
var DefaultCommands = []string{"evalsha", "evalsha_ro", "zrevrange", "zcount", "zscore"}

const (
	// scanCount is the COUNT hint of each SCAN call.
	scanCount = 500
	// maxScanCalls bounds the SCAN calls per master per poll, so a keyspace
	// where few keys match the pattern is sampled, not walked whole.
	maxScanCalls = 100
	// memoryBatch is the number of MEMORY USAGE calls per pipeline.
	memoryBatch = 200
)

// Options configure a Monitor. Zero values take the defaults.
type Options struct {
	// Interval between polls of Run (default 10s).
	Interval time.Duration
	// Timeout bounds one whole poll, every node included (default 3s).
	Timeout time.Duration
	// TopKeys is how many of the biggest board keys are exported (default
	// 10; negative: none).
	TopKeys int
	// Prefix is the gateway's key prefix (redis.prefix): board sorted sets
	// match "<prefix>:*:z". Ignored when KeyPattern is set.
	Prefix string
	// KeyPattern is the SCAN MATCH pattern of the keys sampled for
	// rankgate_board_key_memory_bytes. With neither it nor Prefix set no key
	// is sampled.
	KeyPattern string
	// MaxScanKeys bounds the matching keys sized per master per poll (default
	// 2000).
	MaxScanKeys int
	// Commands whose latency is exported (default DefaultCommands).
	Commands []string
	// Logger receives poll failures (when they change); nil discards.
	Logger *slog.Logger
	// Registerer takes the metrics; nil leaves them unregistered.
	Registerer prometheus.Registerer
}

// BoardKeyPattern is the SCAN pattern of the board sorted sets under prefix.
func BoardKeyPattern(prefix string) string { return prefix + ":*:z" }

// Monitor polls a Redis Cluster (or one standalone node) and holds the last
// poll's metrics.
type Monitor struct {
	c        redis.UniversalClient
	interval time.Duration
	timeout  time.Duration
	topKeys  int
	pattern  string
	maxScan  int
	commands []string
	log      *slog.Logger

	col        *collector
	pollErrors prometheus.Counter

	pollMu  sync.Mutex // one poll at a time; guards prevCmd and known
	prevCmd map[string]CommandStat
	known   map[string]string // addr → role of the last poll's nodes

	lastErr string // Run's last logged failure
}

// New builds a Monitor on c (the store's primary client) and registers its
// metrics with o.Registerer. It does not poll: call Run or Poll.
func New(c redis.UniversalClient, o Options) (*Monitor, error) {
	if c == nil {
		return nil, errors.New("monitor: nil redis client")
	}
	if o.Interval < 0 || o.Timeout < 0 || o.MaxScanKeys < 0 {
		return nil, fmt.Errorf("monitor: negative Interval (%s), Timeout (%s) or MaxScanKeys (%d)", o.Interval, o.Timeout, o.MaxScanKeys)
	}
	m := &Monitor{
		c: c, interval: cmp.Or(o.Interval, DefaultInterval), timeout: cmp.Or(o.Timeout, DefaultTimeout),
		topKeys: cmp.Or(o.TopKeys, DefaultTopKeys), pattern: o.KeyPattern, maxScan: cmp.Or(o.MaxScanKeys, DefaultMaxScanKeys),
		commands: o.Commands, log: o.Logger, col: newCollector(),
		pollErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "rankgate_monitor_poll_errors_total",
			Help: "Cluster monitor polls in which some node or the topology could not be read.",
		}),
		prevCmd: map[string]CommandStat{}, known: map[string]string{},
	}
	if m.pattern == "" && o.Prefix != "" {
		m.pattern = BoardKeyPattern(o.Prefix)
	}
	if m.commands == nil {
		m.commands = DefaultCommands
	}
	if m.log == nil {
		m.log = slog.New(slog.DiscardHandler)
	}
	if o.Registerer != nil {
		if err := o.Registerer.Register(m.col); err != nil {
			return nil, fmt.Errorf("monitor: registering metrics: %w", err)
		}
		if err := o.Registerer.Register(m.pollErrors); err != nil {
			o.Registerer.Unregister(m.col)
			return nil, fmt.Errorf("monitor: registering metrics: %w", err)
		}
	}
	return m, nil
}

// Run polls at once and then every Interval until ctx is done. Poll failures
// are logged when they change and counted; they never stop the loop.
func (m *Monitor) Run(ctx context.Context) {
	t := time.NewTicker(m.interval)
	defer t.Stop()
	for {
		err := m.Poll(ctx)
		if ctx.Err() != nil {
			return
		}
		if msg := errString(err); msg != m.lastErr {
			if err != nil {
				m.log.Warn("cluster monitor: poll incomplete", "err", err)
			} else {
				m.log.Info("cluster monitor: every node answers again")
			}
			m.lastErr = msg
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// nodeResult is what one node answered in a poll.
type nodeResult struct {
	addr     string
	roleHint string // master | replica from the client's slot map; "" standalone
	err      error

	id           string // cluster node id (cluster only)
	role         string // from INFO replication
	ops          float64
	usedMemory   float64
	policy       string
	masterOffset int64 // master_repl_offset
	slaveOffset  int64 // a replica's slave_repl_offset
	hasSlaveOff  bool
	masterAddr   string // a replica's master_host:master_port
	cmds         map[string]CommandStat
	keys         []keyMemory
}

// keyMemory is one sampled key and its MEMORY USAGE.
type keyMemory struct {
	key   string
	node  string
	bytes int64
}

// Poll reads every node once, under Timeout, and replaces the exported
// metrics with what it found. It returns the failures joined (each naming its
// node); the metrics are updated regardless, with failing nodes down.
func (m *Monitor) Poll(ctx context.Context) error {
	m.pollMu.Lock()
	defer m.pollMu.Unlock()
	start := time.Now()
	ctx, cancel := context.WithTimeout(ctx, m.timeout)
	defer cancel()

	var (
		mu      sync.Mutex
		results []*nodeResult
	)
	visit := func(roleHint string) func(context.Context, *redis.Client) error {
		return func(ctx context.Context, n *redis.Client) error {
			r := m.pollNode(ctx, n, roleHint)
			mu.Lock()
			results = append(results, r)
			mu.Unlock()
			return nil // one node's failure never stops the others
		}
	}
	var (
		topo                         []clusterMember
		topoErr, mastersErr, replErr error
		cluster                      bool
	)
	switch c := m.c.(type) {
	case *redis.ClusterClient:
		cluster = true
		var wg sync.WaitGroup
		wg.Go(func() {
			var s string
			if s, topoErr = c.ClusterNodes(ctx).Result(); topoErr == nil {
				topo = parseClusterNodes(s)
			}
		})
		wg.Go(func() { mastersErr = c.ForEachMaster(ctx, visit(roleMaster)) })
		wg.Go(func() { replErr = c.ForEachSlave(ctx, visit(roleReplica)) })
		wg.Wait()
	case *redis.Client:
		_ = visit("")(ctx, c)
	default:
		return fmt.Errorf("monitor: unsupported client %T", m.c)
	}

	var errs []error
	if topoErr != nil {
		errs = append(errs, fmt.Errorf("cluster nodes: %w", topoErr))
	}
	if mastersErr != nil {
		errs = append(errs, fmt.Errorf("slot map: %w", mastersErr))
	} else if replErr != nil {
		errs = append(errs, fmt.Errorf("slot map: %w", replErr))
	}
	slices.SortFunc(results, func(a, b *nodeResult) int { return cmp.Compare(a.addr, b.addr) })
	for _, r := range results {
		if r.err != nil {
			errs = append(errs, fmt.Errorf("%s: %w", r.addr, r.err))
		}
	}
	views := m.merge(results, topo, cluster && topoErr == nil)
	snap := m.snapshot(views, results, topo)
	d := time.Since(start)
	snap = append(snap,
		prometheus.MustNewConstMetric(descPollDuration, prometheus.GaugeValue, d.Seconds()),
		prometheus.MustNewConstMetric(descLastPoll, prometheus.GaugeValue, float64(time.Now().UnixNano())/1e9))
	m.col.set(snap)
	err := errors.Join(errs...)
	if err != nil {
		m.pollErrors.Inc()
	}
	return err
}

// pollNode reads INFO (and the node id in a cluster) in one round trip, then
// on a master samples the board keys.
func (m *Monitor) pollNode(ctx context.Context, n *redis.Client, roleHint string) *nodeResult {
	r := &nodeResult{addr: n.Options().Addr, roleHint: roleHint}
	pipe := n.Pipeline()
	stats := pipe.InfoMap(ctx, "stats")
	mem := pipe.InfoMap(ctx, "memory")
	repl := pipe.InfoMap(ctx, "replication")
	cmds := pipe.InfoMap(ctx, "commandstats")
	var myID *redis.StringCmd
	if roleHint != "" {
		myID = pipe.ClusterMyID(ctx)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		r.err = err
		return r
	}
	if myID != nil {
		r.id = myID.Val()
	}
	s := stats.Val()["Stats"]
	r.ops, _ = infoFloat(s, "instantaneous_ops_per_sec")
	mi := mem.Val()["Memory"]
	r.usedMemory, _ = infoFloat(mi, "used_memory")
	r.policy = mi["maxmemory_policy"]
	ri := repl.Val()["Replication"]
	r.role = infoRole(ri)
	r.masterOffset, _ = infoInt(ri, "master_repl_offset")
	r.slaveOffset, r.hasSlaveOff = infoInt(ri, "slave_repl_offset")
	if h, p := ri["master_host"], ri["master_port"]; h != "" && p != "" {
		r.masterAddr = h + ":" + p
	}
	r.cmds = ParseCommandStats(cmds.Val()["Commandstats"])
	if r.role == roleMaster && m.pattern != "" && m.topKeys > 0 {
		// A sampling failure (the poll deadline, most likely) keeps the
		// keys sized so far and does not mark the node down.
		r.keys, _ = m.sampleKeys(ctx, n, r.addr)
	}
	return r
}

// sampleKeys SCANs one master for keys matching the pattern — at most
// MaxScanKeys keys and maxScanCalls calls — sizes them with MEMORY USAGE and
// returns the biggest TopKeys.
func (m *Monitor) sampleKeys(ctx context.Context, n *redis.Client, addr string) ([]keyMemory, error) {
	var keys []string
	var cursor uint64
	for range maxScanCalls {
		batch, next, err := n.Scan(ctx, cursor, m.pattern, scanCount).Result()
		if err != nil {
			return nil, err
		}
		keys = append(keys, batch...)
		cursor = next
		if cursor == 0 || len(keys) >= m.maxScan {
			break
		}
	}
	if len(keys) > m.maxScan {
		keys = keys[:m.maxScan]
	}
	slices.Sort(keys)
	keys = slices.Compact(keys) // SCAN may return a key twice
	var out []keyMemory
	for chunk := range slices.Chunk(keys, memoryBatch) {
		pipe := n.Pipeline()
		cmds := make([]*redis.IntCmd, len(chunk))
		for i, k := range chunk {
			cmds[i] = pipe.MemoryUsage(ctx, k)
		}
		_, err := pipe.Exec(ctx)
		for i, c := range cmds {
			if v, cerr := c.Result(); cerr == nil {
				out = append(out, keyMemory{key: chunk[i], node: addr, bytes: v})
			}
		}
		if err != nil && !errors.Is(err, redis.Nil) {
			return topKeys(out, m.topKeys), err
		}
	}
	return topKeys(out, m.topKeys), nil
}

// topKeys returns the n biggest keys, biggest first (ties by key).
func topKeys(ks []keyMemory, n int) []keyMemory {
	slices.SortFunc(ks, func(a, b keyMemory) int {
		if c := cmp.Compare(b.bytes, a.bytes); c != 0 {
			return c
		}
		return cmp.Compare(a.key, b.key)
	})
	if len(ks) > n {
		ks = ks[:n]
	}
	return ks
}

// nodeView is one node as exported: its address, role and whether it answered.
type nodeView struct {
	addr string
	role string
	up   bool
	r    *nodeResult // nil: not reached this poll
}

// merge lines up the nodes polled with the cluster's own member list. With a
// topology, a member no client reached is down; without one (CLUSTER NODES
// failed), the nodes of the last poll that were not reached are down.
func (m *Monitor) merge(results []*nodeResult, topo []clusterMember, haveTopo bool) []nodeView {
	var views []nodeView
	seenAddr := map[string]bool{}
	seenID := map[string]bool{}
	for _, r := range results {
		role := r.role
		if r.err != nil || role == "" {
			role = r.roleHint
		}
		if role == "" {
			role = roleMaster
		}
		if r.err != nil {
			// Take the role the cluster itself gives the unreachable node.
			for _, t := range topo {
				if t.addr == r.addr {
					role = t.role
				}
			}
		}
		views = append(views, nodeView{addr: r.addr, role: role, up: r.err == nil, r: r})
		seenAddr[r.addr] = true
		if r.id != "" {
			seenID[r.id] = true
		}
	}
	if haveTopo {
		for _, t := range topo {
			if !seenID[t.id] && !seenAddr[t.addr] {
				views = append(views, nodeView{addr: t.addr, role: t.role})
				seenAddr[t.addr] = true
			}
		}
	} else {
		for addr, role := range m.known {
			if !seenAddr[addr] {
				views = append(views, nodeView{addr: addr, role: role})
			}
		}
	}
	slices.SortFunc(views, func(a, b nodeView) int { return cmp.Compare(a.addr, b.addr) })
	m.known = make(map[string]string, len(views))
	for _, v := range views {
		m.known[v.addr] = v.role
	}
	return views
}

// snapshot turns one poll into const metrics, and remembers the command
// counters for the next poll's interval averages.
func (m *Monitor) snapshot(views []nodeView, results []*nodeResult, topo []clusterMember) []prometheus.Metric {
	var out []prometheus.Metric
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		if mt, err := prometheus.NewConstMetric(d, prometheus.GaugeValue, v, labels...); err == nil {
			out = append(out, mt)
		}
	}
	byID := map[string]*nodeResult{}
	byAddr := map[string]*nodeResult{}
	for _, r := range results {
		if r.err != nil {
			continue
		}
		byAddr[r.addr] = r
		if r.id != "" {
			byID[r.id] = r
		}
	}
	masterOf := map[string]string{} // replica id → master id
	for _, t := range topo {
		if t.masterID != "" {
			masterOf[t.id] = t.masterID
		}
	}
	prev := m.prevCmd
	m.prevCmd = make(map[string]CommandStat, len(prev))
	var keys []keyMemory
	for _, v := range views {
		gauge(descUp, b2f(v.up), v.addr, v.role)
		if !v.up {
			continue
		}
		r := v.r
		gauge(descOps, r.ops, v.addr, v.role)
		gauge(descMemory, r.usedMemory, v.addr, v.role)
		gauge(descPolicy, b2f(r.policy == "noeviction"), v.addr, v.role)
		for _, name := range m.commands {
			st, ok := r.cmds[name]
			if !ok {
				continue // never called on this node since the stats were reset
			}
			k := v.addr + "\x00" + name
			usec := st.PerCall
			if p, ok := prev[k]; ok && st.Calls > p.Calls && st.Usec >= p.Usec {
				usec = float64(st.Usec-p.Usec) / float64(st.Calls-p.Calls)
			}
			m.prevCmd[k] = st
			gauge(descLatency, usec/1e6, v.addr, v.role, name)
		}
		if v.role == roleReplica && r.hasSlaveOff {
			master := byID[masterOf[r.id]]
			if master == nil {
				master = byAddr[r.masterAddr]
			}
			if master != nil && master.role == roleMaster {
				gauge(descLag, float64(max(0, master.masterOffset-r.slaveOffset)), v.addr, master.addr)
			}
		}
		keys = append(keys, r.keys...)
	}
	for _, k := range topKeys(keys, max(m.topKeys, 0)) {
		gauge(descKeyMemory, float64(k.bytes), k.key, k.node)
	}
	return out
}

func b2f(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

var (
	nodeLabels = []string{"node", "role"}

	descUp = prometheus.NewDesc("rankgate_redis_node_up",
		"1 when the Redis node answered the last cluster-monitor poll, 0 when it did not.", nodeLabels, nil)
	descOps = prometheus.NewDesc("rankgate_redis_node_ops_per_second",
		"Commands per second the node processes (INFO stats instantaneous_ops_per_sec).", nodeLabels, nil)
	descLatency = prometheus.NewDesc("rankgate_redis_node_command_latency_seconds",
		"Mean server-side time of a command on the node (INFO commandstats): over the calls since the previous poll, "+
			"or usec_per_call (since the stats were reset) on the first poll and when no call ran since.",
		[]string{"node", "role", "command"}, nil)
	descMemory = prometheus.NewDesc("rankgate_redis_node_used_memory_bytes",
		"Memory the node has allocated (INFO memory used_memory).", nodeLabels, nil)
	descPolicy = prometheus.NewDesc("rankgate_redis_maxmemory_policy_ok",
		"1 when the node's maxmemory-policy is noeviction; 0 means boards can be silently evicted.", nodeLabels, nil)
	descLag = prometheus.NewDesc("rankgate_redis_replication_lag_bytes",
		"Replication bytes a replica is behind its master (master_repl_offset - slave_repl_offset, at least 0).",
		[]string{"node", "master"}, nil)
	descKeyMemory = prometheus.NewDesc("rankgate_board_key_memory_bytes",
		"MEMORY USAGE of the biggest board sorted sets found by the last poll's bounded SCAN of each master.",
		[]string{"key", "node"}, nil)
	descPollDuration = prometheus.NewDesc("rankgate_monitor_poll_duration_seconds",
		"How long the last cluster-monitor poll took.", nil, nil)
	descLastPoll = prometheus.NewDesc("rankgate_monitor_last_poll_timestamp_seconds",
		"Unix time the last cluster-monitor poll finished.", nil, nil)
)

// collector serves the metrics of the last poll; a poll swaps them whole, so
// a scrape never sees half a poll nor nodes that have left the cluster.
type collector struct {
	mu      sync.RWMutex
	metrics []prometheus.Metric
}

var _ prometheus.Collector = (*collector)(nil)

func newCollector() *collector { return &collector{} }

func (c *collector) set(ms []prometheus.Metric) {
	c.mu.Lock()
	c.metrics = ms
	c.mu.Unlock()
}

func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descUp, descOps, descLatency, descMemory, descPolicy, descLag,
		descKeyMemory, descPollDuration, descLastPoll} {
		ch <- d
	}
}

func (c *collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	for _, mt := range c.metrics {
		ch <- mt
	}
}

//go:build faults

package faults

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

const (
	host          = "127.0.0.1"
	nodeTimeout   = 2000 * time.Millisecond // RANKGATE_CLUSTER_NODE_TIMEOUT of every cluster here
	nodesPer      = 6
	clusterUpWait = 4 * time.Minute // cluster.sh up: its own waits add up to ~100 s at worst
	clusterDown   = time.Minute

	// envRedisArgs names extra redis-server arguments for every node of the
	// suite (RANKGATE_CLUSTER_EXTRA_ARGS of cluster.sh), to try a setting or
	// a proposed fix: RANKGATE_FAULTS_REDIS_ARGS="--replica-serve-stale-data no".
	envRedisArgs = "RANKGATE_FAULTS_REDIS_ARGS"
)

// shortNodeTimeout is the node timeout of the clusters of the scenarios that
// fail many masters in a row (bases 7910–7989), so that the whole suite stays
// within its CI budget; the outage goal scales with it.
const shortNodeTimeout = 1000 * time.Millisecond

// nodeTimeoutFor is the node timeout of the cluster on base.
func nodeTimeoutFor(base int) time.Duration {
	if base >= baseLoop {
		return shortNodeTimeout
	}
	return nodeTimeout
}

// repoRoot is the module root (tests run in internal/faults).
func repoRoot() (string, error) {
	dir, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		return "", err
	}
	if _, err := os.Stat(filepath.Join(dir, "deploy", "cluster", "cluster.sh")); err != nil {
		return "", fmt.Errorf("deploy/cluster/cluster.sh not found under %s: %w", dir, err)
	}
	return dir, nil
}

// clusterSh runs deploy/cluster/cluster.sh -p base cmd with this suite's
// settings; it returns stdout.
func clusterSh(ctx context.Context, base int, cmd string) (string, error) {
	root, err := repoRoot()
	if err != nil {
		return "", err
	}
	c := exec.CommandContext(ctx, filepath.Join(root, "deploy", "cluster", "cluster.sh"), "-p", strconv.Itoa(base), cmd)
	c.Dir = root
	c.Env = append(os.Environ(),
		"RANKGATE_CLUSTER_NODE_TIMEOUT="+strconv.Itoa(int(nodeTimeoutFor(base)/time.Millisecond)),
		"RANKGATE_CLUSTER_EXTRA_ARGS="+strings.Join(extraArgsFor(base), " "),
		"RANKGATE_CLUSTER_LOCK_TIMEOUT=60",
	)
	var out, errb bytes.Buffer
	c.Stdout, c.Stderr = &out, &errb
	c.WaitDelay = 5 * time.Second
	if err := c.Run(); err != nil {
		return out.String(), fmt.Errorf("cluster.sh -p %d %s: %w\n%s", base, cmd, err, errb.String())
	}
	return out.String(), nil
}

// clusterFuture is a cluster being started in the background by TestMain.
type clusterFuture struct {
	base  int
	done  chan struct{}
	addrs []string
	err   error
	took  time.Duration
}

var (
	futuresMu sync.Mutex
	futures   = map[int]*clusterFuture{}
)

// startClusterAsync stops whatever ran on base before (a fresh cluster, never
// one left over from an earlier run) and starts a new one.
func startClusterAsync(base int, sem chan struct{}) *clusterFuture {
	f := &clusterFuture{base: base, done: make(chan struct{})}
	futuresMu.Lock()
	futures[base] = f
	futuresMu.Unlock()
	go func() {
		defer close(f.done)
		sem <- struct{}{}
		defer func() { <-sem }()
		start := time.Now()
		ctx, cancel := context.WithTimeout(context.Background(), clusterUpWait)
		defer cancel()
		if _, err := clusterSh(ctx, base, "down"); err != nil {
			f.err = err
			return
		}
		out, err := clusterSh(ctx, base, "up")
		if err != nil {
			f.err = err
			return
		}
		f.addrs = strings.Split(strings.TrimSpace(out), ",")
		f.took = time.Since(start)
	}()
	return f
}

// stopCluster stops the cluster on base and removes its data.
func stopCluster(base int) error {
	ctx, cancel := context.WithTimeout(context.Background(), clusterDown)
	defer cancel()
	_, err := clusterSh(ctx, base, "down")
	return err
}

// cluster is a running 3 + 3 cluster of this suite.
type cluster struct {
	base  int
	data  string
	addrs []string

	mu      sync.Mutex
	clients map[int]*redis.Client
	paused  map[int]bool // pids stopped with SIGSTOP, continued at cleanup

	// A cluster inside network namespaces (scenario 11): each node's address
	// by port, and the dialer of the observer's namespace.
	ips  map[int]string
	dial func(ctx context.Context, network, addr string) (net.Conn, error)
}

// getCluster waits for the cluster TestMain started on base (starting it now
// when TestMain did not) and stops it when the test ends.
func getCluster(t *testing.T, base int) *cluster {
	t.Helper()
	futuresMu.Lock()
	f := futures[base]
	futuresMu.Unlock()
	if f == nil {
		f = startClusterAsync(base, make(chan struct{}, 1))
	}
	select {
	case <-f.done:
	case <-time.After(clusterUpWait + 30*time.Second):
		t.Fatalf("cluster on base %d did not start within %s", base, clusterUpWait)
	}
	if f.err != nil {
		t.Fatalf("cluster on base %d: %v", base, f.err)
	}
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	c := &cluster{base: base, data: filepath.Join(root, "deploy", "cluster", ".data", strconv.Itoa(base)), addrs: f.addrs,
		clients: map[int]*redis.Client{}, paused: map[int]bool{}}
	if f.took > 0 {
		t.Logf("cluster on base %d (node timeout %s) ready; started in %s", base, nodeTimeoutFor(base), f.took.Round(100*time.Millisecond))
	}
	t.Cleanup(func() {
		c.mu.Lock()
		for pid := range c.paused {
			_ = syscall.Kill(pid, syscall.SIGCONT)
		}
		for _, cl := range c.clients {
			_ = cl.Close()
		}
		c.mu.Unlock()
		if err := stopCluster(base); err != nil {
			t.Logf("stopping cluster %d: %v", base, err)
		}
	})
	return c
}

func (c *cluster) ports() []int {
	out := make([]int, nodesPer)
	for i := range out {
		out[i] = c.base + i
	}
	return out
}

// node is a plain client on one node (no cluster routing), short timeouts.
func (c *cluster) node(port int) *redis.Client {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.clients[port]; ok {
		return cl
	}
	h := host
	if ip := c.ips[port]; ip != "" {
		h = ip
	}
	cl := redis.NewClient(&redis.Options{Addr: fmt.Sprintf("%s:%d", h, port), DialTimeout: time.Second,
		ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second, MaxRetries: -1, PoolSize: 2,
		ContextTimeoutEnabled: true, Dialer: c.dial})
	c.clients[port] = cl
	return cl
}

// pid reads the node's pidfile (cluster.sh starts nodes with
// --pidfile .data/<base>/<port>.pid) and checks it against INFO server.
func (c *cluster) pid(ctx context.Context, port int) (int, error) {
	b, err := os.ReadFile(filepath.Join(c.data, strconv.Itoa(port)+".pid"))
	if err != nil {
		return 0, err
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0, fmt.Errorf("pidfile of %d: %w", port, err)
	}
	info, err := c.node(port).Info(ctx, "server").Result()
	if err != nil {
		return 0, fmt.Errorf("INFO server on %d: %w", port, err)
	}
	if got := infoField(info, "process_id"); got != strconv.Itoa(pid) {
		return 0, fmt.Errorf("node %d: pidfile says %d, INFO process_id %s", port, pid, got)
	}
	return pid, nil
}

func infoField(info, name string) string {
	for _, line := range strings.Split(info, "\n") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), name+":"); ok {
			return v
		}
	}
	return ""
}

// signal sends sig to the node's process, remembering stopped ones.
func (c *cluster) signal(pid int, sig syscall.Signal) error {
	c.mu.Lock()
	switch sig {
	case syscall.SIGSTOP:
		c.paused[pid] = true
	case syscall.SIGCONT, syscall.SIGKILL:
		delete(c.paused, pid)
	}
	c.mu.Unlock()
	return syscall.Kill(pid, sig)
}

// nodeArgs are the arguments cluster.sh starts a node with (kept in step with
// cmd_up there), so that a node stopped here restarts as the same node.
func (c *cluster) nodeArgs(port int) []string {
	p := strconv.Itoa(port)
	args := []string{
		"--port", p, "--bind", host, "--protected-mode", "no",
		"--daemonize", "yes", "--pidfile", filepath.Join(c.data, p+".pid"), "--logfile", filepath.Join(c.data, p+".log"),
		"--dir", c.data, "--dbfilename", "dump-" + p + ".rdb",
		"--cluster-enabled", "yes", "--cluster-config-file", "nodes-" + p + ".conf",
		"--cluster-node-timeout", strconv.Itoa(int(nodeTimeoutFor(c.base) / time.Millisecond)),
		"--appendonly", "no", "--save", "",
		"--maxmemory-policy", "noeviction",
		"--replica-serve-stale-data", "no",
	}
	return append(args, extraArgsFor(c.base)...)
}

// extraArgsFor are the extra redis-server arguments of the cluster on base:
// RANKGATE_FAULTS_REDIS_ARGS, and for the issue-15 clusters (which restart a
// node after every failover) a diskless full sync without Redis's 5 s
// default delay, so that a restarted replica is back within a second.
func extraArgsFor(base int) []string {
	args := strings.Fields(os.Getenv(envRedisArgs))
	if base >= baseLoop {
		args = append([]string{"--repl-diskless-sync-delay", "0"}, args...)
	}
	return args
}

// restart starts a stopped node again with its config (nodes.conf keeps its
// identity) and waits for PING.
func (c *cluster) restart(ctx context.Context, port int) error {
	bin := os.Getenv("REDIS_SERVER")
	if bin == "" {
		bin = "redis-server"
	}
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(cctx, bin, c.nodeArgs(port)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("redis-server on %d: %w: %s", port, err, out)
	}
	return poll(ctx, 10*time.Second, func(ctx context.Context) (bool, error) {
		err := c.node(port).Ping(ctx).Err()
		// A replica that is still syncing may answer MASTERDOWN or LOADING:
		// it runs.
		return err == nil || redis.HasErrorPrefix(err, "MASTERDOWN") || redis.HasErrorPrefix(err, "LOADING"), err
	})
}

// waitExit waits until the process is gone.
func waitExit(ctx context.Context, pid int, d time.Duration) error {
	return poll(ctx, d, func(context.Context) (bool, error) {
		err := syscall.Kill(pid, 0)
		if errors.Is(err, syscall.ESRCH) {
			return true, nil
		}
		// A zombie of a daemonized redis is reaped by init; /proc tells.
		if b, rerr := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid)); rerr == nil {
			if f := strings.Fields(string(b)); len(f) > 2 && f[2] == "Z" {
				return true, nil
			}
		}
		return false, fmt.Errorf("pid %d still running", pid)
	})
}

// poll calls fn every 100 ms until it answers true or d passes; the error is
// fn's last one.
func poll(ctx context.Context, d time.Duration, fn func(ctx context.Context) (bool, error)) error {
	deadline := time.Now().Add(d)
	var last error
	for i := 0; ; i++ {
		cctx, cancel := context.WithTimeout(ctx, 2*time.Second)
		ok, err := fn(cctx)
		cancel()
		if ok {
			return nil
		}
		last = err
		if time.Now().After(deadline) || ctx.Err() != nil {
			if last == nil {
				last = errors.New("condition not met")
			}
			return fmt.Errorf("after %s: %w", d, last)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// nodeRow is one line of CLUSTER NODES.
type nodeRow struct {
	id, masterID string
	port         int
	master       bool
	fail         bool // fail or fail?
	connected    bool
	slots        [][2]int
}

// topology is the cluster as one node sees it.
type topology struct {
	rows []nodeRow
}

// topologyFrom reads CLUSTER NODES from the node on port.
func (c *cluster) topologyFrom(ctx context.Context, port int) (topology, error) {
	s, err := c.node(port).ClusterNodes(ctx).Result()
	if err != nil {
		return topology{}, err
	}
	var tp topology
	for _, line := range strings.Split(strings.TrimSpace(s), "\n") {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		addr := f[1]
		if i := strings.IndexAny(addr, "@,"); i >= 0 {
			addr = addr[:i]
		}
		_, ps, _ := strings.Cut(addr, ":")
		p, _ := strconv.Atoi(ps)
		r := nodeRow{id: f[0], port: p, masterID: f[3], connected: f[7] == "connected",
			master: strings.Contains(f[2], "master"), fail: strings.Contains(f[2], "fail")}
		for _, sr := range f[8:] {
			if strings.HasPrefix(sr, "[") {
				continue // migrating/importing marks
			}
			a, b, found := strings.Cut(sr, "-")
			lo, _ := strconv.Atoi(a)
			hi := lo
			if found {
				hi, _ = strconv.Atoi(b)
			}
			r.slots = append(r.slots, [2]int{lo, hi})
		}
		tp.rows = append(tp.rows, r)
	}
	sort.Slice(tp.rows, func(i, j int) bool { return tp.rows[i].port < tp.rows[j].port })
	return tp, nil
}

// topology asks the first node that answers.
func (c *cluster) topology(ctx context.Context, avoid ...int) (topology, error) {
	var last error
	for _, p := range c.ports() {
		skip := false
		for _, a := range avoid {
			skip = skip || a == p
		}
		if skip {
			continue
		}
		tp, err := c.topologyFrom(ctx, p)
		if err == nil {
			return tp, nil
		}
		last = err
	}
	return topology{}, last
}

// masters lists the ports of healthy masters holding slots.
func (tp topology) masters() []int {
	var out []int
	for _, r := range tp.rows {
		if r.master && !r.fail && len(r.slots) > 0 {
			out = append(out, r.port)
		}
	}
	return out
}

// ownerOf is the port of the master serving slot (0: none).
func (tp topology) ownerOf(slot int) int {
	for _, r := range tp.rows {
		if !r.master || r.fail {
			continue
		}
		for _, s := range r.slots {
			if slot >= s[0] && slot <= s[1] {
				return r.port
			}
		}
	}
	return 0
}

// replicasOf lists the ports of the replicas of the master on port.
func (tp topology) replicasOf(port int) []int {
	var id string
	for _, r := range tp.rows {
		if r.port == port {
			id = r.id
		}
	}
	var out []int
	for _, r := range tp.rows {
		if !r.master && r.masterID == id {
			out = append(out, r.port)
		}
	}
	return out
}

// role answers ROLE's first element on one node: master or slave.
func (c *cluster) role(ctx context.Context, port int) (string, error) {
	v, err := c.node(port).Do(ctx, "ROLE").Slice()
	if err != nil {
		return "", err
	}
	if len(v) == 0 {
		return "", errors.New("empty ROLE reply")
	}
	s, _ := v[0].(string)
	return s, nil
}

// waitHealthy waits until every node answers, sees cluster_state:ok and the
// cluster has 3 masters with a connected, synced replica each.
func (c *cluster) waitHealthy(ctx context.Context, d time.Duration) error {
	return poll(ctx, d, func(ctx context.Context) (bool, error) {
		for _, p := range c.ports() {
			info, err := c.node(p).ClusterInfo(ctx).Result()
			if err != nil {
				return false, fmt.Errorf("node %d: %w", p, err)
			}
			if !strings.Contains(info, "cluster_state:ok") {
				return false, fmt.Errorf("node %d: cluster_state not ok", p)
			}
			repl, err := c.node(p).Info(ctx, "replication").Result()
			if err != nil {
				return false, fmt.Errorf("node %d: %w", p, err)
			}
			if infoField(repl, "role") == "slave" && infoField(repl, "master_link_status") != "up" {
				return false, fmt.Errorf("replica %d: master_link_status %s", p, infoField(repl, "master_link_status"))
			}
		}
		tp, err := c.topology(ctx)
		if err != nil {
			return false, err
		}
		ms := tp.masters()
		if len(ms) != 3 {
			return false, fmt.Errorf("%d masters, want 3", len(ms))
		}
		for _, m := range ms {
			if len(tp.replicasOf(m)) == 0 {
				return false, fmt.Errorf("master %d has no replica", m)
			}
		}
		for _, r := range tp.rows {
			if r.fail || !r.connected {
				return false, fmt.Errorf("node %d flagged fail or disconnected", r.port)
			}
		}
		return true, nil
	})
}

// timeline is what Redis itself did after a fault, seen by polling every
// 50 ms: when a healthy master saw cluster_state go fail and come back, and
// when a replica of the victim answered ROLE master.
type timeline struct {
	mu                          sync.Mutex
	stateFail, stateOK, promote time.Duration // 0: not seen
	promoted                    int
	stopc                       chan struct{}
	done                        chan struct{}
}

// watch polls until stop (at most 40 s).
func (c *cluster) watch(t0 time.Time, tp topology, victim int) *timeline {
	tl := &timeline{stopc: make(chan struct{}), done: make(chan struct{})}
	var observer int
	for _, m := range tp.masters() {
		if m != victim {
			observer = m
			break
		}
	}
	reps := tp.replicasOf(victim)
	go func() {
		defer close(tl.done)
		deadline := t0.Add(40 * time.Second)
		for time.Now().Before(deadline) {
			select {
			case <-tl.stopc:
				return
			case <-time.After(50 * time.Millisecond):
			}
			ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
			info, err := c.node(observer).ClusterInfo(ctx).Result()
			now := time.Since(t0)
			tl.mu.Lock()
			if err == nil {
				fail := strings.Contains(info, "cluster_state:fail")
				if fail && tl.stateFail == 0 {
					tl.stateFail = now
				}
				if !fail && tl.stateFail > 0 && tl.stateOK == 0 {
					tl.stateOK = now
				}
			}
			tl.mu.Unlock()
			for _, r := range reps {
				role, err := c.role(ctx, r)
				tl.mu.Lock()
				if err == nil && role == "master" && tl.promote == 0 {
					tl.promote, tl.promoted = time.Since(t0), r
				}
				tl.mu.Unlock()
			}
			cancel()
		}
	}()
	return tl
}

func (tl *timeline) stop() {
	select {
	case <-tl.stopc:
	default:
		close(tl.stopc)
	}
	<-tl.done
}

func (tl *timeline) String() string {
	tl.mu.Lock()
	defer tl.mu.Unlock()
	f := func(d time.Duration) string {
		if d == 0 {
			return "never"
		}
		return "+" + d.Round(10*time.Millisecond).String()
	}
	s := fmt.Sprintf("cluster_state fail %s, ok %s; ", f(tl.stateFail), f(tl.stateOK))
	if tl.promote == 0 {
		return s + "no replica promoted"
	}
	return s + fmt.Sprintf("replica %d promoted %s", tl.promoted, f(tl.promote))
}

// waitReplicated waits until every replica has applied what its master had
// written when called (slave_repl_offset ≥ the master's offset then).
func (c *cluster) waitReplicated(ctx context.Context, tp topology, d time.Duration) error {
	for _, m := range tp.masters() {
		info, err := c.node(m).Info(ctx, "replication").Result()
		if err != nil {
			return err
		}
		want, _ := strconv.ParseInt(infoField(info, "master_repl_offset"), 10, 64)
		for _, r := range tp.replicasOf(m) {
			err := poll(ctx, d, func(ctx context.Context) (bool, error) {
				info, err := c.node(r).Info(ctx, "replication").Result()
				if err != nil {
					return false, err
				}
				got, _ := strconv.ParseInt(infoField(info, "slave_repl_offset"), 10, 64)
				return got >= want, fmt.Errorf("replica %d at offset %d, master %d at %d", r, got, m, want)
			})
			if err != nil {
				return err
			}
		}
	}
	return nil
}

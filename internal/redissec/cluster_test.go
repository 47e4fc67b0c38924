package redissec

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/internal/config"
	"github.com/rankgate/rankgate/internal/soon"
)

// The TLS cluster's ports: free loopback ports in [portLo, portHi], each
// with its cluster bus port (+10000) free too. Other clusters of the project
// use 7000, 7100, 7200, 7400 and 7500+; this range is ours.
const (
	portLo = 7800
	portHi = 7899

	nodeCount     = 6 // 3 masters + 3 replicas
	adminUser     = "admin"
	replUser      = "replicator"
	startWait     = 5 * time.Second  // one node answering
	createWait    = 20 * time.Second // redis-cli --cluster create
	clusterOKWait = 20 * time.Second // cluster_state:ok and replicas linked
	stopWait      = 3 * time.Second  // SIGTERM → SIGKILL
)

// tlsCluster is a TLS-only Redis Cluster run by the test: no plain-text
// port, TLS on the cluster bus and for replication, client certificates
// required, the default user off and an admin user for setup.
type tlsCluster struct {
	pki       *PKI
	addrs     []string // 127.0.0.1:port of every node
	adminPass string
	replPass  string
	tls       *tls.Config // the admin connections': the test CA and client certificate
	nodes     []*node
}

type node struct {
	addr string
	dir  string
	cmd  *exec.Cmd
	done chan struct{} // closed when the process has exited
}

// requireRedis skips the test (fails it when CI=true) unless redis-server and
// redis-cli are on PATH and redis-server was built with TLS.
func requireRedis(t *testing.T) {
	t.Helper()
	skip := func(format string, args ...any) {
		t.Helper()
		msg := fmt.Sprintf(format, args...)
		if os.Getenv("CI") == "true" {
			t.Fatalf("redissec: %s (CI=true forbids skipping)", msg)
		}
		t.Skipf("redissec: %s", msg)
	}
	for _, bin := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(bin); err != nil {
			skip("%s is not on PATH; install Redis 7 (Debian: apt-get install redis-server redis-tools)", bin)
		}
	}
	// A build without TLS does not know the tls-port directive; one with it
	// parses the configuration and stops because nothing is to be listened on.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	probe := exec.CommandContext(ctx, "redis-server", "--port", "0", "--tls-port", "0", "--save", "", "--appendonly", "no", "--logfile", "")
	probe.Dir = t.TempDir()
	out, _ := probe.CombinedOutput()
	switch {
	case bytes.Contains(out, []byte("Bad directive")):
		skip("redis-server was built without TLS support (BUILD_TLS=yes needed): %s", firstLines(out, 4))
	case !bytes.Contains(out, []byte("not listen anywhere")):
		skip("cannot tell whether redis-server supports TLS: %s", firstLines(out, 6))
	}
	if out, err := exec.CommandContext(ctx, "redis-cli", "--tls", "--version").CombinedOutput(); err != nil {
		skip("redis-cli was built without TLS support: %s", firstLines(out, 2))
	}
}

// startTLSCluster starts six TLS-only nodes on free ports in 7800–7899,
// creates a 3-master + 3-replica cluster with redis-cli and waits (bounded)
// until every node reports cluster_state:ok and every replica is linked.
// Every process is killed when the test ends.
func startTLSCluster(t *testing.T, pki *PKI, adminPass string) *tlsCluster {
	t.Helper()
	tc, err := config.Redis{TLS: true, TLSCAFile: pki.CAFile, TLSCertFile: pki.ClientCert, TLSKeyFile: pki.ClientKey}.TLSConfig()
	if err != nil {
		t.Fatalf("redissec: admin TLS: %v", err)
	}
	begin := time.Now()
	base := t.TempDir() // before the stop cleanup, so removed after it (cleanups run last first)
	c := &tlsCluster{pki: pki, adminPass: adminPass, replPass: secret(t), tls: tc}
	t.Cleanup(c.stop)
	tried := map[int]bool{}
	for len(c.nodes) < nodeCount {
		n, err := c.startNode(base, tried)
		if err != nil {
			t.Fatalf("redissec: %v", err)
		}
		c.nodes = append(c.nodes, n)
		c.addrs = append(c.addrs, n.addr)
	}
	started := time.Now()
	c.create(t)
	created := time.Now()
	c.waitOK(t)
	t.Logf("redissec: nodes started in %s, cluster created in %s, ok in %s", started.Sub(begin).Round(time.Millisecond),
		created.Sub(started).Round(time.Millisecond), time.Since(created).Round(time.Millisecond))
	return c
}

// startNode starts one node on a free port, moving to another port when the
// chosen one was taken in the meantime (another test process, say).
func (c *tlsCluster) startNode(base string, tried map[int]bool) (*node, error) {
	var lastErr error
	for range 5 {
		port, err := freePort(tried)
		if err != nil {
			return nil, err
		}
		n, err := c.launch(base, port)
		if err == nil {
			return n, nil
		}
		lastErr = err
	}
	return nil, fmt.Errorf("no node started on a free port in %d..%d: %w", portLo, portHi, lastErr)
}

// freePort returns a port in [portLo, portHi] not tried yet whose port and
// cluster bus port both accept a listener on 127.0.0.1 right now.
func freePort(tried map[int]bool) (int, error) {
	span := portHi - portLo + 1
	start := rand.IntN(span)
	for i := range span {
		p := portLo + (start+i)%span
		if tried[p] {
			continue
		}
		tried[p] = true
		if listenable(p) && listenable(p+10000) {
			return p, nil
		}
	}
	return 0, fmt.Errorf("no free port pair (p, p+10000) left in %d..%d on 127.0.0.1", portLo, portHi)
}

func listenable(port int) bool {
	l, err := net.Listen("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(port)))
	if err != nil {
		return false
	}
	_ = l.Close()
	return true
}

// launch writes the node's configuration and starts it in the foreground,
// then waits until it answers over TLS.
func (c *tlsCluster) launch(base string, port int) (*node, error) {
	dir := filepath.Join(base, strconv.Itoa(port))
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	q := strconv.Quote
	conf := strings.Join([]string{
		"bind 127.0.0.1",
		"port 0",
		"tls-port " + strconv.Itoa(port),
		"tls-cert-file " + q(c.pki.ServerCert),
		"tls-key-file " + q(c.pki.ServerKey),
		"tls-ca-cert-file " + q(c.pki.CAFile),
		"tls-auth-clients yes",
		"tls-cluster yes",
		"tls-replication yes",
		"cluster-enabled yes",
		"cluster-config-file nodes.conf",
		"cluster-node-timeout 3000",
		"dir " + q(dir),
		"logfile " + q(filepath.Join(dir, "redis.log")),
		`save ""`,
		"appendonly no",
		"maxmemory-policy noeviction",
		"repl-diskless-sync-delay 0", // replicas sync at once, not after 5 s
		// The default user is off from the start and setup runs as admin.
		// Replicas authenticate to their masters as a user that can only
		// replicate: masterauth is readable with CONFIG GET, which the
		// gateway's user holds (for /readyz).
		"user default off",
		"user " + adminUser + " on >" + c.adminPass + " ~* &* +@all",
		"user " + replUser + " on >" + c.replPass + " resetchannels -@all +psync +replconf +ping",
		"masteruser " + replUser,
		"masterauth " + c.replPass,
	}, "\n") + "\n"
	confFile := filepath.Join(dir, "redis.conf")
	if err := os.WriteFile(confFile, []byte(conf), 0o600); err != nil {
		return nil, err
	}
	cmd := exec.Command("redis-server", confFile)
	cmd.Dir = dir
	setDeathSignal(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start redis-server on %d: %w", port, err)
	}
	n := &node{addr: net.JoinHostPort("127.0.0.1", strconv.Itoa(port)), dir: dir, cmd: cmd, done: make(chan struct{})}
	go func() { _ = cmd.Wait(); close(n.done) }()

	admin := c.admin(n.addr)
	defer admin.Close()
	exited := errors.New("exited")
	err := soon.Within(startWait, func() error {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		select {
		case <-n.done:
			return soon.Stop(exited)
		default:
		}
		return admin.Ping(ctx).Err()
	})
	switch {
	case err == nil:
		return n, nil
	case errors.Is(err, exited):
		return nil, fmt.Errorf("redis-server on %d exited: %s", port, n.logTail(8))
	}
	n.kill()
	return nil, fmt.Errorf("redis-server on %d did not answer over TLS: %v; log: %s", port, err, n.logTail(8))
}

// admin is a single-node admin client.
func (c *tlsCluster) admin(addr string) *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr: addr, Username: adminUser, Password: c.adminPass, TLSConfig: c.tls,
		DialTimeout: time.Second, ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second,
		MaxRetries: -1, DisableIdentity: true, Protocol: 2,
	})
}

// eachNode runs fn on an admin client of every node.
func (c *tlsCluster) eachNode(t testing.TB, fn func(ctx context.Context, addr string, a *redis.Client) error) {
	t.Helper()
	for _, n := range c.nodes {
		a := c.admin(n.addr)
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		err := fn(ctx, n.addr, a)
		cancel()
		_ = a.Close()
		if err != nil {
			t.Fatalf("redissec: node %s: %v", n.addr, err)
		}
	}
}

// create runs redis-cli --cluster create over TLS as admin.
func (c *tlsCluster) create(t *testing.T) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), createWait)
	defer cancel()
	args := []string{"--tls", "--cacert", c.pki.CAFile, "--cert", c.pki.ClientCert, "--key", c.pki.ClientKey,
		"--user", adminUser, "--cluster", "create"}
	args = append(args, c.addrs...)
	args = append(args, "--cluster-replicas", "1", "--cluster-yes")
	cmd := exec.CommandContext(ctx, "redis-cli", args...)
	cmd.Env = append(os.Environ(), "REDISCLI_AUTH="+c.adminPass) // not on the command line
	setDeathSignal(cmd)
	out, err := cmd.CombinedOutput()
	if err != nil || !bytes.Contains(out, []byte("All 16384 slots covered")) {
		t.Fatalf("redissec: redis-cli --cluster create: %v\n%s", err, out)
	}
}

// waitOK waits until every node reports cluster_state:ok with 6 known nodes
// and every master has its replica linked.
func (c *tlsCluster) waitOK(t *testing.T) {
	t.Helper()
	if err := soon.Within(clusterOKWait, c.healthy); err != nil {
		t.Fatalf("redissec: cluster not ok: %v", err)
	}
}

func (c *tlsCluster) healthy() error {
	masters := 0
	for _, n := range c.nodes {
		a := c.admin(n.addr)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		info, err := a.ClusterInfo(ctx).Result()
		var repl string
		if err == nil {
			repl, err = a.Info(ctx, "replication").Result()
		}
		cancel()
		_ = a.Close()
		switch {
		case err != nil:
			return fmt.Errorf("%s: %w", n.addr, err)
		case !strings.Contains(info, "cluster_state:ok"):
			return fmt.Errorf("%s: cluster_state is not ok", n.addr)
		case !strings.Contains(info, "cluster_known_nodes:6"):
			return fmt.Errorf("%s: does not know every node yet", n.addr)
		case strings.Contains(repl, "role:master"):
			if !strings.Contains(repl, "connected_slaves:1") {
				return fmt.Errorf("%s: master without its replica", n.addr)
			}
			masters++
		case !strings.Contains(repl, "master_link_status:up"):
			return fmt.Errorf("%s: replica link not up", n.addr)
		}
	}
	if masters != 3 {
		return fmt.Errorf("%d masters, want 3", masters)
	}
	return nil
}

// atLeast reports whether the nodes run Redis major.minor or later.
func (c *tlsCluster) atLeast(t *testing.T, major, minor int) bool {
	t.Helper()
	var v string
	c.eachNode(t, func(ctx context.Context, _ string, a *redis.Client) error {
		info, err := a.Info(ctx, "server").Result()
		for _, l := range strings.Split(info, "\n") {
			if s, ok := strings.CutPrefix(strings.TrimSpace(l), "redis_version:"); ok {
				v = s
			}
		}
		return err
	})
	var maj, mnr int
	if _, err := fmt.Sscanf(v, "%d.%d", &maj, &mnr); err != nil {
		t.Fatalf("redissec: redis_version %q: %v", v, err)
	}
	return maj > major || (maj == major && mnr >= minor)
}

// stop terminates every node: SIGTERM, then SIGKILL after stopWait.
func (c *tlsCluster) stop() {
	for _, n := range c.nodes {
		if n.cmd.Process != nil {
			_ = n.cmd.Process.Signal(syscall.SIGTERM)
		}
	}
	for _, n := range c.nodes {
		select {
		case <-n.done:
		case <-time.After(stopWait):
			n.kill()
		}
	}
}

func (n *node) kill() {
	if n.cmd.Process != nil {
		_ = n.cmd.Process.Kill()
	}
	select {
	case <-n.done:
	case <-time.After(stopWait):
	}
}

func (n *node) logTail(lines int) string {
	b, err := os.ReadFile(filepath.Join(n.dir, "redis.log"))
	if err != nil {
		return "(no log: " + err.Error() + ")"
	}
	ls := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(ls[max(0, len(ls)-lines):], " | ")
}

func firstLines(b []byte, n int) string {
	ls := strings.Split(strings.TrimSpace(string(b)), "\n")
	return strings.Join(ls[:min(n, len(ls))], " | ")
}

// Package testcluster gives integration tests a real Redis Cluster of 3 masters
// and 3 replicas. Tests never mock Redis and never FLUSHALL: each test takes its
// own key prefix from Prefix.
//
// The cluster is resolved once per test process, in this order:
//
//  1. RANKGATE_TEST_REDIS_CLUSTER (comma-separated seed addrs), checked for
//     cluster_state:ok; `make test` sets it.
//  2. A Docker engine, if one answers: a redis:7.0 container with host
//     networking running 6 nodes on 127.0.0.1:7200..7205, shared by the test
//     processes of one `go test` run (reused by name) and removed by the
//     testcontainers reaper (Ryuk) when the run ends. Set RANKGATE_TEST_DOCKER=0
//     to skip this step.
//  3. The local redis-server binary: deploy/cluster/cluster.sh up with base
//     port 7100. The cluster is left running for the next run; `make
//     cluster-down CLUSTER_PORT=7100` stops it.
//  4. Otherwise the test is skipped, saying what is missing, except when CI=true,
//     where it fails: integration tests are never skipped in CI.
//
// Test support: it imports go-redis and testcontainers, no rankgate package;
// production code must not import it.
package testcluster

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/moby/api/types/container"
	"github.com/redis/go-redis/v9"
	"github.com/testcontainers/testcontainers-go"
	"github.com/testcontainers/testcontainers-go/wait"
)

const (
	// EnvCluster names an existing cluster: comma-separated seed addrs.
	EnvCluster = "RANKGATE_TEST_REDIS_CLUSTER"
	// EnvDocker set to "0" disables the Docker step.
	EnvDocker = "RANKGATE_TEST_DOCKER"

	// LocalBasePort is the base port of the cluster started with cluster.sh.
	LocalBasePort = 7100
	// DockerBasePort is the base port of the cluster run in a container.
	DockerBasePort = 7200
	// DockerImage is the image the container cluster runs.
	DockerImage = "redis:7.0"

	dockerName    = "rankgate-testcluster-7200"
	readyMarker   = "RANKGATE-TESTCLUSTER-READY"
	nodes         = 6
	clusterWait   = 30 * time.Second // for cluster_state:ok once nodes run
	dockerProbe   = 5 * time.Second  // for a Docker engine to answer
	dockerStartup = 3 * time.Minute  // image pull + start + cluster create
	scriptTimeout = 6 * time.Minute  // cluster.sh up, including a possible apt-get install
	lockWait      = 5 * time.Minute  // for another test process creating the container
	dialTimeout   = 2 * time.Second  // per node, for checks and Client
	ioTimeout     = 3 * time.Second  // read/write, for checks and Client
	pollInterval  = 200 * time.Millisecond
)

var (
	once     sync.Once
	resolved []string
	source   string // which step produced the cluster, for the test log
	notes    []string
	errSetup error // a cluster was expected but is broken: tests fail
	missing  string
)

// Addrs returns the seed addrs of a real 3-master/3-replica Redis Cluster. It
// skips the test (fails it when CI=true) when no cluster can be had, and fails
// it when the one found is not healthy.
func Addrs(tb testing.TB) []string {
	tb.Helper()
	once.Do(resolve)
	for _, n := range notes {
		tb.Logf("testcluster: %s", n)
	}
	switch {
	case errSetup != nil:
		tb.Fatalf("testcluster: %v", errSetup)
	case missing != "":
		if os.Getenv("CI") == "true" {
			tb.Fatalf("testcluster: no Redis Cluster for integration tests, and CI=true forbids skipping: %s", missing)
		}
		tb.Skipf("testcluster: no Redis Cluster for integration tests: %s", missing)
	}
	tb.Logf("testcluster: using %s: %s", source, strings.Join(resolved, ","))
	return append([]string(nil), resolved...)
}

// Prefix returns a key prefix unique to this call ("t" + 10 lowercase hex
// digits, matching [a-z0-9]{1,16}), so tests share the cluster without
// colliding and without flushing it.
func Prefix(tb testing.TB) string {
	tb.Helper()
	var b [5]byte
	if _, err := rand.Read(b[:]); err != nil {
		tb.Fatalf("testcluster: random prefix: %v", err)
	}
	return "t" + hex.EncodeToString(b[:])
}

// Client returns a go-redis ClusterClient on Addrs with short timeouts, closed
// when the test ends.
func Client(tb testing.TB) *redis.ClusterClient {
	tb.Helper()
	c := redis.NewClusterClient(&redis.ClusterOptions{
		Addrs:                      Addrs(tb),
		DialTimeout:                dialTimeout,
		ReadTimeout:                ioTimeout,
		WriteTimeout:               ioTimeout,
		PoolTimeout:                ioTimeout,
		ContextTimeoutEnabled:      true,
		ClusterStateReloadInterval: time.Second,
	})
	tb.Cleanup(func() { _ = c.Close() })
	return c
}

// resolve runs once per process; it sets resolved+source, errSetup or missing.
func resolve() {
	// 1. An explicit cluster.
	if v := strings.TrimSpace(os.Getenv(EnvCluster)); v != "" {
		addrs := splitAddrs(v)
		source = EnvCluster
		if len(addrs) == 0 {
			errSetup = fmt.Errorf("%s=%q holds no addrs", EnvCluster, v)
			return
		}
		if err := waitHealthy(addrs, clusterWait); err != nil {
			errSetup = fmt.Errorf("%s=%s: %w", EnvCluster, v, err)
			return
		}
		resolved = addrs
		return
	}

	// 2. A Docker engine.
	if os.Getenv(EnvDocker) == "0" {
		notes = append(notes, EnvDocker+"=0: not trying Docker")
	} else if err := dockerHealthy(dockerProbe); err != nil {
		notes = append(notes, "no Docker engine answered (testcontainers: "+firstLine(err.Error())+")")
	} else {
		addrs, err := startDocker()
		if err == nil {
			source, resolved = "Docker container "+dockerName+" ("+DockerImage+", host network)", addrs
			return
		}
		// Fall through to the local binary when there is one; fail otherwise.
		notes = append(notes, "Docker engine present but the container cluster failed: "+err.Error())
		if _, lookErr := exec.LookPath("redis-server"); lookErr != nil {
			errSetup = fmt.Errorf("docker cluster: %w", err)
			return
		}
	}

	// 3. The local redis-server binary.
	if _, err := exec.LookPath("redis-server"); err != nil {
		missing = "set " + EnvCluster + " to a cluster's seed addrs, start a Docker engine, " +
			"or install Redis 7 (apt-get install -y redis-server redis-tools) so deploy/cluster/cluster.sh can start one"
		return
	}
	addrs, err := startLocal()
	if err != nil {
		errSetup = err
		return
	}
	source, resolved = fmt.Sprintf("local redis-server via deploy/cluster/cluster.sh (base port %d)", LocalBasePort), addrs
}

func splitAddrs(v string) []string {
	var out []string
	for _, a := range strings.Split(v, ",") {
		if a = strings.TrimSpace(a); a != "" {
			out = append(out, a)
		}
	}
	return out
}

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}

// ---------------------------------------------------------------- health

// waitHealthy polls the seeds until one reports cluster_state:ok with all 16384
// slots ok, or the timeout passes.
func waitHealthy(addrs []string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		for _, a := range addrs {
			if last = clusterOK(a); last == nil {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("cluster not healthy within %s: %w", timeout, last)
		}
		time.Sleep(pollInterval)
	}
}

func clusterOK(addr string) error {
	// Dial first: go-redis logs every failed dial, which would flood the test log.
	conn, err := net.DialTimeout("tcp", addr, dialTimeout)
	if err != nil {
		return fmt.Errorf("%s: %w", addr, err)
	}
	_ = conn.Close()
	c := redis.NewClient(&redis.Options{
		Addr:                  addr,
		DialTimeout:           dialTimeout,
		ReadTimeout:           ioTimeout,
		WriteTimeout:          ioTimeout,
		ContextTimeoutEnabled: true,
		MaxRetries:            -1,
		DialerRetries:         1,
		DisableIdentity:       true,
	})
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), dialTimeout+ioTimeout)
	defer cancel()
	info, err := c.ClusterInfo(ctx).Result()
	if err != nil {
		return fmt.Errorf("%s: CLUSTER INFO: %w", addr, err)
	}
	f := InfoFields(info)
	if f["cluster_state"] != "ok" || f["cluster_slots_ok"] != "16384" {
		return fmt.Errorf("%s: cluster_state:%s cluster_slots_ok:%s", addr, f["cluster_state"], f["cluster_slots_ok"])
	}
	return nil
}

// InfoFields parses the "name:value" lines of an INFO or CLUSTER INFO reply.
func InfoFields(s string) map[string]string {
	m := make(map[string]string)
	for _, line := range strings.Split(s, "\n") {
		line = strings.TrimSpace(line)
		if k, v, ok := strings.Cut(line, ":"); ok && !strings.HasPrefix(line, "#") {
			m[k] = v
		}
	}
	return m
}

// ---------------------------------------------------------------- Docker

// dockerHealthy reports whether a Docker engine answers within timeout. It never
// hangs: the probe runs in a goroutine that is abandoned on timeout.
func dockerHealthy(timeout time.Duration) error {
	done := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Errorf("docker probe panicked: %v", r)
			}
		}()
		ctx, cancel := context.WithTimeout(context.Background(), timeout)
		defer cancel()
		p, err := testcontainers.NewDockerProvider()
		if err != nil {
			done <- err
			return
		}
		done <- p.Health(ctx) // Health closes p
	}()
	select {
	case err := <-done:
		return err
	case <-time.After(timeout + time.Second):
		return fmt.Errorf("docker engine did not answer within %s", timeout)
	}
}

// dockerScript starts 6 cluster nodes inside the container, creates the cluster
// unless it exists (the container is reused), prints readyMarker and idles.
func dockerScript() string {
	first, last := DockerBasePort, DockerBasePort+nodes-1
	var seeds []string
	for p := first; p <= last; p++ {
		seeds = append(seeds, "127.0.0.1:"+strconv.Itoa(p))
	}
	return fmt.Sprintf(`set -eu
trap 'exit 0' TERM INT
mkdir -p /data && cd /data
for p in $(seq %[1]d %[2]d); do
  if [ "$(redis-cli -p $p ping 2>/dev/null)" != PONG ]; then
    redis-server --port $p --bind 127.0.0.1 --protected-mode no --daemonize yes \
      --pidfile /data/$p.pid --logfile /data/$p.log --dir /data --dbfilename dump-$p.rdb \
      --cluster-enabled yes --cluster-config-file nodes-$p.conf --cluster-node-timeout 3000 \
      --appendonly no --save '' --maxmemory-policy noeviction
  fi
done
for p in $(seq %[1]d %[2]d); do
  i=0
  until [ "$(redis-cli -p $p ping 2>/dev/null)" = PONG ]; do
    i=$((i+1))
    if [ $i -gt 100 ]; then echo "node 127.0.0.1:$p did not answer PING within 10s"; tail -n 20 /data/$p.log; exit 1; fi
    sleep 0.1
  done
done
if ! redis-cli -p %[1]d cluster info | grep -q '^cluster_state:ok'; then
  redis-cli --cluster create %[3]s --cluster-replicas 1 --cluster-yes
fi
echo %[4]s
while :; do sleep 1 & wait $!; done
`, first, last, strings.Join(seeds, " "), readyMarker)
}

func startDocker() ([]string, error) {
	// Test processes of one `go test ./...` run in parallel and share the
	// container; serialize its creation across them.
	unlock, err := lockFile(filepath.Join(os.TempDir(), dockerName+".lock"), lockWait)
	if err != nil {
		return nil, err
	}
	defer unlock()

	ctx, cancel := context.WithTimeout(context.Background(), dockerStartup)
	defer cancel()
	ctr, err := testcontainers.Run(ctx, DockerImage,
		testcontainers.WithReuseByName(dockerName),
		testcontainers.WithEntrypoint("sh", "-c", dockerScript()),
		testcontainers.WithHostConfigModifier(func(hc *container.HostConfig) {
			hc.NetworkMode = "host"
		}),
		testcontainers.WithWaitStrategy(wait.ForLog(readyMarker).WithStartupTimeout(dockerStartup-30*time.Second)),
	)
	if err != nil {
		msg := err.Error()
		if ctr != nil {
			if logs := containerLogs(ctr); logs != "" {
				msg += "\ncontainer output:\n" + logs
			}
			_ = ctr.Terminate(context.Background())
		}
		return nil, errors.New(msg)
	}
	addrs := seedAddrs(DockerBasePort)
	if err := waitHealthy(addrs, clusterWait); err != nil {
		logs := containerLogs(ctr)
		_ = ctr.Terminate(context.Background())
		return nil, fmt.Errorf("%w\ncontainer output:\n%s", err, logs)
	}
	return addrs, nil
}

func containerLogs(ctr *testcontainers.DockerContainer) string {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	r, err := ctr.Logs(ctx)
	if err != nil {
		return ""
	}
	defer r.Close()
	b, _ := io.ReadAll(io.LimitReader(r, 64<<10))
	return tail(string(b), 40)
}

// lockFile takes an exclusive flock on path, polling until wait passes.
func lockFile(path string, wait time.Duration) (func(), error) {
	f, err := os.OpenFile(path, os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(wait)
	for {
		err = syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return func() { _ = syscall.Flock(int(f.Fd()), syscall.LOCK_UN); _ = f.Close() }, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) || time.Now().After(deadline) {
			_ = f.Close()
			return nil, fmt.Errorf("lock %s: %w", path, err)
		}
		time.Sleep(pollInterval)
	}
}

// ---------------------------------------------------------------- local binary

func seedAddrs(base int) []string {
	out := make([]string, nodes)
	for i := range out {
		out[i] = net.JoinHostPort("127.0.0.1", strconv.Itoa(base+i))
	}
	return out
}

// repoRoot walks up from the working directory to the directory holding go.mod.
func repoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

func startLocal() ([]string, error) {
	root, err := repoRoot()
	if err != nil {
		return nil, fmt.Errorf("finding the repo root for deploy/cluster/cluster.sh: %w", err)
	}
	script := filepath.Join(root, "deploy", "cluster", "cluster.sh")
	ctx, cancel := context.WithTimeout(context.Background(), scriptTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", script, "up")
	// The shared test cluster always runs the default settings, whatever the
	// caller's environment says; fault tests use a base port of their own.
	cmd.Env = append(os.Environ(),
		"RANKGATE_CLUSTER_PORT="+strconv.Itoa(LocalBasePort),
		"RANKGATE_CLUSTER_NODE_TIMEOUT=",
		"RANKGATE_CLUSTER_EXTRA_ARGS=",
	)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	cmd.WaitDelay = 5 * time.Second
	if err := cmd.Run(); err != nil {
		return nil, fmt.Errorf("%s up (base port %d): %w\n%s", script, LocalBasePort, err, tail(stderr.String(), 40))
	}
	lines := strings.Split(strings.TrimSpace(stdout.String()), "\n")
	addrs := splitAddrs(lines[len(lines)-1])
	if len(addrs) != nodes {
		return nil, fmt.Errorf("%s up printed %q, want %d addrs", script, stdout.String(), nodes)
	}
	if err := waitHealthy(addrs, clusterWait); err != nil {
		return nil, fmt.Errorf("cluster from %s: %w", script, err)
	}
	return addrs, nil
}

func tail(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

//go:build faults

package faults

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"golang.org/x/sys/unix"
)

// A network of namespaces of the test's own (scenario 11): a hub namespace
// holding a bridge, and one namespace per member (each Redis node, gateway
// A, gateway B, an observer), joined to the bridge by a veth pair, on
// private addresses that exist only inside these namespaces. Nothing is
// attached to the host's network; every namespace is named rg15-* and is
// deleted at cleanup (and, left over from an earlier run, at start).
const (
	nsPrefix   = "rg15-"
	nsHub      = nsPrefix + "hub"
	nsSubnet   = "10.215.0."
	baseNetns  = 7970 // Redis node i listens on nsSubnet(10+i):7970+i, inside rg15-r<i>
	netnsData  = "/tmp/rankgate-faults-netns"
	nsObserver = "obs"
	nsGwA      = "gwa"
	nsGwB      = "gwb"
)

// netLab is the namespaces of one test.
type netLab struct {
	ips map[string]string // member → address
}

func nsName(member string) string { return nsPrefix + member }

func ipRun(args ...string) error {
	out, err := exec.Command("ip", args...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("ip %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// killNetnsRedis stops the Redis nodes of an earlier run by their pidfiles.
func killNetnsRedis() {
	pids, _ := filepath.Glob(filepath.Join(netnsData, "*.pid"))
	for _, p := range pids {
		b, err := os.ReadFile(p)
		if err != nil {
			continue
		}
		if pid, err := strconv.Atoi(strings.TrimSpace(string(b))); err == nil && pid > 1 {
			_ = syscall.Kill(pid, syscall.SIGKILL)
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			_ = waitExit(ctx, pid, 5*time.Second)
			cancel()
		}
	}
}

// deleteNetns removes every rg15-* namespace (deleting a namespace removes
// the veth ends inside it, and with them their peers in the hub).
func deleteNetns() {
	out, _ := exec.Command("ip", "netns", "list").Output()
	for _, line := range strings.Split(string(out), "\n") {
		f := strings.Fields(line)
		if len(f) > 0 && strings.HasPrefix(f[0], nsPrefix) {
			_ = ipRun("netns", "del", f[0])
		}
	}
}

func redisMember(i int) string { return "r" + strconv.Itoa(i) }

// newNetLab builds the namespaces. It needs root and iproute2 (the make
// target installs it); without them it skips, unless CI=true.
func newNetLab(t *testing.T) *netLab {
	t.Helper()
	if _, err := exec.LookPath("ip"); err != nil || os.Getuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatalf("network namespaces need root and iproute2 (ip: %v, uid %d)", err, os.Getuid())
		}
		t.Skipf("network namespaces need root and iproute2 (ip: %v, uid %d)", err, os.Getuid())
	}
	killNetnsRedis()
	deleteNetns()
	_ = os.RemoveAll(netnsData)
	t.Cleanup(func() {
		killNetnsRedis()
		deleteNetns()
		_ = os.RemoveAll(netnsData)
	})
	if err := os.MkdirAll(netnsData, 0o755); err != nil {
		t.Fatal(err)
	}
	lab := &netLab{ips: map[string]string{}}
	must := func(args ...string) {
		t.Helper()
		if err := ipRun(args...); err != nil {
			t.Fatal(err)
		}
	}
	must("netns", "add", nsHub)
	must("-n", nsHub, "link", "set", "lo", "up")
	must("-n", nsHub, "link", "add", "br0", "type", "bridge")
	must("-n", nsHub, "link", "set", "br0", "up")
	members := map[string]int{nsObserver: 30, nsGwA: 20, nsGwB: 21}
	for i := 0; i < nodesPer; i++ {
		members[redisMember(i)] = 10 + i
	}
	for m, last := range members {
		ns, ip := nsName(m), nsSubnet+strconv.Itoa(last)
		must("netns", "add", ns)
		must("-n", ns, "link", "set", "lo", "up")
		// Both ends are created inside the test's namespaces: one in the hub,
		// its peer straight into the member's namespace.
		must("-n", nsHub, "link", "add", "v-"+m, "type", "veth", "peer", "name", "eth0", "netns", ns)
		must("-n", nsHub, "link", "set", "v-"+m, "master", "br0")
		must("-n", nsHub, "link", "set", "v-"+m, "up")
		must("-n", ns, "addr", "add", ip+"/24", "dev", "eth0")
		must("-n", ns, "link", "set", "eth0", "up")
		lab.ips[m] = ip
	}
	return lab
}

// dialer opens connections from inside member's namespace: the socket is
// created on an OS thread switched into it (setns), and belongs to that
// namespace for its whole life. The thread is never switched back; it ends
// with its goroutine (runtime.LockOSThread without Unlock).
func (lab *netLab) dialer(member string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	path := filepath.Join("/run/netns", nsName(member))
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		type res struct {
			c   net.Conn
			err error
		}
		ch := make(chan res, 1)
		go func() {
			runtime.LockOSThread()
			f, err := os.Open(path)
			if err != nil {
				ch <- res{nil, err}
				return
			}
			defer func() { _ = f.Close() }()
			if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
				ch <- res{nil, fmt.Errorf("setns %s: %w", path, err)}
				return
			}
			var d net.Dialer
			c, err := d.DialContext(ctx, network, addr)
			ch <- res{c, err}
		}()
		r := <-ch
		return r.c, r.err
	}
}

// nodeIP is the address of the Redis node on port.
func (lab *netLab) nodeIP(port int) string { return lab.ips[redisMember(port-baseNetns)] }

// startCluster starts six Redis nodes, each in its namespace, and joins
// them into a 3 + 3 cluster (node timeout shortNodeTimeout).
func (lab *netLab) startCluster(t *testing.T) *cluster {
	t.Helper()
	bin := os.Getenv("REDIS_SERVER")
	if bin == "" {
		bin = "redis-server"
	}
	c := &cluster{base: baseNetns, data: netnsData, clients: map[int]*redis.Client{}, paused: map[int]bool{},
		ips: map[int]string{}, dial: lab.dialer(nsObserver)}
	for i := 0; i < nodesPer; i++ {
		port := baseNetns + i
		ip := lab.nodeIP(port)
		c.ips[port] = ip
		c.addrs = append(c.addrs, fmt.Sprintf("%s:%d", ip, port))
		args := c.nodeArgs(port)
		for j := range args {
			if args[j] == "--bind" {
				args[j+1] = ip
			}
		}
		out, err := exec.Command("ip", append([]string{"netns", "exec", nsName(redisMember(i)), bin}, args...)...).CombinedOutput()
		if err != nil {
			t.Fatalf("redis-server %d in %s: %v: %s", port, nsName(redisMember(i)), err, out)
		}
	}
	t.Cleanup(func() {
		c.mu.Lock()
		for _, cl := range c.clients {
			_ = cl.Close()
		}
		c.mu.Unlock()
	})
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	for _, p := range c.ports() {
		if err := poll(ctx, 15*time.Second, func(ctx context.Context) (bool, error) {
			err := c.node(p).Ping(ctx).Err()
			return err == nil, err
		}); err != nil {
			t.Fatalf("node %d: %v", p, err)
		}
	}
	create := append([]string{"netns", "exec", nsName(nsObserver), "redis-cli", "--cluster", "create"}, c.addrs...)
	create = append(create, "--cluster-replicas", "1", "--cluster-yes")
	if out, err := exec.CommandContext(ctx, "ip", create...).CombinedOutput(); err != nil {
		t.Fatalf("redis-cli --cluster create: %v\n%s", err, out)
	}
	if err := c.waitHealthy(ctx, 60*time.Second); err != nil {
		t.Fatalf("namespaced cluster not healthy: %v", err)
	}
	return c
}

// block cuts the link between two members both ways (a blackhole route to
// the other in each namespace); unblock restores it.
func (lab *netLab) block(a, b string) error {
	if err := ipRun("-n", nsName(a), "route", "add", "blackhole", lab.ips[b]+"/32"); err != nil {
		return err
	}
	return ipRun("-n", nsName(b), "route", "add", "blackhole", lab.ips[a]+"/32")
}

func (lab *netLab) unblock(a, b string) error {
	err1 := ipRun("-n", nsName(a), "route", "del", "blackhole", lab.ips[b]+"/32")
	err2 := ipRun("-n", nsName(b), "route", "del", "blackhole", lab.ips[a]+"/32")
	if err1 != nil {
		return err1
	}
	return err2
}

// isolate takes member's link to the bridge down (cut from everything);
// rejoin brings it back.
func (lab *netLab) isolate(member string) error {
	return ipRun("-n", nsHub, "link", "set", "v-"+member, "down")
}

func (lab *netLab) rejoin(member string) error {
	return ipRun("-n", nsHub, "link", "set", "v-"+member, "up")
}

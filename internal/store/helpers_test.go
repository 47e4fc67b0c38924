package store_test

import (
	"bufio"
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/store"
	"github.com/rankgate/rankgate/internal/testcluster"
)

// env is one Store on the shared test cluster under a key prefix of its own.
type env struct {
	s      *store.Store
	c      redis.UniversalClient
	cc     *redis.ClusterClient
	reg    *prometheus.Registry
	layout shard.Layout
}

// newEnv builds a Store on the test cluster through store.NewClient, with a
// fresh registry and a unique prefix whose keys are removed at cleanup.
func newEnv(t testing.TB) *env {
	t.Helper()
	addrs := testcluster.Addrs(t)
	c, err := store.NewClient(store.ClientOptions{
		Addrs: addrs, DialTimeout: 2 * time.Second, ReadTimeout: 3 * time.Second, WriteTimeout: 3 * time.Second,
	})
	if err != nil {
		t.Fatalf("NewClient: %v", err)
	}
	cc, ok := c.(*redis.ClusterClient)
	if !ok {
		t.Fatalf("NewClient on %d seeds returned %T, want *redis.ClusterClient", len(addrs), c)
	}
	reg := prometheus.NewRegistry()
	s, err := store.New(c, nil, store.Options{Timeout: 5 * time.Second, Registerer: reg})
	if err != nil {
		t.Fatalf("store.New: %v", err)
	}
	e := &env{s: s, c: c, cc: cc, reg: reg, layout: shard.Layout{Prefix: testcluster.Prefix(t)}}
	t.Cleanup(func() {
		s.Close()
		deletePrefix(t, cc, e.layout.Prefix)
		_ = c.Close()
	})
	return e
}

// deletePrefix unlinks every key under prefix on every master.
func deletePrefix(t testing.TB, cc *redis.ClusterClient, prefix string) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	err := cc.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
		var cursor uint64
		for {
			keys, next, err := n.Scan(ctx, cursor, prefix+":*", 1000).Result()
			if err != nil {
				return err
			}
			for _, k := range keys {
				if err := n.Unlink(ctx, k).Err(); err != nil {
					return err
				}
			}
			if cursor = next; cursor == 0 {
				return nil
			}
		}
	})
	if err != nil {
		t.Logf("cleanup of prefix %s: %v", prefix, err)
	}
}

func ctxT(t testing.TB, d time.Duration) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), d)
	t.Cleanup(cancel)
	return ctx
}

// counterValue reads a counter (summed over its label sets) from a registry;
// 0 when absent.
func counterValue(t testing.TB, reg *prometheus.Registry, name string) float64 {
	t.Helper()
	return counterVecValue(t, reg, name, "", "")
}

// counterVecValue sums name's series whose label is value (every series
// when label is "").
func counterVecValue(t testing.TB, reg *prometheus.Registry, name, label, value string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			if label == "" {
				sum += m.GetCounter().GetValue()
				continue
			}
			for _, lp := range m.GetLabel() {
				if lp.GetName() == label && lp.GetValue() == value {
					sum += m.GetCounter().GetValue()
				}
			}
		}
	}
	return sum
}

// startRedis starts a throwaway standalone redis-server on a free loopback
// port, killed at cleanup. It skips the test when redis-server is absent,
// unless CI=true.
func startRedis(t *testing.T, extra ...string) string {
	t.Helper()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("redis-server not found and CI=true forbids skipping: %v", err)
		}
		t.Skipf("redis-server not found: %v", err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("free port: %v", err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	_ = l.Close()

	args := append([]string{
		"--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
		"--daemonize", "no", "--dir", t.TempDir(), "--logfile", "",
	}, extra...)
	cmd := exec.Command(bin, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = cmd.Stdout
	if err := cmd.Start(); err != nil {
		t.Fatalf("start redis-server: %v", err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		_ = cmd.Wait()
	})

	// Wait for the server's own "ready" line rather than polling.
	ready := make(chan error, 1)
	go func() {
		var log strings.Builder
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			line := sc.Text()
			log.WriteString(line + "\n")
			if strings.Contains(line, "Ready to accept connections") {
				ready <- nil
				for sc.Scan() { // keep draining so the server never blocks on stdout
				}
				return
			}
		}
		ready <- fmt.Errorf("redis-server exited before it was ready:\n%s", log.String())
	}()
	select {
	case err := <-ready:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("redis-server not ready within 15s")
	}
	return net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
}

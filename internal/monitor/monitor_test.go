package monitor_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/internal/monitor"
	"github.com/rankgate/rankgate/internal/soon"
	"github.com/rankgate/rankgate/internal/testcluster"
)

// seedBoards writes sorted sets shaped like board shards under prefix, of
// sizes[i] members each, and returns their keys. They expire in ten minutes
// and are deleted when the test ends.
func seedBoards(t *testing.T, c redis.UniversalClient, prefix string, sizes ...int) []string {
	t.Helper()
	ctx := context.Background()
	keys := make([]string, len(sizes))
	for i, n := range sizes {
		keys[i] = fmt.Sprintf("%s:{learning:national:b%d:0}:2026-W10:z", prefix, i)
		members := make([]redis.Z, n)
		for j := range members {
			members[j] = redis.Z{Score: float64(j), Member: fmt.Sprintf("user-%06d-with-a-longish-member-name", j)}
		}
		for chunk := range slices.Chunk(members, 500) {
			if err := c.ZAdd(ctx, keys[i], chunk...).Err(); err != nil {
				t.Fatalf("zadd %s: %v", keys[i], err)
			}
		}
		if err := c.Expire(ctx, keys[i], 10*time.Minute).Err(); err != nil {
			t.Fatal(err)
		}
	}
	t.Cleanup(func() {
		for _, k := range keys {
			_ = c.Del(context.Background(), k).Err()
		}
	})
	// Reads, so that commandstats has lines for them.
	for _, k := range keys {
		_ = c.ZScore(ctx, k, "user-000000-with-a-longish-member-name").Err()
		_ = c.ZCount(ctx, k, "-inf", "+inf").Err()
		_ = c.ZRevRange(ctx, k, 0, 9).Err()
	}
	return keys
}

// topology returns the cluster's masters and replicas by address.
func topology(t *testing.T, c redis.UniversalClient) (masters, replicas []string) {
	t.Helper()
	s, err := c.(*redis.ClusterClient).ClusterNodes(context.Background()).Result()
	if err != nil {
		t.Fatal(err)
	}
	for line := range strings.Lines(s) {
		f := strings.Fields(line)
		if len(f) < 3 {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		switch {
		case strings.Contains(f[2], "master"):
			masters = append(masters, addr)
		case strings.Contains(f[2], "slave"):
			replicas = append(replicas, addr)
		}
	}
	slices.Sort(masters)
	slices.Sort(replicas)
	if len(masters) != 3 || len(replicas) != 3 {
		t.Fatalf("test cluster: want 3 masters and 3 replicas, have %v and %v", masters, replicas)
	}
	return masters, replicas
}

// byRole splits the nodes of a per-node metric by role, checking each value.
func byRole(t *testing.T, got map[string][]series, name string, ok func(float64) bool) (masters, replicas []string) {
	t.Helper()
	for _, s := range got[name] {
		if !ok(s.value) {
			t.Errorf("%s%v = %v: out of range", name, s.labels, s.value)
		}
		switch s.labels["role"] {
		case "master":
			masters = append(masters, s.labels["node"])
		case "replica":
			replicas = append(replicas, s.labels["node"])
		default:
			t.Errorf("%s%v: bad role", name, s.labels)
		}
	}
	slices.Sort(masters)
	slices.Sort(replicas)
	return masters, replicas
}

func TestPollCluster(t *testing.T) {
	t.Parallel()
	c := clusterClient(t, nil)
	masters, replicas := topology(t, c)
	prefix := testcluster.Prefix(t)
	keys := seedBoards(t, c, prefix, 1500, 300, 40, 10, 5)

	reg := prometheus.NewRegistry()
	mon, err := monitor.New(c, monitor.Options{Prefix: prefix, TopKeys: 3, Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	if got := gather(t, reg)["rankgate_redis_node_up"]; len(got) != 0 {
		t.Fatalf("node metrics before the first poll: %v", got)
	}
	for poll := 1; poll <= 2; poll++ { // the second poll takes the interval-average path
		if err := mon.Poll(context.Background()); err != nil {
			t.Fatalf("poll %d: %v", poll, err)
		}
		if poll == 1 {
			_ = c.ZScore(context.Background(), keys[0], "user-000001-with-a-longish-member-name").Err()
		}
	}
	got := gather(t, reg)

	is1 := func(v float64) bool { return v == 1 }
	gotM, gotR := byRole(t, got, "rankgate_redis_node_up", is1)
	if !slices.Equal(gotM, masters) || !slices.Equal(gotR, replicas) {
		t.Errorf("node_up: masters %v replicas %v; want %v and %v", gotM, gotR, masters, replicas)
	}
	for name, ok := range map[string]func(float64) bool{
		"rankgate_redis_node_ops_per_second":    func(v float64) bool { return v >= 0 },
		"rankgate_redis_node_used_memory_bytes": func(v float64) bool { return v > 1<<20 },
		"rankgate_redis_maxmemory_policy_ok":    is1,
	} {
		if m, r := byRole(t, got, name, ok); len(m) != 3 || len(r) != 3 {
			t.Errorf("%s: %d masters, %d replicas; want 3 and 3", name, len(m), len(r))
		}
	}

	lag := got["rankgate_redis_replication_lag_bytes"]
	if len(lag) != 3 {
		t.Errorf("replication lag: %d series, want 3: %v", len(lag), lag)
	}
	for _, s := range lag {
		if s.value < 0 || !slices.Contains(replicas, s.labels["node"]) || !slices.Contains(masters, s.labels["master"]) {
			t.Errorf("replication lag %v = %v", s.labels, s.value)
		}
	}

	var zscore int
	for _, s := range got["rankgate_redis_node_command_latency_seconds"] {
		if s.value < 0 || s.value > 1 || !slices.Contains(monitor.DefaultCommands, s.labels["command"]) {
			t.Errorf("command latency %v = %v", s.labels, s.value)
		}
		if s.labels["command"] == "zscore" && s.labels["role"] == "master" {
			zscore++
		}
	}
	if zscore == 0 {
		t.Errorf("no zscore latency on any master: %v", got["rankgate_redis_node_command_latency_seconds"])
	}

	big := got["rankgate_board_key_memory_bytes"]
	slices.SortFunc(big, func(a, b series) int { return int(b.value - a.value) })
	if len(big) != 3 {
		t.Fatalf("board key memory: %d series, want 3 (TopKeys): %v", len(big), big)
	}
	for i, s := range big {
		if s.labels["key"] != keys[i] || s.value <= 0 || !slices.Contains(masters, s.labels["node"]) {
			t.Errorf("biggest key #%d: %v = %v, want key %s on a master", i+1, s.labels, s.value, keys[i])
		}
	}
	if d := got["rankgate_monitor_poll_duration_seconds"]; len(d) != 1 || d[0].value <= 0 || d[0].value > 3 {
		t.Errorf("poll duration: %v", d)
	}
	if e := got["rankgate_monitor_poll_errors_total"]; len(e) != 1 || e[0].value != 0 {
		t.Errorf("poll errors: %v", e)
	}
}

// TestPollFailingNode: one replica failing its INFO is down; the other five
// are polled as usual and the error names it.
func TestPollFailingNode(t *testing.T) {
	t.Parallel()
	probe := clusterClient(t, nil)
	_, replicas := topology(t, probe)
	bad := replicas[0]
	c := clusterClient(t, func(addr string) redis.Hook {
		if addr == bad {
			return failHook{}
		}
		return nil
	})
	reg := prometheus.NewRegistry()
	mon, err := monitor.New(c, monitor.Options{Registerer: reg})
	if err != nil {
		t.Fatal(err)
	}
	err = mon.Poll(context.Background())
	if !errors.Is(err, errInjected) || !strings.Contains(err.Error(), bad) {
		t.Fatalf("poll error = %v; want the injected failure naming %s", err, bad)
	}
	checkOneDown(t, gather(t, reg), bad, "replica")
	if lag := gather(t, reg)["rankgate_redis_replication_lag_bytes"]; len(lag) != 2 {
		t.Errorf("replication lag: %d series, want 2 (one replica down): %v", len(lag), lag)
	}
}

// TestPollBounded: a master that never answers costs the poll its timeout,
// not more, and only that node is down.
func TestPollBounded(t *testing.T) {
	t.Parallel()
	probe := clusterClient(t, nil)
	masters, _ := topology(t, probe)
	stuck := masters[1]
	c := clusterClient(t, func(addr string) redis.Hook {
		if addr == stuck {
			return failHook{block: true}
		}
		return nil
	})
	reg := prometheus.NewRegistry()
	const timeout = 500 * time.Millisecond
	mon, err := monitor.New(c, monitor.Options{Timeout: timeout, Registerer: reg, Prefix: testcluster.Prefix(t)})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	err = mon.Poll(context.Background())
	if took := time.Since(start); took > timeout+time.Second {
		t.Errorf("poll took %s with a %s timeout", took, timeout)
	}
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), stuck) {
		t.Fatalf("poll error = %v; want a deadline naming %s", err, stuck)
	}
	checkOneDown(t, gather(t, reg), stuck, "master")
}

func checkOneDown(t *testing.T, got map[string][]series, addr, role string) {
	t.Helper()
	up := got["rankgate_redis_node_up"]
	if len(up) != 6 {
		t.Fatalf("node_up: %d series, want 6: %v", len(up), up)
	}
	for _, s := range up {
		want := 1.0
		if s.labels["node"] == addr {
			want = 0
			if s.labels["role"] != role {
				t.Errorf("down node %s has role %q, want %s", addr, s.labels["role"], role)
			}
		}
		if s.value != want {
			t.Errorf("node_up%v = %v, want %v", s.labels, s.value, want)
		}
	}
	for _, s := range got["rankgate_redis_node_ops_per_second"] {
		if s.labels["node"] == addr {
			t.Errorf("down node %s still reports ops", addr)
		}
	}
	if n := len(got["rankgate_redis_node_ops_per_second"]); n != 5 {
		t.Errorf("ops: %d nodes, want the 5 that answered", n)
	}
	if e := got["rankgate_monitor_poll_errors_total"]; len(e) != 1 || e[0].value != 1 {
		t.Errorf("poll errors: %v", e)
	}
}

// TestPollStandaloneDown: a standalone node that refuses connections is
// reported down, promptly.
func TestPollStandaloneDown(t *testing.T) {
	t.Parallel()
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1", DialTimeout: 200 * time.Millisecond, MaxRetries: -1})
	t.Cleanup(func() { _ = c.Close() })
	reg := prometheus.NewRegistry()
	mon, err := monitor.New(c, monitor.Options{Registerer: reg, Timeout: time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if err := mon.Poll(context.Background()); err == nil {
		t.Fatal("poll of an unreachable node succeeded")
	}
	up := gather(t, reg)["rankgate_redis_node_up"]
	if len(up) != 1 || up[0].value != 0 || up[0].labels["node"] != "127.0.0.1:1" {
		t.Errorf("node_up = %v", up)
	}
}

// TestRun: Run polls at once and returns when its context ends.
func TestRun(t *testing.T) {
	t.Parallel()
	c := clusterClient(t, nil)
	reg := prometheus.NewRegistry()
	mon, err := monitor.New(c, monitor.Options{Registerer: reg, Interval: time.Hour})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { mon.Run(ctx); close(done) }()
	soon.Eventually(t, 10*time.Second, func() error {
		if len(gather(t, reg)["rankgate_monitor_last_poll_timestamp_seconds"]) == 0 {
			return errors.New("Run did not poll at once")
		}
		return nil
	})
	cancel()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}

func TestNewRejects(t *testing.T) {
	t.Parallel()
	if _, err := monitor.New(nil, monitor.Options{}); err == nil {
		t.Error("New(nil client) succeeded")
	}
	c := redis.NewClient(&redis.Options{Addr: "127.0.0.1:1"})
	defer c.Close()
	if _, err := monitor.New(c, monitor.Options{Timeout: -time.Second}); err == nil {
		t.Error("New with a negative timeout succeeded")
	}
	reg := prometheus.NewRegistry()
	if _, err := monitor.New(c, monitor.Options{Registerer: reg}); err != nil {
		t.Fatal(err)
	}
	if _, err := monitor.New(c, monitor.Options{Registerer: reg}); err == nil {
		t.Error("registering twice on one registry succeeded")
	}
}

//go:build faults

package faults

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/internal/config"
	"github.com/rankgate/rankgate/internal/gateway"
	"github.com/rankgate/rankgate/internal/ledger"
	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/store"
	"github.com/rankgate/rankgate/internal/testpg"
)

// The one family of the suite: sums, tie first (achievement seq from the
// period counter in Redis-only mode, from the ledger in ledger mode), a
// national board in 6 shards spread over the 3 masters and 4 province boards
// of one shard each, so every event writes two slots, often on two masters.
const (
	family        = "f"
	nationalShard = 6
	provinces     = 4
	users         = 120
)

const familiesYAML = `  f:
    aggregate: sum
    order: desc
    period: all
    tie: first
    rank: competition
    max_points: 100000000
    seq_capacity: 10000000
    cache_ttl: 1s
    dimensions:
      national: {shards: 6}
      province: {shards: 1}
`

func userName(i int) string       { return fmt.Sprintf("u%03d", i) }
func provinceOf(i int) string     { return fmt.Sprintf("p%d", i%provinces) }
func provinceDim(p string) string { return "province:" + p }

// boardDims lists every board of the family: national and the provinces.
func boardDims() []string {
	out := []string{"national"}
	for i := 0; i < provinces; i++ {
		out = append(out, provinceDim(provinceOf(i)))
	}
	return out
}

// stackOptions shape a stack.
type stackOptions struct {
	ledger       bool          // ledger mode (PostgreSQL first, then Redis)
	replicaReads bool          // a ReadOnly + RouteByLatency client for consistency=replica
	readTimeout  time.Duration // go-redis ReadTimeout (default 500 ms)
	waitReplicas int           // redis.wait_replicas (WAIT timeout: readTimeout/2, as cmd/gateway)
	pgDSN        string        // ledger mode: a PostgreSQL of the test's own (default: testpg's)
	prefix       string        // the key prefix (default: a fresh random one)
	// share: a second gateway over the same data as share (its prefix, and
	// its ledger in ledger mode).
	share *stack
	// dialer opens the Redis connections (a network namespace's); nil: TCP.
	dialer func(ctx context.Context, network, addr string) (net.Conn, error)
	// families: more families (YAML under families:) beside the suite's f.
	families string
	// logger: the gateway's logger (nil: none).
	logger *slog.Logger
}

// stack is an in-process gateway over one cluster, wired like cmd/gateway:
// scripts preloaded on every node, production client options.
type stack struct {
	cfg    *config.Config
	prefix string
	layout shard.Layout
	rw, ro redis.UniversalClient
	store  *store.Store
	svc    *gateway.Service
	reg    *prometheus.Registry
	ledger *ledger.Ledger
	dsn    string
	wait   int
}

func newStack(t *testing.T, c *cluster, o stackOptions) *stack {
	t.Helper()
	if o.readTimeout <= 0 {
		o.readTimeout = 500 * time.Millisecond
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	prefix := "fx" + hex.EncodeToString(b[:])
	if o.prefix != "" {
		prefix = o.prefix
	}
	if o.share != nil {
		prefix = o.share.prefix
	}
	y := fmt.Sprintf("listen: \"127.0.0.1:0\"\nredis:\n  addrs: [%s]\n  prefix: %q\nfamilies:\n%s",
		strings.Join(c.addrs, ", "), prefix, familiesYAML+o.families)
	cfg, err := config.Parse([]byte(y))
	if err != nil {
		t.Fatalf("config: %v\n%s", err, y)
	}
	// The client options of production: slot map reloaded
	// every second and after a dial error, context deadlines honoured.
	reload := time.Second
	if v := os.Getenv(envReloadInterval); v != "" {
		if reload, err = time.ParseDuration(v); err != nil {
			t.Fatalf("%s: %v", envReloadInterval, err)
		}
	}
	// One record of failing nodes for the clients and the store, as the
	// gateway shares it.
	health := new(store.NodeHealth)
	opts := store.ClientOptions{Addrs: c.addrs, Cluster: true, DialTimeout: time.Second, ReadTimeout: o.readTimeout,
		WriteTimeout: 500 * time.Millisecond, ReloadInterval: reload, Dialer: o.dialer, Health: health}
	rw, err := store.NewClient(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = rw.Close() })
	s := &stack{cfg: cfg, prefix: prefix, layout: shard.Layout{Prefix: prefix}, rw: rw, reg: prometheus.NewRegistry(), wait: o.waitReplicas}
	if o.replicaReads {
		ro := opts
		ro.ReadOnly = true
		if s.ro, err = store.NewClient(ro); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = s.ro.Close() })
	}
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	if err := store.Preload(ctx, rw); err != nil {
		t.Fatalf("preload: %v", err)
	}
	if s.store, err = store.New(rw, s.ro, store.Options{Timeout: o.readTimeout + 500*time.Millisecond, Registerer: s.reg,
		WaitReplicas: o.waitReplicas, WaitTimeout: o.readTimeout / 2, Health: health}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.store.Close)
	gopts := gateway.Options{Config: cfg, Backend: s.store, Registerer: s.reg, Logger: o.logger}
	if o.ledger && o.share != nil {
		s.dsn, s.ledger, gopts.Ledger = o.share.dsn, o.share.ledger, o.share.ledger
	} else if o.ledger {
		var schema string
		if o.pgDSN != "" {
			s.dsn, schema = o.pgDSN, prefix // the server is the test's and goes with it
		} else {
			s.dsn, schema = testpg.DSN(t), testpg.Schema(t)
		}
		l, err := ledger.Open(ctx, s.dsn, ledger.Options{Schema: schema, MaxConns: 8})
		if err != nil {
			t.Fatalf("ledger: %v", err)
		}
		t.Cleanup(l.Close)
		s.ledger, gopts.Ledger = l, l
	}
	if s.svc, err = gateway.New(gopts); err != nil {
		t.Fatal(err)
	}
	return s
}

func (s *stack) mode() string {
	if s.ledger != nil && s.wait > 0 {
		return fmt.Sprintf("ledger+wait%d", s.wait)
	}
	if s.ledger != nil {
		return "ledger"
	}
	if s.wait > 0 {
		return fmt.Sprintf("redis-only+wait%d", s.wait)
	}
	return "redis-only"
}

func (s *stack) ref(dim string) gateway.BoardRef {
	return gateway.BoardRef{Family: family, Period: "current", Dimension: dim}
}

// board is the shard.Board of a dimension in the family's only period.
func (s *stack) board(dim string) shard.Board {
	t, v, _ := shard.ParseDimension(dim)
	return shard.Board{Family: family, Period: "all", DimType: t, DimValue: v}
}

// shardsOf is the shard count of a dimension.
func shardsOf(dim string) int {
	if dim == "national" {
		return nationalShard
	}
	return 1
}

// keysOf returns the keys of the shard of board dim that holds member.
func (s *stack) keysOf(dim, member string) shard.Keys {
	n := shardsOf(dim)
	return s.layout.Keys(s.board(dim), shard.Of(member, n), n)
}

// slotsOfUser lists the slots an event of user i writes: its national shard
// and its province board.
func (s *stack) slotsOfUser(i int) []int {
	u := userName(i)
	return []int{shard.Slot(s.keysOf("national", u).Z), shard.Slot(s.keysOf(provinceDim(provinceOf(i)), u).Z)}
}

// boardSlots lists the slots of every shard of a board.
func (s *stack) boardSlots(dim string) []int {
	n := shardsOf(dim)
	out := make([]int, n)
	for i := range out {
		out[i] = shard.Slot(s.layout.ZKey(s.board(dim), i, n))
	}
	return out
}

// periodSlot is the slot of the family period's keys (counter, meta).
func (s *stack) periodSlot() int {
	return shard.Slot(s.layout.Period(family, "all").Meta)
}

// counter reads a counter of the stack's registry (sum over label values).
func (s *stack) counter(t *testing.T, name string) float64 {
	t.Helper()
	mfs, err := s.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var sum float64
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
		for _, m := range mf.GetMetric() {
			sum += counterValue(m)
		}
	}
	return sum
}

func counterValue(m *dto.Metric) float64 {
	if c := m.GetCounter(); c != nil {
		return c.GetValue()
	}
	return 0
}

// envReloadInterval overrides the slot-map reload interval (default 1 s,
// redis.cluster_reload_interval allows 100ms–2s), e.g. "250ms".
const envReloadInterval = "RANKGATE_FAULTS_RELOAD_INTERVAL"

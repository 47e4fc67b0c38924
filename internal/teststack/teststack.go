// Package teststack builds the gateway's whole handler stack in-process for
// tests: a store on the test Redis Cluster (under a key prefix of its own),
// the gateway service, the HTTP API with a Prometheus registry, and the
// cluster monitor registered on the same registry — the wiring of
// cmd/gateway without the process.
//
// Test support: production code must not import it.
package teststack

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/rankgate/rankgate/internal/audit"
	"github.com/rankgate/rankgate/internal/config"
	"github.com/rankgate/rankgate/internal/gateway"
	"github.com/rankgate/rankgate/internal/httpapi"
	"github.com/rankgate/rankgate/internal/live"
	"github.com/rankgate/rankgate/internal/monitor"
	"github.com/rankgate/rankgate/internal/player"
	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/store"
	"github.com/rankgate/rankgate/internal/testcluster"
)

// DefaultFamilies is the families block New uses when given none: one sum
// family with a sharded national board and a province dimension.
const DefaultFamilies = `  learning:
    source: events
    aggregate: sum
    order: desc
    period: week
    timezone: UTC
    week_start: monday
    grace: 5m
    tie: first
    rank: competition
    max_points: 8388607
    seq_capacity: 1073741824
    cache_ttl: 1s
    dimensions:
      national: {shards: 4}
      province: {shards: 1}
`

// ConfigYAML is a gateway config for tests on the test cluster: listen on
// any loopback port, the cluster's seeds, the key prefix, tight timeouts,
// generous limits, and families (the YAML block indented under "families:").
func ConfigYAML(addrs []string, prefix, families string) []byte {
	quoted := make([]string, len(addrs))
	for i, a := range addrs {
		quoted[i] = strconv.Quote(a)
	}
	return fmt.Appendf(nil, configTemplate, strings.Join(quoted, ", "), strconv.Quote(prefix), families)
}

const configTemplate = `listen: "127.0.0.1:0"
redis:
  addrs: [%s]
  prefix: %s
  dial_timeout: 2s
  read_timeout: 1s
  write_timeout: 1s
  cluster_reload_interval: 1s
limits:
  max_top: 1000
  max_offset: 10000
  max_radius: 100
  max_batch: 1000
  max_lookup: 1000
families:
%s`

// Stack is one in-process gateway.
type Stack struct {
	Config   *config.Config
	Prefix   string
	Store    *store.Store
	Service  *gateway.Service
	Handler  http.Handler
	Registry *prometheus.Registry
	Monitor  *monitor.Monitor
	// Live is the hub behind GET {board}/live.
	Live *live.Hub
	// Audit is the audit log the API records in and lists.
	Audit *audit.Log
}

// Options shape a Stack; the zero value is DefaultFamilies on the real store.
type Options struct {
	// Families is the YAML families block, indented under "families:".
	Families string
	// WrapBackend, when set, wraps the store as the gateway sees it (to
	// inject a failing shard, say).
	WrapBackend func(gateway.Backend) gateway.Backend
	// TracerProvider, when set, traces the Redis client and the HTTP API
	// as cmd/gateway does with tracing on.
	TracerProvider trace.TracerProvider
	// Ledger, when set, runs the gateway in ledger mode on it.
	Ledger gateway.Ledger
	// Live overrides the live hub's bounds (zero fields: the config's).
	Live Live
	// Tokens, when set, guard the /v1 routes (httpapi.NewAuth), with
	// tickets accepted on the live route.
	Tokens []httpapi.Token
	// CORS, when it lists origins, lets browsers on them call the /v1
	// routes (server.cors).
	CORS httpapi.CORSOptions
	// JWT, when it has keys, accepts player tokens (auth.jwt), and player
	// events go through the rules of the families' client_writes, counted
	// in Redis as cmd/gateway does.
	JWT player.Options
	// Audit, when set, stores the audit log (the ledger's, say); nil: the
	// capped stream under the stack's prefix, as in Redis-only mode.
	Audit audit.Backend
	// AuditSecret is the key of the erased members' hash (nil: none).
	AuditSecret []byte
	// Prefix, when set, is the key prefix instead of a fresh one: two
	// Stacks with one prefix are two gateways on the same data (the first
	// one's cleanup removes it).
	Prefix string
}

// Live overrides the config's live bounds, so tests can use intervals
// below what the config accepts.
type Live struct {
	MaxSubscribers, MaxPerToken        int
	Heartbeat, WriteTimeout, MaxBehind time.Duration
}

// New builds a Stack on the test cluster. It skips the test when there is no
// cluster (fails it when CI=true), like testcluster.
func New(tb testing.TB, o Options) *Stack {
	tb.Helper()
	families := o.Families
	if families == "" {
		families = DefaultFamilies
	}
	addrs := testcluster.Addrs(tb)
	prefix := o.Prefix
	if prefix == "" {
		prefix = testcluster.Prefix(tb)
	}
	cfg, err := config.Parse(ConfigYAML(addrs, prefix, families))
	if err != nil {
		tb.Fatalf("teststack: config: %v", err)
	}
	health := new(store.NodeHealth) // the client's and the store's, as the gateway shares it
	c, err := store.NewClient(store.ClientOptions{Addrs: addrs, Cluster: true, DialTimeout: 2 * time.Second,
		ReadTimeout: 2 * time.Second, WriteTimeout: 2 * time.Second, ReloadInterval: time.Second,
		TracerProvider: o.TracerProvider, Health: health})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { _ = c.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := store.Preload(ctx, c); err != nil {
		tb.Fatalf("teststack: preload: %v", err)
	}
	reg := prometheus.NewRegistry()
	st, err := store.New(c, nil, store.Options{Timeout: 3 * time.Second, Registerer: reg, TracerProvider: o.TracerProvider, Health: health})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(st.Close)
	if err := st.ConnectReaders(ctx); err != nil { // as the gateway does at start
		tb.Fatalf("teststack: read transport: %v", err)
	}
	var be gateway.Backend = st
	if o.WrapBackend != nil {
		be = o.WrapBackend(st)
	}
	svc, err := gateway.New(gateway.Options{Config: cfg, Backend: be, Registerer: reg, Ledger: o.Ledger})
	if err != nil {
		tb.Fatal(err)
	}
	lv := cfg.Live
	or := func(v, d int) int {
		if v != 0 {
			return v
		}
		return d
	}
	ord := func(v, d time.Duration) time.Duration {
		if v != 0 {
			return v
		}
		return d
	}
	hub, err := live.New(live.Options{Reads: svc, Registerer: reg,
		Interval: func(f string) time.Duration {
			if fam, ok := cfg.Families[f]; ok {
				return fam.Live.Interval
			}
			return 0
		},
		MaxSubscribers: or(o.Live.MaxSubscribers, lv.MaxSubscribers), MaxPerToken: or(o.Live.MaxPerToken, lv.MaxPerToken),
		MaxBehind: ord(o.Live.MaxBehind, lv.MaxBehind)})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(hub.Close)
	var auth func(http.Handler) http.Handler
	var tickets *httpapi.Tickets
	var players httpapi.PlayerWrites
	var verifier httpapi.JWTVerifier
	if len(o.JWT.Keys) > 0 {
		v, err := player.NewVerifier(o.JWT, reg)
		if err != nil {
			tb.Fatal(err)
		}
		verifier = v
		g, err := player.NewGate(func(family string) (player.ClientWrites, bool) {
			f, ok := cfg.Family(family)
			if !ok || f.ClientWrites == nil {
				return player.ClientWrites{}, false
			}
			return player.ClientWrites{MaxDelta: f.ClientWrites.MaxDelta, MaxEventsPerMinute: f.ClientWrites.MaxEventsPerMinute}, true
		}, st, shard.Layout{Prefix: prefix})
		if err != nil {
			tb.Fatal(err)
		}
		players = g
	}
	if len(o.Tokens) > 0 || verifier != nil {
		if tickets, err = httpapi.NewTickets(httpapi.TicketOptions{Registerer: reg}); err != nil {
			tb.Fatal(err)
		}
		a, err := httpapi.NewAuth(httpapi.AuthOptions{Tokens: o.Tokens, Registerer: reg, Tickets: tickets, JWT: verifier})
		if err != nil {
			tb.Fatal(err)
		}
		auth = a.Wrap
	}
	auditBE := o.Audit
	if auditBE == nil {
		auditBE = st.AuditStream(shard.Layout{Prefix: prefix}.Audit(), cfg.Audit.MaxEntries)
	}
	auditLog, err := audit.New(auditBE, audit.Options{Registerer: reg, Secret: o.AuditSecret})
	if err != nil {
		tb.Fatal(err)
	}
	h, err := httpapi.New(svc, httpapi.Options{Registerer: reg, Gatherer: reg, Families: httpapi.ConfigFamilies(cfg),
		TracerProvider: o.TracerProvider, Auth: auth, Tickets: tickets, CORS: o.CORS, Players: players, Audit: auditLog,
		Live: httpapi.LiveOptions{Hub: hub, Heartbeat: ord(o.Live.Heartbeat, lv.Heartbeat),
			WriteTimeout: ord(o.Live.WriteTimeout, lv.WriteTimeout), MaxBehind: ord(o.Live.MaxBehind, lv.MaxBehind)}})
	if err != nil {
		tb.Fatal(err)
	}
	mon, err := monitor.New(st.Primary(), monitor.Options{Prefix: prefix, Registerer: reg})
	if err != nil {
		tb.Fatal(err)
	}
	if svc.HasLifecycle() {
		// As cmd/gateway does in Redis-only mode: a Redis lease picks the runner.
		sc, err := svc.NewScheduler(gateway.SchedulerOptions{Registerer: reg,
			Lease: st.NewLease(shard.Layout{Prefix: prefix}.Lease("lifecycle"), "teststack", 10*time.Second)})
		if err != nil {
			tb.Fatal(err)
		}
		sctx, stop := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { defer close(done); sc.Run(sctx) }()
		tb.Cleanup(func() { stop(); <-done })
	}
	return &Stack{Config: cfg, Prefix: prefix, Store: st, Service: svc, Handler: h, Registry: reg, Monitor: mon, Live: hub, Audit: auditLog}
}

// Command gateway runs rankgate: a cluster-aware ranking gateway in front of
// Redis Cluster. main only wires: config, clients, service, server, signals.
//
// It may import every internal package (it wires them) but holds no logic of
// its own; nothing imports it.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/redis/go-redis/v9"
	"go.opentelemetry.io/otel/trace"

	"github.com/rankgate/rankgate/internal/config"
	"github.com/rankgate/rankgate/internal/gateway"
	"github.com/rankgate/rankgate/internal/httpapi"
	"github.com/rankgate/rankgate/internal/live"
	"github.com/rankgate/rankgate/internal/player"
	"github.com/rankgate/rankgate/internal/store"
	"github.com/rankgate/rankgate/internal/telemetry"
)

// version is the gateway's version, set at build time
// (-ldflags "-X main.version=…"); traces carry it as service.version.
var version = "dev"

func main() {
	if err := run(context.Background(), os.Args[1:], os.Getenv, os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "gateway:", err)
		os.Exit(1)
	}
}

// run is main without the process: tests start the real program with it.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	return runAt(ctx, time.Now, args, getenv, stdout, stderr)
}

// runAt is run with the clock of the service that serve starts (the period
// of an event, cache ages, snapshot expiry): the end-to-end tests move it off
// a week change.
func runAt(ctx context.Context, now func() time.Time, args []string, getenv func(string) string, stdout, stderr io.Writer) error {
	cmd := "serve"
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		cmd, args = args[0], args[1:]
	}
	switch cmd {
	case "serve":
		return serve(ctx, now, args, getenv, stderr)
	case "layout":
		return layoutCmd(ctx, args, getenv, stdout, stderr)
	case "plan":
		return planCmd(ctx, args, getenv, stdout, stderr)
	case "healthcheck":
		return healthcheckCmd(ctx, args, getenv, stdout, stderr)
	default:
		return fmt.Errorf("unknown command %q (want serve, layout, plan or healthcheck)", cmd)
	}
}

// flags are the command-line settings shared by the subcommands.
type flags struct {
	config     string
	listen     string
	redisAddrs string
	logLevel   string
	logFormat  string
	ready      string
}

// parseFlags parses the flags every subcommand takes, plus those that own
// (when given) registers on the same FlagSet, then loads and validates the
// config.
func parseFlags(name string, args []string, getenv func(string) string, stderr io.Writer, own ...func(*flag.FlagSet)) (*flags, *config.Config, *slog.Logger, error) {
	fs := flag.NewFlagSet(name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	for _, register := range own {
		register(fs)
	}
	f := &flags{}
	fs.StringVar(&f.config, "config", getenv("RANKGATE_CONFIG"), "path of the YAML config file (env RANKGATE_CONFIG)")
	fs.StringVar(&f.listen, "listen", "", "listen address, overrides config and RANKGATE_LISTEN")
	fs.StringVar(&f.redisAddrs, "redis-addrs", "", "comma-separated Redis seeds, overrides config and RANKGATE_REDIS_ADDRS")
	fs.StringVar(&f.logLevel, "log-level", envOr(getenv, "RANKGATE_LOG_LEVEL", "info"), "debug (adds a line per applied write), info, warn or error")
	fs.StringVar(&f.logFormat, "log-format", envOr(getenv, "RANKGATE_LOG_FORMAT", "json"), "json or text")
	fs.StringVar(&f.ready, "ready-file", "", "write the bound address to this file once serving (for tests and scripts)")
	if err := fs.Parse(args); err != nil {
		return nil, nil, nil, err
	}
	log, err := newLogger(f.logLevel, f.logFormat, stderr)
	if err != nil {
		return nil, nil, nil, err
	}
	if f.config == "" {
		return nil, nil, nil, errors.New("-config FILE is required (or RANKGATE_CONFIG)")
	}
	cfg, err := config.Load(f.config)
	if err != nil {
		return nil, nil, nil, err
	}
	cfg.ApplyEnv(getenv)
	if f.listen != "" {
		cfg.Listen = f.listen
	}
	if f.redisAddrs != "" {
		cfg.Redis.Addrs = strings.Split(f.redisAddrs, ",")
	}
	if err := cfg.Validate(); err != nil {
		return nil, nil, nil, err
	}
	return f, cfg, log, nil
}

func envOr(getenv func(string) string, k, def string) string {
	if v := getenv(k); v != "" {
		return v
	}
	return def
}

func newLogger(level, format string, w io.Writer) (*slog.Logger, error) {
	var l slog.Level
	if err := l.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("-log-level: %w", err)
	}
	opts := &slog.HandlerOptions{Level: l}
	switch format {
	case "json":
		return slog.New(slog.NewJSONHandler(w, opts)), nil
	case "text":
		return slog.New(slog.NewTextHandler(w, opts)), nil
	}
	return nil, fmt.Errorf("-log-format must be json or text, not %q", format)
}

// redisClient builds a client from config: the masters' client, or with
// readOnly a replica-reading one (ReadOnly + RouteByLatency), which is built
// only once the masters' client turned out to be a cluster client, so it
// need not ask a single seed again. health (nil: the client's own) is where
// its node clients record which node failed just now: the store's too.
func redisClient(cfg *config.Config, getenv func(string) string, log *slog.Logger, readOnly bool, tp trace.TracerProvider, health *store.NodeHealth) (redis.UniversalClient, error) {
	tlsCfg, err := tlsConfig(cfg, log)
	if err != nil {
		return nil, err
	}
	return store.NewClient(store.ClientOptions{
		Addrs: cfg.Redis.Addrs, Username: cfg.Redis.Username, Password: cfg.Redis.Password(getenv),
		TLS: tlsCfg, DialTimeout: cfg.Redis.DialTimeout, ReadTimeout: cfg.Redis.ReadTimeout,
		WriteTimeout: cfg.Redis.WriteTimeout, PoolSize: cfg.Redis.PoolSize,
		ReloadInterval: cfg.Redis.ClusterReloadInterval, Logger: log,
		ReadOnly: readOnly, Cluster: readOnly, TracerProvider: tp, Health: health,
	})
}

// openStore connects to Redis, preloads the scripts on every node and builds
// the store (with a replica-reading client when redis.replica_reads is on and
// Redis is a cluster).
func openStore(ctx context.Context, cfg *config.Config, getenv func(string) string, log *slog.Logger, reg prometheus.Registerer, tp trace.TracerProvider) (*store.Store, func(), error) {
	// One record of failing nodes for both clients and the store: a node
	// the rueidis read transport (or either client) saw time out is not
	// asked for the slot map in the next second's reloads.
	health := new(store.NodeHealth)
	rw, err := dialRedis(ctx, cfg, getenv, log, tp, health)
	if err != nil {
		return nil, nil, err
	}
	closers := []func() error{rw.Close}
	closeAll := func() {
		for _, c := range closers {
			_ = c()
		}
	}
	var ro redis.UniversalClient
	if _, cluster := rw.(*redis.ClusterClient); cfg.Redis.ReplicaReads && cluster {
		if ro, err = redisClient(cfg, getenv, log, true, tp, health); err != nil {
			closeAll()
			return nil, nil, err
		}
		closers = append(closers, ro.Close)
	}
	st, err := store.New(rw, ro, store.Options{Timeout: cfg.Redis.ReadTimeout + cfg.Redis.WriteTimeout, Logger: log, Registerer: reg,
		// WAIT must answer within the node batch's ReadTimeout: half of it.
		WaitReplicas: cfg.Redis.WaitReplicas, WaitTimeout: cfg.Redis.ReadTimeout / 2,
		ReadTransport: cfg.Redis.ReadTransport, TracerProvider: tp, Health: health})
	if err != nil {
		closeAll()
		return nil, nil, err
	}
	// The store's own connections (the rueidis read transport) first.
	closers = append([]func() error{func() error { st.Close(); return nil }}, closers...)
	// Dial the read transport's clients now, so the first reads already
	// take it; if one fails, its master's reads go through go-redis and the
	// dial is retried.
	cctx, cancel := context.WithTimeout(ctx, cfg.Redis.DialTimeout+cfg.Redis.ReadTimeout)
	defer cancel()
	if err := st.ConnectReaders(cctx); err != nil {
		log.Warn("redis: read transport not connected; reads go through go-redis until it is", "transport", cfg.Redis.ReadTransport, "err", err)
	}
	return st, closeAll, nil
}

// dialRedis builds the masters' client and loads the scripts on every node,
// retrying both for a bounded time while Redis comes up (building the client
// already talks to Redis when redis.addrs holds a single node).
func dialRedis(ctx context.Context, cfg *config.Config, getenv func(string) string, log *slog.Logger, tp trace.TracerProvider, health *store.NodeHealth) (redis.UniversalClient, error) {
	deadline := time.Now().Add(15 * time.Second)
	for {
		c, err := redisClient(cfg, getenv, log, false, tp, health)
		if err == nil {
			pctx, cancel := context.WithTimeout(ctx, 5*time.Second)
			err = store.Preload(pctx, c)
			cancel()
			if err == nil {
				return c, nil
			}
			_ = c.Close()
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return nil, fmt.Errorf("redis not ready: %w", err)
		}
		log.Warn("waiting for redis", "err", err)
		select {
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// newAuth builds the bearer-token check from auth.tokens, reading each token
// from its env var (an empty one stops the start, naming its key). No tokens:
// nil, the API is open, which config validation allows on loopback only.
// It also accepts the tickets of POST /v1/tickets on the live routes.
func newAuth(cfg *config.Config, getenv func(string) string, log *slog.Logger, reg prometheus.Registerer, tickets *httpapi.Tickets, verifier *player.Verifier) (func(http.Handler) http.Handler, error) {
	if len(cfg.Auth.Tokens) == 0 && verifier == nil {
		if !cfg.ListenIsLoopback() {
			return nil, fmt.Errorf("auth.tokens: required: listen %q is not loopback-only", cfg.Listen)
		}
		return nil, nil
	}
	secrets, err := cfg.Auth.Secrets(getenv)
	if err != nil {
		return nil, err
	}
	tokens := make([]httpapi.Token, len(cfg.Auth.Tokens))
	for i, t := range cfg.Auth.Tokens {
		tokens[i] = httpapi.Token{Name: t.TokenEnv, Secret: secrets[i], Scopes: t.Scopes, RatePerSecond: t.RatePerSecond, Burst: t.Burst}
	}
	opts := httpapi.AuthOptions{Tokens: tokens, Logger: log, Registerer: reg, Tickets: tickets}
	if verifier != nil {
		opts.JWT = verifier
	}
	a, err := httpapi.NewAuth(opts)
	if err != nil {
		return nil, err
	}
	return a.Wrap, nil
}

func serve(ctx context.Context, now func() time.Time, args []string, getenv func(string) string, stderr io.Writer) error {
	var pprofAddr string
	f, cfg, log, err := parseFlags("serve", args, getenv, stderr, func(fs *flag.FlagSet) {
		fs.StringVar(&pprofAddr, "pprof", getenv("RANKGATE_PPROF_ADDR"), "serve net/http/pprof on this address, apart from the API (e.g. 127.0.0.1:6060; env RANKGATE_PPROF_ADDR; off when empty)")
	})
	if err != nil {
		return err
	}
	ctx, stop := signal.NotifyContext(ctx, os.Interrupt, syscall.SIGTERM)
	defer stop()
	stopGCFloor := startGCFloor(ctx, uint64(cfg.Server.GCMinHeapMiB)<<20, getenv("GOGC"), log)
	defer stopGCFloor()

	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	tickets, err := httpapi.NewTickets(httpapi.TicketOptions{TTL: cfg.Auth.Tickets.TTL, MaxPerToken: cfg.Live.MaxPerToken, Now: now, Registerer: reg})
	if err != nil {
		return err
	}
	verifier, err := newVerifier(cfg, getenv, now, reg)
	if err != nil {
		return err
	}
	auth, err := newAuth(cfg, getenv, log, reg, tickets, verifier)
	if err != nil {
		return err
	}
	if verifier != nil {
		go reloadKeys(ctx, verifier, f.config, getenv, now, cfg.Auth.JWT.ReloadInterval, log)
	}

	tr, tp, flushSpans, err := startTracing(ctx, cfg, getenv, log)
	if err != nil {
		return err
	}
	defer flushSpans()

	st, closeStore, err := openStore(ctx, cfg, getenv, log, reg, tp)
	if err != nil {
		return err
	}
	defer closeStore()
	players, err := newPlayerGate(cfg, st)
	if err != nil {
		return err
	}
	led, closeLedger, err := openLedger(ctx, cfg, getenv, log, reg, tp)
	if err != nil {
		return err
	}
	defer closeLedger()
	auditLog, err := newAuditLog(cfg, st, led, getenv, log, reg, now)
	if err != nil {
		return err
	}
	svc, err := gateway.New(gateway.Options{Config: cfg, Backend: st, Logger: log, Registerer: reg, Ledger: led, Now: now,
		CacheServeStale: true})
	if err != nil {
		return err
	}
	go svc.RunProjector(ctx, 2*time.Second)
	// The read index (families with index.enabled): loads the current
	// period's national boards now, other boards at their first read, and
	// follows their change feeds until ctx ends.
	go svc.RunIndex(ctx)
	var tasks []gateway.Task
	deliver, err := newDeliverer(cfg, led, getenv, log, reg)
	if err != nil {
		return err
	}
	if deliver != nil {
		tasks = append(tasks, deliver)
	}
	stopScheduler, err := startScheduler(ctx, svc, st, led, cfg, log, reg, tasks)
	if err != nil {
		return err
	}
	defer stopScheduler()
	stopMonitor, err := startMonitor(ctx, st.Primary(), cfg, log, reg)
	if err != nil {
		return err
	}
	defer stopMonitor()
	// Live boards: one computation per board and query shape per interval,
	// shared by every stream; closed (every stream told to reconnect) when
	// the server shuts down.
	hub, err := live.New(live.Options{Reads: svc, Logger: log, Registerer: reg,
		Interval:       func(family string) time.Duration { return liveInterval(cfg, family) },
		MaxSubscribers: cfg.Live.MaxSubscribers, MaxPerToken: cfg.Live.MaxPerToken, MaxBehind: cfg.Live.MaxBehind,
		ReadTimeout: cfg.Server.RequestTimeout, Now: now})
	if err != nil {
		return err
	}
	defer hub.Close()
	h, err := httpapi.New(svc, httpapi.Options{Logger: log, Registerer: reg, Gatherer: reg, Auth: auth,
		MaxInflight: cfg.Server.MaxInflight, RequestTimeout: cfg.Server.RequestTimeout,
		Families: httpapi.ConfigFamilies(cfg), TracerProvider: tp, Propagator: tr.Propagator,
		CORS:    httpapi.CORSOptions{AllowedOrigins: cfg.Server.CORS.AllowedOrigins, MaxAge: cfg.Server.CORS.MaxAge},
		Tickets: tickets, Players: players, Audit: auditLog,
		Live: httpapi.LiveOptions{Hub: hub, Heartbeat: cfg.Live.Heartbeat, WriteTimeout: cfg.Live.WriteTimeout,
			MaxBehind: cfg.Live.MaxBehind}})
	if err != nil {
		return err
	}
	if pprofAddr != "" {
		_, stopPprof, err := servePprof(pprofAddr, log)
		if err != nil {
			return err
		}
		defer stopPprof()
	}
	ln, err := net.Listen("tcp", cfg.Listen)
	if err != nil {
		return err
	}
	srv := &http.Server{
		Handler: h, ReadHeaderTimeout: cfg.Server.ReadHeaderTimeout, ReadTimeout: cfg.Server.ReadTimeout,
		WriteTimeout: cfg.Server.WriteTimeout, IdleTimeout: cfg.Server.IdleTimeout,
		ErrorLog: slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	// At shutdown every live stream gets "event: reconnect" and ends, so
	// Shutdown does not wait on streams that would never finish.
	srv.RegisterOnShutdown(hub.Close)
	mode := svc.Mode()
	log.Info("rankgate serving", "addr", ln.Addr().String(), "redis", cfg.Redis.Addrs, "families", cfg.FamilyNames, "mode", mode,
		"auth_tokens", len(cfg.Auth.Tokens), "auth_jwt", verifier != nil)
	if f.ready != "" {
		if err := os.WriteFile(f.ready, []byte(ln.Addr().String()), 0o644); err != nil {
			ln.Close()
			return err
		}
	}
	if err := serveUntilDone(ctx, srv, ln, log); err != nil {
		return err
	}
	// Streams that took their connections over are not the server's to
	// wait for: Shutdown closed the hub (each stream gets "reconnect");
	// wait until they have written it.
	hub.Close()
	dctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := hub.Drain(dctx); err != nil {
		log.Warn("shutdown: live streams still open after 5s", "open", hub.Subscribers())
	}
	return nil
}

// startTracing sets up OpenTelemetry as the config and the OTEL_* variables
// say; tp is nil (nothing instrumented) when tracing is off. flush sends the
// spans still buffered, bounded to 5 s.
func startTracing(ctx context.Context, cfg *config.Config, getenv func(string) string, log *slog.Logger) (telemetry.Tracing, trace.TracerProvider, func(), error) {
	tr, err := telemetry.Setup(ctx, cfg.Tracing.Enabled, version, getenv)
	if err != nil {
		return telemetry.Tracing{}, nil, nil, err
	}
	flush := func() {
		sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if err := tr.Shutdown(sctx); err != nil {
			log.Warn("tracing: flushing spans at shutdown", "err", err)
		}
	}
	var tp trace.TracerProvider
	if tr.Enabled {
		tp = tr.Provider
		log.Info("tracing on: OTLP/HTTP export as the OTEL_* variables say")
	}
	return tr, tp, flush, nil
}

// serveUntilDone serves on ln until the server fails or ctx ends (a signal),
// then shuts down gracefully: in-flight requests get up to 20 s.
func serveUntilDone(ctx context.Context, srv *http.Server, ln net.Listener, log *slog.Logger) error {
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	log.Info("shutting down: finishing in-flight requests")
	sctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	if err := <-errc; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	log.Info("stopped")
	return nil
}

// liveInterval is a family's live.interval (1s for a family the config does
// not know: the read answers it with its own error).
func liveInterval(cfg *config.Config, family string) time.Duration {
	if f, ok := cfg.Families[family]; ok {
		return f.Live.Interval
	}
	return time.Second
}

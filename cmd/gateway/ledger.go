package main

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"go.opentelemetry.io/otel/trace"

	"github.com/rankgate/rankgate/internal/config"
	"github.com/rankgate/rankgate/internal/gateway"
	"github.com/rankgate/rankgate/internal/ledger"
)

// openLedger opens the PostgreSQL ledger when ledger.dsn_env names a set env
// var (ledger mode), and returns nil in Redis-only mode.
func openLedger(ctx context.Context, cfg *config.Config, getenv func(string) string, log *slog.Logger, reg prometheus.Registerer, tp trace.TracerProvider) (gateway.Ledger, func(), error) {
	if cfg.Ledger.DSNEnv == "" {
		log.Info("no ledger configured: Redis-only mode (dedupe per event in-slot; settlement, archive, rebuild, reconcile and corrections need the ledger)")
		return nil, func() {}, nil
	}
	dsn := cfg.Ledger.DSN(getenv)
	if dsn == "" {
		return nil, nil, fmt.Errorf("ledger.dsn_env: env var %s is empty", cfg.Ledger.DSNEnv)
	}
	octx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	l, err := ledger.Open(octx, dsn, ledger.Options{Logger: log, Registerer: reg, TracerProvider: tp})
	if err != nil {
		return nil, nil, fmt.Errorf("ledger: %w", err)
	}
	log.Info("ledger mode: events are committed to PostgreSQL, then projected into Redis")
	return l, l.Close, nil
}

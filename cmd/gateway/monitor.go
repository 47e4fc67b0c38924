package main

import (
	"context"
	"log/slog"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/internal/config"
	"github.com/rankgate/rankgate/internal/monitor"
)

// startMonitor starts the cluster monitor on c (the primary client) in the
// background, polling every 10 s off the request path; stop ends it and waits
// for it to return.
func startMonitor(ctx context.Context, c redis.UniversalClient, cfg *config.Config, log *slog.Logger, reg prometheus.Registerer) (stop func(), err error) {
	mon, err := monitor.New(c, monitor.Options{Prefix: cfg.Redis.Prefix, Logger: log, Registerer: reg})
	if err != nil {
		return nil, err
	}
	return inBackground(ctx, mon.Run), nil
}

// inBackground runs run(ctx) on a goroutine of its own; stop cancels its
// context and waits for it to return (the monitor and the lifecycle scheduler).
func inBackground(ctx context.Context, run func(context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		run(ctx)
	}()
	return func() { cancel(); <-done }
}

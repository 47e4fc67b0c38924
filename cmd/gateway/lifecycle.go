package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rankgate/rankgate/internal/awards"
	"github.com/rankgate/rankgate/internal/config"
	"github.com/rankgate/rankgate/internal/gateway"
	"github.com/rankgate/rankgate/internal/ledger"
	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/store"
)

// redisLeaseTTL is how long a Redis-only gateway's claim on the lifecycle
// lease lives without renewal (it renews on every scheduler tick, 500ms):
// a crashed holder is replaced within it.
const redisLeaseTTL = 10 * time.Second

// startScheduler runs the lifecycle scheduler when a family has `lifecycle`
// or there are tasks (award delivery):
// one gateway at a time, by a PostgreSQL advisory lock in ledger mode and a
// Redis lease with a fencing token otherwise. stop ends it and gives the
// lease up.
func startScheduler(ctx context.Context, svc *gateway.Service, st *store.Store, led gateway.Ledger, cfg *config.Config,
	log *slog.Logger, reg prometheus.Registerer, tasks []gateway.Task) (stop func(), err error) {
	if !svc.HasLifecycle() && len(tasks) == 0 {
		return func() {}, nil
	}
	owner := ownerID()
	var lease gateway.Lease
	if l, ok := led.(*ledger.Ledger); ok && l != nil {
		lease = l.NewLease("lifecycle", owner)
	} else {
		lease = st.NewLease(shard.Layout{Prefix: cfg.Redis.Prefix}.Lease("lifecycle"), owner, redisLeaseTTL)
	}
	sc, err := svc.NewScheduler(gateway.SchedulerOptions{Lease: lease, Registerer: reg, Tasks: tasks})
	if err != nil {
		return nil, err
	}
	stop = inBackground(ctx, sc.Run)
	log.Info("lifecycle scheduler started (it runs steps while this gateway holds the lease)", "owner", owner, "mode", svc.Mode())
	return stop, nil
}

// ownerID names this process in lease records: host, pid and a random part.
func ownerID() string {
	host, _ := os.Hostname()
	if host == "" {
		host = "gateway"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}

// minSecret is the shortest webhook signing secret accepted.
const minSecret = 16

// newDeliverer builds the award delivery task in ledger mode when
// awards.webhook.url_env is set (nil: pull only, or Redis-only mode).
func newDeliverer(cfg *config.Config, led gateway.Ledger, getenv func(string) string, log *slog.Logger, reg prometheus.Registerer) (gateway.Task, error) {
	w := cfg.Awards.Webhook
	if w.URLEnv == "" {
		return nil, nil
	}
	l, ok := led.(*ledger.Ledger)
	if !ok || l == nil {
		log.Warn("awards.webhook is ignored in Redis-only mode: awards come from settlements, which need the ledger")
		return nil, nil
	}
	raw := w.URL(getenv)
	if raw == "" {
		return nil, fmt.Errorf("awards.webhook.url_env: env var %s is empty; it must hold the receiver URL", w.URLEnv)
	}
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("awards.webhook.url_env: the value of %s is not an http(s) URL", w.URLEnv)
	}
	secret := w.Secret(getenv)
	if len(secret) < minSecret {
		return nil, fmt.Errorf("awards.webhook.secret_env: env var %s must hold a secret of at least %d bytes", w.SecretEnv, minSecret)
	}
	d, err := awards.New(l, awards.Options{URL: raw, Secret: []byte(secret), Timeout: w.Timeout, MaxAttempts: w.MaxAttempts,
		Logger: log, Registerer: reg})
	if err != nil {
		return nil, err
	}
	log.Info("awards are delivered to the webhook", "host", u.Host, "max_attempts", w.MaxAttempts)
	return d.Pump, nil
}

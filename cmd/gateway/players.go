package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"syscall"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rankgate/rankgate/internal/config"
	"github.com/rankgate/rankgate/internal/player"
	"github.com/rankgate/rankgate/internal/shard"
)

// jwtOptions turns auth.jwt into the verifier's options, reading each HS256
// secret from its env var: an unset or empty one is an error naming its key
// (the message never holds the value); a short one the verifier refuses.
func jwtOptions(j *config.JWT, getenv func(string) string, now func() time.Time) (player.Options, error) {
	o := player.Options{Issuer: j.Issuer, Audience: j.Audience, MemberClaim: j.MemberClaim, ClockSkew: j.ClockSkew, Now: now}
	var errs []error
	for i, k := range j.Keys {
		pk := player.Key{Kid: k.Kid, Alg: k.Alg, PublicKeyFile: k.PublicKeyFile}
		if k.Alg == config.AlgHS256 {
			sec := k.Secret(getenv)
			if sec == "" {
				errs = append(errs, fmt.Errorf("auth.jwt.keys[%d].secret_env: environment variable %s is empty or unset; it must hold the HS256 secret", i, k.SecretEnv))
				continue
			}
			pk.Secret = []byte(sec) // its length is the verifier's check (player.MinSecretBytes)
		}
		o.Keys = append(o.Keys, pk)
	}
	return o, errors.Join(errs...)
}

// newVerifier builds the JWT verifier of auth.jwt; nil without auth.jwt.
func newVerifier(cfg *config.Config, getenv func(string) string, now func() time.Time, reg prometheus.Registerer) (*player.Verifier, error) {
	if cfg.Auth.JWT == nil {
		return nil, nil
	}
	o, err := jwtOptions(cfg.Auth.JWT, getenv, now)
	if err != nil {
		return nil, err
	}
	return player.NewVerifier(o, reg)
}

// newPlayerGate builds the rules of self-only writes over the families'
// client_writes and the store's per-member counter.
func newPlayerGate(cfg *config.Config, rate player.RateCounter) (*player.Gate, error) {
	return player.NewGate(func(family string) (player.ClientWrites, bool) {
		f, ok := cfg.Family(family)
		if !ok || f.ClientWrites == nil {
			return player.ClientWrites{}, false
		}
		return player.ClientWrites{MaxDelta: f.ClientWrites.MaxDelta, MaxEventsPerMinute: f.ClientWrites.MaxEventsPerMinute}, true
	}, rate, shard.Layout{Prefix: cfg.Redis.Prefix})
}

// reloadKeys keeps the JWT keys current until ctx ends: on SIGHUP it reads
// the config file again and takes its auth.jwt (new keys, issuer, audience;
// every public key file re-read); every reload_interval it re-reads the key
// files when one changed. A failed reload logs and keeps the keys in use.
func reloadKeys(ctx context.Context, v *player.Verifier, configPath string, getenv func(string) string, now func() time.Time, every time.Duration, log *slog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	var tick <-chan time.Time
	if every > 0 {
		t := time.NewTicker(every)
		defer t.Stop()
		tick = t.C
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			if err := reloadFromConfig(v, configPath, getenv, now); err != nil {
				log.Error("jwt keys: reload on SIGHUP failed; the keys in use stay", "err", err)
				continue
			}
			log.Info("jwt keys: reloaded on SIGHUP")
		case <-tick:
			if !v.FilesChanged() {
				continue
			}
			if err := v.Reload(); err != nil {
				log.Error("jwt keys: a key file changed but does not load; the keys in use stay", "err", err)
				continue
			}
			log.Info("jwt keys: reloaded after a key file changed")
		}
	}
}

// reloadFromConfig reads the config file again and gives its auth.jwt to v.
func reloadFromConfig(v *player.Verifier, path string, getenv func(string) string, now func() time.Time) error {
	cfg, err := config.Load(path)
	if err != nil {
		return err
	}
	cfg.ApplyEnv(getenv)
	if err := cfg.Validate(); err != nil {
		return err
	}
	if cfg.Auth.JWT == nil {
		return errors.New("auth.jwt is gone from the config; removing it needs a restart")
	}
	o, err := jwtOptions(cfg.Auth.JWT, getenv, now)
	if err != nil {
		return err
	}
	return v.Update(o)
}

package main

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/rankgate/rankgate/internal/config"
	"github.com/rankgate/rankgate/internal/soon"
)

const jwtConfig = `redis:
  addrs: ["127.0.0.1:7000"]
auth:
  jwt:
    audience: rankgate
    keys:
%s
families:
  f:
    dimensions:
      national: {shards: 1}
`

// Rotation without a restart: SIGHUP reads the config file again and the
// verifier takes its keys; a broken file changes nothing.
func TestJWTKeysReloadOnSIGHUP(t *testing.T) {
	env := map[string]string{"S1": strings.Repeat("a", 32), "S2": strings.Repeat("b", 40)}
	getenv := func(k string) string { return env[k] }
	path := filepath.Join(t.TempDir(), "rankgate.yaml")
	writeConfig := func(keys string) {
		t.Helper()
		if err := os.WriteFile(path, []byte(strings.ReplaceAll(jwtConfig, "%s", keys)), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	writeConfig("      - {kid: k1, alg: HS256, secret_env: S1}")
	cfg, err := config.Load(path)
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	v, err := newVerifier(cfg, getenv, time.Now, reg)
	if err != nil {
		t.Fatal(err)
	}
	token := func(kid, secret string) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": "u1", "aud": "rankgate", "exp": time.Now().Add(time.Hour).Unix()})
		tok.Header["kid"] = kid
		s, err := tok.SignedString([]byte(env[secret]))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	if _, err := v.Verify(token("k1", "S1")); err != nil {
		t.Fatalf("k1 before the reload: %v", err)
	}
	// A SIGHUP with no handler ends the process: hold one before
	// reloadKeys installs its own, and keep it for the test binary's life —
	// a SIGHUP sent at the end of a wait below may still be on its way to
	// a thread when the test returns (a full channel drops, never blocks).
	held := make(chan os.Signal, 16)
	signal.Notify(held, syscall.SIGHUP)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		reloadKeys(ctx, v, path, getenv, time.Now, 0, slog.New(slog.DiscardHandler))
	}()
	t.Cleanup(func() { cancel(); <-done })

	writeConfig("      - {kid: k2, alg: HS256, secret_env: S2}")
	hup := func() {
		if err := syscall.Kill(os.Getpid(), syscall.SIGHUP); err != nil {
			t.Fatal(err)
		}
	}
	// Signal until the reload shows (the handler may not be installed yet
	// when the first SIGHUP arrives).
	soon.Eventually(t, 5*time.Second, func() error {
		hup()
		_, err := v.Verify(token("k2", "S2"))
		return err
	})
	if _, err := v.Verify(token("k1", "S1")); err == nil {
		t.Fatal("k1 still accepted after it left the config")
	}
	// A broken config (a short secret) keeps k2.
	env["S3"] = "short"
	writeConfig("      - {kid: k3, alg: HS256, secret_env: S3}")
	reloads := func(result string) float64 {
		mfs, _ := reg.Gather()
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				if mf.GetName() == "rankgate_jwt_key_reloads_total" && m.GetLabel()[0].GetValue() == result {
					return m.GetCounter().GetValue()
				}
			}
		}
		return 0
	}
	soon.Eventually(t, 5*time.Second, func() error {
		hup()
		if reloads("error") == 0 {
			return errors.New("no failed reload yet")
		}
		return nil
	})
	if _, err := v.Verify(token("k2", "S2")); err != nil {
		t.Fatalf("k2 after a failed reload: %v", err)
	}
}

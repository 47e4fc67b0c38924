package main

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/rankgate/rankgate/internal/config"
	"github.com/rankgate/rankgate/internal/ledger"
	"github.com/rankgate/rankgate/internal/testpg"
)

// The webhook's env vars are checked at start in ledger mode, each error
// naming its key; Redis-only mode ignores the webhook with a warning.
func TestNewDelivererChecksEnv(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Awards.Webhook.URLEnv, cfg.Awards.Webhook.SecretEnv = "AW_URL", "AW_SECRET"
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	env := func(url, secret string) func(string) string {
		return func(k string) string { return map[string]string{"AW_URL": url, "AW_SECRET": secret}[k] }
	}
	if task, err := newDeliverer(cfg, nil, env("", ""), log, nil); task != nil || err != nil {
		t.Fatalf("Redis-only mode: task %v, %v; want none", task != nil, err)
	}
	if task, err := newDeliverer(config.Default(), nil, env("", ""), log, nil); task != nil || err != nil {
		t.Fatalf("no webhook: task %v, %v; want none", task != nil, err)
	}
	l, err := ledger.Open(context.Background(), testpg.DSN(t), ledger.Options{Schema: testpg.Schema(t), MaxConns: 2})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	for _, tc := range []struct {
		name, url, secret, want string
	}{
		{"empty url", "", "0123456789abcdef", "awards.webhook.url_env"},
		{"not http", "ftp://127.0.0.1/x", "0123456789abcdef", "awards.webhook.url_env"},
		{"short secret", "http://127.0.0.1:9/x", "short", "awards.webhook.secret_env"},
		{"valid", "http://127.0.0.1:9/x", "0123456789abcdef", ""},
	} {
		task, err := newDeliverer(cfg, l, env(tc.url, tc.secret), log, nil)
		switch {
		case tc.want == "" && (err != nil || task == nil):
			t.Errorf("%s: task %v, %v", tc.name, task != nil, err)
		case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want)):
			t.Errorf("%s: %v, want an error naming %s", tc.name, err, tc.want)
		}
	}
}

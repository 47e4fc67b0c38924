package main

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rankgate/rankgate/internal/audit"
	"github.com/rankgate/rankgate/internal/config"
	"github.com/rankgate/rankgate/internal/gateway"
	"github.com/rankgate/rankgate/internal/ledger"
	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/store"
)

// newAuditLog builds the audit log: the ledger's table in ledger mode, the
// capped stream (audit.max_entries) otherwise, with the HMAC secret of
// audit.hmac_secret_env (an empty or short one stops the start, naming the
// key; the message never holds the value).
func newAuditLog(cfg *config.Config, st *store.Store, led gateway.Ledger, getenv func(string) string, log *slog.Logger, reg prometheus.Registerer, now func() time.Time) (*audit.Log, error) {
	var be audit.Backend = st.AuditStream(shard.Layout{Prefix: cfg.Redis.Prefix}.Audit(), cfg.Audit.MaxEntries)
	if l, ok := led.(*ledger.Ledger); ok {
		be = l.AuditLog()
	}
	o := audit.Options{Logger: log, Registerer: reg, Now: now}
	if env := cfg.Audit.HMACSecretEnv; env != "" {
		sec := cfg.Audit.HMACSecret(getenv)
		if len(sec) < audit.MinSecret {
			return nil, fmt.Errorf("audit.hmac_secret_env: environment variable %s is unset, empty or shorter than %d bytes; it must hold the key that hashes erased members", env, audit.MinSecret)
		}
		o.Secret = []byte(sec)
	}
	return audit.New(be, o)
}

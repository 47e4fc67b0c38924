package main

import (
	"crypto/tls"
	"log/slog"

	"github.com/rankgate/rankgate/internal/config"
)

// tlsConfig returns the TLS settings for Redis, nil when redis.tls is off:
// TLS 1.2 or newer, redis.tls_ca_file as the roots (the system roots when
// unset), redis.tls_cert_file/tls_key_file as the client certificate for
// mutual TLS, redis.tls_server_name as the name to verify (config.Redis.TLSConfig
// builds it; its errors name the key). It warns when
// redis.tls_insecure_skip_verify turns certificate verification off.
func tlsConfig(cfg *config.Config, log *slog.Logger) (*tls.Config, error) {
	c, err := cfg.Redis.TLSConfig()
	if err != nil {
		return nil, err
	}
	if c != nil && c.InsecureSkipVerify {
		log.Warn("redis.tls_insecure_skip_verify is true: the Redis nodes' certificates are not verified, " +
			"so anyone on the path can impersonate them; use it for tests only")
	}
	return c, nil
}

package main

import (
	"crypto/tls"

	"github.com/rankgate/rankgate/internal/config"
)

// tlsConfig returns the TLS settings for Redis: the system roots when
// redis.tls is on, nil otherwise.
func tlsConfig(cfg *config.Config) *tls.Config {
	if !cfg.Redis.TLS {
		return nil
	}
	return &tls.Config{MinVersion: tls.VersionTLS12}
}

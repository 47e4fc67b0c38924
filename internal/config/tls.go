package config

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"strings"
	"time"
)

// maxServerName bounds redis.tls_server_name (a DNS name's length).
const maxServerName = 253

// TLSConfig returns the client TLS settings for Redis: nil when redis.tls is
// off; otherwise TLS 1.2 or newer, the CAs of tls_ca_file as roots (the
// system roots when unset), the client certificate of tls_cert_file and
// tls_key_file for mutual TLS, tls_server_name as the name every node's
// certificate must carry (unset: the host of the address dialled, an IP SAN
// for 127.0.0.1), and no verification at all with tls_insecure_skip_verify.
// It reads the files each call. Its error joins *FieldErrors naming the key
// at fault, as Validate's does (Validate runs the same checks).
func (r Redis) TLSConfig() (*tls.Config, error) {
	v := &validator{}
	c := r.buildTLS(v)
	if err := errors.Join(v.errs...); err != nil {
		return nil, err
	}
	return c, nil
}

// buildTLS checks the redis.tls_* keys, recording each problem on v under
// its key, and returns the TLS settings (nil when TLS is off).
func (r Redis) buildTLS(v *validator) *tls.Config {
	if !r.TLS {
		for _, k := range []struct {
			key string
			set bool
		}{
			{"redis.tls_ca_file", r.TLSCAFile != ""},
			{"redis.tls_cert_file", r.TLSCertFile != ""},
			{"redis.tls_key_file", r.TLSKeyFile != ""},
			{"redis.tls_server_name", r.TLSServerName != ""},
			{"redis.tls_insecure_skip_verify", r.TLSInsecureSkipVerify},
		} {
			if k.set {
				v.errorf(k.key, "only used with redis.tls: true")
			}
		}
		return nil
	}
	c := &tls.Config{
		MinVersion:         tls.VersionTLS12,
		ServerName:         r.TLSServerName,
		InsecureSkipVerify: r.TLSInsecureSkipVerify, //nolint:gosec // opt-in, warned about at start
	}
	if r.TLSCAFile != "" {
		pool, err := loadCAs(r.TLSCAFile)
		if err != nil {
			v.errorf("redis.tls_ca_file", "%v", err)
		}
		c.RootCAs = pool
	}
	switch {
	case r.TLSCertFile != "" && r.TLSKeyFile == "":
		v.errorf("redis.tls_key_file", "is required with redis.tls_cert_file (the client certificate's private key)")
	case r.TLSKeyFile != "" && r.TLSCertFile == "":
		v.errorf("redis.tls_cert_file", "is required with redis.tls_key_file (the client certificate)")
	case r.TLSCertFile != "":
		cert, err := tls.LoadX509KeyPair(r.TLSCertFile, r.TLSKeyFile)
		switch {
		case err != nil:
			v.errorf("redis.tls_cert_file", "loading the client certificate %s with the key %s: %v", r.TLSCertFile, r.TLSKeyFile, err)
		case cert.Leaf != nil && time.Now().After(cert.Leaf.NotAfter):
			v.errorf("redis.tls_cert_file", "the client certificate %s expired at %s", r.TLSCertFile, cert.Leaf.NotAfter.UTC().Format(time.RFC3339))
		default:
			c.Certificates = []tls.Certificate{cert}
		}
	}
	if n := r.TLSServerName; n != "" && (len(n) > maxServerName || strings.ContainsFunc(n, func(ch rune) bool { return ch <= ' ' || ch > '~' })) {
		v.errorf("redis.tls_server_name", "%q is not a host name or IP address", n)
	}
	return c
}

// loadCAs reads a PEM bundle that must hold at least one certificate and
// nothing that is not one.
func loadCAs(path string) (*x509.CertPool, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	n := 0
	for rest := data; ; {
		var b *pem.Block
		b, rest = pem.Decode(rest)
		if b == nil {
			break
		}
		n++
		if b.Type != "CERTIFICATE" {
			return nil, fmt.Errorf("%s: PEM block %d is a %q, want CERTIFICATE", path, n, b.Type)
		}
		cert, err := x509.ParseCertificate(b.Bytes)
		if err != nil {
			return nil, fmt.Errorf("%s: certificate %d: %v", path, n, err)
		}
		pool.AddCert(cert)
	}
	if n == 0 {
		return nil, fmt.Errorf("%s holds no PEM certificate", path)
	}
	return pool, nil
}

package config

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// withRedis is withFamily with redis keys added under redis:.
func withRedis(keys string) string {
	var b strings.Builder
	for _, l := range strings.Split(strings.TrimSpace(keys), "\n") {
		b.WriteString("  " + l + "\n")
	}
	return strings.Replace(withFamily(""), "redis:\n", "redis:\n"+b.String(), 1)
}

// testPKI holds PEM files of a throwaway CA and two leaf certificates it
// signed (internal/redissec has the full version, for the TLS cluster test).
type testPKI struct {
	CAFile                string
	ServerCert, ServerKey string
	ClientCert, ClientKey string
}

func newTestPKI(t *testing.T) *testPKI {
	t.Helper()
	dir := t.TempDir()
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	ca := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "config test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), IsCA: true, BasicConstraintsValid: true,
		KeyUsage: x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		t.Fatal(err)
	}
	if ca, err = x509.ParseCertificate(caDER); err != nil {
		t.Fatal(err)
	}
	p := &testPKI{CAFile: writeTestPEM(t, dir, "ca.crt", "CERTIFICATE", caDER)}
	issue := func(name, cn string, serial int64, usage x509.ExtKeyUsage, dns []string, ips []net.IP) (string, string) {
		key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		tmpl := &x509.Certificate{SerialNumber: big.NewInt(serial), Subject: pkix.Name{CommonName: cn},
			NotBefore: now.Add(-time.Hour), NotAfter: now.Add(time.Hour), KeyUsage: x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{usage}, DNSNames: dns, IPAddresses: ips}
		der, err := x509.CreateCertificate(rand.Reader, tmpl, ca, &key.PublicKey, caKey)
		if err != nil {
			t.Fatal(err)
		}
		keyDER, err := x509.MarshalPKCS8PrivateKey(key)
		if err != nil {
			t.Fatal(err)
		}
		return writeTestPEM(t, dir, name+".crt", "CERTIFICATE", der), writeTestPEM(t, dir, name+".key", "PRIVATE KEY", keyDER)
	}
	p.ServerCert, p.ServerKey = issue("server", "127.0.0.1", 2, x509.ExtKeyUsageServerAuth, []string{"localhost"}, []net.IP{net.IPv4(127, 0, 0, 1)})
	p.ClientCert, p.ClientKey = issue("client", "rankgate", 3, x509.ExtKeyUsageClientAuth, nil, nil)
	return p
}

func writeTestPEM(t *testing.T, dir, name, typ string, der []byte) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestRedisTLSConfig(t *testing.T) {
	p := newTestPKI(t)

	t.Run("every key", func(t *testing.T) {
		c, err := Parse([]byte(withRedis(fmt.Sprintf("tls: true\ntls_ca_file: %q\ntls_cert_file: %q\ntls_key_file: %q\ntls_server_name: localhost",
			p.CAFile, p.ClientCert, p.ClientKey))))
		if err != nil {
			t.Fatal(err)
		}
		r := c.Redis
		if r.TLSCAFile != p.CAFile || r.TLSCertFile != p.ClientCert || r.TLSKeyFile != p.ClientKey || r.TLSServerName != "localhost" || r.TLSInsecureSkipVerify {
			t.Errorf("redis = %+v", r)
		}
		tc, err := r.TLSConfig()
		if err != nil {
			t.Fatal(err)
		}
		if tc.MinVersion != tls.VersionTLS12 || tc.ServerName != "localhost" || tc.InsecureSkipVerify || len(tc.Certificates) != 1 || tc.RootCAs == nil {
			t.Fatalf("tls config = %+v", tc)
		}
		// The roots are the CA file's: the server certificate verifies
		// against them, for the configured name.
		srv := readCert(t, p.ServerCert)
		if _, err := srv.Verify(x509.VerifyOptions{Roots: tc.RootCAs, DNSName: tc.ServerName}); err != nil {
			t.Errorf("server certificate does not verify against tls_ca_file: %v", err)
		}
		if leaf := tc.Certificates[0].Leaf; leaf == nil || leaf.Subject.CommonName != "rankgate" {
			t.Errorf("client certificate = %+v", leaf)
		}
	})

	t.Run("tls alone uses the system roots", func(t *testing.T) {
		tc, err := Redis{TLS: true}.TLSConfig()
		if err != nil || tc == nil || tc.RootCAs != nil || tc.Certificates != nil || tc.MinVersion != tls.VersionTLS12 {
			t.Errorf("TLSConfig = %+v, %v", tc, err)
		}
	})

	t.Run("off", func(t *testing.T) {
		if tc, err := (Redis{}).TLSConfig(); tc != nil || err != nil {
			t.Errorf("TLSConfig = %+v, %v; want nil, nil", tc, err)
		}
	})

	t.Run("insecure skip verify", func(t *testing.T) {
		c, err := Parse([]byte(withRedis("tls: true\ntls_insecure_skip_verify: true")))
		if err != nil {
			t.Fatal(err)
		}
		if tc, err := c.Redis.TLSConfig(); err != nil || !tc.InsecureSkipVerify {
			t.Errorf("TLSConfig = %+v, %v", tc, err)
		}
	})
}

func TestRedisTLSErrors(t *testing.T) {
	p := newTestPKI(t)
	dir := t.TempDir()
	garbage := filepath.Join(dir, "garbage.pem")
	if err := os.WriteFile(garbage, []byte("not a certificate\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	badBlock := filepath.Join(dir, "bad-block.pem")
	if err := os.WriteFile(badBlock, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: []byte{1, 2, 3}}), 0o600); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.crt")
	q := func(s string) string { return fmt.Sprintf("%q", s) }

	tests := []struct {
		title string
		keys  string
		key   string
		msg   string
	}{
		{"ca file without tls", "tls_ca_file: " + q(p.CAFile), "redis.tls_ca_file", "only used with redis.tls: true"},
		{"cert file without tls", "tls: false\ntls_cert_file: " + q(p.ClientCert) + "\ntls_key_file: " + q(p.ClientKey), "redis.tls_cert_file", "only used with redis.tls: true"},
		{"key file without tls", "tls_cert_file: " + q(p.ClientCert) + "\ntls_key_file: " + q(p.ClientKey), "redis.tls_key_file", "only used with redis.tls: true"},
		{"server name without tls", "tls_server_name: redis.internal", "redis.tls_server_name", "only used with redis.tls: true"},
		{"insecure without tls", "tls_insecure_skip_verify: true", "redis.tls_insecure_skip_verify", "only used with redis.tls: true"},
		{"insecure not a bool", "tls: true\ntls_insecure_skip_verify: yes please", "redis.tls_insecure_skip_verify", "expected true or false"},
		{"unknown tls key", "tls: true\ntls_ca: x", "redis.tls_ca", "unknown key"},
		{"missing ca file", "tls: true\ntls_ca_file: " + q(missing), "redis.tls_ca_file", "no such file"},
		{"ca file not PEM", "tls: true\ntls_ca_file: " + q(garbage), "redis.tls_ca_file", "holds no PEM certificate"},
		{"ca file holds a key", "tls: true\ntls_ca_file: " + q(p.ClientKey), "redis.tls_ca_file", `is a "PRIVATE KEY", want CERTIFICATE`},
		{"ca file with a broken certificate", "tls: true\ntls_ca_file: " + q(badBlock), "redis.tls_ca_file", "certificate 1"},
		{"cert without key", "tls: true\ntls_cert_file: " + q(p.ClientCert), "redis.tls_key_file", "is required with redis.tls_cert_file"},
		{"key without cert", "tls: true\ntls_key_file: " + q(p.ClientKey), "redis.tls_cert_file", "is required with redis.tls_key_file"},
		{"cert and key do not match", "tls: true\ntls_cert_file: " + q(p.ClientCert) + "\ntls_key_file: " + q(p.ServerKey), "redis.tls_cert_file", "loading the client certificate"},
		{"missing cert file", "tls: true\ntls_cert_file: " + q(missing) + "\ntls_key_file: " + q(p.ClientKey), "redis.tls_cert_file", "no such file"},
		{"server name with a space", "tls: true\ntls_server_name: \"redis internal\"", "redis.tls_server_name", "not a host name"},
	}
	for _, tt := range tests {
		t.Run(tt.title, func(t *testing.T) {
			_, err := Parse([]byte(withRedis(tt.keys)))
			if err == nil {
				t.Fatalf("Parse succeeded, want an error naming %s", tt.key)
			}
			if !hasKey(err, tt.key) || !strings.Contains(err.Error(), tt.msg) {
				t.Errorf("error does not name %s with %q:\n%v", tt.key, tt.msg, err)
			}
		})
	}

	// TLSConfig reports the same problems for a Redis built in code.
	_, err := Redis{TLS: true, TLSCAFile: missing, TLSKeyFile: p.ClientKey}.TLSConfig()
	if !hasKey(err, "redis.tls_ca_file") || !hasKey(err, "redis.tls_cert_file") {
		t.Errorf("TLSConfig error = %v, want both redis.tls_ca_file and redis.tls_cert_file", err)
	}
}

func readCert(t *testing.T, path string) *x509.Certificate {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := pem.Decode(data)
	if b == nil {
		t.Fatalf("%s: no PEM", path)
	}
	c, err := x509.ParseCertificate(b.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

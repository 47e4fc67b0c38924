package redissec

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"
)

// PKI is a throwaway certificate authority and the certificates issued by
// it, written as PEM files into Dir: a server certificate for 127.0.0.1 and
// localhost (usable as a client certificate too, as Redis nodes present it
// to each other on the cluster bus and for replication) and a client
// certificate.
type PKI struct {
	Dir                   string
	CAFile                string
	ServerCert, ServerKey string
	ClientCert, ClientKey string
	caCert                *x509.Certificate
	caKey                 *ecdsa.PrivateKey
	validFrom, validTill  time.Time
}

// NewPKI creates a CA named name and its certificates in dir (which must
// exist), valid for a day. The files are name-ca.crt, name-server.crt,
// name-server.key, name-client.crt and name-client.key.
func NewPKI(dir, name string) (*PKI, error) {
	now := time.Now()
	p := &PKI{Dir: dir, validFrom: now.Add(-time.Hour), validTill: now.Add(24 * time.Hour)}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          serial(),
		Subject:               pkix.Name{CommonName: name + " test CA", Organization: []string{"rankgate tests"}},
		NotBefore:             p.validFrom,
		NotAfter:              p.validTill,
		IsCA:                  true,
		BasicConstraintsValid: true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign | x509.KeyUsageDigitalSignature,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, fmt.Errorf("create CA: %w", err)
	}
	if p.caCert, err = x509.ParseCertificate(der); err != nil {
		return nil, err
	}
	p.caKey = key
	p.CAFile = filepath.Join(dir, name+"-ca.crt")
	if err := writePEM(p.CAFile, "CERTIFICATE", der); err != nil {
		return nil, err
	}
	p.ServerCert, p.ServerKey, err = p.issue(filepath.Join(dir, name+"-server"), "127.0.0.1",
		[]x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
		[]net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback}, []string{"localhost"})
	if err != nil {
		return nil, err
	}
	p.ClientCert, p.ClientKey, err = p.issue(filepath.Join(dir, name+"-client"), "rankgate",
		[]x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth}, nil, nil)
	if err != nil {
		return nil, err
	}
	return p, nil
}

// issue signs a leaf certificate and writes base.crt and base.key.
func (p *PKI) issue(base, cn string, usage []x509.ExtKeyUsage, ips []net.IP, dns []string) (certFile, keyFile string, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return "", "", err
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial(),
		Subject:      pkix.Name{CommonName: cn, Organization: []string{"rankgate tests"}},
		NotBefore:    p.validFrom,
		NotAfter:     p.validTill,
		KeyUsage:     x509.KeyUsageDigitalSignature | x509.KeyUsageKeyEncipherment,
		ExtKeyUsage:  usage,
		IPAddresses:  ips,
		DNSNames:     dns,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, p.caCert, &key.PublicKey, p.caKey)
	if err != nil {
		return "", "", fmt.Errorf("issue %s: %w", cn, err)
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return "", "", err
	}
	certFile, keyFile = base+".crt", base+".key"
	if err := writePEM(certFile, "CERTIFICATE", der); err != nil {
		return "", "", err
	}
	if err := writePEM(keyFile, "PRIVATE KEY", keyDER); err != nil {
		return "", "", err
	}
	return certFile, keyFile, nil
}

func writePEM(path, typ string, der []byte) error {
	return os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der}), 0o600)
}

func serial() *big.Int {
	n, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		panic(err) // crypto/rand does not fail
	}
	return n
}

package player_test

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/rankgate/rankgate/internal/player"
)

var t0 = time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)

const (
	hsSecret    = "0123456789abcdef0123456789abcdef-hs"
	otherSecret = "fedcba9876543210fedcba9876543210-hs"
	issuer      = "https://game.example.com"
	audience    = "rankgate"
)

// keys are the signing keys of the tests, made once.
type keys struct {
	ec    *ecdsa.PrivateKey
	rsa   *rsa.PrivateKey
	ed    ed25519.PrivateKey
	ecPEM []byte
	rsPEM []byte
	edPEM []byte
	ec2   *ecdsa.PrivateKey // not configured anywhere
}

var testKeys = sync.OnceValue(func() *keys {
	k := &keys{}
	var err error
	if k.ec, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		panic(err)
	}
	if k.ec2, err = ecdsa.GenerateKey(elliptic.P256(), rand.Reader); err != nil {
		panic(err)
	}
	if k.rsa, err = rsa.GenerateKey(rand.Reader, 2048); err != nil {
		panic(err)
	}
	if _, k.ed, err = ed25519.GenerateKey(rand.Reader); err != nil {
		panic(err)
	}
	k.ecPEM = pubPEM(k.ec.Public())
	k.rsPEM = pubPEM(k.rsa.Public())
	k.edPEM = pubPEM(k.ed.Public())
	return k
})

func pubPEM(pub crypto.PublicKey) []byte {
	der, err := x509.MarshalPKIXPublicKey(pub)
	if err != nil {
		panic(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
}

// verifierFor writes the public keys to files and builds a verifier with
// kids hs (HS256), es (ES256), rs (RS256) and ed (EdDSA).
func verifierFor(t *testing.T, now *time.Time, mod func(*player.Options)) (*player.Verifier, *prometheus.Registry) {
	t.Helper()
	k := testKeys()
	dir := t.TempDir()
	write := func(name string, b []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	o := player.Options{Issuer: issuer, Audience: audience, ClockSkew: 30 * time.Second,
		Now: func() time.Time { return *now },
		Keys: []player.Key{
			{Kid: "hs", Alg: player.AlgHS256, Secret: []byte(hsSecret)},
			{Kid: "es", Alg: player.AlgES256, PublicKeyFile: write("es.pem", k.ecPEM)},
			{Kid: "rs", Alg: player.AlgRS256, PublicKeyFile: write("rs.pem", k.rsPEM)},
			{Kid: "ed", Alg: player.AlgEdDSA, PublicKeyFile: write("ed.pem", k.edPEM)},
		}}
	if mod != nil {
		mod(&o)
	}
	reg := prometheus.NewRegistry()
	v, err := player.NewVerifier(o, reg)
	if err != nil {
		t.Fatalf("NewVerifier: %v", err)
	}
	return v, reg
}

// goodClaims are valid at t0.
func goodClaims() jwt.MapClaims {
	return jwt.MapClaims{"sub": "u1001", "iss": issuer, "aud": audience, "scope": "read write:self",
		"exp": t0.Add(time.Hour).Unix(), "iat": t0.Add(-time.Minute).Unix(), "nbf": t0.Add(-time.Minute).Unix()}
}

func sign(t *testing.T, m jwt.SigningMethod, kid string, key any, c jwt.MapClaims) string {
	t.Helper()
	tok := jwt.NewWithClaims(m, c)
	if kid != "" {
		tok.Header["kid"] = kid
	} else {
		delete(tok.Header, "kid")
	}
	s, err := tok.SignedString(key)
	if err != nil {
		t.Fatalf("signing: %v", err)
	}
	return s
}

func with(c jwt.MapClaims, kv ...any) jwt.MapClaims {
	out := jwt.MapClaims{}
	for k, v := range c {
		out[k] = v
	}
	for i := 0; i < len(kv); i += 2 {
		if kv[i+1] == nil {
			delete(out, kv[i].(string))
			continue
		}
		out[kv[i].(string)] = kv[i+1]
	}
	return out
}

// unsigned builds header.payload. with the given header: alg none and other
// forgeries no library would sign.
func unsigned(header, payload string, sig string) string {
	enc := base64.RawURLEncoding.EncodeToString
	return enc([]byte(header)) + "." + enc([]byte(payload)) + "." + sig
}

func TestVerify(t *testing.T) {
	t.Parallel()
	k := testKeys()
	now := t0
	v, reg := verifierFor(t, &now, nil)
	hs := []byte(hsSecret)
	good := goodClaims()

	cases := []struct {
		name   string
		token  func(t *testing.T) string
		ok     bool
		member string
		scopes []string
		reason string // refusal metric label
	}{
		{name: "HS256 good", token: func(t *testing.T) string { return sign(t, jwt.SigningMethodHS256, "hs", hs, good) },
			ok: true, member: "u1001", scopes: []string{"read", "write:self"}},
		{name: "ES256 good", token: func(t *testing.T) string { return sign(t, jwt.SigningMethodES256, "es", k.ec, good) },
			ok: true, member: "u1001", scopes: []string{"read", "write:self"}},
		{name: "RS256 good", token: func(t *testing.T) string { return sign(t, jwt.SigningMethodRS256, "rs", k.rsa, good) },
			ok: true, member: "u1001", scopes: []string{"read", "write:self"}},
		{name: "EdDSA good", token: func(t *testing.T) string { return sign(t, jwt.SigningMethodEdDSA, "ed", k.ed, good) },
			ok: true, member: "u1001", scopes: []string{"read", "write:self"}},
		{name: "scope as an array, unknown scopes dropped, admin never granted", token: func(t *testing.T) string {
			return sign(t, jwt.SigningMethodHS256, "hs", hs, with(good, "scope", []string{"live", "admin", "write", "read", "read"}))
		}, ok: true, member: "u1001", scopes: []string{"read", "live"}},
		{name: "exp within the clock skew", token: func(t *testing.T) string {
			return sign(t, jwt.SigningMethodHS256, "hs", hs, with(good, "exp", t0.Add(-20*time.Second).Unix()))
		}, ok: true, member: "u1001", scopes: []string{"read", "write:self"}},
		{name: "nbf within the clock skew", token: func(t *testing.T) string {
			return sign(t, jwt.SigningMethodHS256, "hs", hs, with(good, "nbf", t0.Add(20*time.Second).Unix()))
		}, ok: true, member: "u1001", scopes: []string{"read", "write:self"}},
		{name: "aud as an array holding ours", token: func(t *testing.T) string {
			return sign(t, jwt.SigningMethodHS256, "hs", hs, with(good, "aud", []string{"other", audience}))
		}, ok: true, member: "u1001", scopes: []string{"read", "write:self"}},

		{name: "expired", reason: "expired", token: func(t *testing.T) string {
			return sign(t, jwt.SigningMethodHS256, "hs", hs, with(good, "exp", t0.Add(-31*time.Second).Unix()))
		}},
		{name: "no exp", reason: "claims", token: func(t *testing.T) string {
			return sign(t, jwt.SigningMethodHS256, "hs", hs, with(good, "exp", nil))
		}},
		{name: "not yet valid (nbf)", reason: "expired", token: func(t *testing.T) string {
			return sign(t, jwt.SigningMethodHS256, "hs", hs, with(good, "nbf", t0.Add(time.Minute).Unix()))
		}},
		{name: "issued in the future (iat)", reason: "expired", token: func(t *testing.T) string {
			return sign(t, jwt.SigningMethodHS256, "hs", hs, with(good, "iat", t0.Add(time.Minute).Unix()))
		}},
		{name: "wrong audience", reason: "claims", token: func(t *testing.T) string {
			return sign(t, jwt.SigningMethodHS256, "hs", hs, with(good, "aud", "another-service"))
		}},
		{name: "no audience", reason: "claims", token: func(t *testing.T) string {
			return sign(t, jwt.SigningMethodHS256, "hs", hs, with(good, "aud", nil))
		}},
		{name: "wrong issuer", reason: "claims", token: func(t *testing.T) string {
			return sign(t, jwt.SigningMethodHS256, "hs", hs, with(good, "iss", "https://evil.example.com"))
		}},
		{name: "forged: wrong HS256 secret", reason: "signature", token: func(t *testing.T) string {
			return sign(t, jwt.SigningMethodHS256, "hs", []byte(otherSecret), good)
		}},
		{name: "forged: payload changed after signing", reason: "signature", token: func(t *testing.T) string {
			s := sign(t, jwt.SigningMethodHS256, "hs", hs, good)
			parts := strings.Split(s, ".")
			other := strings.Split(sign(t, jwt.SigningMethodHS256, "hs", hs, with(good, "sub", "u9999")), ".")
			return parts[0] + "." + other[1] + "." + parts[2]
		}},
		{name: "wrong key: ES256 signed by a key nobody configured", reason: "signature", token: func(t *testing.T) string {
			return sign(t, jwt.SigningMethodES256, "es", k.ec2, good)
		}},
		{name: "unknown kid", reason: "unknown_kid", token: func(t *testing.T) string {
			return sign(t, jwt.SigningMethodHS256, "k9", hs, good)
		}},
		{name: "no kid with several keys", reason: "unknown_kid", token: func(t *testing.T) string {
			return sign(t, jwt.SigningMethodHS256, "", hs, good)
		}},
		{name: "key confusion: HS256 signed with the RS256 public key's PEM", reason: "signature", token: func(t *testing.T) string {
			return sign(t, jwt.SigningMethodHS256, "rs", k.rsPEM, good)
		}},
		{name: "key confusion: HS256 with the ES256 kid and its PEM", reason: "signature", token: func(t *testing.T) string {
			return sign(t, jwt.SigningMethodHS256, "es", k.ecPEM, good)
		}},
		{name: "algorithm swap: RS256 token under the ES256 kid", reason: "signature", token: func(t *testing.T) string {
			return sign(t, jwt.SigningMethodRS256, "es", k.rsa, good)
		}},
		{name: "alg none, no signature", reason: "signature", token: func(t *testing.T) string {
			return sign(t, jwt.SigningMethodNone, "hs", jwt.UnsafeAllowNoneSignatureType, good)
		}},
		{name: "alg none spelled NONE", reason: "signature", token: func(t *testing.T) string {
			return unsigned(`{"alg":"NONE","kid":"hs","typ":"JWT"}`, `{"sub":"u1001","exp":9999999999,"aud":"rankgate","iss":"https://game.example.com"}`, "")
		}},
		{name: "alg HS512 not configured", reason: "signature", token: func(t *testing.T) string {
			return sign(t, jwt.SigningMethodHS512, "hs", hs, good)
		}},
		{name: "member not a valid id", reason: "member", token: func(t *testing.T) string {
			return sign(t, jwt.SigningMethodHS256, "hs", hs, with(good, "sub", "u1{bad}"))
		}},
		{name: "no member", reason: "member", token: func(t *testing.T) string {
			return sign(t, jwt.SigningMethodHS256, "hs", hs, with(good, "sub", nil))
		}},
		{name: "scope of the wrong type", reason: "malformed", token: func(t *testing.T) string {
			return sign(t, jwt.SigningMethodHS256, "hs", hs, with(good, "scope", 7))
		}},
		{name: "garbage", reason: "malformed", token: func(*testing.T) string { return "not-a-jwt" }},
		{name: "four parts", reason: "malformed", token: func(t *testing.T) string {
			return sign(t, jwt.SigningMethodHS256, "hs", hs, good) + ".x"
		}},
		{name: "header not JSON", reason: "malformed", token: func(*testing.T) string { return unsigned(`{`, `{}`, "c2ln") }},
		{name: "too long", reason: "malformed", token: func(*testing.T) string {
			return unsigned(`{"alg":"HS256"}`, `{"sub":"`+strings.Repeat("a", player.MaxTokenBytes)+`"}`, "c2ln")
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := testutil.ToFloat64(refused(t, reg, tc.reason))
			c, err := v.Verify(tc.token(t))
			if !tc.ok {
				if !errors.Is(err, player.ErrInvalid) {
					t.Fatalf("Verify = %+v, %v; want ErrInvalid", c, err)
				}
				if got := testutil.ToFloat64(refused(t, reg, tc.reason)); got != before+1 {
					t.Errorf("refused{reason=%q} went %v → %v, want +1", tc.reason, before, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Verify: %v", err)
			}
			if c.Member != tc.member || !slices.Equal(c.Scopes, tc.scopes) {
				t.Errorf("claims %+v, want member %s scopes %v", c, tc.member, tc.scopes)
			}
		})
	}
}

// refused returns the refusal counter of reason (a fresh one for "").
func refused(t *testing.T, reg *prometheus.Registry, reason string) prometheus.Collector {
	t.Helper()
	if reason == "" {
		return prometheus.NewCounter(prometheus.CounterOpts{Name: "unused"})
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "rankgate_jwt_refused_total" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() == reason {
				c := prometheus.NewCounter(prometheus.CounterOpts{Name: "snapshot"})
				c.Add(m.GetCounter().GetValue())
				return c
			}
		}
	}
	t.Fatalf("no refusal series for reason %q", reason)
	return nil
}

func TestMemberClaimAndSingleKey(t *testing.T) {
	t.Parallel()
	now := t0
	v, _ := verifierFor(t, &now, func(o *player.Options) {
		o.MemberClaim = "player_id"
		o.Keys = o.Keys[:1]
		o.Issuer, o.Audience = "", ""
	})
	// One key: a token without kid uses it; iss and aud are not checked.
	tok := sign(t, jwt.SigningMethodHS256, "", []byte(hsSecret), with(goodClaims(), "player_id", "p-77", "aud", "x", "iss", "y"))
	c, err := v.Verify(tok)
	if err != nil || c.Member != "p-77" || c.Subject != "u1001" {
		t.Fatalf("Verify = %+v, %v; want member p-77, subject u1001", c, err)
	}
	// The member claim must be a string.
	tok = sign(t, jwt.SigningMethodHS256, "", []byte(hsSecret), with(goodClaims(), "player_id", 77))
	if _, err := v.Verify(tok); !errors.Is(err, player.ErrInvalid) {
		t.Fatalf("a numeric member claim: %v, want ErrInvalid", err)
	}
}

// The cache serves a verified token again without a signature check, but
// never past its exp (plus skew), and never after the keys changed.
func TestCacheHonoursExpAndReload(t *testing.T) {
	t.Parallel()
	now := t0
	v, reg := verifierFor(t, &now, nil)
	tok := sign(t, jwt.SigningMethodHS256, "hs", []byte(hsSecret), with(goodClaims(), "exp", t0.Add(time.Minute).Unix()))
	verified := func() float64 {
		mfs, _ := reg.Gather()
		for _, mf := range mfs {
			if mf.GetName() == "rankgate_jwt_verified_total" {
				return mf.GetMetric()[0].GetCounter().GetValue()
			}
		}
		return -1
	}
	for i := 0; i < 3; i++ {
		if _, err := v.Verify(tok); err != nil {
			t.Fatalf("Verify %d: %v", i, err)
		}
	}
	if got := verified(); got != 1 {
		t.Fatalf("3 presentations verified the signature %v times, want 1 (cache)", got)
	}
	now = t0.Add(time.Minute + 29*time.Second)
	if _, err := v.Verify(tok); err != nil {
		t.Fatalf("within exp + skew: %v", err)
	}
	now = t0.Add(time.Minute + 30*time.Second)
	if _, err := v.Verify(tok); !errors.Is(err, player.ErrInvalid) {
		t.Fatalf("at exp + skew: %v, want ErrInvalid (the cache must not outlive exp)", err)
	}

	// A reload that drops the HS key: the cached token is refused at once.
	now = t0
	tok2 := sign(t, jwt.SigningMethodHS256, "hs", []byte(hsSecret), goodClaims())
	if _, err := v.Verify(tok2); err != nil {
		t.Fatal(err)
	}
	es := sign(t, jwt.SigningMethodES256, "es", testKeys().ec, goodClaims())
	o := player.Options{Issuer: issuer, Audience: audience, ClockSkew: 30 * time.Second, Now: func() time.Time { return now },
		Keys: []player.Key{{Kid: "hs2", Alg: player.AlgHS256, Secret: []byte(otherSecret)}}}
	if err := v.Update(o); err != nil {
		t.Fatalf("Update: %v", err)
	}
	if _, err := v.Verify(tok2); !errors.Is(err, player.ErrInvalid) {
		t.Fatalf("a token of a removed key after reload: %v, want ErrInvalid", err)
	}
	if _, err := v.Verify(es); !errors.Is(err, player.ErrInvalid) {
		t.Fatalf("ES256 after its key left: %v, want ErrInvalid", err)
	}
	if _, err := v.Verify(sign(t, jwt.SigningMethodHS256, "hs2", []byte(otherSecret), goodClaims())); err != nil {
		t.Fatalf("the new key after reload: %v", err)
	}
	// A bad update changes nothing.
	if err := v.Update(player.Options{Keys: []player.Key{{Kid: "x", Alg: player.AlgHS256, Secret: []byte("short")}}}); err == nil {
		t.Fatal("Update with a short secret succeeded")
	}
	if _, err := v.Verify(sign(t, jwt.SigningMethodHS256, "hs2", []byte(otherSecret), goodClaims())); err != nil {
		t.Fatalf("after a failed update the keys in use must stay: %v", err)
	}
}

// Rotation without a restart: a key file replaced on disk is noticed and,
// after Reload, tokens of the old key fail and tokens of the new one pass.
func TestKeyFileRotation(t *testing.T) {
	t.Parallel()
	now := t0
	dir := t.TempDir()
	path := filepath.Join(dir, "k.pem")
	if err := os.WriteFile(path, testKeys().ecPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	v, err := player.NewVerifier(player.Options{ClockSkew: time.Second, Now: func() time.Time { return now },
		Keys: []player.Key{{Kid: "k", Alg: player.AlgES256, PublicKeyFile: path}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	old := sign(t, jwt.SigningMethodES256, "k", testKeys().ec, goodClaims())
	next := sign(t, jwt.SigningMethodES256, "k", testKeys().ec2, goodClaims())
	if _, err := v.Verify(old); err != nil {
		t.Fatal(err)
	}
	if v.FilesChanged() {
		t.Fatal("FilesChanged before any change")
	}
	if err := os.WriteFile(path, pubPEM(testKeys().ec2.Public()), 0o600); err != nil {
		t.Fatal(err)
	}
	later := time.Now().Add(time.Hour)
	if err := os.Chtimes(path, later, later); err != nil { // coarse mtime clocks: make the change visible
		t.Fatal(err)
	}
	if !v.FilesChanged() {
		t.Fatal("FilesChanged missed a replaced key file")
	}
	if err := v.Reload(); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	if _, err := v.Verify(old); !errors.Is(err, player.ErrInvalid) {
		t.Errorf("the old key's token after rotation: %v, want ErrInvalid", err)
	}
	if _, err := v.Verify(next); err != nil {
		t.Errorf("the new key's token after rotation: %v", err)
	}
	// A broken file keeps the keys in use.
	if err := os.WriteFile(path, []byte("not a pem"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := v.Reload(); err == nil {
		t.Fatal("Reload of a broken key file succeeded")
	}
	if _, err := v.Verify(next); err != nil {
		t.Errorf("after a failed reload the keys in use must stay: %v", err)
	}
}

func TestNewVerifierRefusesBadKeys(t *testing.T) {
	t.Parallel()
	k := testKeys()
	dir := t.TempDir()
	ecPath := filepath.Join(dir, "ec.pem")
	if err := os.WriteFile(ecPath, k.ecPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	small, err := rsa.GenerateKey(rand.Reader, 1024)
	if err != nil {
		t.Fatal(err)
	}
	smallPath := filepath.Join(dir, "small.pem")
	if err := os.WriteFile(smallPath, pubPEM(small.Public()), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		keys []player.Key
		want string
	}{
		{"none", nil, "at least one"},
		{"short secret", []player.Key{{Kid: "a", Alg: player.AlgHS256, Secret: []byte("short")}}, "at least 32"},
		{"ES256 file given as RS256", []player.Key{{Kid: "a", Alg: player.AlgRS256, PublicKeyFile: ecPath}}, "is not a RS256 key"},
		{"RSA under 2048 bits", []player.Key{{Kid: "a", Alg: player.AlgRS256, PublicKeyFile: smallPath}}, "at least 2048"},
		{"missing file", []player.Key{{Kid: "a", Alg: player.AlgES256, PublicKeyFile: filepath.Join(dir, "nope.pem")}}, "no such file"},
		{"HS256 with a file", []player.Key{{Kid: "a", Alg: player.AlgHS256, PublicKeyFile: ecPath}}, "takes a secret"},
		{"unknown alg", []player.Key{{Kid: "a", Alg: "none", PublicKeyFile: ecPath}}, "not one of"},
		{"duplicate kid", []player.Key{{Kid: "a", Alg: player.AlgHS256, Secret: []byte(hsSecret)}, {Kid: "a", Alg: player.AlgES256, PublicKeyFile: ecPath}}, "used twice"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := player.NewVerifier(player.Options{Keys: tc.keys}, nil)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("NewVerifier = %v, want an error containing %q", err, tc.want)
			}
		})
	}
}

package httpapi

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/pem"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/rankgate/rankgate/internal/player"
)

// BenchmarkAuth is the cost of authenticating one request on a read route
// (Auth.Wrap around a handler that does nothing): a static token (the
// baseline), an HS256 player token verified every time (no cache), the
// same token served from the verified-token cache, and an ES256 token
// without cache for scale.
//
//	go test ./internal/httpapi -run '^$' -bench BenchmarkAuth -benchmem -count 3
func BenchmarkAuth(b *testing.B) {
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		b.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(ecKey.Public())
	if err != nil {
		b.Fatal(err)
	}
	pemPath := filepath.Join(b.TempDir(), "es.pem")
	if err := os.WriteFile(pemPath, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der}), 0o600); err != nil {
		b.Fatal(err)
	}
	claims := jwt.MapClaims{"sub": "u1001", "iss": "https://game.example.com", "aud": jwtAudience, "scope": "read write:self",
		"exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix()}
	sign := func(m jwt.SigningMethod, kid string, key any) string {
		tok := jwt.NewWithClaims(m, claims)
		tok.Header["kid"] = kid
		s, err := tok.SignedString(key)
		if err != nil {
			b.Fatal(err)
		}
		return s
	}
	hsToken := sign(jwt.SigningMethodHS256, "hs", []byte(jwtSecret))
	esToken := sign(jwt.SigningMethodES256, "es", ecKey)
	auth := func(cache int) *Auth {
		v, err := player.NewVerifier(player.Options{Issuer: "https://game.example.com", Audience: jwtAudience, ClockSkew: 30 * time.Second,
			CacheSize: cache, Keys: []player.Key{{Kid: "hs", Alg: player.AlgHS256, Secret: []byte(jwtSecret)},
				{Kid: "es", Alg: player.AlgES256, PublicKeyFile: pemPath}}}, nil)
		if err != nil {
			b.Fatal(err)
		}
		a, err := NewAuth(AuthOptions{Tokens: testTokens, JWT: v})
		if err != nil {
			b.Fatal(err)
		}
		return a
	}
	for _, bc := range []struct {
		name, token string
		cache       int
	}{
		{"static-token", "read-0123456789", -1},
		{"jwt-HS256-nocache", hsToken, -1},
		{"jwt-HS256-cached", hsToken, 0},
		{"jwt-ES256-nocache", esToken, -1},
	} {
		b.Run(bc.name, func(b *testing.B) {
			mux := http.NewServeMux()
			mux.Handle("GET "+board+"/top", auth(bc.cache).Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(http.StatusNoContent)
			})))
			req := httptest.NewRequest(http.MethodGet, "/v1/boards/learning/current/national/top", nil)
			req.Header.Set("Authorization", "Bearer "+bc.token)
			w := &discardWriter{h: http.Header{}}
			b.ReportAllocs()
			for b.Loop() {
				w.code = 0
				mux.ServeHTTP(w, req)
				if w.code != http.StatusNoContent {
					b.Fatalf("status %d", w.code)
				}
			}
		})
	}
}

// discardWriter is a ResponseWriter that keeps only the status.
type discardWriter struct {
	h    http.Header
	code int
}

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d *discardWriter) WriteHeader(code int)        { d.code = code }

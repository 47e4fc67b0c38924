package httpapi

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/rankgate/rankgate/internal/player"
)

// FuzzAuthorizationHeader drives the token input path — the Authorization
// header through bearer(), the static-token compare and the JWT verifier —
// with arbitrary values on a player read route: nothing panics, every answer
// is 204, 401 or 403, and a request let through as a player is always the
// one member the fuzz keys ever signed for (no crafted token names another).
func FuzzAuthorizationHeader(f *testing.F) {
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	v, err := player.NewVerifier(player.Options{Audience: jwtAudience, ClockSkew: time.Second, Now: func() time.Time { return now },
		Keys: []player.Key{{Kid: "hs", Alg: player.AlgHS256, Secret: []byte(jwtSecret)},
			{Kid: "hs2", Alg: player.AlgHS256, Secret: []byte(jwtSecret + "-2")}}}, nil)
	if err != nil {
		f.Fatal(err)
	}
	a, err := NewAuth(AuthOptions{Tokens: testTokens, JWT: v})
	if err != nil {
		f.Fatal(err)
	}
	sign := func(m jwt.SigningMethod, kid string, key any, c jwt.MapClaims) string {
		tok := jwt.NewWithClaims(m, c)
		tok.Header["kid"] = kid
		s, err := tok.SignedString(key)
		if err != nil {
			f.Fatal(err)
		}
		return s
	}
	good := jwt.MapClaims{"sub": "u1", "aud": jwtAudience, "scope": "read", "exp": now.Add(time.Hour).Unix()}
	valid := sign(jwt.SigningMethodHS256, "hs", []byte(jwtSecret), good)
	for _, s := range []string{
		"Bearer " + valid,
		"bearer " + valid,
		"Bearer  " + valid,
		"Bearer " + valid + " x",
		"Bearer " + sign(jwt.SigningMethodHS256, "hs2", []byte(jwtSecret+"-2"), good),
		"Bearer " + sign(jwt.SigningMethodNone, "hs", jwt.UnsafeAllowNoneSignatureType, good),
		"Bearer " + sign(jwt.SigningMethodHS384, "hs", []byte(jwtSecret), good),
		"Bearer " + strings.TrimRight(valid, "A"),
		"Bearer " + valid[:len(valid)-3],
		"Bearer read-0123456789",
		"Bearer e30.e30.",
		"Bearer ..",
		"Bearer eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJ1MSJ9.",
		"Basic dXNlcjpwYXNz",
		"Bearer",
		"",
	} {
		f.Add(s)
	}
	var h http.Handler = a.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if p, ok := PrincipalFrom(r.Context()); ok && p.Player && p.Member != "u1" {
			panic("a player principal for member " + p.Member)
		}
		w.WriteHeader(http.StatusNoContent)
	}))
	mux := http.NewServeMux()
	mux.Handle("GET "+board+"/top", h)
	f.Fuzz(func(t *testing.T, header string) {
		req := httptest.NewRequest(http.MethodGet, "/v1/boards/learning/current/national/top", nil)
		req.Header["Authorization"] = []string{header}
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, req)
		switch rec.Code {
		case http.StatusNoContent, http.StatusUnauthorized, http.StatusForbidden:
		default:
			t.Fatalf("Authorization %q: status %d", header, rec.Code)
		}
	})
}

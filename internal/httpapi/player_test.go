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
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/rankgate/rankgate/internal/player"
	"github.com/rankgate/rankgate/internal/rank"
)

const (
	jwtSecret   = "0123456789abcdef0123456789abcdef-test"
	jwtAudience = "rankgate"
)

// docRoute is one row of docs/security.md's route table.
type docRoute struct {
	pattern string
	static  []string
	player  []string
	self    bool
}

// routeTable reads "Every route's scope" from docs/security.md.
func routeTable(t *testing.T) []docRoute {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("..", "..", "docs", "security.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, after, ok := strings.Cut(string(b), "## Every route's scope")
	if !ok {
		t.Fatal(`docs/security.md has no "## Every route's scope" section`)
	}
	tick := regexp.MustCompile("`([^`]+)`")
	var rows []docRoute
	for _, line := range strings.Split(after, "\n") {
		cells := strings.Split(line, "|")
		if len(cells) != 5 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`") {
			continue
		}
		var r docRoute
		r.pattern = tick.FindStringSubmatch(cells[1])[1]
		for _, m := range tick.FindAllStringSubmatch(cells[2], -1) {
			r.static = append(r.static, m[1])
		}
		for _, m := range tick.FindAllStringSubmatch(cells[3], -1) {
			r.player = append(r.player, m[1])
		}
		r.self = strings.Contains(cells[3], "own member only")
		rows = append(rows, r)
	}
	if len(rows) < 30 {
		t.Fatalf("docs/security.md's route table has %d rows", len(rows))
	}
	return rows
}

// TestRouteScopesTable: docs/security.md lists every route with the scopes
// that open it, for static and player tokens; the code agrees; and every
// credential — static tokens, good player tokens with too few or too many
// scopes, and forged, expired, wrong-key, wrong-audience, alg-none,
// unknown-kid and key-confusion JWTs — gets exactly what the table says on
// every route.
func TestRouteScopesTable(t *testing.T) {
	t.Parallel()
	rows := routeTable(t)
	patterns := routePatterns(t)
	for _, p := range patterns {
		i := slices.IndexFunc(rows, func(r docRoute) bool { return samePattern(r.pattern, p) })
		if i < 0 {
			t.Errorf("route %q has no row in docs/security.md's route table", p)
			continue
		}
		r := rows[i]
		static, _ := ScopesOf(p)
		ps, self, ok := PlayerScopesOf(p)
		if !slices.Equal(static, r.static) {
			t.Errorf("%s: static scopes %v in the code, %v in the docs", p, static, r.static)
		}
		if !slices.Equal(ps, r.player) || self != r.self || ok != (len(r.player) > 0) {
			t.Errorf("%s: player scopes %v (own member only %v) in the code, %v (%v) in the docs", p, ps, self, r.player, r.self)
		}
	}
	for _, r := range rows {
		if !slices.ContainsFunc(patterns, func(p string) bool { return samePattern(r.pattern, p) }) {
			t.Errorf("docs/security.md lists %q, which is no route", r.pattern)
		}
	}

	// The credentials.
	now := time.Now()
	ecKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	strange, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	der, err := x509.MarshalPKIXPublicKey(ecKey.Public())
	if err != nil {
		t.Fatal(err)
	}
	ecPEM := pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: der})
	pemPath := filepath.Join(t.TempDir(), "es.pem")
	if err := os.WriteFile(pemPath, ecPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	v, err := player.NewVerifier(player.Options{Audience: jwtAudience, ClockSkew: 5 * time.Second, Keys: []player.Key{
		{Kid: "hs", Alg: player.AlgHS256, Secret: []byte(jwtSecret)},
		{Kid: "es", Alg: player.AlgES256, PublicKeyFile: pemPath},
	}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewAuth(AuthOptions{Tokens: append(slices.Clone(testTokens),
		Token{Name: "RK_AWARDS", Secret: "awards-0123456789", Scopes: []string{ScopeAwards}}), JWT: v})
	if err != nil {
		t.Fatal(err)
	}
	claims := func(scope string, kv ...any) jwt.MapClaims {
		c := jwt.MapClaims{"sub": "u1", "aud": jwtAudience, "scope": scope, "exp": now.Add(time.Hour).Unix(), "iat": now.Unix()}
		for i := 0; i < len(kv); i += 2 {
			c[kv[i].(string)] = kv[i+1]
		}
		return c
	}
	signed := func(m jwt.SigningMethod, kid string, key any, c jwt.MapClaims) string {
		tok := jwt.NewWithClaims(m, c)
		tok.Header["kid"] = kid
		s, err := tok.SignedString(key)
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	hs := []byte(jwtSecret)
	type cred struct {
		title  string
		token  string
		static []string // static scopes
		player []string // player scopes of a valid JWT
		valid  bool
	}
	creds := []cred{
		{title: "static read", token: "read-0123456789", static: []string{ScopeRead}, valid: true},
		{title: "static write", token: "write-0123456789", static: []string{ScopeWrite}, valid: true},
		{title: "static admin", token: "admin-0123456789", static: []string{ScopeAdmin}, valid: true},
		{title: "static awards", token: "awards-0123456789", static: []string{ScopeAwards}, valid: true},
		{title: "jwt read", token: signed(jwt.SigningMethodHS256, "hs", hs, claims("read")), player: []string{"read"}, valid: true},
		{title: "jwt live (ES256)", token: signed(jwt.SigningMethodES256, "es", ecKey, claims("live")), player: []string{"live"}, valid: true},
		{title: "jwt write:self", token: signed(jwt.SigningMethodHS256, "hs", hs, claims("write:self")), player: []string{"write:self"}, valid: true},
		{title: "jwt over-scoped (admin write awards read)", token: signed(jwt.SigningMethodHS256, "hs", hs, claims("admin write awards read")),
			player: []string{"read"}, valid: true},
		{title: "jwt no scope", token: signed(jwt.SigningMethodHS256, "hs", hs, claims("")), valid: true},
		{title: "jwt forged", token: signed(jwt.SigningMethodHS256, "hs", []byte("ffffffffffffffffffffffffffffffff-forged"), claims("read write:self"))},
		{title: "jwt expired", token: signed(jwt.SigningMethodHS256, "hs", hs, claims("read", "exp", now.Add(-time.Minute).Unix()))},
		{title: "jwt wrong key", token: signed(jwt.SigningMethodES256, "es", strange, claims("read"))},
		{title: "jwt wrong audience", token: signed(jwt.SigningMethodHS256, "hs", hs, claims("read", "aud", "other"))},
		{title: "jwt alg none", token: signed(jwt.SigningMethodNone, "hs", jwt.UnsafeAllowNoneSignatureType, claims("read write:self"))},
		{title: "jwt unknown kid", token: signed(jwt.SigningMethodHS256, "k9", hs, claims("read"))},
		{title: "jwt key confusion (HS256 with the ES256 public key)", token: signed(jwt.SigningMethodHS256, "es", ecPEM, claims("read"))},
	}

	mux := http.NewServeMux()
	for _, p := range patterns {
		mux.Handle(p, a.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusNoContent)
		})))
	}
	fill := strings.NewReplacer("{family}", "learning", "{period}", "2026-W34", "{dimension}", "national",
		"{key}", strings.Repeat("a", 64), "{id}", "r1")
	for _, r := range rows {
		method, path, _ := strings.Cut(r.pattern, " ")
		path = fill.Replace(path)
		members := []string{"u1"}
		if strings.Contains(path, "{member}") {
			members = append(members, "u2") // u1 is every JWT's member
		}
		for _, m := range members {
			target := strings.ReplaceAll(path, "{member}", m)
			for _, c := range creds {
				t.Run(method+" "+target+"/"+c.title, func(t *testing.T) {
					req := httptest.NewRequest(method, target, nil)
					req.Header.Set("Authorization", "Bearer "+c.token)
					rec := httptest.NewRecorder()
					mux.ServeHTTP(rec, req)
					want := http.StatusForbidden
					switch {
					case !c.valid:
						want = http.StatusUnauthorized
					case c.static != nil && slices.ContainsFunc(r.static, func(s string) bool { return slices.Contains(c.static, s) }):
						want = http.StatusNoContent
					case c.static == nil && slices.ContainsFunc(r.player, func(s string) bool { return slices.Contains(c.player, s) }) &&
						(!r.self || m == "u1"):
						want = http.StatusNoContent
					}
					check(t, "status", rec.Code, want)
					switch want {
					case http.StatusUnauthorized:
						e := decodeError(t, rec).Error
						check(t, "code", rank.Code(e.Code), rank.CodeUnauthenticated)
						check(t, "message", e.Message, "a valid bearer token is required (Authorization: Bearer <token>)")
					case http.StatusForbidden:
						check(t, "code", rank.Code(decodeError(t, rec).Error.Code), rank.CodeForbidden)
					}
				})
			}
		}
	}
}

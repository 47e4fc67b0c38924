// Package player is player access: JWT player tokens minted by a
// game's backend, verified with golang-jwt v5 (keys picked by kid, the
// algorithm pinned per key, rotation without a restart, a cache of verified
// tokens that honours exp), and the rules of self-only writes (own member,
// families with client_writes, max_delta, a per-member rate counted in
// Redis so that it holds across every gateway).
//
// It imports rank and shard (keys) and golang-jwt; it must not import
// net/http, go-redis, store, gateway or httpapi: the Redis counter is a small
// interface the store implements.
package player

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rsa"
	"crypto/sha256"
	"crypto/x509"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/rankgate/rankgate/internal/rank"
)

// Player scopes: what a JWT may grant. Any other scope in a token is
// ignored (a token may carry scopes for other services); a JWT never grants
// the static scopes write or admin.
const (
	ScopeRead      = "read"       // board reads, the member's own history
	ScopeLive      = "live"       // live streams and their tickets
	ScopeWriteSelf = "write:self" // events for the token's own member
)

// Algorithms a key may have.
const (
	AlgHS256 = "HS256"
	AlgES256 = "ES256"
	AlgRS256 = "RS256"
	AlgEdDSA = "EdDSA"
)

// MinSecretBytes is the shortest HS256 secret accepted (RFC 7518 §3.2: a key
// at least as long as the hash).
const MinSecretBytes = 32

// MaxTokenBytes bounds a token: anything longer is refused unparsed.
const MaxTokenBytes = 8192

// DefaultCacheSize is the number of verified tokens kept by default.
const DefaultCacheSize = 100_000

// Key is one verification key.
type Key struct {
	Kid string
	Alg string // HS256 | ES256 | RS256 | EdDSA
	// Secret is the HS256 secret (read from its env var by the caller).
	Secret []byte
	// PublicKeyFile is the PEM file of an ES256, RS256 or EdDSA public key
	// (PKIX "PUBLIC KEY", or "RSA PUBLIC KEY"); re-read by Reload.
	PublicKeyFile string
}

// Options configure a Verifier.
type Options struct {
	Issuer   string // checked when set
	Audience string // checked when set
	// MemberClaim names the claim that holds the member (default "sub").
	MemberClaim string
	// ClockSkew is the leeway of exp, nbf and iat.
	ClockSkew time.Duration
	Keys      []Key // at least one
	// CacheSize bounds the verified tokens kept (by SHA-256 of the token);
	// 0: DefaultCacheSize; negative: no cache.
	CacheSize int
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// ReadFile reads PEM files; nil means os.ReadFile.
	ReadFile func(string) ([]byte, error)
}

// Claims is what a verified token says.
type Claims struct {
	Subject string // sub ("" when absent)
	Member  string // from the member claim, a valid member id
	Scopes  []string
	Expires time.Time
	// Name names the token holder in logs and per-token bounds: "jwt:"
	// and the subject, or the member when there is no subject.
	Name string
}

// Has reports whether the claims carry scope.
func (c Claims) Has(scope string) bool { return slices.Contains(c.Scopes, scope) }

// ErrInvalid is every refusal of a token: which check failed is not the
// client's business (the refusal metric and the debug log say).
var ErrInvalid = errors.New("invalid token")

// Verifier checks player tokens. Safe for concurrent use.
type Verifier struct {
	now      func() time.Time
	readFile func(string) ([]byte, error)
	cache    *tokenCache // nil: off
	st       atomic.Pointer[state]
	reloadMu sync.Mutex
	refused  *prometheus.CounterVec
	verified prometheus.Counter
	reloads  *prometheus.CounterVec
}

// state is one generation of keys and checks, swapped whole on reload.
type state struct {
	opts   Options
	keys   map[string]verKey
	only   *verKey // the one key when exactly one is configured
	parser *jwt.Parser
	files  map[string]fileStamp
	gen    uint64
}

type verKey struct {
	alg string
	key any // []byte, *ecdsa.PublicKey, *rsa.PublicKey, ed25519.PublicKey
}

type fileStamp struct {
	mod  time.Time
	size int64
}

// NewVerifier builds a verifier and loads its keys. reg (nil: unregistered)
// takes rankgate_jwt_refused_total, rankgate_jwt_verified_total and
// rankgate_jwt_key_reloads_total.
func NewVerifier(o Options, reg prometheus.Registerer) (*Verifier, error) {
	v := &Verifier{now: o.Now, readFile: o.ReadFile,
		refused: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rankgate_jwt_refused_total",
			Help: "JWT player tokens refused, by reason (malformed, unknown_kid, signature, expired, claims, member).",
		}, []string{"reason"}),
		verified: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "rankgate_jwt_verified_total",
			Help: "JWT player tokens verified (signature checked, not served from the cache).",
		}),
		reloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rankgate_jwt_key_reloads_total",
			Help: "Reloads of the JWT keys, by result (ok, error: the previous keys stay).",
		}, []string{"result"}),
	}
	if v.now == nil {
		v.now = time.Now
	}
	if v.readFile == nil {
		v.readFile = os.ReadFile
	}
	switch {
	case o.CacheSize == 0:
		v.cache = newTokenCache(DefaultCacheSize)
	case o.CacheSize > 0:
		v.cache = newTokenCache(o.CacheSize)
	}
	for _, r := range []string{"malformed", "unknown_kid", "signature", "expired", "claims", "member"} {
		v.refused.WithLabelValues(r)
	}
	st, err := v.build(o, 1)
	if err != nil {
		return nil, err
	}
	v.st.Store(st)
	if reg != nil {
		for _, c := range []prometheus.Collector{v.refused, v.verified, v.reloads} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("player: registering metrics: %w", err)
			}
		}
	}
	return v, nil
}

// build loads the keys of o into a new state of generation gen.
func (v *Verifier) build(o Options, gen uint64) (*state, error) {
	if len(o.Keys) == 0 {
		return nil, errors.New("player: at least one JWT key is required")
	}
	if o.ClockSkew < 0 {
		return nil, fmt.Errorf("player: clock skew %s is negative", o.ClockSkew)
	}
	if o.MemberClaim == "" {
		o.MemberClaim = "sub"
	}
	st := &state{opts: o, keys: map[string]verKey{}, files: map[string]fileStamp{}, gen: gen}
	var algs []string
	for i, k := range o.Keys {
		if _, dup := st.keys[k.Kid]; dup {
			return nil, fmt.Errorf("player: keys[%d]: kid %q used twice", i, k.Kid)
		}
		vk, err := v.loadKey(k, st.files)
		if err != nil {
			return nil, fmt.Errorf("player: keys[%d] (kid %q): %w", i, k.Kid, err)
		}
		st.keys[k.Kid] = vk
		if !slices.Contains(algs, k.Alg) {
			algs = append(algs, k.Alg)
		}
	}
	if len(o.Keys) == 1 {
		k := st.keys[o.Keys[0].Kid]
		st.only = &k
	}
	popts := []jwt.ParserOption{
		jwt.WithValidMethods(algs), // never the token's choice: only what a key has
		jwt.WithExpirationRequired(),
		jwt.WithIssuedAt(),
		jwt.WithLeeway(o.ClockSkew),
		jwt.WithTimeFunc(v.now),
	}
	if o.Issuer != "" {
		popts = append(popts, jwt.WithIssuer(o.Issuer))
	}
	if o.Audience != "" {
		popts = append(popts, jwt.WithAudience(o.Audience))
	}
	st.parser = jwt.NewParser(popts...)
	return st, nil
}

func (v *Verifier) loadKey(k Key, files map[string]fileStamp) (verKey, error) {
	if k.Alg == AlgHS256 {
		if k.PublicKeyFile != "" {
			return verKey{}, errors.New("an HS256 key takes a secret, not a public key file")
		}
		if len(k.Secret) < MinSecretBytes {
			return verKey{}, fmt.Errorf("the HS256 secret has %d bytes; at least %d are required", len(k.Secret), MinSecretBytes)
		}
		return verKey{alg: k.Alg, key: slices.Clone(k.Secret)}, nil
	}
	if len(k.Secret) > 0 {
		return verKey{}, fmt.Errorf("a %s key takes a public key file, not a secret", k.Alg)
	}
	switch k.Alg {
	case AlgES256, AlgRS256, AlgEdDSA:
	default:
		return verKey{}, fmt.Errorf("algorithm %q is not one of HS256, ES256, RS256, EdDSA", k.Alg)
	}
	if k.PublicKeyFile == "" {
		return verKey{}, fmt.Errorf("a %s key needs public_key_file", k.Alg)
	}
	if fi, err := os.Stat(k.PublicKeyFile); err == nil {
		files[k.PublicKeyFile] = fileStamp{mod: fi.ModTime(), size: fi.Size()}
	}
	data, err := v.readFile(k.PublicKeyFile)
	if err != nil {
		return verKey{}, err
	}
	pub, err := ParsePublicKey(data)
	if err != nil {
		return verKey{}, fmt.Errorf("%s: %w", k.PublicKeyFile, err)
	}
	switch p := pub.(type) {
	case *ecdsa.PublicKey:
		if k.Alg == AlgES256 && p.Curve == elliptic.P256() {
			return verKey{alg: k.Alg, key: p}, nil
		}
	case *rsa.PublicKey:
		if k.Alg == AlgRS256 {
			if p.N.BitLen() < 2048 {
				return verKey{}, fmt.Errorf("%s: an RSA key of %d bits; at least 2048 are required", k.PublicKeyFile, p.N.BitLen())
			}
			return verKey{alg: k.Alg, key: p}, nil
		}
	case ed25519.PublicKey:
		if k.Alg == AlgEdDSA {
			return verKey{alg: k.Alg, key: p}, nil
		}
	}
	return verKey{}, fmt.Errorf("%s: a %T is not a %s key", k.PublicKeyFile, pub, k.Alg)
}

// ParsePublicKey reads the first PEM block of data: a PKIX "PUBLIC KEY" or a
// PKCS #1 "RSA PUBLIC KEY".
func ParsePublicKey(data []byte) (any, error) {
	b, _ := pem.Decode(data)
	if b == nil {
		return nil, errors.New("no PEM block")
	}
	switch b.Type {
	case "PUBLIC KEY":
		return x509.ParsePKIXPublicKey(b.Bytes)
	case "RSA PUBLIC KEY":
		return x509.ParsePKCS1PublicKey(b.Bytes)
	}
	return nil, fmt.Errorf("a PEM block of type %q; want PUBLIC KEY", b.Type)
}

// Reload re-reads the public key files of the current options. On error the
// current keys stay and the error is returned.
func (v *Verifier) Reload() error {
	return v.Update(v.st.Load().opts)
}

// Update replaces the options (a config reloaded on SIGHUP: new keys, new
// issuer or audience) and reloads every key. On error nothing changes.
// Verified tokens cached under the previous keys are not served again.
func (v *Verifier) Update(o Options) error {
	v.reloadMu.Lock()
	defer v.reloadMu.Unlock()
	st, err := v.build(o, v.st.Load().gen+1)
	if err != nil {
		v.reloads.WithLabelValues("error").Inc()
		return err
	}
	v.st.Store(st)
	if v.cache != nil {
		v.cache.clear()
	}
	v.reloads.WithLabelValues("ok").Inc()
	return nil
}

// FilesChanged reports whether a public key file's modification time or
// size differs from when it was last loaded (or it cannot be read now).
func (v *Verifier) FilesChanged() bool {
	st := v.st.Load()
	for _, k := range st.opts.Keys {
		if k.PublicKeyFile == "" {
			continue
		}
		fi, err := os.Stat(k.PublicKeyFile)
		if err != nil {
			continue // a file being replaced: look again next time
		}
		if old, ok := st.files[k.PublicKeyFile]; !ok || !old.mod.Equal(fi.ModTime()) || old.size != fi.Size() {
			return true
		}
	}
	return false
}

// Verify checks a token: signature by the key its kid names, with that key's
// algorithm only; exp required; nbf and iat with the clock skew; iss and aud
// when configured; a valid member in the member claim. Any failure is
// ErrInvalid.
func (v *Verifier) Verify(token string) (Claims, error) {
	var h [sha256.Size]byte
	if v.cache != nil {
		h = sha256.Sum256([]byte(token))
	}
	return v.VerifyHashed(token, h)
}

// VerifyHashed is Verify for a caller that has the token's SHA-256 already
// (the static-token compare hashes every bearer token): the cache key.
func (v *Verifier) VerifyHashed(token string, h [sha256.Size]byte) (Claims, error) {
	st := v.st.Load()
	now := v.now()
	if v.cache != nil {
		if c, ok := v.cache.get(h, st.gen, now); ok {
			return c, nil
		}
	}
	c, reason := v.verify(st, token)
	if reason != "" {
		v.refused.WithLabelValues(reason).Inc()
		return Claims{}, ErrInvalid
	}
	v.verified.Inc()
	if v.cache != nil {
		// Served from the cache until exp (plus the skew the parser allows),
		// never later; a reload drops it (generation).
		v.cache.put(h, cached{c: c, gen: st.gen, until: c.Expires.Add(st.opts.ClockSkew)})
	}
	return c, nil
}

// verify parses and checks token; reason is "" on success.
func (v *Verifier) verify(st *state, token string) (Claims, string) {
	if len(token) > MaxTokenBytes || strings.Count(token, ".") != 2 {
		return Claims{}, "malformed"
	}
	tc := &tokenClaims{memberClaim: st.opts.MemberClaim}
	_, err := st.parser.ParseWithClaims(token, tc, func(t *jwt.Token) (any, error) {
		k, ok := st.lookup(t.Header["kid"])
		if !ok {
			return nil, errUnknownKid
		}
		if t.Method == nil || t.Method.Alg() != k.alg {
			return nil, errWrongAlg // a kid pins its algorithm: no HS/RS confusion
		}
		return k.key, nil
	})
	if err != nil {
		switch {
		case errors.Is(err, errUnknownKid):
			return Claims{}, "unknown_kid"
		case errors.Is(err, jwt.ErrTokenExpired), errors.Is(err, jwt.ErrTokenNotValidYet), errors.Is(err, jwt.ErrTokenUsedBeforeIssued):
			return Claims{}, "expired"
		case errors.Is(err, jwt.ErrTokenSignatureInvalid), errors.Is(err, errWrongAlg), errors.Is(err, jwt.ErrTokenUnverifiable):
			return Claims{}, "signature"
		case errors.Is(err, jwt.ErrTokenMalformed):
			return Claims{}, "malformed"
		default:
			return Claims{}, "claims"
		}
	}
	if !rank.ValidMember(tc.member) {
		return Claims{}, "member"
	}
	c := Claims{Subject: tc.Subject, Member: tc.member, Scopes: tc.Scope.known(), Name: "jwt:" + tc.Subject}
	if tc.Subject == "" {
		c.Name = "jwt:" + tc.member
	}
	if tc.ExpiresAt != nil {
		c.Expires = tc.ExpiresAt.Time
	}
	return c, ""
}

var (
	errUnknownKid = errors.New("unknown kid")
	errWrongAlg   = errors.New("algorithm does not match the key")
)

// lookup finds the key a token's kid header names; a token without a kid
// may use the key only when exactly one is configured.
func (st *state) lookup(kid any) (verKey, bool) {
	switch s := kid.(type) {
	case nil:
		if st.only != nil {
			return *st.only, true
		}
		return verKey{}, false
	case string:
		k, ok := st.keys[s]
		return k, ok
	}
	return verKey{}, false
}

// tokenClaims is the claim set a token is decoded into.
type tokenClaims struct {
	jwt.RegisteredClaims
	Scope scopeClaim `json:"scope"`

	memberClaim string
	member      string
}

// UnmarshalJSON decodes the registered claims and scope, then the member
// from the member claim (a JSON string; anything else leaves it empty).
func (c *tokenClaims) UnmarshalJSON(b []byte) error {
	type plain struct {
		jwt.RegisteredClaims
		Scope scopeClaim `json:"scope"`
	}
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	c.RegisteredClaims, c.Scope = p.RegisteredClaims, p.Scope
	if c.memberClaim == "" || c.memberClaim == "sub" {
		c.member = c.Subject
		return nil
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return err
	}
	var s string
	if raw, ok := m[c.memberClaim]; ok && json.Unmarshal(raw, &s) == nil {
		c.member = s
	}
	return nil
}

// scopeClaim is the scope claim: a space-separated string (RFC 8693 §4.2)
// or an array of strings.
type scopeClaim []string

func (s *scopeClaim) UnmarshalJSON(b []byte) error {
	var str string
	if err := json.Unmarshal(b, &str); err == nil {
		*s = strings.Fields(str)
		return nil
	}
	var arr []string
	if err := json.Unmarshal(b, &arr); err != nil {
		return errors.New("scope is neither a string nor an array of strings")
	}
	*s = arr
	return nil
}

// known keeps the player scopes, once each, in a fixed order.
func (s scopeClaim) known() []string {
	var out []string
	for _, sc := range []string{ScopeRead, ScopeLive, ScopeWriteSelf} {
		if slices.Contains(s, sc) {
			out = append(out, sc)
		}
	}
	return out
}

package httpapi

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"golang.org/x/time/rate"

	"github.com/rankgate/rankgate/internal/player"
	"github.com/rankgate/rankgate/internal/rank"
)

// Scopes. A token carries each scope it is given; none implies
// another.
const (
	ScopeRead  = "read"
	ScopeWrite = "write"
	ScopeAdmin = "admin"
	// ScopeAwards is the scope of an award consumer: it lists the award
	// outbox and acknowledges what it took, and nothing else. (A read or
	// write token keeps doing what it did before the scope existed.)
	ScopeAwards = "awards"
)

// JWTVerifier checks player tokens (*player.Verifier).
type JWTVerifier interface {
	// VerifyHashed checks token; h is its SHA-256.
	VerifyHashed(token string, h [sha256.Size]byte) (player.Claims, error)
}

var _ JWTVerifier = (*player.Verifier)(nil)

// Token is one configured bearer token.
type Token struct {
	// Name names the token in logs and metric labels (the env var holding
	// it); it is never the secret.
	Name   string
	Secret string
	Scopes []string
	// RatePerSecond > 0 limits the token to a token bucket refilled at this
	// rate and holding Burst (≥ 1); 0: unlimited.
	RatePerSecond float64
	Burst         int
}

// AuthOptions configure NewAuth.
type AuthOptions struct {
	// Tokens are the static tokens; at least one unless JWT is set.
	Tokens []Token
	// JWT, when set, accepts player tokens (JWTs) wherever no static token
	// matched; their scopes reach only the routes playerRules name.
	JWT JWTVerifier
	// Logger receives the refusals of routes without a scope; nil discards.
	Logger *slog.Logger
	// Registerer takes rankgate_http_rate_limited_total; nil leaves it
	// unregistered.
	Registerer prometheus.Registerer
	// Now is the rate limiters' clock; nil means time.Now.
	Now func() time.Time
	// Tickets, when set, are accepted instead of a bearer token on the
	// routes TicketRoute names (?ticket=T); the same store backs
	// Options.Tickets. Nil: no ticket is accepted.
	Tickets *Tickets
}

// Auth checks bearer tokens and scopes, and applies per-token rate limits.
// Its Wrap is httpapi's Options.Auth.
type Auth struct {
	tokens  []authToken
	log     *slog.Logger
	now     func() time.Time
	limited *prometheus.CounterVec
	tickets *Tickets // nil: none accepted
	jwt     JWTVerifier
}

type authToken struct {
	name    string
	hash    [sha256.Size]byte
	scopes  []string
	limiter *rate.Limiter // nil: unlimited
}

// NewAuth builds the token check. Every token needs a name, a non-empty
// secret distinct from the others, and known scopes.
func NewAuth(o AuthOptions) (*Auth, error) {
	if len(o.Tokens) == 0 && o.JWT == nil {
		return nil, errors.New("httpapi: NewAuth needs at least one token or a JWT verifier (neither: leave Options.Auth nil)")
	}
	a := &Auth{
		log:     o.Logger,
		now:     o.Now,
		tickets: o.Tickets,
		jwt:     o.JWT,
		limited: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rankgate_http_rate_limited_total",
			Help: "Requests answered 429 rate_limited, by token (the name of its env var).",
		}, []string{"token"}),
	}
	if a.log == nil {
		a.log = slog.New(slog.DiscardHandler)
	}
	if a.now == nil {
		a.now = time.Now
	}
	for i, t := range o.Tokens {
		switch {
		case t.Name == "":
			return nil, fmt.Errorf("httpapi: token %d has no name", i)
		case t.Secret == "":
			return nil, fmt.Errorf("httpapi: token %s is empty", t.Name)
		case len(t.Scopes) == 0:
			return nil, fmt.Errorf("httpapi: token %s has no scopes", t.Name)
		case math.IsNaN(t.RatePerSecond) || t.RatePerSecond < 0 || (t.RatePerSecond > 0 && t.Burst < 1):
			return nil, fmt.Errorf("httpapi: token %s: rate %v with burst %d", t.Name, t.RatePerSecond, t.Burst)
		}
		for _, sc := range t.Scopes {
			if sc != ScopeRead && sc != ScopeWrite && sc != ScopeAdmin && sc != ScopeAwards {
				return nil, fmt.Errorf("httpapi: token %s has unknown scope %q", t.Name, sc)
			}
		}
		at := authToken{name: t.Name, hash: sha256.Sum256([]byte(t.Secret)), scopes: slices.Clone(t.Scopes)}
		for _, prev := range a.tokens {
			if prev.name == at.name || prev.hash == at.hash {
				return nil, fmt.Errorf("httpapi: tokens %s and %s share a name or a secret", prev.name, at.name)
			}
		}
		if t.RatePerSecond > 0 {
			at.limiter = rate.NewLimiter(rate.Limit(t.RatePerSecond), t.Burst)
			a.limited.WithLabelValues(t.Name) // the series exists from the start, at 0
		}
		a.tokens = append(a.tokens, at)
	}
	if o.Registerer != nil {
		if err := o.Registerer.Register(a.limited); err != nil {
			return nil, fmt.Errorf("httpapi: registering metrics: %w", err)
		}
	}
	return a, nil
}

// Wrap guards one /v1 route: 401 unauthenticated (with WWW-Authenticate:
// Bearer) without a known bearer token or a valid player token, 403
// forbidden when the token lacks the route's scope or the route has none
// (fail closed), 429 rate_limited (with Retry-After) over the token's rate.
// It runs after routing: the scope comes from r.Pattern. On a TicketRoute, a
// request without an Authorization header may present ?ticket=T instead (see
// Tickets): a used, expired or unknown ticket is 401 too, and a good one
// leaves the query before the handler sees it.
//
// A player token (JWT) reaches only the routes playerRules name, with the
// player scopes they take; on a route marked self, only for its own member
// ({member} in the path). Every refusal of a JWT says as little as a wrong
// static token does.
func (a *Auth) Wrap(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := a.authenticate(r)
		if !ok && a.tickets != nil && TicketRoute(r.Pattern) && len(r.Header.Values("Authorization")) == 0 {
			tp, rr, err := a.redeem(r)
			if err != nil {
				w.Header().Set("WWW-Authenticate", "Bearer")
				writeErrorBody(w, errorBody{Code: rank.CodeUnauthenticated,
					Message: "a valid bearer token or ticket is required (Authorization: Bearer <token>, or ?ticket= from POST /v1/tickets; a ticket is good once, on the gateway that issued it)"})
				return
			}
			p, ok, r = tp, true, rr
		}
		if !ok {
			w.Header().Set("WWW-Authenticate", "Bearer")
			writeErrorBody(w, errorBody{Code: rank.CodeUnauthenticated,
				Message: "a valid bearer token is required (Authorization: Bearer <token>)"})
			return
		}
		if p.Player {
			a.servePlayer(w, r, p, next)
			return
		}
		tok := p.tok
		rule, ok := scopeRuleOf(r.Pattern)
		if !ok {
			a.log.ErrorContext(r.Context(), "route has no scope; refused (map it in httpapi.scopeRules)",
				"route", r.Pattern, "token", tok.name)
			writeErrorBody(w, errorBody{Code: rank.CodeForbidden, Message: "this route is not open to any token"})
			return
		}
		if !slices.Contains(p.Scopes, rule.scope) && (rule.alt == "" || !slices.Contains(p.Scopes, rule.alt)) {
			writeErrorBody(w, errorBody{Code: rank.CodeForbidden, Message: "this token lacks the " + rule.scope + " scope"})
			return
		}
		if tok.limiter != nil {
			if wait := reserve(tok.limiter, a.now()); wait > 0 {
				a.limited.WithLabelValues(tok.name).Inc()
				secs := int(math.Ceil(wait.Seconds()))
				w.Header().Set("Retry-After", strconv.Itoa(secs))
				writeErrorBody(w, errorBody{Code: CodeRateLimited,
					Message: "this token is over its rate limit; retry after " + strconv.Itoa(secs) + "s"})
				return
			}
		}
		// Admin routes name their operator in the audit log (OperatorOf).
		if rule.scope == ScopeAdmin || needsPrincipal(r.Pattern) {
			if _, ok := PrincipalFrom(r.Context()); !ok {
				r = r.WithContext(context.WithValue(r.Context(), principalKey{}, p))
				if TicketRoute(r.Pattern) {
					r = withoutTicket(r) // a token won; an unused ticket stays out of the handler's sight
				}
			}
		}
		next.ServeHTTP(w, r)
	})
}

// servePlayer guards a route for a player principal: the route must be in
// playerRules, the principal must hold one of its player scopes, and a self
// route must name the principal's own member. The principal always goes
// into the context (the event route checks its member).
func (a *Auth) servePlayer(w http.ResponseWriter, r *http.Request, p Principal, next http.Handler) {
	rule, ok := playerRuleOf(r.Pattern)
	if !ok || !slices.ContainsFunc(rule.scopes, func(s string) bool { return slices.Contains(p.Scopes, s) }) {
		writeErrorBody(w, errorBody{Code: rank.CodeForbidden, Message: "this route is not open to this player token"})
		return
	}
	if rule.self && r.PathValue("member") != p.Member {
		writeErrorBody(w, errorBody{Code: rank.CodeForbidden, Field: "member", Message: "a player token reads only its own member here"})
		return
	}
	if _, ok := PrincipalFrom(r.Context()); !ok {
		r = r.WithContext(context.WithValue(r.Context(), principalKey{}, p))
		if TicketRoute(r.Pattern) {
			r = withoutTicket(r)
		}
	}
	next.ServeHTTP(w, r)
}

// redeem uses up the request's ?ticket= and returns its principal and the
// request without the ticket in its query, with the principal in its
// context. No ticket, or more than one, is errBadTicket.
func (a *Auth) redeem(r *http.Request) (Principal, *http.Request, error) {
	q, err := url.ParseQuery(r.URL.RawQuery)
	if vs := q["ticket"]; err != nil || len(vs) != 1 {
		return Principal{}, nil, errBadTicket
	}
	p, err := a.tickets.Redeem(q.Get("ticket"))
	if err != nil || (p.tok == nil && !p.Player) || (p.Player && !a.now().Before(p.Expires)) {
		return Principal{}, nil, errBadTicket // a player's ticket ends with its token
	}
	return p, withoutTicket(r.WithContext(context.WithValue(r.Context(), principalKey{}, p))), nil
}

// withoutTicket returns r, or a copy of it without ticket in its query
// (URL and RequestURI): the handler never sees a ticket, and never logs one.
// r must be a copy already when it changes (WithContext makes one).
func withoutTicket(r *http.Request) *http.Request {
	if !strings.Contains(r.URL.RawQuery, "ticket") {
		return r
	}
	q, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil || !q.Has("ticket") {
		return r
	}
	q.Del("ticket")
	u := *r.URL
	u.RawQuery = q.Encode()
	r.URL = &u
	r.RequestURI = u.RequestURI()
	return r
}

// reserve takes one event from l at now, or takes nothing and returns how
// long until one is available.
func reserve(l *rate.Limiter, now time.Time) time.Duration {
	res := l.ReserveN(now, 1)
	if !res.OK() {
		return time.Second // cannot happen with burst ≥ 1
	}
	if d := res.DelayFrom(now); d > 0 {
		res.CancelAt(now)
		return d
	}
	return 0
}

// authenticate returns who the request's bearer credentials name: a static
// token, or else a player token the JWT verifier accepts. Every configured
// static token is compared, in constant time, whatever matches: the time
// taken says nothing about which token or how much of one was right. Secrets
// are compared as SHA-256 digests, so their lengths do not show either.
func (a *Auth) authenticate(r *http.Request) (Principal, bool) {
	vals := r.Header.Values("Authorization")
	if len(vals) != 1 {
		return Principal{}, false
	}
	secret, ok := bearer(vals[0])
	if !ok {
		return Principal{}, false
	}
	sum := sha256.Sum256([]byte(secret))
	if len(a.tokens) > 0 {
		found := -1
		for i := range a.tokens {
			eq := subtle.ConstantTimeCompare(sum[:], a.tokens[i].hash[:])
			found = subtle.ConstantTimeSelect(eq, i, found)
		}
		if found >= 0 {
			t := &a.tokens[found]
			return Principal{Token: t.name, Scopes: t.scopes, tok: t}, true
		}
	}
	if a.jwt == nil {
		return Principal{}, false
	}
	c, err := a.jwt.VerifyHashed(secret, sum)
	if err != nil {
		return Principal{}, false
	}
	return playerPrincipal(c), true
}

// playerPrincipal is the principal of a verified player token. Its Token
// ("jwt:" and the subject, or the member without one) names it in logs and
// counts its live streams (live.max_per_token).
func playerPrincipal(c player.Claims) Principal {
	return Principal{Token: c.Name, Scopes: c.Scopes, Player: true, Member: c.Member, Expires: c.Expires}
}

// bearer extracts the token of an "Authorization: Bearer <token>" value
// (RFC 6750 §2.1; the scheme is case-insensitive).
func bearer(h string) (string, bool) {
	scheme, tok, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	tok = strings.TrimLeft(tok, " ")
	if tok == "" || strings.ContainsAny(tok, " \t") {
		return "", false
	}
	return tok, true
}

// scopeRule maps route patterns to a scope. A rule with a method matches
// that method's pattern exactly; a rule without one (prefix) matches every
// pattern at or under its path, whatever the method, so routes added later
// under an admin prefix are admin by default. Paths are compared with their
// wildcards anonymised ({family} → {}).
type scopeRule struct {
	method string // "" with prefix
	path   string
	prefix bool
	scope  string
	// alt is a second scope that also opens the route ("" none).
	alt string
}

const boardRule = "/v1/boards/{}/{}/{}"

// ticketRules name the routes that take ?ticket= instead of a bearer token
// (method and path, as in scopeRules): the live streams, which a browser
// opens with EventSource, which cannot send headers.
var ticketRules = []scopeRule{
	{method: http.MethodGet, path: boardRule + "/live"},
}

// issueTicketRoute is the route that issues tickets.
const issueTicketRoute = "POST /v1/tickets"

// TicketRoute reports whether the route pattern ("GET
// /v1/boards/{family}/{period}/{dimension}/live") accepts ?ticket= in place
// of a bearer token. A route is marked by a rule in ticketRules, nothing else:
// registering that pattern is all it takes.
func TicketRoute(pattern string) bool {
	method, path := splitPattern(pattern)
	for _, rule := range ticketRules {
		if method == rule.method && path == rule.path {
			return true
		}
	}
	return false
}

// needsPrincipal: the routes whose handlers read PrincipalFrom (the others
// are spared the context allocation).
func needsPrincipal(pattern string) bool {
	return pattern == issueTicketRoute || TicketRoute(pattern)
}

// scopeRules: first match wins. A /v1 pattern no rule matches is refused to
// every token (fail closed), and TestEveryRouteHasAScope catches it.
var scopeRules = []scopeRule{
	// Administration, present and future, whatever the method.
	{path: "/v1/layout", prefix: true, scope: ScopeAdmin},
	{path: "/v1/periods", prefix: true, scope: ScopeAdmin},
	{path: "/v1/reviews", prefix: true, scope: ScopeAdmin},
	{path: "/v1/corrections", prefix: true, scope: ScopeAdmin},
	{path: "/v1/admin", prefix: true, scope: ScopeAdmin},
	{path: "/v1/audit", prefix: true, scope: ScopeAdmin},
	{path: boardRule + "/rebuild", prefix: true, scope: ScopeAdmin},
	{path: boardRule + "/reconcile", prefix: true, scope: ScopeAdmin},
	{method: http.MethodPost, path: "/v1/awards/{}/retry", scope: ScopeAdmin},
	{path: "/v1/bans", prefix: true, scope: ScopeAdmin},
	{method: http.MethodDelete, path: boardRule + "/members/{}", scope: ScopeAdmin},
	// A member's data rights: erasure and export.
	{path: "/v1/members", prefix: true, scope: ScopeAdmin},
	// Tournaments: created and cancelled by the game's backend (admin),
	// joined by whoever writes events (write), listed by readers.
	{method: http.MethodPost, path: "/v1/tournaments", scope: ScopeAdmin},
	{method: http.MethodDelete, path: "/v1/tournaments/{}", scope: ScopeAdmin},
	{method: http.MethodPost, path: "/v1/tournaments/{}/join", scope: ScopeWrite},
	{method: http.MethodGet, path: "/v1/tournaments", scope: ScopeRead},
	{method: http.MethodGet, path: "/v1/tournaments/{}", scope: ScopeRead},
	// Leagues: read like boards.
	{method: http.MethodGet, path: "/v1/families/{}/members/{}/league", scope: ScopeRead},
	{method: http.MethodGet, path: "/v1/families/{}/cohorts", scope: ScopeRead},
	{method: http.MethodGet, path: "/v1/families/{}/moves", scope: ScopeRead},
	// Awards: a reward service that pulls lists them and acknowledges what it
	// took: scope awards (or, as before that scope existed, read to list and
	// write to acknowledge).
	{method: http.MethodGet, path: "/v1/awards", scope: ScopeRead, alt: ScopeAwards},
	{method: http.MethodPost, path: "/v1/awards/{}/ack", scope: ScopeWrite, alt: ScopeAwards},
	// Writes.
	{method: http.MethodPost, path: "/v1/events", scope: ScopeWrite},
	{method: http.MethodPost, path: "/v1/events:batch", scope: ScopeWrite},
	{method: http.MethodPut, path: boardRule + "/members/{}", scope: ScopeWrite},
	{method: http.MethodPut, path: "/v1/profiles/{}", scope: ScopeWrite},
	// Reads. Lookups and snapshots are POSTs that only read: a snapshot is a
	// short-lived frozen copy for paging, not a change to any board.
	{method: http.MethodGet, path: boardRule + "/top", scope: ScopeRead},
	{method: http.MethodGet, path: boardRule + "/members/{}", scope: ScopeRead},
	{method: http.MethodGet, path: boardRule + "/members/{}/around", scope: ScopeRead},
	{method: http.MethodGet, path: boardRule + "/members/{}/history", scope: ScopeRead},
	{method: http.MethodGet, path: boardRule + "/entries", scope: ScopeRead},
	{method: http.MethodPost, path: boardRule + "/members:lookup", scope: ScopeRead},
	{method: http.MethodGet, path: boardRule + "/count", scope: ScopeRead},
	{method: http.MethodGet, path: boardRule + "/range", scope: ScopeRead},
	{method: http.MethodPost, path: boardRule + "/snapshots", scope: ScopeRead},
	{method: http.MethodGet, path: "/v1/boards/{}/{}", scope: ScopeRead},
	{method: http.MethodGet, path: "/v1/families/{}/period", scope: ScopeRead},
	{method: http.MethodGet, path: "/v1/families", scope: ScopeRead},
	// Live boards (text/event-stream) and the tickets that open them from a
	// browser.
	{method: http.MethodGet, path: boardRule + "/live", scope: ScopeRead},
	{method: http.MethodPost, path: "/v1/tickets", scope: ScopeRead},
}

// ScopeOf returns the scope a route pattern ("GET /v1/layout") needs of a
// static token, and false when no rule covers it.
func ScopeOf(pattern string) (string, bool) {
	rule, ok := scopeRuleOf(pattern)
	return rule.scope, ok
}

// ScopesOf returns every static scope that opens a route pattern (the scope
// and its alternative), and false when no rule covers it.
func ScopesOf(pattern string) ([]string, bool) {
	rule, ok := scopeRuleOf(pattern)
	if !ok {
		return nil, false
	}
	if rule.alt != "" {
		return []string{rule.scope, rule.alt}, true
	}
	return []string{rule.scope}, true
}

func scopeRuleOf(pattern string) (scopeRule, bool) {
	method, path := splitPattern(pattern)
	if path == "" {
		return scopeRule{}, false
	}
	for _, rule := range scopeRules {
		if rule.prefix {
			if path == rule.path || strings.HasPrefix(path, rule.path+"/") {
				return rule, true
			}
			continue
		}
		if method == rule.method && path == rule.path {
			return rule, true
		}
	}
	return scopeRule{}, false
}

// playerRule opens one route (method and exact path, wildcards {}) to player
// tokens holding any of scopes; self: only for the token's own member, the
// route's {member}.
type playerRule struct {
	method string
	path   string
	scopes []string
	self   bool
}

// playerRules: the only routes a player token reaches; every other route
// (batches, projections, profiles, snapshots, corrections, awards, reviews,
// bans, every admin route, and routes added later) answers it 403. A player
// reads boards and the period, follows live boards, reads its own history,
// and writes events for itself (the event route then applies the rules of
// client_writes). What a player may not see: other members' history, the
// award outbox (every member's awards and their delivery), reviews, exports.
var playerRules = []playerRule{
	{method: http.MethodPost, path: "/v1/events", scopes: []string{player.ScopeWriteSelf}},
	{method: http.MethodGet, path: boardRule + "/top", scopes: []string{player.ScopeRead}},
	{method: http.MethodGet, path: boardRule + "/members/{}", scopes: []string{player.ScopeRead}},
	{method: http.MethodGet, path: boardRule + "/members/{}/around", scopes: []string{player.ScopeRead}},
	{method: http.MethodGet, path: boardRule + "/members/{}/history", scopes: []string{player.ScopeRead}, self: true},
	{method: http.MethodGet, path: boardRule + "/entries", scopes: []string{player.ScopeRead}},
	{method: http.MethodPost, path: boardRule + "/members:lookup", scopes: []string{player.ScopeRead}},
	{method: http.MethodGet, path: boardRule + "/count", scopes: []string{player.ScopeRead}},
	{method: http.MethodGet, path: boardRule + "/range", scopes: []string{player.ScopeRead}},
	{method: http.MethodGet, path: "/v1/boards/{}/{}", scopes: []string{player.ScopeRead}},
	{method: http.MethodGet, path: "/v1/families/{}/period", scopes: []string{player.ScopeRead}},
	{method: http.MethodGet, path: "/v1/families", scopes: []string{player.ScopeRead}},
	{method: http.MethodGet, path: "/v1/families/{}/members/{}/league", scopes: []string{player.ScopeRead}},
	{method: http.MethodGet, path: "/v1/families/{}/cohorts", scopes: []string{player.ScopeRead}},
	{method: http.MethodGet, path: "/v1/families/{}/moves", scopes: []string{player.ScopeRead}},
	{method: http.MethodGet, path: boardRule + "/live", scopes: []string{player.ScopeRead, player.ScopeLive}},
	{method: http.MethodPost, path: "/v1/tickets", scopes: []string{player.ScopeRead, player.ScopeLive}},
}

// PlayerScopesOf returns the player scopes that open a route pattern (any
// one of them does) and whether it is limited to the token's own member;
// false: no player token reaches the route.
func PlayerScopesOf(pattern string) (scopes []string, self bool, ok bool) {
	rule, ok := playerRuleOf(pattern)
	return rule.scopes, rule.self, ok
}

func playerRuleOf(pattern string) (playerRule, bool) {
	method, path := splitPattern(pattern)
	for _, rule := range playerRules {
		if method == rule.method && path == rule.path {
			return rule, true
		}
	}
	return playerRule{}, false
}

// splitPattern splits a ServeMux pattern "[METHOD ][HOST]/PATH" into its
// method and its path with every wildcard written {}.
func splitPattern(pattern string) (method, path string) {
	method, path, ok := strings.Cut(pattern, " ")
	if !ok {
		method, path = "", pattern
	}
	path = strings.TrimLeft(path, " \t")
	i := strings.IndexByte(path, '/')
	if i < 0 {
		return method, ""
	}
	segs := strings.Split(path[i:], "/")
	for j, seg := range segs {
		if strings.HasPrefix(seg, "{") && strings.HasSuffix(seg, "}") {
			segs[j] = "{}"
		}
	}
	return method, strings.Join(segs, "/")
}

package httpapi

import (
	"context"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rankgate/rankgate/internal/gateway"
	"github.com/rankgate/rankgate/internal/rank"
)

// Secrets of the test tokens, named by their env vars.
var testTokens = []Token{
	{Name: "RK_READ", Secret: "read-0123456789", Scopes: []string{ScopeRead}},
	{Name: "RK_WRITE", Secret: "write-0123456789", Scopes: []string{ScopeWrite}},
	{Name: "RK_ADMIN", Secret: "admin-0123456789", Scopes: []string{ScopeAdmin}},
	{Name: "RK_ALL", Secret: "all-0123456789", Scopes: []string{ScopeRead, ScopeWrite, ScopeAdmin}},
}

func newTestAuth(t *testing.T, tokens []Token, now func() time.Time) (*Auth, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	a, err := NewAuth(AuthOptions{Tokens: tokens, Registerer: reg, Now: now})
	if err != nil {
		t.Fatalf("NewAuth: %v", err)
	}
	return a, reg
}

// routePatterns returns the /v1 patterns New registers.
func routePatterns(t *testing.T) []string {
	t.Helper()
	h, err := New(&fakeService{t: t}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	return h.(*server).patterns
}

// TestEveryRouteHasAScope: a route added without a scope rule would be
// refused to every token; this catches it before anyone notices in prod.
func TestEveryRouteHasAScope(t *testing.T) {
	t.Parallel()
	patterns := routePatterns(t)
	if len(patterns) < 15 {
		t.Fatalf("only %d routes recorded: %q", len(patterns), patterns)
	}
	for _, p := range patterns {
		if _, ok := ScopeOf(p); !ok {
			t.Errorf("route %q has no scope rule (add it to scopeRules)", p)
		}
	}
}

func TestScopeOf(t *testing.T) {
	t.Parallel()
	tests := []struct {
		pattern string
		want    string // "" when unmapped
	}{
		{"POST /v1/events", ScopeWrite},
		{"POST /v1/events:batch", ScopeWrite},
		{"PUT /v1/boards/{family}/{period}/{dimension}/members/{member}", ScopeWrite},
		{"PUT /v1/boards/{f}/{p}/{d}/members/{m}", ScopeWrite}, // wildcard names do not matter
		{"PUT /v1/profiles/{member}", ScopeWrite},
		{"GET /v1/boards/{family}/{period}/{dimension}/members/{member}", ScopeRead},
		{"POST /v1/boards/{family}/{period}/{dimension}/members:lookup", ScopeRead},
		{"POST /v1/boards/{family}/{period}/{dimension}/snapshots", ScopeRead},
		{"GET /v1/boards/{family}/{period}", ScopeRead},
		{"GET /v1/families/{family}/period", ScopeRead},
		{"GET /v1/layout", ScopeAdmin},
		// Administration routes of later issues are admin by prefix.
		{"GET /v1/periods/{family}/{period}", ScopeAdmin},
		{"POST /v1/periods/{family}/{period}/freeze", ScopeAdmin},
		{"POST /v1/periods/{family}/{period}/settle", ScopeAdmin},
		{"POST /v1/periods/{family}/{period}/archive", ScopeAdmin},
		{"DELETE /v1/periods/{family}/{period}/standings/{x}", ScopeAdmin},
		{"GET /v1/reviews", ScopeAdmin},
		{"POST /v1/corrections", ScopeAdmin},
		{"GET /v1/corrections/{id}", ScopeAdmin},
		{"/v1/admin/", ScopeAdmin},
		{"POST /v1/boards/{family}/{period}/{dimension}/rebuild", ScopeAdmin},
		{"GET /v1/boards/{family}/{period}/{dimension}/reconcile", ScopeAdmin},
		// Moderation (issue 13): removals and bans are admin, the history a read.
		{"DELETE /v1/boards/{family}/{period}/{dimension}/members/{member}", ScopeAdmin},
		{"GET /v1/boards/{family}/{period}/{dimension}/members/{member}/history", ScopeRead},
		{"PUT /v1/bans/{member}", ScopeAdmin},
		{"DELETE /v1/bans/{member}", ScopeAdmin},
		{"GET /v1/bans", ScopeAdmin},
		// Fail closed: anything else has no scope.
		{"GET /v1/mystery", ""},
		{"DELETE /v1/profiles/{member}", ""},
		{"PATCH /v1/profiles/{member}", ""},
		{"/v1/events", ""}, // every method: not the POST rule
		{"GET /v1/events", ""},
		{"GET /v1/boards/{family}/{period}/{dimension}/top/extra", ""},
		{"GET /v1/periodsx", ""}, // a prefix is a whole path segment
		{"GET /v1/layouts", ""},
		{"", ""},
		{"GET", ""},
	}
	for _, tc := range tests {
		got, ok := ScopeOf(tc.pattern)
		if got != tc.want || ok != (tc.want != "") {
			t.Errorf("ScopeOf(%q) = %q, %v; want %q", tc.pattern, got, ok, tc.want)
		}
	}
}

// TestAuthScopes: every token kind on every route group.
func TestAuthScopes(t *testing.T) {
	t.Parallel()
	a, _ := newTestAuth(t, testTokens, nil)
	// The real routes, plus administration routes of later issues.
	patterns := routePatterns(t)
	for _, p := range []string{
		"GET /v1/periods/{family}/{period}", "POST /v1/periods/{family}/{period}/freeze",
		"POST /v1/periods/{family}/{period}/settle", "GET /v1/reviews", "POST /v1/corrections",
		"POST /v1/boards/{family}/{period}/{dimension}/rebuild", "GET /v1/boards/{family}/{period}/{dimension}/reconcile",
		"GET /v1/unmapped", "/v1/anymethod",
	} {
		if !slices.ContainsFunc(patterns, func(q string) bool { return samePattern(p, q) }) {
			patterns = append(patterns, p)
		}
	}
	mux := http.NewServeMux()
	for _, p := range patterns {
		mux.Handle(p, a.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("X-Route", r.Pattern)
			w.WriteHeader(http.StatusNoContent)
		})))
	}

	type route struct {
		method, target, scope string // scope "": refused to every token
	}
	groups := map[string][]route{
		"write": {
			{"POST", "/v1/events", ScopeWrite},
			{"POST", "/v1/events:batch", ScopeWrite},
			{"PUT", natPath + "/members/u1", ScopeWrite},
			{"PUT", "/v1/profiles/u1", ScopeWrite},
		},
		"read": {
			{"GET", natPath + "/top", ScopeRead},
			{"HEAD", natPath + "/top", ScopeRead},
			{"GET", natPath + "/members/u1", ScopeRead},
			{"GET", natPath + "/members/u1/around", ScopeRead},
			{"GET", natPath + "/entries", ScopeRead},
			{"POST", natPath + "/members:lookup", ScopeRead},
			{"GET", natPath + "/count", ScopeRead},
			{"GET", natPath + "/range", ScopeRead},
			{"POST", natPath + "/snapshots", ScopeRead},
			{"GET", "/v1/boards/learning/current", ScopeRead},
			{"GET", "/v1/families/learning/period", ScopeRead},
		},
		"admin": {
			{"GET", "/v1/layout", ScopeAdmin},
			{"GET", "/v1/periods/learning/2026-W34", ScopeAdmin},
			{"POST", "/v1/periods/learning/2026-W34/freeze", ScopeAdmin},
			{"POST", "/v1/periods/learning/2026-W34/settle", ScopeAdmin},
			{"GET", "/v1/reviews", ScopeAdmin},
			{"POST", "/v1/corrections", ScopeAdmin},
			{"POST", natPath + "/rebuild", ScopeAdmin},
			{"GET", natPath + "/reconcile", ScopeAdmin},
		},
		"unmapped": {
			{"GET", "/v1/unmapped", ""},
			{"DELETE", "/v1/anymethod", ""},
		},
	}
	creds := []struct {
		title  string
		header []string // Authorization values
		scopes []string // nil: not authenticated
	}{
		{"no token", nil, nil},
		{"malformed", []string{"Token read-0123456789"}, nil},
		{"unknown", []string{"Bearer nope-0123456789"}, nil},
		{"read", []string{"Bearer read-0123456789"}, []string{ScopeRead}},
		{"write", []string{"Bearer write-0123456789"}, []string{ScopeWrite}},
		{"admin", []string{"Bearer admin-0123456789"}, []string{ScopeAdmin}},
		{"all", []string{"Bearer all-0123456789"}, []string{ScopeRead, ScopeWrite, ScopeAdmin}},
	}
	for group, routes := range groups {
		for _, rt := range routes {
			for _, c := range creds {
				t.Run(group+"/"+rt.method+" "+rt.target+"/"+c.title, func(t *testing.T) {
					req := httptest.NewRequest(rt.method, rt.target, nil)
					for _, h := range c.header {
						req.Header.Add("Authorization", h)
					}
					rec := httptest.NewRecorder()
					mux.ServeHTTP(rec, req)
					var want int
					switch {
					case c.scopes == nil:
						want = http.StatusUnauthorized
					case rt.scope != "" && slices.Contains(c.scopes, rt.scope):
						want = http.StatusNoContent
					default:
						want = http.StatusForbidden
					}
					check(t, "status", rec.Code, want)
					switch want {
					case http.StatusUnauthorized:
						check(t, "WWW-Authenticate", rec.Header().Get("WWW-Authenticate"), "Bearer")
						check(t, "code", rank.Code(decodeError(t, rec).Error.Code), rank.CodeUnauthenticated)
					case http.StatusForbidden:
						check(t, "WWW-Authenticate", rec.Header().Get("WWW-Authenticate"), "")
						check(t, "code", rank.Code(decodeError(t, rec).Error.Code), rank.CodeForbidden)
					default:
						if rec.Header().Get("X-Route") == "" {
							t.Error("the route's handler did not run")
						}
					}
				})
			}
		}
	}
}

func TestAuthCredentials(t *testing.T) {
	t.Parallel()
	a, _ := newTestAuth(t, testTokens, nil)
	h := a.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	tests := []struct {
		title  string
		header []string
		want   int
	}{
		{"canonical", []string{"Bearer read-0123456789"}, 204},
		{"scheme in lower case", []string{"bearer read-0123456789"}, 204},
		{"scheme in upper case", []string{"BEARER read-0123456789"}, 204},
		{"two spaces", []string{"Bearer  read-0123456789"}, 204},
		{"empty", []string{""}, 401},
		{"scheme only", []string{"Bearer"}, 401},
		{"scheme and space", []string{"Bearer "}, 401},
		{"basic", []string{"Basic cmVhZDp4"}, 401},
		{"token without scheme", []string{"read-0123456789"}, 401},
		{"two tokens", []string{"Bearer read-0123456789 read-0123456789"}, 401},
		{"trailing tab", []string{"Bearer read-0123456789\t"}, 401},
		{"prefix of a token", []string{"Bearer read-012345678"}, 401},
		{"token plus a byte", []string{"Bearer read-01234567890"}, 401},
		{"case matters in the token", []string{"Bearer READ-0123456789"}, 401},
		{"two headers", []string{"Bearer read-0123456789", "Bearer read-0123456789"}, 401},
	}
	for _, tc := range tests {
		t.Run(tc.title, func(t *testing.T) {
			req := httptest.NewRequest("GET", natPath+"/top", nil)
			req.Pattern = "GET /v1/boards/{family}/{period}/{dimension}/top"
			for _, v := range tc.header {
				req.Header.Add("Authorization", v)
			}
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			check(t, "status", rec.Code, tc.want)
		})
	}
}

// TestAuthThroughHandler: Auth as Options.Auth of the real handler; the
// service endpoints stay open.
func TestAuthThroughHandler(t *testing.T) {
	t.Parallel()
	a, _ := newTestAuth(t, testTokens, nil)
	svc := &fakeService{
		ready: func(context.Context) error { return nil },
		top: func(context.Context, gateway.BoardRef, int, gateway.ReadOptions) (gateway.Page, error) {
			return samplePage(gateway.SourcePrimary, 0), nil
		},
	}
	hs := newHarness(t, svc, a.Wrap)
	do := func(method, target, token string) *httptest.ResponseRecorder {
		req := httptest.NewRequest(method, target, strings.NewReader(`{}`))
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		rec := httptest.NewRecorder()
		hs.h.ServeHTTP(rec, req)
		return rec
	}
	check(t, "read on top", do("GET", natPath+"/top", "read-0123456789").Code, 200)
	check(t, "write on top", do("GET", natPath+"/top", "write-0123456789").Code, 403)
	rec := do("POST", "/v1/events", "")
	check(t, "no token on events", rec.Code, 401)
	check(t, "WWW-Authenticate", rec.Header().Get("WWW-Authenticate"), "Bearer")
	check(t, "Cache-Control", rec.Header().Get("Cache-Control"), "no-store")
	check(t, "read on events", do("POST", "/v1/events", "read-0123456789").Code, 403)
	check(t, "read on layout", do("GET", "/v1/layout", "read-0123456789").Code, 403)
	for _, p := range []string{"/healthz", "/readyz", "/metrics"} {
		check(t, p+" without a token", do("GET", p, "").Code, 200)
	}
	// Refusals are counted by route like any answer.
	body := metricsText(t, hs.reg)
	for _, want := range []string{
		`rankgate_http_requests_total{code="401",method="POST",route="POST /v1/events"} 1`,
		`rankgate_http_requests_total{code="403",method="POST",route="POST /v1/events"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

func TestUnmappedRouteIsLogged(t *testing.T) {
	t.Parallel()
	buf := &syncBuffer{}
	a, err := NewAuth(AuthOptions{Tokens: testTokens, Logger: slog.New(slog.NewJSONHandler(buf, nil))})
	if err != nil {
		t.Fatal(err)
	}
	mux := http.NewServeMux()
	mux.Handle("POST /v1/experimental", a.Wrap(http.HandlerFunc(func(http.ResponseWriter, *http.Request) {
		t.Error("an unmapped route reached its handler")
	})))
	req := httptest.NewRequest("POST", "/v1/experimental", nil)
	req.Header.Set("Authorization", "Bearer all-0123456789")
	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, req)
	check(t, "status", rec.Code, 403)
	if log := buf.String(); !strings.Contains(log, "route has no scope") || !strings.Contains(log, "POST /v1/experimental") ||
		!strings.Contains(log, "RK_ALL") || strings.Contains(log, "all-0123456789") {
		t.Errorf("log: %s", log)
	}
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	now := time.Date(2026, 8, 20, 10, 0, 0, 0, time.UTC)
	clock := func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		return now
	}
	advance := func(d time.Duration) {
		mu.Lock()
		now = now.Add(d)
		mu.Unlock()
	}
	tokens := []Token{
		{Name: "RK_LIMITED", Secret: "limited-0123456789", Scopes: []string{ScopeRead}, RatePerSecond: 1, Burst: 2},
		{Name: "RK_SLOW", Secret: "slow-0123456789", Scopes: []string{ScopeRead}, RatePerSecond: 0.25, Burst: 1},
		{Name: "RK_FREE", Secret: "free-0123456789", Scopes: []string{ScopeRead}},
	}
	a, reg := newTestAuth(t, tokens, clock)
	h := a.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.WriteHeader(http.StatusNoContent) }))
	do := func(secret string) *httptest.ResponseRecorder {
		req := httptest.NewRequest("GET", natPath+"/top", nil)
		req.Pattern = "GET /v1/boards/{family}/{period}/{dimension}/top"
		req.Header.Set("Authorization", "Bearer "+secret)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec
	}
	check(t, "1st", do("limited-0123456789").Code, 204)
	check(t, "2nd (burst)", do("limited-0123456789").Code, 204)
	rec := do("limited-0123456789")
	check(t, "3rd", rec.Code, 429)
	check(t, "Retry-After", rec.Header().Get("Retry-After"), "1")
	check(t, "code", rank.Code(decodeError(t, rec).Error.Code), CodeRateLimited)
	check(t, "refused again (a refusal takes nothing)", do("limited-0123456789").Code, 429)
	for range 10 {
		check(t, "an unlimited token", do("free-0123456789").Code, 204)
	}
	check(t, "slow 1st", do("slow-0123456789").Code, 204)
	rec = do("slow-0123456789")
	check(t, "slow 2nd", rec.Code, 429)
	check(t, "slow Retry-After", rec.Header().Get("Retry-After"), "4")

	advance(time.Second)
	check(t, "after a second", do("limited-0123456789").Code, 204)
	check(t, "and no more", do("limited-0123456789").Code, 429)

	body := metricsText(t, reg)
	for _, want := range []string{
		`rankgate_http_rate_limited_total{token="RK_LIMITED"} 3`,
		`rankgate_http_rate_limited_total{token="RK_SLOW"} 1`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s:\n%s", want, body)
		}
	}
	if strings.Contains(body, "RK_FREE") || strings.Contains(body, "0123456789") {
		t.Errorf("metrics name an unlimited token or a secret:\n%s", body)
	}
}

func TestNewAuthRefuses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		title  string
		tokens []Token
	}{
		{"no tokens", nil},
		{"no name", []Token{{Secret: "x", Scopes: []string{ScopeRead}}}},
		{"no secret", []Token{{Name: "A", Scopes: []string{ScopeRead}}}},
		{"no scopes", []Token{{Name: "A", Secret: "x"}}},
		{"unknown scope", []Token{{Name: "A", Secret: "x", Scopes: []string{"root"}}}},
		{"rate without burst", []Token{{Name: "A", Secret: "x", Scopes: []string{ScopeRead}, RatePerSecond: 1}}},
		{"negative rate", []Token{{Name: "A", Secret: "x", Scopes: []string{ScopeRead}, RatePerSecond: -1, Burst: 1}}},
		{"same secret", []Token{{Name: "A", Secret: "x", Scopes: []string{ScopeRead}}, {Name: "B", Secret: "x", Scopes: []string{ScopeWrite}}}},
		{"same name", []Token{{Name: "A", Secret: "x", Scopes: []string{ScopeRead}}, {Name: "A", Secret: "y", Scopes: []string{ScopeWrite}}}},
	}
	for _, tc := range tests {
		if _, err := NewAuth(AuthOptions{Tokens: tc.tokens}); err == nil {
			t.Errorf("%s: NewAuth succeeded", tc.title)
		}
	}
}

// samePattern reports whether two patterns differ at most in wildcard names.
func samePattern(p, q string) bool {
	pm, pp := splitPattern(p)
	qm, qp := splitPattern(q)
	return pm == qm && pp == qp
}

func metricsText(t *testing.T, g prometheus.Gatherer) string {
	t.Helper()
	h, err := New(&fakeService{t: t}, Options{Gatherer: g})
	if err != nil {
		t.Fatal(err)
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest("GET", "/metrics", nil))
	return rec.Body.String()
}

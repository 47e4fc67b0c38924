package httpapi

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
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

// CORS and tickets: what browsers on other origins need.

const (
	listedOrigin   = "https://play.example.com"
	unlistedOrigin = "https://evil.example.net"
	livePattern    = "GET /v1/boards/{family}/{period}/{dimension}/live"
)

// fakeClock is a clock tests move by hand.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func newFakeClock() *fakeClock {
	return &fakeClock{now: time.Date(2026, 12, 4, 10, 0, 0, 0, time.UTC)}
}

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) advance(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// browserHarness is the real handler with CORS, tokens and tickets, and a
// stand-in for the live route (registered by the live boards, not here):
// the same Auth in front of a handler that records who it served.
type browserHarness struct {
	h       http.Handler // the real handler, checked against api/openapi.yaml
	raw     http.Handler
	live    http.Handler // the stand-in live route
	clock   *fakeClock
	tickets *Tickets
	reg     *prometheus.Registry
	log     *syncBuffer

	mu     sync.Mutex
	served []liveCall
}

type liveCall struct {
	principal Principal
	ok        bool
	rawQuery  string
	uri       string
}

type browserOptions struct {
	origins    []string
	maxTickets int
	tokens     []Token
}

func newBrowserHarness(t *testing.T, o browserOptions) *browserHarness {
	t.Helper()
	if o.tokens == nil {
		o.tokens = testTokens
	}
	bh := &browserHarness{clock: newFakeClock(), reg: prometheus.NewRegistry(), log: &syncBuffer{}}
	var err error
	bh.tickets, err = NewTickets(TicketOptions{TTL: time.Minute, MaxOutstanding: o.maxTickets, Now: bh.clock.Now, Registerer: bh.reg})
	if err != nil {
		t.Fatal(err)
	}
	a, err := NewAuth(AuthOptions{Tokens: o.tokens, Now: bh.clock.Now, Tickets: bh.tickets})
	if err != nil {
		t.Fatal(err)
	}
	svc := &fakeService{t: t,
		top: func(context.Context, gateway.BoardRef, int, gateway.ReadOptions) (gateway.Page, error) {
			return samplePage(gateway.SourcePrimary, 0), nil
		},
	}
	logger := slog.New(slog.NewJSONHandler(bh.log, &slog.HandlerOptions{Level: slog.LevelDebug}))
	h, err := New(svc, Options{Logger: logger, Registerer: bh.reg, Gatherer: bh.reg, Auth: a.Wrap,
		CORS: CORSOptions{AllowedOrigins: o.origins, MaxAge: 10 * time.Minute}, Tickets: bh.tickets})
	if err != nil {
		t.Fatal(err)
	}
	bh.raw, bh.h = h, contractChecked(t, h)
	mux := http.NewServeMux()
	mux.Handle(livePattern, a.Wrap(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p, ok := PrincipalFrom(r.Context())
		bh.mu.Lock()
		bh.served = append(bh.served, liveCall{principal: p, ok: ok, rawQuery: r.URL.RawQuery, uri: r.RequestURI})
		bh.mu.Unlock()
		w.WriteHeader(http.StatusOK)
	})))
	bh.live = mux
	return bh
}

func (bh *browserHarness) do(h http.Handler, method, target string, header http.Header) *httptest.ResponseRecorder {
	req := httptest.NewRequest(method, target, nil)
	for k, vs := range header {
		for _, v := range vs {
			req.Header.Add(k, v)
		}
	}
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, req)
	return rec
}

// issue asks for a ticket with the token secret and returns it.
func (bh *browserHarness) issue(t *testing.T, secret string) (string, time.Time) {
	t.Helper()
	rec := bh.do(bh.h, "POST", "/v1/tickets", http.Header{"Authorization": {"Bearer " + secret}})
	if rec.Code != http.StatusCreated {
		t.Fatalf("POST /v1/tickets = %d %s, want 201", rec.Code, rec.Body)
	}
	var body struct {
		Ticket    string `json:"ticket"`
		ExpiresAt string `json:"expires_at"`
	}
	dec := json.NewDecoder(bytes.NewReader(rec.Body.Bytes()))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&body); err != nil {
		t.Fatalf("ticket body %s: %v", rec.Body, err)
	}
	exp, err := time.Parse(time.RFC3339, body.ExpiresAt)
	if err != nil {
		t.Fatalf("expires_at %q: %v", body.ExpiresAt, err)
	}
	check(t, "Cache-Control", rec.Header().Get("Cache-Control"), "no-store")
	return body.Ticket, exp
}

func (bh *browserHarness) useTicket(ticket string, header http.Header) *httptest.ResponseRecorder {
	return bh.do(bh.live, "GET", natPath+"/live?top=10&ticket="+ticket, header)
}

func (bh *browserHarness) lastLive(t *testing.T) liveCall {
	t.Helper()
	bh.mu.Lock()
	defer bh.mu.Unlock()
	if len(bh.served) == 0 {
		t.Fatal("the live route served nothing")
	}
	return bh.served[len(bh.served)-1]
}

func corsHeaders(h http.Header) []string {
	var out []string
	for k := range h {
		if strings.HasPrefix(k, "Access-Control-") {
			out = append(out, k)
		}
	}
	slices.Sort(out)
	return out
}

func TestCORS(t *testing.T) {
	t.Parallel()
	read := "Bearer read-0123456789"
	preflight := func(origin string) http.Header {
		return http.Header{"Origin": {origin}, "Access-Control-Request-Method": {"GET"},
			"Access-Control-Request-Headers": {"authorization"}}
	}
	tests := []struct {
		title   string
		origins []string // nil: listedOrigin
		method  string
		target  string
		header  http.Header
		status  int
		// allow: the answer carries Access-Control-Allow-Origin: Origin;
		// else no Access-Control-* header at all.
		allow     bool
		preflight bool // the preflight headers too
		vary      bool // Vary: Origin
	}{
		{title: "simple request from a listed origin", method: "GET", target: natPath + "/top",
			header: http.Header{"Origin": {listedOrigin}, "Authorization": {read}}, status: 200, allow: true, vary: true},
		{title: "simple request from an unlisted origin", method: "GET", target: natPath + "/top",
			header: http.Header{"Origin": {unlistedOrigin}, "Authorization": {read}}, status: 200, vary: true},
		{title: "same-origin request (no Origin)", method: "GET", target: natPath + "/top",
			header: http.Header{"Authorization": {read}}, status: 200, vary: true},
		{title: "origin differs in case", method: "GET", target: natPath + "/top",
			header: http.Header{"Origin": {"https://PLAY.example.com"}, "Authorization": {read}}, status: 200, vary: true},
		{title: "origin with a trailing slash", method: "GET", target: natPath + "/top",
			header: http.Header{"Origin": {listedOrigin + "/"}, "Authorization": {read}}, status: 200, vary: true},
		{title: "a refusal to a listed origin is readable", method: "GET", target: natPath + "/top",
			header: http.Header{"Origin": {listedOrigin}}, status: 401, allow: true, vary: true},
		{title: "a write from a listed origin", method: "POST", target: "/v1/tickets",
			header: http.Header{"Origin": {listedOrigin}, "Authorization": {read}}, status: 201, allow: true, vary: true},
		{title: "preflight from a listed origin, no token", method: "OPTIONS", target: natPath + "/top",
			header: preflight(listedOrigin), status: 204, allow: true, preflight: true, vary: true},
		{title: "preflight of a POST route", method: "OPTIONS", target: "/v1/events",
			header: http.Header{"Origin": {listedOrigin}, "Access-Control-Request-Method": {"POST"},
				"Access-Control-Request-Headers": {"authorization,content-type,idempotency-key"}},
			status: 204, allow: true, preflight: true, vary: true},
		{title: "preflight of the live route", method: "OPTIONS", target: natPath + "/live?ticket=x",
			header: preflight(listedOrigin), status: 204, allow: true, preflight: true, vary: true},
		{title: "preflight from an unlisted origin", method: "OPTIONS", target: natPath + "/top",
			header: preflight(unlistedOrigin), status: 405, vary: true},
		{title: "preflight with CORS off", origins: []string{}, method: "OPTIONS", target: natPath + "/top",
			header: preflight(listedOrigin), status: 405},
		{title: "simple request with CORS off", origins: []string{}, method: "GET", target: natPath + "/top",
			header: http.Header{"Origin": {listedOrigin}, "Authorization": {read}}, status: 200},
		{title: "OPTIONS from a listed origin that is no preflight", method: "OPTIONS", target: natPath + "/top",
			header: http.Header{"Origin": {listedOrigin}}, status: 405, allow: true, vary: true},
		{title: "preflight outside /v1", method: "OPTIONS", target: "/healthz",
			header: preflight(listedOrigin), status: 405},
		{title: "two Origin headers", method: "GET", target: natPath + "/top",
			header: http.Header{"Origin": {listedOrigin, listedOrigin}, "Authorization": {read}}, status: 200, vary: true},
	}
	for _, tc := range tests {
		t.Run(tc.title, func(t *testing.T) {
			t.Parallel()
			origins := tc.origins
			if origins == nil {
				origins = []string{listedOrigin, "http://localhost:3000"}
			}
			bh := newBrowserHarness(t, browserOptions{origins: origins})
			rec := bh.do(bh.h, tc.method, tc.target, tc.header)
			h := rec.Header()
			check(t, "status", rec.Code, tc.status)
			check(t, "Vary: Origin", slices.Contains(h.Values("Vary"), "Origin"), tc.vary)
			if !tc.allow {
				check(t, "CORS headers", corsHeaders(h), []string(nil))
				return
			}
			check(t, "Access-Control-Allow-Origin", h.Get("Access-Control-Allow-Origin"), listedOrigin)
			check(t, "Access-Control-Allow-Credentials", h.Get("Access-Control-Allow-Credentials"), "")
			if !tc.preflight {
				check(t, "Access-Control-Expose-Headers", h.Get("Access-Control-Expose-Headers"), "Retry-After, WWW-Authenticate")
				check(t, "Access-Control-Allow-Methods", h.Get("Access-Control-Allow-Methods"), "")
				return
			}
			check(t, "Access-Control-Allow-Methods", h.Get("Access-Control-Allow-Methods"), "GET, POST, PUT, DELETE")
			check(t, "Access-Control-Allow-Headers", h.Get("Access-Control-Allow-Headers"),
				"Authorization, Content-Type, Idempotency-Key, Last-Event-ID")
			check(t, "Access-Control-Max-Age", h.Get("Access-Control-Max-Age"), "600")
			check(t, "body", rec.Body.Len(), 0)
		})
	}
}

// TestCORSPreflightCostsNothing: preflights need no token, take nothing
// from a token's rate and are not shed by max_inflight accounting; they are
// counted under their own route label.
func TestCORSPreflightCostsNothing(t *testing.T) {
	t.Parallel()
	bh := newBrowserHarness(t, browserOptions{origins: []string{listedOrigin}, tokens: []Token{
		{Name: "RK_LIMITED", Secret: "limited-0123456789", Scopes: []string{ScopeRead}, RatePerSecond: 1, Burst: 1},
	}})
	for range 5 {
		rec := bh.do(bh.h, "OPTIONS", natPath+"/top", http.Header{"Origin": {listedOrigin},
			"Access-Control-Request-Method": {"GET"}, "Authorization": {"Bearer limited-0123456789"}})
		check(t, "preflight", rec.Code, 204)
	}
	auth := http.Header{"Origin": {listedOrigin}, "Authorization": {"Bearer limited-0123456789"}}
	check(t, "the one request the bucket holds", bh.do(bh.h, "GET", natPath+"/top", auth).Code, 200)
	rec := bh.do(bh.h, "GET", natPath+"/top", auth)
	check(t, "the next", rec.Code, 429)
	check(t, "Retry-After on a 429 to a listed origin", rec.Header().Get("Retry-After"), "1")
	check(t, "and readable by the page", rec.Header().Get("Access-Control-Expose-Headers"), "Retry-After, WWW-Authenticate")
	body := metricsText(t, bh.reg)
	if want := `rankgate_http_requests_total{code="204",method="OPTIONS",route="OPTIONS /v1/ (preflight)"} 5`; !strings.Contains(body, want) {
		t.Errorf("metrics lack %s", want)
	}
}

// TestOptionsNever5xx: whatever the origin, path and configuration, OPTIONS
// answers below 500.
func TestOptionsNever5xx(t *testing.T) {
	t.Parallel()
	for _, origins := range [][]string{nil, {listedOrigin}} {
		bh := newBrowserHarness(t, browserOptions{origins: origins})
		for _, target := range []string{"/", "/v1", "/v1/", "/v1/nothing", "/v1/events", natPath + "/top", "/v1/tickets",
			"/healthz", "/metrics", "/ui/", "/v1/openapi.json", natPath + "/live"} {
			for _, origin := range []string{"", listedOrigin, unlistedOrigin, "null"} {
				h := http.Header{"Access-Control-Request-Method": {"PATCH"}}
				if origin != "" {
					h.Set("Origin", origin)
				}
				if rec := bh.do(bh.raw, "OPTIONS", target, h); rec.Code >= 500 || rec.Code < 200 {
					t.Errorf("origins %v: OPTIONS %s from %q = %d %s", origins, target, origin, rec.Code, rec.Body)
				}
			}
		}
	}
}

func TestNewRefusesBadCORSOrigin(t *testing.T) {
	t.Parallel()
	for _, o := range []string{"*", "https://a.example/", "a.example", "https://*.a.example", "https://a.example/x"} {
		if _, err := New(&fakeService{t: t}, Options{CORS: CORSOptions{AllowedOrigins: []string{o}}}); err == nil {
			t.Errorf("New accepted origin %q", o)
		}
	}
}

func TestTickets(t *testing.T) {
	t.Parallel()
	tests := []struct {
		title string
		run   func(t *testing.T, bh *browserHarness)
	}{
		{"issued: 201, 43 base64url characters, expires after the TTL", func(t *testing.T, bh *browserHarness) {
			tk, exp := bh.issue(t, "read-0123456789")
			raw, err := base64.RawURLEncoding.DecodeString(tk)
			check(t, "decodes", err, error(nil))
			check(t, "bytes", len(raw), 32)
			check(t, "expires_at", exp.Equal(bh.clock.Now().Add(time.Minute)), true)
			check(t, "outstanding", bh.tickets.Outstanding(), 1)
		}},
		{"used once on the live route, in place of the header", func(t *testing.T, bh *browserHarness) {
			tk, _ := bh.issue(t, "read-0123456789")
			check(t, "first use", bh.useTicket(tk, nil).Code, 200)
			call := bh.lastLive(t)
			check(t, "principal", call.ok, true)
			check(t, "token", call.principal.Token, "RK_READ")
			check(t, "the handler's query", call.rawQuery, "top=10")
			check(t, "the handler's request-URI", call.uri, natPath+"/live?top=10")
			rec := bh.useTicket(tk, nil)
			check(t, "second use", rec.Code, 401)
			check(t, "code", rank.Code(decodeError(t, rec).Error.Code), rank.CodeUnauthenticated)
			check(t, "WWW-Authenticate", rec.Header().Get("WWW-Authenticate"), "Bearer")
			check(t, "outstanding", bh.tickets.Outstanding(), 0)
		}},
		{"expired at the TTL", func(t *testing.T, bh *browserHarness) {
			early, _ := bh.issue(t, "read-0123456789")
			late, _ := bh.issue(t, "read-0123456789")
			bh.clock.advance(time.Minute - time.Nanosecond)
			check(t, "just before", bh.useTicket(early, nil).Code, 200)
			bh.clock.advance(time.Nanosecond)
			check(t, "at the TTL", bh.useTicket(late, nil).Code, 401)
		}},
		{"forged", func(t *testing.T, bh *browserHarness) {
			bh.issue(t, "read-0123456789")
			var raw [32]byte
			_, _ = rand.Read(raw[:])
			for _, forged := range []string{base64.RawURLEncoding.EncodeToString(raw[:]), "", "abc",
				strings.Repeat("A", 43), strings.Repeat("A", 44), "read-0123456789"} {
				check(t, "forged "+forged, bh.useTicket(forged, nil).Code, 401)
			}
			check(t, "no ticket at all", bh.do(bh.live, "GET", natPath+"/live", nil).Code, 401)
			check(t, "the real one survives", bh.tickets.Outstanding(), 1)
		}},
		{"twice in one query", func(t *testing.T, bh *browserHarness) {
			tk, _ := bh.issue(t, "read-0123456789")
			check(t, "status", bh.do(bh.live, "GET", natPath+"/live?ticket="+tk+"&ticket="+tk, nil).Code, 401)
		}},
		{"the scopes of the token that asked", func(t *testing.T, bh *browserHarness) {
			tk, _ := bh.issue(t, "all-0123456789")
			check(t, "use", bh.useTicket(tk, nil).Code, 200)
			call := bh.lastLive(t)
			check(t, "token", call.principal.Token, "RK_ALL")
			check(t, "scopes", call.principal.Scopes, []string{ScopeRead, ScopeWrite, ScopeAdmin})
		}},
		{"a token without read gets none", func(t *testing.T, bh *browserHarness) {
			rec := bh.do(bh.h, "POST", "/v1/tickets", http.Header{"Authorization": {"Bearer write-0123456789"}})
			check(t, "status", rec.Code, 403)
			check(t, "no token", bh.do(bh.h, "POST", "/v1/tickets", nil).Code, 401)
			check(t, "outstanding", bh.tickets.Outstanding(), 0)
		}},
		{"refused on a route that is not live, and kept", func(t *testing.T, bh *browserHarness) {
			tk, _ := bh.issue(t, "read-0123456789")
			rec := bh.do(bh.h, "GET", natPath+"/top?ticket="+tk, nil)
			check(t, "top with a ticket", rec.Code, 401)
			check(t, "events with a ticket", bh.do(bh.h, "POST", "/v1/events?ticket="+tk, nil).Code, 401)
			check(t, "tickets with a ticket", bh.do(bh.h, "POST", "/v1/tickets?ticket="+tk, nil).Code, 401)
			check(t, "still usable where it belongs", bh.useTicket(tk, nil).Code, 200)
		}},
		{"a bearer token wins and leaves the ticket unused", func(t *testing.T, bh *browserHarness) {
			tk, _ := bh.issue(t, "read-0123456789")
			check(t, "with the header", bh.useTicket(tk, http.Header{"Authorization": {"Bearer all-0123456789"}}).Code, 200)
			check(t, "token", bh.lastLive(t).principal.Token, "RK_ALL")
			check(t, "the handler's query", bh.lastLive(t).rawQuery, "top=10")
			check(t, "outstanding", bh.tickets.Outstanding(), 1)
			check(t, "a bad header is not rescued by a ticket", bh.useTicket(tk, http.Header{"Authorization": {"Bearer nope"}}).Code, 401)
			check(t, "the ticket alone", bh.useTicket(tk, nil).Code, 200)
		}},
		{"a header-authenticated live request knows its principal", func(t *testing.T, bh *browserHarness) {
			check(t, "status", bh.do(bh.live, "GET", natPath+"/live", http.Header{"Authorization": {"Bearer read-0123456789"}}).Code, 200)
			call := bh.lastLive(t)
			check(t, "principal", call.ok, true)
			check(t, "token", call.principal.Token, "RK_READ")
		}},
	}
	for _, tc := range tests {
		t.Run(tc.title, func(t *testing.T) {
			t.Parallel()
			tc.run(t, newBrowserHarness(t, browserOptions{origins: []string{listedOrigin}}))
		})
	}
}

// TestTicketsBound: past MaxOutstanding, 503 with Retry-After; a used or
// expired ticket frees its place.
func TestTicketsBound(t *testing.T) {
	t.Parallel()
	bh := newBrowserHarness(t, browserOptions{maxTickets: 2})
	first, _ := bh.issue(t, "read-0123456789")
	bh.clock.advance(30 * time.Second)
	bh.issue(t, "read-0123456789")
	rec := bh.do(bh.h, "POST", "/v1/tickets", http.Header{"Authorization": {"Bearer read-0123456789"}})
	check(t, "third", rec.Code, 503)
	check(t, "code", rank.Code(decodeError(t, rec).Error.Code), rank.CodeUnavailable)
	check(t, "Retry-After", rec.Header().Get("Retry-After"), "1")
	check(t, "a use frees a place", bh.useTicket(first, nil).Code, 200)
	bh.issue(t, "read-0123456789")
	check(t, "full again", bh.do(bh.h, "POST", "/v1/tickets", http.Header{"Authorization": {"Bearer read-0123456789"}}).Code, 503)
	bh.clock.advance(time.Minute) // both held have expired
	bh.issue(t, "read-0123456789")
	check(t, "outstanding", bh.tickets.Outstanding(), 1)
	body := metricsText(t, bh.reg)
	for _, want := range []string{
		"rankgate_tickets_issued_total 4",
		`rankgate_tickets_refused_total{reason="full"} 2`,
		"rankgate_tickets_outstanding 1",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("metrics lack %s", want)
		}
	}
}

// TestTicketsSweep: used tickets waiting in the expiry order never grow it
// past a bound, and expired ones leave it.
func TestTicketsSweep(t *testing.T) {
	t.Parallel()
	clock := newFakeClock()
	ts, err := NewTickets(TicketOptions{TTL: time.Minute, MaxOutstanding: 10, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	p := Principal{Token: "RK_READ", Scopes: []string{ScopeRead}, tok: &authToken{name: "RK_READ"}}
	for i := range 1000 {
		tk, _, err := ts.Issue(p)
		if err != nil {
			t.Fatalf("issue %d: %v", i, err)
		}
		if _, err := ts.Redeem(tk); err != nil {
			t.Fatalf("redeem %d: %v", i, err)
		}
	}
	ts.mu.Lock()
	held := len(ts.order) - ts.head
	ts.mu.Unlock()
	if held > 2*10+1 {
		t.Errorf("order holds %d entries for 0 outstanding tickets, want ≤ 21", held)
	}
	tk, _, _ := ts.Issue(p)
	clock.advance(2 * time.Minute)
	ts.Issue(p) // sweeps
	check(t, "outstanding after expiry", ts.Outstanding(), 1)
	_, err = ts.Redeem(tk)
	check(t, "expired and swept", err, errBadTicket)
}

// TestTicketNeverLogged: neither a ticket nor a token reaches the logs, on
// the way in (a ticket in any query, accepted or refused) or out (the
// answer of POST /v1/tickets).
func TestTicketNeverLogged(t *testing.T) {
	t.Parallel()
	bh := newBrowserHarness(t, browserOptions{origins: []string{listedOrigin}})
	tk, _ := bh.issue(t, "read-0123456789")
	other, _ := bh.issue(t, "read-0123456789")
	// Used up first (on the stand-in live route), so that no request below
	// opens a stream, whether or not the real live route is registered.
	check(t, "use", bh.useTicket(tk, nil).Code, 200)
	reqs := []struct {
		method, target string
		header         http.Header
	}{
		{"GET", natPath + "/top?ticket=" + tk, http.Header{"Authorization": {"Bearer read-0123456789"}}},
		{"GET", natPath + "/top?limit=3&ticket=" + tk, nil},
		{"GET", natPath + "/live?ticket=" + tk, nil},
		{"GET", natPath + "/top?ticket=" + other + "&limit=oops", http.Header{"Authorization": {"Bearer read-0123456789"}}},
		{"OPTIONS", natPath + "/live?ticket=" + tk, http.Header{"Origin": {listedOrigin}, "Access-Control-Request-Method": {"GET"}}},
		{"GET", "/v1/nothing?ticket=" + tk, nil},
	}
	for _, rq := range reqs {
		rec := bh.do(bh.raw, rq.method, rq.target, rq.header)
		if rec.Code >= 500 {
			t.Errorf("%s %s = %d", rq.method, rq.target, rec.Code)
		}
	}
	logs := bh.log.String()
	if n := strings.Count(logs, `"msg":"http request"`); n != len(reqs)+2 {
		t.Fatalf("%d access log lines, want %d (a request per line):\n%s", n, len(reqs)+2, logs)
	}
	for _, secret := range []string{tk, other, "read-0123456789"} {
		if strings.Contains(logs, secret) {
			t.Errorf("the log holds a secret %q:\n%s", secret, logs)
		}
	}
	if !strings.Contains(logs, natPath+"/top") {
		t.Errorf("the log lacks the paths it should keep:\n%s", logs)
	}
}

// TestTicketSingleUseUnderRace: one ticket presented by many at once opens
// exactly one request.
func TestTicketSingleUseUnderRace(t *testing.T) {
	t.Parallel()
	bh := newBrowserHarness(t, browserOptions{})
	tk, _ := bh.issue(t, "read-0123456789")
	const n = 32
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = bh.useTicket(tk, nil).Code
		}()
	}
	wg.Wait()
	ok := 0
	for _, c := range codes {
		switch c {
		case http.StatusOK:
			ok++
		case http.StatusUnauthorized:
		default:
			t.Errorf("status %d", c)
		}
	}
	check(t, "requests let in", ok, 1)
}

// TestTicketsPerToken: one token holds at most MaxPerToken unused tickets;
// others are not held back by it, and a use or an expiry frees a place.
func TestTicketsPerToken(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 4, 12, 0, 0, 0, time.UTC)
	tk, err := NewTickets(TicketOptions{MaxPerToken: 2, TTL: time.Minute, Now: func() time.Time { return now }})
	if err != nil {
		t.Fatal(err)
	}
	a, b := Principal{Token: "A", Scopes: []string{"read"}}, Principal{Token: "B", Scopes: []string{"read"}}
	issue := func(p Principal) (string, error) {
		s, _, err := tk.Issue(p)
		return s, err
	}
	first, err := issue(a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := issue(a); err != nil {
		t.Fatal(err)
	}
	_, err = issue(a)
	check(t, "A's third", rank.CodeOf(err), rank.CodeUnavailable)
	if _, err := issue(b); err != nil {
		t.Fatalf("B held back by A: %v", err)
	}
	if _, err := tk.Redeem(first); err != nil {
		t.Fatal(err)
	}
	if _, err := issue(a); err != nil {
		t.Fatalf("A after using one: %v", err)
	}
	_, err = issue(a)
	check(t, "A full again", rank.CodeOf(err), rank.CodeUnavailable)
	now = now.Add(2 * time.Minute) // every ticket held has expired
	for i := range 2 {
		if _, err := issue(a); err != nil {
			t.Fatalf("A after expiry, ticket %d: %v", i+1, err)
		}
	}
	check(t, "outstanding", tk.Outstanding(), 2)
}

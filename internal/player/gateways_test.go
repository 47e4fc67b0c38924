package player_test

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/rankgate/rankgate/internal/httpapi"
	"github.com/rankgate/rankgate/internal/player"
	"github.com/rankgate/rankgate/internal/testcluster"
	"github.com/rankgate/rankgate/internal/teststack"
)

const playerFamilies = `  casual:
    source: events
    aggregate: sum
    period: all
    tie: member
    client_writes: {max_delta: 10, max_events_per_minute: 4}
    dimensions:
      national: {shards: 2}
  learning:
    source: events
    aggregate: sum
    period: all
    tie: member
    dimensions:
      national: {shards: 2}
`

// Two gateways on one cluster and one key prefix: a member's
// max_events_per_minute holds across both, because the window lives in
// Redis, in the member's slot.
func TestSelfWritesAcrossTwoGateways(t *testing.T) {
	t.Parallel()
	prefix := testcluster.Prefix(t)
	jo := player.Options{Audience: audience, ClockSkew: 5 * time.Second,
		Keys: []player.Key{{Kid: "hs", Alg: player.AlgHS256, Secret: []byte(hsSecret)}}}
	admin := httpapi.Token{Name: "RK_ALL", Secret: "all-0123456789", Scopes: []string{httpapi.ScopeRead, httpapi.ScopeWrite, httpapi.ScopeAdmin}}
	var gws [2]*httptest.Server
	for i := range gws {
		st := teststack.New(t, teststack.Options{Families: playerFamilies, Prefix: prefix, JWT: jo, Tokens: []httpapi.Token{admin}})
		gws[i] = httptest.NewServer(st.Handler)
		t.Cleanup(gws[i].Close)
	}
	tokenFor := func(member, scope string) string {
		return sign(t, jwt.SigningMethodHS256, "hs", []byte(hsSecret), jwt.MapClaims{"sub": member, "aud": audience,
			"scope": scope, "exp": time.Now().Add(time.Hour).Unix(), "iat": time.Now().Unix()})
	}
	u1 := tokenFor("u1", "read write:self")
	post := func(gw int, path, auth, body string) *http.Response {
		t.Helper()
		req, err := http.NewRequest(http.MethodPost, gws[gw].URL+path, bytes.NewBufferString(body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+auth)
		req.Header.Set("Content-Type", "application/json")
		res, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		res.Body.Close()
		return res
	}
	event := func(id, family, user string, delta int) string {
		return fmt.Sprintf(`{"event_id": %q, "family": %q, "user": %q, "delta": %d}`, id, family, user, delta)
	}

	// Four events of u1, alternating gateways: all pass.
	for i := 0; i < 4; i++ {
		if res := post(i%2, "/v1/events", u1, event(fmt.Sprintf("e%d", i), "casual", "u1", 10)); res.StatusCode != http.StatusOK {
			t.Fatalf("event %d on gateway %d: %d, want 200", i, i%2, res.StatusCode)
		}
	}
	// A retry of one of them is no new event: still 200 (a duplicate).
	if res := post(1, "/v1/events", u1, event("e0", "casual", "u1", 10)); res.StatusCode != http.StatusOK {
		t.Fatalf("replay of e0: %d, want 200", res.StatusCode)
	}
	// The fifth, on either gateway: 429 with Retry-After.
	for gw := range gws {
		res := post(gw, "/v1/events", u1, event("e-over", "casual", "u1", 1))
		if res.StatusCode != http.StatusTooManyRequests {
			t.Fatalf("fifth event on gateway %d: %d, want 429", gw, res.StatusCode)
		}
		ra, err := strconv.Atoi(res.Header.Get("Retry-After"))
		if err != nil || ra < 1 || ra > 60 {
			t.Errorf("gateway %d: Retry-After %q, want 1..60 seconds", gw, res.Header.Get("Retry-After"))
		}
	}
	// Another member has a window of their own; a static token none.
	if res := post(1, "/v1/events", tokenFor("u2", "write:self"), event("f0", "casual", "u2", 5)); res.StatusCode != http.StatusOK {
		t.Errorf("u2's first event: %d, want 200", res.StatusCode)
	}
	if res := post(0, "/v1/events", admin.Secret, event("s0", "casual", "u1", 500)); res.StatusCode != http.StatusOK {
		t.Errorf("a static token's event for u1: %d, want 200 (no player rules)", res.StatusCode)
	}

	// The rules of write:self, on a member whose window is empty.
	u3 := tokenFor("u3", "read write:self")
	for _, tc := range []struct {
		name, path, auth, body string
		want                   int
	}{
		{"another member", "/v1/events", u3, event("g1", "casual", "u1", 1), http.StatusForbidden},
		{"family without client_writes", "/v1/events", u3, event("g2", "learning", "u3", 1), http.StatusForbidden},
		{"over max_delta", "/v1/events", u3, event("g3", "casual", "u3", 11), http.StatusUnprocessableEntity},
		{"batch", "/v1/events:batch", u3, `{"events": [` + event("g4", "casual", "u3", 1) + `]}`, http.StatusForbidden},
		{"read-only token", "/v1/events", tokenFor("u3", "read"), event("g5", "casual", "u3", 1), http.StatusForbidden},
		{"reversal", "/v1/events", u3, `{"event_id": "g6", "family": "casual", "user": "u3", "reverses": "g0"}`, http.StatusForbidden},
		{"own event", "/v1/events", u3, event("g7", "casual", "u3", -10), http.StatusOK},
	} {
		if res := post(0, tc.path, tc.auth, tc.body); res.StatusCode != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, res.StatusCode, tc.want)
		}
	}

	// Reads work with read: u1 stands at 40 (4 × 10) + 500 from the static token.
	req, _ := http.NewRequest(http.MethodGet, gws[1].URL+"/v1/boards/casual/all/national/members/u1?consistency=primary", nil)
	req.Header.Set("Authorization", "Bearer "+u1)
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	_, _ = buf.ReadFrom(res.Body)
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !bytes.Contains(buf.Bytes(), []byte(`"points":540`)) {
		t.Errorf("u1's standing with a player read token: %d %s, want 200 with points 540", res.StatusCode, buf.String())
	}
}

package ui_test

// End to end: the big-screen live board (/ui/live/...) and a page on another
// origin subscribing through CORS, in headless Chromium against a real
// in-process gateway (the harness of ui_e2e_test.go).

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/rankgate/rankgate/internal/gateway"
	"github.com/rankgate/rankgate/internal/httpapi"
	"github.com/rankgate/rankgate/internal/teststack"
)

// liveInterval is the family's live.interval: an event written through the
// API must be on the page within liveInterval + 1 s.
const liveInterval = 200 * time.Millisecond

// liveFamilies: refreshed every liveInterval, without the answer cache.
var liveFamilies = fmt.Sprintf(`  arena:
    source: events
    aggregate: sum
    order: desc
    period: week
    timezone: UTC
    cache_ttl: 0s
    live: {interval: %s}
    dimensions:
      national: {shards: 4}
`, liveInterval)

// seedArena puts 30 members on arena's national board: user-N has N×10
// points, so user-30 leads and user-17 ranks 14th.
func seedArena(t *testing.T, stack *teststack.Stack) {
	t.Helper()
	evs := make([]gateway.Event, 30)
	for i := range evs {
		d := int64((i + 1) * 10)
		evs[i] = gateway.Event{EventID: fmt.Sprintf("seed-%d", i+1), Family: "arena", User: fmt.Sprintf("user-%02d", i+1), Delta: &d}
	}
	items, err := stack.Service.ApplyBatch(context.Background(), evs)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		if it.Err != nil {
			t.Fatalf("seeding: %v", it.Err)
		}
	}
}

// postEvent writes one event through the HTTP API.
func postEvent(t *testing.T, srv *httptest.Server, secret, id, user string, delta int64) {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"event_id": id, "family": "arena", "user": user, "delta": delta})
	req, err := http.NewRequest(http.MethodPost, srv.URL+"/v1/events", bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	if secret != "" {
		req.Header.Set("Authorization", "Bearer "+secret)
	}
	res, err := srv.Client().Do(req)
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK {
		t.Fatalf("POST /v1/events: %s", res.Status)
	}
}

// poll waits until the JavaScript expression is true.
func poll(t *testing.T, ctx context.Context, what, expr string, timeout time.Duration) bool {
	t.Helper()
	if _, err := chromedp.Run(ctx, chromedp.Poll[bool](expr, chromedp.WithPollingTimeout(timeout),
		chromedp.WithPollingInterval(20*time.Millisecond))); err != nil {
		t.Errorf("%s: %v", what, err)
		return false
	}
	return true
}

// rowText is the text of a cell of user's row in the top; "" without one
// (it does not wait for the row to appear).
func rowText(t *testing.T, ctx context.Context, user, cell string) string {
	t.Helper()
	sel := fmt.Sprintf(`#top-body tr[data-user=%q] td.%s`, user, cell)
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf("document.querySelector(%q)?.textContent ?? \"\"", sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

func TestLivePage(t *testing.T) {
	path := chromium(t)
	stack := teststack.New(t, teststack.Options{Families: liveFamilies})
	seedArena(t, stack)
	srv := httptest.NewServer(stack.Handler)
	t.Cleanup(srv.Close)

	// The page's headers: the status page's CSP, so no inline script.
	res, err := srv.Client().Get(srv.URL + "/ui/live/arena/current/national")
	if err != nil {
		t.Fatal(err)
	}
	res.Body.Close()
	if res.StatusCode != http.StatusOK || !strings.HasPrefix(res.Header.Get("Content-Type"), "text/html") ||
		!strings.Contains(res.Header.Get("Content-Security-Policy"), "script-src 'self'") {
		t.Errorf("GET /ui/live/arena/current/national: %s, Content-Type %q, CSP %q", res.Status,
			res.Header.Get("Content-Type"), res.Header.Get("Content-Security-Policy"))
	}
	for _, p := range []string{"/ui/live/arena/current", "/ui/live/arena/current/national/x", "/ui/live/arena//national"} {
		if res, err := srv.Client().Get(srv.URL + p); err != nil {
			t.Fatal(err)
		} else if res.Body.Close(); res.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s: %s, want 404 (not a board)", p, res.Status)
		}
	}

	bctx, problems := browser(t, path)
	if err := chromedp.Do(bctx, chromedp.Navigate(srv.URL+"/ui/live/arena/current/national?member=user-17&top=10")); err != nil {
		t.Fatalf("navigate: %v", err)
	}

	// The snapshot: the top 10, live, and the followed member's standing.
	waitVisible(t, bctx, "the top 10", "#top-body tr:nth-child(10)")
	if n := count(t, bctx, "#top-body tr"); n != 10 {
		t.Errorf("top shows %d rows, want 10", n)
	}
	if got := text(t, bctx, "#top-body tr:first-child td.user"); got != "user-30" {
		t.Errorf("first of the top is %q, want user-30", got)
	}
	if got := text(t, bctx, "#top-body tr:first-child td.points"); got != "300" {
		t.Errorf("the leader has %q points, want 300", got)
	}
	if got := text(t, bctx, "#top-body tr:nth-child(10) td.user"); got != "user-21" {
		t.Errorf("tenth of the top is %q, want user-21", got)
	}
	if got := attr(t, bctx, "#conn", "data-state"); got != "live" {
		t.Errorf("connection state %q, want live", got)
	}
	waitVisible(t, bctx, "the followed member", "#follow-rank")
	if got := text(t, bctx, "#follow-user"); got != "user-17" {
		t.Errorf("following %q, want user-17", got)
	}
	if got := text(t, bctx, "#follow-rank"); got != "#14" {
		t.Errorf("user-17 ranks %q, want #14", got)
	}
	if got := text(t, bctx, "#around-body tr.me td.user"); got != "user-17" {
		t.Errorf("highlighted neighbour %q, want user-17", got)
	}
	if n := count(t, bctx, "#around-body tr"); n != 5 {
		t.Errorf("around shows %d rows, want 5 (radius 2)", n)
	}
	if got := text(t, bctx, "#as-of"); !strings.HasPrefix(got, "as of ") {
		t.Errorf("as_of line %q", got)
	}
	if got := text(t, bctx, "#top-body tr:first-child td.delta"); got != "" {
		t.Errorf("the snapshot shows a move %q, want none", got)
	}

	// An event through the API: user-05 (26th) takes the lead, on the page
	// within one interval and a second, marked as having come up.
	start := time.Now()
	postEvent(t, srv, "", "jump-1", "user-05", 1000)
	if poll(t, bctx, "user-05 did not take the lead on the page",
		`document.querySelector("#top-body tr:first-child td.user")?.textContent === "user-05"`, 10*time.Second) {
		took := time.Since(start)
		if took > liveInterval+time.Second {
			t.Errorf("the event took %s to show, want at most %s", took, liveInterval+time.Second)
		}
		t.Logf("the event showed after %s", took)
	}
	if got := rowText(t, bctx, "user-05", "points"); got != "1,050" {
		t.Errorf("user-05 shows %q points, want 1,050", got)
	}
	if got := rowText(t, bctx, "user-05", "delta"); got != "▲" {
		t.Errorf("user-05 entered the top showing %q, want ▲", got)
	}
	if cls := attr(t, bctx, `#top-body tr[data-user="user-05"]`, "class"); !strings.Contains(cls, "flash-new") {
		t.Errorf("user-05's row is not highlighted: class %q", cls)
	}
	if got := rowText(t, bctx, "user-30", "delta"); got != "▼1" {
		t.Errorf("user-30, pushed to 2nd, shows %q, want ▼1", got)
	}
	if got := text(t, bctx, "#top-body tr:nth-child(10) td.user"); got != "user-22" {
		t.Errorf("tenth of the top is %q, want user-22", got)
	}
	poll(t, bctx, "user-17 did not drop to #15", `document.querySelector("#follow-rank")?.textContent === "#15"`, 5*time.Second)

	// A move within the top: user-25 (7th, 250) gains 45 and is 3rd.
	postEvent(t, srv, "", "jump-2", "user-25", 45)
	poll(t, bctx, "user-25 did not move to 3rd",
		`document.querySelector("#top-body tr:nth-child(3) td.user")?.textContent === "user-25"`, 5*time.Second)
	if got := rowText(t, bctx, "user-25", "delta"); got != "▲4" {
		t.Errorf("user-25 moved from 7th to 3rd showing %q, want ▲4", got)
	}
	if got := rowText(t, bctx, "user-25", "points"); got != "295" {
		t.Errorf("user-25 shows %q points, want 295", got)
	}
	if cls := attr(t, bctx, `#top-body tr[data-user="user-25"]`, "class"); !strings.Contains(cls, "flash-up") || !strings.Contains(cls, "flash-points") {
		t.Errorf("user-25's row is not highlighted as moved up with new points: class %q", cls)
	}
	if got := rowText(t, bctx, "user-29", "delta"); got != "▼1" {
		t.Errorf("user-29, pushed from 3rd to 4th, shows %q, want ▼1", got)
	}
	// Points only: user-05 gains 1, keeps 1st, its points flash.
	postEvent(t, srv, "", "jump-3", "user-05", 1)
	poll(t, bctx, "user-05's points did not change",
		`document.querySelector('#top-body tr[data-user="user-05"] td.points')?.textContent === "1,051"`, 5*time.Second)
	if cls := attr(t, bctx, `#top-body tr[data-user="user-05"]`, "class"); !strings.Contains(cls, "flash-points") {
		t.Errorf("user-05's points are not highlighted: class %q", cls)
	}
	if p := os.Getenv(envScreenshot); p != "" {
		png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(strings.TrimSuffix(p, ".png")+"-live.png", png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range problems() {
		t.Errorf("page problem: %s", p)
	}

	// The gateway ends its streams (event: reconnect, as at shutdown): the
	// page says so and tries again.
	stack.Live.Close()
	poll(t, bctx, "the page did not show reconnecting",
		`document.querySelector("#conn")?.dataset.state === "reconnecting"`, 5*time.Second)
}

func attr(t *testing.T, ctx context.Context, sel, name string) string {
	t.Helper()
	v, err := chromedp.Run(ctx, chromedp.Evaluate[string](fmt.Sprintf("document.querySelector(%q)?.getAttribute(%q) ?? \"\"", sel, name)))
	if err != nil {
		t.Fatalf("attribute %s of %s: %v", name, sel, err)
	}
	return v
}

// readTokens: one token with the read scope, one with write only.
func readTokens() []httpapi.Token {
	return []httpapi.Token{
		{Name: "SCREEN", Secret: "screen-secret-0123456789abcdef", Scopes: []string{httpapi.ScopeRead}},
		{Name: "WRITER", Secret: "writer-secret-0123456789abcdef", Scopes: []string{httpapi.ScopeWrite}},
	}
}

// TestLivePageToken: on a gateway with tokens the page asks for one, keeps
// it for the tab, and subscribes with a ticket.
func TestLivePageToken(t *testing.T) {
	path := chromium(t)
	stack := teststack.New(t, teststack.Options{Families: liveFamilies, Tokens: readTokens()})
	seedArena(t, stack)
	srv := httptest.NewServer(stack.Handler)
	t.Cleanup(srv.Close)

	bctx, _ := browser(t, path)
	if err := chromedp.Do(bctx, chromedp.Navigate(srv.URL+"/ui/live/arena/current/national?top=5&member=user-17&radius=1&token=leaked")); err != nil {
		t.Fatalf("navigate: %v", err)
	}
	waitVisible(t, bctx, "the token form", "#token-form")
	if got := attr(t, bctx, "#conn", "data-state"); got != "token" {
		t.Errorf("connection state %q, want token", got)
	}
	if u, err := chromedp.Run(bctx, chromedp.Evaluate[string]("location.href")); err != nil {
		t.Fatal(err)
	} else if strings.Contains(u, "token") {
		t.Errorf("the address still holds the token: %s", u)
	}
	if n := count(t, bctx, "#top-body tr"); n != 0 {
		t.Errorf("without a token the page shows %d rows", n)
	}
	// A write-only token is refused; the form comes back.
	if err := chromedp.Do(bctx,
		chromedp.SendKeys(chromedp.CSS("#token"), readTokens()[1].Secret),
		chromedp.Click(chromedp.CSS("#token-button"))); err != nil {
		t.Fatal(err)
	}
	poll(t, bctx, "the refused token did not bring the form back",
		`!document.querySelector("#token-form").hidden && document.querySelector("#message").textContent.includes("refused")`, 10*time.Second)
	if err := chromedp.Do(bctx,
		chromedp.SendKeys(chromedp.CSS("#token"), readTokens()[0].Secret),
		chromedp.Click(chromedp.CSS("#token-button"))); err != nil {
		t.Fatal(err)
	}
	waitVisible(t, bctx, "the top 5", "#top-body tr:nth-child(5)")
	if n := count(t, bctx, "#top-body tr"); n != 5 {
		t.Errorf("top shows %d rows, want 5", n)
	}
	waitVisible(t, bctx, "the followed member", "#around-body tr")
	if n := count(t, bctx, "#around-body tr"); n != 3 {
		t.Errorf("around shows %d rows, want 3 (radius 1)", n)
	}
	if got := attr(t, bctx, "#conn", "data-state"); got != "live" {
		t.Errorf("connection state %q, want live", got)
	}
	if got, err := chromedp.Run(bctx, chromedp.Evaluate[string](`sessionStorage.getItem("rankgate-token") || ""`)); err != nil {
		t.Fatal(err)
	} else if got != readTokens()[0].Secret {
		t.Errorf("sessionStorage holds %q, want the read token", got)
	}
	// Updates follow on the ticketed stream.
	d := int64(1000)
	if _, err := stack.Service.ApplyEvent(context.Background(), gateway.Event{EventID: "jump", Family: "arena", User: "user-02", Delta: &d}); err != nil {
		t.Fatal(err)
	}
	poll(t, bctx, "user-02 did not take the lead",
		`document.querySelector("#top-body tr:first-child td.user")?.textContent === "user-02"`, 5*time.Second)
}

// crossOriginPage is a page of another site: it asks the gateway for a
// ticket with a read token (fetch, CORS with a preflight for the
// Authorization header) and opens the live stream with it (EventSource,
// CORS), writing what it receives into the DOM.
const crossOriginPage = `<!doctype html>
<html><head><meta charset="utf-8"><link rel="icon" href="data:,"><script src="/app.js"></script></head>
<body><p id="state">starting</p><ol id="top"></ol></body></html>`

const crossOriginScript = `"use strict";
document.addEventListener("DOMContentLoaded", async () => {
  const state = document.getElementById("state");
  try {
    const res = await fetch(GATEWAY + "/v1/tickets", {method: "POST", headers: {Authorization: "Bearer " + TOKEN}});
    if (res.status !== 201) { state.textContent = "ticket: " + res.status; return; }
    const {ticket} = await res.json();
    const es = new EventSource(GATEWAY + "/v1/boards/arena/current/national/live?top=3&ticket=" + encodeURIComponent(ticket));
    const show = (ev) => {
      const d = JSON.parse(ev.data);
      state.textContent = "live " + ev.type;
      document.getElementById("top").replaceChildren(...d.top.entries.map((e) => {
        const li = document.createElement("li");
        li.textContent = e.user + " " + e.points;
        return li;
      }));
    };
    es.addEventListener("snapshot", show);
    es.addEventListener("update", show);
    es.onerror = () => { state.textContent = "stream error"; es.close(); };
  } catch (err) {
    state.textContent = "failed: " + err;
  }
});
`

func TestLiveCrossOrigin(t *testing.T) {
	path := chromium(t)
	// The other site first: the gateway must name its origin.
	var gatewayURL string
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/":
			w.Header().Set("Content-Type", "text/html; charset=utf-8")
			fmt.Fprint(w, crossOriginPage)
		case "/app.js":
			w.Header().Set("Content-Type", "text/javascript")
			fmt.Fprintf(w, "const GATEWAY = %q, TOKEN = %q;\n%s", gatewayURL, readTokens()[0].Secret, crossOriginScript)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(other.Close)
	stack := teststack.New(t, teststack.Options{Families: liveFamilies, Tokens: readTokens(),
		CORS: httpapi.CORSOptions{AllowedOrigins: []string{other.URL}, MaxAge: time.Minute}})
	seedArena(t, stack)
	srv := httptest.NewServer(stack.Handler)
	t.Cleanup(srv.Close)
	gatewayURL = srv.URL
	if srv.URL == other.URL {
		t.Fatal("the two servers share an origin")
	}

	bctx, problems := browser(t, path)
	if err := chromedp.Do(bctx, chromedp.Navigate(other.URL+"/")); err != nil {
		t.Fatalf("navigate: %v", err)
	}
	if !poll(t, bctx, "the other origin's page did not get the snapshot",
		`document.querySelector("#state")?.textContent === "live snapshot"`, 15*time.Second) {
		t.Fatalf("the page says %q", text(t, bctx, "#state"))
	}
	if got := text(t, bctx, "#top li:first-child"); got != "user-30 300" {
		t.Errorf("first of the top is %q, want user-30 300", got)
	}
	postEvent(t, srv, readTokens()[1].Secret, "x-1", "user-03", 500)
	poll(t, bctx, "the update did not reach the other origin",
		`document.querySelector("#top li:first-child")?.textContent === "user-03 530"`, liveInterval+5*time.Second)
	if got := text(t, bctx, "#state"); got != "live update" {
		t.Errorf("the page says %q, want live update", got)
	}
	for _, p := range problems() {
		t.Errorf("page problem: %s", p)
	}
}

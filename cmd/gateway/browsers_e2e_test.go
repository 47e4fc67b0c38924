package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rankgate/rankgate/client"
	"github.com/rankgate/rankgate/internal/testcluster"
	"github.com/rankgate/rankgate/internal/teststack"
)

// TestE2EBrowsers: the real program with server.cors, a read token and
// auth.tickets: a preflight, a cross-origin read, a ticket through the Go
// client (every exchange checked against api/openapi.yaml), a ticket refused
// where it does not belong, and logs that hold neither tickets nor tokens.
func TestE2EBrowsers(t *testing.T) {
	const (
		origin = "https://play.example.com"
		secret = "e2e-read-token-0123456789"
	)
	dir := t.TempDir()
	cfg := "server:\n  cors:\n    allowed_origins: [\"" + origin + "\"]\n    max_age: 5m\n" +
		"auth:\n  tokens:\n    - {token_env: E2E_READ_TOKEN, scopes: [read]}\n  tickets: {ttl: 30s}\n" +
		string(teststack.ConfigYAML(testcluster.Addrs(t), testcluster.Prefix(t), e2eFamilies))
	cfgPath := filepath.Join(dir, "rankgate.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	ready := filepath.Join(dir, "ready")
	ctx, cancel := context.WithCancel(context.Background())
	g := &gw{logs: &syncBuffer{}, cancel: cancel, done: make(chan error, 1)}
	getenv := func(k string) string {
		if k == "E2E_READ_TOKEN" {
			return secret
		}
		return ""
	}
	args := []string{"serve", "-config", cfgPath, "-ready-file", ready, "-log-format", "text", "-log-level", "debug"}
	go func() { g.done <- runAt(ctx, e2eNow, args, getenv, io.Discard, g.logs) }()
	g.waitReady(t, ready, false)

	send := func(method, path string, h http.Header) *http.Response {
		t.Helper()
		req, err := http.NewRequest(method, g.base+path, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header = h
		res, err := g.client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", method, path, err)
		}
		_, _ = io.Copy(io.Discard, res.Body)
		res.Body.Close()
		return res
	}
	top := "/v1/boards/learning/current/national/top"

	res := send("OPTIONS", top, http.Header{"Origin": {origin}, "Access-Control-Request-Method": {"GET"},
		"Access-Control-Request-Headers": {"authorization"}})
	if res.StatusCode != http.StatusNoContent || res.Header.Get("Access-Control-Allow-Origin") != origin ||
		res.Header.Get("Access-Control-Max-Age") != "300" || !strings.Contains(res.Header.Get("Access-Control-Allow-Headers"), "Authorization") {
		t.Fatalf("preflight: %d %v", res.StatusCode, res.Header)
	}
	res = send("OPTIONS", top, http.Header{"Origin": {"https://other.example"}, "Access-Control-Request-Method": {"GET"}})
	if res.StatusCode != http.StatusMethodNotAllowed || res.Header.Get("Access-Control-Allow-Origin") != "" {
		t.Fatalf("preflight from an unlisted origin: %d %v", res.StatusCode, res.Header)
	}
	res = send("GET", top, http.Header{"Origin": {origin}, "Authorization": {"Bearer " + secret}})
	if res.StatusCode != http.StatusOK || res.Header.Get("Access-Control-Allow-Origin") != origin {
		t.Fatalf("cross-origin read: %d %v", res.StatusCode, res.Header)
	}

	c, err := client.New(g.base, client.WithHTTPClient(g.client), client.WithToken(secret))
	if err != nil {
		t.Fatal(err)
	}
	tk, err := c.NewTicket(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(tk.Ticket) != 43 || tk.ExpiresAt.After(e2eNow().Add(30*time.Second)) || tk.ExpiresAt.Before(e2eNow().Add(20*time.Second)) {
		t.Fatalf("ticket %+v", tk)
	}
	if res := send("GET", top+"?ticket="+tk.Ticket, http.Header{}); res.StatusCode != http.StatusUnauthorized {
		t.Fatalf("a ticket on a route that is not live: %d", res.StatusCode)
	}
	anon, err := client.New(g.base, client.WithHTTPClient(g.client))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := anon.NewTicket(context.Background()); err == nil {
		t.Fatal("a ticket without a token")
	}

	logs := g.logs.String()
	if !strings.Contains(logs, "/v1/tickets") {
		t.Fatalf("the access log (debug) lacks the ticket requests:\n%s", tailLines(logs, 20))
	}
	for _, s := range []string{tk.Ticket, secret} {
		if strings.Contains(logs, s) {
			t.Errorf("the logs hold a secret %q", s)
		}
	}
}

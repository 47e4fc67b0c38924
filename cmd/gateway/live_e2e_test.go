package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rankgate/rankgate/internal/soon"
	"github.com/rankgate/rankgate/internal/testcluster"
	"github.com/rankgate/rankgate/internal/teststack"
)

// TestE2ELiveShutdown: the real program serves a live board, checked
// against api/openapi.yaml, and its graceful shutdown ends the stream with
// "event: reconnect" instead of waiting on it.
func TestE2ELiveShutdown(t *testing.T) {
	const secret = "e2e-live-token-0123456789"
	dir := t.TempDir()
	cfg := "auth:\n  tokens:\n    - {token_env: E2E_READ_TOKEN, scopes: [read, write]}\n" +
		"live:\n  heartbeat: 1s\n  max_per_token: 5\n" +
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
	args := []string{"serve", "-config", cfgPath, "-ready-file", ready, "-log-format", "text"}
	go func() { g.done <- runAt(ctx, e2eNow, args, getenv, io.Discard, g.logs) }()
	g.waitReady(t, ready, true)
	stopped := false
	t.Cleanup(func() {
		if !stopped {
			_ = g.shutdown()
		}
	})

	req, err := http.NewRequest(http.MethodGet, g.base+"/v1/boards/learning/current/national/live?top=3&member=e2e-live-u1&radius=1", nil)
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+secret)
	type result struct {
		res  *http.Response
		body string
		err  error
	}
	got := make(chan result, 1)
	go func() {
		// g.client reads the whole answer (to check it against the
		// contract): it returns when the stream ends.
		res, err := g.client.Do(req)
		if err != nil {
			got <- result{err: err}
			return
		}
		b, err := io.ReadAll(res.Body)
		res.Body.Close()
		got <- result{res: res, body: string(b), err: err}
	}()
	soon.Eventually(t, 10*time.Second, func() error {
		res, err := http.Get(g.base + "/metrics")
		if err != nil {
			return err
		}
		defer res.Body.Close()
		b, _ := io.ReadAll(res.Body)
		if !strings.Contains(string(b), `rankgate_live_events_total{type="snapshot"} 1`) {
			return fmt.Errorf("no snapshot sent yet")
		}
		return nil
	})
	stopped = true
	if err := g.shutdown(); err != nil {
		t.Fatal(err)
	}
	var r result
	select {
	case r = <-got:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream did not end at shutdown")
	}
	if r.err != nil {
		t.Fatalf("stream: %v", r.err)
	}
	if r.res.StatusCode != http.StatusOK || r.res.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("stream: %d %q", r.res.StatusCode, r.res.Header.Get("Content-Type"))
	}
	snap := strings.Index(r.body, "id: 1\nevent: snapshot\ndata: {")
	rec := strings.Index(r.body, "event: reconnect\ndata: {}\n\n")
	if snap < 0 || rec < snap || !strings.Contains(r.body, `"member":null`) {
		t.Fatalf("stream body:\n%s", r.body)
	}
	if n := g.api.Checked(); n != 1 {
		t.Fatalf("%d exchanges checked against api/openapi.yaml, want the stream's", n)
	}
}

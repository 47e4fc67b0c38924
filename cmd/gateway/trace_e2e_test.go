package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	coltracepb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/rankgate/rankgate/internal/store"
	"github.com/rankgate/rankgate/internal/testcluster"
	"github.com/rankgate/rankgate/internal/teststack"
)

// TestE2ETracing runs the real program with tracing.enabled and the OTLP
// endpoint of a fake collector (OTEL_EXPORTER_OTLP_ENDPOINT, read by the
// exporter as in production): the spans of an event and a Top-N reach the
// collector over OTLP/HTTP by the time the gateway has shut down — the
// server spans named after their routes, and the Redis round trips as
// client spans of the same traces.
func TestE2ETracing(t *testing.T) {
	// Not parallel: t.Setenv.
	var mu sync.Mutex
	type got struct{ name, trace, parent, scope string }
	var spans []got
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		var req coltracepb.ExportTraceServiceRequest
		if r.URL.Path != "/v1/traces" || proto.Unmarshal(body, &req) != nil {
			http.Error(w, "not an OTLP trace export", http.StatusBadRequest)
			return
		}
		mu.Lock()
		for _, rs := range req.GetResourceSpans() {
			for _, ss := range rs.GetScopeSpans() {
				for _, s := range ss.GetSpans() {
					spans = append(spans, got{s.GetName(), fmt.Sprintf("%x", s.GetTraceId()), fmt.Sprintf("%x", s.GetParentSpanId()), ss.GetScope().GetName()})
				}
			}
		}
		mu.Unlock()
		resp, _ := proto.Marshal(&coltracepb.ExportTraceServiceResponse{})
		w.Header().Set("Content-Type", "application/x-protobuf")
		_, _ = w.Write(resp)
	}))
	defer collector.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.URL)
	t.Setenv("OTEL_TRACES_SAMPLER", "always_on")

	dir := t.TempDir()
	cfg := string(teststack.ConfigYAML(testcluster.Addrs(t), testcluster.Prefix(t), e2eFamilies)) + "tracing:\n  enabled: true\n"
	cfgPath := filepath.Join(dir, "rankgate.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	ready := filepath.Join(dir, "ready")
	ctx, cancel := context.WithCancel(context.Background())
	g := &gw{logs: &syncBuffer{}, cancel: cancel, done: make(chan error, 1)}
	go func() {
		g.done <- runAt(ctx, e2eNow, []string{"serve", "-config", cfgPath, "-ready-file", ready, "-log-format", "text"},
			os.Getenv, io.Discard, g.logs)
	}()
	g.awaitReady(t, ready)
	defer func() {
		if t.Failed() {
			t.Logf("gateway logs (tail):\n%s", tailLines(g.logs.String(), 30))
		}
	}()

	post := func(path, body string) {
		t.Helper()
		resp, err := g.client.Post(g.base+path, "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		if b, _ := io.ReadAll(resp.Body); resp.StatusCode != http.StatusOK {
			t.Fatalf("POST %s: %d %s", path, resp.StatusCode, b)
		}
	}
	post("/v1/events", `{"event_id":"trace-1","family":"learning","user":"u1","delta":5,"dims":{"province":"p","class":"c"}}`)
	resp, err := g.client.Get(g.base + "/v1/boards/learning/current/national/top?limit=3&consistency=primary")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("top: %d", resp.StatusCode)
	}
	g.client.CloseIdleConnections()
	if err := g.shutdown(); err != nil { // flushes the spans
		t.Fatal(err)
	}

	mu.Lock()
	defer mu.Unlock()
	var names []string
	for _, s := range spans {
		names = append(names, s.name)
	}
	for _, route := range []string{"POST /v1/events", "GET /v1/boards/{family}/{period}/{dimension}/top"} {
		i := slices.IndexFunc(spans, func(s got) bool { return s.name == route })
		if i < 0 {
			t.Errorf("no server span %q exported; got %v", route, names)
			continue
		}
		server := spans[i]
		redis, rueidis := 0, 0
		for _, s := range spans {
			// go-redis's round trips, or the rueidis read transport's.
			if s.trace == server.trace && (s.scope == "github.com/redis/go-redis/extra/redisotel" || s.scope == store.TracerName) {
				redis++
			}
			if s.trace == server.trace && s.scope == store.TracerName {
				rueidis++
			}
		}
		if redis == 0 {
			t.Errorf("%s: no Redis span in its trace; got %v", route, names)
		}
		// The Top's fan-out goes to each master through the default read
		// transport, rueidis, which traces its round trips itself.
		if strings.HasPrefix(route, "GET") && rueidis == 0 {
			t.Errorf("%s: no span of the rueidis read transport in its trace; got %v", route, names)
		}
	}
}

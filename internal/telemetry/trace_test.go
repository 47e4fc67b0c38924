package telemetry_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/rankgate/rankgate/internal/gateway"
	"github.com/rankgate/rankgate/internal/readplan"
	"github.com/rankgate/rankgate/internal/store"
	"github.com/rankgate/rankgate/internal/teststack"
)

const redisScope = "github.com/redis/go-redis/extra/redisotel"

// TestTopTrace: one uncached Top-N, traced into an in-memory exporter, is
// one HTTP server span named after its route, continuing the caller's
// trace, whose children are exactly the Redis round trips the read made —
// one span per node round trip, each naming the node it went to: one per
// master the board's shards live on.
func TestTopTrace(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	stack := teststack.New(t, teststack.Options{TracerProvider: tp})

	do := func(method, path, body string, header ...string) []byte {
		t.Helper()
		req := httptest.NewRequest(method, path, strings.NewReader(body))
		for i := 0; i+1 < len(header); i += 2 {
			req.Header.Set(header[i], header[i+1])
		}
		w := httptest.NewRecorder()
		stack.Handler.ServeHTTP(w, req) // returns once the server span has ended
		if w.Code != http.StatusOK {
			t.Fatalf("%s %s: %d %s", method, path, w.Code, w.Body)
		}
		return w.Body.Bytes()
	}
	for i := range 40 {
		do("POST", "/v1/events", fmt.Sprintf(`{"event_id":"e%d","family":"learning","user":"u%d","delta":%d,"dims":{"province":"p"}}`, i, i, 10+i))
	}
	var lay gateway.Layout
	if err := json.Unmarshal(do("GET", "/v1/layout?family=learning", ""), &lay); err != nil {
		t.Fatal(err)
	}
	var board *gateway.BoardPlacement
	for i, b := range lay.Boards {
		if strings.HasSuffix(b.Board, "/national") {
			board = &lay.Boards[i]
		}
	}
	if board == nil || len(board.Shards) < 2 {
		t.Fatalf("no sharded national board in the layout: %+v", lay.Boards)
	}
	masters := map[string]bool{}
	for _, sh := range board.Shards {
		masters[sh.Node] = true
	}

	// A limit the first round answers whole (readplan.SeekAll asks again
	// only when FirstDepth < limit): one fan-out phase.
	const limit = 5
	if d := readplan.FirstDepth(limit, len(board.Shards)); d != limit {
		t.Fatalf("FirstDepth(%d, %d) = %d: the read would take two phases", limit, len(board.Shards), d)
	}
	top := fmt.Sprintf("/v1/boards/learning/current/national/top?limit=%d&consistency=primary", limit)
	// The caller's trace context: the server span continues its trace.
	const callerTrace, callerSpan = "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"
	do("GET", top, "") // warm: every connection the read needs is dialled

	var server sdktrace.ReadOnlySpan
	var trips []sdktrace.ReadOnlySpan
	// A read that had to dial (the background slot-map reload may hold a
	// connection the warm-up left idle) also traces the new connection's
	// handshake: measure again, a bounded number of times.
	for attempt := 1; ; attempt++ {
		before := len(rec.Ended())
		do("GET", top, "", "traceparent", "00-"+callerTrace+"-"+callerSpan+"-01")
		var dialled bool
		server, trips, dialled = readSpans(t, rec.Ended()[before:])
		if !dialled {
			break
		}
		if attempt == 3 {
			t.Fatal("every measured read dialled a new connection")
		}
		t.Logf("attempt %d dialled a connection; measuring again", attempt)
	}
	if want := "GET /v1/boards/{family}/{period}/{dimension}/top"; server.Name() != want {
		t.Errorf("server span %q, want %q", server.Name(), want)
	}
	if got := server.SpanContext().TraceID().String(); got != callerTrace {
		t.Errorf("server span in trace %s, want the caller's %s (traceparent ignored)", got, callerTrace)
	}
	if got := server.Parent().SpanID().String(); got != callerSpan || !server.Parent().IsRemote() {
		t.Errorf("server span's parent %s (remote %v), want the caller's span %s", got, server.Parent().IsRemote(), callerSpan)
	}
	if got := attr(server, "http.route"); got != "/v1/boards/{family}/{period}/{dimension}/top" {
		t.Errorf("http.route = %q", got)
	}
	var nodes []string
	perNode := map[string]int{}
	for _, s := range trips {
		addr := attr(s, "server.address") + ":" + attr(s, "server.port")
		nodes = append(nodes, s.Name()+"@"+addr)
		perNode[addr]++
		if !masters[addr] {
			t.Errorf("round trip %q went to %s, not a master of the board's shards %v", s.Name(), addr, keys(masters))
		}
	}
	sort.Strings(nodes)
	t.Logf("board %s: %d shards on %d masters; the read made %d round trips: %v",
		board.Board, len(board.Shards), len(masters), len(trips), nodes)
	// The read fans out one pipeline per master (issue 9): as many round
	// trips as masters hold the board's shards, one each, carrying one
	// command per shard the node holds.
	for _, s := range trips {
		// Each master's pipeline goes through the default read
		// transport, rueidis, which traces it itself.
		if sc := s.InstrumentationScope().Name; sc != store.TracerName {
			t.Errorf("round trip %q traced by %s, want the rueidis read transport's %s", s.Name(), sc, store.TracerName)
		}
	}
	if len(trips) != len(masters) {
		t.Errorf("%d Redis round trips, want one per master the board's shards live on (%d)", len(trips), len(masters))
	}
	for _, s := range trips {
		addr := attr(s, "server.address") + ":" + attr(s, "server.port")
		if perNode[addr] != 1 {
			t.Errorf("node %s: %d round trips, want 1", addr, perNode[addr])
		}
		cmds := attr(s, "db.redis.num_cmd")
		if cmds == "" {
			cmds = "1" // a lone command is no pipeline
		}
		if want := fmt.Sprint(board.Nodes[addr]); cmds != want {
			t.Errorf("node %s: %s commands in its round trip, holds %s of the board's shards", addr, cmds, want)
		}
	}
}

// readSpans finds the one server span among spans and its children, which
// must all be Redis client spans; dialled reports a connection dialled for
// the request. Spans of other traces (background work) are left out.
func readSpans(t *testing.T, spans []sdktrace.ReadOnlySpan) (server sdktrace.ReadOnlySpan, trips []sdktrace.ReadOnlySpan, dialled bool) {
	t.Helper()
	for _, s := range spans {
		if s.SpanKind() == trace.SpanKindServer {
			if server != nil {
				t.Fatalf("two server spans: %q and %q", server.Name(), s.Name())
			}
			server = s
		}
	}
	if server == nil {
		t.Fatalf("no server span among %d spans", len(spans))
	}
	for _, s := range spans {
		switch {
		case s == server:
		case s.SpanContext().TraceID() != server.SpanContext().TraceID():
			// background work in a trace of its own (the slot-map reload)
		case s.Parent().SpanID() != server.SpanContext().SpanID():
			if s.Name() != "hello" && s.Name() != "redis.pipeline client" { // a new connection's handshake
				t.Errorf("span %q (scope %s) is not a child of the server span", s.Name(), s.InstrumentationScope().Name)
			}
		case s.InstrumentationScope().Name != redisScope && s.InstrumentationScope().Name != store.TracerName || s.SpanKind() != trace.SpanKindClient:
			t.Errorf("child span %q of scope %q kind %v: want only Redis client spans", s.Name(), s.InstrumentationScope().Name, s.SpanKind())
		case s.Name() == "redis.dial":
			dialled = true
		default:
			trips = append(trips, s)
		}
	}
	return server, trips, dialled
}

func attr(s sdktrace.ReadOnlySpan, key string) string {
	for _, kv := range s.Attributes() {
		if string(kv.Key) == key {
			return kv.Value.String()
		}
	}
	return ""
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

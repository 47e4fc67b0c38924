package ledger

import (
	"context"
	"strings"
	"testing"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
)

// TestLedgerTracing: with a TracerProvider, the ledger's queries are client
// spans (otelpgx) under the caller's span, carrying the SQL but never its
// parameters.
func TestLedgerTracing(t *testing.T) {
	needDB(t)
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	schema := randomSchema(t)
	dropSchemaAtCleanup(t, schema)
	l, err := Open(t.Context(), testDSN(), Options{Schema: schema, MaxConns: 2, TracerProvider: tp})
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(l.Close)

	ctx, parent := tp.Tracer("test").Start(t.Context(), "caller")
	const secret = "period-with-a-secret-looking-id"
	if _, err := l.State(ctx, "learning", secret); err != nil {
		t.Fatalf("State: %v", err)
	}
	parent.End()

	var queries int
	for _, s := range rec.Ended() {
		if s.InstrumentationScope().Name != "github.com/exaring/otelpgx" || s.Parent().SpanID() != parent.SpanContext().SpanID() {
			continue
		}
		if s.SpanKind() != trace.SpanKindClient {
			t.Errorf("span %q kind %v, want client", s.Name(), s.SpanKind())
		}
		for _, kv := range s.Attributes() {
			if v := kv.Value.String(); strings.Contains(v, secret) {
				t.Errorf("span %q attribute %s carries a query parameter: %q", s.Name(), kv.Key, v)
			}
		}
		queries++
	}
	if queries == 0 {
		var names []string
		for _, s := range rec.Ended() {
			names = append(names, s.InstrumentationScope().Name+":"+s.Name())
		}
		t.Fatalf("no otelpgx query span under the caller's span; spans: %v", names)
	}
}

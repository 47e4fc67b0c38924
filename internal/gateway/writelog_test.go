package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/rankgate/rankgate/internal/store"
)

// syncBuffer is a bytes.Buffer safe for the logger's concurrent writers (the
// ledger projector logs from its own goroutine).
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// lines answers the JSON log lines whose msg is msg.
func (b *syncBuffer) lines(t *testing.T, msg string) []map[string]any {
	t.Helper()
	b.mu.Lock()
	defer b.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(b.buf.String(), "\n") {
		if l == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(l), &m); err != nil {
			t.Fatalf("log line is not JSON: %v: %s", err, l)
		}
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// An applied write logs one structured line per board at debug, and none at
// the default level (info): a line per event and board is the write path's
// biggest cost after Redis (docs/performance.md, "Writes against an earlier
// commit"). Both modes; projections in Redis-only mode.
func TestAppliedWritesLogAtDebug(t *testing.T) {
	t.Parallel()
	const families = `  f:
    period: all
    tie: first
    dimensions:
      national: {shards: 4}
  proj:
    source: projection
    period: all
    dimensions:
      national: {shards: 1}
`
	for _, tc := range []struct {
		name   string
		ledger bool
		level  slog.Level
		want   int // lines of each kind
	}{
		{"redis/info", false, slog.LevelInfo, 0},
		{"redis/debug", false, slog.LevelDebug, 1},
		{"ledger/info", true, slog.LevelInfo, 0},
		{"ledger/debug", true, slog.LevelDebug, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			buf := &syncBuffer{}
			logger := slog.New(slog.NewJSONHandler(buf, &slog.HandlerOptions{Level: tc.level}))
			adjust := func(o *Options, _ *store.Store) { o.Logger = logger }
			if tc.ledger {
				l := openTestLedger(t)
				adjust = func(o *Options, _ *store.Store) { o.Logger, o.Ledger = logger, l }
			}
			svc := newClusterServiceWith(t, families, adjust)
			if _, err := svc.ApplyEvent(ctx, Event{EventID: "e1", Family: "f", User: "u1", Delta: ptr(int64(7))}); err != nil {
				t.Fatal(err)
			}
			// A replay changes nothing and logs nothing at either level.
			if res, err := svc.ApplyEvent(ctx, Event{EventID: "e1", Family: "f", User: "u1", Delta: ptr(int64(7))}); err != nil || !res.Duplicate {
				t.Fatalf("replay: %+v, %v", res, err)
			}
			if _, err := svc.Project(ctx, BoardRef{Family: "proj", Period: "all", Dimension: "national"}, "u2",
				Projection{Version: 1, Points: 30}); err != nil {
				t.Fatal(err)
			}

			got := buf.lines(t, "event applied")
			if len(got) != tc.want {
				t.Fatalf("%d \"event applied\" lines at %s, want %d:\n%s", len(got), tc.level, tc.want, buf.buf.String())
			}
			for _, l := range got {
				for k, want := range map[string]any{"family": "f", "board": "f/all/national", "member": "u1",
					"event_id": "e1", "points_after": float64(7), "level": "DEBUG"} {
					if l[k] != want {
						t.Errorf("event applied: %s = %v (%T), want %v; line %v", k, l[k], l[k], want, l)
					}
				}
			}
			// (Ledger mode logs no line per projection at any level.)
			wantProj := tc.want
			if tc.ledger {
				wantProj = 0
			}
			proj := buf.lines(t, "projection applied")
			if len(proj) != wantProj {
				t.Fatalf("%d \"projection applied\" lines at %s, want %d:\n%s", len(proj), tc.level, wantProj, buf.buf.String())
			}
			for _, l := range proj {
				for k, want := range map[string]any{"family": "proj", "member": "u2", "points": float64(30), "version": float64(1)} {
					if l[k] != want {
						t.Errorf("projection applied: %s = %v, want %v; line %v", k, l[k], want, l)
					}
				}
			}
		})
	}
}

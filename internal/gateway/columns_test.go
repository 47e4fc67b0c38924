package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/rankgate/rankgate/internal/rank"
)

const colsYAML = `  race:
    aggregate: max
    period: all
    columns:
      - {name: time_ms, order: asc, max: 86400000}
      - {name: kills, order: desc, max: 999}
    dimensions:
      national: {shards: 4}
  plain:
    period: all
    dimensions:
      national: {shards: 4}
  proj:
    source: projection
    period: all
    columns:
      - {name: wins, max: 100}
    dimensions:
      national: {shards: 2}
`

// TestColumnsAndMetadataInput: bad columns and metadata are 4xx naming the
// field; nothing is written.
func TestColumnsAndMetadataInput(t *testing.T) {
	t.Parallel()
	svc := newClusterService(t, colsYAML)
	ctx := context.Background()
	race := func(cols map[string]int64, md string) Event {
		return Event{EventID: "e1", Family: "race", User: "u1", Value: ptr[int64](10),
			Columns: cols, Metadata: json.RawMessage(md)}
	}
	big := `{"k":"` + strings.Repeat("a", 600) + `"}`
	for _, tc := range []struct {
		name  string
		ev    Event
		code  rank.Code
		field string
	}{
		{"missing column", race(map[string]int64{"time_ms": 5}, ""), rank.CodeInvalidArgument, "columns.kills"},
		{"no columns", race(nil, ""), rank.CodeInvalidArgument, "columns.time_ms"},
		{"unknown column", race(map[string]int64{"time_ms": 5, "kills": 1, "deaths": 2}, ""), rank.CodeInvalidArgument, "columns.deaths"},
		{"column over max", race(map[string]int64{"time_ms": 86400001, "kills": 1}, ""), rank.CodeOutOfRange, "columns.time_ms"},
		{"negative column", race(map[string]int64{"time_ms": 1, "kills": -1}, ""), rank.CodeOutOfRange, "columns.kills"},
		{"columns on a family without", Event{EventID: "p1", Family: "plain", User: "u1", Delta: ptr[int64](1), Columns: map[string]int64{"a": 1}},
			rank.CodeInvalidArgument, "columns"},
		{"metadata too large", race(map[string]int64{"time_ms": 1, "kills": 1}, big), rank.CodeTooLarge, "metadata"},
		{"metadata not an object", race(map[string]int64{"time_ms": 1, "kills": 1}, `[1,2]`), rank.CodeInvalidArgument, "metadata"},
	} {
		_, err := svc.ApplyEvent(ctx, tc.ev)
		var re *rank.Error
		if !errors.As(err, &re) || re.Code != tc.code || re.Field != tc.field {
			t.Errorf("%s: %v, want %s on %s", tc.name, err, tc.code, tc.field)
		}
	}
	if _, err := svc.Top(ctx, BoardRef{Family: "race", Period: "all", Dimension: "national"}, 10, ReadOptions{Consistency: ConsistencyPrimary}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Member(ctx, BoardRef{Family: "race", Period: "all", Dimension: "national"}, "u1", ReadOptions{Consistency: ConsistencyPrimary}); rank.CodeOf(err) != rank.CodeNotRanked {
		t.Fatalf("a refused event left u1 on the board: %v", err)
	}
}

// TestMetadataKeptByTheChangeThatCounts: the entry keeps the metadata of
// the event that last changed its standing; a max family keeps the best
// event's; projections carry theirs; a family without columns too.
func TestMetadataKeptByTheChangeThatCounts(t *testing.T) {
	t.Parallel()
	svc := newClusterService(t, colsYAML)
	ctx := context.Background()
	o := ReadOptions{Consistency: ConsistencyPrimary, Metadata: true}
	md := func(fam, user string) string {
		t.Helper()
		ms, err := svc.Member(ctx, BoardRef{Family: fam, Period: "all", Dimension: "national"}, user, o)
		if err != nil {
			t.Fatalf("member %s/%s: %v", fam, user, err)
		}
		return string(ms.Metadata)
	}
	cols := map[string]int64{"time_ms": 900, "kills": 3}
	ev := func(id string, v int64, c map[string]int64, m string) {
		t.Helper()
		if _, err := svc.ApplyEvent(ctx, Event{EventID: id, Family: "race", User: "u1", Value: ptr(v), Columns: c, Metadata: json.RawMessage(m)}); err != nil {
			t.Fatalf("%s: %v", id, err)
		}
	}
	ev("r1", 10, cols, `{"run":1}`)
	ev("r2", 9, cols, `{"run":2}`) // not better: the best keeps its metadata
	if got := md("race", "u1"); got != `{"run":1}` {
		t.Fatalf("after a worse run: %q", got)
	}
	ev("r3", 10, map[string]int64{"time_ms": 800, "kills": 3}, `{"run":3}`) // same points, faster
	if got := md("race", "u1"); got != `{"run":3}` {
		t.Fatalf("after a faster run: %q", got)
	}
	ev("r4", 11, cols, "") // better, without metadata: clears it
	if got := md("race", "u1"); got != "" {
		t.Fatalf("after a better run without metadata: %q", got)
	}
	// A family without columns keeps metadata too.
	if _, err := svc.ApplyEvent(ctx, Event{EventID: "p1", Family: "plain", User: "u2", Delta: ptr[int64](5), Metadata: json.RawMessage(`{"a":1}`)}); err != nil {
		t.Fatal(err)
	}
	if got := md("plain", "u2"); got != `{"a":1}` {
		t.Fatalf("plain: %q", got)
	}
	page, err := svc.Top(ctx, BoardRef{Family: "plain", Period: "all", Dimension: "national"}, 5, ReadOptions{Consistency: ConsistencyPrimary})
	if err != nil || len(page.Entries) != 1 || page.Entries[0].Metadata != nil || page.Entries[0].Columns != nil {
		t.Fatalf("without metadata=1: %+v, %v", page.Entries, err)
	}
	// Projections.
	ref := BoardRef{Family: "proj", Period: "all", Dimension: "national"}
	if _, err := svc.Project(ctx, ref, "u3", Projection{Version: 1, Points: 7, Columns: map[string]int64{"wins": 2}, Metadata: json.RawMessage(`{"v":1}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Project(ctx, ref, "u3", Projection{Version: 2, Points: 7}); rank.CodeOf(err) != rank.CodeInvalidArgument {
		t.Fatalf("projection without columns: %v", err)
	}
	ms, err := svc.Member(ctx, ref, "u3", o)
	if err != nil || string(ms.Metadata) != `{"v":1}` || ms.Columns["wins"] != 2 || ms.Points != 7 {
		t.Fatalf("projected member: %+v, %v", ms, err)
	}
}

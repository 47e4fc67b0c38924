package main

import (
	"net/http"
	"strings"
	"testing"
)

// TestE2EColumnsAndMetadata drives a family with sort columns through the
// real program, every exchange checked against api/openapi.yaml: events
// with columns and metadata, reads ordered by (points, columns…) that carry
// them, and the input errors.
func TestE2EColumnsAndMetadata(t *testing.T) {
	g := startGateway(t, false)
	ev := func(id, user string, v, tms, kills int64, md string) map[string]any {
		e := map[string]any{"event_id": id, "family": "race", "user": user, "value": v,
			"columns": map[string]int64{"time_ms": tms, "kills": kills}}
		if md != "" {
			e["metadata"] = map[string]any{"run": md}
		}
		return e
	}
	g.ok(t, "POST", "/v1/events", ev("c1", "ann", 100, 35210, 12, "a1"), nil)
	g.ok(t, "POST", "/v1/events", ev("c2", "bob", 100, 30000, 3, "b1"), nil)                                         // same points, faster
	g.ok(t, "POST", "/v1/events", ev("c3", "cid", 100, 35210, 12, ""), nil)                                          // ties ann on every column
	g.ok(t, "POST", "/v1/events", ev("c4", "dee", 90, 1, 999, "d1"), nil)                                            // fewer points
	g.ok(t, "POST", "/v1/events:batch", map[string]any{"events": []any{ev("c5", "ann", 100, 36000, 50, "a2")}}, nil) // not better: kept
	b := "/v1/boards/race/all/national"
	type entry struct {
		User     string           `json:"user"`
		Points   int64            `json:"points"`
		Position int64            `json:"position"`
		Rank     int64            `json:"rank"`
		Columns  map[string]int64 `json:"columns"`
		Metadata map[string]any   `json:"metadata"`
	}
	var page struct {
		Entries    []entry `json:"entries"`
		NextCursor string  `json:"next_cursor"`
	}
	g.ok(t, "GET", b+"/top?limit=10&consistency=primary&metadata=1", nil, &page)
	want := []struct {
		user string
		rank int64
		md   any
	}{{"bob", 1, "b1"}, {"cid", 2, nil}, {"ann", 2, "a1"}, {"dee", 4, "d1"}}
	if len(page.Entries) != len(want) {
		t.Fatalf("top: %+v", page.Entries)
	}
	for i, w := range want {
		e := page.Entries[i]
		var md any
		if e.Metadata != nil {
			md = e.Metadata["run"]
		}
		if e.User != w.user || e.Rank != w.rank || e.Position != int64(i) || md != w.md || len(e.Columns) != 2 {
			t.Fatalf("top entry %d = %+v, want %s rank %d metadata %v", i, e, w.user, w.rank, w.md)
		}
	}
	if page.Entries[2].Columns["time_ms"] != 35210 || page.Entries[2].Columns["kills"] != 12 {
		t.Fatalf("ann's columns %v", page.Entries[2].Columns)
	}
	var ms struct {
		Rank       int64            `json:"rank"`
		Position   int64            `json:"position"`
		Percentile float64          `json:"percentile"`
		Columns    map[string]int64 `json:"columns"`
	}
	g.ok(t, "GET", b+"/members/ann?metadata=1", nil, &ms)
	if ms.Rank != 2 || ms.Position != 2 || ms.Columns["kills"] != 12 || ms.Percentile != 25 {
		t.Fatalf("ann: %+v", ms)
	}
	g.ok(t, "GET", b+"/members/cid/around?radius=1", nil, &page)
	if len(page.Entries) != 3 || page.Entries[0].User != "bob" || page.Entries[2].User != "ann" {
		t.Fatalf("around cid: %+v", page.Entries)
	}
	g.ok(t, "GET", b+"/entries?limit=2", nil, &page)
	next := page.NextCursor
	g.ok(t, "GET", b+"/entries?limit=2&cursor="+next, nil, &page)
	if len(page.Entries) != 2 || page.Entries[0].User != "ann" || page.Entries[0].Rank != 2 || page.Entries[1].User != "dee" {
		t.Fatalf("second cursor page: %+v", page.Entries)
	}
	g.ok(t, "POST", b+"/members:lookup", map[string]any{"users": []string{"dee", "ann", "ghost"}}, &page)
	if len(page.Entries) != 2 || page.Entries[0].User != "ann" || page.Entries[0].Rank != 2 {
		t.Fatalf("lookup: %+v", page.Entries)
	}

	g.wantErr(t, "POST", "/v1/events", map[string]any{"event_id": "x1", "family": "race", "user": "u", "value": 1,
		"columns": map[string]int64{"time_ms": 1}}, http.StatusBadRequest, "invalid_argument", "columns.kills")
	g.wantErr(t, "POST", "/v1/events", map[string]any{"event_id": "x2", "family": "race", "user": "u", "value": 1,
		"columns": map[string]int64{"time_ms": 1, "kills": 1, "deaths": 0}}, http.StatusBadRequest, "invalid_argument", "columns.deaths")
	g.wantErr(t, "POST", "/v1/events", ev("x3", "u", 1, 86400001, 1, ""), http.StatusUnprocessableEntity, "out_of_range", "columns.time_ms")
	big := ev("x4", "u", 1, 1, 1, strings.Repeat("m", 600))
	g.wantErr(t, "POST", "/v1/events", big, http.StatusRequestEntityTooLarge, "too_large", "metadata")
	g.wantErr(t, "GET", b+"/top?metadata=2", nil, http.StatusBadRequest, "invalid_argument", "metadata")
}

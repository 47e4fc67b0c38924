package main

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"

	"github.com/rankgate/rankgate/api"
	"github.com/rankgate/rankgate/client"
)

// TestE2EOpenAPIContract: the real program serves its contract, and the
// e2e client checks every exchange against it — this test proves the checks
// run (an exact count) and that a mismatch is caught.
func TestE2EOpenAPIContract(t *testing.T) {
	g := startGateway(t, false)
	var doc map[string]any
	g.ok(t, "GET", "/v1/openapi.json", nil, &doc)
	want, err := api.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var wantDoc map[string]any
	if err := json.Unmarshal(want, &wantDoc); err != nil {
		t.Fatal(err)
	}
	if doc["openapi"] != "3.1.0" || len(doc["paths"].(map[string]any)) != len(wantDoc["paths"].(map[string]any)) {
		t.Fatalf("served document: openapi %v, %d paths", doc["openapi"], len(doc["paths"].(map[string]any)))
	}
	g.ok(t, "POST", "/v1/events", map[string]any{"event_id": "oa-1", "family": "game", "user": "oa1", "value": 7}, nil)
	g.ok(t, "GET", "/v1/boards/game/current/national/top?limit=3&consistency=primary", nil, nil)
	g.wantErr(t, "GET", "/v1/boards/game/current/national/members/nobody", nil, http.StatusNotFound, "not_ranked", "-")
	g.wantErr(t, "POST", "/v1/events", `{"event_id":"oa-2"`, http.StatusBadRequest, "invalid_argument", "")
	g.wantErr(t, "DELETE", "/v1/events", nil, http.StatusMethodNotAllowed, "method_not_allowed", "-")
	if n := g.api.Checked(); n != 6 {
		t.Fatalf("%d exchanges checked, want 6 (one per request)", n)
	}
	if f := g.api.Failures(); len(f) != 0 {
		t.Fatalf("mismatches: %q", f)
	}

	// A mismatch is caught: an answer the document does not allow.
	bad := &http.Response{StatusCode: http.StatusOK, Header: http.Header{"Content-Type": {"application/json"}}}
	req, _ := http.NewRequest("GET", g.base+"/v1/families", nil)
	if err := g.api.Check(req, nil, bad, []byte(`{"families":[{"name":1}]}`)); err == nil {
		t.Fatal("a /v1/families answer with a numeric name passed the check")
	}
	if err := g.api.Check(req, nil, bad, []byte(`{"families":[],"extra":true}`)); err == nil {
		t.Fatal("an undocumented field passed the check")
	}
	// Those two were deliberate: forget them so Require does not fail the test.
	g.api.Forget(2)
}

// TestE2EClient drives the real program with the Go client (client/) over
// the contract-checked transport: typed calls, a retried event counted once,
// and error codes.
func TestE2EClient(t *testing.T) {
	g := startGateway(t, false)
	c, err := client.New(g.base, client.WithHTTPClient(g.client))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	ev := client.Event{EventID: "cl-1", Family: "learning", User: "cl1", Delta: client.Int(15),
		Dims: map[string]string{"province": "p", "class": "c"}}
	first, err := c.PostEvent(ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	// What a retry after a lost answer sends: the same event, same id.
	again, err := c.PostEvent(ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	if first.Duplicate || !again.Duplicate || len(again.Boards) != 3 || again.Boards[0].Points != 15 {
		t.Fatalf("first %+v, again %+v: want one count of 15 on 3 boards", first, again)
	}
	items, err := c.PostEvents(ctx, []client.Event{
		{EventID: "cl-2", Family: "game", User: "cl1", Value: client.Int(40)},
		{EventID: "cl-3", Family: "game", User: "cl2"}, // neither value nor delta
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != 2 || items[0].Error != nil || items[1].Error == nil || items[1].Error.Code != "invalid_argument" {
		t.Fatalf("batch items %+v", items)
	}
	board := client.Board{Family: "learning", Period: "current", Dimension: "national"}
	top, err := c.Top(ctx, board, 5, client.ReadOptions{Consistency: "primary"})
	if err != nil {
		t.Fatal(err)
	}
	if len(top.Entries) != 1 || top.Entries[0].User != "cl1" || top.Entries[0].Points != 15 || top.Source != "primary" {
		t.Fatalf("top %+v", top)
	}
	m, err := c.Member(ctx, board, "cl1", client.ReadOptions{})
	if err != nil || m.Rank != 1 || m.Members != 1 {
		t.Fatalf("member %+v, %v", m, err)
	}
	if _, err := c.Member(ctx, board, "nobody", client.ReadOptions{}); client.Code(err) != "not_ranked" {
		t.Fatalf("absent member: %v, want not_ranked", err)
	}
	fams, err := c.Families(ctx)
	if err != nil || len(fams) == 0 {
		t.Fatalf("families %+v, %v", fams, err)
	}
	if n := g.api.Checked(); n != 7 {
		t.Fatalf("%d exchanges checked, want 7 (one per call)", n)
	}
}

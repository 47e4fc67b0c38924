package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/rankgate/rankgate/client"
	"github.com/rankgate/rankgate/internal/apitest"
	"github.com/rankgate/rankgate/internal/ledger"
	"github.com/rankgate/rankgate/internal/testpg"
	"github.com/rankgate/rankgate/internal/teststack"
)

// Moderation over HTTP (issue 13 parts 3–5): removing a member, bans and
// the score history, every exchange checked against api/openapi.yaml.

type removalRes struct {
	Removed bool  `json:"removed"`
	Points  int64 `json:"points"`
}

type banRes struct {
	User     string   `json:"user"`
	Families []string `json:"families"`
	Removed  []struct {
		Board  string `json:"board"`
		Points int64  `json:"points"`
	} `json:"removed"`
}

type historyRes struct {
	Board  string `json:"board"`
	User   string `json:"user"`
	Events []struct {
		EventID      string `json:"event_id"`
		Kind         string `json:"kind"`
		Delta        *int64 `json:"delta"`
		PointsBefore int64  `json:"points_before"`
		PointsAfter  int64  `json:"points_after"`
		Operator     string `json:"operator"`
		Reason       string `json:"reason"`
	} `json:"events"`
	NextCursor string `json:"next_cursor"`
}

var removal = map[string]any{"operator": "ops@x", "reason": "cheating"}

func modEvent(id, user string, delta int64) map[string]any {
	return map[string]any{"event_id": id, "family": "learning", "user": user, "delta": delta, "dims": map[string]string{"province": "zj"}}
}

// moderationFlow is what both modes answer alike: DELETE member, bans.
func moderationFlow(t *testing.T, g *gw) {
	for _, ev := range []map[string]any{modEvent("m1", "mod1", 30), modEvent("m2", "mod2", 20), modEvent("m3", "mod1", 5)} {
		g.ok(t, "POST", "/v1/events", ev, nil)
	}
	var rm removalRes
	g.ok(t, "DELETE", lb("national")+"/members/mod1", removal, &rm)
	if !rm.Removed || rm.Points != 35 {
		t.Fatalf("removal: %+v, want removed with 35 points", rm)
	}
	g.wantErr(t, "GET", lb("national")+"/members/mod1?consistency=primary", nil, 404, "not_ranked", "")
	g.wantErr(t, "DELETE", lb("national")+"/members/mod1", removal, 404, "not_ranked", "")
	g.wantErr(t, "DELETE", lb("national")+"/members/mod2", map[string]any{"operator": "ops@x"}, 400, "invalid_argument", "reason")
	g.wantErr(t, "DELETE", lb("national")+"/members/mod2", map[string]any{"operator": "ops@x", "reason": "x", "extra": 1}, 400, "invalid_argument", "")
	g.wantErr(t, "DELETE", "/v1/boards/nope/current/national/members/mod2", removal, 404, "unknown_family", "")
	var st struct {
		Points int64 `json:"points"`
	}
	g.ok(t, "GET", lb("province:zj")+"/members/mod1?consistency=primary", nil, &st)
	if st.Points != 35 {
		t.Fatalf("the province board keeps mod1 at 35, got %d", st.Points)
	}

	var ban banRes
	g.ok(t, "PUT", "/v1/bans/mod2", map[string]any{"operator": "ops@x", "reason": "bot", "families": []string{"learning"}}, &ban)
	if ban.User != "mod2" || len(ban.Removed) != 2 {
		t.Fatalf("ban: %+v, want mod2 removed from national and province:zj", ban)
	}
	g.wantErr(t, "GET", lb("province:zj")+"/members/mod2?consistency=primary", nil, 404, "not_ranked", "")
	g.wantErr(t, "POST", "/v1/events", modEvent("m4", "mod2", 1), 403, "member_banned", "")
	g.wantErr(t, "PUT", "/v1/bans/mod3", map[string]any{"operator": "ops@x", "reason": "x", "families": []string{"nope"}}, 404, "unknown_family", "families")
	var list struct {
		Bans []struct {
			User string `json:"user"`
		} `json:"bans"`
	}
	g.ok(t, "GET", "/v1/bans", nil, &list)
	if len(list.Bans) != 1 || list.Bans[0].User != "mod2" {
		t.Fatalf("bans: %+v", list)
	}
	g.ok(t, "DELETE", "/v1/bans/mod2", nil, nil)
	g.wantErr(t, "DELETE", "/v1/bans/mod2", nil, 404, "not_found", "")
}

// Redis-only mode, through the real program: removals and bans work; the
// history needs the ledger.
func TestE2EModeration(t *testing.T) {
	t.Parallel()
	g := startGateway(t, false)
	moderationFlow(t, g)
	g.wantErr(t, "GET", lb("national")+"/members/mod1/history", nil, 412, "ledger_required", "")
}

// ledgerModerationServer serves the whole handler stack in ledger mode on
// the real cluster and PostgreSQL, with a contract checker for its exchanges.
func ledgerModerationServer(t *testing.T) (*httptest.Server, *apitest.Checker) {
	t.Helper()
	l, err := ledger.Open(context.Background(), testpg.DSN(t), ledger.Options{Schema: testpg.Schema(t), MaxConns: 4})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(l.Close)
	stack := teststack.New(t, teststack.Options{Families: e2eFamilies, Ledger: l})
	srv := httptest.NewServer(stack.Handler)
	t.Cleanup(srv.Close)
	checker, err := apitest.New()
	if err != nil {
		t.Fatal(err)
	}
	return srv, checker
}

// Ledger mode, the whole handler stack in-process on the real cluster and
// PostgreSQL: the same flow, then the history of the removed member, paged.
func TestModerationLedgerHTTP(t *testing.T) {
	t.Parallel()
	srv, checker := ledgerModerationServer(t)
	checker.Require(t, 10)
	g := &gw{base: srv.URL, api: checker, client: &http.Client{Transport: checker.Transport(nil)}}
	moderationFlow(t, g)
	g.ok(t, "POST", "/v1/events", modEvent("m5", "mod1", 4), nil)

	var h historyRes
	g.ok(t, "GET", lb("national")+"/members/mod1/history?limit=2", nil, &h)
	if len(h.Events) != 2 || h.NextCursor == "" || h.Events[0].EventID != "m5" || h.Events[1].Kind != "removal" ||
		h.Events[1].PointsBefore != 35 || h.Events[1].Operator != "ops@x" || h.Events[0].PointsBefore != 0 || h.Events[0].PointsAfter != 4 {
		t.Fatalf("history page 1: %+v", h)
	}
	next := h.NextCursor
	g.ok(t, "GET", lb("national")+"/members/mod1/history?limit=2&cursor="+next, nil, &h)
	if len(h.Events) != 2 || h.NextCursor != "" || h.Events[0].EventID != "m3" || h.Events[1].EventID != "m1" ||
		h.Events[0].PointsBefore != 30 || h.Events[0].PointsAfter != 35 {
		t.Fatalf("history page 2: %+v", h)
	}
	g.wantErr(t, "GET", lb("national")+"/members/mod2/history?cursor="+next, nil, 400, "invalid_cursor", "cursor")
	g.wantErr(t, "GET", lb("national")+"/members/mod1/history?limit=1001", nil, 400, "invalid_argument", "limit")
	g.wantErr(t, "GET", lb("national")+"/members/mod1/history?cursor="+strings.Repeat("A", 40), nil, 400, "invalid_cursor", "cursor")
}

// The Go client's moderation calls against the whole stack in ledger mode,
// every exchange checked against the contract.
func TestClientModeration(t *testing.T) {
	t.Parallel()
	srv, checker := ledgerModerationServer(t)
	checker.Require(t, 7)
	c, err := client.New(srv.URL, client.WithHTTPClient(&http.Client{Transport: checker.Transport(nil)}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i, d := range []int64{12, 8} {
		if _, err := c.PostEvent(ctx, client.Event{EventID: fmt.Sprintf("c%d", i), Family: "learning", User: "cl1", Delta: client.Int(d)}); err != nil {
			t.Fatal(err)
		}
	}
	nat := client.Board{Family: "learning", Period: "current", Dimension: "national"}
	if r, err := c.RemoveMember(ctx, nat, "cl1", client.Removal{Operator: "ops@x", Reason: "test"}); err != nil || !r.Removed || r.Points != 20 {
		t.Fatalf("RemoveMember: %+v %v", r, err)
	}
	if _, err := c.RemoveMember(ctx, nat, "cl1", client.Removal{Operator: "ops@x", Reason: "test"}); client.Code(err) != "not_ranked" {
		t.Fatalf("RemoveMember again: %v, want not_ranked", err)
	}
	h, err := c.MemberHistory(ctx, nat, "cl1", 2, "")
	if err != nil || len(h.Events) != 2 || h.Events[0].Kind != "removal" || h.Events[0].PointsBefore != 20 || h.NextCursor == "" {
		t.Fatalf("MemberHistory: %+v %v", h, err)
	}
	if h, err = c.MemberHistory(ctx, nat, "cl1", 2, h.NextCursor); err != nil || len(h.Events) != 1 || h.Events[0].EventID != "c0" {
		t.Fatalf("MemberHistory page 2: %+v %v", h, err)
	}
	b, err := c.PutBan(ctx, "cl2", client.BanRequest{Operator: "ops@x", Reason: "bot"})
	if err != nil || b.User != "cl2" || len(b.Families) != 0 || b.Removed == nil {
		t.Fatalf("PutBan: %+v %v", b, err)
	}
	if _, err := c.PostEvent(ctx, client.Event{EventID: "c9", Family: "learning", User: "cl2", Delta: client.Int(1)}); client.Code(err) != "member_banned" {
		t.Fatalf("event of a banned member: %v", err)
	}
	if list, err := c.Bans(ctx); err != nil || len(list.Bans) != 1 || list.Bans[0].Operator != "ops@x" {
		t.Fatalf("Bans: %+v %v", list, err)
	}
	if lifted, err := c.DeleteBan(ctx, "cl2"); err != nil || lifted.User != "cl2" || lifted.Reason != "bot" {
		t.Fatalf("DeleteBan: %+v %v", lifted, err)
	}
}

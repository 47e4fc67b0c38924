package main

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/rankgate/rankgate/client"
)

// Erasure and export over HTTP with the Go client, ledger mode, every
// exchange checked against api/openapi.yaml: the export lists the member's
// standings and events, the erasure answers what it removed, a second one
// zeros, the member's reads and export are then 404, and bad input is a
// 400 naming the field.
func TestClientErasure(t *testing.T) {
	t.Parallel()
	srv, checker := ledgerModerationServer(t)
	checker.Require(t, 11)
	c, err := client.New(srv.URL, client.WithHTTPClient(&http.Client{Transport: checker.Transport(nil)}))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for i, u := range []string{"er1", "er1", "er2"} {
		ev := client.Event{EventID: fmt.Sprintf("er%d", i), Family: "learning", User: u, Delta: client.Int(int64(10 + i)),
			Dims: map[string]string{"province": "zj"}}
		if _, err := c.PostEvent(ctx, ev); err != nil {
			t.Fatal(err)
		}
	}
	ex, err := c.ExportMember(ctx, "er1")
	if err != nil || len(ex.Standings) != 2 || len(ex.Events) != 2 || ex.Standings[0].Points != 21 || ex.Standings[0].Rank != 1 {
		t.Fatalf("ExportMember: %+v %v; want 21 points, rank 1 on 2 boards, 2 events", ex, err)
	}
	who := client.Removal{Operator: "dpo@x", Reason: "erasure request"}
	if r, err := c.EraseMember(ctx, "er1", who); err != nil || r.Member != "er1" || r.Boards != 2 || r.LedgerRows == 0 {
		t.Fatalf("EraseMember: %+v %v; want 2 boards and ledger rows", r, err)
	}
	if r, err := c.EraseMember(ctx, "er1", who); err != nil || r.Boards != 0 || r.LedgerRows != 0 || r.Profile {
		t.Fatalf("EraseMember again: %+v %v; want zeros", r, err)
	}
	nat := client.Board{Family: "learning", Period: "current", Dimension: "national"}
	if _, err := c.Member(ctx, nat, "er1", client.ReadOptions{Consistency: "primary"}); client.Code(err) != "not_ranked" {
		t.Fatalf("an erased member's standing: %v, want not_ranked", err)
	}
	if _, err := c.ExportMember(ctx, "er1"); client.Code(err) != "not_ranked" {
		t.Fatalf("an erased member's export: %v, want not_ranked", err)
	}
	if st, err := c.Member(ctx, nat, "er2", client.ReadOptions{Consistency: "primary"}); err != nil || st.Points != 12 || st.Rank != 1 || st.Members != 1 {
		t.Fatalf("the other member: %+v %v; want 12 points, rank 1 of 1", st, err)
	}
	if _, err := c.EraseMember(ctx, "er2", client.Removal{Operator: "dpo@x"}); client.Code(err) != "invalid_argument" {
		t.Fatalf("an erasure without a reason: %v, want invalid_argument", err)
	}
	if _, err := c.ExportMember(ctx, "bad{id}"); client.Code(err) != "invalid_argument" {
		t.Fatalf("an export of a malformed member: %v, want invalid_argument", err)
	}
}

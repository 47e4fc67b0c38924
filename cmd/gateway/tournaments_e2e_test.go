package main

import (
	"context"
	"testing"
	"time"

	"github.com/rankgate/rankgate/client"
)

// Tournaments through the real program and the Go client, every exchange
// checked against api/openapi.yaml: create, join, gated events, board reads,
// cancel, and the errors that name their field.
func TestE2ETournaments(t *testing.T) {
	t.Parallel()
	g := startGateway(t, false)
	g.api.Require(t, 12)
	c, err := client.New(g.base, client.WithHTTPClient(g.client), client.WithRetry(client.Retry{Attempts: 1}))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	now := e2eNow().UTC()
	start, end := now.Add(-time.Minute), now.Add(time.Hour)
	size, tries := int64(2), int64(2)
	info, err := c.CreateTournament(ctx, client.Tournament{ID: "e2e-cup", Title: "Cup", Start: &start, End: &end,
		MaxSize: &size, MaxAttempts: &tries, JoinRequired: true, Aggregate: "max", Metadata: []byte(`{"prize":"gold"}`)})
	if err != nil {
		t.Fatal(err)
	}
	if info.State != "active" || info.Size != 0 || info.Period == "" || string(info.Metadata) != `{"prize":"gold"}` {
		t.Fatalf("created: %+v", info)
	}
	bad := int64(0)
	_, err = c.CreateTournament(ctx, client.Tournament{ID: "e2e-bad", Start: &start, End: &end, MaxSize: &bad})
	if e, ok := err.(*client.Error); !ok || e.Status != 400 || e.Field != "max_size" {
		t.Fatalf("max_size 0: %v", err)
	}
	if _, err := c.CreateTournament(ctx, client.Tournament{ID: "learning", Start: &start, End: &end}); client.Code(err) != "already_exists" {
		t.Fatalf("id of a configured family: %v", err)
	}
	ev := func(id, user string, v int64) error {
		_, err := c.PostEvent(ctx, client.Event{EventID: id, Family: "e2e-cup", User: user, Value: &v})
		return err
	}
	if err := ev("t0", "p1", 5); client.Code(err) != "not_joined" {
		t.Fatalf("event before the join: %v", err)
	}
	for _, u := range []string{"p1", "p2"} {
		if r, err := c.Join(ctx, "e2e-cup", u); err != nil || !r.Joined {
			t.Fatalf("join %s: %+v, %v", u, r, err)
		}
	}
	if _, err := c.Join(ctx, "e2e-cup", "p3"); client.Code(err) != "tournament_full" {
		t.Fatalf("third join of max_size 2: %v", err)
	}
	for i, v := range []int64{5, 9} {
		if err := ev([]string{"t1", "t2"}[i], "p1", v); err != nil {
			t.Fatal(err)
		}
	}
	if err := ev("t1", "p1", 5); err != nil {
		t.Fatalf("replay: %v", err)
	}
	if err := ev("t3", "p1", 50); client.Code(err) != "attempts_exhausted" {
		t.Fatalf("third attempt: %v", err)
	}
	page, err := c.Top(ctx, client.Board{Family: "e2e-cup", Period: "current", Dimension: "national"}, 10, client.ReadOptions{})
	if err != nil || len(page.Entries) != 1 || page.Entries[0].Points != 9 {
		t.Fatalf("top: %+v, %v", page, err)
	}
	list, err := c.Tournaments(ctx, "active")
	if err != nil || len(list) != 1 || list[0].Size != 2 {
		t.Fatalf("active list: %+v, %v", list, err)
	}
	if _, err := c.Tournament(ctx, "nope"); client.Code(err) != "unknown_tournament" {
		t.Fatalf("unknown: %v", err)
	}
	if info, err := c.CancelTournament(ctx, "e2e-cup"); err != nil || info.State != "cancelled" {
		t.Fatalf("cancel: %+v, %v", info, err)
	}
	if _, err := c.Join(ctx, "e2e-cup", "p2"); client.Code(err) != "period_closed" {
		t.Fatalf("join after cancel: %v", err)
	}
}

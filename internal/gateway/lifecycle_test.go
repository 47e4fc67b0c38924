package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"testing"

	"github.com/rankgate/rankgate/internal/rank"
)

const freezeFamilies = `  f:
    period: all
    tie: first
    dimensions:
      national: {shards: 4}
      province: {shards: 2}
  p:
    source: projection
    period: all
    dimensions:
      national: {shards: 2}
`

// Freeze marks every shard of every board; afterwards events are refused and
// kept for review — on existing boards and on boards that do not exist yet —
// while a replay of an event applied before the freeze is still a duplicate.
func TestFreezeRefusesAndKeepsForReview(t *testing.T) {
	t.Parallel()
	svc := newClusterService(t, freezeFamilies)
	ctx := context.Background()
	for i := 0; i < 12; i++ {
		if _, err := svc.ApplyEvent(ctx, Event{EventID: fmt.Sprintf("e%d", i), Family: "f", User: fmt.Sprintf("u%d", i),
			Delta: ptr(int64(i + 1)), Dims: map[string]string{"province": "zj"}}); err != nil {
			t.Fatal(err)
		}
	}
	before, err := svc.Top(ctx, BoardRef{Family: "f", Period: "all", Dimension: "national"}, 20, ReadOptions{Consistency: ConsistencyPrimary})
	if err != nil {
		t.Fatal(err)
	}
	d, err := svc.Freeze(ctx, "f", "all")
	if err != nil {
		t.Fatal(err)
	}
	if d.State != "frozen" || d.Writable || len(d.Boards) != 2 || d.Shards["national"] != 4 || d.Mode != "redis-only" {
		t.Fatalf("freeze answered %+v", d)
	}
	if _, err := svc.Freeze(ctx, "f", "all"); err != nil {
		t.Fatalf("freeze is idempotent: %v", err)
	}
	cases := []struct {
		title string
		ev    Event
		code  rank.Code
		dup   bool
	}{
		{"existing board", Event{EventID: "late1", Family: "f", User: "u1", Delta: ptr(int64(5)), Dims: map[string]string{"province": "zj"}}, rank.CodePeriodClosed, false},
		{"a board that did not exist", Event{EventID: "late2", Family: "f", User: "u99", Delta: ptr(int64(5)), Dims: map[string]string{"province": "gd"}}, rank.CodePeriodClosed, false},
		{"a reversal", Event{EventID: "late3", Family: "f", User: "u2", Reverses: "e2", Dims: map[string]string{"province": "zj"}}, rank.CodePeriodClosed, false},
		{"replay of an applied event", Event{EventID: "e3", Family: "f", User: "u3", Delta: ptr(int64(4)), Dims: map[string]string{"province": "zj"}}, "", true},
	}
	for _, c := range cases {
		res, err := svc.ApplyEvent(ctx, c.ev)
		if rank.CodeOf(err) != c.code || res.Duplicate != c.dup {
			t.Fatalf("%s: duplicate=%v err=%v, want code %q duplicate=%v", c.title, res.Duplicate, err, c.code, c.dup)
		}
	}
	after, err := svc.Top(ctx, BoardRef{Family: "f", Period: "all", Dimension: "national"}, 20, ReadOptions{Consistency: ConsistencyPrimary})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(after.Entries) != fmt.Sprint(before.Entries) {
		t.Fatalf("a frozen board changed:\n%v\n%v", before.Entries, after.Entries)
	}
	if list, err := svc.Boards(ctx, "f", "all"); err != nil || len(list.Boards) != 2 {
		t.Fatalf("a refused event created a board: %v %+v", err, list.Boards)
	}
	rv, err := svc.Reviews(ctx, "f", "all", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(rv.Reviews) != 3 {
		t.Fatalf("%d reviews, want 3: %+v", len(rv.Reviews), rv.Reviews)
	}
	for i, want := range []string{"late1", "late2", "late3"} {
		var ev Event
		if err := json.Unmarshal(rv.Reviews[i].Event, &ev); err != nil || ev.EventID != want || rv.Reviews[i].Reason != "frozen" {
			t.Fatalf("review %d = %+v (%v), want %s/frozen", i, rv.Reviews[i], err, want)
		}
	}
	// Projections into a frozen period are refused too.
	if _, err := svc.Freeze(ctx, "p", "all"); err != nil {
		t.Fatal(err)
	}
	if _, err := svc.Project(ctx, BoardRef{Family: "p", Period: "all", Dimension: "national"}, "u1", Projection{Version: 1, Points: 3}); rank.CodeOf(err) != rank.CodePeriodClosed {
		t.Fatalf("projection into a frozen period: %v", err)
	}
}

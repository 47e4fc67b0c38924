package gateway

import (
	"context"
	"encoding/json"
	"testing"
	"time"

	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/store"
)

const shapeFamilies = `  sprint:
    period: seasons
    grace: 2m
    seasons:
      - {id: s1, starts: "2026-12-01T00:00:00Z", ends: "2026-12-15T00:00:00Z"}
      - {id: s2, starts: "2026-12-20T00:00:00Z", ends: "2027-01-10T00:00:00Z"}
    dimensions:
      national: {shards: 2}
  weekly_reset:
    period: cron
    reset: "0 4 * * 1"
    timezone: Europe/Berlin
    dimensions:
      national: {shards: 2}
  hourly:
    period: hour
    timezone: Asia/Shanghai
    dimensions:
      national: {shards: 1}
`

// Seasons leave gaps: an event between two seasons is 409 period_closed and
// kept for review under the season before; inside a season it counts. The
// period endpoint tells the window and the next reset of every shape.
func TestPeriodShapes(t *testing.T) {
	t.Parallel()
	clk := &clock{t: time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)}
	svc := newClusterServiceWith(t, shapeFamilies, func(o *Options, _ *store.Store) { o.Now = clk.Now })
	ctx := context.Background()

	// Before the first season: s1 is upcoming, and events are kept for review.
	if info, err := svc.Period(ctx, "sprint", time.Time{}); err != nil || info.Period != "s1" || info.State != "upcoming" {
		t.Fatalf("before the first season: %+v %v", info, err)
	}
	if _, err := svc.ApplyEvent(ctx, Event{EventID: "early", Family: "sprint", User: "u1", Delta: ptr(int64(3))}); rank.CodeOf(err) != rank.CodePeriodClosed {
		t.Fatalf("event before the first season: %v, want period_closed", err)
	}
	clk.t = time.Date(2026, 12, 10, 12, 0, 0, 0, time.UTC)

	res, err := svc.ApplyEvent(ctx, Event{EventID: "in-s1", Family: "sprint", User: "u1", Delta: ptr(int64(5))})
	if err != nil || res.Period != "s1" {
		t.Fatalf("event in s1: %+v %v", res, err)
	}
	clk.Add(7 * 24 * time.Hour) // 2026-12-17: between s1 and s2
	_, err = svc.ApplyEvent(ctx, Event{EventID: "gap", Family: "sprint", User: "u1", Delta: ptr(int64(7))})
	if rank.CodeOf(err) != rank.CodePeriodClosed {
		t.Fatalf("event between seasons: %v, want period_closed", err)
	}
	rv, err := svc.Reviews(ctx, "sprint", "s1", 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(rv.Reviews) != 2 {
		t.Fatalf("reviews of s1 = %+v, want early and gap", rv.Reviews)
	}
	for i, want := range []string{"early", "gap"} {
		var kept Event
		if rv.Reviews[i].Reason != "between_seasons" || json.Unmarshal(rv.Reviews[i].Event, &kept) != nil || kept.EventID != want {
			t.Fatalf("review %d of s1 = %+v, want %s", i, rv.Reviews[i], want)
		}
	}
	m, err := svc.Member(ctx, BoardRef{Family: "sprint", Period: "current", Dimension: "national"}, "u1", ReadOptions{Consistency: ConsistencyPrimary})
	if err != nil || m.Points != 5 {
		t.Fatalf("current board between seasons (s1): %+v %v", m, err)
	}

	at := func(s string) time.Time { v, _ := time.Parse(time.RFC3339, s); return v }
	tests := []struct {
		name, family string
		at           time.Time
		period       string
		state        string
		between      bool
		next         string
		reset        string
	}{
		{"in a season", "sprint", at("2026-12-14T23:59:00Z"), "s1", "closed", false, "s2", "2026-12-20T00:00:00Z"},
		{"between seasons", "sprint", time.Time{}, "s1", "closed", true, "s2", "2026-12-20T00:00:00Z"},
		{"next season, asked ahead", "sprint", at("2026-12-21T00:00:00Z"), "s2", "open", false, "", ""},
		{"before the first season, s1 over", "sprint", at("2026-11-21T00:00:00Z"), "s1", "closed", false, "s2", "2026-12-20T00:00:00Z"},
		{"cron window over the year end", "weekly_reset", at("2027-01-01T00:00:00Z"), "20261228T0400", "open", false, "20270104T0400", "2027-01-04T03:00:00Z"},
		{"hour in shanghai", "hourly", at("2026-12-17T02:30:00Z"), "2026-12-17T10", "closed", false, "2026-12-17T11", "2026-12-17T03:00:00Z"},
	}
	for _, tc := range tests {
		info, err := svc.Period(ctx, tc.family, tc.at)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		reset := ""
		if info.NextReset != nil {
			reset = info.NextReset.UTC().Format(time.RFC3339)
		}
		if info.Period != tc.period || info.State != tc.state || info.BetweenSeasons != tc.between || info.NextPeriod != tc.next || reset != tc.reset {
			t.Fatalf("%s: %+v (next reset %s), want %s %s between=%v next %s at %s", tc.name, info, reset, tc.period, tc.state, tc.between, tc.next, tc.reset)
		}
	}

	// A cron window and an hour take events and name their boards by id.
	clk.t = time.Date(2026, 12, 31, 23, 30, 0, 0, time.UTC)
	for fam, want := range map[string]string{"weekly_reset": "20261228T0400", "hourly": "2027-01-01T07"} {
		res, err := svc.ApplyEvent(ctx, Event{EventID: "e-" + fam, Family: fam, User: "u1", Delta: ptr(int64(1))})
		if err != nil || res.Period != want {
			t.Fatalf("%s: %+v %v, want period %s", fam, res, err, want)
		}
		if _, err := svc.Top(ctx, BoardRef{Family: fam, Period: want, Dimension: "national"}, 10, ReadOptions{}); err != nil {
			t.Fatalf("%s: top of %s: %v", fam, want, err)
		}
	}
	if _, err := svc.Top(ctx, BoardRef{Family: "weekly_reset", Period: "20261229T0400", Dimension: "national"}, 10, ReadOptions{}); rank.CodeOf(err) != rank.CodeInvalidArgument {
		t.Fatalf("a cron id that is no window start: %v, want invalid_argument", err)
	}
}

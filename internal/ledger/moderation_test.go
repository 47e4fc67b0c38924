package ledger

import (
	"context"
	"errors"
	"testing"
)

func removalEv(id, fam, member string, boards ...string) Event {
	return Event{EventID: eid(fam, id), Kind: KindRemoval, Family: fam, Period: testPeriod, Member: member,
		Boards: boards, Operator: "ops@x", Reason: "cheating"}
}

// Remove: the totals go absent with the next version on the boards the
// member is on (every board when none are named); a replay answers the same
// boards and keeps nothing more; a member on none of them is ErrNotRanked
// and leaves no event; a closed period refuses.
func TestRemove(t *testing.T) {
	t.Parallel()
	l := openTest(t)
	ctx := context.Background()
	const fam = "rm"
	for _, ev := range []Event{sumEv("a1", fam, "u1", 10, "national", "p:zj"), sumEv("a2", fam, "u1", 5, "national")} {
		if _, err := l.Record(ctx, ev, sumTie); err != nil {
			t.Fatal(err)
		}
	}
	got, err := l.Remove(ctx, removalEv("rm1", fam, "u1"), sumTie)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Board != "national" || got[0].PointsBefore != 15 || got[1].Board != "p:zj" || got[1].PointsBefore != 10 ||
		got[0].After.Present || got[0].After.Version != 3 || got[0].After.Seq != -1 {
		t.Fatalf("removal: %+v", got)
	}
	again, err := l.Remove(ctx, removalEv("rm1", fam, "u1"), sumTie)
	if err != nil || len(again) != 2 || again[0].PointsBefore != 15 || again[0].After.Version != 3 {
		t.Fatalf("replayed removal: %+v %v", again, err)
	}
	if _, err := l.Remove(ctx, removalEv("rm2", fam, "u1", "national"), sumTie); !errors.Is(err, ErrNotRanked) {
		t.Fatalf("removing an absent member: %v, want ErrNotRanked", err)
	}
	if n := queryInt(t, l, `SELECT count(*) FROM events WHERE event_id = $1`, eid(fam, "rm2")); n != 0 {
		t.Fatalf("a refused removal left %d events", n)
	}
	if _, err := l.Remove(ctx, Event{EventID: eid(fam, "rm3"), Family: fam, Period: testPeriod, Member: "u1"}, sumTie); !errors.Is(err, ErrInvalid) {
		t.Fatalf("a removal without an operator: %v, want ErrInvalid", err)
	}
	// Later events start afresh; the history lists every change in order.
	if _, err := l.Record(ctx, sumEv("a3", fam, "u1", 7, "national"), sumTie); err != nil {
		t.Fatal(err)
	}
	tot, err := l.Total(ctx, fam, testPeriod, "national", "u1")
	if err != nil || tot.Points != 7 || !tot.Present {
		t.Fatalf("after the removal: %+v %v", tot, err)
	}
	hs, err := l.History(ctx, fam, testPeriod, "national", "u1", nil, 10)
	if err != nil {
		t.Fatal(err)
	}
	want := []struct {
		id            string
		before, after int64
	}{{"a3", 0, 7}, {"rm1", 15, 0}, {"a2", 10, 15}, {"a1", 0, 10}}
	if len(hs) != len(want) {
		t.Fatalf("history: %+v", hs)
	}
	for i, w := range want {
		if hs[i].EventID != eid(fam, w.id) || hs[i].PointsBefore != w.before || hs[i].PointsAfter != w.after {
			t.Errorf("history[%d] = %+v, want %+v", i, hs[i], w)
		}
	}
	if _, err := l.Freeze(ctx, fam, testPeriod); err != nil {
		t.Fatal(err)
	}
	if _, err := l.Remove(ctx, removalEv("rm4", fam, "u1"), sumTie); !errors.Is(err, ErrPeriodClosed) {
		t.Fatalf("removal in a frozen period: %v, want ErrPeriodClosed", err)
	}
}

// The history of events committed in one group follows the group's order.
func TestHistoryFollowsGroupOrder(t *testing.T) {
	t.Parallel()
	l := openTest(t)
	ctx := context.Background()
	const fam = "hg"
	var evs []GroupEvent
	for i, d := range []int64{3, -1, 4, 1, -5} {
		evs = append(evs, GroupEvent{Event: sumEv(string(rune('a'+i)), fam, "u1", d), Rules: sumMember})
	}
	if _, err := l.RecordGroup(ctx, evs); err != nil {
		t.Fatal(err)
	}
	hs, err := l.History(ctx, fam, testPeriod, "national", "u1", nil, 2)
	if err != nil || len(hs) != 2 {
		t.Fatalf("page 1: %+v %v", hs, err)
	}
	rest, err := l.History(ctx, fam, testPeriod, "national", "u1", &hs[1].Cursor, 10)
	if err != nil {
		t.Fatal(err)
	}
	hs = append(hs, rest...)
	after := int64(0)
	for i := len(hs) - 1; i >= 0; i-- { // oldest first: each starts where the one before ended
		h := hs[i]
		if h.EventID != eid(fam, string(rune('a'+len(hs)-1-i))) || h.PointsBefore != after {
			t.Fatalf("history %+v out of order", hs)
		}
		after = h.PointsAfter
	}
	if len(hs) != 5 || after != 2 {
		t.Fatalf("history: %d events ending at %d, want 5 ending at 2", len(hs), after)
	}
}

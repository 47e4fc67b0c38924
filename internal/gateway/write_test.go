package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/store"
)

// writeFamilies are the families of the write tests (each test takes its own
// key prefix through newClusterService, so boards never collide).
const writeFamilies = `  learning:
    period: week
    timezone: Asia/Shanghai
    tie: first
    dimensions:
      national: {shards: 16}
      province: {shards: 2}
      class: {shards: 1}
  best:
    aggregate: max
    period: all
    tie: member
    dimensions:
      national: {shards: 4}
      province: {shards: 1}
  fastest:
    aggregate: min
    order: asc
    period: all
    tie: first
    max_points: 1000000
    seq_capacity: 1000000
    dimensions:
      national: {shards: 4}
  small:
    period: all
    max_points: 100
    dimensions:
      national: {shards: 4}
  tiny:
    period: all
    tie: first
    seq_capacity: 4
    max_points: 1000
    dimensions:
      national: {shards: 2}
  tf:
    period: all
    tie: first
    dimensions:
      national: {shards: 16}
  comp:
    period: all
    rank: competition
    dimensions:
      national: {shards: 4}
  daily:
    period: day
    timezone: UTC
    grace: 1m
    dimensions:
      national: {shards: 4}
  frz:
    period: all
    tie: first
    dimensions:
      national: {shards: 16}
  proj:
    source: projection
    period: all
    dimensions:
      national: {shards: 4}
      province: {shards: 1}
`

var primaryRead = ReadOptions{Consistency: ConsistencyPrimary}

func sumEv(id, fam, user string, d int64, dims map[string]string) Event {
	return Event{EventID: id, Family: fam, User: user, Delta: ptr(d), Dims: dims}
}

// pinAt sets an event's at, choosing its period.
func pinAt(e Event, at time.Time) Event { e.At = &at; return e }

func valEv(id, fam, user string, v int64, dims map[string]string) Event {
	return Event{EventID: id, Family: fam, User: user, Value: ptr(v), Dims: dims}
}

func mustApplyEvent(t *testing.T, svc *Service, ev Event) EventResult {
	t.Helper()
	res, err := svc.ApplyEvent(context.Background(), ev)
	if err != nil {
		t.Fatalf("event %s: %v", ev.EventID, err)
	}
	if res.EventID != ev.EventID {
		t.Fatalf("event %s answered as %q", ev.EventID, res.EventID)
	}
	return res
}

// wantErr checks that err is a *rank.Error with code and field.
func wantRankErr(t *testing.T, what string, err error, code rank.Code, field string) {
	t.Helper()
	var re *rank.Error
	if !errors.As(err, &re) {
		t.Fatalf("%s: err = %v (%T), want *rank.Error %s", what, err, err, code)
	}
	if re.Code != code || re.Field != field {
		t.Fatalf("%s: err = %v (code %q field %q), want code %q field %q", what, err, re.Code, re.Field, code, field)
	}
}

// boardPts is what one board of an event result must say.
type boardPts struct {
	board  string
	points int64
}

func wantBoards(t *testing.T, what string, res EventResult, want []boardPts) {
	t.Helper()
	if len(res.Boards) != len(want) {
		t.Fatalf("%s: boards %+v, want %+v", what, res.Boards, want)
	}
	for i, w := range want {
		if res.Boards[i].Board != w.board || res.Boards[i].Points != w.points {
			t.Fatalf("%s: board %d = %+v, want %+v (all: %+v)", what, i, res.Boards[i], w, res.Boards)
		}
	}
}

// userPts is one expected entry of a board: user and points.
type userPts struct {
	user   string
	points int64
}

func topOf(t *testing.T, svc *Service, ref BoardRef, limit int, o ReadOptions) []rank.Entry {
	t.Helper()
	page, err := svc.Top(context.Background(), ref, limit, o)
	if err != nil {
		t.Fatalf("top %+v: %v", ref, err)
	}
	return page.Entries
}

// wantTop checks a board's whole top (up to 100) by user and points, in order.
func wantTop(t *testing.T, svc *Service, ref BoardRef, want []userPts) []rank.Entry {
	t.Helper()
	got := topOf(t, svc, ref, 100, primaryRead)
	ok := len(got) == len(want)
	for i := 0; ok && i < len(want); i++ {
		ok = got[i].User == want[i].user && got[i].Points == want[i].points
	}
	if !ok {
		t.Fatalf("top of %s/%s/%s = %+v, want %+v", ref.Family, ref.Period, ref.Dimension, got, want)
	}
	return got
}

func nationalRef(fam, period string) BoardRef {
	return BoardRef{Family: fam, Period: period, Dimension: shard.National}
}

func boardRef(fam, period, d string) BoardRef {
	return BoardRef{Family: fam, Period: period, Dimension: d}
}

func lateEvents(t *testing.T, svc *Service, fam, periodID string) []store.LateEvent {
	t.Helper()
	st, ok := svc.lifeBE.(*store.Store)
	if !ok {
		t.Fatalf("backend is %T, want *store.Store", svc.lifeBE)
	}
	msgs, err := st.LateEvents(context.Background(), svc.layout.Period(fam, periodID), 10)
	if err != nil {
		t.Fatalf("late events: %v", err)
	}
	return msgs
}

// wantLate checks that the review stream holds exactly the events ids, each
// with reason, and returns them decoded.
func wantLate(t *testing.T, svc *Service, fam, periodID, reason string, ids ...string) []Event {
	t.Helper()
	vals := lateEvents(t, svc, fam, periodID)
	if len(vals) != len(ids) {
		t.Fatalf("review stream of %s/%s holds %d entries, want %d: %v", fam, periodID, len(vals), len(ids), vals)
	}
	out := make([]Event, len(vals))
	for i, v := range vals {
		if v.Reason != reason {
			t.Fatalf("review entry %d reason = %v, want %q", i, v.Reason, reason)
		}
		if err := json.Unmarshal(v.Event, &out[i]); err != nil {
			t.Fatalf("review entry %d event %q: %v", i, v.Event, err)
		}
		if out[i].EventID != ids[i] || out[i].Family != fam {
			t.Fatalf("review entry %d = %+v, want event %s of %s", i, out[i], ids[i], fam)
		}
		if v.ReceivedAt.IsZero() {
			t.Fatalf("review entry %d lacks its receive time: %+v", i, v)
		}
	}
	return out
}

// TestEventFansInToEveryBoard: one event updates national plus one board per
// dimension, answered national first and then by dimension type.
func TestEventFansInToEveryBoard(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc := newClusterService(t, writeFamilies)
	at := time.Now() // one instant: every event lands in one period even at a week boundary
	dims := map[string]string{"province": "zj", "class": "c1"}
	lead := mustApplyEvent(t, svc, pinAt(sumEv("lead", "learning", "u0", 50, dims), at))
	p := lead.Period
	res := mustApplyEvent(t, svc, pinAt(sumEv("e1", "learning", "u1", 20, dims), at))
	if res.Duplicate || res.Period != p || res.Improved != nil {
		t.Fatalf("e1 = %+v", res)
	}
	wantBoards(t, "e1", res, []boardPts{
		{"learning/" + p + "/national", 20}, {"learning/" + p + "/class:c1", 20}, {"learning/" + p + "/province:zj", 20}})
	// A second event naming only the province leaves the class board alone.
	res = mustApplyEvent(t, svc, pinAt(sumEv("e2", "learning", "u1", 5, map[string]string{"province": "zj"}), at))
	wantBoards(t, "e2", res, []boardPts{{"learning/" + p + "/national", 25}, {"learning/" + p + "/province:zj", 25}})

	cases := []struct {
		name string
		ref  BoardRef
		want []userPts
	}{
		{"national", nationalRef("learning", p), []userPts{{"u0", 50}, {"u1", 25}}},
		{"province", boardRef("learning", p, "province:zj"), []userPts{{"u0", 50}, {"u1", 25}}},
		{"class", boardRef("learning", p, "class:c1"), []userPts{{"u0", 50}, {"u1", 20}}},
		{"other province", boardRef("learning", p, "province:gd"), []userPts{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			wantTop(t, svc, c.ref, c.want)
		})
	}
	t.Run("member", func(t *testing.T) {
		t.Parallel()
		ms, err := svc.Member(ctx, nationalRef("learning", p), "u1", primaryRead)
		if err != nil {
			t.Fatal(err)
		}
		if ms.Points != 25 || ms.Position != 1 || ms.Rank != 2 || ms.Members != 2 {
			t.Fatalf("member = %+v", ms)
		}
	})
}

// TestEventDedupe: a replay answers duplicate with current points and changes
// nothing; a batch holding one id twice applies it once.
func TestEventDedupe(t *testing.T) {
	t.Parallel()
	svc := newClusterService(t, writeFamilies)
	at := time.Now() // one instant: every event lands in one period even at a week boundary
	dims := map[string]string{"province": "zj", "class": "c1"}
	first := mustApplyEvent(t, svc, pinAt(sumEv("d1", "learning", "u1", 20, dims), at))
	p := first.Period
	boards := []boardPts{{"learning/" + p + "/national", 20}, {"learning/" + p + "/class:c1", 20}, {"learning/" + p + "/province:zj", 20}}
	cases := []struct {
		name string
		ev   Event
	}{
		{"same payload", pinAt(sumEv("d1", "learning", "u1", 20, dims), at)},
		{"other delta", pinAt(sumEv("d1", "learning", "u1", 99, dims), at)},
		{"negative delta", pinAt(sumEv("d1", "learning", "u1", -20, dims), at)},
	}
	for _, c := range cases { // sequential: each replay must see the same state
		t.Run(c.name, func(t *testing.T) {
			res := mustApplyEvent(t, svc, c.ev)
			if !res.Duplicate {
				t.Fatalf("replay = %+v, want duplicate", res)
			}
			wantBoards(t, "replay", res, boards)
		})
	}
	for _, b := range []string{"national", "class:c1", "province:zj"} {
		wantTop(t, svc, boardRef("learning", p, b), []userPts{{"u1", 20}})
	}

	t.Run("batch with one id twice", func(t *testing.T) {
		items, err := svc.ApplyBatch(context.Background(), []Event{
			pinAt(sumEv("d2", "learning", "u2", 7, dims), at), pinAt(sumEv("d2", "learning", "u2", 7, dims), at)})
		if err != nil {
			t.Fatal(err)
		}
		if len(items) != 2 || items[0].Err != nil || items[1].Err != nil {
			t.Fatalf("items = %+v", items)
		}
		if items[0].Result.Duplicate || !items[1].Result.Duplicate {
			t.Fatalf("duplicate flags = %v, %v; want false, true", items[0].Result.Duplicate, items[1].Result.Duplicate)
		}
		want := []boardPts{{"learning/" + p + "/national", 7}, {"learning/" + p + "/class:c1", 7}, {"learning/" + p + "/province:zj", 7}}
		wantBoards(t, "batch item 0", *items[0].Result, want)
		wantBoards(t, "batch item 1", *items[1].Result, want)
		for _, b := range []string{"national", "class:c1", "province:zj"} {
			wantTop(t, svc, boardRef("learning", p, b), []userPts{{"u1", 20}, {"u2", 7}})
		}
	})
}

// TestReversal: a reversal subtracts what its original added, exactly once.
func TestReversal(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc := newClusterService(t, writeFamilies)
	at := time.Now() // one instant: every event lands in one period even at a week boundary
	dims := map[string]string{"province": "zj"}
	p := mustApplyEvent(t, svc, pinAt(sumEv("e1", "learning", "u1", 30, dims), at)).Period
	mustApplyEvent(t, svc, pinAt(sumEv("e2", "learning", "u1", 5, dims), at))
	mustApplyEvent(t, svc, pinAt(sumEv("e3", "learning", "u2", 10, dims), at))
	rev := func(id, orig, user string) Event {
		return Event{EventID: id, Family: "learning", User: user, Dims: dims, Reverses: orig, Reason: "fraud", At: &at}
	}
	u1Boards := []boardPts{{"learning/" + p + "/national", 5}, {"learning/" + p + "/province:zj", 5}}

	steps := []struct { // in order: each step sees the state the earlier ones left
		name      string
		ev        Event
		duplicate bool
		boards    []boardPts
	}{
		{"reversal subtracts", rev("r1", "e1", "u1"), false, u1Boards},
		{"replay of the reversal is duplicate", rev("r1", "e1", "u1"), true, u1Boards},
		{"second reversal of the same event is a no-op", rev("r2", "e1", "u1"), true, u1Boards},
		{"reversal removes a member it brought", rev("r3", "e3", "u2"), false,
			[]boardPts{{"learning/" + p + "/national", 0}, {"learning/" + p + "/province:zj", 0}}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			res := mustApplyEvent(t, svc, s.ev)
			if res.Duplicate != s.duplicate {
				t.Fatalf("duplicate = %v, want %v (%+v)", res.Duplicate, s.duplicate, res)
			}
			wantBoards(t, s.name, res, s.boards)
		})
	}
	for _, b := range []string{"national", "province:zj"} {
		wantTop(t, svc, boardRef("learning", p, b), []userPts{{"u1", 5}})
		if _, err := svc.Member(ctx, boardRef("learning", p, b), "u2", primaryRead); rank.CodeOf(err) != rank.CodeNotRanked {
			t.Fatalf("u2 on %s after its only event was reversed: %v, want not_ranked", b, err)
		}
	}

	errCases := []struct {
		name  string
		ev    Event
		code  rank.Code
		field string
	}{
		{"unknown original", rev("r4", "never-sent", "u1"), rank.CodeUnknownEvent, ""},
		{"reversing a reversal", rev("r5", "r1", "u1"), rank.CodeInvalidArgument, "reverses"},
		{"reversing itself", rev("r6", "r6", "u1"), rank.CodeInvalidArgument, "reverses"},
		{"reversal with delta", Event{EventID: "r7", Family: "learning", User: "u1", Dims: dims, Reverses: "e2", Delta: ptr[int64](5), At: &at},
			rank.CodeInvalidArgument, "reverses"},
		{"reversal in a max family", Event{EventID: "r8", Family: "best", User: "u1", Reverses: "m1"}, rank.CodeLedgerRequired, ""},
	}
	for _, c := range errCases {
		t.Run(c.name, func(t *testing.T) {
			_, err := svc.ApplyEvent(ctx, c.ev)
			wantRankErr(t, c.name, err, c.code, c.field)
		})
	}
	for _, b := range []string{"national", "province:zj"} {
		wantTop(t, svc, boardRef("learning", p, b), []userPts{{"u1", 5}})
	}
	// The refused reversal with a delta left e2 reversible.
	res := mustApplyEvent(t, svc, rev("r9", "e2", "u1"))
	wantBoards(t, "r9", res, []boardPts{{"learning/" + p + "/national", 0}, {"learning/" + p + "/province:zj", 0}})
}

// TestBestValue: max/min families keep each member's best value and say
// whether an event improved it; asc boards list the lowest first.
func TestBestValue(t *testing.T) {
	t.Parallel()
	svc := newClusterService(t, writeFamilies)
	t.Run("max", func(t *testing.T) {
		t.Parallel()
		dims := map[string]string{"province": "zj"}
		steps := []struct {
			ev        Event
			duplicate bool
			improved  *bool
			points    int64
		}{
			{valEv("m1", "best", "u1", 50, dims), false, ptr(true), 50},
			{valEv("m2", "best", "u1", 40, dims), false, ptr(false), 50},
			{valEv("m3", "best", "u1", 60, dims), false, ptr(true), 60},
			{valEv("m4", "best", "u1", 60, dims), false, ptr(false), 60}, // equal is not better
			{valEv("m2", "best", "u1", 40, dims), true, nil, 60},         // replay
			{valEv("m5", "best", "u1", -5, dims), false, ptr(false), 60},
		}
		for _, s := range steps {
			res := mustApplyEvent(t, svc, s.ev)
			name := fmt.Sprintf("%s value %d", s.ev.EventID, *s.ev.Value)
			if res.Duplicate != s.duplicate || !sameBoolPtr(res.Improved, s.improved) {
				t.Fatalf("%s: duplicate %v improved %v, want %v %v", name, res.Duplicate, fmtBoolPtr(res.Improved), s.duplicate, fmtBoolPtr(s.improved))
			}
			wantBoards(t, name, res, []boardPts{{"best/all/national", s.points}, {"best/all/province:zj", s.points}})
			for _, b := range res.Boards {
				if !sameBoolPtr(b.Improved, s.improved) {
					t.Fatalf("%s: board %s improved %v, want %v", name, b.Board, fmtBoolPtr(b.Improved), fmtBoolPtr(s.improved))
				}
			}
		}
		mustApplyEvent(t, svc, valEv("m6", "best", "u2", 70, dims))
		wantTop(t, svc, nationalRef("best", "all"), []userPts{{"u2", 70}, {"u1", 60}})
		wantTop(t, svc, boardRef("best", "all", "province:zj"), []userPts{{"u2", 70}, {"u1", 60}})
	})
	t.Run("min asc", func(t *testing.T) {
		t.Parallel()
		steps := []struct {
			ev       Event
			improved bool
			points   int64
		}{
			{valEv("f1", "fastest", "u1", 30, nil), true, 30},
			{valEv("f2", "fastest", "u1", 20, nil), true, 20},
			{valEv("f3", "fastest", "u1", 25, nil), false, 20},
			{valEv("f4", "fastest", "u2", 10, nil), true, 10},
			{valEv("f5", "fastest", "u3", 40, nil), true, 40},
			{valEv("f6", "fastest", "u0", 20, nil), true, 20}, // ties u1, reached later
		}
		for _, s := range steps {
			res := mustApplyEvent(t, svc, s.ev)
			if res.Improved == nil || *res.Improved != s.improved {
				t.Fatalf("%s: improved %v, want %v", s.ev.EventID, fmtBoolPtr(res.Improved), s.improved)
			}
			wantBoards(t, s.ev.EventID, res, []boardPts{{"fastest/all/national", s.points}})
		}
		got := wantTop(t, svc, nationalRef("fastest", "all"), []userPts{{"u2", 10}, {"u1", 20}, {"u0", 20}, {"u3", 40}})
		for i, r := range []int64{1, 2, 2, 4} {
			if got[i].Rank != r || got[i].Position != int64(i) {
				t.Fatalf("asc top entry %d = %+v, want rank %d position %d", i, got[i], r, i)
			}
		}
	})
}

func sameBoolPtr(a, b *bool) bool { return (a == nil) == (b == nil) && (a == nil || *a == *b) }

func fmtBoolPtr(b *bool) string {
	if b == nil {
		return "nil"
	}
	return fmt.Sprint(*b)
}

// TestEventValidation: every bad event is refused with a *rank.Error naming
// its code and field, and writes nothing.
func TestEventValidation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc := newClusterService(t, writeFamilies)
	zj := map[string]string{"province": "zj"}
	cases := []struct {
		name  string
		ev    Event
		code  rank.Code
		field string
	}{
		{"bad event_id", sumEv("bad id!", "learning", "u1", 1, nil), rank.CodeInvalidArgument, "event_id"},
		{"empty event_id", sumEv("", "learning", "u1", 1, nil), rank.CodeInvalidArgument, "event_id"},
		{"long event_id", sumEv(strings.Repeat("e", 129), "learning", "u1", 1, nil), rank.CodeInvalidArgument, "event_id"},
		{"unknown family", sumEv("v1", "nope", "u1", 1, nil), rank.CodeUnknownFamily, ""},
		{"bad family name", sumEv("v1", "Bad!", "u1", 1, nil), rank.CodeInvalidArgument, "family"},
		{"bad user", sumEv("v1", "learning", "u 1", 1, nil), rank.CodeInvalidArgument, "user"},
		{"user with brace", sumEv("v1", "learning", "u{1}", 1, nil), rank.CodeInvalidArgument, "user"},
		{"empty user", sumEv("v1", "learning", "", 1, nil), rank.CodeInvalidArgument, "user"},
		{"delta 0", sumEv("v1", "learning", "u1", 0, nil), rank.CodeInvalidArgument, "delta"},
		{"delta missing", Event{EventID: "v1", Family: "learning", User: "u1"}, rank.CodeInvalidArgument, "delta"},
		{"value in a sum family", valEv("v1", "learning", "u1", 5, nil), rank.CodeInvalidArgument, "value"},
		{"delta and value in a sum family", Event{EventID: "v1", Family: "learning", User: "u1", Delta: ptr[int64](1), Value: ptr[int64](1)},
			rank.CodeInvalidArgument, "value"},
		{"delta in a max family", sumEv("v1", "best", "u1", 5, nil), rank.CodeInvalidArgument, "delta"},
		{"value missing in a max family", Event{EventID: "v1", Family: "best", User: "u1"}, rank.CodeInvalidArgument, "value"},
		{"delta over max_points", sumEv("v1", "small", "u1", 101, nil), rank.CodeOutOfRange, "delta"},
		{"delta under -max_points", sumEv("v1", "small", "u1", -101, nil), rank.CodeOutOfRange, "delta"},
		{"value over max_points", valEv("v1", "fastest", "u1", 1000001, nil), rank.CodeOutOfRange, "value"},
		{"unknown dim type", sumEv("v1", "learning", "u1", 1, map[string]string{"city": "hz"}), rank.CodeInvalidArgument, "dims"},
		{"dim type of another family", sumEv("v1", "small", "u1", 1, zj), rank.CodeInvalidArgument, "dims"},
		{"national as a dim", sumEv("v1", "learning", "u1", 1, map[string]string{"national": "x"}), rank.CodeInvalidArgument, "dims.national"},
		{"bad dim value", sumEv("v1", "learning", "u1", 1, map[string]string{"province": "z j"}), rank.CodeInvalidArgument, "dims.province"},
		{"dim value with colon", sumEv("v1", "learning", "u1", 1, map[string]string{"province": "a:b"}), rank.CodeInvalidArgument, "dims.province"},
		{"empty dim value", sumEv("v1", "learning", "u1", 1, map[string]string{"class": ""}), rank.CodeInvalidArgument, "dims.class"},
		// At is set when the case runs (below): a parallel subtest can wait
		// a minute for its turn on a loaded machine, and 6 minutes ahead of
		// the test's start is then within the 5 allowed.
		{"at 6 minutes ahead", Event{EventID: "v1", Family: "learning", User: "u1", Delta: ptr[int64](1), At: &time.Time{}},
			rank.CodeInvalidArgument, "at"},
		{"long reason", Event{EventID: "v1", Family: "learning", User: "u1", Delta: ptr[int64](1), Reason: strings.Repeat("r", 257)},
			rank.CodeInvalidArgument, "reason"},
		{"event for a projection family", sumEv("v1", "proj", "u1", 1, nil), rank.CodeWrongSource, ""},
	}
	t.Run("events", func(t *testing.T) {
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				t.Parallel()
				if c.ev.At != nil {
					in6m := time.Now().Add(6 * time.Minute)
					c.ev.At = &in6m
				}
				_, err := svc.ApplyEvent(ctx, c.ev)
				wantRankErr(t, "ApplyEvent", err, c.code, c.field)
				// The same event inside a batch fails alone, with the same error.
				items, err := svc.ApplyBatch(ctx, []Event{c.ev})
				if err != nil || len(items) != 1 || items[0].Result != nil {
					t.Fatalf("batch: items %+v err %v", items, err)
				}
				wantRankErr(t, "ApplyBatch", items[0].Err, c.code, c.field)
			})
		}
	})
	// Nothing above was written anywhere.
	for _, f := range []string{"learning", "best", "fastest", "small"} {
		wantTop(t, svc, nationalRef(f, "current"), []userPts{})
	}
	wantTop(t, svc, boardRef("learning", "current", "province:zj"), []userPts{})

	t.Run("at 4 minutes ahead is fine", func(t *testing.T) {
		in4m := time.Now().Add(4 * time.Minute)
		res := mustApplyEvent(t, svc, Event{EventID: "ok4", Family: "small", User: "u1", Delta: ptr[int64](3), At: &in4m})
		wantBoards(t, "ok4", res, []boardPts{{"small/all/national", 3}})
	})
	t.Run("projection on an events family", func(t *testing.T) {
		_, err := svc.Project(ctx, nationalRef("learning", "current"), "u1", Projection{Version: 1, Points: 5})
		wantRankErr(t, "Project", err, rank.CodeWrongSource, "")
	})
	t.Run("batches", func(t *testing.T) {
		over := make([]Event, svc.cfg.Limits.MaxBatch+1)
		for i := range over {
			over[i] = sumEv(fmt.Sprintf("b%d", i), "small", "u1", 1, nil)
		}
		cases := []struct {
			name string
			evs  []Event
		}{
			{"over max_batch", over},
			{"empty", []Event{}},
			{"nil", nil},
		}
		for _, c := range cases {
			t.Run(c.name, func(t *testing.T) {
				items, err := svc.ApplyBatch(ctx, c.evs)
				if items != nil {
					t.Fatalf("items = %d, want none", len(items))
				}
				wantRankErr(t, "ApplyBatch", err, rank.CodeInvalidArgument, "events")
			})
		}
		wantTop(t, svc, nationalRef("small", "all"), []userPts{{"u1", 3}})
	})
}

// TestLateEvents: an event for a period past its end plus grace, or for a
// frozen board shard, is refused with period_closed and kept for review.
func TestLateEvents(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc := newClusterService(t, writeFamilies)
	t.Run("past grace", func(t *testing.T) {
		t.Parallel()
		at := time.Now().Add(-48 * time.Hour).Truncate(time.Second)
		info, err := svc.Period(ctx, "daily", at)
		if err != nil {
			t.Fatal(err)
		}
		if info.State != "closed" {
			t.Fatalf("period two days ago = %+v, want closed", info)
		}
		late := Event{EventID: "late-1", Family: "daily", User: "u1", Delta: ptr[int64](5), At: &at, Reason: "offline sync"}
		_, err = svc.ApplyEvent(ctx, late)
		wantRankErr(t, "late event", err, rank.CodePeriodClosed, "")
		// In a batch the late event fails alone; the current one applies.
		items, err := svc.ApplyBatch(ctx, []Event{
			{EventID: "late-2", Family: "daily", User: "u2", Delta: ptr[int64](7), At: &at},
			sumEv("now-1", "daily", "u2", 9, nil),
		})
		if err != nil {
			t.Fatal(err)
		}
		wantRankErr(t, "late event in a batch", items[0].Err, rank.CodePeriodClosed, "")
		if items[1].Err != nil || items[1].Result.Duplicate {
			t.Fatalf("current event in a batch: %+v %v", items[1].Result, items[1].Err)
		}
		got := wantLate(t, svc, "daily", info.Period, "past_grace", "late-1", "late-2")
		if got[0].User != "u1" || got[0].Delta == nil || *got[0].Delta != 5 || got[0].At == nil ||
			!got[0].At.Equal(at) || got[0].Reason != "offline sync" {
			t.Fatalf("kept event = %+v, want %+v", got[0], late)
		}
		wantTop(t, svc, nationalRef("daily", info.Period), []userPts{})
		wantTop(t, svc, nationalRef("daily", items[1].Result.Period), []userPts{{"u2", 9}})
	})
	t.Run("frozen board", func(t *testing.T) {
		t.Parallel()
		mustApplyEvent(t, svc, sumEv("z1", "frz", "u1", 10, nil))
		n := svc.cfg.Families["frz"].Dimensions[shard.National].Shards
		keys := svc.layout.Keys(shard.Board{Family: "frz", Period: "all", DimType: shard.National}, shard.Of("u1", n), n)
		if err := svc.lifeBE.(*store.Store).Primary().HSet(ctx, keys.Meta, "state", "frozen").Err(); err != nil {
			t.Fatal(err)
		}
		_, err := svc.ApplyEvent(ctx, sumEv("z2", "frz", "u1", 5, nil))
		wantRankErr(t, "event on a frozen board", err, rank.CodePeriodClosed, "")
		wantLate(t, svc, "frz", "all", "frozen", "z2")
		// A replay of an event applied before the freeze is still a duplicate.
		res := mustApplyEvent(t, svc, sumEv("z1", "frz", "u1", 10, nil))
		if !res.Duplicate {
			t.Fatalf("replay on a frozen board = %+v, want duplicate", res)
		}
		wantBoards(t, "replay", res, []boardPts{{"frz/all/national", 10}})
		wantTop(t, svc, nationalRef("frz", "all"), []userPts{{"u1", 10}})
		wantLate(t, svc, "frz", "all", "frozen", "z2")
	})
}

// TestTieOrder: three members reaching the same points in the order u1, u2,
// u3 rank in that order under tie first, by member bytes descending under
// tie member; competition ranks share, ordinal ranks do not.
func TestTieOrder(t *testing.T) {
	t.Parallel()
	cases := []struct {
		tie, rankMode string
		order         []string
		ranks         []int64
	}{
		{"first", "competition", []string{"u1", "u2", "u3"}, []int64{1, 1, 1}},
		{"first", "ordinal", []string{"u1", "u2", "u3"}, []int64{1, 2, 3}},
		{"member", "competition", []string{"u3", "u2", "u1"}, []int64{1, 1, 1}},
		{"member", "ordinal", []string{"u3", "u2", "u1"}, []int64{1, 2, 3}},
	}
	for _, c := range cases {
		t.Run(c.tie+"_"+c.rankMode, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			svc := newClusterService(t, fmt.Sprintf("  f:\n    period: all\n    tie: %s\n    rank: %s\n    dimensions:\n      national: {shards: 16}\n",
				c.tie, c.rankMode))
			// u3 and u2 pass through other totals first: each reaches 10 later.
			for _, e := range []struct {
				id, user string
				d        int64
			}{{"a", "u3", 15}, {"b", "u2", 4}, {"c", "u1", 10}, {"d", "u2", 6}, {"e", "u3", -5}} {
				mustApplyEvent(t, svc, sumEv(e.id, "f", e.user, e.d, nil))
			}
			got := topOf(t, svc, nationalRef("f", "all"), 10, primaryRead)
			if len(got) != 3 {
				t.Fatalf("top = %+v", got)
			}
			for i, e := range got {
				if e.User != c.order[i] || e.Points != 10 || e.Position != int64(i) || e.Rank != c.ranks[i] {
					t.Fatalf("top = %+v, want users %v at 10 points with ranks %v", got, c.order, c.ranks)
				}
				ms, err := svc.Member(ctx, nationalRef("f", "all"), e.User, primaryRead)
				if err != nil {
					t.Fatal(err)
				}
				if ms.Position != int64(i) || ms.Rank != c.ranks[i] || ms.Points != 10 || ms.Members != 3 {
					t.Fatalf("member %s = %+v, want position %d rank %d", e.User, ms, i, c.ranks[i])
				}
			}
		})
	}
}

// TestSeqCapacity: under tie first with seq_capacity B, seqs 1..B−1 are
// usable; the next event is out_of_range and changes nothing.
func TestSeqCapacity(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc := newClusterService(t, writeFamilies)
	for i, u := range []string{"u1", "u2", "u3"} {
		mustApplyEvent(t, svc, sumEv(fmt.Sprintf("s%d", i+1), "tiny", u, 1, nil))
	}
	cases := []struct {
		name string
		ev   Event
	}{
		{"new member", sumEv("s4", "tiny", "u4", 1, nil)},
		{"existing member", sumEv("s5", "tiny", "u1", 1, nil)},
		{"retry of a refused event", sumEv("s4", "tiny", "u4", 1, nil)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := svc.ApplyEvent(ctx, c.ev)
			if rank.CodeOf(err) != rank.CodeOutOfRange {
				t.Fatalf("event past seq_capacity: %v, want out_of_range", err)
			}
		})
	}
	wantTop(t, svc, nationalRef("tiny", "all"), []userPts{{"u1", 1}, {"u2", 1}, {"u3", 1}})
	if _, err := svc.Member(ctx, nationalRef("tiny", "all"), "u4", primaryRead); rank.CodeOf(err) != rank.CodeNotRanked {
		t.Fatalf("u4: %v, want not_ranked", err)
	}
}

// TestPointsRange: a sum that would leave ±max_points is out_of_range and
// changes nothing.
func TestPointsRange(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc := newClusterService(t, writeFamilies)
	cases := []struct {
		name   string
		user   string
		deltas []int64 // all but the last apply
		want   int64
	}{
		{"60 then 60", "u1", []int64{60, 60}, 60},
		{"up to the bound then one more", "u2", []int64{100, 1}, 100},
		{"down to the bound then one less", "u3", []int64{-100, -1}, -100},
		{"-60 then -60", "u4", []int64{-60, -60}, -60},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			last := len(c.deltas) - 1
			for i, d := range c.deltas[:last] {
				mustApplyEvent(t, svc, sumEv(fmt.Sprintf("%s-%d", c.user, i), "small", c.user, d, nil))
			}
			_, err := svc.ApplyEvent(ctx, sumEv(fmt.Sprintf("%s-%d", c.user, last), "small", c.user, c.deltas[last], nil))
			wantRankErr(t, "overflowing event", err, rank.CodeOutOfRange, "delta")
			ms, err := svc.Member(ctx, nationalRef("small", "all"), c.user, primaryRead)
			if err != nil || ms.Points != c.want {
				t.Fatalf("member %s = %+v, %v; want %d points", c.user, ms, err, c.want)
			}
		})
	}
}

// TestProjection: a projection applies only for a newer version.
func TestProjection(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc := newClusterService(t, writeFamilies)
	ref := nationalRef("proj", "all")
	steps := []struct {
		name string
		pr   Projection
		want ProjectionResult
	}{
		{"first version", Projection{Version: 1, Points: 10}, ProjectionResult{Applied: true, Version: 1, Points: 10}},
		{"same version", Projection{Version: 1, Points: 99}, ProjectionResult{Applied: false, CurrentVersion: 1, Points: 10}},
		{"newer version", Projection{Version: 3, Points: 7}, ProjectionResult{Applied: true, Version: 3, Points: 7}},
		{"older version", Projection{Version: 2, Points: 50}, ProjectionResult{Applied: false, CurrentVersion: 3, Points: 7}},
	}
	for _, s := range steps {
		t.Run(s.name, func(t *testing.T) {
			got, err := svc.Project(ctx, ref, "u1", s.pr)
			if err != nil {
				t.Fatal(err)
			}
			s.want.Board = "proj/all/national"
			if got != s.want {
				t.Fatalf("projection %+v = %+v, want %+v", s.pr, got, s.want)
			}
		})
	}
	ms, err := svc.Member(ctx, ref, "u1", primaryRead)
	if err != nil || ms.Points != 7 || ms.Rank != 1 || ms.Members != 1 {
		t.Fatalf("member = %+v, %v; want 7 points", ms, err)
	}
	// Boards of one projection family are independent.
	if _, err := svc.Project(ctx, boardRef("proj", "all", "province:zj"), "u1", Projection{Version: 1, Points: 4}); err != nil {
		t.Fatal(err)
	}
	wantTop(t, svc, boardRef("proj", "all", "province:zj"), []userPts{{"u1", 4}})
	wantTop(t, svc, ref, []userPts{{"u1", 7}})

	errCases := []struct {
		name  string
		ref   BoardRef
		user  string
		pr    Projection
		code  rank.Code
		field string
	}{
		{"version 0", ref, "u1", Projection{Version: 0, Points: 1}, rank.CodeInvalidArgument, "version"},
		{"bad user", ref, "u 1", Projection{Version: 9, Points: 1}, rank.CodeInvalidArgument, "user"},
		{"unknown family", nationalRef("nope", "all"), "u1", Projection{Version: 9, Points: 1}, rank.CodeUnknownFamily, ""},
		{"undeclared dimension", boardRef("proj", "all", "class:c1"), "u1", Projection{Version: 9, Points: 1}, rank.CodeUnknownBoard, ""},
		{"events family", nationalRef("small", "all"), "u1", Projection{Version: 9, Points: 1}, rank.CodeWrongSource, ""},
	}
	for _, c := range errCases {
		t.Run(c.name, func(t *testing.T) {
			_, err := svc.Project(ctx, c.ref, c.user, c.pr)
			wantRankErr(t, c.name, err, c.code, c.field)
		})
	}
	wantTop(t, svc, ref, []userPts{{"u1", 7}})
}

// TestProfiles: profiles ride along reads when asked; never part of ranking.
func TestProfiles(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc := newClusterService(t, writeFamilies)
	mustApplyEvent(t, svc, sumEv("p1", "small", "u1", 10, nil))
	mustApplyEvent(t, svc, sumEv("p2", "small", "u2", 5, nil))
	if err := svc.PutProfile(ctx, "u1", Profile{Name: "Alice 🦊", Avatar: "https://cdn.example/a.png"}); err != nil {
		t.Fatal(err)
	}
	errCases := []struct {
		name  string
		user  string
		p     Profile
		field string
	}{
		{"control char in name", "u1", Profile{Name: "a\x07b"}, "name"},
		{"newline in name", "u1", Profile{Name: "a\nb"}, "name"},
		{"invalid UTF-8 name", "u1", Profile{Name: "a\xffb"}, "name"},
		{"long name", "u1", Profile{Name: strings.Repeat("n", 129)}, "name"},
		{"control char in avatar", "u1", Profile{Avatar: "x\x00"}, "avatar"},
		{"bad user", "u 1", Profile{Name: "x"}, "user"},
	}
	for _, c := range errCases {
		t.Run(c.name, func(t *testing.T) {
			wantRankErr(t, c.name, svc.PutProfile(ctx, c.user, c.p), rank.CodeInvalidArgument, c.field)
		})
	}
	alice := map[string]string{"name": "Alice 🦊", "avatar": "https://cdn.example/a.png"}
	got := topOf(t, svc, nationalRef("small", "all"), 10, ReadOptions{Consistency: ConsistencyPrimary, Profiles: true})
	if len(got) != 2 || got[0].User != "u1" || !sameStrMap(got[0].Profile, alice) || got[1].User != "u2" || got[1].Profile != nil {
		t.Fatalf("top with profiles = %+v", got)
	}
	got = topOf(t, svc, nationalRef("small", "all"), 10, primaryRead)
	if len(got) != 2 || got[0].Profile != nil || got[1].Profile != nil {
		t.Fatalf("top without profiles = %+v", got)
	}
	ms, err := svc.Member(ctx, nationalRef("small", "all"), "u1", ReadOptions{Consistency: ConsistencyPrimary, Profiles: true})
	if err != nil || !sameStrMap(ms.Profile, alice) {
		t.Fatalf("member with profile = %+v, %v", ms, err)
	}
	// A profile is replaced whole.
	if err := svc.PutProfile(ctx, "u1", Profile{Name: "Al"}); err != nil {
		t.Fatal(err)
	}
	got = topOf(t, svc, nationalRef("small", "all"), 1, ReadOptions{Consistency: ConsistencyPrimary, Profiles: true})
	if !sameStrMap(got[0].Profile, map[string]string{"name": "Al"}) {
		t.Fatalf("replaced profile = %v", got[0].Profile)
	}
}

func sameStrMap(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// TestBatch: results come back in array order, a bad event fails alone, and
// under tie first the achievement order follows the array.
func TestBatch(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc := newClusterService(t, writeFamilies)
	evs := []Event{
		sumEv("b1", "tf", "a", 10, nil),
		sumEv("b2", "tf", "b", 0, nil), // bad: fails alone
		sumEv("b3", "tf", "b", 10, nil),
		sumEv("b4", "nope", "c", 10, nil), // bad: fails alone
		sumEv("b5", "tf", "c", 10, nil),
		sumEv("b6", "small", "c", 4, nil), // another family in the same batch
	}
	items, err := svc.ApplyBatch(ctx, evs)
	if err != nil {
		t.Fatal(err)
	}
	if len(items) != len(evs) {
		t.Fatalf("%d items for %d events", len(items), len(evs))
	}
	for i, it := range items {
		if (it.Result == nil) == (it.Err == nil) {
			t.Fatalf("item %d: result %+v err %v: exactly one must be set", i, it.Result, it.Err)
		}
	}
	wantRankErr(t, "item 1", items[1].Err, rank.CodeInvalidArgument, "delta")
	wantRankErr(t, "item 3", items[3].Err, rank.CodeUnknownFamily, "")
	for _, i := range []int{0, 2, 4, 5} {
		if items[i].Result.EventID != evs[i].EventID || items[i].Result.Duplicate {
			t.Fatalf("item %d = %+v, want fresh %s", i, items[i].Result, evs[i].EventID)
		}
	}
	wantBoards(t, "item 5", *items[5].Result, []boardPts{{"small/all/national", 4}})
	// Tie first: a, b, c reached 10 in array order (tie member would list c, b, a).
	got := wantTop(t, svc, nationalRef("tf", "all"), []userPts{{"a", 10}, {"b", 10}, {"c", 10}})
	for i, e := range got {
		if e.Rank != 1 || e.Position != int64(i) {
			t.Fatalf("top entry %d = %+v", i, e)
		}
	}
	// A later single event reaching 10 ranks after the whole batch.
	mustApplyEvent(t, svc, sumEv("b7", "tf", "d", 5, nil))
	mustApplyEvent(t, svc, sumEv("b8", "tf", "d", 5, nil))
	wantTop(t, svc, nationalRef("tf", "all"), []userPts{{"a", 10}, {"b", 10}, {"c", 10}, {"d", 10}})
}

// TestMemberPercentile: percentile is the share of the board strictly behind.
func TestMemberPercentile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	svc := newClusterService(t, writeFamilies)
	for u, pts := range map[string]int64{"p10": 10, "p20a": 20, "p20b": 20, "p30": 30} {
		mustApplyEvent(t, svc, sumEv("e-"+u, "comp", u, pts, nil))
	}
	cases := []struct {
		user       string
		points     int64
		position   int64
		rank       int64
		percentile float64
	}{
		{"p30", 30, 0, 1, 75},
		{"p20b", 20, 1, 2, 25}, // tie member: bytes descending
		{"p20a", 20, 2, 2, 25},
		{"p10", 10, 3, 4, 0},
	}
	for _, c := range cases {
		t.Run(c.user, func(t *testing.T) {
			t.Parallel()
			ms, err := svc.Member(ctx, nationalRef("comp", "all"), c.user, primaryRead)
			if err != nil {
				t.Fatal(err)
			}
			if ms.User != c.user || ms.Points != c.points || ms.Position != c.position || ms.Rank != c.rank ||
				ms.Members != 4 || ms.Percentile != c.percentile {
				t.Fatalf("member = %+v, want %+v of 4", ms, c)
			}
		})
	}
}

package store_test

import (
	"context"
	"fmt"
	"maps"
	"strconv"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/store"
)

const (
	testNowMs = 1_787_000_000_000
	testRules = "r7"
	absent    = "absent" // expected score of a member not in the set
	anyScore  = "*"      // not checked
)

// step is one Write and what the script must answer. before/after are
// decimal scores, absent or anyScore.
type step struct {
	w       store.Write
	status  store.WriteStatus
	before  string
	after   string
	version int64  // project: the applied or stored version (ok, stale, range)
	state   string // closed: the shard's state
	pre     func(t *testing.T, ctx context.Context, c redis.UniversalClient, k shard.Keys)
}

func apply(id, member, mode string, v, seq int64) store.Write {
	return store.Write{Kind: store.KindApply, EventID: id, Member: member, Mode: mode, Value: v, Seq: seq}
}

func reverse(rid, oid, member string, seq int64) store.Write {
	return store.Write{Kind: store.KindReverse, EventID: rid, Reverses: oid, Member: member, Seq: seq}
}

func project(member string, version, total, seq int64) store.Write {
	return store.Write{Kind: store.KindProject, Member: member, Version: version, Value: total, Seq: seq}
}

func freeze(t *testing.T, ctx context.Context, c redis.UniversalClient, k shard.Keys) {
	t.Helper()
	if err := c.HSet(ctx, k.Meta, "state", "frozen").Err(); err != nil {
		t.Fatalf("HSET state frozen: %v", err)
	}
}

// tf is a tie-first score: points × B + (B − 1 − seq).
func tf(points, B, seq int64) string { return strconv.FormatInt(points*B+B-1-seq, 10) }

func scoreStr(p *int64) string {
	if p == nil {
		return absent
	}
	return strconv.FormatInt(*p, 10)
}

// semCase is one case of TestScriptSemantics.
type semCase struct {
	name  string
	B     int64
	maxP  int64
	steps []step
	final map[string]string // member → ZSCORE (absent: not in the set)
	// evAbsent: event ids that must not be recorded in the dedupe hash.
	evAbsent []string
	// keysAbsent: which of the shard's keys must not exist (z, ev, m, meta).
	keysAbsent []string
	meta       map[string]string // expected meta hash fields
}

func TestScriptSemantics(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	const maxP = 1_000_000
	const B = 1000

	cases := []semCase{
		{
			name: "apply sum then a replay of the same event id is a dup",
			maxP: maxP,
			steps: []step{
				{w: apply("e1", "u1", "sum", 10, 0), status: "ok", before: absent, after: "10"},
				{w: apply("e2", "u1", "sum", 5, 0), status: "ok", before: "10", after: "15"},
				{w: apply("e1", "u1", "sum", 10, 0), status: "dup", before: "15", after: "15"},
				{w: apply("e1", "u1", "sum", 99, 0), status: "dup", before: "15", after: "15"},
				{w: apply("e2", "u1", "sum", 5, 0), status: "dup", before: "15", after: "15"},
				{w: apply("e3", "u2", "sum", -4, 0), status: "ok", before: absent, after: "-4"},
			},
			final: map[string]string{"u1": "15", "u2": "-4"},
			meta:  map[string]string{"state": "open", "rules": testRules, "created": strconv.Itoa(testNowMs)},
		},
		{
			name: "apply gt keeps the best value",
			maxP: maxP,
			steps: []step{
				{w: apply("e1", "u1", "gt", 10, 0), status: "ok", before: absent, after: "10"},
				{w: apply("e2", "u1", "gt", 7, 0), status: "same", before: "10", after: "10"},
				{w: apply("e3", "u1", "gt", 10, 0), status: "same", before: "10", after: "10"},
				{w: apply("e4", "u1", "gt", 12, 0), status: "ok", before: "10", after: "12"},
				{w: apply("e2", "u1", "gt", 7, 0), status: "dup", before: "12", after: "12"},
			},
			final: map[string]string{"u1": "12"},
		},
		{
			name: "apply lt keeps the lowest value",
			maxP: maxP,
			steps: []step{
				{w: apply("e1", "u1", "lt", 10, 0), status: "ok", before: absent, after: "10"},
				{w: apply("e2", "u1", "lt", 12, 0), status: "same", before: "10", after: "10"},
				{w: apply("e3", "u1", "lt", 3, 0), status: "ok", before: "10", after: "3"},
				{w: apply("e4", "u1", "lt", -5, 0), status: "ok", before: "3", after: "-5"},
			},
			final: map[string]string{"u1": "-5"},
		},
		{
			name: "tie first encodes points*B + B-1-seq",
			B:    B, maxP: maxP,
			steps: []step{
				{w: apply("e1", "u1", "sum", 5, 7), status: "ok", before: absent, after: tf(5, B, 7)},
				{w: apply("e2", "u1", "sum", 3, 9), status: "ok", before: tf(5, B, 7), after: tf(8, B, 9)},
				// u2 reaches 8 later than u1: a lower score, so it ranks behind.
				{w: apply("e3", "u2", "sum", 8, 12), status: "ok", before: absent, after: tf(8, B, 12)},
				{w: apply("e4", "u3", "sum", -2, 0), status: "ok", before: absent, after: tf(-2, B, 0)},
				{w: apply("e5", "u3", "sum", 1, 13), status: "ok", before: tf(-2, B, 0), after: tf(-1, B, 13)},
				{w: apply("e3", "u2", "sum", 8, 14), status: "dup", before: tf(8, B, 12), after: tf(8, B, 12)},
			},
			final: map[string]string{"u1": "8990", "u2": "8987", "u3": "-14"},
		},
		{
			name: "tie first gt keeps the seq of the moment the best was first reached",
			B:    B, maxP: maxP,
			steps: []step{
				{w: apply("e1", "u1", "gt", 50, 3), status: "ok", before: absent, after: tf(50, B, 3)},
				{w: apply("e2", "u1", "gt", 50, 4), status: "same", before: tf(50, B, 3), after: tf(50, B, 3)},
				{w: apply("e3", "u1", "gt", 40, 5), status: "same", before: tf(50, B, 3), after: tf(50, B, 3)},
				{w: apply("e4", "u1", "gt", 60, 6), status: "ok", before: tf(50, B, 3), after: tf(60, B, 6)},
			},
			final: map[string]string{"u1": tf(60, B, 6)},
		},
		{
			name: "scores at the edge of 2^53 travel exactly",
			B:    B, maxP: (rank.MaxSafe - B) / B,
			steps: []step{
				{w: apply("e1", "u1", "sum", (rank.MaxSafe-B)/B, 0), status: "ok", before: absent, after: tf((rank.MaxSafe-B)/B, B, 0)},
				{w: apply("e2", "u2", "sum", -(rank.MaxSafe-B)/B, B-1), status: "ok", before: absent, after: tf(-(rank.MaxSafe-B)/B, B, B-1)},
			},
			final: map[string]string{"u1": "9007199254739999", "u2": "-9007199254739000"},
		},
		{
			name: "tie member scores at ±(2^53-1) travel exactly and never round past max_points",
			maxP: rank.MaxSafe - 1,
			steps: []step{
				{w: apply("e1", "u1", "sum", rank.MaxSafe-1, 0), status: "ok", before: absent, after: "9007199254740991"},
				{w: apply("e2", "u2", "sum", -(rank.MaxSafe - 1), 0), status: "ok", before: absent, after: "-9007199254740991"},
				{w: apply("e3", "u1", "sum", 1, 0), status: "range", before: "9007199254740991", after: "9007199254740991"},
				{w: apply("e4", "u1", "sum", 2, 0), status: "range", before: "9007199254740991", after: "9007199254740991"},
				{w: apply("e5", "u2", "sum", -2, 0), status: "range", before: "-9007199254740991", after: "-9007199254740991"},
				{w: apply("e6", "u1", "sum", -1, 0), status: "ok", before: "9007199254740991", after: "9007199254740990"},
			},
			final: map[string]string{"u1": "9007199254740990", "u2": "-9007199254740991"},
		},
		{
			name: "points beyond max_points are refused and nothing changes",
			maxP: 100,
			steps: []step{
				{w: apply("e1", "u1", "sum", 60, 0), status: "ok", before: absent, after: "60"},
				{w: apply("e2", "u1", "sum", 50, 0), status: "range", before: "60", after: "60"},
				{w: apply("e3", "u1", "sum", -170, 0), status: "range", before: "60", after: "60"},
				{w: apply("e4", "u1", "gt", 101, 0), status: "range", before: "60", after: "60"},
				{w: apply("e5", "u1", "lt", -101, 0), status: "range", before: "60", after: "60"},
				// A refused event is not recorded: the same id may come back valid.
				{w: apply("e2", "u1", "sum", 40, 0), status: "ok", before: "60", after: "100"},
				{w: apply("e6", "u1", "sum", 1, 0), status: "range", before: "100", after: "100"},
			},
			final:    map[string]string{"u1": "100"},
			evAbsent: []string{"e3", "e4", "e5", "e6"},
		},
		{
			name: "seq outside [0, B) is refused",
			B:    B, maxP: maxP,
			steps: []step{
				{w: apply("e1", "u1", "sum", 5, B), status: "range", before: absent, after: absent},
				{w: apply("e2", "u1", "sum", 5, -1), status: "range", before: absent, after: absent},
				{w: apply("e3", "u1", "sum", 5, B-1), status: "ok", before: absent, after: "5000"},
				{w: apply("e4", "u1", "sum", 5, B+7), status: "range", before: "5000", after: "5000"},
			},
			final:    map[string]string{"u1": "5000"},
			evAbsent: []string{"e1", "e2", "e4"},
		},
		{
			name: "a refused apply on a fresh shard writes no key at all",
			B:    B, maxP: 100,
			steps: []step{
				{w: apply("e1", "u1", "sum", 500, 1), status: "range", before: absent, after: absent},
				{w: apply("e2", "u1", "gt", 5, B), status: "range", before: absent, after: absent},
			},
			final:      map[string]string{"u1": absent},
			keysAbsent: []string{"z", "ev", "meta"},
		},
		{
			name: "a refused project or reverse on a fresh shard writes no key at all",
			B:    B, maxP: 100,
			steps: []step{
				{w: project("u1", 1, 500, 1), status: "range", version: 0, before: absent, after: absent},
				{w: project("u1", 1, 5, B), status: "range", version: 0, before: absent, after: absent},
				{w: project("u1", 0, 5, 1), status: "stale", version: 0, before: absent, after: absent},
				{w: reverse("r1", "nope", "u1", 1), status: "unknown", before: absent, after: absent},
			},
			final:      map[string]string{"u1": absent},
			keysAbsent: []string{"z", "ev", "m", "meta"},
		},
		{
			name: "reverse subtracts exactly once",
			maxP: maxP,
			steps: []step{
				{w: reverse("r0", "nope", "u1", 0), status: "unknown", before: absent, after: absent},
				{w: apply("e1", "u1", "sum", 10, 0), status: "ok", before: absent, after: "10"},
				{w: apply("e2", "u1", "sum", 5, 0), status: "ok", before: "10", after: "15"},
				{w: reverse("r1", "e2", "u1", 0), status: "ok", before: "15", after: "10"},
				{w: reverse("r2", "e2", "u1", 0), status: "reversed", before: "10", after: "10"},
				{w: reverse("r1", "e2", "u1", 0), status: "dup", before: "10", after: "10"},
				{w: reverse("r1", "e1", "u1", 0), status: "dup", before: "10", after: "10"},
				{w: reverse("r3", "r1", "u1", 0), status: "notreversible", before: "10", after: "10"},
				// The original event id stays a duplicate after its reversal.
				{w: apply("e2", "u1", "sum", 5, 0), status: "dup", before: "10", after: "10"},
			},
			final:    map[string]string{"u1": "10"},
			evAbsent: []string{"r0", "r2", "r3"},
		},
		{
			name: "reversing a member's only event removes the member",
			maxP: maxP,
			steps: []step{
				{w: apply("e1", "u2", "sum", 7, 0), status: "ok", before: absent, after: "7"},
				{w: reverse("r1", "e1", "u2", 0), status: "ok", before: "7", after: absent},
			},
			final: map[string]string{"u2": absent},
		},
		{
			// The board must look as if e1 never happened: e2 and e3 alone
			// leave u1 on the board with 0 points, as under tie first below.
			name: "reversing a member's first event keeps the member when later events net to zero",
			maxP: maxP,
			steps: []step{
				{w: apply("e1", "u1", "sum", 5, 0), status: "ok", before: absent, after: "5"},
				{w: apply("e2", "u1", "sum", 3, 0), status: "ok", before: "5", after: "8"},
				{w: apply("e3", "u1", "sum", -3, 0), status: "ok", before: "8", after: "5"},
				{w: reverse("r1", "e1", "u1", 0), status: "ok", before: "5", after: "0"},
			},
			final: map[string]string{"u1": "0"},
		},
		{
			name: "tie first: reversing a member's first event keeps the member when later events net to zero",
			B:    B, maxP: maxP,
			steps: []step{
				{w: apply("e1", "u1", "sum", 5, 1), status: "ok", before: absent, after: tf(5, B, 1)},
				{w: apply("e2", "u1", "sum", 3, 2), status: "ok", before: tf(5, B, 1), after: tf(8, B, 2)},
				{w: apply("e3", "u1", "sum", -3, 3), status: "ok", before: tf(8, B, 2), after: tf(5, B, 3)},
				{w: reverse("r1", "e1", "u1", 4), status: "ok", before: tf(5, B, 3), after: tf(0, B, 4)},
			},
			final: map[string]string{"u1": tf(0, B, 4)},
		},
		{
			name: "reversing a negative event adds it back",
			maxP: maxP,
			steps: []step{
				{w: apply("e1", "u1", "sum", 10, 0), status: "ok", before: absent, after: "10"},
				{w: apply("e2", "u1", "sum", -3, 0), status: "ok", before: "10", after: "7"},
				{w: reverse("r1", "e2", "u1", 0), status: "ok", before: "7", after: "10"},
			},
			final: map[string]string{"u1": "10"},
		},
		{
			name: "tie first: reversing the latest event restores the earlier seq",
			B:    B, maxP: maxP,
			steps: []step{
				{w: apply("e1", "u1", "sum", 5, 3), status: "ok", before: absent, after: tf(5, B, 3)},
				{w: apply("e2", "u1", "sum", 2, 8), status: "ok", before: tf(5, B, 3), after: tf(7, B, 8)},
				{w: reverse("r1", "e2", "u1", 11), status: "ok", before: tf(7, B, 8), after: tf(5, B, 3)},
				{w: apply("e3", "u1", "sum", 4, 12), status: "ok", before: tf(5, B, 3), after: tf(9, B, 12)},
				// e1 is no longer the latest change: u1 reaches 4 now, with the new seq.
				{w: reverse("r2", "e1", "u1", 14), status: "ok", before: tf(9, B, 12), after: tf(4, B, 14)},
				{w: apply("e4", "u2", "sum", 3, 15), status: "ok", before: absent, after: tf(3, B, 15)},
				{w: reverse("r3", "e4", "u2", 16), status: "ok", before: tf(3, B, 15), after: absent},
			},
			final: map[string]string{"u1": tf(4, B, 14), "u2": absent},
		},
		{
			name: "a frozen shard refuses every write and changes nothing",
			maxP: maxP,
			steps: []step{
				{w: apply("e1", "u1", "sum", 10, 0), status: "ok", before: absent, after: "10"},
				{pre: freeze, w: apply("e2", "u1", "sum", 5, 0), status: "closed", state: "frozen", before: "10", after: "10"},
				{w: apply("e3", "u9", "sum", 5, 0), status: "closed", state: "frozen", before: absent, after: absent},
				{w: reverse("r1", "e1", "u1", 0), status: "closed", state: "frozen", before: "10", after: "10"},
				{w: project("u1", 1, 100, 0), status: "closed", state: "frozen", before: "10", after: "10"},
				// A replay of an applied event is still a dup, not closed.
				{w: apply("e1", "u1", "sum", 10, 0), status: "dup", before: "10", after: "10"},
			},
			final:      map[string]string{"u1": "10", "u9": absent},
			evAbsent:   []string{"e2", "e3", "r1"},
			keysAbsent: []string{"m"},
			meta:       map[string]string{"state": "frozen"},
		},
		{
			name: "project applies only newer versions",
			maxP: maxP,
			steps: []step{
				{w: project("u1", 1, 100, 0), status: "ok", version: 1, before: absent, after: "100"},
				{w: project("u1", 1, 200, 0), status: "stale", version: 1, before: "100", after: "100"},
				{w: project("u1", 0, 300, 0), status: "stale", version: 1, before: "100", after: "100"},
				{w: project("u1", 5, 50, 0), status: "ok", version: 5, before: "100", after: "50"},
				{w: project("u1", 3, 70, 0), status: "stale", version: 5, before: "50", after: "50"},
				{w: project("u1", 6, 0, 0), status: "ok", version: 6, before: "50", after: "0"},
				{w: project("u2", 0, 10, 0), status: "stale", version: 0, before: absent, after: absent},
			},
			final: map[string]string{"u1": "0", "u2": absent},
		},
		{
			name: "project refuses totals beyond max_points",
			maxP: 100,
			steps: []step{
				{w: project("u1", 1, 100, 0), status: "ok", version: 1, before: absent, after: "100"},
				{w: project("u1", 2, 101, 0), status: "range", version: 1, before: "100", after: "100"},
				{w: project("u1", 2, -101, 0), status: "range", version: 1, before: "100", after: "100"},
				{w: project("u1", 2, -100, 0), status: "ok", version: 2, before: "100", after: "-100"},
			},
			final: map[string]string{"u1": "-100"},
		},
		{
			name: "tie first project keeps the seq when the points do not change",
			B:    B, maxP: maxP,
			steps: []step{
				{w: project("u1", 1, 100, 4), status: "ok", version: 1, before: absent, after: tf(100, B, 4)},
				{w: project("u1", 2, 100, 9), status: "ok", version: 2, before: tf(100, B, 4), after: tf(100, B, 4)},
				{w: project("u1", 3, 120, 10), status: "ok", version: 3, before: tf(100, B, 4), after: tf(120, B, 10)},
				{w: project("u1", 4, 130, B), status: "range", version: 3, before: tf(120, B, 10), after: tf(120, B, 10)},
			},
			final: map[string]string{"u1": tf(120, B, 10)},
		},
	}

	// Every case runs twice: as a family without a read index (no change
	// feed may appear), and with one, where replaying the feed from the
	// start must give exactly the sorted set the scripts left.
	for i, tc := range cases {
		for _, feed := range []bool{false, true} {
			name := tc.name
			if feed {
				name += " (with a change feed)"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				runSemantics(t, e, i, tc, feed)
			})
		}
	}
}

// runSemantics runs one case of TestScriptSemantics, with or without a
// change feed.
func runSemantics(t *testing.T, e *env, i int, tc semCase, feed bool) {
	ctx := ctxT(t, 10*time.Second)
	b := shard.Board{Family: "sem", Period: "2026-W34", DimType: "case", DimValue: fmt.Sprintf("c%02d", i)}
	if feed {
		b.DimValue += "f"
	}
	k := e.layout.Keys(b, 0, 1)
	defer checkFeed(t, e, k, feed)
	for j, st := range tc.steps {
		if st.pre != nil {
			st.pre(t, ctx, e.c, k)
		}
		w := st.w
		w.Keys, w.B, w.MaxPoints, w.NowMs, w.Rules = k, tc.B, tc.maxP, testNowMs, testRules
		if feed {
			w.FeedLen = 1000
		}
		r := e.s.Write(ctx, []store.Write{w})[0]
		desc := fmt.Sprintf("step %d (kind %d id %q member %q value %d seq %d version %d)", j, w.Kind, w.EventID, w.Member, w.Value, w.Seq, w.Version)
		if r.Err != nil {
			t.Fatalf("%s: %v", desc, r.Err)
		}
		if r.Status != st.status {
			t.Errorf("%s: status %q, want %q", desc, r.Status, st.status)
		}
		if st.before != anyScore && scoreStr(r.Before) != st.before {
			t.Errorf("%s: before %s, want %s", desc, scoreStr(r.Before), st.before)
		}
		if st.after != anyScore && scoreStr(r.After) != st.after {
			t.Errorf("%s: after %s, want %s", desc, scoreStr(r.After), st.after)
		}
		if w.Kind == store.KindProject && st.status != "closed" && r.Version != st.version {
			t.Errorf("%s: version %d, want %d", desc, r.Version, st.version)
		}
		if r.State != st.state {
			t.Errorf("%s: state %q, want %q", desc, r.State, st.state)
		}
		// The reply's "after" is what the set holds.
		if st.after != anyScore {
			got := zscore(t, ctx, e.c, k.Z, w.Member)
			if got != scoreStr(r.After) {
				t.Errorf("%s: ZSCORE %s, reply says after %s", desc, got, scoreStr(r.After))
			}
		}
	}
	for m, want := range tc.final {
		if got := zscore(t, ctx, e.c, k.Z, m); got != want {
			t.Errorf("final ZSCORE %s = %s, want %s", m, got, want)
		}
	}
	for _, id := range tc.evAbsent {
		if ok, err := e.c.HExists(ctx, k.Ev, id).Result(); err != nil || ok {
			t.Errorf("event %q recorded in the dedupe hash (err %v), want not", id, err)
		}
	}
	byName := map[string]string{"z": k.Z, "ev": k.Ev, "m": k.M, "meta": k.Meta}
	for _, name := range tc.keysAbsent {
		n, err := e.c.Exists(ctx, byName[name]).Result()
		if err != nil || n != 0 {
			v, _ := e.c.Do(ctx, "TYPE", byName[name]).Text()
			h, _ := e.c.HGetAll(ctx, byName[name]).Result()
			t.Errorf("key %s (%s) exists (err %v, type %s, hash %v), want absent", name, byName[name], err, v, h)
		}
	}
	if tc.meta != nil {
		got, err := e.c.HGetAll(ctx, k.Meta).Result()
		if err != nil {
			t.Fatal(err)
		}
		for f, want := range tc.meta {
			if got[f] != want {
				t.Errorf("meta %s = %q, want %q (meta %v)", f, got[f], want, got)
			}
		}
	}
}

// checkFeed: without a feed the shard has no stream; with one, the feed
// replayed from its start (upsert a score, drop a member) is exactly the
// sorted set — every change reached it, in order, and nothing else did.
func checkFeed(t *testing.T, e *env, k shard.Keys, feed bool) {
	t.Helper()
	ctx := ctxT(t, 5*time.Second)
	if !feed {
		if n, err := e.c.Exists(ctx, k.Feed).Result(); err != nil || n != 0 {
			t.Errorf("a write without a feed made %s (err %v)", k.Feed, err)
		}
		return
	}
	out := make([]store.FeedReply, 1)
	e.s.Feed(ctx, []store.FeedOp{{Kind: store.FeedRead, Key: k.Feed, Count: 10000}}, out)
	if out[0].Err != nil {
		t.Fatal(out[0].Err)
	}
	replayed := map[string]int64{}
	for _, en := range out[0].Entries {
		switch {
		case en.Reset != "":
			t.Fatalf("a write appended a reset entry: %+v", en)
		case en.Removed:
			if _, ok := replayed[en.Member]; !ok {
				t.Errorf("the feed removes %s, which it never added", en.Member)
			}
			delete(replayed, en.Member)
		default:
			replayed[en.Member] = en.Score
		}
	}
	zs, err := e.c.ZRangeWithScores(ctx, k.Z, 0, -1).Result()
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]int64{}
	for _, z := range zs {
		want[z.Member.(string)] = int64(z.Score)
	}
	if !maps.Equal(replayed, want) {
		t.Errorf("the feed replays to %v, the sorted set holds %v (%d entries)", replayed, want, len(out[0].Entries))
	}
}

func zscore(t *testing.T, ctx context.Context, c redis.UniversalClient, key, member string) string {
	t.Helper()
	v, err := c.Do(ctx, "ZSCORE", key, member).Result()
	if err == redis.Nil || v == nil {
		return absent
	}
	if err != nil {
		t.Fatalf("ZSCORE %s %s: %v", key, member, err)
	}
	var f float64
	switch x := v.(type) {
	case float64:
		f = x
	case string:
		if f, err = strconv.ParseFloat(x, 64); err != nil {
			t.Fatalf("ZSCORE %s %s: %q", key, member, x)
		}
	default:
		t.Fatalf("ZSCORE %s %s: %T %v", key, member, v, v)
	}
	s, ok := rank.FromFloat(f)
	if !ok {
		t.Fatalf("ZSCORE %s %s = %v: not an exact integer", key, member, f)
	}
	return strconv.FormatInt(s, 10)
}

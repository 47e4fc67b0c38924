package ledger

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"

	"github.com/jackc/pgx/v5"
	dto "github.com/prometheus/client_model/go"
)

func counter(t *testing.T, l *Ledger, op string) float64 {
	t.Helper()
	var m dto.Metric
	if err := l.m.retries.WithLabelValues(op).Write(&m); err != nil {
		t.Fatal(err)
	}
	return m.GetCounter().GetValue()
}

// The delta path (runSum) answers and stores exactly what the locking path
// does: the same groups, run one after another on two ledgers, one of them
// on the locking path only, give the same answers, totals, event_boards
// rows (and their order on each board), seq counters and events. The groups
// mix two sum families (tie first and not), members and boards, duplicates
// of recorded events and within the group, a frozen period, invalid events,
// totals that would leave the range (the delta path then reruns on the
// locking path), deltas that overflow int64, and reversals between groups;
// most events carry metadata (some none), which the totals, the answers and
// the events keep. Groups with a recorded event or a frozen period also run
// the delta path's one round trip (wrong assumption: rolled back) first.
func TestRecordGroupDeltaPathMatchesLocking(t *testing.T) {
	t.Parallel()
	delta, locking := openTest(t), openTest(t)
	locking.lockingOnly = true
	ctx := t.Context()
	for _, l := range []*Ledger{delta, locking} {
		if _, err := l.Freeze(ctx, "dq", "2026-W01"); err != nil {
			t.Fatal(err)
		}
	}
	tie, plain := sumTie, sumMember
	tie.MaxPoints, plain.MaxPoints = 60, 60
	rnd := rand.New(rand.NewPCG(10, 10))
	mdRnd := rand.New(rand.NewPCG(11, 11)) // its own source: the events' mix stays rnd's
	boardSets := [][]string{{"national"}, {"national", "city:x"}, {"city:y", "national", "city:x"}}
	const groups = 40
	reversed := 0
	for g := range groups {
		n := 1 + rnd.IntN(12)
		items := make([]GroupEvent, n)
		for i := range items {
			fam, r := "dp", tie
			if rnd.IntN(3) == 0 {
				fam, r = "dq", plain
			}
			d := int64(rnd.IntN(41) - 20)
			switch rnd.IntN(40) {
			case 0:
				d = math.MaxInt64 - 5 // overflows with anything positive before it
			case 1:
				d = 55 // likely out of range
			}
			ev := sumEv(fmt.Sprintf("e%d", rnd.IntN(groups*6)), fam, fmt.Sprintf("m%d", rnd.IntN(4)), d, boardSets[rnd.IntN(len(boardSets))]...)
			switch rnd.IntN(25) {
			case 0:
				ev.Period = "2026-W01" // frozen in dq; open (new) in dp
			case 1:
				ev.Member = "" // invalid
			}
			if m := mdRnd.IntN(4); m > 0 { // "" (none) a quarter of the time
				ev.Metadata = fmt.Sprintf(`{"g":%d, "i":%d,"m":%d}`, g, i, m)
			}
			items[i] = GroupEvent{Event: ev, Rules: r}
		}
		got, gerr := delta.RecordGroup(ctx, items)
		want, werr := locking.RecordGroup(ctx, items)
		if gerr != nil || werr != nil {
			t.Fatalf("group %d: %v / %v", g, gerr, werr)
		}
		for i := range items {
			a, b := got[i], want[i]
			if !reflect.DeepEqual(a.Outcome, b.Outcome) || errClass(a.Err) != errClass(b.Err) || (a.Pending == 0) != (b.Pending == 0) {
				t.Fatalf("group %d, event %d (%s, delta %d): delta path %+v %v pending %d; locking path %+v %v pending %d",
					g, i, items[i].Event.EventID, *items[i].Event.Delta, a.Outcome, a.Err, a.Pending, b.Outcome, b.Err, b.Pending)
			}
		}
		if g%4 == 3 { // a reversal between groups: rows absent again, live counts down
			orig := items[rnd.IntN(n)].Event
			rev := revEv(fmt.Sprintf("r%d", g), orig.Family, orig.Member, orig.EventID[len(orig.Family)+1:])
			r := tie
			if orig.Family == "dq" {
				r = plain
			}
			a, aerr := delta.Record(ctx, rev, r)
			b, berr := locking.Record(ctx, rev, r)
			if !reflect.DeepEqual(a, b) || errClass(aerr) != errClass(berr) {
				t.Fatalf("reversal %s: %+v %v; %+v %v", rev.EventID, a, aerr, b, berr)
			}
			if aerr == nil {
				reversed++
			}
		}
	}
	for _, q := range []string{
		`SELECT family, period, board, member, points, version, seq, present, live, columns, metadata FROM totals ORDER BY 1, 2, 3, 4`,
		`SELECT event_id, board, applied, changed, seq_before, seq_after, total_after, present_after, version_after, cols_before, cols_after
			FROM event_boards ORDER BY 1, 2`,
		// The order of the events on each board (ord values differ: a rolled
		// back attempt uses some up).
		`SELECT e.family, e.period, b.board, e.member, string_agg(b.event_id, ' ' ORDER BY b.ord) FROM event_boards b
			JOIN events e USING (event_id) GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4`,
		`SELECT family, period, next FROM period_seq ORDER BY 1, 2`,
		`SELECT event_id, kind, family, period, member, delta, columns, metadata FROM events ORDER BY 1`,
		`SELECT count(*) FROM projection_pending`,
	} {
		a, b := dump(t, delta, q), dump(t, locking, q)
		if !reflect.DeepEqual(a, b) {
			t.Errorf("%s\ndelta path:   %v\nlocking path: %v", q, a, b)
		}
	}
	if reversed == 0 {
		t.Error("no reversal applied: the groups never met rows a reversal left")
	}
	// Both paths ran: most groups on the delta path, some sent back.
	reruns := counter(t, delta, "record_group_locking") + counter(t, delta, "record_locking")
	if reruns == 0 || reruns > groups/2 {
		t.Errorf("%v of %d groups reran on the locking path; want some (out of range, overflow), not most", reruns, groups)
	}
	// The one round trip (runSumOneTrip) wrote most groups; those with a
	// recorded event or a frozen period went back to the two.
	if n := counter(t, delta, "record_group_two_trips") + counter(t, delta, "record_two_trips"); n == 0 || n > groups*3/4 {
		t.Errorf("%v of %d groups went back to the delta path's two round trips; want some (duplicates, a frozen period), not most", n, groups)
	}
	if n := counter(t, locking, "record_group_locking") + counter(t, locking, "record_locking"); n != 0 {
		t.Errorf("the locking-only ledger counted %v reruns", n)
	}
}

func errClass(err error) error {
	for _, e := range []error{ErrInvalid, ErrPeriodClosed, ErrOutOfRange, ErrUnknownEvent, ErrNotReversible} {
		if errors.Is(err, e) {
			return e
		}
	}
	return err
}

func dump(t *testing.T, l *Ledger, q string) [][]any {
	t.Helper()
	var out [][]any
	err := l.withConn(t.Context(), func(c *pgx.Conn) error {
		rows, err := c.Query(t.Context(), q)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			vs, err := rows.Values()
			if err != nil {
				return err
			}
			out = append(out, vs)
		}
		return rows.Err()
	})
	if err != nil {
		t.Fatalf("%s: %v", q, err)
	}
	return out
}

package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
)

// GroupEvent is one event of a group and the rules of its family.
type GroupEvent struct {
	Event Event
	Rules Rules
}

// GroupResult is one event's answer: its outcome, or why it was refused
// (ErrInvalid, ErrPeriodClosed, ErrOutOfRange) — a refused event leaves no
// trace and never fails its neighbours.
type GroupResult struct {
	Outcome Outcome
	Err     error
	// Pending: the group's pending-projection row that lists this event
	// (0: nothing for Redis to learn, or not committed). Once every event it
	// lists is projected, MarkGroupProjected(Pending) drops it in one
	// statement; MarkProjected of single ids works too.
	Pending int64
}

// RecordGroup commits a group of awards and corrections in one transaction
// and one flush (group commit), with the rules of Record applied
// to each event in the group's order, as if recorded one after another:
//
//   - an event id already recorded, or repeated within the group, answers
//     Duplicate with the member's totals after the group;
//   - an event that is invalid, whose period is not open, or that would
//     leave the range fails alone (validation before the transaction; the
//     events after it see the totals without it);
//   - achievement seqs are taken as one range per family period (one
//     UPDATE … RETURNING per group, the last lock the group takes, held to
//     COMMIT), handed out in the group's order, so seqs follow commit order.
//
// Lock order, the same as Record's: the event ids (inserted in id order), the
// period rows (shared, in (family, period) order), the totals rows (in
// (family, period, board, member) order, one statement), the period seq rows
// (in (family, period) order). Reversals and projections are refused with
// ErrInvalid: they go through Record and Project.
//
// The error is about the whole group (the database failed; nothing was
// committed); the results then carry it too.
func (l *Ledger) RecordGroup(ctx context.Context, evs []GroupEvent) ([]GroupResult, error) {
	res := make([]GroupResult, len(evs))
	g := &group{items: make([]groupItem, len(evs)), res: res, sum: !l.lockingOnly}
	for i, ge := range evs {
		it := &g.items[i]
		it.r, it.err = ge.Rules.check()
		if it.err == nil {
			it.ev, it.err = normalize(ge.Event, it.r, false)
		}
		if it.err == nil && it.ev.Kind != KindAward && it.ev.Kind != KindCorrection {
			it.err = fmt.Errorf("%w: event %q: a group takes awards and corrections; a %s goes through Record", ErrInvalid, it.ev.EventID, it.ev.Kind)
		}
		it.refused = it.err
		// Sort columns combine per column (columns.go): the locking path.
		g.sum = g.sum && (it.err != nil || (it.r.Aggregate == "sum" && len(it.r.Columns) == 0))
	}
	g.oneTrip = g.sum
	op, first := "record_group", ""
	if len(evs) > 0 {
		first = evs[0].Event.EventID
	}
	if len(evs) == 1 {
		op = "record"
	}
	var err error
	for {
		err = l.inBatchTx(ctx, op, first, func(tx txq) error { return g.run(ctx, tx) })
		if errors.Is(err, errTwoTrips) {
			// Rolled back: the one round trip's assumption (every event
			// new, every period open) did not hold.
			g.oneTrip = false
			l.m.retries.WithLabelValues(op + "_two_trips").Inc()
			continue
		}
		if errors.Is(err, errLockingPath) {
			// Rolled back: a total of the delta path left the range; the
			// locking path refuses the events that do, alone.
			g.sum = false
			l.m.retries.WithLabelValues(op + "_locking").Inc()
			continue
		}
		var over *seqOverflow
		if !errors.As(err, &over) {
			break
		}
		// Events past the period's seq capacity are refused; the rest run again.
		for _, i := range over.items {
			g.items[i].refused = over.errs[i]
		}
	}
	for i := range g.items {
		it := &g.items[i]
		switch {
		case err != nil:
			res[i] = GroupResult{Err: err}
		case it.result.Err == nil && it.result.Outcome.Boards == nil:
			res[i] = GroupResult{Err: fmt.Errorf("ledger: event %s got no answer", it.ev.EventID)}
		default:
			res[i] = it.result
		}
		kind := it.ev.Kind
		if kind != KindAward && kind != KindCorrection {
			kind = "invalid"
		}
		l.m.writes.WithLabelValues(kind, outcomeLabel(res[i].Err, res[i].Outcome, false)).Inc()
	}
	if err == nil && l.log.Enabled(ctx, slog.LevelDebug) {
		for i := range g.items {
			it := &g.items[i]
			for _, b := range it.boards {
				if !it.applied {
					break
				}
				l.log.Debug("ledger write", "family", it.ev.Family, "period", it.ev.Period, "board", b.key.board,
					"member", it.ev.Member, "event_id", it.ev.EventID, "kind", it.ev.Kind, "applied", b.applied,
					"points_before", b.cur.row.points, "points_after", b.next.row.points, "present", b.next.row.present,
					"version", b.next.row.version, "seq", b.next.seq(g.base), "changed", b.changed, "rules_version", it.ev.RulesVersion)
			}
		}
	}
	if err != nil {
		return res, err
	}
	return res, nil
}

// seqOverflow reruns a group without the events whose seq would reach the
// period's capacity.
type seqOverflow struct {
	items []int
	errs  map[int]error
}

func (e *seqOverflow) Error() string { return "ledger: seq capacity reached in a group" }

// totalsKey names one totals row.
type totalsKey struct{ family, period, board, member string }

func (k totalsKey) less(o totalsKey) int {
	if c := strings.Compare(k.family, o.family); c != 0 {
		return c
	}
	if c := strings.Compare(k.period, o.period); c != 0 {
		return c
	}
	if c := strings.Compare(k.board, o.board); c != 0 {
		return c
	}
	return strings.Compare(k.member, o.member)
}

type periodKey struct{ family, period string }

// gRow is a totals row inside a group: its seq may still be a place in the
// period's range (k ≥ 0), resolved once the range is taken.
type gRow struct {
	row totalsRow
	k   int // ≥ 0: row.seq = base of the period's range + k
	fp  periodKey
}

func (r gRow) seq(base map[periodKey]int64) int64 {
	if r.k >= 0 {
		return base[r.fp] + int64(r.k)
	}
	return r.row.seq
}

type groupBoard struct {
	key       totalsKey
	cur, next gRow
	changed   bool
	applied   int64
}

type groupItem struct {
	ev      Event
	r       Rules
	err     error // invalid: never reaches the database
	refused error // err, or refused by an earlier attempt (seq capacity)

	// Per attempt:
	dupOf    int  // ≥ 0: an earlier item of the group with the same id
	inserted bool // this attempt inserted its event row
	applied  bool // computed and kept
	boards   []groupBoard
	result   GroupResult
}

type group struct {
	items []groupItem
	res   []GroupResult
	base  map[periodKey]int64 // start of each period's seq range (last attempt)
	// pending: the group's projection_pending row (last attempt; 0: none).
	pending int64
	// sum: every event is a sum-family award or correction: the delta path
	// (runSum) unless it sent the group back to the locking path.
	sum bool
	// oneTrip: the delta path writes the group in the round trip of its
	// event and period rows (runSumOneTrip) unless that sent it back.
	oneTrip bool
}

// run is one attempt of the group's transaction.
func (g *group) run(ctx context.Context, tx txq) error {
	if g.sum {
		return g.runSum(ctx, tx)
	}
	firstOf, ids := g.reset()
	// 1. The event rows, in id order (a conflict waits for a concurrent
	// writer of the same id, then answers duplicate); 2. the period rows,
	// shared, in order; 3. the totals rows of the open periods, in order:
	// one round trip. (The totals of duplicates are locked too: they are
	// read for the answers after the group anyway.)
	var periods []periodKey
	var keys []totalsKey
	seenP, seenK := map[periodKey]bool{}, map[totalsKey]bool{}
	for _, i := range firstOf {
		it := &g.items[i]
		if pk := (periodKey{it.ev.Family, it.ev.Period}); !seenP[pk] {
			seenP[pk] = true
			periods = append(periods, pk)
		}
		for _, b := range it.ev.Boards {
			if k := (totalsKey{it.ev.Family, it.ev.Period, b, it.ev.Member}); !seenK[k] {
				seenK[k] = true
				keys = append(keys, k)
			}
		}
	}
	b := &pgx.Batch{}
	inserted, err := g.queueInsertEvents(b, ids, firstOf)
	if err != nil {
		return err
	}
	states := queueLockPeriods(b, periods)
	rows := queueLockTotals(b, keys, true)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("ledger: inserting %d events, locking %d periods and %d totals rows: %w", len(ids), len(periods), len(keys), err)
	}
	for _, p := range periods {
		if _, ok := states[p]; !ok {
			return fmt.Errorf("ledger: period %s/%s missing after insert", p.family, p.period)
		}
	}
	cur := make(map[totalsKey]gRow, len(rows))
	for k, r := range rows {
		cur[k] = gRow{row: r, k: -1, fp: periodKey{k.family, k.period}}
	}
	if err := g.settle(inserted, states, cur); err != nil {
		return err
	}
	// 4. Every event in the group's order, on the totals its predecessors left.
	need := map[periodKey]int{}
	for i := range g.items {
		it := &g.items[i]
		if !it.inserted || it.result.Err != nil {
			continue
		}
		it.result.Err = g.compute(it, cur, need)
	}
	// 5. The seq ranges (the last lock: held to COMMIT, so seqs follow
	// commit order), 6. the writes and 7. the answers of duplicates (the
	// member's totals after the group), in one round trip.
	return g.write(ctx, tx, cur, need)
}

// reset starts an attempt: it clears the items' per-attempt state and
// returns the first item of each id and the ids, in the group's order.
func (g *group) reset() (map[string]int, []string) {
	g.base, g.pending = map[periodKey]int64{}, 0
	firstOf := map[string]int{}
	var ids []string
	for i := range g.items {
		it := &g.items[i]
		it.dupOf, it.inserted, it.applied, it.boards, it.result = -1, false, false, nil, GroupResult{}
		if it.refused != nil {
			it.result.Err = it.refused
			continue
		}
		if j, ok := firstOf[it.ev.EventID]; ok {
			it.dupOf = j
			continue
		}
		firstOf[it.ev.EventID] = i
		ids = append(ids, it.ev.EventID)
	}
	return firstOf, ids
}

// settle marks the items whose event row this attempt inserted and refuses
// those of a period that is not open; every board of the others must have
// its totals row locked (unless cur is nil: the delta path locks later).
func (g *group) settle(inserted map[string]bool, states map[periodKey]string, cur map[totalsKey]gRow) error {
	for i := range g.items {
		it := &g.items[i]
		if it.dupOf >= 0 || it.refused != nil || !inserted[it.ev.EventID] {
			continue // refused, or a duplicate of a recorded event
		}
		it.inserted = true
		pk := periodKey{it.ev.Family, it.ev.Period}
		if st := states[pk]; st != StateOpen {
			it.result.Err = fmt.Errorf("%w: %s/%s is %s", ErrPeriodClosed, pk.family, pk.period, st)
			continue
		}
		for _, b := range it.ev.Boards {
			if cur == nil {
				break
			}
			if _, ok := cur[totalsKey{it.ev.Family, it.ev.Period, b, it.ev.Member}]; !ok {
				return fmt.Errorf("ledger: totals row of %s on %s/%s/%s not locked", it.ev.Member, it.ev.Family, it.ev.Period, b)
			}
		}
	}
	return nil
}

// queueDuplicates queues the answers of the duplicates (of a recorded event,
// or of an earlier item of the group): the totals of the stored event's
// member on the boards the duplicate names, read after the group's writes.
// Once the batch ran, found tells which items got their stored event.
func (g *group) queueDuplicates(b *pgx.Batch) (found []bool) {
	type place struct{ item, board int }
	var ids, boards []string
	var at []place
	found = make([]bool, len(g.items))
	for i := range g.items {
		it := &g.items[i]
		if it.refused != nil || (it.dupOf < 0 && it.inserted) {
			continue
		}
		if it.dupOf >= 0 {
			if first := &g.items[it.dupOf]; first.result.Err != nil {
				it.result.Err = first.result.Err
				found[i] = true
				continue
			}
		}
		bs := make([]BoardTotal, len(it.ev.Boards))
		for j, bd := range it.ev.Boards {
			bs[j] = BoardTotal{Board: bd, Seq: -1} // absent unless read
			ids, boards, at = append(ids, it.ev.EventID), append(boards, bd), append(at, place{i, j})
		}
		it.result = GroupResult{Outcome: Outcome{Duplicate: true, Boards: bs}}
	}
	if len(ids) == 0 {
		return found
	}
	var n int64
	var t BoardTotal
	var points, version, seq *int64
	var present *bool
	var cols []int64
	var md *string
	b.Queue(`SELECT u.n, t.points, t.version, t.seq, t.present, t.columns, t.metadata
		FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS u(id, board, n)
		CROSS JOIN LATERAL (SELECT family, period, member FROM events e WHERE e.event_id = u.id) AS e
		LEFT JOIN LATERAL (SELECT points, version, seq, present, columns, metadata FROM totals t WHERE t.family = e.family
			AND t.period = e.period AND t.board = u.board AND t.member = e.member) AS t ON true`, ids, boards).Query(func(rows pgx.Rows) error {
		_, err := pgx.ForEachRow(rows, []any{&n, &points, &version, &seq, &present, &cols, &md}, func() error {
			p := at[n-1]
			found[p.item] = true
			t = BoardTotal{Board: boards[n-1], Seq: -1}
			if points != nil {
				t.Points, t.Version, t.Seq, t.Present, t.Columns, t.Metadata = *points, *version, *seq, *present, slices.Clone(cols), *md
			}
			g.items[p.item].result.Outcome.Boards[p.board] = t
			return nil
		})
		return err
	})
	return found
}

// queueInsertEvents queues the insert of the first item of each id, in id
// order; once the batch ran, the map holds the ids it inserted.
func (g *group) queueInsertEvents(b *pgx.Batch, ids []string, firstOf map[string]int) (map[string]bool, error) {
	out := make(map[string]bool, len(ids))
	if len(ids) == 0 {
		return out, nil
	}
	slices.Sort(ids)
	n := len(ids)
	var (
		kinds, families, periods, members, dims, operators, reasons, rules = make([]string, n), make([]string, n),
			make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		deltas, values     = make([]*int64, n), make([]*int64, n)
		received, occurred = make([]time.Time, n), make([]time.Time, n)
		cols, mds          = make([]*string, n), make([]string, n)
	)
	for j, id := range ids {
		ev := &g.items[firstOf[id]].ev
		d := ev.Dims
		if d == nil {
			d = map[string]string{}
		}
		dj, err := json.Marshal(d)
		if err != nil {
			return nil, err
		}
		kinds[j], families[j], periods[j], members[j], dims[j] = ev.Kind, ev.Family, ev.Period, ev.Member, string(dj)
		operators[j], reasons[j], rules[j] = ev.Operator, ev.Reason, ev.RulesVersion
		deltas[j], values[j], received[j], occurred[j] = ev.Delta, ev.Value, ev.ReceivedAt, ev.OccurredAt
		cols[j], mds[j] = colsText(ev.Columns), ev.Metadata
	}
	// Inserted marked projected: what Redis must learn is listed in the
	// group's projection_pending row (see write).
	b.Queue(`INSERT INTO events (event_id, kind, family, period, member, dims, delta, value,
			operator, reason, rules_version, received_at, occurred_at, projected, columns, metadata)
		SELECT id, kind, family, period, member, dims::jsonb, delta, value, operator, reason, rules_version, received_at, occurred_at, true,
			cols::bigint[], metadata
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::bigint[],
			$9::text[], $10::text[], $11::text[], $12::timestamptz[], $13::timestamptz[], $14::text[], $15::text[]) WITH ORDINALITY
			AS u(id, kind, family, period, member, dims, delta, value, operator, reason, rules_version, received_at, occurred_at,
				cols, metadata, n)
		ORDER BY n
		ON CONFLICT (event_id) DO NOTHING
		RETURNING event_id`,
		ids, kinds, families, periods, members, dims, deltas, values, operators, reasons, rules, received, occurred, cols, mds).Query(func(rows pgx.Rows) error {
		var id string
		_, err := pgx.ForEachRow(rows, []any{&id}, func() error {
			out[id] = true
			return nil
		})
		return err
	})
	return out, nil
}

// queueLockPeriods queues the creation of missing period rows (open) and
// then a share lock on every one, in (family, period) order; once the batch
// ran, the map holds their states.
func queueLockPeriods(b *pgx.Batch, ps []periodKey) map[periodKey]string {
	out := make(map[periodKey]string, len(ps))
	if len(ps) == 0 {
		return out
	}
	slices.SortFunc(ps, func(a, b periodKey) int {
		if c := strings.Compare(a.family, b.family); c != 0 {
			return c
		}
		return strings.Compare(a.period, b.period)
	})
	fs, pp := make([]string, len(ps)), make([]string, len(ps))
	for i, p := range ps {
		fs[i], pp[i] = p.family, p.period
	}
	b.Queue(`INSERT INTO periods (family, period)
		SELECT family, period FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS u(family, period, n) ORDER BY n
		ON CONFLICT DO NOTHING`, fs, pp)
	b.Queue(`SELECT p.family, p.period, p.state FROM unnest($1::text[], $2::text[]) AS u(family, period)
		CROSS JOIN LATERAL (SELECT * FROM periods p WHERE p.family = u.family AND p.period = u.period FOR SHARE) AS p`,
		fs, pp).Query(func(rows pgx.Rows) error {
		var k periodKey
		var st string
		_, err := pgx.ForEachRow(rows, []any{&k.family, &k.period, &st}, func() error {
			out[k] = st
			return nil
		})
		return err
	})
	return out
}

// lockTotalsRows locks (creating when missing) the totals rows of keys in
// (family, period, board, member) order, so every writer locks in the same
// order and none deadlocks.
func lockTotalsRows(ctx context.Context, q interface {
	SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults
}, keys []totalsKey) (map[totalsKey]totalsRow, error) {
	b := &pgx.Batch{}
	out := queueLockTotals(b, keys, false)
	if b.Len() == 0 {
		return out, nil
	}
	if err := q.SendBatch(ctx, b).Close(); err != nil {
		return nil, fmt.Errorf("ledger: locking %d totals rows: %w", len(keys), err)
	}
	if len(out) != len(keys) {
		return nil, fmt.Errorf("ledger: locked %d of %d totals rows", len(out), len(keys))
	}
	return out, nil
}

// queueLockTotals queues the locking of the totals rows of keys (created when
// missing), in (family, period, board, member) order; once the batch ran, the
// map holds them. openOnly: only the rows of periods that are
// open (the period rows are share-locked earlier in the same transaction).
func queueLockTotals(b *pgx.Batch, keys []totalsKey, openOnly bool) map[totalsKey]totalsRow {
	out := make(map[totalsKey]totalsRow, len(keys))
	if len(keys) == 0 {
		return out
	}
	open := ""
	if openOnly {
		open = ` WHERE EXISTS (SELECT 1 FROM periods p WHERE p.family = u.family AND p.period = u.period AND p.state = 'open')`
	}
	fs, ps, bs, ms := queueInsertOrLock(b, keys, open)
	var k totalsKey
	var t totalsRow
	// A lookup per key (a join would be planned as a hash join over the
	// whole table); the rows are this transaction's now.
	b.Queue(`SELECT t.family, t.period, t.board, t.member, t.points, t.version, t.seq, t.present, t.live, t.columns, t.metadata
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) AS u(family, period, board, member)
		CROSS JOIN LATERAL (SELECT * FROM totals t WHERE t.family = u.family AND t.period = u.period
			AND t.board = u.board AND t.member = u.member) AS t`, fs, ps, bs, ms).Query(func(rows pgx.Rows) error {
		_, err := pgx.ForEachRow(rows, []any{&k.family, &k.period, &k.board, &k.member, &t.points, &t.version, &t.seq, &t.present, &t.live,
			&t.cols, &t.md}, func() error {
			t.cols = slices.Clone(t.cols)
			out[k] = t
			return nil
		})
		return err
	})
	return out
}

// queueInsertOrLock sorts keys and queues the locking of their totals rows
// (created when missing, where the SQL filter open allows), in (family,
// period, board, member) order; it returns the keys' columns.
func queueInsertOrLock(b *pgx.Batch, keys []totalsKey, open string) (fs, ps, bs, ms []string) {
	slices.SortFunc(keys, totalsKey.less)
	n := len(keys)
	fs, ps, bs, ms = make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	for i, k := range keys {
		fs[i], ps[i], bs[i], ms[i] = k.family, k.period, k.board, k.member
	}
	// One pass in key order: each row is inserted when missing, else locked
	// (DO UPDATE … WHERE false locks the row and changes nothing), so a
	// writer holds its rows in key order and waits only in key order: no
	// cycle. (Inserting every missing row first and locking them all after
	// is not enough: two writers creating rows meet in both passes.)
	b.Queue(`INSERT INTO totals AS t (family, period, board, member)
		SELECT family, period, board, member FROM unnest($1::text[], $2::text[], $3::text[], $4::text[]) WITH ORDINALITY
			AS u(family, period, board, member, n)`+open+`
		ORDER BY n
		ON CONFLICT (family, period, board, member) DO UPDATE SET points = t.points WHERE false`, fs, ps, bs, ms)
	return fs, ps, bs, ms
}

// compute applies one award or correction to the group's current totals.
func (g *group) compute(it *groupItem, cur map[totalsKey]gRow, need map[periodKey]int) error {
	w := &writer{ev: it.ev, r: it.r}
	pk := periodKey{it.ev.Family, it.ev.Period}
	bs := make([]groupBoard, len(it.ev.Boards))
	newSeq := false
	for j, b := range it.ev.Boards {
		k := totalsKey{it.ev.Family, it.ev.Period, b, it.ev.Member}
		c := cur[k]
		st := &boardState{board: b, cur: c.row, next: c.row}
		if err := w.award(st); err != nil {
			return err
		}
		next := c
		if st.changed {
			next = gRow{row: st.next, k: -1, fp: pk}
			newSeq = newSeq || st.newSeq
		}
		bs[j] = groupBoard{key: k, cur: c, next: next, changed: st.changed, applied: st.applied}
	}
	if newSeq {
		if it.r.TieFirst {
			for j := range bs {
				if bs[j].changed {
					bs[j].next.k = need[pk]
				}
			}
			need[pk]++
		} else {
			for j := range bs {
				if bs[j].changed {
					bs[j].next.row.seq = 0
				}
			}
		}
	}
	for _, b := range bs {
		cur[b.key] = b.next
	}
	it.boards, it.applied = bs, true
	return nil
}

// queueSeqRanges queues the taking of one range of achievement seqs per
// family period, in order; once the batch ran, g.base holds their starts.
func (g *group) queueSeqRanges(b *pgx.Batch, need map[periodKey]int) {
	if len(need) == 0 {
		return
	}
	ps := make([]periodKey, 0, len(need))
	for p := range need {
		ps = append(ps, p)
	}
	slices.SortFunc(ps, func(a, b periodKey) int {
		if c := strings.Compare(a.family, b.family); c != 0 {
			return c
		}
		return strings.Compare(a.period, b.period)
	})
	n := len(ps)
	fs, pp, cs := make([]string, n), make([]string, n), make([]int64, n)
	for i, p := range ps {
		fs[i], pp[i], cs[i] = p.family, p.period, int64(need[p])
	}
	b.Queue(`INSERT INTO period_seq AS s (family, period, next)
		SELECT family, period, 1 + c FROM unnest($1::text[], $2::text[], $3::bigint[]) WITH ORDINALITY AS u(family, period, c, n)
		ORDER BY n
		ON CONFLICT (family, period) DO UPDATE SET next = s.next + EXCLUDED.next - 1
		RETURNING family, period, next`, fs, pp, cs).Query(func(rows pgx.Rows) error {
		var k periodKey
		var next int64
		_, err := pgx.ForEachRow(rows, []any{&k.family, &k.period, &next}, func() error {
			g.base[k] = next - int64(need[k])
			return nil
		})
		return err
	})
}

// checkSeqCapacity refuses the events whose seq reached their period's
// capacity (the group then runs again without them).
func (g *group) checkSeqCapacity() error {
	over := &seqOverflow{errs: map[int]error{}}
	for i := range g.items {
		it := &g.items[i]
		if !it.applied || !it.r.TieFirst {
			continue
		}
		for _, b := range it.boards {
			if b.changed && b.next.k >= 0 {
				if s := b.next.seq(g.base); s >= it.r.SeqCapacity {
					over.items = append(over.items, i)
					over.errs[i] = fmt.Errorf("%w: period %s/%s used up its %d achievement numbers (seq_capacity)",
						ErrOutOfRange, it.ev.Family, it.ev.Period, it.r.SeqCapacity)
				}
				break
			}
		}
	}
	if len(over.items) > 0 {
		return over
	}
	return nil
}

// seqCols is a column of seqs for SQL: a concrete seq, or a place k in its
// period's range, resolved in the statement from the period_seq row this
// transaction just moved (next − need + k), so the writes share the round
// trip that takes the range.
type seqCols struct {
	fam, per     []string
	k, need, seq []int64
}

func (c *seqCols) add(r gRow, absentAsNone bool, need map[periodKey]int) {
	k, seq := int64(r.k), r.row.seq
	if absentAsNone && !r.row.present {
		k, seq = -1, -1
	}
	c.fam, c.per = append(c.fam, r.fp.family), append(c.per, r.fp.period)
	c.k, c.need, c.seq = append(c.k, k), append(c.need, int64(need[r.fp])), append(c.seq, seq)
}

// seqExpr is the SQL of a seqCols column whose arrays are aliased
// <p>fam, <p>per, <p>k, <p>need, <p>seq.
func seqExpr(p string) string {
	return `CASE WHEN ` + p + `k >= 0 THEN (SELECT s.next - ` + p + `need + ` + p + `k FROM period_seq s
		WHERE s.family = ` + p + `fam AND s.period = ` + p + `per) ELSE ` + p + `seq END`
}

// write takes the seq ranges and stores the totals the group left, what each
// event did to each board, the group's pending-projection row, and drops the
// rows of refused events, in one round trip; then fills the answers.
func (g *group) write(ctx context.Context, tx txq, cur map[totalsKey]gRow, need map[periodKey]int) error {
	b := &pgx.Batch{}
	g.queueSeqRanges(b, need)
	changed, drop, moved := g.queueEventBoards(b, need)
	if len(drop) > 0 {
		b.Queue(`DELETE FROM events WHERE event_id = ANY($1)`, drop)
	}
	queueTotals(b, cur, changed, need)
	if len(moved) > 0 {
		b.Queue(`INSERT INTO projection_pending (event_ids) VALUES ($1) RETURNING id`, moved).QueryRow(func(r pgx.Row) error {
			return r.Scan(&g.pending)
		})
	}
	found := g.queueDuplicates(b)
	if b.Len() > 0 {
		if err := tx.SendBatch(ctx, b).Close(); err != nil {
			return fmt.Errorf("ledger: writing a group of %d events: %w", len(g.items), err)
		}
	}
	return g.finish(found)
}

// finish checks the group's written batch (every duplicate found its stored
// event, no seq reached its period's capacity) and fills the answers of the
// applied events.
func (g *group) finish(found []bool) error {
	for i := range g.items {
		if it := &g.items[i]; it.result.Outcome.Duplicate && !found[i] {
			return fmt.Errorf("ledger: reading event %s: missing", it.ev.EventID)
		}
	}
	if err := g.checkSeqCapacity(); err != nil {
		return err
	}
	for i := range g.items {
		it := &g.items[i]
		if !it.inserted || !it.applied {
			continue
		}
		out := Outcome{Boards: make([]BoardTotal, len(it.boards))}
		for j, gb := range it.boards {
			out.Boards[j] = BoardTotal{Board: gb.key.board, Points: gb.next.row.points, Version: gb.next.row.version,
				Seq: gb.next.seq(g.base), Present: gb.next.row.present, Changed: gb.changed,
				Columns: gb.next.row.colsOr(), Metadata: gb.next.row.md}
		}
		it.result = GroupResult{Outcome: out}
		if out.Changed() {
			it.result.Pending = g.pending
		}
	}
	return nil
}

// queueEventBoards queues what each applied event did to each board and
// returns the totals rows the group changed, the inserted events to drop
// (refused) and those whose totals Redis must learn.
func (g *group) queueEventBoards(b *pgx.Batch, need map[periodKey]int) (changed map[totalsKey]bool, drop, moved []string) {
	changed = map[totalsKey]bool{}
	var (
		ebID, ebBoard             []string
		ebApplied, ebTotal, ebVer []int64
		ebChanged, ebPresent      []bool
		ebSeqB, ebSeqA            seqCols
		ebColsB, ebColsA          []*string
	)
	for i := range g.items {
		it := &g.items[i]
		if !it.inserted {
			continue
		}
		if !it.applied {
			drop = append(drop, it.ev.EventID)
			continue
		}
		anyChanged := false
		for _, gb := range it.boards {
			if gb.changed {
				changed[gb.key], anyChanged = true, true
			}
			ebID, ebBoard = append(ebID, it.ev.EventID), append(ebBoard, gb.key.board)
			ebApplied, ebChanged = append(ebApplied, gb.applied), append(ebChanged, gb.changed)
			ebSeqB.add(gb.cur, true, need)
			ebSeqA.add(gb.next, true, need)
			ebTotal, ebPresent, ebVer = append(ebTotal, gb.next.row.points), append(ebPresent, gb.next.row.present), append(ebVer, gb.next.row.version)
			ebColsB, ebColsA = append(ebColsB, colsText(gb.cur.row.colsOr())), append(ebColsA, colsText(gb.next.row.colsOr()))
		}
		if anyChanged {
			moved = append(moved, it.ev.EventID) // else nothing for Redis to learn
		}
	}
	if len(ebID) > 0 {
		b.Queue(`INSERT INTO event_boards (event_id, board, applied, changed, seq_before, seq_after, total_after, present_after, version_after,
				cols_before, cols_after)
			SELECT id, board, applied, changed, `+seqExpr("b")+`, `+seqExpr("a")+`, total, present, version, colsb::bigint[], colsa::bigint[]
			FROM unnest($1::text[], $2::text[], $3::bigint[], $4::boolean[], $5::bigint[], $6::boolean[], $7::bigint[],
				$8::text[], $9::text[], $10::bigint[], $11::bigint[], $12::bigint[],
				$13::text[], $14::text[], $15::bigint[], $16::bigint[], $17::bigint[], $18::text[], $19::text[])
				AS u(id, board, applied, changed, total, present, version, bfam, bper, bk, bneed, bseq, afam, aper, ak, aneed, aseq, colsb, colsa)`,
			ebID, ebBoard, ebApplied, ebChanged, ebTotal, ebPresent, ebVer,
			ebSeqB.fam, ebSeqB.per, ebSeqB.k, ebSeqB.need, ebSeqB.seq, ebSeqA.fam, ebSeqA.per, ebSeqA.k, ebSeqA.need, ebSeqA.seq, ebColsB, ebColsA)
	}
	return changed, drop, moved
}

// queueTotals queues the upsert of the totals rows the group changed (rows
// this transaction holds), in key order.
func queueTotals(b *pgx.Batch, cur map[totalsKey]gRow, changed map[totalsKey]bool, need map[periodKey]int) {
	if len(changed) == 0 {
		return
	}
	keys := make([]totalsKey, 0, len(changed))
	for k := range changed {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, totalsKey.less)
	n := len(keys)
	bs, ms := make([]string, n), make([]string, n)
	pts, vers, lives := make([]int64, n), make([]int64, n), make([]int64, n)
	pres := make([]bool, n)
	cols, mds := make([]*string, n), make([]string, n)
	var seqs seqCols
	for i, k := range keys {
		r := cur[k]
		bs[i], ms[i] = k.board, k.member
		pts[i], vers[i], lives[i], pres[i] = r.row.points, r.row.version, r.row.live, r.row.present
		cols[i], mds[i] = colsText(r.row.colsOr()), r.row.md
		seqs.add(r, false, need)
	}
	// An upsert: one index probe per row whatever the size of the table (an
	// UPDATE … FROM may be planned as a join over the whole table).
	b.Queue(`INSERT INTO totals AS t (family, period, board, member, points, version, seq, present, live, columns, metadata)
		SELECT sfam, sper, board, member, points, version, `+seqExpr("s")+`, present, live, cols::bigint[], md
		FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::bigint[], $7::boolean[], $8::bigint[],
			$9::bigint[], $10::bigint[], $11::bigint[], $12::text[], $13::text[])
			AS u(sfam, sper, board, member, points, version, present, live, sk, sneed, sseq, cols, md)
		ON CONFLICT (family, period, board, member) DO UPDATE SET points = EXCLUDED.points, version = EXCLUDED.version,
			seq = EXCLUDED.seq, present = EXCLUDED.present, live = EXCLUDED.live, columns = EXCLUDED.columns,
			metadata = EXCLUDED.metadata, updated_at = now()`,
		seqs.fam, seqs.per, bs, ms, pts, vers, pres, lives, seqs.k, seqs.need, seqs.seq, cols, mds)
}

package ledger

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

// errLockingPath sends a group back to the locking path (group.run): the
// delta path found an event it cannot decide without the locked totals (a
// total that would leave the range, an int64 overflow).
var errLockingPath = errors.New("ledger: the group needs the locking path")

// A group of sum-family awards and corrections takes the delta path: every
// such event adds its delta, so what it does to a board is known before the
// board's totals row is read, relative to it (points after = points before
// the group + the deltas up to it; version + its place among the group's
// events on that row; its seq from the period's range). The totals rows are
// then locked in the group's last round trip, not its first, and the
// database applies the deltas: the hot rows (a popular member's totals, the
// period's seq row) are held for one round trip and the COMMIT instead of
// two round trips, the computation in between and the COMMIT, so groups
// touching the same members overlap more (issue 10).
//
// The answers are exactly the locking path's: the statement that writes
// event_boards reads the locked rows and returns what each event left; when
// one of them is out of range (the locking path would refuse that event
// alone and compute its successors without it) or a sum overflows, the
// transaction is rolled back and the group runs again on the locking path.
//
// Round trips: (1) BEGIN, the event rows, the period rows (shared), then,
// written as if every event were new and every period open
// (runSumOneTrip), the totals rows inserted when missing, else locked, in
// key order; the seq ranges; event_boards computed from the locked rows; the
// totals updated by the deltas; the pending-projection row; the answers of
// duplicates; (2) COMMIT. When the assumption did not hold, the group is
// rolled back and runs again with the second part in a round trip of its
// own, decided from the inserted rows. The lock order is the locking path's.
func (g *group) runSum(ctx context.Context, tx txq) error {
	firstOf, ids := g.reset()
	var periods []periodKey
	seenP := map[periodKey]bool{}
	for _, i := range firstOf {
		it := &g.items[i]
		if pk := (periodKey{it.ev.Family, it.ev.Period}); !seenP[pk] {
			seenP[pk] = true
			periods = append(periods, pk)
		}
	}
	b := &pgx.Batch{}
	inserted, err := g.queueInsertEvents(b, ids, firstOf)
	if err != nil {
		return err
	}
	states := queueLockPeriods(b, periods)
	if g.oneTrip {
		return g.runSumOneTrip(ctx, tx, b, ids, periods, inserted, states)
	}
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return fmt.Errorf("ledger: inserting %d events and locking %d periods: %w", len(ids), len(periods), err)
	}
	if err := checkPeriods(periods, states); err != nil {
		return err
	}
	if err := g.settle(inserted, states, nil); err != nil {
		return err
	}
	b = &pgx.Batch{}
	after, found, err := g.queueSum(b)
	if err != nil {
		return err
	}
	if err := sumBatchErr(tx.SendBatch(ctx, b).Close(), len(g.items)); err != nil {
		return err
	}
	if err := g.fillSum(after); err != nil {
		return err
	}
	return g.finish(found)
}

// errTwoTrips sends a group from the one round trip delta path back to the
// delta path's two (see runSumOneTrip).
var errTwoTrips = errors.New("ledger: the group needs the delta path's two round trips")

// runSumOneTrip is the delta path in one round trip before the COMMIT: the
// group is written as if every event were new and every period open (the
// usual case), in the same batch as the event and period rows; the batch's
// own results then tell whether that held. When it did not (a duplicate of
// a recorded event, a concurrent writer of the same id, a period not open),
// the transaction is rolled back and the group runs again on the two round
// trips, which decide from the inserted rows. The statements and the lock
// order are the two round trips' (the seq range lock is still held to
// COMMIT).
func (g *group) runSumOneTrip(ctx context.Context, tx txq, b *pgx.Batch, ids []string, periods []periodKey,
	inserted map[string]bool, states map[periodKey]string) error {
	assumed, open := make(map[string]bool, len(ids)), make(map[periodKey]string, len(periods))
	for _, id := range ids {
		assumed[id] = true
	}
	for _, p := range periods {
		open[p] = StateOpen
	}
	if err := g.settle(assumed, open, nil); err != nil {
		return err
	}
	after, found, err := g.queueSum(b)
	if err != nil {
		return err
	}
	berr := tx.SendBatch(ctx, b).Close()
	// The assumption is checked first, once the event and period rows are
	// in (every period answered: the statements before ran): a write on a
	// wrong one may have failed the batch (an event_boards row of a
	// recorded event).
	if len(states) == len(periods) {
		for _, id := range ids {
			if !inserted[id] {
				return fmt.Errorf("%w: event %s already recorded", errTwoTrips, id)
			}
		}
		for _, p := range periods {
			if st := states[p]; st != StateOpen {
				return fmt.Errorf("%w: %s/%s is %s", errTwoTrips, p.family, p.period, st)
			}
		}
	}
	if berr == nil {
		berr = checkPeriods(periods, states)
	}
	if err := sumBatchErr(berr, len(g.items)); err != nil {
		return err
	}
	if err := g.fillSum(after); err != nil {
		return err
	}
	return g.finish(found)
}

func checkPeriods(periods []periodKey, states map[periodKey]string) error {
	for _, p := range periods {
		if _, ok := states[p]; !ok {
			return fmt.Errorf("ledger: period %s/%s missing after insert", p.family, p.period)
		}
	}
	return nil
}

// sumBatchErr is the error of a delta-path group's writing batch: an int64
// overflow sends the group to the locking path.
func sumBatchErr(err error, n int) error {
	if err == nil {
		return nil
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == "22003" { // numeric_value_out_of_range: a sum overflowed
		return fmt.Errorf("%w: %v", errLockingPath, err)
	}
	return fmt.Errorf("ledger: writing a group of %d events: %w", n, err)
}

// queueSum queues a delta-path group's writes once its items are settled:
// the totals rows inserted or locked, the seq ranges, the totals and
// event_boards (one statement), the refused events' rows deleted, the
// pending-projection row and the answers of duplicates.
func (g *group) queueSum(b *pgx.Batch) (map[ebKey]ebAfter, []bool, error) {
	p, err := g.planSum()
	if err != nil {
		return nil, nil, err
	}
	queueInsertOrLock(b, p.keys, "")
	g.queueSeqRanges(b, p.need)
	after := p.queueWrite(b)
	var drop, moved []string
	for i := range g.items {
		switch it := &g.items[i]; {
		case it.inserted && !it.applied:
			drop = append(drop, it.ev.EventID) // refused (period not open)
		case it.applied:
			moved = append(moved, it.ev.EventID)
		}
	}
	if len(drop) > 0 {
		b.Queue(`DELETE FROM events WHERE event_id = ANY($1)`, drop)
	}
	if len(moved) > 0 {
		b.Queue(`INSERT INTO projection_pending (event_ids) VALUES ($1) RETURNING id`, moved).QueryRow(func(r pgx.Row) error {
			return r.Scan(&g.pending)
		})
	}
	return after, g.queueDuplicates(b), nil
}

// sumPlan is what the events of a delta-path group do to their totals rows,
// relative to the rows: one entry per (event, board) in the group's order,
// and one per row.
type sumPlan struct {
	need map[periodKey]int
	keys []totalsKey // the rows, in key order (the order they are locked in)
	rows map[totalsKey]*sumRow

	// Per (event, board): the event's id, the row, the delta, the sum of the
	// deltas on the row up to and including it, its place on the row (1…),
	// its k in the period's range (−1: no tie seq, seq 0) and the previous
	// event's on the row (−2: the first of the group on the row).
	id, fam, per, board, member []string
	d, sum, n, k, kPrev         []int64
}

// sumRow is one totals row of a delta-path group: what the group adds.
type sumRow struct {
	sum, n int64
	k      int64  // the k of the row's last event (−1: none; −2: no event yet)
	md     string // the metadata of the row's last event: every sum event sets it
}

// planSum places every applied event of a delta-path group: its k in its
// period's range (tie first) and its place on each of its rows.
func (g *group) planSum() (*sumPlan, error) {
	p := &sumPlan{need: map[periodKey]int{}, rows: map[totalsKey]*sumRow{}}
	for i := range g.items {
		it := &g.items[i]
		if !it.inserted || it.result.Err != nil {
			continue
		}
		pk := periodKey{it.ev.Family, it.ev.Period}
		k := int64(-1)
		if it.r.TieFirst {
			k = int64(p.need[pk])
			p.need[pk]++
		}
		d := *it.ev.Delta
		it.boards = make([]groupBoard, len(it.ev.Boards))
		for j, bd := range it.ev.Boards {
			key := totalsKey{it.ev.Family, it.ev.Period, bd, it.ev.Member}
			r := p.rows[key]
			if r == nil {
				r = &sumRow{k: -2}
				p.rows[key] = r
				p.keys = append(p.keys, key)
			}
			sum, ok := addInt(r.sum, d)
			if !ok {
				return nil, fmt.Errorf("%w: the deltas on %s/%s/%s of %s overflow", errLockingPath, key.family, key.period, key.board, key.member)
			}
			p.id, p.fam, p.per, p.board, p.member = append(p.id, it.ev.EventID), append(p.fam, key.family),
				append(p.per, key.period), append(p.board, bd), append(p.member, key.member)
			p.d, p.sum, p.n, p.k, p.kPrev = append(p.d, d), append(p.sum, sum), append(p.n, r.n+1), append(p.k, k), append(p.kPrev, r.k)
			r.sum, r.n, r.k, r.md = sum, r.n+1, k, it.ev.Metadata
			it.boards[j] = groupBoard{key: key, changed: true, applied: d}
		}
		it.applied = true
	}
	slices.SortFunc(p.keys, totalsKey.less)
	return p, nil
}

// ebAfter is what one event left on one board, as event_boards stored it.
type ebAfter struct {
	total, version, seq int64
}

type ebKey struct{ id, board string }

// queueWrite queues the plan's writes as one statement, once the rows are
// locked (earlier in the batch) and the seq ranges taken (the statement just
// before): the totals rows moved by what the group adds, and the
// event_boards rows in the group's order (their ord, the history's order,
// is taken as they are inserted), computed from the rows as they were
// before the statement — every part of one statement reads the same
// snapshot — and the periods' seq rows. Each totals row is read once by the
// statement (one index lookup per row, not one per event and board; with the
// insert-or-lock before and the upsert's conflict check, three per row and
// group) and each period's seq
// row once (not once per event_boards and totals row: a row every group
// updates, whose dead versions each lookup walks); the event_boards rows
// find them by position in two one-row arrays, so no join is planned. Once
// the batch ran, the map holds what each event left.
func (p *sumPlan) queueWrite(b *pgx.Batch) map[ebKey]ebAfter {
	out := make(map[ebKey]ebAfter, len(p.id))
	if len(p.keys) == 0 {
		return out
	}
	// The periods and the rows (in key order), by position (1…).
	pi := map[periodKey]int64{}
	var pfam, pper []string
	var pneed []int64
	ri := make(map[totalsKey]int64, len(p.keys))
	n := len(p.keys)
	rpi, sums, ns, ks := make([]int64, n), make([]int64, n), make([]int64, n), make([]int64, n)
	bs, ms, mds := make([]string, n), make([]string, n), make([]string, n)
	for i, key := range p.keys {
		pk := periodKey{key.family, key.period}
		if _, ok := pi[pk]; !ok {
			pi[pk] = int64(len(pfam) + 1)
			pfam, pper, pneed = append(pfam, key.family), append(pper, key.period), append(pneed, int64(p.need[pk]))
		}
		ri[key] = int64(i + 1)
		r := p.rows[key]
		rpi[i], bs[i], ms[i], sums[i], ns[i], ks[i], mds[i] = pi[pk], key.board, key.member, r.sum, r.n, r.k, r.md
	}
	eri := make([]int64, len(p.id))
	for i := range p.id {
		eri[i] = ri[totalsKey{p.fam[i], p.per[i], p.board[i], p.member[i]}]
	}
	// seq of a k on row index x: −1 → 0 (no tie seq), else the range's
	// start + k.
	seq := func(k, x string) string {
		return `CASE WHEN ` + k + ` = -1 THEN 0 ELSE s.next[($3::bigint[])[` + x + `]] - ($4::bigint[])[($3::bigint[])[` + x + `]] + ` + k + ` END`
	}
	var k ebKey
	var a ebAfter
	// The upsert is the update (every row exists and is locked): the deltas
	// added to the points (0 when absent), the version and live moved by
	// the row's events, the seq of its last one.
	b.Queue(`WITH s AS (
			SELECT array_agg(s.next ORDER BY q.i) AS next
			FROM unnest($1::text[], $2::text[]) WITH ORDINALITY AS q(fam, per, i)
			LEFT JOIN LATERAL (SELECT next FROM period_seq s WHERE s.family = q.fam AND s.period = q.per) AS s ON true
		), r AS (
			SELECT array_agg(CASE WHEN t.present THEN t.points ELSE 0 END ORDER BY q.i) AS points,
				array_agg(t.version ORDER BY q.i) AS version,
				array_agg(CASE WHEN t.present THEN t.seq ELSE -1 END ORDER BY q.i) AS seq
			FROM unnest($3::bigint[], $5::text[], $6::text[]) WITH ORDINALITY AS q(p, board, member, i)
			LEFT JOIN LATERAL (SELECT points, version, seq, present FROM totals t WHERE t.family = ($1::text[])[q.p]
				AND t.period = ($2::text[])[q.p] AND t.board = q.board AND t.member = q.member) AS t ON true
		), up AS (
			INSERT INTO totals AS t (family, period, board, member, points, version, seq, present, live, metadata)
			SELECT ($1::text[])[u.p], ($2::text[])[u.p], u.board, u.member, u.sum, u.n, `+seq("u.k", "u.i")+`, true, u.n, u.md
			FROM unnest($3::bigint[], $5::text[], $6::text[], $7::bigint[], $8::bigint[], $9::bigint[], $10::text[]) WITH ORDINALITY
				AS u(p, board, member, sum, n, k, md, i)
			CROSS JOIN s
			ON CONFLICT (family, period, board, member) DO UPDATE SET
				points = (CASE WHEN t.present THEN t.points ELSE 0 END) + EXCLUDED.points, version = t.version + EXCLUDED.version,
				seq = EXCLUDED.seq, present = true, live = t.live + EXCLUDED.live, metadata = EXCLUDED.metadata, updated_at = now()
		)
		INSERT INTO event_boards (event_id, board, applied, changed, seq_before, seq_after, total_after, present_after, version_after)
		SELECT u.id, ($5::text[])[u.r], u.d, true,
			CASE WHEN u.kprev = -2 THEN r.seq[u.r] ELSE `+seq("u.kprev", "u.r")+` END,
			`+seq("u.k", "u.r")+`,
			r.points[u.r] + u.sum, true, r.version[u.r] + u.n
		FROM unnest($11::text[], $12::bigint[], $13::bigint[], $14::bigint[], $15::bigint[], $16::bigint[], $17::bigint[]) WITH ORDINALITY
			AS u(id, r, d, sum, n, k, kprev, o)
		CROSS JOIN r CROSS JOIN s
		ORDER BY u.o
		RETURNING event_id, board, total_after, version_after, seq_after`,
		pfam, pper, rpi, pneed, bs, ms, sums, ns, ks, mds,
		p.id, eri, p.d, p.sum, p.n, p.k, p.kPrev).Query(func(rows pgx.Rows) error {
		_, err := pgx.ForEachRow(rows, []any{&k.id, &k.board, &a.total, &a.version, &a.seq}, func() error {
			out[k] = a
			return nil
		})
		return err
	})
	return out
}

// fillSum fills the boards of the applied events from what event_boards
// stored; a total out of range sends the group to the locking path.
func (g *group) fillSum(after map[ebKey]ebAfter) error {
	for i := range g.items {
		it := &g.items[i]
		if !it.applied {
			continue
		}
		pk := periodKey{it.ev.Family, it.ev.Period}
		for j := range it.boards {
			gb := &it.boards[j]
			a, ok := after[ebKey{it.ev.EventID, gb.key.board}]
			if !ok {
				return fmt.Errorf("ledger: event %s on %s: no event_boards row written", it.ev.EventID, gb.key.board)
			}
			if a.total > it.r.MaxPoints || a.total < -it.r.MaxPoints {
				return fmt.Errorf("%w: event %s on %s: points %d would leave ±%d", errLockingPath, it.ev.EventID, gb.key.board, a.total, it.r.MaxPoints)
			}
			k := -1
			if it.r.TieFirst {
				k = int(a.seq - g.base[pk])
			}
			gb.cur = gRow{row: totalsRow{points: a.total - gb.applied}, k: -1, fp: pk}
			gb.next = gRow{row: totalsRow{points: a.total, version: a.version, seq: a.seq, present: true, md: it.ev.Metadata}, k: k, fp: pk}
		}
	}
	return nil
}

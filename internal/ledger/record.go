package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// Record commits one award, correction or reversal and the member's new
// totals on each of its boards, in one transaction. Lock order (the same in
// every writer, so writers never deadlock): the original's event row
// (reversals), the event id, the period row (shared), the member's totals rows
// in board order, the period's seq row.
//
//   - The event id is unique: a replay (also one racing the first attempt)
//     answers Duplicate with the current totals and changes nothing.
//   - A period that is not open refuses with ErrPeriodClosed: nothing is kept,
//     the caller keeps the event for review.
//   - award/correction, sum: points += delta, a new seq, version + 1.
//   - award/correction, max/min: only an improvement (max: higher, min: lower)
//     sets points = value, a new seq, version + 1; otherwise the board answers
//     Changed=false and only the event is recorded.
//   - reversal, sum: subtracts exactly what the original added, with the seq
//     rules of store/scripts/reverse.lua: the member's only live change undone
//     and points back at 0 → off the board; the original still the member's
//     latest change and it had a seq before → that seq back; else a new seq.
//   - reversal, max/min: the best of the member's remaining events (version + 1);
//     off the board when none remain. Seq: unchanged when the best stands and
//     the original was not its source; else the seq of the remaining event
//     that first reached the best by improving; else a new seq.
//   - A reversal applies to the boards of the original (those of ev.Boards
//     when it names some) in the original's period, and answers those boards.
//     Of an already reversed event it answers Duplicate and keeps nothing; of
//     an unknown event (or another member's, family's or period's)
//     ErrUnknownEvent; of a reversal or a projection ErrNotReversible.
//   - |points| > MaxPoints on any board, or a seq ≥ SeqCapacity under
//     TieFirst, refuses the whole event with ErrOutOfRange.
//
// Under TieFirst one achievement seq is taken per event from period_seq (the
// first is 1), only when a board needs a new one; the row lock is held to
// commit, so seqs follow commit order. Under tie member no seq is taken and
// present members carry seq 0.
//
// Outcome.Boards follow ev.Boards, in its order (a reversal that names no
// boards: the original's, in board order; a board the original never touched
// answers its current totals, unchanged).
//
// An award or correction is a group of one (RecordGroup): one code path for
// both.
func (l *Ledger) Record(ctx context.Context, ev Event, r Rules) (Outcome, error) {
	if ev.Kind == KindAward || ev.Kind == KindCorrection || (ev.Kind == "" && ev.Reverses == "") {
		res, err := l.RecordGroup(ctx, []GroupEvent{{Event: ev, Rules: r}})
		if err != nil {
			return Outcome{}, err
		}
		return res[0].Outcome, res[0].Err
	}
	return l.write(ctx, ev, r, false)
}

// Project commits an absolute total from an upstream ledger (kind projection,
// Value = total, Version > 0) on each board of ev. A board changes only when
// Version is greater than its stored version (the stored version becomes
// Version); an older or equal one answers Changed=false with the current
// totals. A new seq is taken only when the points change. An empty EventID
// becomes "projection:<family>/<period>/<member>@<version>".
func (l *Ledger) Project(ctx context.Context, ev Event, r Rules) (Outcome, error) {
	return l.write(ctx, ev, r, true)
}

func (l *Ledger) write(ctx context.Context, ev Event, r Rules, projection bool) (Outcome, error) {
	r, err := r.check()
	if err == nil {
		ev, err = normalize(ev, r, projection)
	}
	var (
		out Outcome
		w   *writer
	)
	if err == nil {
		err = l.inTx(ctx, "record", ev.EventID, func(tx pgx.Tx) error {
			if err := planLikeGroups(ctx, tx); err != nil {
				return err
			}
			w = &writer{tx: tx, ev: ev, r: r}
			var err error
			out, err = w.run(ctx)
			return err
		})
	}
	kind := ev.Kind
	switch kind {
	case KindAward, KindCorrection, KindReversal, KindProjection:
	default:
		kind = "invalid" // bounded label values
	}
	l.m.writes.WithLabelValues(kind, outcomeLabel(err, out, projection)).Inc()
	if err != nil {
		return Outcome{}, err
	}
	if !out.Duplicate && l.log.Enabled(ctx, slog.LevelDebug) {
		for _, st := range w.states {
			l.log.Debug("ledger write", "family", w.ev.Family, "period", w.ev.Period, "board", st.board,
				"member", w.ev.Member, "event_id", w.ev.EventID, "kind", w.ev.Kind, "applied", st.applied,
				"points_before", st.cur.points, "points_after", st.next.points, "present", st.next.present,
				"version", st.next.version, "seq", st.next.seq, "changed", st.changed, "rules_version", w.ev.RulesVersion)
		}
	}
	return out, nil
}

func outcomeLabel(err error, out Outcome, projection bool) string {
	switch {
	case err == nil && out.Duplicate:
		return "duplicate"
	case err == nil && out.Changed():
		return "applied"
	case err == nil && projection:
		return "stale"
	case err == nil:
		return "unchanged"
	case errors.Is(err, ErrPeriodClosed):
		return "period_closed"
	case errors.Is(err, ErrOutOfRange):
		return "out_of_range"
	case errors.Is(err, ErrUnknownEvent):
		return "unknown_event"
	case errors.Is(err, ErrNotReversible):
		return "not_reversible"
	case errors.Is(err, ErrInvalid):
		return "invalid"
	default:
		return "error"
	}
}

// normalize checks ev against its kind and fills defaults.
func normalize(ev Event, r Rules, projection bool) (Event, error) {
	bad := func(format string, args ...any) (Event, error) {
		return ev, fmt.Errorf("%w: event %q: %s", ErrInvalid, ev.EventID, fmt.Sprintf(format, args...))
	}
	if ev.Kind == "" {
		switch {
		case projection:
			ev.Kind = KindProjection
		case ev.Reverses != "":
			ev.Kind = KindReversal
		default:
			ev.Kind = KindAward
		}
	}
	if ev.Family == "" || ev.Member == "" {
		return bad("family and member are required")
	}
	switch {
	case projection && ev.Kind != KindProjection:
		return bad("Project takes kind projection, not %q", ev.Kind)
	case !projection && ev.Kind == KindProjection:
		return bad("projections go through Project")
	}
	switch ev.Kind {
	case KindProjection:
		if ev.Value == nil || ev.Delta != nil || ev.Reverses != "" {
			return bad("a projection carries value (the total) only")
		}
		if ev.Version <= 0 {
			return bad("a projection needs a version > 0")
		}
		if ev.EventID == "" {
			ev.EventID = fmt.Sprintf("projection:%s/%s/%s@%d", ev.Family, ev.Period, ev.Member, ev.Version)
		}
	case KindAward, KindCorrection:
		if ev.Reverses != "" {
			return bad("an %s does not reverse; send kind reversal", ev.Kind)
		}
		if r.Aggregate == "sum" && (ev.Delta == nil || ev.Value != nil) {
			return bad("a sum family takes delta, not value")
		}
		if r.Aggregate != "sum" && (ev.Value == nil || ev.Delta != nil) {
			return bad("a %s family takes value, not delta", r.Aggregate)
		}
		if ev.Kind == KindCorrection && ev.Operator == "" {
			return bad("a correction names its operator")
		}
	case KindReversal:
		if ev.Reverses == "" || ev.Reverses == ev.EventID {
			return bad("a reversal names another event in reverses")
		}
		if ev.Delta != nil || ev.Value != nil {
			return bad("a reversal carries no delta or value")
		}
	default:
		return bad("unknown kind %q", ev.Kind)
	}
	if ev.EventID == "" {
		return bad("event_id is required")
	}
	if err := checkEventCols(ev, r, ev.Kind != KindReversal); err != nil {
		return ev, err
	}
	if ev.Period == "" && ev.Kind != KindReversal {
		return bad("period is required")
	}
	if len(ev.Boards) == 0 && ev.Kind != KindReversal {
		return bad("boards are required")
	}
	if !distinctBoards(ev.Boards) {
		return bad("boards must be distinct and non-empty")
	}
	return withTimes(ev), nil
}

// distinctBoards reports whether boards are non-empty and distinct (every
// kind of event names each board once).
func distinctBoards(boards []string) bool {
	seen := make(map[string]bool, len(boards))
	for _, b := range boards {
		if b == "" || seen[b] {
			return false
		}
		seen[b] = true
	}
	return true
}

// withTimes fills a missing receive time with now and a missing occurrence
// time with the receive time.
func withTimes(ev Event) Event {
	if ev.ReceivedAt.IsZero() {
		ev.ReceivedAt = time.Now()
	}
	if ev.OccurredAt.IsZero() {
		ev.OccurredAt = ev.ReceivedAt
	}
	return ev
}

// totalsRow is a member's totals row on one board.
type totalsRow struct {
	points, version, seq, live int64
	present                    bool
	cols                       []int64 // sort columns (nil: absent, or no columns)
	md                         string  // metadata of the change that set the standing
}

// colsOr returns the row's columns when present, else nil (absent).
func (t totalsRow) colsOr() []int64 {
	if t.present {
		return t.cols
	}
	return nil
}

// seqOr returns the row's seq when present, else −1 (absent).
func (t totalsRow) seqOr() int64 {
	if t.present {
		return t.seq
	}
	return -1
}

// origBoard is what the original of a reversal did to one board.
type origBoard struct {
	ord                   int64 // event_boards.ord (0: recorded before it existed)
	applied               int64
	changed               bool
	seqBefore, seqAfter   int64
	totalAfter            int64
	colsBefore, colsAfter []int64 // nil: absent (or no columns)
}

// boardState is one board of the event being written.
type boardState struct {
	board   string
	cur     totalsRow // locked, before
	next    totalsRow // after
	changed bool
	applied int64
	newSeq  bool // next.seq is the event's seq, assigned once taken
}

type writer struct {
	tx     txq
	ev     Event
	r      Rules
	states []*boardState
}

func (w *writer) run(ctx context.Context) (Outcome, error) {
	switch w.ev.Kind {
	case KindReversal:
		return w.reverse(ctx)
	case KindProjection:
		return w.apply(ctx, w.project)
	default:
		return w.apply(ctx, w.award)
	}
}

// apply is the write path of awards, corrections and projections.
func (w *writer) apply(ctx context.Context, compute func(*boardState) error) (Outcome, error) {
	ok, err := w.insertEvent(ctx)
	if err != nil || !ok {
		return w.duplicateOr(ctx, err)
	}
	if err := w.checkOpen(ctx); err != nil {
		return Outcome{}, err
	}
	if err := w.lockTotals(ctx, w.ev.Boards); err != nil {
		return Outcome{}, err
	}
	for _, st := range w.states {
		if err := compute(st); err != nil {
			return Outcome{}, err
		}
	}
	return w.finish(ctx, "")
}

// award computes one board of an award or correction.
func (w *writer) award(st *boardState) error {
	cur := st.cur
	before := int64(0)
	if cur.present {
		before = cur.points
	}
	var p int64
	var cols []int64
	switch w.r.Aggregate {
	case "sum":
		var ok bool
		if p, ok = addInt(before, *w.ev.Delta); !ok {
			return w.outOfRange(st.board, "points overflow")
		}
		cols = combineCols(w.r.Columns, cur.colsOr(), w.ev.Columns)
	case "max", "min":
		// The whole tuple (points, columns…) is compared; the best is kept.
		v := *w.ev.Value
		improved := !cur.present || (w.r.Aggregate == "max" && v > cur.points) || (w.r.Aggregate == "min" && v < cur.points) ||
			(v == cur.points && len(w.r.Columns) > 0 && cmpCols(w.r.Columns, w.ev.Columns, cur.cols) > 0)
		if !improved {
			st.next = cur
			return nil
		}
		p, cols = v, w.ev.Columns
	}
	if err := w.checkPoints(st.board, p); err != nil {
		return err
	}
	if err := w.checkCols(st.board, cols); err != nil {
		return err
	}
	st.next = totalsRow{points: p, version: cur.version + 1, present: true, live: cur.live + 1, cols: cols, md: w.ev.Metadata}
	st.changed, st.newSeq, st.applied = true, true, p-before
	return nil
}

// checkCols refuses columns outside their ranges (a sum column can outgrow
// its max).
func (w *writer) checkCols(board string, cols []int64) error {
	if cols == nil {
		return nil
	}
	if msg := colsInRange(w.r.Columns, cols); msg != "" {
		return w.outOfRange(board, msg)
	}
	return nil
}

// project computes one board of a projection.
func (w *writer) project(st *boardState) error {
	cur, v := st.cur, *w.ev.Value
	if w.ev.Version <= cur.version {
		st.next = cur
		return nil
	}
	if err := w.checkPoints(st.board, v); err != nil {
		return err
	}
	st.next = totalsRow{points: v, version: w.ev.Version, present: true, live: cur.live, seq: cur.seq,
		cols: w.ev.Columns, md: w.ev.Metadata}
	st.changed = true
	st.newSeq = !(cur.present && cur.points == v && slices.Equal(cur.cols, w.ev.Columns))
	if cur.present {
		st.applied = v - cur.points
	} else {
		st.applied = v
	}
	return nil
}

// reverse is the write path of reversals.
func (w *writer) reverse(ctx context.Context) (Outcome, error) {
	ev := &w.ev
	var kind, family, period, member string
	var reversedBy *string
	err := w.tx.QueryRow(ctx, `SELECT kind, family, period, member, reversed_by FROM events WHERE event_id = $1 FOR NO KEY UPDATE`,
		ev.Reverses).Scan(&kind, &family, &period, &member, &reversedBy)
	switch {
	case errors.Is(err, pgx.ErrNoRows):
		return Outcome{}, fmt.Errorf("%w: %s", ErrUnknownEvent, ev.Reverses)
	case err != nil:
		return Outcome{}, fmt.Errorf("ledger: reading event %s: %w", ev.Reverses, err)
	case family != ev.Family || member != ev.Member || (ev.Period != "" && ev.Period != period):
		return Outcome{}, fmt.Errorf("%w: %s is not an event of %s in %s/%s", ErrUnknownEvent, ev.Reverses, ev.Member, ev.Family, ev.Period)
	case kind == KindReversal || kind == KindProjection:
		return Outcome{}, fmt.Errorf("%w: %s is a %s", ErrNotReversible, ev.Reverses, kind)
	}
	ev.Period = period

	ok, err := w.insertEvent(ctx)
	if err != nil || !ok {
		return w.duplicateOr(ctx, err)
	}
	if err := w.checkOpen(ctx); err != nil {
		return Outcome{}, err
	}
	orig, origBoards, err := readOrigBoards(ctx, w.tx, ev.Reverses)
	if err != nil {
		return Outcome{}, err
	}
	// The answer covers the boards named (all of the original's when none
	// are); the reversal applies to those the original touched.
	named := ev.Boards
	if len(named) == 0 {
		named = origBoards
	}
	var boards, unknown []string
	for _, b := range named {
		if _, ok := orig[b]; ok {
			boards = append(boards, b)
		} else {
			unknown = append(unknown, b)
		}
	}
	if len(boards) == 0 {
		return Outcome{}, fmt.Errorf("%w: %s is unknown on every board named", ErrUnknownEvent, ev.Reverses)
	}
	ev.Boards = boards
	if reversedBy != nil {
		// Already reversed (by another reversal): keep nothing, answer the
		// current totals.
		cur, err := currentTotals(ctx, w.tx, ev.Family, ev.Period, ev.Member, named)
		if err != nil {
			return Outcome{}, err
		}
		return Outcome{Duplicate: true, Boards: cur}, errRollback
	}
	if err := w.lockTotals(ctx, boards); err != nil {
		return Outcome{}, err
	}
	floors, err := w.removalFloors(ctx)
	if err != nil {
		return Outcome{}, err
	}
	for _, st := range w.states {
		var err error
		switch {
		case floors[st.board] > orig[st.board].ord:
			// A removal after the original wiped what it did: nothing to undo
			// on this board (the member started afresh).
			st.next, st.changed, st.applied = st.cur, false, 0
		case w.r.Aggregate == "sum":
			err = w.reverseSum(st, orig[st.board])
		default:
			err = w.reverseBest(ctx, st, orig[st.board], floors[st.board])
		}
		if err != nil {
			return Outcome{}, err
		}
	}
	out, err := w.finish(ctx, ev.Reverses)
	if err != nil || len(unknown) == 0 {
		return out, err
	}
	return w.withUntouched(ctx, out, named, unknown)
}

// readOrigBoards reads what the original of a reversal did to each board, and
// its boards in order.
func readOrigBoards(ctx context.Context, q querier, id string) (map[string]origBoard, []string, error) {
	rows, err := q.Query(ctx, `SELECT board, applied, changed, seq_before, seq_after, total_after, coalesce(ord, 0), cols_before, cols_after
		FROM event_boards WHERE event_id = $1 ORDER BY board`, id)
	if err != nil {
		return nil, nil, err
	}
	orig := map[string]origBoard{}
	var boards []string
	var b string
	var o origBoard
	_, err = pgx.ForEachRow(rows, []any{&b, &o.applied, &o.changed, &o.seqBefore, &o.seqAfter, &o.totalAfter, &o.ord, &o.colsBefore, &o.colsAfter}, func() error {
		o.colsBefore, o.colsAfter = slices.Clone(o.colsBefore), slices.Clone(o.colsAfter)
		orig[b] = o
		boards = append(boards, b)
		return nil
	})
	if err != nil {
		return nil, nil, fmt.Errorf("ledger: reading the boards of %s: %w", id, err)
	}
	return orig, boards, nil
}

// withUntouched adds to a reversal's outcome the boards named that the
// original never touched (their current totals, unchanged), every board in
// the order named.
func (w *writer) withUntouched(ctx context.Context, out Outcome, named, unknown []string) (Outcome, error) {
	cur, err := currentTotals(ctx, w.tx, w.ev.Family, w.ev.Period, w.ev.Member, unknown)
	if err != nil {
		return Outcome{}, err
	}
	byBoard := make(map[string]BoardTotal, len(named))
	for _, b := range append(out.Boards, cur...) {
		byBoard[b.Board] = b
	}
	out.Boards = out.Boards[:0:0]
	for _, b := range named {
		out.Boards = append(out.Boards, byBoard[b])
	}
	return out, nil
}

// reverseSum undoes a sum event on one board, as reverse.lua does.
func (w *writer) reverseSum(st *boardState, o origBoard) error {
	cur := st.cur
	p, ok := subInt(cur.points, o.applied)
	if !ok {
		return w.outOfRange(st.board, "points overflow")
	}
	if err := w.checkPoints(st.board, p); err != nil {
		return err
	}
	next := totalsRow{points: p, version: cur.version + 1, present: true, live: max(cur.live-1, 0),
		cols: reverseCols(w.r.Columns, cur.colsOr(), o.colsBefore, o.colsAfter), md: cur.md}
	if !cur.present {
		next.md = ""
	}
	latest := !w.r.TieFirst || (cur.present && cur.seq == o.seqAfter)
	gone := cur.live <= 1 && p == 0
	if !gone {
		if err := w.checkCols(st.board, next.cols); err != nil {
			return err
		}
	}
	switch {
	case gone:
		// The member's only live change undone: off the board, as if it never happened.
		next.present, next.seq, next.points, next.cols, next.md = false, -1, 0, nil, ""
	case !w.r.TieFirst:
		next.seq = 0
	case latest && o.seqBefore >= 0:
		next.seq = o.seqBefore
	default:
		st.newSeq = true
	}
	st.next, st.changed, st.applied = next, true, -o.applied
	if !next.present {
		st.applied = -cur.points
	}
	return nil
}

// reverseBest undoes a max/min event on one board: the best of the member's
// remaining events.
// Events from before the member's latest removal there (ord ≤ floor) no
// longer count.
func (w *writer) reverseBest(ctx context.Context, st *boardState, o origBoard, floor int64) error {
	best, found, err := w.bestRemaining(ctx, st.board, floor)
	if err != nil {
		return err
	}
	cur := st.cur
	live := cur.live
	if o.changed {
		live = max(live-1, 0)
	}
	next := totalsRow{version: cur.version + 1, live: live}
	if !found {
		next.seq = -1
		st.applied = -cur.points
		if !cur.present {
			st.applied = 0
		}
	} else {
		if err := w.checkPoints(st.board, best.value); err != nil {
			return err
		}
		next.points, next.present, next.cols, next.md = best.value, true, best.cols, best.md
		origIsSource := o.changed && cur.present && cur.seq == o.seqAfter && cur.points == o.totalAfter &&
			slices.Equal(cur.cols, o.colsAfter)
		switch {
		case cur.present && best.value == cur.points && slices.Equal(best.cols, cur.cols) && !origIsSource:
			next.seq, next.md = cur.seq, cur.md // the best stands, reached when it was, by the event that reached it
		case best.changed:
			next.seq = best.seq // first reached by that event
		default:
			st.newSeq = true
		}
		st.applied = best.value
		if cur.present {
			st.applied = best.value - cur.points
		}
	}
	st.next, st.changed = next, true
	return nil
}

// bestEvent is a max/min event still counting on a board.
type bestEvent struct {
	value   int64
	cols    []int64
	md      string
	changed bool
	seq     int64
}

// bestRemaining finds the best of the member's events on board other than
// the one being reversed, not reversed and after the latest removal there
// (ord > floor): by value, then (sort columns) the whole tuple in board
// order; among equal ones the event that first reached it by improving.
func (w *writer) bestRemaining(ctx context.Context, board string, floor int64) (bestEvent, bool, error) {
	order := "DESC"
	if w.r.Aggregate == "min" {
		order = "ASC"
	}
	limit := "LIMIT 1"
	if len(w.r.Columns) > 0 {
		limit = "" // the tuple is compared below
	}
	rows, err := w.tx.Query(ctx, `SELECT e.value, e.columns, e.metadata, eb.changed, eb.seq_after
		FROM events e JOIN event_boards eb ON eb.event_id = e.event_id
		WHERE e.family = $1 AND e.period = $2 AND e.member = $3 AND eb.board = $4
		  AND e.kind IN ('award', 'correction') AND e.reversed_by IS NULL AND e.event_id <> $5
		  AND e.value IS NOT NULL AND ($6::bigint = 0 OR coalesce(eb.ord, 0) > $6)
		ORDER BY e.value `+order+`, eb.changed DESC, eb.seq_after ASC `+limit,
		w.ev.Family, w.ev.Period, w.ev.Member, board, w.ev.Reverses, floor)
	if err != nil {
		return bestEvent{}, false, fmt.Errorf("ledger: recomputing %s of %s on %s: %w", w.r.Aggregate, w.ev.Member, board, err)
	}
	var best, e bestEvent
	found := false
	_, err = pgx.ForEachRow(rows, []any{&e.value, &e.cols, &e.md, &e.changed, &e.seq}, func() error {
		if !found || (e.value == best.value && cmpCols(w.r.Columns, e.cols, best.cols) > 0) {
			best, found = e, true
			best.cols = slices.Clone(e.cols)
		}
		return nil
	})
	if err != nil {
		return bestEvent{}, false, fmt.Errorf("ledger: recomputing %s of %s on %s: %w", w.r.Aggregate, w.ev.Member, board, err)
	}
	return best, found, nil
}

// insertEvent inserts the event row; false: the id is already recorded.
func (w *writer) insertEvent(ctx context.Context) (bool, error) {
	ev := &w.ev
	dims := ev.Dims
	if dims == nil {
		dims = map[string]string{}
	}
	dj, err := json.Marshal(dims)
	if err != nil {
		return false, err
	}
	var version *int64
	if ev.Kind == KindProjection {
		version = &ev.Version
	}
	var reverses *string
	if ev.Reverses != "" {
		reverses = &ev.Reverses
	}
	tag, err := w.tx.Exec(ctx, `INSERT INTO events (event_id, kind, family, period, member, dims, delta, value, version,
			reverses, operator, reason, rules_version, received_at, occurred_at, columns, metadata)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17)
		ON CONFLICT (event_id) DO NOTHING`,
		ev.EventID, ev.Kind, ev.Family, ev.Period, ev.Member, string(dj), ev.Delta, ev.Value, version,
		reverses, ev.Operator, ev.Reason, ev.RulesVersion, ev.ReceivedAt, ev.OccurredAt, ev.Columns, ev.Metadata)
	if err != nil {
		return false, fmt.Errorf("ledger: inserting event %s: %w", ev.EventID, err)
	}
	return tag.RowsAffected() == 1, nil
}

// duplicateOr answers a replayed event id with the current totals of the
// event's boards (err != nil: that error).
func (w *writer) duplicateOr(ctx context.Context, err error) (Outcome, error) {
	if err != nil {
		return Outcome{}, err
	}
	var family, period, member string
	if err := w.tx.QueryRow(ctx, `SELECT family, period, member FROM events WHERE event_id = $1`, w.ev.EventID).
		Scan(&family, &period, &member); err != nil {
		return Outcome{}, fmt.Errorf("ledger: reading event %s: %w", w.ev.EventID, err)
	}
	rows, err := w.tx.Query(ctx, `SELECT board FROM event_boards WHERE event_id = $1 ORDER BY board`, w.ev.EventID)
	if err != nil {
		return Outcome{}, err
	}
	stored, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		return Outcome{}, err
	}
	// The caller's boards, in its order, when it names them (a retry names
	// the same boards); else those the stored event touched.
	boards := w.ev.Boards
	if len(boards) == 0 {
		boards = stored
	}
	cur, err := currentTotals(ctx, w.tx, family, period, member, boards)
	if err != nil {
		return Outcome{}, err
	}
	return Outcome{Duplicate: true, Boards: cur}, nil
}

// checkOpen takes the period row in share mode (Freeze waits for writers in
// flight, and writers after it see its state) and refuses unless it is open.
func (w *writer) checkOpen(ctx context.Context) error {
	state, err := periodState(ctx, w.tx, w.ev.Family, w.ev.Period, "FOR SHARE")
	if errors.Is(err, pgx.ErrNoRows) {
		if _, err = w.tx.Exec(ctx, `INSERT INTO periods (family, period) VALUES ($1, $2) ON CONFLICT DO NOTHING`,
			w.ev.Family, w.ev.Period); err == nil {
			state, err = periodState(ctx, w.tx, w.ev.Family, w.ev.Period, "FOR SHARE")
		}
	}
	if err != nil {
		return fmt.Errorf("ledger: reading the state of %s/%s: %w", w.ev.Family, w.ev.Period, err)
	}
	if state != StateOpen {
		return fmt.Errorf("%w: %s/%s is %s", ErrPeriodClosed, w.ev.Family, w.ev.Period, state)
	}
	return nil
}

// lockTotals locks (creating when missing) the member's totals rows on boards,
// in board order, and sets w.states in the order of boards.
func (w *writer) lockTotals(ctx context.Context, boards []string) error {
	ev := &w.ev
	keys := make([]totalsKey, len(boards))
	for i, b := range boards {
		keys[i] = totalsKey{ev.Family, ev.Period, b, ev.Member}
	}
	rows, err := lockTotalsRows(ctx, w.tx, keys)
	if err != nil {
		return fmt.Errorf("ledger: locking the totals of %s: %w", ev.Member, err)
	}
	got := make(map[string]totalsRow, len(rows))
	for k, t := range rows {
		got[k.board] = t
	}
	w.states = make([]*boardState, len(boards))
	for i, b := range boards {
		t, ok := got[b]
		if !ok {
			return fmt.Errorf("ledger: totals row of %s on %s missing after insert", ev.Member, b)
		}
		w.states[i] = &boardState{board: b, cur: t, next: t}
	}
	return nil
}

// finish takes the event's seq when a board needs one, writes the totals and
// the event_boards rows (and marks the original of a reversal), and returns
// the outcome.
func (w *writer) finish(ctx context.Context, reverses string) (Outcome, error) {
	need, changed := false, false
	for _, st := range w.states {
		need = need || st.newSeq
		changed = changed || st.changed
	}
	if need {
		seq := int64(0)
		if w.r.TieFirst {
			err := w.tx.QueryRow(ctx, `INSERT INTO period_seq (family, period, next) VALUES ($1, $2, 2)
				ON CONFLICT (family, period) DO UPDATE SET next = period_seq.next + 1
				RETURNING next - 1`, w.ev.Family, w.ev.Period).Scan(&seq)
			if err != nil {
				return Outcome{}, fmt.Errorf("ledger: taking an achievement seq: %w", err)
			}
			if seq >= w.r.SeqCapacity {
				return Outcome{}, fmt.Errorf("%w: period %s/%s used up its %d achievement numbers (seq_capacity)",
					ErrOutOfRange, w.ev.Family, w.ev.Period, w.r.SeqCapacity)
			}
		}
		for _, st := range w.states {
			if st.newSeq {
				st.next.seq = seq
			}
		}
	}
	ev := &w.ev
	b := &pgx.Batch{}
	out := Outcome{Boards: make([]BoardTotal, len(w.states))}
	for i, st := range w.states {
		if st.changed {
			b.Queue(`UPDATE totals SET points = $5, version = $6, seq = $7, present = $8, live = $9, columns = $10, metadata = $11,
				updated_at = now()
				WHERE family = $1 AND period = $2 AND board = $3 AND member = $4`,
				ev.Family, ev.Period, st.board, ev.Member, st.next.points, st.next.version, st.next.seq, st.next.present, st.next.live,
				st.next.colsOr(), st.next.md)
		}
		b.Queue(`INSERT INTO event_boards (event_id, board, applied, changed, seq_before, seq_after, total_after, present_after, version_after,
				cols_before, cols_after)
			VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11)`,
			ev.EventID, st.board, st.applied, st.changed, st.cur.seqOr(), st.next.seqOr(), st.next.points, st.next.present, st.next.version,
			st.cur.colsOr(), st.next.colsOr())
		out.Boards[i] = BoardTotal{Board: st.board, Points: st.next.points, Version: st.next.version,
			Seq: st.next.seq, Present: st.next.present, Changed: st.changed, Columns: st.next.colsOr(), Metadata: st.next.md}
	}
	if reverses != "" {
		b.Queue(`UPDATE events SET reversed_by = $1 WHERE event_id = $2`, ev.EventID, reverses)
	}
	if !changed {
		// Nothing for Redis to learn.
		b.Queue(`UPDATE events SET projected = true WHERE event_id = $1`, ev.EventID)
	}
	if err := w.tx.SendBatch(ctx, b).Close(); err != nil {
		return Outcome{}, fmt.Errorf("ledger: writing event %s: %w", ev.EventID, err)
	}
	return out, nil
}

func (w *writer) checkPoints(board string, p int64) error {
	if p > w.r.MaxPoints || p < -w.r.MaxPoints {
		return w.outOfRange(board, fmt.Sprintf("points %d would leave ±%d", p, w.r.MaxPoints))
	}
	return nil
}

func (w *writer) outOfRange(board, msg string) error {
	return fmt.Errorf("%w: event %s on %s/%s/%s, member %s: %s", ErrOutOfRange, w.ev.EventID,
		w.ev.Family, w.ev.Period, board, w.ev.Member, msg)
}

func addInt(a, b int64) (int64, bool) {
	if (b > 0 && a > math.MaxInt64-b) || (b < 0 && a < math.MinInt64-b) {
		return 0, false
	}
	return a + b, true
}

func subInt(a, b int64) (int64, bool) {
	if b == math.MinInt64 {
		return 0, false
	}
	return addInt(a, -b)
}

// querier is what read helpers need of a transaction or a connection.
type querier interface {
	Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error)
	QueryRow(ctx context.Context, sql string, args ...any) pgx.Row
}

// currentTotals returns the member's totals on boards, in that order; a board
// without a row answers absent (seq −1, version 0).
func currentTotals(ctx context.Context, q querier, family, period, member string, boards []string) ([]BoardTotal, error) {
	rows, err := q.Query(ctx, `SELECT board, points, version, seq, present, columns, metadata FROM totals
		WHERE family = $1 AND period = $2 AND member = $3 AND board = ANY($4)`, family, period, member, boards)
	if err != nil {
		return nil, err
	}
	got := map[string]BoardTotal{}
	var bt BoardTotal
	_, err = pgx.ForEachRow(rows, []any{&bt.Board, &bt.Points, &bt.Version, &bt.Seq, &bt.Present, &bt.Columns, &bt.Metadata}, func() error {
		bt.Columns = slices.Clone(bt.Columns)
		got[bt.Board] = bt
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("ledger: reading the totals of %s: %w", member, err)
	}
	out := make([]BoardTotal, len(boards))
	for i, b := range boards {
		t, ok := got[b]
		if !ok {
			t = BoardTotal{Board: b, Seq: -1}
		}
		out[i] = t
	}
	return out, nil
}

// periodState reads a period's state with an optional locking clause.
func periodState(ctx context.Context, q querier, family, period, lock string) (string, error) {
	var state string
	err := q.QueryRow(ctx, `SELECT state FROM periods WHERE family = $1 AND period = $2 `+lock, family, period).Scan(&state)
	return state, err
}

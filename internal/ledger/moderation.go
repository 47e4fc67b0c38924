package ledger

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// KindRemoval is a moderator's removal of a member from boards.
const KindRemoval = "removal"

// ErrNotRanked: a removal of a member who is on none of the boards named
// (or, naming none, on no board of the period). Nothing is kept.
var ErrNotRanked = errors.New("ledger: member not ranked")

// Removed is what a removal did to one board.
type Removed struct {
	Board        string
	PointsBefore int64
	After        BoardTotal // absent; its version is what Redis must receive
}

// Remove commits a removal (kind removal, Operator required) of ev.Member
// from ev.Boards of ev.Period — every board of the period the member is on
// when ev.Boards is empty — in one transaction, with Record's lock order
// (the event id, the period row shared, the totals rows in board order).
// On each board the member is on, the totals become absent (points 0, seq
// −1, no live changes) and the version moves on by one (families of
// projections, r.Projection: it stays, the upstream's next version applies);
// rebuild and reconcile read those totals, so the member stays removed, and
// later events start from nothing. Reversals of events from before the
// removal change nothing on that board (record.go, reverse).
//
// A member on none of the boards: ErrNotRanked, nothing kept. A period that
// is not open: ErrPeriodClosed, nothing kept. A replayed event id answers
// the boards it removed the member from, with their current totals.
func (l *Ledger) Remove(ctx context.Context, ev Event, r Rules) ([]Removed, error) {
	r, err := r.check()
	if err == nil {
		ev, err = normalizeRemoval(ev)
	}
	var out []Removed
	if err == nil {
		err = l.inTx(ctx, "remove", ev.EventID, func(tx pgx.Tx) error {
			if err := planLikeGroups(ctx, tx); err != nil {
				return err
			}
			w := &writer{tx: tx, ev: ev, r: r}
			var err error
			out, err = w.remove(ctx)
			return err
		})
	}
	label := "applied"
	switch {
	case errors.Is(err, ErrNotRanked):
		label = "not_ranked"
	case err != nil:
		label = outcomeLabel(err, Outcome{}, false)
	}
	l.m.writes.WithLabelValues(KindRemoval, label).Inc()
	if err != nil {
		return nil, err
	}
	for _, rm := range out {
		l.log.InfoContext(ctx, "ledger removal", "family", ev.Family, "period", ev.Period, "board", rm.Board,
			"member", ev.Member, "event_id", ev.EventID, "points_before", rm.PointsBefore, "version", rm.After.Version,
			"operator", ev.Operator, "reason", ev.Reason)
	}
	return out, nil
}

func normalizeRemoval(ev Event) (Event, error) {
	bad := func(msg string) (Event, error) {
		return ev, fmt.Errorf("%w: removal %q: %s", ErrInvalid, ev.EventID, msg)
	}
	if ev.Kind == "" {
		ev.Kind = KindRemoval
	}
	switch {
	case ev.Kind != KindRemoval:
		return bad("Remove takes kind removal")
	case ev.EventID == "" || ev.Family == "" || ev.Period == "" || ev.Member == "":
		return bad("event_id, family, period and member are required")
	case ev.Operator == "":
		return bad("a removal names its operator")
	case ev.Delta != nil || ev.Value != nil || ev.Reverses != "":
		return bad("a removal carries no delta, value or reverses")
	}
	if !distinctBoards(ev.Boards) {
		return bad("boards must be distinct and non-empty")
	}
	return withTimes(ev), nil
}

// remove is the write path of removals.
func (w *writer) remove(ctx context.Context) ([]Removed, error) {
	ok, err := w.insertEvent(ctx)
	if err != nil {
		return nil, err
	}
	if !ok {
		return w.replayedRemoval(ctx)
	}
	if err := w.checkOpen(ctx); err != nil {
		return nil, err
	}
	boards := w.ev.Boards
	if len(boards) == 0 {
		rows, err := w.tx.Query(ctx, `SELECT board FROM totals WHERE family = $1 AND period = $2 AND member = $3 AND present
			ORDER BY board`, w.ev.Family, w.ev.Period, w.ev.Member)
		if err != nil {
			return nil, fmt.Errorf("ledger: reading the boards of %s: %w", w.ev.Member, err)
		}
		if boards, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return nil, fmt.Errorf("ledger: reading the boards of %s: %w", w.ev.Member, err)
		}
		if len(boards) == 0 {
			return nil, fmt.Errorf("%w: %s is on no board of %s/%s", ErrNotRanked, w.ev.Member, w.ev.Family, w.ev.Period)
		}
	}
	if err := w.lockTotals(ctx, boards); err != nil {
		return nil, err
	}
	// Only the boards the member is on take part.
	var on []*boardState
	for _, st := range w.states {
		if st.cur.present {
			on = append(on, st)
		}
	}
	if len(on) == 0 {
		return nil, fmt.Errorf("%w: %s is on none of the boards named", ErrNotRanked, w.ev.Member)
	}
	w.states = on
	out := make([]Removed, len(on))
	for i, st := range on {
		cur := st.cur
		v := cur.version + 1
		if w.r.Projection {
			v = cur.version
		}
		st.next = totalsRow{points: 0, version: v, seq: -1, present: false, live: 0}
		st.changed, st.applied = true, -cur.points
		out[i] = Removed{Board: st.board, PointsBefore: cur.points}
	}
	res, err := w.finish(ctx, "")
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].After = res.Boards[i]
	}
	return out, nil
}

// replayedRemoval answers a removal whose id is already recorded: the boards
// it removed the member from, with the member's current totals there.
func (w *writer) replayedRemoval(ctx context.Context) ([]Removed, error) {
	var kind, family, period, member string
	if err := w.tx.QueryRow(ctx, `SELECT kind, family, period, member FROM events WHERE event_id = $1`, w.ev.EventID).
		Scan(&kind, &family, &period, &member); err != nil {
		return nil, fmt.Errorf("ledger: reading event %s: %w", w.ev.EventID, err)
	}
	if kind != KindRemoval {
		return nil, fmt.Errorf("%w: event id %s is a recorded %s", ErrInvalid, w.ev.EventID, kind)
	}
	rows, err := w.tx.Query(ctx, `SELECT board, -applied FROM event_boards WHERE event_id = $1 ORDER BY board`, w.ev.EventID)
	if err != nil {
		return nil, err
	}
	var out []Removed
	var rm Removed
	if _, err := pgx.ForEachRow(rows, []any{&rm.Board, &rm.PointsBefore}, func() error {
		out = append(out, rm)
		return nil
	}); err != nil {
		return nil, err
	}
	boards := make([]string, len(out))
	for i := range out {
		boards[i] = out[i].Board
	}
	cur, err := currentTotals(ctx, w.tx, family, period, member, boards)
	if err != nil {
		return nil, err
	}
	for i := range out {
		out[i].After = cur[i]
	}
	return out, nil
}

// removalFloors returns, per board, the order (event_boards.ord) of the
// member's latest removal there: what a reversal must not reach behind.
func (w *writer) removalFloors(ctx context.Context) (map[string]int64, error) {
	rows, err := w.tx.Query(ctx, `SELECT eb.board, max(coalesce(eb.ord, 0))
		FROM events e JOIN event_boards eb ON eb.event_id = e.event_id
		WHERE e.family = $1 AND e.period = $2 AND e.member = $3 AND e.kind = 'removal'
		GROUP BY eb.board`, w.ev.Family, w.ev.Period, w.ev.Member)
	if err != nil {
		return nil, fmt.Errorf("ledger: reading the removals of %s: %w", w.ev.Member, err)
	}
	out := map[string]int64{}
	var b string
	var ord int64
	_, err = pgx.ForEachRow(rows, []any{&b, &ord}, func() error {
		out[b] = ord
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("ledger: reading the removals of %s: %w", w.ev.Member, err)
	}
	return out, nil
}

// HistoryCursor is the place of one history entry: the board's change order,
// the version after it and the event id (older rows have Ord 0).
type HistoryCursor struct {
	Ord     int64
	Version int64
	EventID string
}

// HistoryEntry is one event of a member's history on a board.
type HistoryEntry struct {
	EventID string
	Kind    string
	// Delta: a sum event's delta; a reversal's or removal's change on this
	// board. Value: a max/min event's value, a projection's total.
	Delta, Value *int64
	// Columns: the sort column values the event carried (nil: none).
	Columns      []int64
	Reverses     string
	ReversedBy   string
	PointsBefore int64
	PointsAfter  int64
	PresentAfter bool
	Changed      bool
	At           time.Time // when it happened (the event's at)
	RecordedAt   time.Time
	Operator     string
	Reason       string
	Cursor       HistoryCursor
}

// History returns up to limit events that touched member on board of
// family/period, newest first (the order they changed the board in), after
// the place before (nil: from the newest); the next page starts after the
// last entry's Cursor.
func (l *Ledger) History(ctx context.Context, family, period, board, member string, before *HistoryCursor, limit int) ([]HistoryEntry, error) {
	cond, args := "", []any{family, period, member, board, pageLimit(limit, 1000)}
	if before != nil {
		cond = ` AND (coalesce(eb.ord, 0), eb.version_after, e.event_id) < ($6, $7, $8)`
		args = append(args, before.Ord, before.Version, before.EventID)
	}
	var out []HistoryEntry
	err := l.withConn(ctx, func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, `SELECT e.event_id, e.kind, e.delta, e.value, e.columns, coalesce(e.reverses, ''), coalesce(e.reversed_by, ''),
				eb.applied, eb.total_after, eb.present_after, eb.changed, e.occurred_at, e.recorded_at, e.operator, e.reason,
				coalesce(eb.ord, 0), eb.version_after
			FROM events e JOIN event_boards eb ON eb.event_id = e.event_id
			WHERE e.family = $1 AND e.period = $2 AND e.member = $3 AND eb.board = $4`+cond+`
			ORDER BY coalesce(eb.ord, 0) DESC, eb.version_after DESC, e.event_id DESC
			LIMIT $5`, args...)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (HistoryEntry, error) {
			var h HistoryEntry
			var applied int64
			err := r.Scan(&h.EventID, &h.Kind, &h.Delta, &h.Value, &h.Columns, &h.Reverses, &h.ReversedBy, &applied, &h.PointsAfter,
				&h.PresentAfter, &h.Changed, &h.At, &h.RecordedAt, &h.Operator, &h.Reason, &h.Cursor.Ord, &h.Cursor.Version)
			h.Cursor.EventID = h.EventID
			h.PointsBefore = h.PointsAfter - applied
			if h.Kind == KindReversal || h.Kind == KindRemoval {
				h.Delta = &applied
			}
			return h, err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("ledger: reading the history of %s on %s/%s/%s: %w", member, family, period, board, err)
	}
	return out, nil
}

package ledger

import (
	"context"
	"encoding/json"
	"fmt"
	"github.com/rankgate/rankgate/api/wire"

	"github.com/jackc/pgx/v5"
)

// MemberBoard is one board a member has a totals row on.
type MemberBoard struct {
	Family, Period, Board string
}

// MemberBoards lists every board a member has a totals row on (present or
// not: an absent row still has a projection version in Redis), in
// (family, period, board) order.
func (l *Ledger) MemberBoards(ctx context.Context, member string) ([]MemberBoard, error) {
	var out []MemberBoard
	err := l.withConn(ctx, func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, `SELECT family, period, board FROM totals WHERE member = $1 ORDER BY family, period, board`, member)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (MemberBoard, error) {
			var b MemberBoard
			err := r.Scan(&b.Family, &b.Period, &b.Board)
			return b, err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("ledger: listing the boards of a member: %w", err)
	}
	return out, nil
}

// Erased counts the ledger rows an erasure deleted.
type Erased struct {
	Events, EventBoards, Totals, Standings, Awards, Reviews, Joins int64
}

// Rows is every row deleted.
func (e Erased) Rows() int64 {
	return e.Events + e.EventBoards + e.Totals + e.Standings + e.Awards + e.Reviews + e.Joins
}

// EraseMember deletes every row of a member in one transaction: their
// events (and what each did to its boards), totals, settled standings,
// awards, tournament joins, and the late events kept for review that name
// them. Other members'
// rows stay as they are (standings keep their positions). A second call
// deletes nothing.
func (l *Ledger) EraseMember(ctx context.Context, member string) (Erased, error) {
	var out Erased
	err := l.inTx(ctx, "erase", "", func(tx pgx.Tx) error {
		out = Erased{}
		steps := []struct {
			n   *int64
			sql string
		}{
			{&out.EventBoards, `DELETE FROM event_boards WHERE event_id IN (
				SELECT e.event_id FROM events e
				JOIN (SELECT DISTINCT family, period FROM totals WHERE member = $1) p ON p.family = e.family AND p.period = e.period
				WHERE e.member = $1)`},
			{&out.Events, `DELETE FROM events e USING (SELECT DISTINCT family, period FROM totals WHERE member = $1) p
				WHERE p.family = e.family AND p.period = e.period AND e.member = $1`},
			{&out.Totals, `DELETE FROM totals WHERE member = $1`},
			{&out.Standings, `DELETE FROM standings WHERE member = $1`},
			{&out.Awards, `DELETE FROM award_outbox WHERE member = $1`},
			{&out.Reviews, `DELETE FROM reviews WHERE event->>'user' = $1`},
			{&out.Joins, `DELETE FROM tournament_joins WHERE member = $1`},
		}
		for _, st := range steps {
			tag, err := tx.Exec(ctx, st.sql, member)
			if err != nil {
				return err
			}
			*st.n = tag.RowsAffected()
		}
		return nil
	})
	if err != nil {
		return Erased{}, fmt.Errorf("ledger: erasing a member: %w", err)
	}
	l.log.InfoContext(ctx, "ledger erasure", "rows", out.Rows(), "events", out.Events, "totals", out.Totals)
	return out, nil
}

// MemberEvent is one ledger event of a member (an export).
type MemberEvent = wire.MemberEvent

// MemberEvents lists a member's events, oldest first, at most limit.
func (l *Ledger) MemberEvents(ctx context.Context, member string, limit int) ([]MemberEvent, error) {
	var out []MemberEvent
	err := l.withConn(ctx, func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, `SELECT e.event_id, e.kind, e.family, e.period, e.dims, e.delta, e.value, e.version,
				coalesce(e.reverses, ''), coalesce(e.reversed_by, ''), e.operator, e.reason, e.metadata, e.occurred_at, e.recorded_at
			FROM events e JOIN (SELECT DISTINCT family, period FROM totals WHERE member = $1) p ON p.family = e.family AND p.period = e.period
			WHERE e.member = $1 ORDER BY e.recorded_at, e.event_id LIMIT $2`, member, limit)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (MemberEvent, error) {
			var e MemberEvent
			var dims []byte
			var md string
			err := r.Scan(&e.EventID, &e.Kind, &e.Family, &e.Period, &dims, &e.Delta, &e.Value, &e.Version,
				&e.Reverses, &e.ReversedBy, &e.Operator, &e.Reason, &md, &e.At, &e.RecordedAt)
			if err == nil && len(dims) > 0 {
				err = json.Unmarshal(dims, &e.Dims)
			}
			if md != "" {
				e.Metadata = json.RawMessage(md)
			}
			e.At, e.RecordedAt = e.At.UTC(), e.RecordedAt.UTC()
			return e, err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("ledger: listing a member's events: %w", err)
	}
	return out, nil
}

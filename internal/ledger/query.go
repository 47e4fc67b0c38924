package ledger

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// maxPage bounds every list the ledger returns in one call.
const maxPage = 10000

func pageLimit(limit, def int) int {
	switch {
	case limit <= 0:
		return def
	case limit > maxPage:
		return maxPage
	}
	return limit
}

// Totals returns up to limit members present on a board, in member byte
// order, starting after afterMember ("" : from the start). Rebuild and
// reconcile page through a board with it.
func (l *Ledger) Totals(ctx context.Context, family, period, board, afterMember string, limit int) ([]MemberTotal, error) {
	var out []MemberTotal
	err := l.withConn(ctx, func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, `SELECT member, points, version, seq, present, updated_at, columns, metadata FROM totals
			WHERE family = $1 AND period = $2 AND board = $3 AND member > $4 AND present
			ORDER BY member LIMIT $5`, family, period, board, afterMember, pageLimit(limit, 1000))
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (MemberTotal, error) {
			var t MemberTotal
			err := r.Scan(&t.Member, &t.Points, &t.Version, &t.Seq, &t.Present, &t.UpdatedAt, &t.Columns, &t.Metadata)
			return t, err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("ledger: reading totals of %s/%s/%s: %w", family, period, board, err)
	}
	return out, nil
}

// Total returns one member's totals on a board. A member the board never saw
// answers Present=false, Version 0, Seq −1 (no error); one that left it
// (reversed away) answers Present=false with its version.
func (l *Ledger) Total(ctx context.Context, family, period, board, member string) (MemberTotal, error) {
	t := MemberTotal{Member: member, Seq: -1}
	err := l.withConn(ctx, func(c *pgx.Conn) error {
		return c.QueryRow(ctx, `SELECT points, version, seq, present, updated_at, columns, metadata FROM totals
			WHERE family = $1 AND period = $2 AND board = $3 AND member = $4`, family, period, board, member).
			Scan(&t.Points, &t.Version, &t.Seq, &t.Present, &t.UpdatedAt, &t.Columns, &t.Metadata)
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return MemberTotal{Member: member, Seq: -1}, nil
	}
	if err != nil {
		return MemberTotal{}, fmt.Errorf("ledger: reading the total of %s on %s/%s/%s: %w", member, family, period, board, err)
	}
	return t, nil
}

// MarkProjected notes that Redis received the totals after these events:
// their flag (reversals, projections) and their ids in the pending rows of
// groups (a row goes once it lists none). Unknown ids are ignored. The mark
// is a hint for the projector, not evidence: its transaction commits without
// waiting for the flush (synchronous_commit off for this transaction only),
// so a group commit costs one flush, not two; a mark lost in a crash only
// makes the projector project those events again (versions guard).
func (l *Ledger) MarkProjected(ctx context.Context, eventIDs ...string) error {
	if len(eventIDs) == 0 {
		return nil
	}
	ids := slices.Clone(eventIDs)
	slices.Sort(ids)
	err := l.asyncTx(ctx, func(b *pgx.Batch) {
		b.Queue(`UPDATE events SET projected = true WHERE event_id = ANY($1) AND NOT projected`, ids)
		b.Queue(`UPDATE projection_pending SET event_ids = ARRAY(SELECT id FROM unnest(event_ids) AS u(id) WHERE id <> ALL($1))
			WHERE event_ids && $1::text[]`, ids)
		b.Queue(`DELETE FROM projection_pending WHERE cardinality(event_ids) = 0`)
	})
	if err != nil {
		return fmt.Errorf("ledger: marking %d events projected: %w", len(eventIDs), err)
	}
	return nil
}

// MarkGroupProjected notes that Redis received the totals after every event
// a group's pending row lists (GroupResult.Pending): one statement for the
// group, committed like MarkProjected's.
func (l *Ledger) MarkGroupProjected(ctx context.Context, pending int64) error {
	if pending == 0 {
		return nil
	}
	if err := l.asyncTx(ctx, func(b *pgx.Batch) {
		b.Queue(`DELETE FROM projection_pending WHERE id = $1`, pending)
	}); err != nil {
		return fmt.Errorf("ledger: marking group %d projected: %w", pending, err)
	}
	return nil
}

// asyncTx runs the statements fill queues in one transaction that commits
// without waiting for the flush, in one round trip: for hints only.
func (l *Ledger) asyncTx(ctx context.Context, fill func(b *pgx.Batch)) error {
	return l.withConn(ctx, func(c *pgx.Conn) error {
		b := &pgx.Batch{}
		b.Queue(`BEGIN`)
		b.Queue(`SET LOCAL synchronous_commit = off`)
		fill(b)
		b.Queue(`COMMIT`)
		return c.SendBatch(ctx, b).Close()
	})
}

// Unprojected returns up to limit events recorded at least olderThan ago (by
// the database's clock) that Redis may not have seen (not marked projected,
// or listed in a group's pending row), oldest first, each with the member's
// current totals on its boards: what a projector re-projects (then
// MarkProjected). Projecting current totals with their versions is
// idempotent, so an event projected twice does no harm.
func (l *Ledger) Unprojected(ctx context.Context, olderThan time.Duration, limit int) ([]Pending, error) {
	var out []Pending
	err := l.withConn(ctx, func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, `SELECT event_id, kind, family, period, member FROM (
				SELECT event_id, kind, family, period, member, recorded_at FROM events
				WHERE NOT projected AND recorded_at <= now() - $1::bigint * interval '1 microsecond'
				UNION ALL
				SELECT e.event_id, e.kind, e.family, e.period, e.member, p.recorded_at
				FROM projection_pending p CROSS JOIN unnest(p.event_ids) AS u(id)
				JOIN events e ON e.event_id = u.id
				WHERE p.recorded_at <= now() - $1::bigint * interval '1 microsecond'
			) AS x
			ORDER BY recorded_at, event_id LIMIT $2`, olderThan.Microseconds(), pageLimit(limit, 100))
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(r pgx.CollectableRow) (Pending, error) {
			var p Pending
			err := r.Scan(&p.EventID, &p.Kind, &p.Family, &p.Period, &p.Member)
			return p, err
		})
		if err != nil || len(out) == 0 {
			return err
		}
		ids := make([]string, len(out))
		idx := make(map[string]int, len(out))
		for i, p := range out {
			ids[i], idx[p.EventID] = p.EventID, i
		}
		rows, err = c.Query(ctx, `SELECT eb.event_id, eb.board, coalesce(t.points, 0), coalesce(t.version, 0),
				coalesce(t.seq, -1), coalesce(t.present, false), t.columns, coalesce(t.metadata, '')
			FROM event_boards eb
			JOIN events e ON e.event_id = eb.event_id
			LEFT JOIN totals t ON t.family = e.family AND t.period = e.period AND t.board = eb.board AND t.member = e.member
			WHERE eb.event_id = ANY($1)
			ORDER BY eb.event_id, eb.board`, ids)
		if err != nil {
			return err
		}
		var id string
		var bt BoardTotal
		_, err = pgx.ForEachRow(rows, []any{&id, &bt.Board, &bt.Points, &bt.Version, &bt.Seq, &bt.Present, &bt.Columns, &bt.Metadata}, func() error {
			p := &out[idx[id]]
			bt.Columns = slices.Clone(bt.Columns)
			p.Boards = append(p.Boards, bt)
			return nil
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("ledger: listing unprojected events: %w", err)
	}
	return out, nil
}

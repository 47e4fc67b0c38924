package ledger

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// Rank modes of a settlement.
const (
	RankCompetition = "competition" // 1 + members with strictly better points (1, 2, 2, 4)
	RankOrdinal     = "ordinal"     // position + 1
)

// Settle stores the final standings of a frozen period and its award outbox,
// in one transaction, and marks the period settled. For each board: the top
// members present, by points (descending when r.Desc, else ascending), then
// achievement seq ascending under r.TieFirst, then member bytes descending
// (Redis order); rank is competition (comp) or ordinal. Every standing gets
// an award_outbox row keyed by (family, period, board, member) with an
// idempotency key.
//
// Settling again (after a crash, or concurrently) returns the stored
// settlement unchanged, whatever the arguments, and never adds an outbox row.
// A period that is neither frozen nor settled answers ErrNotFrozen.
func (l *Ledger) Settle(ctx context.Context, family, period string, top int, boards []string, comp bool, r Rules) (Settlement, error) {
	if family == "" || period == "" || top <= 0 || len(boards) == 0 {
		return Settlement{}, fmt.Errorf("%w: settlement needs family, period, top > 0 and boards", ErrInvalid)
	}
	seen := map[string]bool{}
	for _, b := range boards {
		if b == "" || seen[b] {
			return Settlement{}, fmt.Errorf("%w: settlement boards must be distinct and non-empty", ErrInvalid)
		}
		seen[b] = true
	}
	mode := RankOrdinal
	if comp {
		mode = RankCompetition
	}
	var s Settlement
	fresh := false
	err := l.inTx(ctx, "settle", "", func(tx pgx.Tx) error {
		fresh = false
		// The period row lock serializes settlements of one period.
		state, err := periodState(ctx, tx, family, period, "FOR UPDATE")
		if errors.Is(err, pgx.ErrNoRows) {
			return fmt.Errorf("%w: %s/%s is open", ErrNotFrozen, family, period)
		}
		if err != nil {
			return err
		}
		s, err = readSettlement(ctx, tx, family, period)
		if err == nil {
			return nil
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		if state != StateFrozen {
			return fmt.Errorf("%w: %s/%s is %s", ErrNotFrozen, family, period, state)
		}
		if err := writeSettlement(ctx, tx, family, period, top, boards, mode, r); err != nil {
			return err
		}
		fresh = true
		s, err = readSettlement(ctx, tx, family, period)
		return err
	})
	if err != nil {
		if errors.Is(err, ErrNotFrozen) {
			return Settlement{}, err
		}
		return Settlement{}, fmt.Errorf("ledger: settling %s/%s: %w", family, period, err)
	}
	if fresh {
		n := 0
		for _, st := range s.Boards {
			n += len(st)
		}
		l.log.Info("period settled", "family", family, "period", period, "top", top, "boards", len(boards),
			"standings", n, "rank_mode", mode)
	}
	return s, nil
}

func writeSettlement(ctx context.Context, tx pgx.Tx, family, period string, top int, boards []string, mode string, r Rules) error {
	order := `points DESC`
	if !r.Desc {
		order = `points ASC`
	}
	for i, c := range r.Columns {
		// Sort columns: board order, each by its own order (columns.lua).
		dir := "DESC"
		if c.Asc {
			dir = "ASC"
		}
		order += fmt.Sprintf(", columns[%d] %s", i+1, dir)
	}
	if r.TieFirst {
		order += `, seq ASC`
	}
	order += `, member COLLATE "C" DESC`
	b := &pgx.Batch{}
	var awards int // one award per standing: the outbox holds nothing of an unsettled period
	for _, board := range boards {
		rows, err := tx.Query(ctx, `SELECT member, points, seq, columns FROM totals
			WHERE family = $1 AND period = $2 AND board = $3 AND present
			ORDER BY `+order+` LIMIT $4`, family, period, board, top)
		if err != nil {
			return err
		}
		standings, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (Standing, error) {
			var s Standing
			err := row.Scan(&s.Member, &s.Points, &s.Seq, &s.cols)
			return s, err
		})
		if err != nil {
			return fmt.Errorf("reading the top of %s: %w", board, err)
		}
		fillRanks(standings, mode == RankCompetition)
		awards += len(standings)
		for _, s := range standings {
			b.Queue(`INSERT INTO standings (family, period, board, member, points, seq, position, rank)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING`,
				family, period, board, s.Member, s.Points, s.Seq, s.Position, s.Rank)
			b.Queue(`INSERT INTO award_outbox (family, period, board, member, rank, points, idempotency_key)
				VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT DO NOTHING`,
				family, period, board, s.Member, s.Rank, s.Points, IdempotencyKey(family, period, board, s.Member))
		}
	}
	b.Queue(`INSERT INTO settlements (family, period, top, boards, rank_mode) VALUES ($1, $2, $3, $4, $5)`,
		family, period, top, boards, mode)
	b.Queue(`UPDATE periods SET state = 'settled', settled_at = now() WHERE family = $1 AND period = $2`, family, period)
	if err := tx.SendBatch(ctx, b).Close(); err != nil {
		return err
	}
	return addNotice(ctx, tx, NoticeSettled, family, period, map[string]any{"boards": boards, "awards": awards, "top": top, "rank_mode": mode})
}

// NoticeKey is the idempotency key of a period notice: hex SHA-256 of
// "kind|family|period".
func NoticeKey(kind, family, period string) string {
	sum := sha256.Sum256([]byte(kind + "|" + family + "|" + period))
	return hex.EncodeToString(sum[:])
}

// addNotice queues a period notice for the webhook, once per kind and period.
func addNotice(ctx context.Context, tx pgx.Tx, kind, family, period string, extra map[string]any) error {
	key := NoticeKey(kind, family, period)
	body := map[string]any{"type": kind, "idempotency_key": key, "family": family, "period": period}
	for k, v := range extra {
		body[k] = v
	}
	payload, err := json.Marshal(body)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `INSERT INTO notices (key, kind, family, period, payload) VALUES ($1, $2, $3, $4, $5)
		ON CONFLICT (key) DO NOTHING`, key, kind, family, period, payload)
	return err
}

// fillRanks sets positions and ranks of standings in board order from
// position 0: competition rank = 1 + members with strictly better points
// (they all precede), ordinal = position + 1.
func fillRanks(st []Standing, comp bool) {
	for i := range st {
		st[i].Position = int64(i)
		switch {
		case !comp || i == 0 || st[i].Points != st[i-1].Points || !slices.Equal(st[i].cols, st[i-1].cols):
			st[i].Rank = int64(i) + 1
		default:
			st[i].Rank = st[i-1].Rank
		}
	}
}

// readSettlement reads a stored settlement (pgx.ErrNoRows: none).
func readSettlement(ctx context.Context, q querier, family, period string) (Settlement, error) {
	s := Settlement{Family: family, Period: period, Boards: map[string][]Standing{}}
	var boards []string
	err := q.QueryRow(ctx, `SELECT top, boards, rank_mode, created_at FROM settlements WHERE family = $1 AND period = $2`,
		family, period).Scan(&s.Top, &boards, &s.RankMode, &s.CreatedAt)
	if err != nil {
		return Settlement{}, err
	}
	for _, b := range boards {
		s.Boards[b] = []Standing{}
	}
	rows, err := q.Query(ctx, `SELECT board, member, points, seq, position, rank FROM standings
		WHERE family = $1 AND period = $2 ORDER BY board, position`, family, period)
	if err != nil {
		return Settlement{}, err
	}
	var board string
	var st Standing
	_, err = pgx.ForEachRow(rows, []any{&board, &st.Member, &st.Points, &st.Seq, &st.Position, &st.Rank}, func() error {
		s.Boards[board] = append(s.Boards[board], st)
		return nil
	})
	if err != nil {
		return Settlement{}, err
	}
	return s, nil
}

// Settlement returns the stored settlement of a period; ok is false when
// there is none.
func (l *Ledger) Settlement(ctx context.Context, family, period string) (s Settlement, ok bool, err error) {
	err = l.withConn(ctx, func(c *pgx.Conn) error {
		var err error
		s, err = readSettlement(ctx, c, family, period)
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return Settlement{}, false, nil
	}
	if err != nil {
		return Settlement{}, false, fmt.Errorf("ledger: reading the settlement of %s/%s: %w", family, period, err)
	}
	return s, true, nil
}

// IdempotencyKey is the award key of (family, period, board, member): hex
// SHA-256 of "family|period|board|member".
func IdempotencyKey(family, period, board, member string) string {
	sum := sha256.Sum256([]byte(family + "|" + period + "|" + board + "|" + member))
	return hex.EncodeToString(sum[:])
}

// Outbox returns the award outbox of a period, by board then rank.
func (l *Ledger) Outbox(ctx context.Context, family, period string) ([]Award, error) {
	var out []Award
	err := l.withConn(ctx, func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, `SELECT family, period, board, member, rank, points, idempotency_key, created_at, delivered_at
			FROM award_outbox WHERE family = $1 AND period = $2
			ORDER BY board, rank, member COLLATE "C" DESC`, family, period)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (Award, error) {
			var a Award
			var delivered *time.Time
			err := row.Scan(&a.Family, &a.Period, &a.Board, &a.Member, &a.Rank, &a.Points, &a.IdempotencyKey, &a.CreatedAt, &delivered)
			if delivered != nil {
				a.DeliveredAt = *delivered
			}
			return a, err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("ledger: reading the outbox of %s/%s: %w", family, period, err)
	}
	return out, nil
}

// MarkDelivered records that the awards with these idempotency keys were
// delivered (the first delivery time is kept).
func (l *Ledger) MarkDelivered(ctx context.Context, keys ...string) error {
	if len(keys) == 0 {
		return nil
	}
	err := l.withConn(ctx, func(c *pgx.Conn) error {
		_, err := c.Exec(ctx, `UPDATE award_outbox SET delivered_at = now(), state = 'delivered', delivered_via = 'mark', last_error = ''
			WHERE idempotency_key = ANY($1) AND delivered_at IS NULL`, keys)
		return err
	})
	if err != nil {
		return fmt.Errorf("ledger: marking %d awards delivered: %w", len(keys), err)
	}
	return nil
}

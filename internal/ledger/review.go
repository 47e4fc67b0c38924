package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// AddReview keeps a late event for an operator's decision and returns its id.
// A review naming an EventID is kept once per (family, period, event id): a
// retried late event returns the id of the first.
func (l *Ledger) AddReview(ctx context.Context, r Review) (int64, error) {
	if r.Family == "" || r.Period == "" {
		return 0, fmt.Errorf("%w: a review needs family and period", ErrInvalid)
	}
	if len(r.Event) == 0 {
		r.Event = json.RawMessage(`{}`)
	}
	if !json.Valid(r.Event) {
		return 0, fmt.Errorf("%w: the review's event is not JSON", ErrInvalid)
	}
	if r.ReceivedAt.IsZero() {
		r.ReceivedAt = time.Now()
	}
	var id int64
	err := l.inTx(ctx, "review", r.EventID, func(tx pgx.Tx) error {
		err := tx.QueryRow(ctx, `INSERT INTO reviews (family, period, event_id, event, reason, received_at)
			VALUES ($1, $2, $3, $4, $5, $6)
			ON CONFLICT (family, period, event_id) WHERE event_id <> '' DO NOTHING
			RETURNING id`, r.Family, r.Period, r.EventID, string(r.Event), r.Reason, r.ReceivedAt).Scan(&id)
		if errors.Is(err, pgx.ErrNoRows) {
			err = tx.QueryRow(ctx, `SELECT id FROM reviews WHERE family = $1 AND period = $2 AND event_id = $3`,
				r.Family, r.Period, r.EventID).Scan(&id)
		}
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("ledger: keeping a review for %s/%s: %w", r.Family, r.Period, err)
	}
	return id, nil
}

// Reviews returns up to limit reviews (default 100) of a family's period,
// oldest first; an empty family or period matches every one.
func (l *Ledger) Reviews(ctx context.Context, family, period string, limit int) ([]Review, error) {
	var out []Review
	err := l.withConn(ctx, func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, `SELECT id, family, period, event_id, event, reason, received_at, status,
				decided_by, decided_at, correction_id
			FROM reviews WHERE ($1 = '' OR family = $1) AND ($2 = '' OR period = $2)
			ORDER BY id LIMIT $3`, family, period, pageLimit(limit, 100))
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (Review, error) {
			var r Review
			var ev []byte
			var decided *time.Time
			err := row.Scan(&r.ID, &r.Family, &r.Period, &r.EventID, &ev, &r.Reason, &r.ReceivedAt, &r.Status,
				&r.DecidedBy, &decided, &r.CorrectionID)
			r.Event = json.RawMessage(ev)
			if decided != nil {
				r.DecidedAt = *decided
			}
			return r, err
		})
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("ledger: listing reviews of %s/%s: %w", family, period, err)
	}
	return out, nil
}

// DecideReview accepts or rejects a pending review. Repeating the same
// decision (same outcome and correction id) is a no-op; a different one on a
// decided review answers ErrReviewDecided; an unknown id ErrReviewNotFound.
func (l *Ledger) DecideReview(ctx context.Context, id int64, accept bool, operator, correctionID string) error {
	if operator == "" {
		return fmt.Errorf("%w: a decision names its operator", ErrInvalid)
	}
	status := ReviewRejected
	if accept {
		status = ReviewAccepted
	}
	err := l.inTx(ctx, "review", "", func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE reviews SET status = $2, decided_by = $3, decided_at = now(), correction_id = $4
			WHERE id = $1 AND status = 'pending'`, id, status, operator, correctionID)
		if err != nil || tag.RowsAffected() == 1 {
			return err
		}
		var have, haveCorrection string
		err = tx.QueryRow(ctx, `SELECT status, correction_id FROM reviews WHERE id = $1`, id).Scan(&have, &haveCorrection)
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			return fmt.Errorf("%w: %d", ErrReviewNotFound, id)
		case err != nil:
			return err
		case have != status || haveCorrection != correctionID:
			return fmt.Errorf("%w: review %d is %s", ErrReviewDecided, id, have)
		}
		return nil
	})
	if err != nil {
		if errors.Is(err, ErrReviewNotFound) || errors.Is(err, ErrReviewDecided) {
			return err
		}
		return fmt.Errorf("ledger: deciding review %d: %w", id, err)
	}
	l.log.Info("review decided", "id", id, "status", status, "operator", operator, "correction_id", correctionID)
	return nil
}

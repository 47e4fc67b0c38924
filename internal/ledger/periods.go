package ledger

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// Freeze moves an open period to frozen and returns its state. It is
// idempotent: a frozen, settled or archived period keeps its state. Writers
// in flight finish first (they hold the period row in share mode); writers
// after it answer ErrPeriodClosed.
func (l *Ledger) Freeze(ctx context.Context, family, period string) (string, error) {
	if family == "" || period == "" {
		return "", fmt.Errorf("%w: family and period are required", ErrInvalid)
	}
	var state string
	err := l.inTx(ctx, "freeze", "", func(tx pgx.Tx) error {
		_, err := tx.Exec(ctx, `INSERT INTO periods (family, period, state, frozen_at) VALUES ($1, $2, 'frozen', now())
			ON CONFLICT (family, period) DO UPDATE SET state = 'frozen', frozen_at = now() WHERE periods.state = 'open'`,
			family, period)
		if err == nil {
			state, err = periodState(ctx, tx, family, period, "")
		}
		if err == nil {
			err = addNotice(ctx, tx, NoticeFrozen, family, period, nil)
		}
		return err
	})
	if err != nil {
		return "", fmt.Errorf("ledger: freezing %s/%s: %w", family, period, err)
	}
	l.log.Info("period frozen", "family", family, "period", period, "state", state)
	return state, nil
}

// State returns a period's state; a period the ledger has never seen is open.
func (l *Ledger) State(ctx context.Context, family, period string) (string, error) {
	var state string
	err := l.withConn(ctx, func(c *pgx.Conn) error {
		var err error
		state, err = periodState(ctx, c, family, period, "")
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return StateOpen, nil
	}
	if err != nil {
		return "", fmt.Errorf("ledger: reading the state of %s/%s: %w", family, period, err)
	}
	return state, nil
}

// SetArchived moves a settled period to archived (its standings are in the
// ledger, so its Redis keys may expire) and returns the state. Idempotent;
// any other state answers ErrNotSettled.
func (l *Ledger) SetArchived(ctx context.Context, family, period string) (string, error) {
	var state string
	err := l.inTx(ctx, "archive", "", func(tx pgx.Tx) error {
		s, err := periodState(ctx, tx, family, period, "FOR UPDATE")
		switch {
		case errors.Is(err, pgx.ErrNoRows):
			s = StateOpen
		case err != nil:
			return err
		}
		state = s
		switch s {
		case StateArchived:
			return nil
		case StateSettled:
			state = StateArchived
			_, err := tx.Exec(ctx, `UPDATE periods SET state = 'archived', archived_at = now() WHERE family = $1 AND period = $2`,
				family, period)
			return err
		default:
			return fmt.Errorf("%w: %s/%s is %s", ErrNotSettled, family, period, s)
		}
	})
	if err != nil {
		if errors.Is(err, ErrNotSettled) {
			return state, err
		}
		return "", fmt.Errorf("ledger: archiving %s/%s: %w", family, period, err)
	}
	l.log.Info("period archived", "family", family, "period", period)
	return state, nil
}

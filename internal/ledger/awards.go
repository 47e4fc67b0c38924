package ledger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Delivery states of awards and notices.
const (
	DeliveryPending   = "pending"
	DeliveryDelivered = "delivered"
	DeliveryFailed    = "failed"
)

// Notice kinds, sent to the awards webhook beside the awards.
const (
	NoticeFrozen  = "period.frozen"
	NoticeSettled = "period.settled"
)

// ErrAwardNotFound: no award has that idempotency key.
var ErrAwardNotFound = errors.New("ledger: award not found")

// AwardState is an award with its delivery state.
type AwardState struct {
	Award
	State         string
	Attempts      int
	NextAttemptAt time.Time
	LastError     string
	DeliveredVia  string // webhook | ack | mark
}

// AwardQuery filters Awards; empty fields match everything.
type AwardQuery struct {
	Family, Period, State string
	After                 string // idempotency key to page after
	Limit                 int
}

const awardCols = `family, period, board, member, rank, points, idempotency_key, created_at, delivered_at,
	state, attempts, next_attempt_at, last_error, delivered_via`

func scanAward(row pgx.CollectableRow) (AwardState, error) {
	var a AwardState
	var delivered *time.Time
	err := row.Scan(&a.Family, &a.Period, &a.Board, &a.Member, &a.Rank, &a.Points, &a.IdempotencyKey, &a.CreatedAt, &delivered,
		&a.State, &a.Attempts, &a.NextAttemptAt, &a.LastError, &a.DeliveredVia)
	if delivered != nil {
		a.DeliveredAt = *delivered
	}
	return a, err
}

// Awards lists awards with their delivery state, by idempotency key.
func (l *Ledger) Awards(ctx context.Context, q AwardQuery) ([]AwardState, error) {
	if q.Limit <= 0 {
		q.Limit = 100
	}
	var out []AwardState
	err := l.withConn(ctx, func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, `SELECT `+awardCols+` FROM award_outbox
			WHERE ($1 = '' OR family = $1) AND ($2 = '' OR period = $2) AND ($3 = '' OR state = $3) AND idempotency_key > $4
			ORDER BY idempotency_key LIMIT $5`, q.Family, q.Period, q.State, q.After, q.Limit)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, scanAward)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("ledger: listing awards: %w", err)
	}
	return out, nil
}

// Award returns one award by key (ErrAwardNotFound when none).
func (l *Ledger) Award(ctx context.Context, key string) (AwardState, error) {
	var a AwardState
	err := l.withConn(ctx, func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, `SELECT `+awardCols+` FROM award_outbox WHERE idempotency_key = $1`, key)
		if err != nil {
			return err
		}
		a, err = pgx.CollectExactlyOneRow(rows, scanAward)
		return err
	})
	if errors.Is(err, pgx.ErrNoRows) {
		return AwardState{}, fmt.Errorf("%w: %s", ErrAwardNotFound, key)
	}
	if err != nil {
		return AwardState{}, fmt.Errorf("ledger: reading award %s: %w", key, err)
	}
	return a, nil
}

// AckAward records that a consumer that pulls took the award: delivered,
// via ack, unless it was delivered already (then nothing changes).
func (l *Ledger) AckAward(ctx context.Context, key string) (AwardState, error) {
	err := l.withConn(ctx, func(c *pgx.Conn) error {
		_, err := c.Exec(ctx, `UPDATE award_outbox SET state = 'delivered', delivered_at = now(), delivered_via = 'ack', last_error = ''
			WHERE idempotency_key = $1 AND state <> 'delivered'`, key)
		return err
	})
	if err != nil {
		return AwardState{}, fmt.Errorf("ledger: acknowledging award %s: %w", key, err)
	}
	return l.Award(ctx, key)
}

// RetryAward makes a failed (or pending) award due again at now with a
// fresh attempt budget; a delivered award is left as it is.
func (l *Ledger) RetryAward(ctx context.Context, key string, now time.Time) (AwardState, error) {
	err := l.withConn(ctx, func(c *pgx.Conn) error {
		_, err := c.Exec(ctx, `UPDATE award_outbox SET state = 'pending', attempts = 0, next_attempt_at = $2
			WHERE idempotency_key = $1 AND state <> 'delivered'`, key, now)
		return err
	})
	if err != nil {
		return AwardState{}, fmt.Errorf("ledger: retrying award %s: %w", key, err)
	}
	return l.Award(ctx, key)
}

// Delivery is one award or notice due to the webhook.
type Delivery struct {
	Kind     string // "award", NoticeFrozen or NoticeSettled
	Key      string // the Idempotency-Key
	Body     []byte // the JSON the receiver gets
	Attempts int    // attempts made before this one
}

// AwardBody is the JSON of an award delivery.
type AwardBody struct {
	Type           string    `json:"type"` // "award"
	IdempotencyKey string    `json:"idempotency_key"`
	Family         string    `json:"family"`
	Period         string    `json:"period"`
	Board          string    `json:"board"`
	User           string    `json:"user"`
	Rank           int64     `json:"rank"`
	Points         int64     `json:"points"`
	CreatedAt      time.Time `json:"created_at"`
}

// DueDeliveries returns up to limit pending awards and notices whose next
// attempt is due at now, oldest first.
func (l *Ledger) DueDeliveries(ctx context.Context, now time.Time, limit int) ([]Delivery, error) {
	var out []Delivery
	err := l.withConn(ctx, func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, `SELECT kind, key, body, attempts, created_at, family, period, board, member, rank, points FROM (
				SELECT 'award' AS kind, idempotency_key AS key, NULL::jsonb AS body, attempts, next_attempt_at, created_at,
					family, period, board, member, rank, points
				FROM award_outbox WHERE state = 'pending' AND next_attempt_at <= $1
				UNION ALL
				SELECT kind, key, payload, attempts, next_attempt_at, created_at, '', '', '', '', 0, 0
				FROM notices WHERE state = 'pending' AND next_attempt_at <= $1
			) d ORDER BY next_attempt_at, created_at, key LIMIT $2`, now, limit)
		if err != nil {
			return err
		}
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (Delivery, error) {
			var d Delivery
			var body []byte
			var b AwardBody
			if err := row.Scan(&d.Kind, &d.Key, &body, &d.Attempts, &b.CreatedAt,
				&b.Family, &b.Period, &b.Board, &b.User, &b.Rank, &b.Points); err != nil {
				return d, err
			}
			d.Body = body
			if d.Kind == "award" { // award bodies are built from the row (one shape for every award)
				b.Type, b.IdempotencyKey, b.CreatedAt = "award", d.Key, b.CreatedAt.UTC()
				var err error
				if d.Body, err = json.Marshal(b); err != nil {
					return d, err
				}
			}
			return d, nil
		})
		if err != nil {
			return err
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("ledger: reading due deliveries: %w", err)
	}
	return out, nil
}

// Attempt is the outcome of one delivery attempt.
type Attempt struct {
	Delivered bool
	Failed    bool      // no attempt left: state failed
	Next      time.Time // when to try again (pending)
	Error     string
}

// RecordAttempt stores the outcome of one attempt of d. A row no longer
// pending (acknowledged meanwhile) is left alone.
func (l *Ledger) RecordAttempt(ctx context.Context, d Delivery, a Attempt) error {
	table, keyCol := "award_outbox", "idempotency_key"
	if d.Kind != "award" {
		table, keyCol = "notices", "key"
	}
	var q string
	var args []any
	switch {
	case a.Delivered:
		via := ", delivered_via = 'webhook'"
		if table == "notices" {
			via = ""
		}
		q = `UPDATE ` + table + ` SET state = 'delivered', delivered_at = now(), attempts = attempts + 1, last_error = ''` + via +
			` WHERE ` + keyCol + ` = $1 AND state = 'pending'`
		args = []any{d.Key}
	case a.Failed:
		q = `UPDATE ` + table + ` SET state = 'failed', attempts = attempts + 1, last_error = $2 WHERE ` + keyCol + ` = $1 AND state = 'pending'`
		args = []any{d.Key, a.Error}
	default:
		q = `UPDATE ` + table + ` SET attempts = attempts + 1, last_error = $2, next_attempt_at = $3 WHERE ` + keyCol + ` = $1 AND state = 'pending'`
		args = []any{d.Key, a.Error, a.Next}
	}
	err := l.withConn(ctx, func(c *pgx.Conn) error {
		_, err := c.Exec(ctx, q, args...)
		return err
	})
	if err != nil {
		return fmt.Errorf("ledger: recording a delivery attempt of %s: %w", d.Key, err)
	}
	return nil
}

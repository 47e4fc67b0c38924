package ledger

import (
	"context"
	"fmt"

	"github.com/jackc/pgx/v5"
)

// NoticeMoved is the kind of a league move delivered to the awards webhook.
const NoticeMoved = "league.moved"

// MovedKey is the idempotency key of a league move: NoticeKey of the member
// within the period.
func MovedKey(family, period, member string) string {
	return NoticeKey(NoticeMoved, family, period+"/"+member)
}

// QueueMoves queues a league period's moves for the awards webhook, one
// notice per member (payloads[i]: the JSON of members[i]'s move), in
// batches; a move queued before is left as it is, so running it again
// changes nothing.
func (l *Ledger) QueueMoves(ctx context.Context, family, period string, members []string, payloads [][]byte) error {
	if len(members) != len(payloads) {
		return fmt.Errorf("ledger: %d members, %d payloads", len(members), len(payloads))
	}
	const chunk = 5000
	for lo := 0; lo < len(members); lo += chunk {
		hi := min(lo+chunk, len(members))
		keys := make([]string, hi-lo)
		for i := range keys {
			keys[i] = MovedKey(family, period, members[lo+i])
		}
		bodies := make([]string, hi-lo)
		for i := range bodies {
			bodies[i] = string(payloads[lo+i])
		}
		err := l.withConn(ctx, func(c *pgx.Conn) error {
			_, err := c.Exec(ctx, `INSERT INTO notices (key, kind, family, period, payload)
				SELECT k, $3, $4, $5, p::jsonb FROM unnest($1::text[], $2::text[]) AS t(k, p)
				ON CONFLICT (key) DO NOTHING`, keys, bodies, NoticeMoved, family, period)
			return err
		})
		if err != nil {
			return fmt.Errorf("ledger: queueing the moves of %s/%s: %w", family, period, err)
		}
	}
	return nil
}

package ledger

import (
	"context"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"

	"github.com/rankgate/rankgate/internal/competition"
)

// The tournament registry of ledger mode (table tournaments): the same
// operations and answers as the Redis registry of Redis-only mode, durable
// with the events.

// CreateTournament stores a new tournament (def: its JSON) when its id is
// free and fewer than maxActive tournaments are active at nowMs (not
// cancelled, activeUntil after nowMs; nil: never ends). It answers
// competition.RegistryCreated and the registry's new version,
// RegistryExists, or RegistryLimit and the active count.
func (l *Ledger) CreateTournament(ctx context.Context, id string, def []byte, activeUntil *int64, nowMs int64, maxActive int) (string, int64, error) {
	var st string
	var n int64
	err := l.inTx(ctx, "tournament", "", func(tx pgx.Tx) error {
		if err := l.registryLock(ctx, tx); err != nil {
			return err
		}
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM tournaments WHERE id = $1)`, id).Scan(&exists); err != nil {
			return err
		}
		if exists {
			st, n = competition.RegistryExists, 0
			return nil
		}
		if err := tx.QueryRow(ctx, `SELECT count(*) FROM tournaments
			WHERE NOT cancelled AND (active_until IS NULL OR active_until > $1)`, nowMs).Scan(&n); err != nil {
			return err
		}
		if n >= int64(maxActive) {
			st = competition.RegistryLimit
			return nil
		}
		st = competition.RegistryCreated
		return tx.QueryRow(ctx, `INSERT INTO tournaments (id, def, active_until, version)
			VALUES ($1, $2, $3, nextval('tournament_versions')) RETURNING version`, id, string(def), activeUntil).Scan(&n)
	})
	if err != nil {
		return "", 0, fmt.Errorf("ledger: creating tournament %s: %w", id, err)
	}
	return st, n, nil
}

// CancelTournament replaces a tournament's definition with its cancelled
// form and stops counting it as active: RegistryCancelled and the new
// version, or RegistryUnknown.
func (l *Ledger) CancelTournament(ctx context.Context, id string, def []byte) (string, int64, error) {
	st, v := competition.RegistryCancelled, int64(0)
	err := l.inTx(ctx, "tournament", "", func(tx pgx.Tx) error {
		if err := l.registryLock(ctx, tx); err != nil {
			return err
		}
		err := tx.QueryRow(ctx, `UPDATE tournaments SET def = $2, cancelled = true, version = nextval('tournament_versions')
			WHERE id = $1 RETURNING version`, id, string(def)).Scan(&v)
		if errors.Is(err, pgx.ErrNoRows) {
			st, v = competition.RegistryUnknown, 0
			return nil
		}
		return err
	})
	if err != nil {
		return "", 0, fmt.Errorf("ledger: cancelling tournament %s: %w", id, err)
	}
	return st, v, nil
}

// registryLock serializes the registry's changes, so that versions commit
// in the order they are taken: a reader who saw version v has seen every
// change up to v.
func (l *Ledger) registryLock(ctx context.Context, tx pgx.Tx) error {
	if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, advisoryKey("rankgate/ledger/tournaments/"+l.schema)); err != nil {
		return fmt.Errorf("registry lock: %w", err)
	}
	return nil
}

// Tournaments returns every tournament (id → JSON) and the version they
// belong to, read in one statement (one snapshot).
func (l *Ledger) Tournaments(ctx context.Context) (map[string]string, int64, error) {
	out := map[string]string{}
	var version int64
	err := l.withConn(ctx, func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, `SELECT id, def, max(version) OVER () FROM tournaments`)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id, def string
			if err := rows.Scan(&id, &def, &version); err != nil {
				return err
			}
			out[id] = def
		}
		return rows.Err()
	})
	if err != nil {
		return nil, 0, fmt.Errorf("ledger: reading the tournaments: %w", err)
	}
	return out, version, nil
}

// TournamentVersion returns the registry's version (0 before the first
// tournament): what every gateway polls to learn that its copy is stale.
func (l *Ledger) TournamentVersion(ctx context.Context) (int64, error) {
	var v int64
	err := l.withConn(ctx, func(c *pgx.Conn) error {
		return c.QueryRow(ctx, `SELECT coalesce(max(version), 0) FROM tournaments`).Scan(&v)
	})
	if err != nil {
		return 0, fmt.Errorf("ledger: reading the tournaments' version: %w", err)
	}
	return v, nil
}

// RecordJoins records members' seats in a tournament period (the seats
// join.lua gave them); a seat recorded before stays as it was.
func (l *Ledger) RecordJoins(ctx context.Context, tournament, period string, members []string) error {
	if len(members) == 0 {
		return nil
	}
	err := l.withConn(ctx, func(c *pgx.Conn) error {
		_, err := c.Exec(ctx, `INSERT INTO tournament_joins (tournament, period, member)
			SELECT $1, $2, m FROM unnest($3::text[]) AS t(m) ON CONFLICT DO NOTHING`, tournament, period, members)
		return err
	})
	if err != nil {
		return fmt.Errorf("ledger: recording %d joins of %s/%s: %w", len(members), tournament, period, err)
	}
	return nil
}

// Seats returns what a rebuild restores of a tournament period besides its
// standings: the members who joined (by name) and each member's attempts —
// their award events the ledger holds for the period.
func (l *Ledger) Seats(ctx context.Context, tournament, period string) ([]string, map[string]int64, error) {
	var joined []string
	attempts := map[string]int64{}
	err := l.withConn(ctx, func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, `SELECT member FROM tournament_joins WHERE tournament = $1 AND period = $2 ORDER BY member`, tournament, period)
		if err != nil {
			return err
		}
		if joined, err = pgx.CollectRows(rows, pgx.RowTo[string]); err != nil {
			return err
		}
		rows, err = c.Query(ctx, `SELECT member, count(*) FROM events
			WHERE family = $1 AND period = $2 AND kind = 'award' GROUP BY member`, tournament, period)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var m string
			var n int64
			if err := rows.Scan(&m, &n); err != nil {
				return err
			}
			attempts[m] = n
		}
		return rows.Err()
	})
	if err != nil {
		return nil, nil, fmt.Errorf("ledger: reading the seats of %s/%s: %w", tournament, period, err)
	}
	return joined, attempts, nil
}

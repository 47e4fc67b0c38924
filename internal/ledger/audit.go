package ledger

import (
	"context"
	"fmt"
	"strconv"

	"github.com/jackc/pgx/v5"

	"github.com/rankgate/rankgate/internal/audit"
)

// AuditLog is the audit log of ledger mode: the table audit_log, one row per
// entry, paged newest first by its id.
type AuditLog struct{ l *Ledger }

var _ audit.Backend = AuditLog{}

// AuditLog returns the ledger's audit log.
func (l *Ledger) AuditLog() AuditLog { return AuditLog{l: l} }

// Append inserts e (one statement, committed on its own).
func (a AuditLog) Append(ctx context.Context, e audit.Entry) error {
	err := a.l.withConn(ctx, func(c *pgx.Conn) error {
		_, err := c.Exec(ctx, `INSERT INTO audit_log (at, operator, declared_operator, action, target, reason)
			VALUES ($1, $2, $3, $4, $5, $6)`, e.At, e.Operator, e.DeclaredOperator, e.Action, e.Target, e.Reason)
		return err
	})
	if err != nil {
		return fmt.Errorf("ledger: recording an audit entry: %w", err)
	}
	return nil
}

// Entries reads up to limit entries newest first (by id), older than the
// entry cursor names; the next cursor is the last entry's id when more are
// left. Ids are taken at insert and rows commit in about that order; an
// entry that commits after a reader's first page (a newer change) is not in
// its later pages.
func (a AuditLog) Entries(ctx context.Context, limit int, cursor string) ([]audit.Entry, string, error) {
	var before int64 = -1 // no cursor: from the newest
	if cursor != "" {
		n, err := strconv.ParseInt(cursor, 10, 64)
		if err != nil || n < 1 || strconv.FormatInt(n, 10) != cursor {
			return nil, "", audit.ErrBadCursor
		}
		before = n
	}
	var out []audit.Entry
	var ids []int64
	err := a.l.withConn(ctx, func(c *pgx.Conn) error {
		rows, err := c.Query(ctx, `SELECT id, at, operator, declared_operator, action, target, reason FROM audit_log
			WHERE $1 < 0 OR id < $1 ORDER BY id DESC LIMIT $2`, before, limit+1)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var id int64
			var e audit.Entry
			if err := rows.Scan(&id, &e.At, &e.Operator, &e.DeclaredOperator, &e.Action, &e.Target, &e.Reason); err != nil {
				return err
			}
			e.At = e.At.UTC()
			ids = append(ids, id)
			out = append(out, e)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, "", fmt.Errorf("ledger: reading the audit log: %w", err)
	}
	next := ""
	if len(out) > limit {
		out = out[:limit]
		next = strconv.FormatInt(ids[limit-1], 10)
	}
	return out, next, nil
}

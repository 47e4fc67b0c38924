package store

import (
	"context"
	"fmt"
	"regexp"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/internal/audit"
)

// AuditStream is the audit log of Redis-only mode: one stream (shard.Layout
// Audit), capped with XADD MAXLEN ~ (the oldest entries leave first).
// Entries are read newest first from the primary, paged by stream id.
type AuditStream struct {
	s      *Store
	key    string
	maxLen int64
}

var _ audit.Backend = (*AuditStream)(nil)

// AuditStream returns the audit log kept in the stream key, at most about
// maxLen entries (≥ 1).
func (s *Store) AuditStream(key string, maxLen int64) *AuditStream {
	return &AuditStream{s: s, key: key, maxLen: max(maxLen, 1)}
}

// Stream fields of an entry.
const (
	auditAt       = "at"
	auditOperator = "op"
	auditDeclared = "dop"
	auditAction   = "act"
	auditTarget   = "tgt"
	auditReason   = "rsn"
)

// Append adds e at the stream's end (id: Redis's clock) and trims the stream
// to about maxLen entries.
func (a *AuditStream) Append(ctx context.Context, e audit.Entry) error {
	ctx, cancel := a.s.deadline(ctx)
	defer cancel()
	err := a.s.rw.XAdd(ctx, &redis.XAddArgs{Stream: a.key, MaxLen: a.maxLen, Approx: true, ID: "*",
		Values: []any{auditAt, e.At.UTC().Format(time.RFC3339Nano), auditOperator, e.Operator, auditDeclared, e.DeclaredOperator,
			auditAction, e.Action, auditTarget, e.Target, auditReason, e.Reason}}).Err()
	if err != nil {
		return a.s.fail("audit", fmt.Errorf("appending to the audit log: %w", err))
	}
	return nil
}

// streamID is a stream entry id: ms-seq.
var streamID = regexp.MustCompile(`^[0-9]{1,20}-[0-9]{1,20}$`)

// Entries reads up to limit entries newest first, strictly older than the
// entry cursor names (exclusive XREVRANGE); the next cursor is the last
// entry's id when more are left. An entry appended while a reader pages is
// newer than its first page and never shows up in a later one; an entry
// trimmed away while it pages is gone.
func (a *AuditStream) Entries(ctx context.Context, limit int, cursor string) ([]audit.Entry, string, error) {
	end := "+"
	if cursor != "" {
		if !streamID.MatchString(cursor) {
			return nil, "", audit.ErrBadCursor
		}
		end = "(" + cursor
	}
	ctx, cancel := a.s.deadline(ctx)
	defer cancel()
	msgs, err := a.s.rw.XRevRangeN(ctx, a.key, end, "-", int64(limit)+1).Result()
	if err != nil {
		return nil, "", a.s.fail("audit", fmt.Errorf("reading the audit log: %w", err))
	}
	next := ""
	if len(msgs) > limit {
		msgs = msgs[:limit]
		next = msgs[limit-1].ID
	}
	out := make([]audit.Entry, len(msgs))
	for i, m := range msgs {
		str := func(k string) string { v, _ := m.Values[k].(string); return v }
		at, err := time.Parse(time.RFC3339Nano, str(auditAt))
		if err != nil {
			return nil, "", fmt.Errorf("store: audit entry %s: bad time %q", m.ID, str(auditAt))
		}
		out[i] = audit.Entry{At: at.UTC(), Operator: str(auditOperator), DeclaredOperator: str(auditDeclared),
			Action: str(auditAction), Target: str(auditTarget), Reason: str(auditReason)}
	}
	return out, next, nil
}

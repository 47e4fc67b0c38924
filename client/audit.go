package client

import (
	"context"
	"github.com/rankgate/rankgate/api/wire"
	"net/http"
	"net/url"
	"strconv"
)

// AuditEntry is one administrative change in the audit log; AuditPage one
// page of it, newest first (NextCursor continues with older entries).
type (
	AuditEntry = wire.AuditEntry
	AuditPage  = wire.AuditPage
)

// Audit lists the audit log newest first (scope admin): limit 0 is the
// server's default (50), cursor "" the newest page, else a NextCursor.
func (c *Client) Audit(ctx context.Context, limit int, cursor string) (AuditPage, error) {
	q := url.Values{}
	if limit > 0 {
		q.Set("limit", strconv.Itoa(limit))
	}
	if cursor != "" {
		q.Set("cursor", cursor)
	}
	var out AuditPage
	err := c.do(ctx, call{method: http.MethodGet, path: "/v1/audit", query: q, idempotent: true}, &out)
	return out, err
}

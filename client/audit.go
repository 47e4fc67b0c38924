package client

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"time"
)

// AuditEntry is one administrative change in the audit log.
type AuditEntry struct {
	At time.Time `json:"at"`
	// Operator is the static token's name, "jwt:" and a player token's
	// subject, or "anonymous" on an open API.
	Operator string `json:"operator"`
	// DeclaredOperator is the "operator" the request body named
	// (unverified); empty when it named none.
	DeclaredOperator string `json:"declared_operator,omitempty"`
	Action           string `json:"action"`
	// Target names what changed; an erased member only as
	// "member:hmac-sha256:<hex>".
	Target string `json:"target"`
	Reason string `json:"reason"`
}

// AuditPage is one page of the audit log, newest first.
type AuditPage struct {
	Entries []AuditEntry `json:"entries"`
	// NextCursor continues with older entries; empty on the last page.
	NextCursor string `json:"next_cursor,omitempty"`
}

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

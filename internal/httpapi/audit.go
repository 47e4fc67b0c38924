package httpapi

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/rankgate/rankgate/internal/audit"
	"github.com/rankgate/rankgate/internal/rank"
)

// AuditLog records administrative changes and lists them (*audit.Log).
type AuditLog interface {
	audit.Recorder
	List(ctx context.Context, limit int, cursor string) (audit.Page, error)
	// MemberTarget names a member by its keyed hash (an erasure's target);
	// audit.ErrNoSecret without audit.hmac_secret_env.
	MemberTarget(member string) (string, error)
}

var _ AuditLog = (*audit.Log)(nil)

// Anonymous is the operator of a change made on an open API (no tokens
// configured, loopback only).
const Anonymous = "anonymous"

// auditTimeout bounds recording one entry. The change has happened by then,
// so the request's own cancellation (a client that went away) does not stop
// its record.
const auditTimeout = 5 * time.Second

// OperatorOf names who sent r for the audit log: the static token's name
// (its env var, never the secret), "jwt:" and a player token's subject, or
// Anonymous when the API is open. Auth puts the principal in the context of
// every admin route.
func OperatorOf(r *http.Request) string {
	if p, ok := PrincipalFrom(r.Context()); ok && p.Token != "" {
		return p.Token
	}
	return Anonymous
}

// record writes the audit entry of a change that succeeded: the operator
// from the request, the time now. A failure is the audit log's to report
// (logged at error level, rankgate_audit_failures_total): the change is
// done, and its answer goes out.
func (s *server) record(r *http.Request, e audit.Entry) {
	if s.audit == nil {
		return
	}
	e.Operator = OperatorOf(r)
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), auditTimeout)
	defer cancel()
	_ = s.audit.Record(ctx, e)
}

// auditList serves GET /v1/audit.
func (s *server) auditList(w http.ResponseWriter, r *http.Request) error {
	q := newParams(r)
	limit := q.int("limit", audit.DefaultLimit)
	cursor, _ := q.str("cursor")
	if q.err != nil {
		return q.err
	}
	if s.audit == nil {
		return rank.Errorf(rank.CodeUnavailable, "this gateway keeps no audit log")
	}
	page, err := s.audit.List(r.Context(), limit, cursor)
	if err != nil {
		return err
	}
	return writeJSON(w, http.StatusOK, page)
}

// boardTarget names a board as the request addressed it ("current" stays
// "current": the entry's at says which period that was).
func boardTarget(r *http.Request) string {
	return "board:" + r.PathValue("family") + "/" + r.PathValue("period") + "/" + r.PathValue("dimension")
}

// memberTarget names a member in the clear (removals, bans); an erasure
// names it only by audit.MemberTarget.
func memberTarget(member string) string { return "member:" + member }

// familiesTarget lists a ban's families ("" : every family).
func familiesTarget(fs []string) string {
	if len(fs) == 0 {
		return ""
	}
	return " families:" + strings.Join(fs, ",")
}

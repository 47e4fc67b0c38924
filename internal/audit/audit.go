// Package audit is rankgate's audit log: who changed what, when and why.
// Every administrative change (a removal, a ban or unban, a correction, a
// review decision, an erasure, a rebuild, a derive, a tournament created or
// cancelled, a manual freeze, settle or archive, an award sent again) is one
// Entry: time, operator (the static token's name, or "jwt:" and the JWT
// subject), action, target and reason.
//
// The package holds the entry, the Recorder interface callers record
// through, the Log that validates, times, counts and stores entries in a
// Backend (a capped Redis stream in internal/store, a PostgreSQL table in
// internal/ledger), and MemberTarget, the keyed hash (HMAC-SHA256) that
// names an erased member: the clear id of an erased member never reaches
// the log.
//
// It imports internal/rank (its errors) and Prometheus only; it must not
// import go-redis, net/http, internal/store, internal/ledger, internal/gateway
// or internal/httpapi.
package audit

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"github.com/rankgate/rankgate/api/wire"
	"log/slog"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rankgate/rankgate/internal/rank"
)

// Actions: what an entry records.
const (
	ActionMemberRemove     = "member.remove"     // DELETE {board}/members/{member}
	ActionMemberBan        = "member.ban"        // PUT /v1/bans/{member}
	ActionMemberUnban      = "member.unban"      // DELETE /v1/bans/{member}
	ActionMemberErase      = "member.erase"      // DELETE /v1/members/{member}
	ActionCorrection       = "correction"        // POST /v1/corrections
	ActionReviewAccept     = "review.accept"     // POST /v1/reviews/{id}/decision, accept: true
	ActionReviewReject     = "review.reject"     // POST /v1/reviews/{id}/decision, accept: false
	ActionBoardRebuild     = "board.rebuild"     // POST {board}/rebuild
	ActionPeriodFreeze     = "period.freeze"     // POST /v1/periods/{family}/{period}/freeze
	ActionPeriodSettle     = "period.settle"     // POST /v1/periods/{family}/{period}/settle
	ActionPeriodArchive    = "period.archive"    // POST /v1/periods/{family}/{period}/archive
	ActionPeriodDerive     = "period.derive"     // POST /v1/periods/{family}/{period}/derive
	ActionTournamentCreate = "tournament.create" // POST /v1/tournaments
	ActionTournamentCancel = "tournament.cancel" // DELETE /v1/tournaments/{id}
	ActionAwardRetry       = "award.retry"       // POST /v1/awards/{key}/retry
)

// Actions lists every action, in the order the docs list them.
var Actions = []string{
	ActionMemberRemove, ActionMemberBan, ActionMemberUnban, ActionMemberErase, ActionCorrection,
	ActionReviewAccept, ActionReviewReject, ActionBoardRebuild, ActionPeriodFreeze, ActionPeriodSettle,
	ActionPeriodArchive, ActionPeriodDerive, ActionTournamentCreate, ActionTournamentCancel, ActionAwardRetry,
}

// Entry is one audited change (its fields: wire.AuditEntry).
type Entry = wire.AuditEntry

// Page is one page of GET /v1/audit: newest first; NextCursor, when not
// empty, continues after the page's last entry.
type Page = wire.AuditPage

// Recorder records an entry: what handlers (and the erasure) call after a
// change succeeded. *Log implements it.
type Recorder interface {
	Record(ctx context.Context, e Entry) error
}

// Backend stores entries: a capped Redis stream (Redis-only mode) or a
// PostgreSQL table (ledger mode).
type Backend interface {
	// Append stores e (validated, At set).
	Append(ctx context.Context, e Entry) error
	// Entries returns up to limit entries, newest first, starting after
	// cursor ("" : the newest), and the cursor of the next page ("" : none
	// left). A cursor this backend did not hand out is ErrBadCursor.
	Entries(ctx context.Context, limit int, cursor string) ([]Entry, string, error)
}

var _ Recorder = (*Log)(nil)

// ErrBadCursor: a cursor the backend did not hand out.
var ErrBadCursor = errors.New("audit: invalid cursor")

// ErrClearMember: an erasure entry whose target is not MemberTarget's keyed
// hash. Nothing is stored.
var ErrClearMember = errors.New("audit: an erasure's target must be the member's keyed hash (audit.MemberTarget)")

// ErrNoSecret: MemberTarget without a configured secret (audit.hmac_secret_env).
var ErrNoSecret = errors.New("audit: no HMAC secret configured (audit.hmac_secret_env)")

// Field bounds.
const (
	MaxOperator = 160 // "jwt:" + a subject, or a token's env var name
	MaxTarget   = 512
	MaxReason   = 512
	// MinSecret is the shortest accepted HMAC secret, in bytes.
	MinSecret = 32
	// DefaultLimit and MaxLimit bound GET /v1/audit's limit.
	DefaultLimit = 50
	MaxLimit     = 1000
)

// memberHashPrefix starts the target of an erased member.
const memberHashPrefix = "member:hmac-sha256:"

// UnnamedMember is the target of an erasure on a gateway without a secret
// (audit.hmac_secret_env unset): the entry still says who erased a member,
// when and why, but names no member at all — neither in the clear nor by a
// hash that could be tested without a key.
const UnnamedMember = "member:unnamed"

// MemberTarget is the target that names a member by a keyed hash only:
// "member:hmac-sha256:" and the hex HMAC-SHA256 of the member id under
// secret. The same member and secret always give the same target, so an
// operator who knows a member id (and the secret) can find its erasure;
// without the secret the id cannot be recovered or tested.
func MemberTarget(secret []byte, member string) string {
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(member))
	return memberHashPrefix + hex.EncodeToString(m.Sum(nil))
}

// Erasure is the entry of a member's erasure (DELETE /v1/members/{member}):
// target is the member's keyed hash (MemberTarget, asked for before the
// erasure runs, so that a gateway without a secret refuses the erasure
// instead of making one it cannot record), and every occurrence of the
// member id in the request's reason and declared operator is replaced by
// "[member]": the clear id goes into no field. The caller sets nothing
// else; Record adds the time, the handler the operator.
func Erasure(target, member, declaredOperator, reason string) Entry {
	cut := func(s string) string {
		if member == "" {
			return s
		}
		return strings.ReplaceAll(s, member, "[member]")
	}
	return Entry{Action: ActionMemberErase, Target: target, DeclaredOperator: cut(declaredOperator), Reason: cut(reason)}
}

// Options configure New.
type Options struct {
	// Logger receives the failures of recording (at error level); nil
	// discards.
	Logger *slog.Logger
	// Registerer takes rankgate_audit_entries_total{action} and
	// rankgate_audit_failures_total{action}; nil leaves them unregistered.
	Registerer prometheus.Registerer
	// Now is the clock of At; nil means time.Now.
	Now func() time.Time
	// Secret is the HMAC key of MemberTarget (audit.hmac_secret_env); nil:
	// Log.MemberTarget answers ErrNoSecret. At least MinSecret bytes.
	Secret []byte
}

// Log records entries in a Backend and lists them. It is safe for
// concurrent use.
type Log struct {
	be       Backend
	log      *slog.Logger
	now      func() time.Time
	secret   []byte
	recorded *prometheus.CounterVec
	failed   *prometheus.CounterVec
}

// New builds a Log over be.
func New(be Backend, o Options) (*Log, error) {
	if be == nil {
		return nil, errors.New("audit: nil Backend")
	}
	if o.Secret != nil && len(o.Secret) < MinSecret {
		return nil, fmt.Errorf("audit: the HMAC secret has %d bytes, want at least %d", len(o.Secret), MinSecret)
	}
	l := &Log{be: be, log: o.Logger, now: o.Now, secret: o.Secret,
		recorded: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rankgate_audit_entries_total",
			Help: "Audit entries recorded, by action.",
		}, []string{"action"}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "rankgate_audit_failures_total",
			Help: "Administrative changes that succeeded but could not be recorded in the audit log, by action (each is logged at error level).",
		}, []string{"action"}),
	}
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	if l.now == nil {
		l.now = time.Now
	}
	for _, a := range Actions { // every series exists from the start, at 0
		l.recorded.WithLabelValues(a)
		l.failed.WithLabelValues(a)
	}
	if o.Registerer != nil {
		for _, c := range []prometheus.Collector{l.recorded, l.failed} {
			if err := o.Registerer.Register(c); err != nil {
				return nil, fmt.Errorf("audit: registering metrics: %w", err)
			}
		}
	}
	return l, nil
}

// MemberTarget is the package's MemberTarget under the Log's secret, or
// ErrNoSecret when none is configured.
// Without a secret it answers UnnamedMember and ErrNoSecret.
func (l *Log) MemberTarget(member string) (string, error) {
	if l.secret == nil {
		return UnnamedMember, ErrNoSecret
	}
	return MemberTarget(l.secret, member), nil
}

// Record validates e, sets its At (when zero) and stores it. A failure is
// logged at error level and counted in rankgate_audit_failures_total before
// it is returned: the caller's change has happened already, so callers
// answer it anyway (see docs/guide.md, "The audit log").
func (l *Log) Record(ctx context.Context, e Entry) error {
	if e.At.IsZero() {
		e.At = l.now()
	}
	e.At = e.At.UTC()
	err := check(e)
	if err == nil {
		err = l.be.Append(ctx, e)
	}
	action := e.Action
	if !known(action) {
		action = "unknown"
	}
	if err != nil {
		l.failed.WithLabelValues(action).Inc()
		// The clear target of an erasure is never logged either.
		target := e.Target
		if errors.Is(err, ErrClearMember) {
			target = "(withheld)"
		}
		l.log.ErrorContext(ctx, "audit: an administrative change was not recorded", "action", e.Action,
			"operator", e.Operator, "target", target, "err", err)
		return err
	}
	l.recorded.WithLabelValues(action).Inc()
	return nil
}

// List returns a page of entries, newest first. A limit outside
// 1..MaxLimit is 400 invalid_argument (field limit), a cursor the backend
// did not hand out 400 invalid_cursor (field cursor).
func (l *Log) List(ctx context.Context, limit int, cursor string) (Page, error) {
	if limit < 1 || limit > MaxLimit {
		return Page{}, rank.Invalid("limit", "limit must be within 1..%d", MaxLimit)
	}
	es, next, err := l.be.Entries(ctx, limit, cursor)
	switch {
	case errors.Is(err, ErrBadCursor):
		return Page{}, &rank.Error{Code: rank.CodeInvalidCursor, Field: "cursor", Message: "cursor is not one GET /v1/audit handed out"}
	case err != nil:
		return Page{}, rank.Unavailable(err, "the audit log is unavailable")
	}
	if es == nil {
		es = []Entry{}
	}
	return Page{Entries: es, NextCursor: next}, nil
}

func known(action string) bool {
	for _, a := range Actions {
		if a == action {
			return true
		}
	}
	return false
}

// check validates an entry before it is stored.
func check(e Entry) error {
	switch {
	case !known(e.Action):
		return fmt.Errorf("audit: unknown action %q", e.Action)
	case e.Operator == "" || len(e.Operator) > MaxOperator || !rank.Printable(e.Operator):
		return fmt.Errorf("audit: operator must be printable, 1..%d bytes", MaxOperator)
	case len(e.DeclaredOperator) > MaxOperator || !rank.Printable(e.DeclaredOperator):
		return fmt.Errorf("audit: declared operator must be printable, at most %d bytes", MaxOperator)
	case e.Target == "" || len(e.Target) > MaxTarget || !rank.Printable(e.Target):
		return fmt.Errorf("audit: target must be printable, 1..%d bytes", MaxTarget)
	case len(e.Reason) > MaxReason || !rank.Printable(e.Reason):
		return fmt.Errorf("audit: reason must be printable, at most %d bytes", MaxReason)
	case e.Action == ActionMemberErase && !hashedMember(e.Target) && e.Target != UnnamedMember:
		return ErrClearMember
	}
	return nil
}

// hashedMember reports whether target is exactly a MemberTarget.
func hashedMember(target string) bool {
	h, ok := strings.CutPrefix(target, memberHashPrefix)
	if !ok || len(h) != 2*sha256.Size {
		return false
	}
	_, err := hex.DecodeString(h)
	return err == nil && strings.ToLower(h) == h
}

package wire

import (
	"encoding/json"
	"time"
)

// Data rights and the audit log: DELETE /v1/members/{member} (its body is
// a Removal: who erases and why), GET /v1/members/{member}/export and
// GET /v1/audit.

// ErasureResult answers DELETE /v1/members/{member}: what was erased.
type ErasureResult struct {
	Member string `json:"member"`
	// Boards: the boards (family/period/dimension) the member left.
	Boards int `json:"boards"`
	// LedgerRows: the ledger rows deleted (ledger mode; 0 otherwise).
	LedgerRows int64 `json:"ledger_rows"`
	// Profile: a display profile was deleted.
	Profile bool `json:"profile"`
}

// Export answers GET /v1/members/{member}/export: what is kept of a member.
type Export struct {
	Member    string            `json:"member"`
	Profile   map[string]string `json:"profile"`
	Standings []ExportStanding  `json:"standings"`
	// Events: the member's ledger events, oldest first (ledger mode).
	Events []MemberEvent `json:"events,omitempty"`
}

// ExportStanding is a member's standing on one board (family/period/dimension).
type ExportStanding struct {
	Board  string `json:"board"`
	Points int64  `json:"points"`
	Rank   int64  `json:"rank"`
}

// MemberEvent is one ledger event of a member (an export).
type MemberEvent struct {
	EventID    string            `json:"event_id"`
	Kind       string            `json:"kind"`
	Family     string            `json:"family"`
	Period     string            `json:"period"`
	Dims       map[string]string `json:"dims,omitempty"`
	Delta      *int64            `json:"delta,omitempty"`
	Value      *int64            `json:"value,omitempty"`
	Version    *int64            `json:"version,omitempty"`
	Reverses   string            `json:"reverses,omitempty"`
	ReversedBy string            `json:"reversed_by,omitempty"`
	Operator   string            `json:"operator,omitempty"`
	Reason     string            `json:"reason,omitempty"`
	Metadata   json.RawMessage   `json:"metadata,omitempty"`
	At         time.Time         `json:"at"`
	RecordedAt time.Time         `json:"recorded_at"`
}

// AuditEntry is one administrative change in the audit log.
type AuditEntry struct {
	// At is when the change was recorded.
	At time.Time `json:"at"`
	// Operator is who did it: the static token's name (its env var), "jwt:"
	// and a player token's subject, or "anonymous" on an open API.
	Operator string `json:"operator"`
	// DeclaredOperator is the "operator" the request body named (removals,
	// bans, corrections, review decisions, erasures): what the caller said,
	// not verified; "" when the request names none.
	DeclaredOperator string `json:"declared_operator,omitempty"`
	// Action is what was done: member.remove, member.ban, member.erase, …
	Action string `json:"action"`
	// Target names what changed: "board:F/P/D member:M", "member:M",
	// "period:F/P", "tournament:ID", … ; an erased member only as
	// "member:hmac-sha256:<hex>" (or "member:unnamed" without a secret).
	Target string `json:"target"`
	// Reason is the request's reason ("" when the route takes none).
	Reason string `json:"reason"`
}

// AuditPage is one page of the audit log, newest first; NextCursor, when
// not empty, continues with older entries.
type AuditPage struct {
	Entries    []AuditEntry `json:"entries"`
	NextCursor string       `json:"next_cursor,omitempty"`
}

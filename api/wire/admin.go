package wire

import (
	"encoding/json"
	"time"
)

// PeriodInfo answers GET /v1/families/{f}/period: the period at an instant
// (the current one by default) and when the next one begins (schema
// PeriodInfo).
type PeriodInfo struct {
	Family string     `json:"family"`
	Kind   string     `json:"kind,omitempty"`
	Period string     `json:"period"`
	Starts *time.Time `json:"starts,omitempty"`
	Ends   *time.Time `json:"ends,omitempty"`
	// WritesUntil is the end plus the family's grace: events for the
	// period are accepted until then (unless it is frozen earlier).
	WritesUntil *time.Time `json:"writes_until,omitempty"`
	// State: open, closed (past writes_until), frozen, settled, archived;
	// upcoming before the first season.
	State string `json:"state"`
	// BetweenSeasons: no season is open at the instant; Period is the
	// season before it.
	BetweenSeasons bool `json:"between_seasons,omitempty"`
	// NextPeriod and NextReset: the period that follows and the instant it
	// starts (when "current" moves on). Absent for all and after the last
	// season.
	NextPeriod string     `json:"next_period,omitempty"`
	NextReset  *time.Time `json:"next_reset,omitempty"`
}

// PeriodDetail answers GET /v1/periods/{family}/{period} and the lifecycle
// calls (schema PeriodDetail).
type PeriodDetail struct {
	Family       string         `json:"family"`
	Period       string         `json:"period"`
	State        string         `json:"state"`
	Writable     bool           `json:"writable"`
	Starts       *time.Time     `json:"starts,omitempty"`
	Ends         *time.Time     `json:"ends,omitempty"`
	WritesUntil  *time.Time     `json:"writes_until,omitempty"`
	Boards       []string       `json:"boards"`
	Shards       map[string]int `json:"shards"`
	RulesVersion string         `json:"rules_version"`
	Mode         string         `json:"mode"`
	// Schedule (families with lifecycle): when each automatic step is due
	// ("freeze", "settle", "archive"); NextStep: the step still to come and
	// its time (absent when none is left).
	Schedule map[string]time.Time `json:"schedule,omitempty"`
	NextStep *NextStep            `json:"next_step,omitempty"`
}

// NextStep is the next lifecycle step of a period and when it is due
// (PeriodDetail's next_step).
type NextStep struct {
	Step string    `json:"step"`
	At   time.Time `json:"at"`
	// Waiting names what the step waits for besides time (an operator's
	// freeze or settlement); empty when the scheduler will run it.
	Waiting string `json:"waiting,omitempty"`
}

// Review is one event refused because its period was closed (schema
// Review).
type Review struct {
	ID         string          `json:"id"`
	Family     string          `json:"family"`
	Period     string          `json:"period"`
	Reason     string          `json:"reason"`
	Status     string          `json:"status"`
	ReceivedAt time.Time       `json:"received_at"`
	Event      json.RawMessage `json:"event"`
}

// ReviewList answers GET /v1/reviews (schema ReviewList).
type ReviewList struct {
	Family  string   `json:"family"`
	Period  string   `json:"period"`
	Source  string   `json:"source"`
	Reviews []Review `json:"reviews"`
}

// ReviewDecision answers a decision on a review (schema ReviewDecision).
type ReviewDecision struct {
	ReviewID   string       `json:"review_id"`
	Accepted   bool         `json:"accepted"`
	Correction *EventResult `json:"correction,omitempty"`
}

// Standing is one settled place (schema Standing).
type Standing struct {
	User     string `json:"user"`
	Points   int64  `json:"points"`
	Position int64  `json:"position"`
	Rank     int64  `json:"rank"`
}

// Award is one row of a settlement's award outbox (schema Award).
type Award struct {
	Board          string     `json:"board"`
	User           string     `json:"user"`
	Rank           int64      `json:"rank"`
	Points         int64      `json:"points"`
	IdempotencyKey string     `json:"idempotency_key"`
	DeliveredAt    *time.Time `json:"delivered_at,omitempty"`
}

// Settlement is a period's saved standings and award outbox; it answers
// settle and GET settlement (schema Settlement).
type Settlement struct {
	Family    string                `json:"family"`
	Period    string                `json:"period"`
	Top       int                   `json:"top"`
	RankMode  string                `json:"rank_mode"`
	CreatedAt time.Time             `json:"created_at"`
	Boards    map[string][]Standing `json:"boards"`
	Outbox    []Award               `json:"outbox"`
}

// AwardView is one award with its delivery state, GET /v1/awards (schema
// AwardView).
type AwardView struct {
	IdempotencyKey string     `json:"idempotency_key"`
	Family         string     `json:"family"`
	Period         string     `json:"period"`
	Board          string     `json:"board"`
	User           string     `json:"user"`
	Rank           int64      `json:"rank"`
	Points         int64      `json:"points"`
	State          string     `json:"state"`
	Attempts       int        `json:"attempts"`
	NextAttemptAt  *time.Time `json:"next_attempt_at,omitempty"`
	LastError      string     `json:"last_error,omitempty"`
	DeliveredAt    *time.Time `json:"delivered_at,omitempty"`
	DeliveredVia   string     `json:"delivered_via,omitempty"`
	CreatedAt      time.Time  `json:"created_at"`
}

// AwardList answers GET /v1/awards (schema AwardList).
type AwardList struct {
	Awards []AwardView `json:"awards"`
	// NextAfter, when set, is the `after` of the next page.
	NextAfter string `json:"next_after,omitempty"`
}

// RebuildReport answers POST {board}/rebuild (schema RebuildReport).
type RebuildReport struct {
	Board   string        `json:"board"`
	Members int64         `json:"members"`
	Shards  int           `json:"shards"`
	Took    time.Duration `json:"took_ns"`
}

// Drift is one member whose Redis points (or sort columns) differ from the
// ledger (schema Drift).
type Drift struct {
	User         string `json:"user"`
	LedgerPoints *int64 `json:"ledger_points"`
	RedisPoints  *int64 `json:"redis_points"`
	// LedgerColumns and RedisColumns (families with sort columns): set when
	// the columns differ.
	LedgerColumns map[string]int64 `json:"ledger_columns,omitempty"`
	RedisColumns  map[string]int64 `json:"redis_columns,omitempty"`
}

// ReconcileReport answers GET {board}/reconcile (schema ReconcileReport).
type ReconcileReport struct {
	Board     string  `json:"board"`
	Checked   int64   `json:"checked"`
	Drifted   int64   `json:"drifted"`
	Drift     []Drift `json:"drift"`
	Truncated bool    `json:"truncated,omitempty"`
}

// DeriveReport answers a derivation (schema DeriveReport).
type DeriveReport struct {
	Family string         `json:"family"`
	Period string         `json:"period"`
	Boards []BoardSummary `json:"boards"`
	Took   time.Duration  `json:"took_ns"`
}

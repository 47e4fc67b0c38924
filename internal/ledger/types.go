package ledger

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/rankgate/rankgate/internal/rank"
)

// Rules are the family rules the write path needs.
type Rules struct {
	Aggregate   string // sum (default) | max | min
	Desc        bool   // higher points rank first (settlement order); false: lower first
	TieFirst    bool   // tie "first": equal points rank by achievement seq
	MaxPoints   int64  // |points| bound; ≤ 0: rank.MaxSafe (2^53)
	SeqCapacity int64  // B of the tie encoding: seqs must stay below it (TieFirst only)
	// Projection: the family takes absolute totals from upstream; a removal
	// keeps the upstream's version (Remove).
	Projection bool
	// Columns: the family's sort columns (rank.Column: order, max, and in a
	// sum family each column's aggregate). Events then carry one value per
	// column; the totals keep the member's current columns as columns.lua
	// does in Redis-only mode.
	Columns []rank.Column
}

func (r Rules) check() (Rules, error) {
	switch r.Aggregate {
	case "":
		r.Aggregate = "sum"
	case "sum", "max", "min":
	default:
		return r, fmt.Errorf("%w: aggregate %q (want sum, max or min)", ErrInvalid, r.Aggregate)
	}
	if r.MaxPoints <= 0 {
		r.MaxPoints = rank.MaxSafe // every score must stay exact in a float64
	}
	if len(r.Columns) > rank.MaxColumns {
		return r, fmt.Errorf("%w: %d sort columns (at most %d)", ErrInvalid, len(r.Columns), rank.MaxColumns)
	}
	if r.TieFirst && r.SeqCapacity < 2 {
		return r, fmt.Errorf("%w: seq_capacity %d under tie first (want ≥ 2)", ErrInvalid, r.SeqCapacity)
	}
	return r, nil
}

// Event is one ledger event.
type Event struct {
	EventID string
	Kind    string // award | correction | reversal (Record); projection (Project)
	Family  string
	Period  string // reversals: may be empty (the original's period is used)
	Member  string
	Dims    map[string]string
	// Boards are the dimension names the event updates ("national",
	// "province:zj", ...). Reversals: empty means every board of the original.
	Boards       []string
	Delta        *int64 // sum families
	Value        *int64 // max/min families; projections: the absolute total
	Version      int64  // projections: the upstream version (> 0)
	Reverses     string // reversals: the event undone
	Operator     string // corrections: who (required)
	Reason       string
	RulesVersion string
	ReceivedAt   time.Time // zero: now
	OccurredAt   time.Time // zero: ReceivedAt
	// Columns: one value per sort column of the family (awards, corrections,
	// projections of a family with columns; nil otherwise).
	Columns []int64
	// Metadata: the event's metadata JSON, kept byte for byte ("" : none).
	// The totals keep the metadata of the change that last moved the
	// standing.
	Metadata string
}

// BoardTotal is a member's totals on one board.
type BoardTotal struct {
	Board   string
	Points  int64
	Version int64
	Seq     int64 // achievement seq (tie first; 0 under tie member); −1 when absent
	Present bool  // false: the member is not on the board
	Changed bool  // this call moved the totals (false: max/min not improved, stale projection, duplicate)
	// Columns and Metadata: the member's current sort columns (nil while
	// absent or in a family without columns) and metadata ("" : none).
	Columns  []int64
	Metadata string
}

// Outcome is the answer to Record and Project.
type Outcome struct {
	// Duplicate: the event id was already recorded (or the original of a
	// reversal was already reversed); nothing changed and Boards are the
	// current totals.
	Duplicate bool
	Boards    []BoardTotal
}

// Changed reports whether any board changed.
func (o Outcome) Changed() bool {
	for _, b := range o.Boards {
		if b.Changed {
			return true
		}
	}
	return false
}

// MemberTotal is one member's totals on a board.
type MemberTotal struct {
	Member    string
	Points    int64
	Version   int64
	Seq       int64
	Present   bool
	UpdatedAt time.Time
	Columns   []int64 // see BoardTotal
	Metadata  string
}

// Pending is an event whose totals Redis may not have yet, with the member's
// current totals on each board of the event.
type Pending struct {
	EventID string
	Kind    string
	Family  string
	Period  string
	Member  string
	Boards  []BoardTotal
}

// Review is a late event kept for an operator's decision.
type Review struct {
	ID           int64
	Family       string
	Period       string
	EventID      string          // optional; a review with the same (family, period, event id) is kept once
	Event        json.RawMessage // the event as received
	Reason       string          // why it was kept: past_grace, frozen, ...
	ReceivedAt   time.Time       // zero: now
	Status       string          // pending | accepted | rejected
	DecidedBy    string
	DecidedAt    time.Time // zero while pending
	CorrectionID string    // the correction an accepted review became, if any
}

// Standing is one member's final place on a board.
type Standing struct {
	Member   string
	Points   int64
	Seq      int64
	Position int64 // 0-based
	Rank     int64
	cols     []int64 // sort columns while settling: equal points and columns share a competition rank
}

// Settlement is the stored final result of a family period.
type Settlement struct {
	Family    string
	Period    string
	Top       int
	RankMode  string // competition | ordinal
	CreatedAt time.Time
	Boards    map[string][]Standing // board → standings in position order
}

// Award is one award outbox row: deliver it once, by IdempotencyKey.
type Award struct {
	Family         string
	Period         string
	Board          string
	Member         string
	Rank           int64
	Points         int64
	IdempotencyKey string
	CreatedAt      time.Time
	DeliveredAt    time.Time // zero until delivered
}

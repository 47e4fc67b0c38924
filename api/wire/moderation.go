package wire

import "time"

// Removal is the body of DELETE {board}/members/{member}: who removes and
// why (schema Removal).
type Removal struct {
	Operator string `json:"operator"`
	Reason   string `json:"reason"`
}

// RemovalResult answers DELETE {board}/members/{member} (schema
// RemovalResult).
type RemovalResult struct {
	Removed bool  `json:"removed"`
	Points  int64 `json:"points"` // the points the member had on the board
}

// BanRequest is the body of PUT /v1/bans/{member} (schema BanRequest).
type BanRequest struct {
	Operator string   `json:"operator"`
	Reason   string   `json:"reason"`
	Families []string `json:"families,omitempty"` // empty: every family
}

// Ban is one member's ban (schema Ban).
type Ban struct {
	User     string    `json:"user"`
	Families []string  `json:"families"` // empty: every family
	Operator string    `json:"operator"`
	Reason   string    `json:"reason"`
	At       time.Time `json:"at"`
}

// BanResult answers PUT /v1/bans/{member}: the ban and the boards of the
// current periods the member was removed from, with the points it had
// (schema BanResult).
type BanResult struct {
	Ban
	Removed []BoardPoints `json:"removed"`
}

// BanList answers GET /v1/bans (schema BanList).
type BanList struct {
	Bans []Ban `json:"bans"`
}

// HistoryEvent is one event of a member's score history on a board (schema
// HistoryEvent).
type HistoryEvent struct {
	EventID string `json:"event_id"`
	Kind    string `json:"kind"` // award | correction | reversal | projection | removal
	// Delta: a sum event's delta, a reversal's or removal's change on this
	// board; Value: a max/min event's value, a projection's total.
	Delta *int64 `json:"delta,omitempty"`
	Value *int64 `json:"value,omitempty"`
	// Columns: the sort column values the event carried (families with
	// columns: awards, corrections, projections).
	Columns      map[string]int64 `json:"columns,omitempty"`
	Reverses     string           `json:"reverses,omitempty"`
	ReversedBy   string           `json:"reversed_by,omitempty"`
	PointsBefore int64            `json:"points_before"`
	PointsAfter  int64            `json:"points_after"`
	Ranked       bool             `json:"ranked"`  // on the board after the event
	Changed      bool             `json:"changed"` // false: a max/min value that did not improve, a stale projection, a reversal a removal had made moot
	At           time.Time        `json:"at"`
	RecordedAt   time.Time        `json:"recorded_at"`
	Operator     string           `json:"operator"`
	Reason       string           `json:"reason"`
}

// History answers GET {board}/members/{member}/history (schema History).
type History struct {
	Board      string         `json:"board"`
	User       string         `json:"user"`
	Events     []HistoryEvent `json:"events"`
	NextCursor string         `json:"next_cursor,omitempty"`
}

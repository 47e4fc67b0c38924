package wire

import (
	"encoding/json"
	"time"
)

// Event is one point event (schema Event). Exactly one of Delta (sum
// families), Value (max/min families) or Reverses is set.
type Event struct {
	EventID  string            `json:"event_id"`
	Family   string            `json:"family"`
	User     string            `json:"user"`
	Delta    *int64            `json:"delta,omitempty"`
	Value    *int64            `json:"value,omitempty"`
	Dims     map[string]string `json:"dims,omitempty"`
	At       *time.Time        `json:"at,omitempty"`
	Reverses string            `json:"reverses,omitempty"`
	Reason   string            `json:"reason,omitempty"`
	// Columns: the sort column values (families with columns).
	Columns map[string]int64 `json:"columns,omitempty"`
	// Metadata: a JSON object of at most 512 bytes, kept with the entry this
	// event last changed.
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// BoardPoints is the outcome of an event on one board (schema BoardPoints).
type BoardPoints struct {
	Board    string `json:"board"`
	Points   int64  `json:"points"`
	Improved *bool  `json:"improved,omitempty"`
}

// EventResult is the outcome of one event (schema EventResult).
type EventResult struct {
	EventID   string        `json:"event_id"`
	Duplicate bool          `json:"duplicate"`
	Period    string        `json:"period"`
	Boards    []BoardPoints `json:"boards"`
	Improved  *bool         `json:"improved,omitempty"`
}

// Projection is an absolute total from an upstream ledger (schema
// Projection).
type Projection struct {
	Version int64 `json:"version"`
	Points  int64 `json:"points"`
	// Columns and Metadata: see Event.
	Columns  map[string]int64 `json:"columns,omitempty"`
	Metadata json.RawMessage  `json:"metadata,omitempty"`
}

// ProjectionResult answers a projection (schema ProjectionResult).
type ProjectionResult struct {
	Applied        bool   `json:"applied"`
	Version        int64  `json:"version,omitempty"`
	CurrentVersion int64  `json:"current_version,omitempty"`
	Points         int64  `json:"points"`
	Board          string `json:"board"`
}

// Profile is a member's display data; never part of ranking (schema
// Profile).
type Profile struct {
	Name   string `json:"name"`
	Avatar string `json:"avatar"`
}

// Correction is an audited change, ledger mode (schema Correction).
type Correction struct {
	CorrectionID string            `json:"correction_id"`
	Family       string            `json:"family"`
	User         string            `json:"user"`
	Dims         map[string]string `json:"dims,omitempty"`
	Delta        *int64            `json:"delta"`
	Operator     string            `json:"operator"`
	Reason       string            `json:"reason"`
	Period       string            `json:"period,omitempty"`
	// Columns and Metadata: as an event's (a family with sort columns needs
	// every column; see Event).
	Columns  map[string]int64 `json:"columns,omitempty"`
	Metadata json.RawMessage  `json:"metadata,omitempty"`
}

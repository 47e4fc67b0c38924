package client

// The answer types below deliberately mirror the gateway's wire types
// (internal/gateway types.go, settle.go, lifecycle.go, layout.go; moderation.go
// and bans.go are mirrored in client/moderation.go): a client
// must not import the server's internal packages, and the one source of truth
// for both is api/openapi.yaml, against which the e2e tests check every
// exchange — so a drift on either side fails a test rather than hiding here.

import (
	"encoding/json"
	"time"
)

// Int returns a pointer to v (for Event.Delta and Event.Value).
func Int(v int64) *int64 { return &v }

// Board names a board: Period may be "current"; Dimension is "national" or
// "type:value" ("province:zhejiang").
type Board struct {
	Family, Period, Dimension string
}

// ReadOptions are the query parameters every read takes.
type ReadOptions struct {
	Consistency  string // "" (the read's default), cached, replica, primary or index
	AllowPartial bool   // partial=allow: answer what answered when a shard fails
	Profiles     bool   // profiles=1
}

// Event is one point event. Exactly one of Delta (sum families), Value
// (max/min families) or Reverses is set.
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
	// Columns: the sort column values of a family with columns.
	Columns map[string]int64 `json:"columns,omitempty"`
	// Metadata: a JSON object of at most 512 bytes kept with the entry.
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// BoardPoints is an event's outcome on one board.
type BoardPoints struct {
	Board    string `json:"board"`
	Points   int64  `json:"points"`
	Improved *bool  `json:"improved,omitempty"`
}

// EventResult answers an event.
type EventResult struct {
	EventID   string        `json:"event_id"`
	Duplicate bool          `json:"duplicate"`
	Period    string        `json:"period"`
	Boards    []BoardPoints `json:"boards"`
	Improved  *bool         `json:"improved,omitempty"`
}

// BatchItem is one event's outcome in a batch: a result or an error.
type BatchItem struct {
	EventResult
	Error *Error `json:"error,omitempty"`
}

// UnmarshalJSON reads either shape.
func (b *BatchItem) UnmarshalJSON(data []byte) error {
	var probe struct {
		Error *Error `json:"error"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		return err
	}
	if probe.Error != nil {
		b.Error = probe.Error
		return nil
	}
	return json.Unmarshal(data, &b.EventResult)
}

// Projection is an absolute total with a version.
type Projection struct {
	Version  int64            `json:"version"`
	Points   int64            `json:"points"`
	Columns  map[string]int64 `json:"columns,omitempty"`
	Metadata json.RawMessage  `json:"metadata,omitempty"`
}

// ProjectionResult answers a projection.
type ProjectionResult struct {
	Applied        bool   `json:"applied"`
	Version        int64  `json:"version,omitempty"`
	CurrentVersion int64  `json:"current_version,omitempty"`
	Points         int64  `json:"points"`
	Board          string `json:"board"`
}

// Profile is a member's display data.
type Profile struct {
	Name   string `json:"name"`
	Avatar string `json:"avatar"`
}

// ReadMeta is what every read answers besides its payload.
type ReadMeta struct {
	Board  string    `json:"board"`
	Source string    `json:"source"` // cache, replica, primary or index
	AsOf   time.Time `json:"as_of"`
	// LagMs (source index): how far behind Redis the gateway's read index
	// may be; every write acknowledged before AsOf is in the answer.
	LagMs         *int64 `json:"lag_ms,omitempty"`
	Partial       bool   `json:"partial,omitempty"`
	MissingShards []int  `json:"missing_shards,omitempty"`
}

// Entry is one member on a board.
type Entry struct {
	User     string            `json:"user"`
	Points   int64             `json:"points"`
	Position int64             `json:"position"` // 0-based
	Rank     int64             `json:"rank"`
	Profile  map[string]string `json:"profile,omitempty"`
	Columns  map[string]int64  `json:"columns,omitempty"`
	Metadata json.RawMessage   `json:"metadata,omitempty"`
}

// Page is an ordered list of entries.
type Page struct {
	ReadMeta
	Entries    []Entry `json:"entries"`
	NextCursor string  `json:"next_cursor,omitempty"`
}

// MemberStanding is a member's place on a board.
type MemberStanding struct {
	ReadMeta
	User       string            `json:"user"`
	Points     int64             `json:"points"`
	Position   int64             `json:"position"`
	Rank       int64             `json:"rank"`
	Members    int64             `json:"members"`
	Percentile float64           `json:"percentile"`
	Profile    map[string]string `json:"profile,omitempty"`
	Columns    map[string]int64  `json:"columns,omitempty"`
	Metadata   json.RawMessage   `json:"metadata,omitempty"`
}

// Count answers a points-band count.
type Count struct {
	ReadMeta
	Count int64 `json:"count"`
}

// SnapshotInfo answers a snapshot.
type SnapshotInfo struct {
	Board     string    `json:"board"`
	Snapshot  string    `json:"snapshot"`
	ExpiresAt time.Time `json:"expires_at"`
	Size      int64     `json:"size"`
	Depth     int       `json:"depth"`
}

// BoardSummary is one board of a period.
type BoardSummary struct {
	Board     string `json:"board"`
	Dimension string `json:"dimension"`
	Shards    int    `json:"shards"`
	Members   int64  `json:"members"`
}

// BoardList lists the boards of a period.
type BoardList struct {
	ReadMeta
	Family string         `json:"family"`
	Period string         `json:"period"`
	Boards []BoardSummary `json:"boards"`
}

// PeriodInfo is a family's period at a time.
type PeriodInfo struct {
	Family string     `json:"family"`
	Period string     `json:"period"`
	Starts *time.Time `json:"starts,omitempty"`
	Ends   *time.Time `json:"ends,omitempty"`
	State  string     `json:"state"`
}

// FamilyInfo is one configured family.
type FamilyInfo struct {
	Name       string       `json:"name"`
	Period     string       `json:"period"`
	Dimensions []string     `json:"dimensions"`
	Columns    []ColumnInfo `json:"columns,omitempty"`
}

// ColumnInfo is one sort column of a family.
type ColumnInfo struct {
	Name      string `json:"name"`
	Order     string `json:"order"` // asc | desc
	Max       int64  `json:"max"`
	Aggregate string `json:"aggregate,omitempty"`
}

// PeriodDetail is a period's state (administration).
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
}

// Standing is one settled place.
type Standing struct {
	User     string `json:"user"`
	Points   int64  `json:"points"`
	Position int64  `json:"position"`
	Rank     int64  `json:"rank"`
}

// Award is one outbox entry of a settlement.
type Award struct {
	Board          string     `json:"board"`
	User           string     `json:"user"`
	Rank           int64      `json:"rank"`
	Points         int64      `json:"points"`
	IdempotencyKey string     `json:"idempotency_key"`
	DeliveredAt    *time.Time `json:"delivered_at,omitempty"`
}

// Settlement is a period's saved standings and award outbox.
type Settlement struct {
	Family    string                `json:"family"`
	Period    string                `json:"period"`
	Top       int                   `json:"top"`
	RankMode  string                `json:"rank_mode"`
	CreatedAt time.Time             `json:"created_at"`
	Boards    map[string][]Standing `json:"boards"`
	Outbox    []Award               `json:"outbox"`
}

// Correction is an audited change (ledger mode).
type Correction struct {
	CorrectionID string            `json:"correction_id"`
	Family       string            `json:"family"`
	User         string            `json:"user"`
	Dims         map[string]string `json:"dims,omitempty"`
	Delta        *int64            `json:"delta"`
	Operator     string            `json:"operator"`
	Reason       string            `json:"reason"`
	Period       string            `json:"period,omitempty"`
	Columns      map[string]int64  `json:"columns,omitempty"`
	Metadata     json.RawMessage   `json:"metadata,omitempty"`
}

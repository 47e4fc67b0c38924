package gateway

// The JSON answer types here (and in settle.go, lifecycle.go, layout.go,
// moderation.go, bans.go) are mirrored on purpose by the Go client's
// client/types.go and client/moderation.go, which must not
// import internal packages; api/openapi.yaml is the contract both follow, and
// the e2e tests check every exchange against it.

import (
	"encoding/json"
	"time"

	"github.com/rankgate/rankgate/internal/rank"
)

// Consistency is the freshness a read asks for.
type Consistency string

// Consistency levels.
const (
	ConsistencyDefault Consistency = ""
	ConsistencyCached  Consistency = "cached"
	ConsistencyReplica Consistency = "replica"
	ConsistencyPrimary Consistency = "primary"
	// ConsistencyIndex reads the gateway's in-memory read index of the board
	// (families with index.enabled); the answer states its lag.
	ConsistencyIndex Consistency = "index"
)

// Source says where an answer came from.
type Source string

// Sources.
const (
	SourceCache   Source = "cache"
	SourceReplica Source = "replica"
	SourcePrimary Source = "primary"
	SourceIndex   Source = "index"
)

// BoardRef names a board as the API does; Period may be "current".
type BoardRef struct {
	Family    string
	Period    string
	Dimension string // "national" or "type:value"
}

// ReadOptions are the common query parameters of every read.
type ReadOptions struct {
	Consistency  Consistency
	AllowPartial bool
	Profiles     bool
	// Metadata: entries carry their metadata (metadata=1).
	Metadata bool
}

// ReadMeta is what every read answers besides its payload.
type ReadMeta struct {
	Board   string    `json:"board"`
	Source  Source    `json:"source"`
	AsOf    time.Time `json:"as_of"`
	Partial bool      `json:"partial,omitempty"`
	Missing []int     `json:"missing_shards,omitempty"`
	// LagMs (source index): how far behind Redis the index may be, in
	// milliseconds: every write acknowledged before as_of is in the answer.
	LagMs *int64 `json:"lag_ms,omitempty"`
	// MaxAge is the remaining cache lifetime for Cache-Control (cached answers only).
	MaxAge time.Duration `json:"-"`
}

// Page is an ordered list of entries.
type Page struct {
	ReadMeta
	Entries    []rank.Entry `json:"entries"`
	NextCursor string       `json:"next_cursor,omitempty"`
	// entriesJSON is Entries encoded once, for cached pages.
	entriesJSON []byte
	// hit is the whole body of a cache hit, encoded once per cached value
	// (every hit of one value answers the same bytes; only max-age differs,
	// and that is a header).
	hit *lazyBody
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
	// Columns and Metadata: see rank.Entry.
	Columns  map[string]int64 `json:"columns,omitempty"`
	Metadata json.RawMessage  `json:"metadata,omitempty"`
}

// Count is the answer of a points-band count.
type Count struct {
	ReadMeta
	Count int64 `json:"count"`
}

// PageQuery selects a page of entries: by cursor (keyset), by offset
// (realtime), or — with the hot-reads issue — from a snapshot.
type PageQuery struct {
	Limit     int
	Cursor    string
	Offset    int
	HasOffset bool
	Snapshot  string
}

// RangeQuery selects entries whose points lie in [Min, Max], in board order.
type RangeQuery struct {
	Min, Max int64
	Limit    int
	Cursor   string
}

// Event is one point event (api/openapi.yaml). Exactly one of Delta (sum
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
	// Metadata: a JSON object of at most MaxMetadata bytes, kept with the
	// entry this event last changed.
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// BoardPoints is the outcome of an event on one board.
type BoardPoints struct {
	Board    string `json:"board"`
	Points   int64  `json:"points"`
	Improved *bool  `json:"improved,omitempty"`
}

// EventResult is the outcome of one event.
type EventResult struct {
	EventID   string        `json:"event_id"`
	Duplicate bool          `json:"duplicate"`
	Period    string        `json:"period"`
	Boards    []BoardPoints `json:"boards"`
	Improved  *bool         `json:"improved,omitempty"`
}

// Projection is an absolute total from an upstream ledger.
type Projection struct {
	Version int64 `json:"version"`
	Points  int64 `json:"points"`
	// Columns and Metadata: see Event.
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

// PeriodInfo answers GET /v1/families/{f}/period: the period at an instant
// (the current one by default) and when the next one begins.
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

// BatchItem is the outcome of one event of a batch: exactly one of Result and
// Err is set.
type BatchItem struct {
	Result *EventResult
	Err    error
}

// Profile is a member's display data; never part of ranking.
type Profile struct {
	Name   string `json:"name"`
	Avatar string `json:"avatar"`
}

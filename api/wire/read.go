package wire

import (
	"encoding/json"
	"time"
)

// Source says where a read's answer came from.
type Source string

// Sources.
const (
	SourceCache   Source = "cache"
	SourceReplica Source = "replica"
	SourcePrimary Source = "primary"
	SourceIndex   Source = "index"
)

// ReadMeta is what every read answers besides its payload (schema
// ReadMeta).
type ReadMeta struct {
	Board         string    `json:"board"`
	Source        Source    `json:"source"`
	AsOf          time.Time `json:"as_of"`
	Partial       bool      `json:"partial,omitempty"`
	MissingShards []int     `json:"missing_shards,omitempty"`
	// LagMs (source index): how far behind Redis the index may be, in
	// milliseconds: every write acknowledged before as_of is in the answer.
	LagMs *int64 `json:"lag_ms,omitempty"`
	// MaxAge is not on the wire: the gateway's remaining cache lifetime of
	// a cached answer, which it sends as Cache-Control max-age.
	MaxAge time.Duration `json:"-"`
}

// Entry is one member on a board (schema Entry).
type Entry struct {
	User     string            `json:"user"`
	Points   int64             `json:"points"`
	Position int64             `json:"position"` // 0-based
	Rank     int64             `json:"rank"`
	Profile  map[string]string `json:"profile,omitempty"`
	// Columns: the sort column values (families with columns only).
	Columns map[string]int64 `json:"columns,omitempty"`
	// Metadata: the entry's metadata, asked for with metadata=1.
	Metadata json.RawMessage `json:"metadata,omitempty"`
}

// Page is an ordered list of entries (schema Page).
type Page struct {
	ReadMeta
	Entries    []Entry `json:"entries"`
	NextCursor string  `json:"next_cursor,omitempty"`
}

// MemberStanding is a member's place on a board (schema MemberStanding).
type MemberStanding struct {
	ReadMeta
	User       string            `json:"user"`
	Points     int64             `json:"points"`
	Position   int64             `json:"position"`
	Rank       int64             `json:"rank"`
	Members    int64             `json:"members"`
	Percentile float64           `json:"percentile"`
	Profile    map[string]string `json:"profile,omitempty"`
	// Columns and Metadata: see Entry.
	Columns  map[string]int64 `json:"columns,omitempty"`
	Metadata json.RawMessage  `json:"metadata,omitempty"`
}

// Count answers a points-band count (schema Count).
type Count struct {
	ReadMeta
	Count int64 `json:"count"`
}

// SnapshotInfo answers POST {board}/snapshots (schema SnapshotInfo).
type SnapshotInfo struct {
	Board     string    `json:"board"`
	Snapshot  string    `json:"snapshot"`
	ExpiresAt time.Time `json:"expires_at"`
	Size      int64     `json:"size"`
	Depth     int       `json:"depth"`
}

// BoardSummary is one board of a period (schema BoardSummary).
type BoardSummary struct {
	Board     string `json:"board"`
	Dimension string `json:"dimension"`
	Shards    int    `json:"shards"`
	Members   int64  `json:"members"`
}

// BoardList answers GET /v1/boards/{family}/{period} (schema BoardList).
type BoardList struct {
	ReadMeta
	Family string         `json:"family"`
	Period string         `json:"period"`
	Boards []BoardSummary `json:"boards"`
}

// ShardPlacement is one board shard in the cluster (schema ShardPlacement).
type ShardPlacement struct {
	Shard   int    `json:"shard"`
	Key     string `json:"key"`
	Slot    int    `json:"slot"`
	Node    string `json:"node"`
	Members int64  `json:"members"`
	Memory  int64  `json:"memory_bytes"`
}

// BoardPlacement is where one board's shards live (schema BoardPlacement).
type BoardPlacement struct {
	Board  string           `json:"board"`
	Shards []ShardPlacement `json:"shards"`
	// Nodes counts the board's shards per master.
	Nodes map[string]int `json:"nodes"`
}

// NodeLoad sums what a master holds of the listed boards (schema NodeLoad).
type NodeLoad struct {
	Node     string   `json:"node"`
	Replicas []string `json:"replicas,omitempty"`
	Slots    int      `json:"slots"`
	Shards   int      `json:"shards"`
	Members  int64    `json:"members"`
	Memory   int64    `json:"memory_bytes"`
}

// Layout answers GET /v1/layout (schema Layout).
type Layout struct {
	ReadMeta
	Boards   []BoardPlacement `json:"boards"`
	Nodes    []NodeLoad       `json:"nodes"`
	Warnings []string         `json:"warnings"`
}

// FamilyInfo is one configured family as GET /v1/families lists it (schema
// FamilyInfo).
type FamilyInfo struct {
	Name string `json:"name"`
	// Period is the family's period kind (day, week, month, all, …).
	Period string `json:"period"`
	// Dimensions are the family's dimension types, "national" first.
	Dimensions []string `json:"dimensions"`
	// Columns are the sort columns after points (none: omitted).
	Columns []ColumnInfo `json:"columns,omitempty"`
	// Index: the family keeps a read index (families without: omitted).
	Index *IndexInfo `json:"index,omitempty"`
}

// IndexInfo is a family's read index as GET /v1/families lists it.
type IndexInfo struct {
	MaxLagMs int64 `json:"max_lag_ms"`
}

// ColumnInfo is one sort column as GET /v1/families lists it.
type ColumnInfo struct {
	Name      string `json:"name"`
	Order     string `json:"order"` // asc | desc
	Max       int64  `json:"max"`
	Aggregate string `json:"aggregate,omitempty"` // sum families only
}

// FamilyList answers GET /v1/families (schema FamilyList).
type FamilyList struct {
	Families []FamilyInfo `json:"families"`
}

// PageQuery is not a body but the paging query parameters of GET
// {board}/entries: by Cursor (keyset, limit and cursor), by Offset
// (realtime, offset; set HasOffset), or from a Snapshot by Offset.
type PageQuery struct {
	Limit     int
	Cursor    string
	Offset    int
	HasOffset bool
	Snapshot  string
}

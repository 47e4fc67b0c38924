package gateway

import (
	"github.com/rankgate/rankgate/api/wire"
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
type Source = wire.Source

// Sources.
const (
	SourceCache   = wire.SourceCache
	SourceReplica = wire.SourceReplica
	SourcePrimary = wire.SourcePrimary
	SourceIndex   = wire.SourceIndex
)

// The request and answer bodies are package wire's types (api/wire), shared
// with the Go client; these aliases keep the gateway's names.
type (
	ReadMeta         = wire.ReadMeta
	Count            = wire.Count
	Event            = wire.Event
	BoardPoints      = wire.BoardPoints
	EventResult      = wire.EventResult
	Projection       = wire.Projection
	ProjectionResult = wire.ProjectionResult
	PeriodInfo       = wire.PeriodInfo
	Profile          = wire.Profile
	Correction       = wire.Correction

	SnapshotInfo   = wire.SnapshotInfo
	BoardSummary   = wire.BoardSummary
	BoardList      = wire.BoardList
	ShardPlacement = wire.ShardPlacement
	BoardPlacement = wire.BoardPlacement
	NodeLoad       = wire.NodeLoad
	Layout         = wire.Layout

	PeriodDetail    = wire.PeriodDetail
	NextStep        = wire.NextStep
	Review          = wire.Review
	ReviewList      = wire.ReviewList
	ReviewDecision  = wire.ReviewDecision
	Standing        = wire.Standing
	Award           = wire.Award
	SettlementView  = wire.Settlement
	AwardView       = wire.AwardView
	AwardList       = wire.AwardList
	RebuildReport   = wire.RebuildReport
	Drift           = wire.Drift
	ReconcileReport = wire.ReconcileReport
	DeriveReport    = wire.DeriveReport

	Removal       = wire.Removal
	RemovalResult = wire.RemovalResult
	BanRequest    = wire.BanRequest
	Ban           = wire.Ban
	BanResult     = wire.BanResult
	BanList       = wire.BanList
	HistoryEvent  = wire.HistoryEvent
	History       = wire.History

	TournamentInfo = wire.TournamentInfo
	TournamentList = wire.TournamentList
	JoinResult     = wire.JoinResult

	// PageQuery selects a page of entries: by cursor (keyset), by offset
	// (realtime), or from a snapshot.
	PageQuery = wire.PageQuery
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

// MemberStanding is a member's place on a board: wire.MemberStanding, as a
// type of this package so that it can carry its own MarshalJSON (pagejson.go).
type MemberStanding wire.MemberStanding

// Page is an ordered list of entries: wire.Page (the same JSON fields, a
// test holds them equal) plus the encoded copies a cached page keeps.
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

// RangeQuery selects entries whose points lie in [Min, Max], in board order.
type RangeQuery struct {
	Min, Max int64
	Limit    int
	Cursor   string
}

// BatchItem is the outcome of one event of a batch: exactly one of Result and
// Err is set.
type BatchItem struct {
	Result *EventResult
	Err    error
}

package client

// The request and answer types are package wire's (api/wire), the same Go
// types the gateway encodes and decodes; the aliases below keep their names
// in this package. api/openapi.yaml is the contract: a test ties every wire
// type to its schema, and the e2e tests check every exchange against it.

import (
	"encoding/json"

	"github.com/rankgate/rankgate/api/wire"
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

// The wire types, by the names this package has always used.
type (
	// Event is one point event. Exactly one of Delta (sum families), Value
	// (max/min families) or Reverses is set.
	Event = wire.Event
	// BoardPoints is an event's outcome on one board.
	BoardPoints = wire.BoardPoints
	// EventResult answers an event.
	EventResult = wire.EventResult
	// Projection is an absolute total with a version.
	Projection = wire.Projection
	// ProjectionResult answers a projection.
	ProjectionResult = wire.ProjectionResult
	// Profile is a member's display data.
	Profile = wire.Profile
	// Source says where a read's answer came from: cache, replica,
	// primary or index.
	Source = wire.Source
	// ReadMeta is what every read answers besides its payload.
	ReadMeta = wire.ReadMeta
	// Entry is one member on a board.
	Entry = wire.Entry
	// Page is an ordered list of entries.
	Page = wire.Page
	// MemberStanding is a member's place on a board.
	MemberStanding = wire.MemberStanding
	// Count answers a points-band count.
	Count = wire.Count
	// SnapshotInfo answers a snapshot.
	SnapshotInfo = wire.SnapshotInfo
	// BoardSummary is one board of a period.
	BoardSummary = wire.BoardSummary
	// BoardList lists the boards of a period.
	BoardList = wire.BoardList
	// PeriodInfo is a family's period at a time.
	PeriodInfo = wire.PeriodInfo
	// FamilyInfo is one configured family.
	FamilyInfo = wire.FamilyInfo
	// ColumnInfo is one sort column of a family.
	ColumnInfo = wire.ColumnInfo
	// IndexInfo is a family's read index.
	IndexInfo = wire.IndexInfo
	// PeriodDetail is a period's state (administration).
	PeriodDetail = wire.PeriodDetail
	// NextStep is the next lifecycle step of a period.
	NextStep = wire.NextStep
	// Standing is one settled place.
	Standing = wire.Standing
	// Award is one outbox entry of a settlement.
	Award = wire.Award
	// Settlement is a period's saved standings and award outbox.
	Settlement = wire.Settlement
	// Correction is an audited change (ledger mode).
	Correction = wire.Correction
	// PageQuery selects a page: by Cursor (keyset), by Offset (realtime,
	// set HasOffset), or from a Snapshot by Offset.
	PageQuery = wire.PageQuery
)

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

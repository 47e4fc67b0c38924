package config

import (
	"github.com/rankgate/rankgate/internal/period"
	"github.com/rankgate/rankgate/internal/rank"
)

// Encoding is the family's score encoding: tie "first" carries B, an asc
// family stores negated points, |points| ≤ MaxPoints.
func (f *Family) Encoding() rank.Encoding {
	e := rank.Encoding{Asc: !f.Desc(), MaxPoints: f.MaxPoints}
	if len(f.Columns) > 0 {
		// The score is the stored points alone; a tie-first seq lives in
		// the stored member (rank.Columns).
		var b int64
		if f.TieFirst() {
			b = f.SeqCapacity
		}
		e.Cols = rank.NewColumns(f.RankColumns(), b)
		return e
	}
	if f.TieFirst() {
		e.B = f.SeqCapacity
	}
	return e
}

// RankColumns are the family's columns as internal/rank encodes them; a
// column of a sum family without aggregate sums.
func (f *Family) RankColumns() []rank.Column {
	out := make([]rank.Column, len(f.Columns))
	for i, c := range f.Columns {
		agg := c.Aggregate
		if agg == "" && f.Aggregate == AggregateSum {
			agg = ColumnSum
		}
		out[i] = rank.Column{Name: c.Name, Asc: c.Order == OrderAsc, Max: c.Max, Agg: agg}
	}
	return out
}

// RankMode is how positions become ranks.
func (f *Family) RankMode() rank.RankMode {
	if f.Competition() {
		return rank.Competition
	}
	return rank.Ordinal
}

// StoredMode is the apply script's mode in stored (sign-adjusted) space:
// "sum", or "gt"/"lt" for the kept best value (max in a desc family and min
// in an asc one keep the higher stored value).
func (f *Family) StoredMode() string {
	switch {
	case f.Aggregate == AggregateMax && f.Desc(), f.Aggregate == AggregateMin && !f.Desc():
		return "gt"
	case f.Aggregate == AggregateMax, f.Aggregate == AggregateMin:
		return "lt"
	}
	return "sum"
}

// PeriodSpec names the family's periods, compiled for the hot path (a cron
// expression parsed once). A spec Validate rejected is returned uncompiled:
// its own Validate reports the problem.
func (f *Family) PeriodSpec() period.Spec {
	s := period.Spec{Kind: period.Kind(f.Period), Loc: f.Location, WeekStart: f.WeekStart, Seasons: f.Seasons, Reset: f.Reset, Duration: f.Duration}
	if c, err := s.Compile(); err == nil {
		return c
	}
	return s
}

package ledger

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/rankgate/rankgate/internal/rank"
)

// Sort columns in the ledger: the same rules as store/scripts/columns.lua,
// in value space (asc columns are not flipped here; only the comparison
// knows their order).

// cmpCols compares two column tuples in board order: > 0 when a ranks before
// b (the first column that differs decides: higher first on a desc column,
// lower first on an asc one), 0 when equal.
func cmpCols(cols []rank.Column, a, b []int64) int {
	for i, c := range cols {
		ai, bi := colAt(a, i), colAt(b, i)
		if ai == bi {
			continue
		}
		better := ai > bi
		if c.Asc {
			better = !better
		}
		if better {
			return 1
		}
		return -1
	}
	return 0
}

// colAt is column i of vs, 0 when vs has none (a row written before the
// family declared its columns: documented as needing a new period, but a
// stored row must never make a comparison panic).
func colAt(vs []int64, i int) int64 {
	if i < len(vs) {
		return vs[i]
	}
	return 0
}

// combineCols is a sum family's columns after an event: each column by its
// aggregate over the member's current columns (nil: the member is absent,
// the event's values start it).
func combineCols(cols []rank.Column, cur, ev []int64) []int64 {
	if len(cols) == 0 {
		return nil
	}
	if cur == nil {
		return slices.Clone(ev)
	}
	out := make([]int64, len(cols))
	for i, c := range cols {
		x := colAt(ev, i)
		switch c.Agg {
		case "sum", "":
			x = colAt(cur, i) + colAt(ev, i)
		case "max":
			x = max(colAt(cur, i), colAt(ev, i))
		case "min":
			x = min(colAt(cur, i), colAt(ev, i))
		}
		out[i] = x
	}
	return out
}

// reverseCols is a sum family's columns after reversing an event whose
// columns were before → after on the board (before nil: the member was new):
// a sum column gives back what the event added; a last/max/min column
// returns to its value before the event when the event is still the
// member's latest change of the columns (cur equals after), else stays.
func reverseCols(cols []rank.Column, cur, before, after []int64) []int64 {
	if len(cols) == 0 || after == nil {
		return slices.Clone(cur)
	}
	latest := cur != nil && slices.Equal(cur, after)
	out := make([]int64, len(cols))
	for i, c := range cols {
		var x int64
		if cur != nil {
			x = colAt(cur, i)
		}
		switch {
		case c.Agg == "sum" || c.Agg == "":
			added := colAt(after, i)
			if before != nil {
				added -= colAt(before, i)
			}
			x -= added
		case latest && before != nil:
			x = colAt(before, i)
		}
		out[i] = x
	}
	return out
}

// colsInRange reports the first column outside [0, max] ("" : none).
func colsInRange(cols []rank.Column, vals []int64) string {
	for i, c := range cols {
		if colAt(vals, i) < 0 || colAt(vals, i) > c.Max {
			return fmt.Sprintf("column %s would be %d, outside 0..%d", c.Name, colAt(vals, i), c.Max)
		}
	}
	return ""
}

// checkEventCols checks an event's columns against its family's: one value
// per column within [0, max] where the kind carries them, none elsewhere.
func checkEventCols(ev Event, r Rules, carries bool) error {
	switch {
	case !carries || len(r.Columns) == 0:
		if ev.Columns != nil {
			return fmt.Errorf("%w: event %q: a %s carries no columns here", ErrInvalid, ev.EventID, ev.Kind)
		}
		return nil
	case len(ev.Columns) != len(r.Columns):
		return fmt.Errorf("%w: event %q: %d column values for %d columns", ErrInvalid, ev.EventID, len(ev.Columns), len(r.Columns))
	}
	if msg := colsInRange(r.Columns, ev.Columns); msg != "" {
		return fmt.Errorf("%w: event %q: %s", ErrOutOfRange, ev.EventID, msg)
	}
	return nil
}

// colsText is a column tuple as a PostgreSQL array literal, for statements
// that pass one tuple per row through unnest(text[]) and cast it back
// (nil: NULL).
func colsText(v []int64) *string {
	if v == nil {
		return nil
	}
	var sb strings.Builder
	sb.WriteByte('{')
	for i, x := range v {
		if i > 0 {
			sb.WriteByte(',')
		}
		sb.WriteString(strconv.FormatInt(x, 10))
	}
	sb.WriteByte('}')
	s := sb.String()
	return &s
}

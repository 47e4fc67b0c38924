package plan

import (
	"fmt"

	"github.com/rankgate/rankgate/internal/config"
)

// ColumnsCost is what a family's sort columns add to each member of its
// boards (docs/architecture.md, "Sort columns"): the column prefix lengthens
// the sorted-set member, and the per-shard cols hash keeps user → prefix.
type ColumnsCost struct {
	Columns []ColumnBytes `json:"columns"`
	// Prefix is the bytes before the user id in the stored member: every
	// column's hex width, and under tie first the seq's.
	Prefix int `json:"prefix_bytes"`
	// HashEntry is the cols hash's cost per member without its value: the
	// calibrated :m cost per member (the same shape: user → a short string).
	HashEntry float64 `json:"hash_entry_per_member"`
	// PerMember is the estimate of the bytes a member costs more than on a
	// family without columns: HashEntry + the prefix twice (in the sorted-set
	// member and as the hash value), before allocator rounding.
	PerMember float64 `json:"extra_bytes_per_member"`
}

// ColumnBytes is one column's share: its hex width, stored twice per member.
type ColumnBytes struct {
	Name      string `json:"name"`
	Width     int    `json:"hex_width"`
	PerMember int    `json:"bytes_per_member"` // 2 × width
}

// columnsCost estimates the extra bytes per member of a family with sort
// columns (nil without columns), from its config and the calibration.
func columnsCost(f *config.Family, cal Calibration, members int64) (*ColumnsCost, error) {
	if len(f.Columns) == 0 {
		return nil, nil
	}
	enc := f.Encoding().Cols
	c := &ColumnsCost{Prefix: enc.PrefixLen()}
	for i, col := range f.Columns {
		w := enc.Width(i)
		c.Columns = append(c.Columns, ColumnBytes{Name: col.Name, Width: w, PerMember: 2 * w})
	}
	sc, err := cal.Cost(f.Tie, max(members, 1), 0)
	if err != nil {
		return nil, err
	}
	c.HashEntry = sc.Version
	c.PerMember = c.HashEntry + 2*float64(c.Prefix)
	return c, nil
}

// String is the one-line summary the table prints.
func (c *ColumnsCost) String() string {
	s := fmt.Sprintf("+%.1f B per member (cols hash entry %.1f B + the %d-byte prefix twice)", c.PerMember, c.HashEntry, c.Prefix)
	for _, col := range c.Columns {
		s += fmt.Sprintf("; %s: %d B (hex width %d, twice)", col.Name, col.PerMember, col.Width)
	}
	return s
}

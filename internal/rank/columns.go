package rank

import (
	"strconv"
	"strings"
)

// Sort columns (a family's `columns`): up to MaxColumns integer keys that
// order members with equal points, each asc (lower is better) or desc
// (higher is better), each within [0, Max].
//
// A family with columns keeps the stored points alone as the score and makes
// the sorted-set member carry everything else, so that Redis's own order
// (score descending, then member bytes descending under ZREVRANGE) is board
// order and every read stays native:
//
//	stored member = col₁ col₂ … colₖ [seq] user
//
// colᵢ is the column's value in fixed-width lowercase hex (width: the hex
// digits of Max), a desc column as v and an asc column as Max − v, so that a
// larger hex string always means a better place; seq (tie first only, width:
// the hex digits of B − 1) is B − 1 − achievement seq, so an earlier
// achievement sorts first; under tie member the user id decides, as on a
// family without columns. The widths are fixed, so the parts split without a
// separator, and every byte is in [0-9a-f]: a prefix followed by "~" (0x7e,
// above every hex digit and every member byte) sorts after every member with
// that prefix, which is how "strictly better on (points, columns)" is
// counted. internal/store/scripts/columns.lua writes the same encoding.

// MaxColumns is the most sort columns a family may declare.
const MaxColumns = 4

// Column is one sort column.
type Column struct {
	Name string
	Asc  bool
	Max  int64
	// Agg is how a sum family combines a column: sum, last, max or min.
	// Families that keep a best value (max/min) and projections set the
	// whole tuple at once.
	Agg string
}

// Columns is a family's column encoding.
type Columns struct {
	Cols []Column
	// B is the tie-first achievement capacity (0: tie member).
	B      int64
	widths []int
	colW   int // width of the column part
	seqW   int // width of the seq part (0: tie member)
}

// NewColumns builds the encoding of cols (validated by the config) with the
// tie-first capacity b (0: tie member).
func NewColumns(cols []Column, b int64) *Columns {
	c := &Columns{Cols: cols, B: b}
	for _, col := range cols {
		w := hexWidth(col.Max)
		c.widths = append(c.widths, w)
		c.colW += w
	}
	if b > 0 {
		c.seqW = hexWidth(b - 1)
	}
	return c
}

func hexWidth(v int64) int { return len(strconv.FormatInt(v, 16)) }

// Width returns the hex width of column i.
func (c *Columns) Width(i int) int { return c.widths[i] }

// PrefixLen is the length of everything before the user id.
func (c *Columns) PrefixLen() int { return c.colW + c.seqW }

// Check refuses values outside [0, Max] (out_of_range, naming the column).
func (c *Columns) Check(values []int64) error {
	for i, col := range c.Cols {
		if values[i] < 0 || values[i] > col.Max {
			return &Error{Code: CodeOutOfRange, Field: "columns." + col.Name,
				Message: "column " + col.Name + " must lie within 0.." + strconv.FormatInt(col.Max, 10)}
		}
	}
	return nil
}

// Prefix encodes column values (each within [0, Max]) and, under tie first,
// the achievement seq (within [0, B)) into the stored member's prefix.
func (c *Columns) Prefix(values []int64, seq int64) string {
	var sb strings.Builder
	sb.Grow(c.PrefixLen())
	for i, col := range c.Cols {
		v := values[i]
		if col.Asc {
			v = col.Max - v
		}
		writeHex(&sb, v, c.widths[i])
	}
	if c.seqW > 0 {
		writeHex(&sb, c.B-1-seq, c.seqW)
	}
	return sb.String()
}

func writeHex(sb *strings.Builder, v int64, w int) {
	h := strconv.FormatInt(v, 16)
	for k := len(h); k < w; k++ {
		sb.WriteByte('0')
	}
	sb.WriteString(h)
}

// Stored is the sorted-set member of user with the given column values and seq.
func (c *Columns) Stored(values []int64, seq int64, user string) string {
	return c.Prefix(values, seq) + user
}

// Split parses a stored member into the user id, the column values and the
// seq (0 under tie member). ok is false for anything Stored cannot produce.
func (c *Columns) Split(stored string) (user string, values []int64, seq int64, ok bool) {
	if len(stored) <= c.PrefixLen() {
		return "", nil, 0, false
	}
	values = make([]int64, len(c.Cols))
	pos := 0
	for i, col := range c.Cols {
		v, err := parseHex(stored[pos : pos+c.widths[i]])
		if err != nil || v > col.Max {
			return "", nil, 0, false
		}
		if col.Asc {
			v = col.Max - v
		}
		values[i] = v
		pos += c.widths[i]
	}
	if c.seqW > 0 {
		v, err := parseHex(stored[pos : pos+c.seqW])
		if err != nil || v > c.B-1 {
			return "", nil, 0, false
		}
		seq = c.B - 1 - v
		pos += c.seqW
	}
	user = stored[pos:]
	if !ValidMember(user) {
		return "", nil, 0, false
	}
	return user, values, seq, true
}

// parseHex parses lowercase hex only (one spelling per value).
func parseHex(s string) (int64, error) {
	for i := 0; i < len(s); i++ {
		if !digit(s[i]) && (s[i] < 'a' || s[i] > 'f') {
			return 0, strconv.ErrSyntax
		}
	}
	return strconv.ParseInt(s, 16, 64)
}

// Valid reports whether s is a stored member of this encoding.
func (c *Columns) Valid(stored string) bool {
	_, _, _, ok := c.Split(stored)
	return ok
}

// Key is the column part of a stored member: two members are equal on every
// column exactly when their keys are equal, and a larger key is better.
func (c *Columns) Key(stored string) string {
	if len(stored) < c.colW {
		return stored
	}
	return stored[:c.colW]
}

// BetterKey is a member probe that sorts after every stored member whose
// column part is key and before every one with a larger column part: the
// members strictly ahead of (score, BetterKey(key)) are exactly those
// strictly better on (points, columns).
func BetterKey(key string) string { return key + "~" }

// Map returns the column values by name, for an entry.
func (c *Columns) Map(values []int64) map[string]int64 {
	m := make(map[string]int64, len(c.Cols))
	for i, col := range c.Cols {
		m[col.Name] = values[i]
	}
	return m
}

// Values orders a name → value map by the family's columns, refusing a
// missing or unknown column (invalid_argument naming it) and a value
// outside [0, Max] (out_of_range).
func (c *Columns) Values(m map[string]int64) ([]int64, error) {
	for name := range m {
		if c.index(name) < 0 {
			return nil, Invalid("columns."+name, "unknown column %q", name)
		}
	}
	out := make([]int64, len(c.Cols))
	for i, col := range c.Cols {
		v, ok := m[col.Name]
		if !ok {
			return nil, Invalid("columns."+col.Name, "column %s is required", col.Name)
		}
		out[i] = v
	}
	return out, c.Check(out)
}

func (c *Columns) index(name string) int {
	for i, col := range c.Cols {
		if col.Name == name {
			return i
		}
	}
	return -1
}

package workload

import (
	"fmt"
	"strconv"
)

// MaxMembers bounds a scenario's member count.
const MaxMembers = 20_000_000

// Shape is the data of a scenario: who the members are, which dimension
// boards exist, and how skewed traffic is over boards and members.
//
// Member i is named MemberPrefix+i and belongs to the national board plus,
// per dimension (province, then class), the value that Dim.ValueOf gives it:
// a Zipf over the values (exponent BoardSkew) drawn from a fixed hash of i,
// so that every run, the prefill and the planner agree on it.
type Shape struct {
	Family       string  `yaml:"family" json:"family"`
	Members      int     `yaml:"members" json:"members"`             // members prefix0 … prefix(N-1)
	MemberPrefix string  `yaml:"member_prefix" json:"member_prefix"` // member name = prefix + index
	Provinces    int     `yaml:"provinces" json:"provinces"`         // province boards (0: no province dim)
	Classes      int     `yaml:"classes" json:"classes"`             // class boards (0: no class dim)
	BoardSkew    float64 `yaml:"board_skew" json:"board_skew"`       // Zipf exponent over boards (0: uniform)
	MemberSkew   float64 `yaml:"member_skew" json:"member_skew"`     // Zipf exponent over members (0: uniform)
	DeltaMax     int64   `yaml:"delta_max" json:"delta_max"`         // events carry 1..DeltaMax points
}

// DefaultShape is the default data: 100 000 members of the `learning`
// family over 8 provinces and 50 classes.
func DefaultShape() Shape {
	return Shape{
		Family:       "learning",
		Members:      100000,
		MemberPrefix: "lt",
		Provinces:    8,
		Classes:      50,
		BoardSkew:    1.0,
		MemberSkew:   0.9,
		DeltaMax:     20,
	}
}

// Validate checks the shape; every problem is returned, naming its key.
func (s *Shape) Validate() []error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if s.Family == "" {
		bad("family", "required")
	}
	if s.Members < 1 || s.Members > MaxMembers {
		bad("members", "must be within 1..%d, got %d", MaxMembers, s.Members)
	}
	if !validMemberPrefix(s.MemberPrefix) {
		bad("member_prefix", "must match [A-Za-z0-9_.@-]{1,40}, got %q", s.MemberPrefix)
	}
	if s.Provinces < 0 || s.Provinces > 10000 {
		bad("provinces", "must be within 0..10000, got %d", s.Provinces)
	}
	if s.Classes < 0 || s.Classes > 10000 {
		bad("classes", "must be within 0..10000, got %d", s.Classes)
	}
	if !(s.BoardSkew >= 0 && s.BoardSkew <= 10) {
		bad("board_skew", "must be within 0..10, got %g", s.BoardSkew)
	}
	if !(s.MemberSkew >= 0 && s.MemberSkew <= 10) {
		bad("member_skew", "must be within 0..10, got %g", s.MemberSkew)
	}
	if s.DeltaMax < 1 {
		bad("delta_max", "must be ≥ 1, got %d", s.DeltaMax)
	}
	return errs
}

func validMemberPrefix(s string) bool {
	if len(s) < 1 || len(s) > 40 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '@' || c == '-') {
			return false
		}
	}
	return true
}

// MemberName returns the id of member i.
func (s *Shape) MemberName(i int) string { return s.MemberPrefix + strconv.Itoa(i) }

// AppendMemberName appends the id of member i to dst.
func (s *Shape) AppendMemberName(dst []byte, i int) []byte {
	return strconv.AppendInt(append(dst, s.MemberPrefix...), int64(i), 10)
}

// Dim is one dimension of the shape with boards: its type (province or
// class), the short prefix of its values (p0, p1 … or c0, c1 …), its number
// of values and the Zipf table that assigns members to values.
type Dim struct {
	Type  string
	Short string
	N     int
	Table *ZipfTable
	salt  uint64
}

// Dims returns the dimensions that have boards, province first, then class
// (the board order of the load tool's "any" selector).
func (s *Shape) Dims() ([]Dim, error) {
	var dims []Dim
	for _, d := range []struct {
		typ, short string
		n          int
	}{{BoardProvince, "p", s.Provinces}, {BoardClass, "c", s.Classes}} {
		if d.n == 0 {
			continue
		}
		t, err := NewZipfTable(d.n, s.BoardSkew)
		if err != nil {
			return nil, fmt.Errorf("%s boards: %w", d.typ, err)
		}
		dims = append(dims, Dim{Type: d.typ, Short: d.short, N: d.n, Table: t,
			salt: uint64(len(dims)+1) * 0x5851f42d4c957f2d})
	}
	return dims, nil
}

// ValueOf returns the value index (0..N-1) of member i in this dimension:
// a fixed function of i, independent of any run's seed.
func (d *Dim) ValueOf(i int) int { return d.Table.Quantile(UnitHash(uint64(i), d.salt)) }

// ValueName returns the dimension value of index v ("p3", "c17").
func (d *Dim) ValueName(v int) string { return d.Short + strconv.Itoa(v) }

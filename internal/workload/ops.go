package workload

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// Operation kinds (the `op` of an operation spec).
const (
	OpEvent  = "event"  // POST /v1/events: one event, national + one board per dimension
	OpBatch  = "batch"  // POST /v1/events:batch
	OpTop    = "top"    // GET {board}/top?limit=L
	OpMember = "member" // GET {board}/members/{m}
	OpAround = "around" // GET {board}/members/{m}/around?radius=R
	OpPage   = "page"   // GET {board}/entries?limit=L&cursor=C (keyset walks)
	OpLookup = "lookup" // POST {board}/members:lookup
)

// OpKinds lists every operation kind.
var OpKinds = []string{OpEvent, OpBatch, OpTop, OpMember, OpAround, OpPage, OpLookup}

// Board selectors of a read operation.
const (
	BoardNational = "national"
	BoardProvince = "province"
	BoardClass    = "class"
	BoardAny      = "any" // Zipf over [national, provinces…, classes…]
)

// IsWrite reports whether an operation kind writes events.
func IsWrite(op string) bool { return op == OpEvent || op == OpBatch }

// OpSpec is one weighted operation of the mix.
type OpSpec struct {
	Name        string  `yaml:"name" json:"name"` // defaults to op; must be unique
	Op          string  `yaml:"op" json:"op"`
	Weight      float64 `yaml:"weight" json:"weight"`
	Board       string  `yaml:"board" json:"board,omitempty"`             // reads: national | province | class | any
	Limit       int     `yaml:"limit" json:"limit,omitempty"`             // top, page
	Consistency string  `yaml:"consistency" json:"consistency,omitempty"` // reads: "" (the API's default) | cached | replica | primary
	Batch       int     `yaml:"batch" json:"batch,omitempty"`             // batch: events per request
	Radius      int     `yaml:"radius" json:"radius,omitempty"`           // around
	Users       int     `yaml:"users" json:"users,omitempty"`             // lookup: members per request
	Depth       int     `yaml:"depth" json:"depth,omitempty"`             // page: pages per walk before starting again at the top
}

// Op returns an operation of the given kind with its default parameters.
func Op(op string, weight float64) OpSpec {
	s := OpSpec{Name: op, Op: op, Weight: weight}
	s.FillDefaults()
	return s
}

// DefaultOps is the default mix: a read-heavy mixed load.
func DefaultOps() []OpSpec {
	return []OpSpec{
		Op(OpEvent, 20),
		Op(OpBatch, 2),
		Op(OpTop, 40),
		Op(OpMember, 14),
		Op(OpAround, 8),
		Op(OpPage, 8),
		Op(OpLookup, 8),
	}
}

// FillDefaults gives the parameters the spec leaves at zero their defaults:
// name = op, board = any for reads, top limit 100, page limit 50 and depth 5,
// batch 100, radius 5, lookup 20 users.
func (s *OpSpec) FillDefaults() {
	if s.Name == "" {
		s.Name = s.Op
	}
	if s.Board == "" && !IsWrite(s.Op) {
		s.Board = BoardAny
	}
	switch s.Op {
	case OpTop:
		if s.Limit == 0 {
			s.Limit = 100
		}
	case OpPage:
		if s.Limit == 0 {
			s.Limit = 50
		}
		if s.Depth == 0 {
			s.Depth = 5
		}
	case OpBatch:
		if s.Batch == 0 {
			s.Batch = 100
		}
	case OpAround:
		if s.Radius == 0 {
			s.Radius = 5
		}
	case OpLookup:
		if s.Users == 0 {
			s.Users = 20
		}
	}
}

// FillDefaults fills the defaults of every operation.
func FillDefaults(ops []OpSpec) {
	for i := range ops {
		ops[i].FillDefaults()
	}
}

// ParseMix parses "event=20,batch=1,top=50" into operations with default
// parameters. A name may carry a board: "top@national=50".
func ParseMix(s string) ([]OpSpec, error) {
	var out []OpSpec
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		name, w, ok := strings.Cut(part, "=")
		if !ok {
			return nil, fmt.Errorf("mix item %q: want op=weight", part)
		}
		weight, err := strconv.ParseFloat(strings.TrimSpace(w), 64)
		if err != nil || !(weight >= 0) {
			return nil, fmt.Errorf("mix item %q: weight must be a number ≥ 0", part)
		}
		op, board, _ := strings.Cut(strings.TrimSpace(name), "@")
		spec := OpSpec{Op: op, Weight: weight, Board: board}
		if board != "" {
			spec.Name = op + "@" + board
		}
		spec.FillDefaults()
		out = append(out, spec)
	}
	if len(out) == 0 {
		return nil, errors.New("mix is empty")
	}
	return out, nil
}

// ValidateOps checks a mix against the data shape; every problem is
// returned, naming its field (ops[i].key).
func ValidateOps(ops []OpSpec, shape *Shape) []error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if len(ops) == 0 {
		bad("ops", "at least one operation is required")
	}
	var total float64
	names := map[string]bool{}
	for i, o := range ops {
		f := fmt.Sprintf("ops[%d]", i)
		if !slices.Contains(OpKinds, o.Op) {
			bad(f+".op", "must be one of %s, got %q", strings.Join(OpKinds, ", "), o.Op)
		}
		if names[o.Name] {
			bad(f+".name", "%q is used twice; give each operation a distinct name", o.Name)
		}
		names[o.Name] = true
		if !(o.Weight >= 0) || o.Weight > 1e12 {
			bad(f+".weight", "must be within 0..1e12, got %g", o.Weight)
		} else {
			total += o.Weight
		}
		write := IsWrite(o.Op)
		switch {
		case write && o.Board != "":
			bad(f+".board", "writes go to national plus the member's own boards; board is for reads")
		case !write && !slices.Contains([]string{BoardNational, BoardProvince, BoardClass, BoardAny}, o.Board):
			bad(f+".board", "must be national, province, class or any, got %q", o.Board)
		case o.Board == BoardProvince && shape.Provinces == 0:
			bad(f+".board", "province boards need provinces > 0")
		case o.Board == BoardClass && shape.Classes == 0:
			bad(f+".board", "class boards need classes > 0")
		}
		switch o.Consistency {
		case "", "cached", "replica", "primary":
			if write && o.Consistency != "" {
				bad(f+".consistency", "is for reads")
			}
		default:
			bad(f+".consistency", "must be cached, replica or primary, got %q", o.Consistency)
		}
		switch o.Op {
		case OpTop, OpPage:
			if o.Limit < 1 || o.Limit > 1000 {
				bad(f+".limit", "must be within 1..1000, got %d", o.Limit)
			}
			if o.Op == OpPage && o.Depth < 1 {
				bad(f+".depth", "must be ≥ 1, got %d", o.Depth)
			}
		case OpBatch:
			if o.Batch < 1 || o.Batch > 1000 {
				bad(f+".batch", "must be within 1..1000, got %d", o.Batch)
			}
		case OpAround:
			if o.Radius < 0 || o.Radius > 100 {
				bad(f+".radius", "must be within 0..100, got %d", o.Radius)
			}
		case OpLookup:
			if o.Users < 1 || o.Users > 1000 {
				bad(f+".users", "must be within 1..1000, got %d", o.Users)
			}
		}
	}
	if len(ops) > 0 && total <= 0 {
		bad("ops", "weights must add up to more than 0")
	}
	return errs
}

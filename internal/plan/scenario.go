package plan

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Operation kinds, as the load tool names them (loadtest/scenario.go).
const (
	OpEvent  = "event"
	OpBatch  = "batch"
	OpTop    = "top"
	OpMember = "member"
	OpAround = "around"
	OpPage   = "page"
	OpLookup = "lookup"
)

var opKinds = []string{OpEvent, OpBatch, OpTop, OpMember, OpAround, OpPage, OpLookup}

// Board selectors of a read.
const (
	BoardNational = "national"
	BoardProvince = "province"
	BoardClass    = "class"
	BoardAny      = "any"
)

// Scenario is what the planner reads of a load-tool scenario (only the keys
// it needs; every other key is ignored) plus the planner's own keys. Several
// files may be layered: later files override the keys they set, and a file
// that lists ops replaces the mix.
type Scenario struct {
	Name         string  `yaml:"name" json:"name"`
	Family       string  `yaml:"family" json:"family"`
	Members      int     `yaml:"members" json:"members"`
	MemberPrefix string  `yaml:"member_prefix" json:"member_prefix"`
	Provinces    int     `yaml:"provinces" json:"provinces"`
	Classes      int     `yaml:"classes" json:"classes"`
	BoardSkew    float64 `yaml:"board_skew" json:"board_skew"`
	MemberSkew   float64 `yaml:"member_skew" json:"member_skew"`
	DeltaMax     int64   `yaml:"delta_max" json:"delta_max"`
	Mode         string  `yaml:"mode" json:"mode"`
	// Rate is the request rate the plan is for (requests/s over the whole
	// gateway fleet). The load tool reads it in open loop only; the planner
	// always needs it.
	Rate float64  `yaml:"rate" json:"rate"`
	Ops  []OpSpec `yaml:"ops" json:"ops"`

	// Planner-only keys.

	// SeasonPeriods is how many periods of the family hold keys at once:
	// the current one, the one still in its grace window, and the archived
	// ones whose retention has not run out. 0: derived from the family
	// (1 + ⌈retention / period length⌉; 1 for period all).
	SeasonPeriods int `yaml:"season_periods" json:"season_periods"`
	// EventsPerMemberPerPeriod is the average number of point events a member
	// sends in one period; each leaves one dedupe entry on every board it
	// touches in Redis-only mode. 0: the default, 10.
	EventsPerMemberPerPeriod float64 `yaml:"events_per_member_per_period" json:"events_per_member_per_period"`
	// Masters is the planned number of masters; 0 (or the live count) uses
	// the live cluster's slot map, another count an even split of the slots.
	Masters int `yaml:"masters" json:"masters"`
	// MaxMemoryPerMaster is the memory budget of one master ("8GiB" or
	// bytes); 0: no budget check.
	MaxMemoryPerMaster ByteSize `yaml:"max_memory_per_master" json:"max_memory_per_master"`
	// MaxOpsPerMaster is the command budget of one master (Redis commands/s);
	// 0: the default, 100000.
	MaxOpsPerMaster float64 `yaml:"max_ops_per_master" json:"max_ops_per_master"`
	// Gateways is the number of gateway processes (each has its own cache).
	Gateways int `yaml:"gateways" json:"gateways"`
	// EventIDLength is the length of event ids in bytes (36: a UUID), which
	// sizes the dedupe entries the calibration writes.
	EventIDLength int `yaml:"event_id_length" json:"event_id_length"`
	// MaxMembersPerShard: a shard above it should be split (default 1000000).
	MaxMembersPerShard int64 `yaml:"max_members_per_shard" json:"max_members_per_shard"`
	// MaxOpsPerShard: a shard above it (commands/s) should be split; 0: the
	// default, MaxShardOpsFraction × MaxOpsPerMaster.
	MaxOpsPerShard float64 `yaml:"max_ops_per_shard" json:"max_ops_per_shard"`
	// MaxShardOpsFraction is the share of a master's budget one shard may
	// take (default 0.25).
	MaxShardOpsFraction float64 `yaml:"max_shard_ops_fraction" json:"max_shard_ops_fraction"`
}

// OpSpec is one weighted operation of the mix.
type OpSpec struct {
	Name        string  `yaml:"name" json:"name"`
	Op          string  `yaml:"op" json:"op"`
	Weight      float64 `yaml:"weight" json:"weight"`
	Board       string  `yaml:"board" json:"board,omitempty"`
	Limit       int     `yaml:"limit" json:"limit,omitempty"`
	Consistency string  `yaml:"consistency" json:"consistency,omitempty"`
	Batch       int     `yaml:"batch" json:"batch,omitempty"`
	Radius      int     `yaml:"radius" json:"radius,omitempty"`
	Users       int     `yaml:"users" json:"users,omitempty"`
	Depth       int     `yaml:"depth" json:"depth,omitempty"`
}

// Planner defaults.
const (
	DefaultEventsPerMember  = 10
	DefaultMaxOpsPerMaster  = 100000
	DefaultEventIDLength    = 36
	DefaultMaxShardMembers  = 1000000
	DefaultShardOpsFraction = 0.25
)

// DefaultScenario is the load tool's default scenario (loadtest
// DefaultScenario) with the planner's defaults.
func DefaultScenario() Scenario {
	sc := Scenario{
		Name: "mixed", Family: "learning", Members: 100000, MemberPrefix: "lt", Provinces: 8, Classes: 50,
		BoardSkew: 1.0, MemberSkew: 0.9, DeltaMax: 20, Mode: "open", Rate: 200,
		Ops: []OpSpec{
			{Op: OpEvent, Weight: 20}, {Op: OpBatch, Weight: 2}, {Op: OpTop, Weight: 40}, {Op: OpMember, Weight: 14},
			{Op: OpAround, Weight: 8}, {Op: OpPage, Weight: 8}, {Op: OpLookup, Weight: 8},
		},
		EventsPerMemberPerPeriod: DefaultEventsPerMember, MaxOpsPerMaster: DefaultMaxOpsPerMaster, Gateways: 1,
		EventIDLength: DefaultEventIDLength, MaxMembersPerShard: DefaultMaxShardMembers, MaxShardOpsFraction: DefaultShardOpsFraction,
	}
	sc.fillDefaults()
	return sc
}

// fillDefaults gives every operation the load tool's default parameters.
func (sc *Scenario) fillDefaults() {
	for i := range sc.Ops {
		o := &sc.Ops[i]
		if o.Name == "" {
			o.Name = o.Op
		}
		if o.Board == "" && o.Op != OpEvent && o.Op != OpBatch {
			o.Board = BoardAny
		}
		switch o.Op {
		case OpTop:
			if o.Limit == 0 {
				o.Limit = 100
			}
		case OpPage:
			if o.Limit == 0 {
				o.Limit = 50
			}
			if o.Depth == 0 {
				o.Depth = 5
			}
		case OpBatch:
			if o.Batch == 0 {
				o.Batch = 100
			}
		case OpAround:
			if o.Radius == 0 {
				o.Radius = 5
			}
		case OpLookup:
			if o.Users == 0 {
				o.Users = 20
			}
		}
	}
}

// LoadScenario reads scenario files over the defaults, in order.
func LoadScenario(paths ...string) (Scenario, error) {
	sc := DefaultScenario()
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			return Scenario{}, err
		}
		if err := ParseScenario(data, &sc); err != nil {
			return Scenario{}, fmt.Errorf("%s: %w", p, err)
		}
	}
	if err := sc.Validate(); err != nil {
		return Scenario{}, err
	}
	return sc, nil
}

// ParseScenario decodes YAML over sc. Keys the planner does not use (the
// load tool's gateway, duration, prefill…) are ignored; the ones it uses are
// type-checked. A document that lists ops replaces the mix.
func ParseScenario(data []byte, sc *Scenario) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	ops := sc.Ops
	sc.Ops = nil
	if err := dec.Decode(sc); err != nil && !errors.Is(err, io.EOF) {
		sc.Ops = ops
		return err
	}
	if sc.Ops == nil {
		sc.Ops = ops
	}
	sc.fillDefaults()
	return nil
}

// Validate checks the keys the planner uses; every problem is reported,
// naming its key.
func (sc *Scenario) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("scenario %s: %s", field, fmt.Sprintf(format, args...)))
	}
	if sc.Family == "" {
		bad("family", "required")
	}
	if sc.Members < 1 || sc.Members > 20_000_000 {
		bad("members", "must be within 1..20000000, got %d", sc.Members)
	}
	if sc.MemberPrefix == "" || len(sc.MemberPrefix) > 40 {
		bad("member_prefix", "must be 1..40 characters, got %q", sc.MemberPrefix)
	}
	if sc.Provinces < 0 || sc.Provinces > 10000 {
		bad("provinces", "must be within 0..10000, got %d", sc.Provinces)
	}
	if sc.Classes < 0 || sc.Classes > 10000 {
		bad("classes", "must be within 0..10000, got %d", sc.Classes)
	}
	if !(sc.BoardSkew >= 0 && sc.BoardSkew <= 10) {
		bad("board_skew", "must be within 0..10, got %g", sc.BoardSkew)
	}
	if !(sc.MemberSkew >= 0 && sc.MemberSkew <= 10) {
		bad("member_skew", "must be within 0..10, got %g", sc.MemberSkew)
	}
	if sc.DeltaMax < 1 {
		bad("delta_max", "must be ≥ 1, got %d", sc.DeltaMax)
	}
	if !(sc.Rate > 0 && sc.Rate <= 10_000_000) {
		bad("rate", "the planner needs the request rate (requests/s, > 0), got %g", sc.Rate)
	}
	if len(sc.Ops) == 0 {
		bad("ops", "at least one operation is required")
	}
	var total float64
	for i, o := range sc.Ops {
		f := fmt.Sprintf("ops[%d]", i)
		if !slices.Contains(opKinds, o.Op) {
			bad(f+".op", "must be one of %s, got %q", strings.Join(opKinds, ", "), o.Op)
		}
		if !(o.Weight >= 0) {
			bad(f+".weight", "must be ≥ 0")
		}
		total += o.Weight
		write := o.Op == OpEvent || o.Op == OpBatch
		switch {
		case write && o.Board != "":
			bad(f+".board", "writes go to national plus the member's own boards; board is for reads")
		case !write && !slices.Contains([]string{BoardNational, BoardProvince, BoardClass, BoardAny}, o.Board):
			bad(f+".board", "must be national, province, class or any, got %q", o.Board)
		case o.Board == BoardProvince && sc.Provinces == 0:
			bad(f+".board", "province boards need provinces > 0")
		case o.Board == BoardClass && sc.Classes == 0:
			bad(f+".board", "class boards need classes > 0")
		}
		switch o.Consistency {
		case "", "cached", "replica", "primary":
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
	if len(sc.Ops) > 0 && total <= 0 {
		bad("ops", "weights must add up to more than 0")
	}
	if sc.SeasonPeriods < 0 || sc.SeasonPeriods > 10000 {
		bad("season_periods", "must be within 0..10000 (0: derived from the family), got %d", sc.SeasonPeriods)
	}
	if !(sc.EventsPerMemberPerPeriod >= 0) || math.IsInf(sc.EventsPerMemberPerPeriod, 0) {
		bad("events_per_member_per_period", "must be ≥ 0, got %g", sc.EventsPerMemberPerPeriod)
	}
	if sc.Masters < 0 || sc.Masters > 1000 {
		bad("masters", "must be within 0..1000 (0: the live cluster), got %d", sc.Masters)
	}
	if sc.MaxMemoryPerMaster < 0 {
		bad("max_memory_per_master", "must be ≥ 0")
	}
	if !(sc.MaxOpsPerMaster > 0) {
		bad("max_ops_per_master", "must be > 0, got %g", sc.MaxOpsPerMaster)
	}
	if sc.Gateways < 1 || sc.Gateways > 10000 {
		bad("gateways", "must be within 1..10000, got %d", sc.Gateways)
	}
	if sc.EventIDLength < 1 || sc.EventIDLength > 128 {
		bad("event_id_length", "must be within 1..128 (the API's bound), got %d", sc.EventIDLength)
	}
	if sc.MaxMembersPerShard < 1 {
		bad("max_members_per_shard", "must be ≥ 1, got %d", sc.MaxMembersPerShard)
	}
	if !(sc.MaxOpsPerShard >= 0) {
		bad("max_ops_per_shard", "must be ≥ 0, got %g", sc.MaxOpsPerShard)
	}
	if !(sc.MaxShardOpsFraction > 0 && sc.MaxShardOpsFraction <= 1) {
		bad("max_shard_ops_fraction", "must be within (0, 1], got %g", sc.MaxShardOpsFraction)
	}
	return errors.Join(errs...)
}

// ShardOpsLimit is the ops/s above which one shard should be split.
func (sc *Scenario) ShardOpsLimit() float64 {
	if sc.MaxOpsPerShard > 0 {
		return sc.MaxOpsPerShard
	}
	return sc.MaxShardOpsFraction * sc.MaxOpsPerMaster
}

// ByteSize is a number of bytes that YAML may give as an integer or with a
// unit: "512MiB", "8GiB", "8GB" (powers of 1000), "1.5GiB".
type ByteSize int64

// UnmarshalYAML accepts an integer or a number with a unit.
func (b *ByteSize) UnmarshalYAML(n *yaml.Node) error {
	if n.Kind != yaml.ScalarNode {
		return fmt.Errorf("line %d: want a size such as 8GiB", n.Line)
	}
	v, err := ParseByteSize(n.Value)
	if err != nil {
		return fmt.Errorf("line %d: %w", n.Line, err)
	}
	*b = v
	return nil
}

// ParseByteSize parses "8GiB", "512 MB", "1048576".
func ParseByteSize(s string) (ByteSize, error) {
	s = strings.TrimSpace(s)
	i := len(s)
	for i > 0 && (s[i-1] < '0' || s[i-1] > '9') && s[i-1] != '.' {
		i--
	}
	num, unit := strings.TrimSpace(s[:i]), strings.ToLower(strings.TrimSpace(s[i:]))
	mult := map[string]float64{"": 1, "b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "tb": 1e12,
		"k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20, "g": 1 << 30, "gib": 1 << 30, "t": 1 << 40, "tib": 1 << 40}[unit]
	f, err := strconv.ParseFloat(num, 64)
	if err != nil || mult == 0 || f < 0 || math.IsInf(f*mult, 0) || f*mult > math.MaxInt64/2 {
		return 0, fmt.Errorf("bad size %q (want e.g. 8GiB, 512MB or a byte count)", s)
	}
	return ByteSize(f * mult), nil
}

// MarshalYAML writes the byte count.
func (b ByteSize) MarshalYAML() (any, error) { return int64(b), nil }

package plan

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/rankgate/rankgate/internal/workload"
)

// Scenario is what the planner reads of a load-tool scenario (only the keys
// it needs; every other key is ignored) plus the planner's own keys. Several
// files may be layered: later files override the keys they set, and a file
// that lists ops replaces the mix.
type Scenario struct {
	Name string `yaml:"name" json:"name"`
	// The data shape, as the load tool reads it.
	workload.Shape `yaml:",inline"`
	Mode           string `yaml:"mode" json:"mode"`
	// Rate is the request rate the plan is for (requests/s over the whole
	// gateway fleet). The load tool reads it in open loop only; the planner
	// always needs it.
	Rate float64           `yaml:"rate" json:"rate"`
	Ops  []workload.OpSpec `yaml:"ops" json:"ops"`

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
		Name: "mixed", Shape: workload.DefaultShape(), Mode: "open", Rate: 200, Ops: workload.DefaultOps(),
		EventsPerMemberPerPeriod: DefaultEventsPerMember, MaxOpsPerMaster: DefaultMaxOpsPerMaster, Gateways: 1,
		EventIDLength: DefaultEventIDLength, MaxMembersPerShard: DefaultMaxShardMembers, MaxShardOpsFraction: DefaultShardOpsFraction,
	}
	sc.fillDefaults()
	return sc
}

// fillDefaults gives every operation the load tool's default parameters.
func (sc *Scenario) fillDefaults() { workload.FillDefaults(sc.Ops) }

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
	return workload.DecodeOver(data, sc, &sc.Ops, false)
}

// Validate checks the keys the planner uses; every problem is reported,
// naming its key.
func (sc *Scenario) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("scenario %s: %s", field, fmt.Sprintf(format, args...)))
	}
	for _, e := range sc.Shape.Validate() {
		errs = append(errs, fmt.Errorf("scenario %w", e))
	}
	if !(sc.Rate > 0 && sc.Rate <= 10_000_000) {
		bad("rate", "the planner needs the request rate (requests/s, > 0), got %g", sc.Rate)
	}
	for _, e := range workload.ValidateOps(sc.Ops, &sc.Shape) {
		errs = append(errs, fmt.Errorf("scenario %w", e))
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

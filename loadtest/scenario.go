package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"
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

var opKinds = []string{OpEvent, OpBatch, OpTop, OpMember, OpAround, OpPage, OpLookup}

// Board selectors of a read operation.
const (
	BoardNational = "national"
	BoardProvince = "province"
	BoardClass    = "class"
	BoardAny      = "any" // Zipf over [national, provinces…, classes…]
)

// Scenario is one load-test setup: the data shape, the load and the mix.
// It comes from defaults, then an optional YAML file, then explicit flags.
type Scenario struct {
	Name    string `yaml:"name" json:"name"`
	Gateway string `yaml:"gateway" json:"gateway"` // base URL of the gateway
	// Config is the gateway's YAML config: the baseline reads Redis seeds,
	// key prefix and family rules from it.
	Config string `yaml:"config" json:"config"`
	Family string `yaml:"family" json:"family"`
	Period string `yaml:"period" json:"period"` // "current" or a period id

	// Data shape.
	Members      int     `yaml:"members" json:"members"`             // members lt0 … lt(N-1)
	MemberPrefix string  `yaml:"member_prefix" json:"member_prefix"` // member name = prefix + index
	Provinces    int     `yaml:"provinces" json:"provinces"`         // province boards (0: no province dim)
	Classes      int     `yaml:"classes" json:"classes"`             // class boards (0: no class dim)
	BoardSkew    float64 `yaml:"board_skew" json:"board_skew"`       // Zipf exponent over boards (0: uniform)
	MemberSkew   float64 `yaml:"member_skew" json:"member_skew"`     // Zipf exponent over members (0: uniform)
	DeltaMax     int64   `yaml:"delta_max" json:"delta_max"`         // events carry 1..DeltaMax points

	// Load.
	Mode     string        `yaml:"mode" json:"mode"` // open | closed
	Rate     int           `yaml:"rate" json:"rate"` // open loop: requests per second
	Duration time.Duration `yaml:"duration" json:"duration_ns"`
	Workers  int           `yaml:"workers" json:"workers"`   // closed loop: concurrent workers
	Requests int64         `yaml:"requests" json:"requests"` // optional cap on requests (0: rate × duration)
	Timeout  time.Duration `yaml:"timeout" json:"timeout_ns"`
	Seed     uint64        `yaml:"seed" json:"seed"`

	Ops     []OpSpec `yaml:"ops" json:"ops"`
	Prefill Prefill  `yaml:"prefill" json:"prefill"`
}

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

// Prefill loads members before the run, through the gateway's batch endpoint.
type Prefill struct {
	Members     int   `yaml:"members" json:"members"`         // load members [from, members)
	From        int   `yaml:"from" json:"from"`               // first member index
	Batch       int   `yaml:"batch" json:"batch"`             // events per batch (100..1000)
	Concurrency int   `yaml:"concurrency" json:"concurrency"` // batches in flight
	PointsMax   int64 `yaml:"points_max" json:"points_max"`   // each member gets 1..PointsMax points
}

// DefaultScenario is a mixed read/write load on the `learning` family.
func DefaultScenario() Scenario {
	return Scenario{
		Name:         "mixed",
		Gateway:      "http://127.0.0.1:8080",
		Config:       "deploy/rankgate.dev.yaml",
		Family:       "learning",
		Period:       "current",
		Members:      100000,
		MemberPrefix: "lt",
		Provinces:    8,
		Classes:      50,
		BoardSkew:    1.0,
		MemberSkew:   0.9,
		DeltaMax:     20,
		Mode:         "open",
		Rate:         200,
		Duration:     10 * time.Second,
		Workers:      16,
		Timeout:      5 * time.Second,
		Seed:         1,
		Ops:          DefaultOps(),
		Prefill:      Prefill{Batch: 500, Concurrency: 4, PointsMax: 10000},
	}
}

// DefaultOps is the default mix.
func DefaultOps() []OpSpec {
	return []OpSpec{
		defaultOp(OpEvent, 20),
		defaultOp(OpBatch, 2),
		defaultOp(OpTop, 40),
		defaultOp(OpMember, 14),
		defaultOp(OpAround, 8),
		defaultOp(OpPage, 8),
		defaultOp(OpLookup, 8),
	}
}

// defaultOp returns an operation with its default parameters.
func defaultOp(op string, weight float64) OpSpec {
	s := OpSpec{Name: op, Op: op, Weight: weight}
	s.fillDefaults()
	return s
}

func (s *OpSpec) fillDefaults() {
	if s.Name == "" {
		s.Name = s.Op
	}
	if s.Board == "" && s.Op != OpEvent && s.Op != OpBatch {
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

// LoadScenario reads a YAML scenario over the defaults in sc. Unknown keys
// are an error. A scenario that lists ops replaces the default mix.
func LoadScenario(path string, sc *Scenario) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	if err := ParseScenario(data, sc); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	return nil
}

// ParseScenario decodes YAML over sc (fields the YAML leaves out keep their
// values) and fills operation defaults.
func ParseScenario(data []byte, sc *Scenario) error {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	ops := sc.Ops
	sc.Ops = nil
	if err := dec.Decode(sc); err != nil && !errors.Is(err, io.EOF) {
		sc.Ops = ops
		return err
	}
	if sc.Ops == nil {
		sc.Ops = ops
	}
	for i := range sc.Ops {
		sc.Ops[i].fillDefaults()
	}
	return nil
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
		if err != nil || weight < 0 {
			return nil, fmt.Errorf("mix item %q: weight must be a number ≥ 0", part)
		}
		op, board, _ := strings.Cut(strings.TrimSpace(name), "@")
		spec := OpSpec{Op: op, Weight: weight, Board: board}
		if board != "" {
			spec.Name = op + "@" + board
		}
		spec.fillDefaults()
		out = append(out, spec)
	}
	if len(out) == 0 {
		return nil, errors.New("mix is empty")
	}
	return out, nil
}

// Validate checks a scenario; every problem is reported, naming its field.
func (sc *Scenario) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	if sc.Family == "" {
		bad("family", "required")
	}
	if sc.Period == "" {
		bad("period", "required")
	}
	if sc.Members < 1 || sc.Members > 20_000_000 {
		bad("members", "must be within 1..20000000, got %d", sc.Members)
	}
	if !validMemberPrefix(sc.MemberPrefix) {
		bad("member_prefix", "must match [A-Za-z0-9_.@-]{1,40}, got %q", sc.MemberPrefix)
	}
	if sc.Provinces < 0 || sc.Provinces > 10000 {
		bad("provinces", "must be within 0..10000, got %d", sc.Provinces)
	}
	if sc.Classes < 0 || sc.Classes > 10000 {
		bad("classes", "must be within 0..10000, got %d", sc.Classes)
	}
	if sc.BoardSkew < 0 || sc.BoardSkew > 10 {
		bad("board_skew", "must be within 0..10, got %g", sc.BoardSkew)
	}
	if sc.MemberSkew < 0 || sc.MemberSkew > 10 {
		bad("member_skew", "must be within 0..10, got %g", sc.MemberSkew)
	}
	if sc.DeltaMax < 1 {
		bad("delta_max", "must be ≥ 1, got %d", sc.DeltaMax)
	}
	switch sc.Mode {
	case "open":
		if sc.Rate < 1 || sc.Rate > 1_000_000 {
			bad("rate", "must be within 1..1000000 requests/s in open loop, got %d", sc.Rate)
		}
	case "closed":
		if sc.Workers < 1 || sc.Workers > 10000 {
			bad("workers", "must be within 1..10000 in closed loop, got %d", sc.Workers)
		}
	default:
		bad("mode", "must be open or closed, got %q", sc.Mode)
	}
	// Every run is bounded in time (and, through rate × duration or
	// requests, in count).
	if sc.Duration < 0 || sc.Duration > time.Hour {
		bad("duration", "must be within 0..1h, got %s", sc.Duration)
	}
	if sc.Requests < 0 {
		bad("requests", "must be ≥ 0, got %d", sc.Requests)
	}
	if sc.Timeout <= 0 || sc.Timeout > time.Minute {
		bad("timeout", "must be within (0, 1m], got %s", sc.Timeout)
	}
	if err := checkLoopbackURL(sc.Gateway); err != nil {
		bad("gateway", "%v", err)
	}
	if len(sc.Ops) == 0 {
		bad("ops", "at least one operation is required")
	}
	var total float64
	names := map[string]bool{}
	for i, o := range sc.Ops {
		f := fmt.Sprintf("ops[%d]", i)
		if !slices.Contains(opKinds, o.Op) {
			bad(f+".op", "must be one of %s, got %q", strings.Join(opKinds, ", "), o.Op)
		}
		if names[o.Name] {
			bad(f+".name", "%q is used twice; give each operation a distinct name", o.Name)
		}
		names[o.Name] = true
		if o.Weight < 0 {
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
		if o.Op == OpPage && o.Depth < 1 {
			bad(f+".depth", "must be ≥ 1, got %d", o.Depth)
		}
	}
	if len(sc.Ops) > 0 && total <= 0 {
		bad("ops", "weights must add up to more than 0")
	}
	p := sc.Prefill
	if p.Members < 0 || p.Members > sc.Members {
		bad("prefill.members", "must be within 0..members (%d), got %d", sc.Members, p.Members)
	}
	if p.Members > 0 {
		if p.From < 0 || p.From >= p.Members {
			bad("prefill.from", "must be within 0..members-1, got %d", p.From)
		}
		if p.Batch < 1 || p.Batch > 1000 {
			bad("prefill.batch", "must be within 1..1000, got %d", p.Batch)
		}
		if p.Concurrency < 1 || p.Concurrency > 64 {
			bad("prefill.concurrency", "must be within 1..64, got %d", p.Concurrency)
		}
		if p.PointsMax < 1 {
			bad("prefill.points_max", "must be ≥ 1, got %d", p.PointsMax)
		}
	}
	return errors.Join(errs...)
}

// MaxRequests is the bound on requests of the run: the explicit cap, or what
// the open-loop rate issues over the duration.
func (sc *Scenario) MaxRequests() int64 {
	if sc.Requests > 0 {
		return sc.Requests
	}
	if sc.Mode == "open" {
		return int64(float64(sc.Rate) * sc.Duration.Seconds())
	}
	return 0
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

// allowRemote lifts the loopback-only rule (set by -allow-remote).
var allowRemote bool

// checkLoopbackURL refuses gateway URLs that leave the machine, unless
// -allow-remote is given.
func checkLoopbackURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return fmt.Errorf("want http(s)://host:port, got %q", raw)
	}
	if u.Path != "" && u.Path != "/" {
		return fmt.Errorf("want a base URL without a path, got %q", raw)
	}
	return checkLoopbackHost(u.Hostname())
}

// checkLoopbackAddr is checkLoopbackURL for a Redis host:port.
func checkLoopbackAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("bad address %q: %v", addr, err)
	}
	return checkLoopbackHost(host)
}

func checkLoopbackHost(host string) error {
	if allowRemote || host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("%s is not a loopback address (pass -allow-remote to load another machine)", host)
}

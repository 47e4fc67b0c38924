package main

import (
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"time"

	"github.com/rankgate/rankgate/internal/workload"
)

// Scenario is one load-test setup: the data shape, the load and the mix.
// It comes from defaults, then an optional YAML file, then explicit flags.
type Scenario struct {
	// live: the run is the live scenario (-live), whose streams -client
	// conn reads too.
	live    bool
	Name    string `yaml:"name" json:"name"`
	Gateway string `yaml:"gateway" json:"gateway"` // base URL of the gateway
	// Config is the gateway's YAML config: the baseline reads Redis seeds,
	// key prefix and family rules from it.
	Config string `yaml:"config" json:"config"`
	Period string `yaml:"period" json:"period"` // "current" or a period id

	// Data shape: family, members, dimension boards, skews (shared with
	// the capacity planner).
	workload.Shape `yaml:",inline"`

	// Load.
	Mode     string        `yaml:"mode" json:"mode"` // open | closed
	Rate     int           `yaml:"rate" json:"rate"` // open loop: requests per second
	Duration time.Duration `yaml:"duration" json:"duration_ns"`
	Workers  int           `yaml:"workers" json:"workers"` // closed loop: concurrent workers
	// Client is the closed loop's HTTP client: "transport" (net/http's
	// Client, the default) or "conn" (one HTTP/1.1 connection per worker,
	// written and read by the worker itself: no goroutine hand-offs, no
	// allocation per repeated request; connclient.go).
	Client   string        `yaml:"client" json:"client,omitempty"`
	Requests int64         `yaml:"requests" json:"requests"` // optional cap on requests (0: rate × duration)
	Timeout  time.Duration `yaml:"timeout" json:"timeout_ns"`
	Seed     uint64        `yaml:"seed" json:"seed"`

	Ops     []workload.OpSpec `yaml:"ops" json:"ops"`
	Prefill Prefill           `yaml:"prefill" json:"prefill"`
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
		Name:     "mixed",
		Gateway:  "http://127.0.0.1:8080",
		Config:   "deploy/rankgate.dev.yaml",
		Period:   "current",
		Shape:    workload.DefaultShape(),
		Mode:     "open",
		Rate:     200,
		Duration: 10 * time.Second,
		Workers:  16,
		Timeout:  5 * time.Second,
		Seed:     1,
		Ops:      workload.DefaultOps(),
		Prefill:  Prefill{Batch: 500, Concurrency: 4, PointsMax: 10000},
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
	return workload.DecodeOver(data, sc, &sc.Ops, true)
}

// Validate checks a scenario; every problem is reported, naming its field.
func (sc *Scenario) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: %s", field, fmt.Sprintf(format, args...)))
	}
	errs = append(errs, sc.Shape.Validate()...)
	if sc.Period == "" {
		bad("period", "required")
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
	switch sc.Client {
	case "", ClientTransport:
	case ClientConn:
		if sc.Mode != "closed" && !sc.live {
			bad("client", "%q is for the closed loop, the live scenario and the join storm only", ClientConn)
		}
	default:
		bad("client", "must be %s or %s, got %q", ClientTransport, ClientConn, sc.Client)
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
	errs = append(errs, workload.ValidateOps(sc.Ops, &sc.Shape)...)
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

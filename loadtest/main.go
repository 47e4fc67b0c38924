// Command loadtest drives rankgate with a configurable mix of writes and
// reads — open loop (constant arrival rate, vegeta) or closed loop (N
// workers) — and, with -baseline, does the same Redis work in process with
// the gateway's own store, shard and merge packages, so that a run can print
// gateway ÷ baseline. It writes JSON and CSV results and a Markdown report
// with PNG charts. See docs/loadtest.md.
//
//	go run ./loadtest -duration 10s -rate 200                 # gateway, default mix
//	go run ./loadtest -compare-baseline -mode closed -workers 16 -mix top=1 -consistency primary
//	go run ./loadtest -prefill 100000 -duration 0              # load 100k members only
//	go run ./loadtest -compare old/gateway.json new/gateway.json
//	go run ./loadtest -report loadtest/results/RUN/gateway.json
//
// It speaks HTTP to the gateway (RESP to Redis only for its baseline): it must
// not import internal/gateway or internal/httpapi.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/rankgate/rankgate/client"
	"github.com/rankgate/rankgate/internal/config"
	"github.com/rankgate/rankgate/internal/workload"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		if !errors.Is(err, flag.ErrHelp) {
			fmt.Fprintln(os.Stderr, "loadtest:", err)
		}
		os.Exit(2)
	}
}

// cli holds the flags that are not part of a scenario.
type cli struct {
	scenario        string
	baseline        bool
	compareBaseline bool
	compare         bool
	report          bool
	out             string
	noPlots         bool
	quiet           bool
	maxInflight     int
	warmup          time.Duration
	pause           time.Duration
	rounds          int
	prefillTimeout  time.Duration
	prefillDirect   bool
	allowRemote     bool
	// Per-operation overrides (applied to every operation they fit).
	mix         string
	limit       int
	batch       int
	consistency string
	board       string
	radius      int
	users       int
	depth       int
	live        liveFlags
	joinStorm   joinStormFlags
}

// bindFlags registers every flag with the current values of sc as defaults,
// so that flags given explicitly override a scenario file and the others
// keep its values.
func bindFlags(fs *flag.FlagSet, sc *Scenario, c *cli) {
	fs.StringVar(&c.scenario, "scenario", "", "YAML scenario file (flags given explicitly override it)")
	fs.StringVar(&sc.Name, "name", sc.Name, "scenario name, shown in reports")
	fs.StringVar(&sc.Gateway, "gateway", sc.Gateway, "gateway base URL (loopback only unless -allow-remote)")
	fs.StringVar(&sc.Config, "config", sc.Config, "gateway config YAML: Redis seeds, prefix and family rules for the baseline")
	fs.StringVar(&sc.Family, "family", sc.Family, "family to load")
	fs.StringVar(&sc.Period, "period", sc.Period, "period id or current")
	fs.IntVar(&sc.Members, "members", sc.Members, "members in the world: PREFIX0 … PREFIX(N-1)")
	fs.StringVar(&sc.MemberPrefix, "member-prefix", sc.MemberPrefix, "member name prefix")
	fs.IntVar(&sc.Provinces, "provinces", sc.Provinces, "province boards (0: events carry no province)")
	fs.IntVar(&sc.Classes, "classes", sc.Classes, "class boards (0: events carry no class)")
	fs.Float64Var(&sc.BoardSkew, "board-skew", sc.BoardSkew, "Zipf exponent over boards: hot provinces/classes (0: uniform)")
	fs.Float64Var(&sc.MemberSkew, "member-skew", sc.MemberSkew, "Zipf exponent over members: hot users (0: uniform)")
	fs.Int64Var(&sc.DeltaMax, "delta-max", sc.DeltaMax, "each load event carries 1..N points")
	fs.StringVar(&sc.Mode, "mode", sc.Mode, "open (constant arrival rate) or closed (N workers)")
	fs.IntVar(&sc.Rate, "rate", sc.Rate, "open loop: requests per second")
	fs.DurationVar(&sc.Duration, "duration", sc.Duration, "length of the load phase (≤ 1h; 0: prefill only)")
	fs.IntVar(&sc.Workers, "workers", sc.Workers, "closed loop: concurrent workers")
	fs.StringVar(&sc.Client, "client", sc.Client, `closed loop and live streams: HTTP client, "transport" (net/http's, default) or "conn" (one HTTP/1.1 connection per worker or stream, read and written by it: the cheapest client)`)
	fs.Int64Var(&sc.Requests, "requests", sc.Requests, "stop after this many requests (0: rate × duration, or the duration alone in closed loop)")
	fs.DurationVar(&sc.Timeout, "timeout", sc.Timeout, "per-request timeout")
	fs.Uint64Var(&sc.Seed, "seed", sc.Seed, "random seed of the operation mix")
	fs.IntVar(&sc.Prefill.Members, "prefill", sc.Prefill.Members, "before the run, load members [prefill-from, N) through the gateway (0: none)")
	fs.IntVar(&sc.Prefill.From, "prefill-from", sc.Prefill.From, "first member index the prefill loads")
	fs.IntVar(&sc.Prefill.Batch, "prefill-batch", sc.Prefill.Batch, "events per prefill batch (1..1000)")
	fs.IntVar(&sc.Prefill.Concurrency, "prefill-concurrency", sc.Prefill.Concurrency, "prefill batches in flight")
	fs.Int64Var(&sc.Prefill.PointsMax, "prefill-points", sc.Prefill.PointsMax, "prefilled members get 1..N points")
	fs.DurationVar(&c.prefillTimeout, "prefill-timeout", 10*time.Minute, "give up the prefill after this long")
	fs.BoolVar(&c.prefillDirect, "prefill-direct", false, "prefill straight into Redis through the baseline's write path (the gateway's scripts and keys, no HTTP; needs -config): for boards of millions of members")

	fs.StringVar(&c.mix, "mix", "", `operation weights, replacing the scenario's: "event=20,batch=2,top=40,member=14,around=8,page=8,lookup=8" (op@board=w picks a board)`)
	fs.IntVar(&c.limit, "limit", 0, "override: entries per top / page request")
	fs.IntVar(&c.batch, "batch-size", 0, "override: events per batch request")
	fs.StringVar(&c.consistency, "consistency", "", "override for reads: cached, replica or primary")
	fs.StringVar(&c.board, "board", "", "override for reads: national, province, class or any")
	fs.IntVar(&c.radius, "radius", 0, "override: around radius")
	fs.IntVar(&c.users, "lookup-users", 0, "override: members per lookup")
	fs.IntVar(&c.depth, "page-depth", 0, "override: pages per cursor walk")

	fs.BoolVar(&c.baseline, "baseline", false, "run against Redis in process (same scripts, keys, fan-out and merge) instead of the gateway")
	fs.BoolVar(&c.compareBaseline, "compare-baseline", false, "run the gateway, then the baseline, with the same scenario and print gateway ÷ baseline")
	fs.BoolVar(&c.compare, "compare", false, "compare two result files: -compare old.json new.json")
	fs.BoolVar(&c.report, "report", false, "rewrite report.md and charts from result files: -report a.json [b.json]")
	fs.StringVar(&c.out, "out", "", "directory for results and report (default loadtest/results/RUN_ID)")
	fs.BoolVar(&c.noPlots, "no-plots", false, "skip the PNG charts")
	fs.BoolVar(&c.quiet, "quiet", false, "no live progress on stderr")
	fs.IntVar(&c.maxInflight, "max-inflight", 5000, "open loop: requests in flight at most (then starts fall behind schedule, reported as start lag)")
	fs.DurationVar(&c.warmup, "warmup", 0, "run the same load this long first, unrecorded")
	fs.DurationVar(&c.pause, "pause", 2*time.Second, "pause between phases (-compare-baseline, -rounds)")
	fs.IntVar(&c.rounds, "rounds", 1, "split the duration into N phases per target, interleaved gateway, baseline, gateway, … (for noisy machines)")
	fs.BoolVar(&c.allowRemote, "allow-remote", false, "allow a gateway or Redis that is not on loopback")
	bindLiveFlags(fs, &c.live)
	bindJoinStormFlags(fs, &c.joinStorm)
}

// parseArgs builds the scenario: defaults, then -scenario FILE, then flags.
func parseArgs(args []string, stderr io.Writer) (*Scenario, *cli, []string, error) {
	var probe cli
	tmp := DefaultScenario()
	fs0 := flag.NewFlagSet("loadtest", flag.ContinueOnError)
	fs0.SetOutput(io.Discard)
	bindFlags(fs0, &tmp, &probe)
	if err := fs0.Parse(args); err != nil && !errors.Is(err, flag.ErrHelp) {
		fs0.SetOutput(stderr)
		return nil, nil, nil, err
	}
	sc := DefaultScenario()
	if probe.scenario != "" {
		if err := LoadScenario(probe.scenario, &sc); err != nil {
			return nil, nil, nil, err
		}
	}
	var c cli
	fs := flag.NewFlagSet("loadtest", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprintln(stderr, "usage: loadtest [flags]            load the gateway (or -baseline, or both: -compare-baseline)")
		fmt.Fprintln(stderr, "       loadtest -compare old.json new.json")
		fmt.Fprintln(stderr, "       loadtest -report result.json [other.json]")
		fs.PrintDefaults()
	}
	bindFlags(fs, &sc, &c)
	if err := fs.Parse(args); err != nil {
		return nil, nil, nil, err
	}
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	if c.mix != "" {
		ops, err := workload.ParseMix(c.mix)
		if err != nil {
			return nil, nil, nil, fmt.Errorf("-mix: %w", err)
		}
		sc.Ops = ops
	}
	for i := range sc.Ops {
		o := &sc.Ops[i]
		read := o.Op != workload.OpEvent && o.Op != workload.OpBatch
		if set["limit"] && (o.Op == workload.OpTop || o.Op == workload.OpPage) {
			o.Limit = c.limit
		}
		if set["batch-size"] && o.Op == workload.OpBatch {
			o.Batch = c.batch
		}
		if set["consistency"] && read {
			o.Consistency = c.consistency
		}
		if set["board"] && read {
			o.Board = c.board
		}
		if set["radius"] && o.Op == workload.OpAround {
			o.Radius = c.radius
		}
		if set["lookup-users"] && o.Op == workload.OpLookup {
			o.Users = c.users
		}
		if set["page-depth"] && o.Op == workload.OpPage {
			o.Depth = c.depth
		}
	}
	if sc.Prefill.Members > sc.Members && !set["members"] {
		sc.Members = sc.Prefill.Members
	}
	allowRemote = c.allowRemote
	return &sc, &c, fs.Args(), nil
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	sc, c, rest, err := parseArgs(args, stderr)
	if err != nil {
		return err
	}
	for _, a := range rest {
		if strings.HasPrefix(a, "-") {
			return fmt.Errorf("flag %s after a file name: put flags first (loadtest -out DIR -report a.json)", a)
		}
	}
	switch {
	case c.compare:
		if len(rest) != 2 {
			return errors.New("-compare takes two result files: old.json new.json")
		}
		return compareFiles(stdout, rest[0], rest[1])
	case c.report:
		return reportFiles(stdout, c, rest)
	case len(rest) > 0:
		return fmt.Errorf("unexpected arguments %q", rest)
	case c.joinStorm.n > 0:
		dir := c.out
		if dir == "" {
			dir = filepath.Join("loadtest", "results", "js"+strconv.FormatInt(time.Now().UnixMilli(), 36))
		}
		return runJoinStorm(ctx, sc.Gateway, sc.Client, sc.Timeout, c.joinStorm, dir, stdout, stderr)
	}
	sc.live = c.live.ks != ""
	if err := sc.Validate(); err != nil {
		return fmt.Errorf("scenario:\n%w", err)
	}
	if c.rounds < 1 || c.rounds > 100 || (c.rounds > 1 && sc.Duration/time.Duration(c.rounds) < time.Second) {
		return fmt.Errorf("-rounds must be within 1..100 and leave phases of at least 1s, got %d over %s", c.rounds, sc.Duration)
	}
	cfg, valueField, err := gatewayFamily(sc, c, stderr)
	if err != nil {
		return err
	}
	w, err := NewWorld(sc, valueField)
	if err != nil {
		return err
	}
	if cfg != nil {
		w.cols = cfg.Families[sc.Family].RankColumns()
	}
	runID := "lt" + strconv.FormatInt(time.Now().UnixMilli(), 36)
	dir := c.out
	if dir == "" {
		dir = filepath.Join("loadtest", "results", runID)
	}

	pre, err := runPrefill(ctx, sc, c, w, cfg, stdout, stderr)
	if err != nil {
		return err
	}
	if sc.Duration == 0 {
		return nil
	}
	if c.live.ks != "" {
		return runLive(ctx, sc, c, w, cfg, dir, stdout, stderr)
	}

	names := []string{"gateway"}
	switch {
	case c.compareBaseline:
		names = []string{"gateway", "baseline"}
	case c.baseline:
		names = []string{"baseline"}
	}
	var targets []*targetRun
	defer func() {
		for _, t := range targets {
			t.close()
		}
	}()
	for _, n := range names {
		t, err := prepareTarget(ctx, n, sc, w, runID)
		if err != nil {
			return fmt.Errorf("%s: %w", n, err)
		}
		targets = append(targets, t)
	}
	runRounds(ctx, targets, sc, c, runID, stderr)
	var results []*Result
	for _, t := range targets {
		r := t.finish()
		r.Prefill = pre
		r.Rounds = c.rounds
		if _, err := r.WriteFiles(dir); err != nil {
			return err
		}
		PrintSummary(stdout, r)
		results = append(results, r)
	}
	if gw, bl := pair(results); gw != nil && bl != nil {
		fmt.Fprintln(stdout, "\ngateway ÷ baseline (ratio = gateway / baseline)")
		FormatCompare(stdout, bl.Label(), gw.Label(), CompareResults(bl, gw))
	}
	path, err := WriteReport(dir, results, !c.noPlots)
	if err != nil {
		return err
	}
	fmt.Fprintf(stdout, "\nresults: %s (JSON, CSV%s)\nreport:  %s\n", dir, map[bool]string{true: "", false: ", PNG charts"}[c.noPlots], path)
	return nil
}

// targetRun is one target (gateway or baseline) of a run: its executor and
// the recorder its phases share.
type targetRun struct {
	name    string
	sc      *Scenario
	w       *World
	exec    Executor
	api     *httpAPI
	close   func()
	res     *Result
	names   []string
	kinds   []string
	rec     *Recorder
	elapsed time.Duration
}

// prepareTarget checks the gateway (or connects the baseline to Redis).
func prepareTarget(ctx context.Context, target string, sc *Scenario, w *World, runID string) (*targetRun, error) {
	t := &targetRun{name: target, sc: sc, w: w, close: func() {}}
	t.res = &Result{Tool: "rankgate-loadtest", RunID: runID, Target: target, Mode: sc.Mode, Scenario: *sc,
		Command: "loadtest " + strings.Join(os.Args[1:], " "), Host: thisHost()}
	if sc.Mode == "open" {
		t.res.Rate = sc.Rate
	} else {
		t.res.Workers = sc.Workers
	}
	switch target {
	case "gateway":
		if err := gatewayReady(ctx, sc.Gateway); err != nil {
			return nil, err
		}
		t.api = newHTTPAPI(w)
		t.exec = &gatewayExec{api: t.api, client: newHTTPClient(max(sc.Workers, 64), sc.Timeout)}
		if sc.Client == ClientConn {
			ce, err := newConnExec(t.api)
			if err != nil {
				return nil, err
			}
			t.exec = ce
		}
		t.res.Period, t.res.NationalMembers = gatewayBoardSize(ctx, sc)
	case "baseline":
		cfg, err := loadGatewayConfig(sc.Config)
		if err != nil {
			return nil, err
		}
		bl, err := NewBaseline(ctx, w, cfg)
		if err != nil {
			return nil, err
		}
		t.exec, t.close = bl, bl.Close
		t.res.Period = bl.periodID
		t.res.NationalMembers, _ = bl.Card(ctx, 0)
	}
	for _, o := range sc.Ops {
		t.names, t.kinds = append(t.names, o.Name), append(t.kinds, o.Op)
	}
	return t, nil
}

// load runs one load phase into rec; event ids are PREFIX.N.
func (t *targetRun) load(ctx context.Context, sc *Scenario, c *cli, rec *Recorder, prefix string) time.Duration {
	sh := newShared(prefix)
	switch {
	case sc.Mode == "closed":
		return closedLoop(ctx, sc, t.exec, t.w, sh, rec)
	case t.name == "gateway":
		return openLoopGateway(ctx, sc, t.api, NewGen(t.w, sc.Seed, 0, sh), rec, c.maxInflight)
	default:
		return openLoopExec(ctx, sc, t.exec, NewGen(t.w, sc.Seed, 0, sh), rec, c.maxInflight)
	}
}

// warmup runs the load for -warmup, unrecorded.
func (t *targetRun) warmup(ctx context.Context, sc *Scenario, c *cli, stderr io.Writer) {
	wsc := *sc
	wsc.Duration, wsc.Requests = c.warmup, 0
	fmt.Fprintf(stderr, "%s: warm-up %s (not recorded)\n", t.name, c.warmup)
	t.load(ctx, &wsc, c, NewRecorder(t.names, time.Now()), t.res.RunID+t.name[:1]+"w")
}

// phase runs one recorded load phase, with live progress on stderr.
func (t *targetRun) phase(ctx context.Context, sc *Scenario, c *cli, label, prefix string, stderr io.Writer) {
	if t.rec == nil {
		t.res.Started = time.Now()
		t.rec = NewRecorder(t.names, t.res.Started)
	}
	stop := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		if !c.quiet {
			progress(stderr, label, t.rec, stop)
		}
	}()
	start := time.Now()
	t.elapsed += t.load(ctx, sc, c, t.rec, prefix)
	t.rec.Window(start, time.Now())
	close(stop)
	<-done
}

// finish computes the result over every phase.
func (t *targetRun) finish() *Result {
	t.res.ElapsedS = t.elapsed.Seconds()
	if t.rec != nil {
		t.res.Total, t.res.Ops, t.res.Series, t.res.Lag = t.rec.Finish(t.kinds, t.res.ElapsedS)
	}
	return t.res
}

// gatewayReady checks GET /readyz.
func gatewayReady(ctx context.Context, base string) error {
	ctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	c, err := client.New(base, client.WithRetry(client.Retry{Attempts: 1}))
	if err != nil {
		return err
	}
	err = c.Ready(ctx)
	var apiErr *client.Error
	switch {
	case errors.As(err, &apiErr):
		return fmt.Errorf("gateway at %s is not ready: %d %s", base, apiErr.Status, apiErr.Message)
	case err != nil:
		return fmt.Errorf("gateway not reachable at %s (start it: make run, or go run ./cmd/gateway -config deploy/rankgate.dev.yaml): %w", base, err)
	}
	return nil
}

// gatewayBoardSize reads the period id and the national board's size from
// GET /v1/boards/{family}/{period}.
func gatewayBoardSize(ctx context.Context, sc *Scenario) (string, int64) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	c, err := client.New(sc.Gateway, client.WithRetry(client.Retry{Attempts: 2}))
	if err != nil {
		return "", 0
	}
	list, err := c.Boards(ctx, sc.Family, sc.Period)
	if err != nil {
		return "", 0
	}
	for _, b := range list.Boards {
		if b.Dimension == workload.BoardNational {
			return list.Period, b.Members
		}
	}
	return list.Period, 0
}

func compareFiles(w io.Writer, oldPath, newPath string) error {
	a, err := ReadResult(oldPath)
	if err != nil {
		return err
	}
	b, err := ReadResult(newPath)
	if err != nil {
		return err
	}
	FormatCompare(w, oldPath+" ("+a.Label()+")", newPath+" ("+b.Label()+")", CompareResults(a, b))
	return nil
}

func reportFiles(w io.Writer, c *cli, files []string) error {
	if len(files) == 0 {
		return errors.New("-report takes one or more result files")
	}
	var results []*Result
	for _, f := range files {
		r, err := ReadResult(f)
		if err != nil {
			return err
		}
		results = append(results, r)
		PrintSummary(w, r)
	}
	dir := c.out
	if dir == "" {
		dir = filepath.Dir(files[0])
	}
	path, err := WriteReport(dir, results, !c.noPlots)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\nreport: %s\n", path)
	return nil
}

// gatewayFamily reads the gateway's config (the baseline and the direct
// prefill need it; a plain run only notes its absence) and checks the
// scenario's family against it: it answers the config (nil when absent) and
// the event field the family takes ("delta" for sum, "value" for max/min).
func gatewayFamily(sc *Scenario, c *cli, stderr io.Writer) (*config.Config, string, error) {
	cfg, cfgErr := loadGatewayConfig(sc.Config)
	needBaseline := c.baseline || c.compareBaseline || (c.prefillDirect && sc.Prefill.Members > 0)
	valueField := "delta"
	if cfgErr != nil {
		if needBaseline {
			return nil, "", fmt.Errorf("-config %s (the baseline needs it): %w", sc.Config, cfgErr)
		}
		fmt.Fprintf(stderr, "note: no gateway config (%v); assuming family %s sums deltas\n", cfgErr, sc.Family)
	} else {
		f, ok := cfg.Families[sc.Family]
		if !ok {
			return nil, "", fmt.Errorf("family %q is not in %s (families: %s)", sc.Family, sc.Config, strings.Join(cfg.FamilyNames, ", "))
		}
		if f.Aggregate != "" && f.Aggregate != "sum" {
			valueField = "value"
		}
		for _, d := range []struct {
			typ, flag string
			n         int
		}{{workload.BoardProvince, "provinces", sc.Provinces}, {workload.BoardClass, "classes", sc.Classes}} {
			if _, has := f.Dimensions[d.typ]; d.n > 0 && !has {
				return nil, "", fmt.Errorf("family %s has no %s dimension: pass -%s 0", sc.Family, d.typ, d.flag)
			}
		}
	}
	return cfg, valueField, nil
}

// runPrefill loads the scenario's prefill members through the gateway or,
// with -prefill-direct, straight into Redis; nil when nothing is prefilled.
func runPrefill(ctx context.Context, sc *Scenario, c *cli, w *World, cfg *config.Config, stdout, stderr io.Writer) (*PrefillStats, error) {
	if sc.Prefill.Members == 0 {
		return nil, nil
	}
	send, via := httpSend(w), "the gateway"
	if c.prefillDirect {
		bl, err := NewBaseline(ctx, w, cfg)
		if err != nil {
			return nil, fmt.Errorf("prefill: %w", err)
		}
		defer bl.Close()
		send, via = directSend(w, bl, 200*time.Millisecond), "Redis directly (-prefill-direct)"
	} else if err := gatewayReady(ctx, sc.Gateway); err != nil {
		return nil, err
	}
	fmt.Fprintf(stderr, "prefill: members %s%d … %s%d of family %s through %s (batches of %d, %d in flight)\n",
		sc.MemberPrefix, sc.Prefill.From, sc.MemberPrefix, sc.Prefill.Members-1, sc.Family, via, sc.Prefill.Batch, sc.Prefill.Concurrency)
	pre, err := prefill(ctx, w, stderr, c.prefillTimeout, send)
	if err != nil {
		return nil, fmt.Errorf("prefill: %w", err)
	}
	fmt.Fprintf(stdout, "prefill: %d members in %.1fs (%.0f events/s, %d failed items)\n", pre.Events, pre.Seconds, pre.Rate, pre.Failed)
	return pre, nil
}

// runRounds runs the measured phases. Rounds interleave the targets
// (gateway, baseline, gateway, …), each phase 1/rounds of the duration, so
// that a noisy machine weighs on both alike; each target's results pool its
// phases. It stops early when ctx ends.
func runRounds(ctx context.Context, targets []*targetRun, sc *Scenario, c *cli, runID string, stderr io.Writer) {
	phase := *sc
	phase.Duration = sc.Duration / time.Duration(c.rounds)
	if sc.Requests > 0 {
		phase.Requests = max(sc.Requests/int64(c.rounds), 1)
	}
	for r := range c.rounds {
		for i, t := range targets {
			if (r > 0 || i > 0) && c.pause > 0 {
				select {
				case <-ctx.Done():
					return
				case <-time.After(c.pause):
				}
			}
			if r == 0 && c.warmup > 0 {
				t.warmup(ctx, &phase, c, stderr)
			}
			label := fmt.Sprintf("[%s %s]", t.name, sc.Mode)
			if c.rounds > 1 {
				label = fmt.Sprintf("[%s %s %d/%d]", t.name, sc.Mode, r+1, c.rounds)
			}
			t.phase(ctx, &phase, c, label, fmt.Sprintf("%s%s%d", runID, t.name[:1], r), stderr)
			if ctx.Err() != nil {
				return
			}
		}
	}
}

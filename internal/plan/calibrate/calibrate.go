// Package calibrate measures, on a live Redis Cluster, the numbers the
// capacity model (package plan) needs: bytes per member and per dedupe entry
// of sample boards, and Redis commands per API call, counted by a decorator
// around gateway.Backend (counting_backend.go) while the real
// gateway.Service runs each operation, plus INFO commandstats deltas for the
// commands inside scripts. Run writes under a private key prefix and removes
// every key it wrote.
//
// It owns the measuring only: the model stays in package plan, which must
// never import this one. It may import go-redis, internal/store and
// internal/gateway (it drives the real service), never net/http.
package calibrate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"math"
	mrand "math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/redis/go-redis/v9"
	"golang.org/x/sync/errgroup"

	"github.com/rankgate/rankgate/internal/config"
	"github.com/rankgate/rankgate/internal/gateway"
	"github.com/rankgate/rankgate/internal/monitor"
	"github.com/rankgate/rankgate/internal/plan"
	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/store"
	"github.com/rankgate/rankgate/internal/workload"
)

// Options configure a calibration run.
type Options struct {
	// Config is the gateway config: Redis settings, limits and the
	// scenario's family (its tie, rank and aggregate rules are copied).
	Config *config.Config
	// Client is a masters' client (store.NewClient) on the cluster to
	// measure. Calibrate loads the scripts on every node.
	Client   redis.UniversalClient
	Scenario *plan.Scenario
	// Sample is the member count of the large sample boards (default 5000;
	// it must be above zset-max-listpack-entries). The small ones hold 100
	// (or ¾ of the listpack limit when that is lower).
	Sample int
	// Calls is the API calls measured per operation (default 100).
	Calls int
	// Prefix is the private key prefix (default "plan" + 10 random hex
	// digits); every key written under it is removed at the end.
	Prefix string
	// Seed makes the sample data reproducible (0: seeded from the clock).
	// The points decide whether a Top-N needs its second round, so a test
	// that pins command counts pins the seed too.
	Seed   uint64
	Logger *slog.Logger
}

// Calibrate measures bytes and commands on the live cluster through the
// real gateway.Service over a store.Store, under a private key prefix, and
// UNLINKs every key it wrote at the end, also when it fails.
func Run(ctx context.Context, o Options) (cal plan.Calibration, err error) {
	if o.Config == nil || o.Client == nil || o.Scenario == nil {
		return cal, errors.New("calibrate: config, client and scenario are required")
	}
	if o.Sample == 0 {
		o.Sample = 5000
	}
	if o.Calls <= 0 {
		o.Calls = 100
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Prefix == "" {
		var b [5]byte
		if _, err := rand.Read(b[:]); err != nil {
			return cal, err
		}
		o.Prefix = "plan" + hex.EncodeToString(b[:])
	}
	fam, ok := o.Config.Family(o.Scenario.Family)
	if !ok {
		return cal, fmt.Errorf("calibrate: the config has no family %q (scenario family)", o.Scenario.Family)
	}
	if err := store.Preload(ctx, o.Client); err != nil {
		return cal, fmt.Errorf("calibrate: loading scripts: %w", err)
	}
	st, err := store.New(o.Client, nil, store.Options{Timeout: 10 * time.Second})
	if err != nil {
		return cal, err
	}
	cb := newCountingBackend(st)
	if o.Seed == 0 {
		o.Seed = uint64(time.Now().UnixNano())
	}
	r := &run{o: o, c: o.Client, cb: cb, log: o.Logger, fam: fam, rnd: mrand.New(mrand.NewPCG(o.Seed, 7))}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		defer cancel()
		n, cerr := cleanup(cctx, o.Client, o.Prefix, cb.Keys())
		o.Logger.Info("calibration keys removed", "prefix", o.Prefix, "keys", n)
		if cerr != nil {
			err = errors.Join(err, fmt.Errorf("calibrate: removing keys under %s: %w", o.Prefix, cerr))
		}
	}()

	cal.Cluster = strings.Join(o.Config.Redis.Addrs, ",")
	cal.Counting = "a counting decorator around gateway.Backend (client commands: one per EVALSHA, ZREVRANGE, ZMSCORE, ZCOUNT, INCRBY sent; round trips: one per node pipeline); " +
		"server commands from INFO commandstats deltas on the masters (commands inside scripts included, as in instantaneous_ops_per_sec)"
	if cal.RedisServer, cal.ListpackMaxEntries, cal.HashListpackMaxEntries, err = serverFacts(ctx, o.Client); err != nil {
		return cal, err
	}
	small := 100
	if cal.ListpackMaxEntries <= small {
		small = max(1, cal.ListpackMaxEntries*3/4)
	}
	if o.Sample <= cal.ListpackMaxEntries {
		return cal, fmt.Errorf("calibrate: -sample %d must be above zset-max-listpack-entries (%d)", o.Sample, cal.ListpackMaxEntries)
	}
	if err := r.service(small); err != nil {
		return cal, err
	}
	for _, size := range []int{small, o.Sample} {
		versionBytes, versionEnc, err := r.versionBoard(ctx, size)
		if err != nil {
			return cal, err
		}
		for _, tie := range []string{config.TieMember, config.TieFirst} {
			m, err := r.memoryBoard(ctx, tie, size)
			if err != nil {
				return cal, err
			}
			m.VersionBytes, m.VersionEncoding = versionBytes, versionEnc
			m.Derive()
			cal.Memory = append(cal.Memory, m)
		}
	}
	cal.Ops, cal.OpsShards, err = r.ops(ctx)
	return cal, err
}

// run is one calibration.
type run struct {
	o   Options
	c   redis.UniversalClient
	cb  *countingBackend
	svc *gateway.Service
	reg *prometheus.Registry
	log *slog.Logger
	fam *config.Family
	cfg *config.Config
	rnd *mrand.Rand
	ids int
	big int // national shards of the ops family
}

func memName(tie string, size int) string { return "m" + tie[:1] + strconv.Itoa(size) }
func verName(size int) string             { return "v" + strconv.Itoa(size) }

const opsFamily = "ops"

// service builds the Service over the counting backend with the sample
// families: m<tie><size> (events, sum, period all, one shard) for memory,
// v<size> (projection) for the version hash, and "ops", a copy of the
// scenario family's rules with national over S shards and one-shard province
// and class boards, for commands.
func (r *run) service(small int) error {
	cfg := *r.o.Config
	cfg.Redis.Prefix = r.o.Prefix
	cfg.Redis.ReplicaReads = false
	cfg.Families = map[string]*config.Family{}
	one := map[string]config.Dimension{config.DimNational: {Shards: 1}}
	for _, size := range []int{small, r.o.Sample} {
		for _, tie := range []string{config.TieMember, config.TieFirst} {
			cfg.Families[memName(tie, size)] = sampleFamily(memName(tie, size), config.SourceEvents, tie, one)
		}
		cfg.Families[verName(size)] = sampleFamily(verName(size), config.SourceProjection, config.TieMember, one)
	}
	ops := *r.fam
	ops.Name = opsFamily
	if ops.Projection() {
		ops.Source, ops.Aggregate = config.SourceEvents, config.AggregateSum
	}
	r.big = r.fam.Dimensions[config.DimNational].Shards
	if r.big < 2 {
		r.big = 8
	}
	ops.Dimensions = map[string]config.Dimension{config.DimNational: {Shards: r.big}, workload.BoardProvince: {Shards: 1}, workload.BoardClass: {Shards: 1}}
	ops.DimensionTypes = []string{workload.BoardClass, workload.BoardProvince}
	cfg.Families[opsFamily] = &ops
	cfg.FamilyNames = slices.Sorted(maps.Keys(cfg.Families))
	if cfg.Limits.MaxBatch < 1 {
		cfg.Limits.MaxBatch = 1000
	}
	r.cfg = &cfg
	r.reg = prometheus.NewRegistry()
	// The service logs every applied event at info: keep its warnings only.
	quiet := slog.New(warnOnly{r.log.Handler()}).With("component", "calibration")
	svc, err := gateway.New(gateway.Options{Config: &cfg, Backend: r.cb, Registerer: r.reg, Logger: quiet})
	if err != nil {
		return fmt.Errorf("calibrate: %w", err)
	}
	r.svc = svc
	return nil
}

func sampleFamily(name, source, tie string, dims map[string]config.Dimension) *config.Family {
	f := &config.Family{Name: name, Source: source, Order: config.OrderDesc, Period: config.PeriodAll, Location: time.UTC,
		WeekStart: time.Monday, Grace: 5 * time.Minute, Retention: time.Hour, Tie: tie, Rank: config.RankCompetition,
		RulesVersion: "plan", Dimensions: dims, MaxPoints: config.MaxPointsLimit}
	if source == config.SourceEvents {
		f.Aggregate = config.AggregateSum
	}
	if tie == config.TieFirst {
		f.MaxPoints, f.SeqCapacity = config.DefaultTieFirstMaxPoints, config.DefaultSeqCapacity
	}
	return f
}

func (r *run) member(i int) string { return r.o.Scenario.MemberPrefix + strconv.Itoa(i) }

// eventID returns a fresh id of the scenario's event_id_length.
func (r *run) eventID() string {
	r.ids++
	n := strconv.Itoa(r.ids)
	l := r.o.Scenario.EventIDLength
	head := r.o.Prefix + "-"
	if len(head)+len(n) > l {
		head = ""
	}
	return head + strings.Repeat("0", max(0, l-len(head)-len(n))) + n
}

func (r *run) delta() *int64 {
	d := 1 + r.rnd.Int64N(r.o.Scenario.DeltaMax)
	return &d
}

// apply sends events in batches of max_batch and fails on any refusal.
func (r *run) apply(ctx context.Context, evs []gateway.Event) error {
	for start := 0; start < len(evs); start += r.cfg.Limits.MaxBatch {
		items, err := r.svc.ApplyBatch(ctx, evs[start:min(start+r.cfg.Limits.MaxBatch, len(evs))])
		if err != nil {
			return fmt.Errorf("calibrate: batch: %w", err)
		}
		for _, it := range items {
			if it.Err != nil {
				return fmt.Errorf("calibrate: event: %w", it.Err)
			}
		}
	}
	return nil
}

func (r *run) keys(family string) shard.Keys {
	l := shard.Layout{Prefix: r.o.Prefix}
	return l.Keys(shard.Board{Family: family, Period: "all", DimType: shard.National}, 0, 1)
}

// memoryBoard writes one sample board: size members, 1 event each, then 2
// more each, measuring the dedupe hash after the first round and every key
// after the last; then a bare ZADD copy of member → points beside it.
func (r *run) memoryBoard(ctx context.Context, tie string, size int) (plan.MemorySample, error) {
	name := memName(tie, size)
	k := r.keys(name)
	m := plan.MemorySample{Tie: tie, Members: size, EventsPerMember: 3}
	r.log.Info("calibrating memory", "family", name, "members", size)
	for round := range 3 {
		evs := make([]gateway.Event, size)
		for i := range evs {
			evs[i] = gateway.Event{EventID: r.eventID(), Family: name, User: r.member(i), Delta: r.delta()}
		}
		if err := r.apply(ctx, evs); err != nil {
			return m, err
		}
		if round == 0 {
			var err error
			if err := r.settle(ctx, "", k.Ev, size, 2*size); err != nil {
				return m, err
			}
			if m.DedupeBytes1, err = memoryUsage(ctx, r.c, k.Ev); err != nil {
				return m, err
			}
		}
	}
	var err error
	if err := r.settle(ctx, k.Z, k.Ev, size, 4*size); err != nil {
		return m, err
	}
	for _, x := range []struct {
		key string
		dst *int64
	}{{k.Z, &m.ZsetBytes}, {k.Ev, &m.DedupeBytes}, {k.Meta, &m.MetaBytes}} {
		if *x.dst, err = memoryUsage(ctx, r.c, x.key); err != nil {
			return m, err
		}
	}
	if m.Encoding, err = r.c.ObjectEncoding(ctx, k.Z).Result(); err != nil {
		return m, fmt.Errorf("calibrate: object encoding %s: %w", k.Z, err)
	}
	if m.DedupeEncoding, err = r.c.ObjectEncoding(ctx, k.Ev).Result(); err != nil {
		return m, fmt.Errorf("calibrate: object encoding %s: %w", k.Ev, err)
	}
	// The bare sorted set: what plain ZADD member points would hold.
	zs, err := r.c.ZRangeWithScores(ctx, k.Z, 0, -1).Result()
	if err != nil {
		return m, fmt.Errorf("calibrate: zrange %s: %w", k.Z, err)
	}
	if len(zs) != size {
		return m, fmt.Errorf("calibrate: %s holds %d members, want %d", k.Z, len(zs), size)
	}
	bare := k.Z + ":bare"
	r.cb.track(bare)
	f := r.cfg.Families[name]
	for i := range zs {
		if f.TieFirst() {
			zs[i].Score = math.Floor(zs[i].Score / float64(f.SeqCapacity))
		}
	}
	for start := 0; start < len(zs); start += 1000 {
		if err := r.c.ZAdd(ctx, bare, zs[start:min(start+1000, len(zs))]...).Err(); err != nil {
			return m, fmt.Errorf("calibrate: zadd %s: %w", bare, err)
		}
	}
	if err := r.settle(ctx, bare, "", size, 0); err != nil {
		return m, err
	}
	if m.BareBytes, err = memoryUsage(ctx, r.c, bare); err != nil {
		return m, err
	}
	return m, nil
}

// versionBoard projects size members twice (versions 1 and 2) onto a
// projection board and returns the bytes and encoding of its version hash :m.
func (r *run) versionBoard(ctx context.Context, size int) (int64, string, error) {
	name := verName(size)
	r.log.Info("calibrating the version hash", "family", name, "members", size)
	ref := gateway.BoardRef{Family: name, Period: "all", Dimension: shard.National}
	for version := int64(1); version <= 2; version++ {
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(32)
		for i := range size {
			points := int64(i%1000 + 1)
			g.Go(func() error {
				_, err := r.svc.Project(gctx, ref, r.member(i), gateway.Projection{Version: version, Points: points * version})
				return err
			})
		}
		if err := g.Wait(); err != nil {
			return 0, "", fmt.Errorf("calibrate: projection: %w", err)
		}
	}
	k := r.keys(name)
	if err := r.settle(ctx, k.Z, "", size, 0); err != nil {
		return 0, "", err
	}
	// :m holds one field per member: look each up twice.
	for range 2 {
		if err := r.lookups(ctx, k.M, "", size, true); err != nil {
			return 0, "", err
		}
	}
	n, err := memoryUsage(ctx, r.c, k.M)
	if err != nil {
		return 0, "", err
	}
	enc, err := r.c.ObjectEncoding(ctx, k.M).Result()
	if err != nil {
		return 0, "", fmt.Errorf("calibrate: object encoding %s: %w", k.M, err)
	}
	return n, enc, nil
}

// settle finishes the incremental rehash of a zset's dict and of a dedupe
// hash before they are measured: Redis grows a dict by allocating a table
// twice the size and moving one bucket per lookup or write, so a key that
// just grew holds both tables (a 5000-member zset measured 525360 bytes
// right after its ZADDs and 492592 once settled). Every lookup moves at
// least one bucket: zsets get 2 × members ZMSCOREs, the dedupe hash
// hashFields HMGETs of its #n:<member> counters (at least its field count).
func (r *run) settle(ctx context.Context, zset, hash string, members, hashFields int) error {
	if zset != "" {
		for range 2 {
			if err := r.lookups(ctx, zset, "", members, false); err != nil {
				return err
			}
		}
	}
	if hash != "" {
		for done := 0; done < hashFields; done += members {
			if err := r.lookups(ctx, hash, "#n:", members, true); err != nil {
				return err
			}
		}
	}
	return nil
}

// lookups looks every member up once in key: ZMSCORE for a zset, HMGET of
// prefix+member for a hash.
func (r *run) lookups(ctx context.Context, key, prefix string, members int, hash bool) error {
	for start := 0; start < members; start += 1000 {
		args := []any{"ZMSCORE", key}
		if hash {
			args[0] = "HMGET"
		}
		for i := start; i < min(start+1000, members); i++ {
			args = append(args, prefix+r.member(i))
		}
		if err := r.c.Do(ctx, args...).Err(); err != nil {
			return fmt.Errorf("calibrate: settling %s: %w", key, err)
		}
	}
	return nil
}

// ops measures commands per call of every operation, reads at 1 shard (a
// province board) and at r.big shards (national).
func (r *run) ops(ctx context.Context) (map[string]plan.OpCost, [2]int, error) {
	shards := [2]int{1, r.big}
	n := r.o.Sample
	r.log.Info("calibrating commands per call", "family", opsFamily, "members", n, "national_shards", r.big)
	dims := func(i int) map[string]string {
		return map[string]string{workload.BoardProvince: "p" + strconv.Itoa(i%4), workload.BoardClass: "c" + strconv.Itoa(i%8)}
	}
	evs := make([]gateway.Event, n)
	for i := range evs {
		d := 1 + r.rnd.Int64N(1000)
		evs[i] = gateway.Event{EventID: r.eventID(), Family: opsFamily, User: r.member(i), Delta: &d, Dims: dims(i)}
	}
	if err := r.apply(ctx, evs); err != nil {
		return nil, shards, err
	}
	national := gateway.BoardRef{Family: opsFamily, Period: "current", Dimension: shard.National}
	province := gateway.BoardRef{Family: opsFamily, Period: "current", Dimension: workload.BoardProvince + ":p0"}
	// Members of each read board: national holds all, p0 every 4th.
	onBoard := func(s int) func() string {
		if s == 1 {
			return func() string { return r.member(4 * r.rnd.IntN(n/4)) }
		}
		return func() string { return r.member(r.rnd.IntN(n)) }
	}
	refOf := func(s int) gateway.BoardRef {
		if s == 1 {
			return province
		}
		return national
	}
	out := map[string]plan.OpCost{}
	for _, spec := range plan.OpsToCalibrate(r.o.Scenario) {
		key := plan.OpKey(spec)
		cost := plan.OpCost{Kind: spec.Op}
		switch spec.Op {
		case workload.OpEvent, workload.OpBatch:
			size := 1
			if spec.Op == workload.OpBatch {
				size = spec.Batch
			}
			call := func(ctx context.Context) error {
				evs := make([]gateway.Event, size)
				for j := range evs {
					i := r.rnd.IntN(n)
					evs[j] = gateway.Event{EventID: r.eventID(), Family: opsFamily, User: r.member(i), Delta: r.delta(), Dims: dims(i)}
				}
				return r.apply(ctx, evs)
			}
			calls := r.o.Calls
			if size > 1 {
				calls = max(5, r.o.Calls/10)
			}
			m, err := r.measure(ctx, calls, call)
			if err != nil {
				return nil, shards, fmt.Errorf("calibrate %s: %w", key, err)
			}
			m.Shards, m.Boards, m.Events = r.big, 3, float64(size)
			cost.Measured = append(cost.Measured, m)
			cost.FitWrites()
		default:
			for _, s := range shards {
				ref, pick := refOf(s), onBoard(s)
				call := r.readCall(spec, ref, pick)
				m, err := r.measure(ctx, r.o.Calls, call)
				if err != nil {
					return nil, shards, fmt.Errorf("calibrate %s at %d shards: %w", key, s, err)
				}
				m.Shards = s
				cost.Measured = append(cost.Measured, m)
			}
			cost.FitReads()
		}
		out[key] = cost
	}
	return out, shards, nil
}

// readCall is one call of read operation spec on board ref, reading members
// that pick chooses, at consistency primary.
func (r *run) readCall(spec workload.OpSpec, ref gateway.BoardRef, pick func() string) func(ctx context.Context) error {
	primary := gateway.ReadOptions{Consistency: gateway.ConsistencyPrimary}
	var call func(ctx context.Context) error
	switch spec.Op {
	case workload.OpTop:
		call = func(ctx context.Context) error { _, err := r.svc.Top(ctx, ref, spec.Limit, primary); return err }
	case workload.OpMember:
		call = func(ctx context.Context) error { _, err := r.svc.Member(ctx, ref, pick(), primary); return err }
	case workload.OpAround:
		call = func(ctx context.Context) error {
			_, err := r.svc.Around(ctx, ref, pick(), spec.Radius, primary)
			return err
		}
	case workload.OpLookup:
		call = func(ctx context.Context) error {
			users := make([]string, spec.Users)
			for j := range users {
				users[j] = pick()
			}
			_, err := r.svc.Lookup(ctx, ref, users, primary)
			return err
		}
	case workload.OpPage:
		// A walk of depth pages, first page included: one call per page.
		var cursor string
		page := 0
		call = func(ctx context.Context) error {
			if page%spec.Depth == 0 {
				cursor = ""
			}
			page++
			p, err := r.svc.Entries(ctx, ref, gateway.PageQuery{Limit: spec.Limit, Cursor: cursor}, primary)
			cursor = p.NextCursor
			return err
		}
	}
	return call
}

// measure runs call once to warm the gateway's period caches, then calls
// times, and returns the averages per call.
func (r *run) measure(ctx context.Context, calls int, call func(context.Context) error) (plan.OpMeasure, error) {
	if err := call(ctx); err != nil {
		return plan.OpMeasure{}, err
	}
	before, err := gatherOps(r.reg)
	if err != nil {
		return plan.OpMeasure{}, err
	}
	srvBefore, err := serverCommands(ctx, r.c)
	if err != nil {
		return plan.OpMeasure{}, err
	}
	r.cb.start()
	for range calls {
		if err := call(ctx); err != nil {
			r.cb.stop()
			return plan.OpMeasure{}, err
		}
	}
	c := r.cb.stop()
	srvAfter, err := serverCommands(ctx, r.c)
	if err != nil {
		return plan.OpMeasure{}, err
	}
	after, err := gatherOps(r.reg)
	if err != nil {
		return plan.OpMeasure{}, err
	}
	n := float64(calls)
	srvCalls, srvUsec := srvAfter.delta(srvBefore, map[string]int{"zcount": c.zcount, "zcard": c.zcard, "zrevrange": c.zrevrange})
	m := plan.OpMeasure{Calls: calls, ShardCommands: float64(c.shard) / n, Period: float64(c.period) / n, RoundTrips: float64(c.calls) / n,
		ServerCommands: srvCalls / n, ServerUsec: srvUsec / n}
	if fo := after.fanouts - before.fanouts; fo > 0 {
		m.Fanouts = fo / n
		m.FanoutWidth = (after.width - before.width) / fo
	}
	m.Fetched = (after.fetched - before.fetched) / n
	return m, nil
}

type opMetrics struct{ fanouts, width, fetched float64 }

// gatherOps sums the gateway's rankgate_fanout_width histogram (count and
// sum) and rankgate_read_entries_fetched_total over every operation.
func gatherOps(g prometheus.Gatherer) (opMetrics, error) {
	mfs, err := g.Gather()
	if err != nil {
		return opMetrics{}, err
	}
	var m opMetrics
	for _, mf := range mfs {
		switch mf.GetName() {
		case "rankgate_fanout_width":
			for _, x := range mf.GetMetric() {
				m.fanouts += float64(x.GetHistogram().GetSampleCount())
				m.width += x.GetHistogram().GetSampleSum()
			}
		case "rankgate_read_entries_fetched_total":
			for _, x := range mf.GetMetric() {
				m.fetched += x.GetCounter().GetValue()
			}
		}
	}
	return m, nil
}

// notCalls are INFO commandstats entries that are not the calibration's
// work: the client's slot-map reloads and pings, these INFO calls, and what
// a gateway's cluster monitor polls.
var notCalls = map[string]bool{"info": true, "cluster": true, "ping": true, "config": true, "client": true, "hello": true,
	"command": true, "memory": true, "scan": true, "slowlog": true, "latency": true, "dbsize": true, "readonly": true,
	"role": true, "select": true, "auth": true, "object": true, "script": true, "function": true, "acl": true, "time": true}

// cmdStats is INFO commandstats summed over the masters: calls and usec
// per command name (lower case, without subcommand).
type cmdStats map[string]cmdStat

type cmdStat struct{ calls, usec int64 }

// scriptCommands run scripts; scriptInner are the commands the scripts of
// internal/store/scripts call (their calls and usec are counted again in
// their own commandstats lines, and their time is inside the script's).
var (
	scriptCommands = map[string]bool{"evalsha": true, "evalsha_ro": true, "eval": true, "eval_ro": true, "fcall": true, "fcall_ro": true}
	scriptInner    = map[string]bool{"exists": true, "hexists": true, "hget": true, "hincrby": true, "hset": true, "hsetnx": true,
		"pexpire": true, "rename": true, "set": true, "unlink": true, "zadd": true, "zcard": true, "zcount": true, "zrangestore": true,
		"zrem": true, "zrevrange": true, "zrevrank": true, "zscore": true}
)

// delta returns the server commands (every call, inner ones included) and
// the µs of execution of the top-level commands between two snapshots;
// topLevel gives how many of an inner command were also sent by clients (ZCOUNT,
// ZCARD, ZREVRANGE), whose µs are estimated at the command's mean.
func (after cmdStats) delta(before cmdStats, topLevel map[string]int) (calls, usec float64) {
	for name, a := range after {
		b := before[name]
		dc, du := float64(a.calls-b.calls), float64(a.usec-b.usec)
		calls += dc
		switch {
		case scriptCommands[name] || !scriptInner[name]:
			usec += du
		case dc > 0:
			usec += du / dc * float64(min(topLevel[name], int(dc)))
		}
	}
	return calls, usec
}

// serverCommands reads INFO commandstats on every master. Other clients of
// the cluster add to it: calibrate on a quiet one.
func serverCommands(ctx context.Context, c redis.UniversalClient) (cmdStats, error) {
	total := cmdStats{}
	var mu sync.Mutex
	err := store.ForEachMaster(ctx, c, func(ctx context.Context, n *redis.Client) error {
		info, err := n.InfoMap(ctx, "commandstats").Result()
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		for name, v := range commandTotals(info["Commandstats"]) {
			t := total[name]
			t.calls += v.calls
			t.usec += v.usec
			total[name] = t
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("calibrate: info commandstats: %w", err)
	}
	return total, nil
}

// commandTotals sums the Commandstats section of InfoMap
// (monitor.ParseCommandStats) per command, subcommands under their command,
// leaving out notCalls.
func commandTotals(section map[string]string) cmdStats {
	out := cmdStats{}
	for name, v := range monitor.ParseCommandStats(section) {
		base, _, _ := strings.Cut(name, "|")
		if notCalls[base] {
			continue
		}
		st := out[base]
		st.calls += v.Calls
		st.usec += v.Usec
		out[base] = st
	}
	return out
}

// memoryUsage is MEMORY USAGE key SAMPLES 0: every element counted, not
// the default estimate from 5 samples.
func memoryUsage(ctx context.Context, c redis.UniversalClient, key string) (int64, error) {
	n, err := c.MemoryUsage(ctx, key, 0).Result()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, fmt.Errorf("calibrate: memory usage %s: %w", key, err)
	}
	return n, nil
}

// serverFacts returns the Redis version, zset-max-listpack-entries and
// hash-max-listpack-entries (the smallest over the masters).
func serverFacts(ctx context.Context, c redis.UniversalClient) (string, int, int, error) {
	var version string
	lp, hlp := 0, 0
	var mu sync.Mutex
	err := store.ForEachMaster(ctx, c, func(ctx context.Context, n *redis.Client) error {
		info, err := n.Info(ctx, "server").Result()
		if err != nil {
			return err
		}
		cfg, err := n.ConfigGet(ctx, "*-max-listpack-entries").Result()
		if err != nil {
			return err
		}
		mu.Lock()
		defer mu.Unlock()
		for line := range strings.SplitSeq(info, "\n") {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "redis_version:"); ok && version == "" {
				version = v
			}
		}
		if v, err := strconv.Atoi(cfg["zset-max-listpack-entries"]); err == nil && (lp == 0 || v < lp) {
			lp = v
		}
		if v, err := strconv.Atoi(cfg["hash-max-listpack-entries"]); err == nil && (hlp == 0 || v < hlp) {
			hlp = v
		}
		return nil
	})
	if err != nil {
		return "", 0, 0, fmt.Errorf("calibrate: server facts: %w", err)
	}
	if lp == 0 {
		lp = 128
	}
	if hlp == 0 {
		hlp = 512
	}
	return version, lp, hlp, nil
}

// warnOnly passes on warnings and errors only.
type warnOnly struct{ slog.Handler }

func (w warnOnly) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= slog.LevelWarn && w.Handler.Enabled(ctx, l)
}
func (w warnOnly) WithAttrs(a []slog.Attr) slog.Handler { return warnOnly{w.Handler.WithAttrs(a)} }
func (w warnOnly) WithGroup(g string) slog.Handler      { return warnOnly{w.Handler.WithGroup(g)} }

// cleanup UNLINKs every tracked key, then sweeps each master for keys left
// under the prefix (SCAN MATCH prefix:*). It returns how many keys went.
func cleanup(ctx context.Context, c redis.UniversalClient, prefix string, keys []string) (int, error) {
	var removed int64
	var errs []error
	pipe := c.Pipeline()
	cmds := make([]*redis.IntCmd, 0, len(keys))
	for _, k := range keys {
		cmds = append(cmds, pipe.Unlink(ctx, k))
	}
	if len(cmds) > 0 {
		_, _ = pipe.Exec(ctx)
		for _, cmd := range cmds {
			if cmd.Err() != nil {
				errs = append(errs, cmd.Err())
				continue
			}
			removed += cmd.Val()
		}
	}
	var mu sync.Mutex
	err := store.ForEachMaster(ctx, c, func(ctx context.Context, n *redis.Client) error {
		var cursor uint64
		for {
			ks, next, err := n.Scan(ctx, cursor, prefix+":*", 1000).Result()
			if err != nil {
				return err
			}
			for _, k := range ks {
				v, err := n.Unlink(ctx, k).Result()
				if err != nil {
					return err
				}
				mu.Lock()
				removed += v
				mu.Unlock()
			}
			if cursor = next; cursor == 0 {
				return nil
			}
		}
	})
	if err != nil {
		errs = append(errs, err)
	}
	return int(removed), errors.Join(errs...)
}

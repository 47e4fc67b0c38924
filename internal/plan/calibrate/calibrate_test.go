package calibrate

import (
	"context"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/internal/config"
	"github.com/rankgate/rankgate/internal/plan"
	"github.com/rankgate/rankgate/internal/store"
	"github.com/rankgate/rankgate/internal/testcluster"
	"github.com/rankgate/rankgate/internal/workload"
)

// calibrationEnv is a masters' client on the test cluster and a config
// whose `learning` family is tie first over 4 national shards.
func calibrationEnv(t *testing.T) (redis.UniversalClient, *config.Config) {
	t.Helper()
	addrs := testcluster.Addrs(t)
	c, err := store.NewClient(store.ClientOptions{Addrs: addrs, DialTimeout: 2 * time.Second, ReadTimeout: 5 * time.Second, WriteTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	cfg := config.Default()
	cfg.Redis.Addrs = addrs
	f := &config.Family{Name: "learning", Source: config.SourceEvents, Aggregate: config.AggregateSum, Order: config.OrderDesc,
		Period: config.PeriodWeek, Location: time.UTC, Tie: config.TieFirst, Rank: config.RankCompetition, CacheTTL: time.Second,
		Retention: 1080 * time.Hour, Dimensions: map[string]config.Dimension{
			workload.BoardNational: {Shards: 4}, workload.BoardProvince: {Shards: 1}, workload.BoardClass: {Shards: 1}}}
	f.MaxPoints, f.SeqCapacity, f.RulesVersion, f.WeekStart = config.DefaultTieFirstMaxPoints, config.DefaultSeqCapacity, "t", time.Monday
	f.Grace, f.Live.Interval = 5*time.Minute, time.Second
	f.DimensionTypes = []string{workload.BoardClass, workload.BoardProvince}
	cfg.Families["learning"] = f
	cfg.FamilyNames = []string{"learning"}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("config: %v", err)
	}
	return c, cfg
}

// keysUnder counts the keys under prefix on every master.
func keysUnder(t *testing.T, c redis.UniversalClient, prefix string) int {
	t.Helper()
	var n atomic.Int64 // store.ForEachMaster runs the masters in parallel
	err := store.ForEachMaster(context.Background(), c, func(ctx context.Context, m *redis.Client) error {
		keys, err := m.Keys(ctx, prefix+":*").Result()
		n.Add(int64(len(keys)))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return int(n.Load())
}

func TestCalibrateOnTheCluster(t *testing.T) {
	c, cfg := calibrationEnv(t)
	sc := plan.DefaultScenario()
	sc.Ops = append(sc.Ops, workload.OpSpec{Op: workload.OpLookup, Weight: 1, Users: 5, Name: "lookup5"})
	workload.FillDefaults(sc.Ops)
	prefix := testcluster.Prefix(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// A fixed seed: the exact command counts below hold for this data (with
	// other points a Top-N may legitimately need its second round).
	cal, err := Run(ctx, Options{Config: cfg, Client: c, Scenario: &sc, Calls: 20, Prefix: prefix, Seed: 1})
	if err != nil {
		t.Fatalf("calibrate: %v", err)
	}
	if n := keysUnder(t, c, prefix); n != 0 {
		t.Errorf("%d keys left under %s", n, prefix)
	}
	if cal.ListpackMaxEntries < 1 || cal.RedisServer == "" {
		t.Errorf("server facts: %+v", cal)
	}
	if len(cal.Memory) != 4 {
		t.Fatalf("%d memory samples, want 4", len(cal.Memory))
	}
	for _, m := range cal.Memory {
		t.Logf("%s %d %s: zset %.1f B/member (bare %.1f), :m %.1f, :ev %.1f/member + %.1f/event, meta %d",
			m.Tie, m.Members, m.Encoding, m.Zset, m.Bare, m.Version, m.DedupeMember, m.DedupeEntry, m.MetaBytes)
		big := m.Members > cal.ListpackMaxEntries
		if wantEnc := map[bool]string{true: "skiplist", false: "listpack"}[big]; m.Encoding != wantEnc {
			t.Errorf("%s %d members: encoding %s, want %s", m.Tie, m.Members, m.Encoding, wantEnc)
		}
		if big && (m.Zset < 40 || m.Zset > 200) {
			t.Errorf("%s skiplist: %.1f B/member, want 40..200", m.Tie, m.Zset)
		}
		if !big && (m.Zset <= 0 || m.Zset > 40) {
			t.Errorf("%s listpack: %.1f B/member, want 0..40", m.Tie, m.Zset)
		}
		if m.Bare <= 0 || m.Version <= 0 || m.DedupeMember < 0 || m.MetaBytes <= 0 {
			t.Errorf("%s %d: non-positive sizes %+v", m.Tie, m.Members, m)
		}
		if m.DedupeEntry < 30 || m.DedupeEntry > 300 {
			t.Errorf("%s %d: %.1f B per dedupe entry, want 30..300", m.Tie, m.Members, m.DedupeEntry)
		}
		// Tie member stores plain points: the zset is a bare sorted set.
		if m.Tie == config.TieMember && big && (m.RatioZsetBare < 0.95 || m.RatioZsetBare > 1.05) {
			t.Errorf("tie member zset / bare = %.3f, want ≈ 1", m.RatioZsetBare)
		}
	}
	want := map[string]struct {
		lo, hi float64 // shard commands per call at 1 and at 4 shards
	}{
		"top:100":   {1, 4},
		"top:10":    {1, 4},
		"member":    {4, 13}, // ZMSCORE on the home shard + per shard ZCARD, ZCOUNT and its points group (ZRANGE)
		"lookup:5":  {2, 0},  // at 4 shards: up to 4 ZMSCORE + 4 position scripts (5 probes > readplan.NativeProbes)
		"around:5":  {0, 0},
		"page:50:5": {1, 0},
	}
	for key, w := range want {
		o, ok := cal.Ops[key]
		if !ok {
			t.Errorf("%s not calibrated", key)
			continue
		}
		at := map[int]float64{}
		for _, m := range o.Measured {
			at[m.Shards] = m.ShardCommands
			if m.ServerCommands < m.ShardCommands {
				t.Errorf("%s at %d shards: %.1f server commands < %.1f sent", key, m.Shards, m.ServerCommands, m.ShardCommands)
			}
		}
		if w.lo > 0 && at[1] != w.lo {
			t.Errorf("%s at 1 shard: %.2f commands, want %g", key, at[1], w.lo)
		}
		if w.hi > 0 && at[4] != w.hi {
			t.Errorf("%s at 4 shards: %.2f commands, want %g", key, at[4], w.hi)
		}
		if at[4] <= at[1] || o.PerShard <= 0 || o.Amplification() < 1 || o.Usec <= 0 {
			t.Errorf("%s: %+v", key, o)
		}
	}
	for _, key := range []string{"event", "batch:100"} {
		o := cal.Ops[key]
		// One apply script per board per event; tie first takes one INCRBY per call.
		if o.PerBoard != 1 || o.Period != 1 || o.Amplification() < 2 {
			t.Errorf("%s: %+v", key, o)
		}
	}
	if cal.OpsShards != [2]int{1, 4} {
		t.Errorf("ops shards %v", cal.OpsShards)
	}

	// The calibration feeds the model with the live slot map.
	st, err := store.New(c, nil, store.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ranges, err := st.Slots(ctx)
	if err != nil {
		t.Fatal(err)
	}
	pl := plan.Placement{Source: "live"}
	for _, r := range ranges {
		pl.Ranges = append(pl.Ranges, plan.SlotRange{Start: r.Start, End: r.End, Master: r.Master})
	}
	p, err := plan.Project(plan.Input{Scenario: sc, Family: cfg.Families["learning"], PeriodID: "2026-W34", Calibration: cal, Placement: pl})
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Masters) != 3 || p.Totals.Bytes <= 0 || p.Totals.Masters.Commands <= 0 || p.HotSlots[0].Commands <= 0 {
		t.Errorf("plan: %d masters, %.0f bytes, %.0f commands/s", len(p.Masters), p.Totals.Bytes, p.Totals.Masters.Commands)
	}
}

// A calibration that fails half-way (a lookup above the config's
// max_lookup, after the memory boards are written) still removes its keys.
func TestCalibrateCleansUpOnError(t *testing.T) {
	c, cfg := calibrationEnv(t)
	cfg.Limits.MaxLookup = 10
	sc := plan.DefaultScenario() // lookups of 20 users
	prefix := testcluster.Prefix(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	_, err := Run(ctx, Options{Config: cfg, Client: c, Scenario: &sc, Sample: 500, Calls: 5, Prefix: prefix})
	if err == nil || !strings.Contains(err.Error(), "lookup") {
		t.Fatalf("calibrate: %v, want the lookup refused", err)
	}
	if n := keysUnder(t, c, prefix); n != 0 {
		t.Errorf("%d keys left under %s after a failed calibration", n, prefix)
	}
}

func TestCalibrateRefusesASampleWithinTheListpackLimit(t *testing.T) {
	c, cfg := calibrationEnv(t)
	sc := plan.DefaultScenario()
	prefix := testcluster.Prefix(t)
	_, err := Run(context.Background(), Options{Config: cfg, Client: c, Scenario: &sc, Sample: 50, Prefix: prefix})
	if err == nil || !strings.Contains(err.Error(), "listpack") {
		t.Errorf("calibrate with -sample 50: %v", err)
	}
	if n := keysUnder(t, c, prefix); n != 0 {
		t.Errorf("%d keys left", n)
	}
}

func TestCommandTotals(t *testing.T) {
	info := map[string]string{ // the Commandstats section of InfoMap
		"cmdstat_evalsha": "calls=10,usec=500,usec_per_call=50.00,rejected_calls=0,failed_calls=0",
		"cmdstat_zscore":  "calls=30,usec=60,usec_per_call=2.00", "cmdstat_zcount": "calls=20,usec=40,usec_per_call=2.00",
		"cmdstat_info": "calls=99,usec=9999", "cmdstat_cluster|slots": "calls=5,usec=50", "cmdstat_zmscore": "calls=4,usec=8",
	}
	after := commandTotals(info)
	if _, ok := after["info"]; ok {
		t.Error("INFO must be left out")
	}
	if _, ok := after["cluster"]; ok {
		t.Error("CLUSTER must be left out")
	}
	calls, usec := after.delta(cmdStats{}, map[string]int{"zcount": 5})
	// Every call counts; µs: the scripts' 500, ZMSCORE's 8 (no script runs
	// it), 5 top-level ZCOUNTs at 2 µs; the scripts' inner ZSCOREs are
	// inside the 500 already.
	if calls != 64 || usec != 500+8+10 {
		t.Errorf("delta: %g calls, %g µs", calls, usec)
	}
}

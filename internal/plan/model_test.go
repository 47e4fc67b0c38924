package plan

import (
	"bytes"
	"encoding/json"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/rankgate/rankgate/internal/config"
	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/workload"
)

// testCal is a hand-made calibration: round numbers, so expectations are
// exact.
func testCal() Calibration {
	// Listpack samples (100 members) cost less per member and per event
	// than skiplist / hashtable ones (5000).
	mem := func(tie string, members int, enc string, zset float64) MemorySample {
		if members <= 128 {
			return MemorySample{Tie: tie, Members: members, Encoding: enc, Zset: zset, Bare: 10, Version: 10,
				DedupeMember: 11, DedupeEntry: 51, MetaBytes: 168}
		}
		return MemorySample{Tie: tie, Members: members, Encoding: enc, Zset: zset, Bare: 100, Version: 50,
			DedupeMember: 60, DedupeEntry: 90, MetaBytes: 168}
	}
	ops := map[string]OpCost{}
	for _, o := range OpsToCalibrate(&Scenario{}) {
		ops[OpKey(o)] = OpCost{Kind: o.Op, PerShard: 1}
	}
	ops["event"] = OpCost{Kind: workload.OpEvent, PerBoard: 1, Period: 1, Server: 8, Usec: 10}
	ops["batch:100"] = OpCost{Kind: workload.OpBatch, PerBoard: 1, Period: 1, Server: 8, Usec: 10}
	ops["member"] = OpCost{Kind: workload.OpMember, Home: 1, PerShard: 1, Server: 6, Usec: 20}
	return Calibration{ListpackMaxEntries: 128, HashListpackMaxEntries: 512, OpsShards: [2]int{1, 16}, Memory: []MemorySample{
		mem(config.TieMember, 100, "listpack", 10), mem(config.TieFirst, 100, "listpack", 20),
		mem(config.TieMember, 5000, "skiplist", 100), mem(config.TieFirst, 5000, "skiplist", 100),
	}, Ops: ops}
}

func testFamily(tie string, dims map[string]int) *config.Family {
	f := &config.Family{Name: "learning", Source: config.SourceEvents, Aggregate: config.AggregateSum, Order: config.OrderDesc,
		Period: config.PeriodWeek, Location: time.UTC, Tie: tie, Rank: config.RankCompetition, CacheTTL: time.Second,
		Retention: 1080 * time.Hour, Dimensions: map[string]config.Dimension{}}
	for t, n := range dims {
		f.Dimensions[t] = config.Dimension{Shards: n}
	}
	return f
}

// scenario is a small world: members on national only, one op.
func scenario(members int, ops ...workload.OpSpec) Scenario {
	sc := DefaultScenario()
	sc.Members, sc.Provinces, sc.Classes, sc.MemberSkew, sc.BoardSkew = members, 0, 0, 0, 0
	sc.Rate, sc.Ops = 100, ops
	sc.fillDefaults()
	return sc
}

func project(t *testing.T, in Input) *Plan {
	t.Helper()
	if in.Calibration.Ops == nil {
		in.Calibration = testCal()
	}
	if len(in.Placement.Ranges) == 0 {
		in.Placement = EvenPlacement(3)
	}
	if in.PeriodID == "" {
		in.PeriodID = "2026-W34"
	}
	p, err := Project(in)
	if err != nil {
		t.Fatalf("project: %v", err)
	}
	return p
}

func TestProjectMemory(t *testing.T) {
	top := workload.OpSpec{Op: workload.OpTop, Weight: 1, Board: workload.BoardNational}
	for _, tc := range []struct {
		title   string
		members int
		shards  int
		source  string
		ledger  bool
		periods int
		epm     float64
		want    float64
	}{
		// periods × (members × (zset + :ev counter) + :meta + members × events × entry)
		{"redis-only skiplist", 1000, 1, config.SourceEvents, false, 2, 10, 2 * (1000*(100+60) + 168 + 1000*10*90)},
		// ledger: the version hash, no dedupe.
		{"ledger", 1000, 1, config.SourceEvents, true, 2, 10, 2 * (1000*(100+50) + 168)},
		{"projection family", 1000, 1, config.SourceProjection, false, 3, 10, 3 * (1000*(100+50) + 168)},
		// About 100 members per shard and no events: every key a listpack.
		{"listpack shards", 400, 4, config.SourceEvents, false, 1, 0, 400*(10+11) + 4*168},
		// 300 members: a skiplist zset, a listpack :m (≤ 512 fields), a
		// hashtable :ev (300 × (1 + 10) fields).
		{"ledger mid-size", 300, 1, config.SourceEvents, true, 1, 10, 300*(100+10) + 168},
		{"redis-only mid-size", 300, 1, config.SourceEvents, false, 1, 10, 300*(100+60+10*90) + 168},
		{"no events", 1000, 1, config.SourceEvents, false, 1, 0, 1000*(100+60) + 168},
	} {
		t.Run(tc.title, func(t *testing.T) {
			sc := scenario(tc.members, top)
			sc.SeasonPeriods, sc.EventsPerMemberPerPeriod = tc.periods, tc.epm
			if tc.shards == 4 {
				// 400 members hashed over 4 shards are not exactly 100 each;
				// every shard stays within the listpack limit.
				sc.Members = 400
			}
			f := testFamily(config.TieMember, map[string]int{workload.BoardNational: tc.shards})
			f.Source = tc.source
			p := project(t, Input{Scenario: sc, Family: f, Ledger: tc.ledger})
			if !near(p.Totals.Bytes, tc.want, 1e-6) {
				t.Errorf("bytes %.0f, want %.0f", p.Totals.Bytes, tc.want)
			}
			var sum float64
			for _, m := range p.Masters {
				sum += m.Bytes
			}
			if !near(sum, tc.want, 1e-6) {
				t.Errorf("masters hold %.0f bytes, want %.0f", sum, tc.want)
			}
			if tc.ledger && p.Mode != "ledger" || !tc.ledger && p.Mode != "redis-only" {
				t.Errorf("mode %s", p.Mode)
			}
		})
	}
}

func TestProjectWritesGoHomeAndToThePeriodSlot(t *testing.T) {
	sc := scenario(1000, workload.OpSpec{Op: workload.OpEvent, Weight: 1})
	sc.Gateways = 2
	f := testFamily(config.TieFirst, map[string]int{workload.BoardNational: 4})
	p := project(t, Input{Scenario: sc, Family: f})
	// 100 events/s: 1 script each on national, 1 INCRBY per call, and each
	// gateway's period-state read once a second.
	if want := 100.0 + 100 + 2; !near(p.Totals.Masters.Commands, want, 1e-9) {
		t.Errorf("commands %g, want %g", p.Totals.Masters.Commands, want)
	}
	if want := 100.0*8 + 100 + 2; !near(p.Totals.Masters.ServerCommands, want, 1e-9) {
		t.Errorf("server commands %g, want %g", p.Totals.Masters.ServerCommands, want)
	}
	if want := 100 * 10 / 1e6; !near(p.Totals.Masters.Exec, want, 1e-12) {
		t.Errorf("exec %g, want %g", p.Totals.Masters.Exec, want)
	}
	if p.Totals.Events != 100 || p.Totals.Reads != 0 {
		t.Errorf("events %g reads %g", p.Totals.Events, p.Totals.Reads)
	}
	periodSlot := shard.Slot("{learning:2026-W34}")
	var found bool
	for _, s := range p.HotSlots {
		if s.Slot == periodSlot {
			found = true
			if !near(s.Commands, 102, 1e-9) {
				t.Errorf("period slot %d: %g commands/s, want 102", s.Slot, s.Commands)
			}
		}
	}
	if !found {
		t.Errorf("the period slot %d is not among the hottest: %+v", periodSlot, p.HotSlots)
	}
	b := p.Boards[0]
	if !near(b.WriteOps, 100, 1e-9) || b.ReadOps != 0 || b.FanoutFloor != 0 {
		t.Errorf("national: %+v", b)
	}
}

func TestProjectReadsByConsistency(t *testing.T) {
	const s = 4
	for _, tc := range []struct {
		title        string
		op           workload.OpSpec
		ttl          time.Duration
		replicaReads bool
		gateways     int
		master, rep  float64
		served       string
	}{
		// 100 calls/s of top on one key, cache TTL 1 s in 2 gateways:
		// c / (1 + c·TTL/g) calls reach Redis, each costs 1 command per shard.
		{"cached top", workload.OpSpec{Op: workload.OpTop, Weight: 1, Board: workload.BoardNational}, time.Second, false, 2, 4 * 100 / (1 + 100.0/2), 0, "cached"},
		{"cache off", workload.OpSpec{Op: workload.OpTop, Weight: 1, Board: workload.BoardNational}, 0, false, 1, 400, 0, "primary"},
		{"primary top", workload.OpSpec{Op: workload.OpTop, Weight: 1, Board: workload.BoardNational, Consistency: "primary"}, time.Second, false, 1, 400, 0, "primary"},
		{"replica top", workload.OpSpec{Op: workload.OpTop, Weight: 1, Board: workload.BoardNational, Consistency: "replica"}, time.Second, true, 1, 0, 400, "replica"},
		{"replica without replica reads", workload.OpSpec{Op: workload.OpTop, Weight: 1, Board: workload.BoardNational, Consistency: "replica"}, time.Second, false, 1, 400, 0, "primary"},
		// Member reads: Home (1) on the member's shard + PerShard (1) on each.
		{"member", workload.OpSpec{Op: workload.OpMember, Weight: 1, Board: workload.BoardNational}, time.Second, false, 1, 100 * (1 + s), 0, "primary"},
		{"member asked cached is counted as primary", workload.OpSpec{Op: workload.OpMember, Weight: 1, Board: workload.BoardNational, Consistency: "cached"}, time.Second, false, 1, 500, 0, "primary"},
		// Pages: the first of each walk of 5 is cached, the rest are not.
		{"cached pages", workload.OpSpec{Op: workload.OpPage, Weight: 1, Board: workload.BoardNational}, time.Second, false, 1, 4 * (CacheLoads(20, time.Second, 1) + 80), 0, "cached"},
	} {
		t.Run(tc.title, func(t *testing.T) {
			sc := scenario(1000, tc.op)
			sc.Gateways = tc.gateways
			f := testFamily(config.TieMember, map[string]int{workload.BoardNational: s})
			f.CacheTTL = tc.ttl
			p := project(t, Input{Scenario: sc, Family: f, ReplicaReads: tc.replicaReads})
			if !near(p.Totals.Masters.Commands, tc.master, 1e-9) || !near(p.Totals.Replicas.Commands, tc.rep, 1e-9) {
				t.Errorf("masters %g, replicas %g; want %g, %g", p.Totals.Masters.Commands, p.Totals.Replicas.Commands, tc.master, tc.rep)
			}
			if p.Ops[0].Consistency != tc.served {
				t.Errorf("served %s, want %s", p.Ops[0].Consistency, tc.served)
			}
			if p.Totals.Reads != 100 {
				t.Errorf("reads %g", p.Totals.Reads)
			}
		})
	}
}

// Board skew puts the hottest read board's single shard at the top of the
// hot slots, and every board's load on the master of its slots.
func TestProjectHotSlotFollowsBoardSkew(t *testing.T) {
	sc := scenario(10000, workload.OpSpec{Op: workload.OpTop, Weight: 1, Board: workload.BoardProvince, Consistency: "primary"})
	sc.Provinces, sc.BoardSkew = 10, 1.5
	f := testFamily(config.TieMember, map[string]int{workload.BoardNational: 1, workload.BoardProvince: 1})
	p := project(t, Input{Scenario: sc, Family: f})
	wantSlot := shard.Slot("{learning:province:p0:00}")
	z, err := workload.NewZipfTable(10, 1.5)
	if err != nil {
		t.Fatal(err)
	}
	if h := p.HotSlots[0]; h.Slot != wantSlot || !near(h.Commands, 100*z.P(0), 1e-9) {
		t.Errorf("hottest slot %+v, want slot %d with %.1f commands/s", h, wantSlot, 100*z.P(0))
	}
	pl := EvenPlacement(3)
	for _, m := range p.Masters {
		var want float64
		for _, s := range p.HotSlots {
			if pl.Master(s.Slot) == m.Master {
				want += s.Commands
			}
		}
		if m.Commands+1e-9 < want {
			t.Errorf("master %s: %g commands/s, less than its hot slots' %g", m.Master, m.Commands, want)
		}
	}
}

func TestPlacement(t *testing.T) {
	p := EvenPlacement(3)
	if len(p.Ranges) != 3 || p.Ranges[0].Start != 0 || p.Ranges[2].End != shard.SlotCount-1 {
		t.Fatalf("ranges %+v", p.Ranges)
	}
	for i := 1; i < 3; i++ {
		if p.Ranges[i].Start != p.Ranges[i-1].End+1 {
			t.Errorf("gap before range %d: %+v", i, p.Ranges)
		}
	}
	if p.Master(0) != "master-1" || p.Master(16383) != "master-3" || p.Master(p.Ranges[1].Start) != "master-2" {
		t.Error("master lookup")
	}
	if (Placement{Ranges: []SlotRange{{Start: 0, End: 10, Master: "a"}}}).Master(11) != "uncovered" {
		t.Error("an uncovered slot")
	}
	names, slots := p.Masters()
	if len(names) != 3 || slots["master-1"]+slots["master-2"]+slots["master-3"] != shard.SlotCount {
		t.Errorf("masters %v %v", names, slots)
	}
}

func TestProjectWarnsOnPileUpAndBudgets(t *testing.T) {
	sc := scenario(100000, workload.OpSpec{Op: workload.OpTop, Weight: 1, Board: workload.BoardNational, Consistency: "primary"})
	sc.MaxMemoryPerMaster = 1 << 20
	sc.MaxOpsPerMaster = 100
	f := testFamily(config.TieMember, map[string]int{workload.BoardNational: 16})
	// One master holds nearly every slot.
	pl := Placement{Source: "test", Ranges: []SlotRange{{Start: 0, End: 16000, Master: "a"}, {Start: 16001, End: 16383, Master: "b"}}}
	p := project(t, Input{Scenario: sc, Family: f, Placement: pl})
	all := strings.Join(p.Warnings, "\n")
	for _, want := range []string{"board national:", "memory budget", "of max_ops_per_master", "the mean master's commands"} {
		if !strings.Contains(all, want) {
			t.Errorf("warnings lack %q:\n%s", want, all)
		}
	}
}

func TestProjectWarnsOnAnExpensiveSlot(t *testing.T) {
	// 50000 events/s × 10 µs on one shard: half a core, above the 25 % a
	// shard may take; 50000 INCRBY/s on the period key too.
	sc := scenario(1000, workload.OpSpec{Op: workload.OpEvent, Weight: 1})
	sc.Rate = 50000
	p := project(t, Input{Scenario: sc, Family: testFamily(config.TieFirst, map[string]int{workload.BoardNational: 1})})
	all := strings.Join(p.Warnings, "\n")
	for _, want := range []string{"executing its commands takes 50% of its master's thread", "the period key of learning takes 50001 commands/s"} {
		if !strings.Contains(all, want) {
			t.Errorf("warnings lack %q:\n%s", want, all)
		}
	}
}

func TestRecommend(t *testing.T) {
	for _, tc := range []struct {
		title                  string
		shards                 int
		members                int64
		writes, hot, fan, home float64
		maxMembers             int64
		maxOps                 float64
		wantShards             int
		wantAction             string
	}{
		{"within limits", 4, 400, 100, 0, 10, 0, 1000, 200, 1, "fewer"},
		{"one shard fits", 1, 400, 100, 0, 10, 0, 1000, 200, 1, "ok"},
		{"members over the limit", 1, 2500, 0, 0, 0, 0, 1000, 1e9, 3, "split"},
		// writes 1000/s: at S shards the busiest takes 1000/S + fan 50.
		{"writes over the limit", 2, 100, 1000, 0, 50, 0, 1e9, 300, 4, "split"},
		// A hot member's writes never split.
		{"hot member", 2, 100, 1000, 600, 0, 0, 1e9, 500, 2, "cache"},
		// Fan-out reads cost every shard the same whatever S.
		{"fan-out floor", 1, 100, 0, 0, 900, 0, 1e9, 500, 1, "cache"},
		{"fan-out floor and too many members", 1, 5000, 0, 0, 900, 0, 1000, 500, 5, "split+cache"},
		{"members beyond 1024 shards", 1, 1 << 40, 0, 0, 0, 0, 1000, 1e9, 1024, "split"},
	} {
		t.Run(tc.title, func(t *testing.T) {
			bp := BoardPlan{Board: "b", Shards: tc.shards, MaxShardMembers: tc.members / int64(tc.shards)}
			recommend(&bp, tc.members, tc.writes, tc.hot, tc.fan, tc.home, tc.maxMembers, tc.maxOps)
			if bp.Recommended != tc.wantShards || bp.Action != tc.wantAction || bp.Reason == "" {
				t.Errorf("got %d %s (%s), want %d %s", bp.Recommended, bp.Action, bp.Reason, tc.wantShards, tc.wantAction)
			}
		})
	}
}

func TestCacheLoads(t *testing.T) {
	for _, tc := range []struct {
		calls float64
		ttl   time.Duration
		g     int
		want  float64
	}{
		{0, time.Second, 1, 0},
		{10, 0, 1, 10},
		{1, time.Second, 1, 0.5},              // one call a second, 1 s TTL: every other call loads
		{1000, time.Second, 1, 1000.0 / 1001}, // ≈ one load per TTL
		{1000, time.Second, 4, 1000.0 / 251},  // ≈ one per TTL per gateway
	} {
		if got := CacheLoads(tc.calls, tc.ttl, tc.g); !near(got, tc.want, 1e-12) {
			t.Errorf("CacheLoads(%g, %s, %d) = %g, want %g", tc.calls, tc.ttl, tc.g, got, tc.want)
		}
	}
}

func TestDerivedPeriods(t *testing.T) {
	for _, tc := range []struct {
		period    string
		retention time.Duration
		want      int
	}{
		{config.PeriodWeek, 1080 * time.Hour, 8}, // 1 + ⌈45 d / 7 d⌉
		{config.PeriodDay, 48 * time.Hour, 3},
		{config.PeriodDay, 36 * time.Hour, 3},
		{config.PeriodMonth, 1080 * time.Hour, 3},
		{config.PeriodAll, 1080 * time.Hour, 1},
	} {
		f := &config.Family{Period: tc.period, Retention: tc.retention}
		if got, why := DerivedPeriods(f); got != tc.want || why == "" {
			t.Errorf("%s, retention %s: %d (%s), want %d", tc.period, tc.retention, got, why, tc.want)
		}
	}
}

func TestFits(t *testing.T) {
	// top: 1 command at 1 shard, 16 + 4 re-asks at 16: the intercept would
	// be negative, so all of it is per shard at 16.
	o := OpCost{Kind: workload.OpTop, Measured: []OpMeasure{{Shards: 16, Calls: 10, ShardCommands: 20, ServerCommands: 40}, {Shards: 1, Calls: 10, ShardCommands: 1, ServerCommands: 2}}}
	o.FitReads()
	if o.Home != 0 || !near(o.PerShard, 20.0/16, 1e-12) || !near(o.Server, 2, 1e-12) {
		t.Errorf("top fit %+v", o)
	}
	// member: 1 + S.
	o = OpCost{Kind: workload.OpMember, Measured: []OpMeasure{{Shards: 1, Calls: 5, ShardCommands: 2}, {Shards: 16, Calls: 5, ShardCommands: 17}}}
	o.FitReads()
	if !near(o.Home, 1, 1e-12) || !near(o.PerShard, 1, 1e-12) || o.Amplification() != 1 {
		t.Errorf("member fit %+v", o)
	}
	// event: 3 boards, 1 script each, 1 INCRBY; server 3 × 8 + 1.
	o = OpCost{Kind: workload.OpEvent, Measured: []OpMeasure{{Shards: 16, Calls: 100, Boards: 3, Events: 1, ShardCommands: 3, Period: 1, ServerCommands: 25, ServerUsec: 300}}}
	o.FitWrites()
	if !near(o.PerBoard, 1, 1e-12) || !near(o.Period, 1, 1e-12) || !near(o.Server, 8, 1e-12) || !near(o.Usec, 100, 1e-12) {
		t.Errorf("event fit %+v", o)
	}
	if l := o.load(10); !near(l.ServerCommands, 80, 1e-12) || !near(l.Exec, 10*100/1e6, 1e-15) {
		t.Errorf("load %+v", l)
	}
}

func TestMemorySampleDerive(t *testing.T) {
	m := MemorySample{Members: 1000, EventsPerMember: 3, ZsetBytes: 100000, BareBytes: 80000, VersionBytes: 50000,
		DedupeBytes1: 160000, DedupeBytes: 340000}
	m.Derive()
	// :ev grows by 90 per event: (340000 − 160000) / (1000 × 2); the rest of
	// the first round is the per-member counter: 160 − 90.
	if !near(m.DedupeEntry, 90, 1e-12) || !near(m.DedupeMember, 70, 1e-12) || !near(m.Zset, 100, 0) || !near(m.Version, 50, 0) {
		t.Errorf("derived %+v", m)
	}
	if !near(m.RatioVersion, 150.0/80, 1e-12) || !near(m.RatioDedupe, 170.0/80, 1e-12) || !near(m.RatioZsetBare, 1.25, 1e-12) {
		t.Errorf("ratios %+v", m)
	}
	c := testCal()
	for _, tc := range []struct {
		tie     string
		members int64
		events  float64
		want    ShardCost
	}{
		{config.TieMember, 128, 0, ShardCost{Zset: 10, Version: 10, DedupeMember: 11, DedupeEntry: 51, Meta: 168}},
		{config.TieMember, 129, 0, ShardCost{Zset: 100, Version: 10, DedupeMember: 11, DedupeEntry: 51, Meta: 168}},
		{config.TieMember, 129, 3, ShardCost{Zset: 100, Version: 10, DedupeMember: 60, DedupeEntry: 90, Meta: 168}},
		{config.TieFirst, 600, 0, ShardCost{Zset: 100, Version: 50, DedupeMember: 60, DedupeEntry: 90, Meta: 168}},
		{config.TieFirst, 1, 0, ShardCost{Zset: 20, Version: 10, DedupeMember: 11, DedupeEntry: 51, Meta: 168}},
		{"other", 1, 0, ShardCost{Zset: 10, Version: 10, DedupeMember: 11, DedupeEntry: 51, Meta: 168}},
	} {
		got, err := c.Cost(tc.tie, tc.members, tc.events)
		if err != nil || got != tc.want {
			t.Errorf("Cost(%s, %d, %g) = %+v, %v; want %+v", tc.tie, tc.members, tc.events, got, err, tc.want)
		}
	}
	if _, err := (&Calibration{}).Cost(config.TieMember, 1, 0); err == nil {
		t.Error("no samples must fail")
	}
}

func TestOpKeys(t *testing.T) {
	sc := DefaultScenario()
	ops := OpsToCalibrate(&sc)
	seen := map[string]bool{}
	for _, o := range ops {
		if seen[OpKey(o)] {
			t.Errorf("%s calibrated twice", OpKey(o))
		}
		seen[OpKey(o)] = true
	}
	for _, k := range []string{"event", "batch:100", "top:10", "top:100", "member", "around:5", "page:50:5", "lookup:20"} {
		if !seen[k] {
			t.Errorf("%s is not calibrated", k)
		}
	}
	sc.Ops = append(sc.Ops, workload.OpSpec{Op: workload.OpTop, Weight: 1, Limit: 37})
	if ops := OpsToCalibrate(&sc); OpKey(ops[len(ops)-1]) != "top:37" {
		t.Errorf("the scenario's own top:37 must be calibrated: %v", ops[len(ops)-1])
	}
}

func TestProjectErrors(t *testing.T) {
	f := testFamily(config.TieMember, map[string]int{workload.BoardNational: 1})
	sc := scenario(100, workload.OpSpec{Op: workload.OpTop, Weight: 1, Limit: 37, Board: workload.BoardNational})
	if _, err := Project(Input{Scenario: sc, Family: f, Calibration: testCal(), Placement: EvenPlacement(1)}); err == nil || !strings.Contains(err.Error(), "top:37") {
		t.Errorf("an uncalibrated op: %v", err)
	}
	sc = scenario(100, workload.OpSpec{Op: workload.OpTop, Weight: 1, Board: workload.BoardNational})
	sc.Classes = 3
	if _, err := Project(Input{Scenario: sc, Family: f, Calibration: testCal(), Placement: EvenPlacement(1)}); err == nil || !strings.Contains(err.Error(), "class") {
		t.Errorf("classes without a class dimension: %v", err)
	}
	if _, err := Project(Input{Scenario: sc, Family: f, Calibration: testCal()}); err == nil {
		t.Error("no slot map must fail")
	}
}

func TestWriteTableAndJSON(t *testing.T) {
	sc := DefaultScenario()
	sc.Members = 5000
	sc.MaxMemoryPerMaster = 8 << 30
	f := testFamily(config.TieFirst, map[string]int{workload.BoardNational: 16, workload.BoardProvince: 1, workload.BoardClass: 1})
	p := project(t, Input{Scenario: sc, Family: f})
	var buf bytes.Buffer
	if err := WriteTable(&buf, p); err != nil {
		t.Fatal(err)
	}
	out := buf.String()
	for _, want := range []string{"CALIBRATION", "COMMANDS PER CALL", "LOAD BY OPERATION", "MASTERS", "master-1", "HOTTEST SLOTS",
		"BIGGEST SLOTS", "BOARDS", "national", "more boards"} {
		if !strings.Contains(out, want) {
			t.Errorf("table lacks %q:\n%s", want, out)
		}
	}
	data, err := json.Marshal(p)
	if err != nil {
		t.Fatal(err)
	}
	var back Plan
	if err := json.Unmarshal(data, &back); err != nil {
		t.Fatal(err)
	}
	if len(back.Boards) != 59 || len(back.Masters) != 3 || !near(back.Totals.Bytes, p.Totals.Bytes, 1e-6) || back.Calibration.Ops["event"].PerBoard != 1 {
		t.Errorf("JSON round trip: %d boards, %d masters", len(back.Boards), len(back.Masters))
	}
	if math.IsNaN(p.Totals.Masters.Commands) || p.Totals.Masters.Commands <= 0 {
		t.Errorf("commands %g", p.Totals.Masters.Commands)
	}
}

// TestProjectColumnsMemory: a family with sort columns costs, per member,
// the cols hash entry (the calibrated :m cost) plus its prefix twice; the
// plan names the bytes of each column.
func TestProjectColumnsMemory(t *testing.T) {
	top := workload.OpSpec{Op: workload.OpTop, Weight: 1, Board: workload.BoardNational}
	sc := scenario(1000, top)
	sc.SeasonPeriods, sc.EventsPerMemberPerPeriod = 1, 0
	plain := project(t, Input{Scenario: sc, Family: testFamily(config.TieMember, map[string]int{workload.BoardNational: 1})})
	f := testFamily(config.TieMember, map[string]int{workload.BoardNational: 1})
	f.Columns = []config.Column{{Name: "time_ms", Order: config.OrderAsc, Max: 86400000}, {Name: "kills", Order: config.OrderDesc, Max: 999}}
	p := project(t, Input{Scenario: sc, Family: f})
	c := p.Columns
	if c == nil || c.Prefix != 10 || len(c.Columns) != 2 || c.Columns[0].Width != 7 || c.Columns[0].PerMember != 14 ||
		c.Columns[1].Width != 3 || c.Columns[1].PerMember != 6 || c.HashEntry != 50 || c.PerMember != 70 {
		t.Fatalf("columns cost %+v", c)
	}
	if want := plain.Totals.Bytes + 1000*70; !near(p.Totals.Bytes, want, 1e-6) {
		t.Fatalf("bytes %.0f, want %.0f (plain %.0f + 1000 × 70)", p.Totals.Bytes, want, plain.Totals.Bytes)
	}
	if plain.Columns != nil {
		t.Fatalf("a family without columns reports %+v", plain.Columns)
	}
	var out bytes.Buffer
	if err := WriteTable(&out, p); err != nil || !strings.Contains(out.String(), "SORT COLUMNS  +70.0 B per member") ||
		!strings.Contains(out.String(), "time_ms: 14 B (hex width 7, twice)") {
		t.Fatalf("table: %v\n%s", err, out.String())
	}
	// Tie first puts the seq in the member: its hex width joins the prefix.
	f.Tie, f.SeqCapacity = config.TieFirst, 1<<20
	if p := project(t, Input{Scenario: sc, Family: f}); p.Columns.Prefix != 15 {
		t.Fatalf("tie first prefix %d, want 10 + 5", p.Columns.Prefix)
	}
}

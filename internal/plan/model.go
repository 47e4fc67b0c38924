package plan

import (
	"errors"
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/rankgate/rankgate/internal/config"
	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/workload"
)

// Input is everything a projection needs: the scenario, the family's rules
// from the gateway config, the calibration and the slot → master map.
type Input struct {
	Scenario Scenario
	Family   *config.Family
	// Ledger: ledger mode (versions in :m, no per-event dedupe in Redis).
	Ledger bool
	// ReplicaReads: redis.replica_reads (consistency=replica reads replicas).
	ReplicaReads bool
	// PeriodID is the family's current period: its counter key takes the
	// achievement numbers of tie first.
	PeriodID    string
	Calibration Calibration
	Placement   Placement
}

// Plan is the projection: memory and commands per master, the hottest
// slots, and per board whether it needs more shards.
//
// Commands are counted three ways: commands (what the gateways send, one per
// EVALSHA, ZMSCORE… — the unit of budgets, hot slots and shard advice),
// server commands (commands inside scripts included, what INFO
// instantaneous_ops_per_sec and the dashboards show), and exec (the share of
// one core that executing them takes, from commandstats usec; network I/O
// comes on top).
type Plan struct {
	Scenario    Scenario    `json:"scenario"`
	Family      string      `json:"family"`
	Tie         string      `json:"tie"`
	Mode        string      `json:"mode"` // redis-only | ledger
	Periods     int         `json:"season_periods"`
	PeriodsFrom string      `json:"season_periods_from"`
	Placement   string      `json:"placement"`
	Totals      Totals      `json:"totals"`
	Ops         []OpLoad    `json:"ops"`
	Masters     []Master    `json:"masters"`
	HotSlots    []SlotLoad  `json:"hot_slots"` // by commands/s
	BigSlots    []SlotLoad  `json:"big_slots"` // by bytes
	Boards      []BoardPlan `json:"boards"`
	// Columns: what the family's sort columns add per member (nil without).
	Columns     *ColumnsCost `json:"columns,omitempty"`
	Warnings    []string     `json:"warnings"`
	Calibration Calibration  `json:"calibration"`
}

// Load is commands/s three ways, on masters or on replicas.
type Load struct {
	Commands       float64 `json:"commands_per_second"`
	ServerCommands float64 `json:"server_commands_per_second"`
	Exec           float64 `json:"exec_core_share"` // seconds of command execution per second
}

func (l *Load) add(x Load) {
	l.Commands += x.Commands
	l.ServerCommands += x.ServerCommands
	l.Exec += x.Exec
}

// Totals sum the plan.
type Totals struct {
	Requests float64 `json:"requests_per_second"`
	Events   float64 `json:"events_per_second"`
	Reads    float64 `json:"reads_per_second"`
	Masters  Load    `json:"masters"`
	Replicas Load    `json:"replicas"`
	Bytes    float64 `json:"bytes"` // every live period, on the masters (each replica holds a copy)
	Members  int64   `json:"board_memberships"`
	Dedupe   float64 `json:"dedupe_bytes"`
	Boards   int     `json:"boards"`
	Shards   int     `json:"shards"`
}

// OpLoad is what one operation of the mix costs.
type OpLoad struct {
	Name        string  `json:"name"`
	Key         string  `json:"key"`
	Consistency string  `json:"consistency"` // as served: cached | primary | replica
	Calls       float64 `json:"calls_per_second"`
	Loads       float64 `json:"redis_calls_per_second"` // calls that reach Redis (cache misses)
	Load
}

// Master is the load of one master.
type Master struct {
	Master      string  `json:"master"`
	Slots       int     `json:"slots"`
	Shards      int     `json:"shards"`
	Members     int64   `json:"members"`
	Bytes       float64 `json:"bytes"`
	MemoryShare float64 `json:"memory_share,omitempty"` // of max_memory_per_master
	Load
	OpsShare float64 `json:"ops_share"` // commands of max_ops_per_master
	Replicas Load    `json:"replicas"`  // replica reads, spread over its replicas
}

// SlotLoad is one hash slot.
type SlotLoad struct {
	Slot   int    `json:"slot"`
	Master string `json:"master"`
	Load
	Replicas Load     `json:"replicas"`
	Bytes    float64  `json:"bytes"`
	Tags     []string `json:"tags"` // hash tags in the slot
}

// BoardPlan is one board: its size, load and whether to split it.
type BoardPlan struct {
	Board           string  `json:"board"`
	Shards          int     `json:"shards"`
	Members         int64   `json:"members"`
	MaxShardMembers int64   `json:"max_shard_members"`
	Bytes           float64 `json:"bytes"` // every live period
	DedupeBytes     float64 `json:"dedupe_bytes"`
	Load                    // masters
	Replicas        Load    `json:"replicas"`
	WriteOps        float64 `json:"write_commands_per_second"`
	ReadOps         float64 `json:"read_commands_per_second"` // masters and replicas
	// MaxShardOps: commands/s of its busiest shard (masters and replicas).
	MaxShardOps float64 `json:"max_shard_commands_per_second"`
	// FanoutFloor is what every shard takes from fan-out reads whatever the
	// shard count: splitting never lowers it.
	FanoutFloor float64 `json:"fanout_floor_per_shard"`
	Masters     int     `json:"masters"` // distinct masters holding its shards
	Recommended int     `json:"recommended_shards"`
	Action      string  `json:"action"` // ok | split | fewer | cache | split+cache
	Reason      string  `json:"reason"`
}

// shardLoad accumulates one board shard.
type shardLoad struct {
	members       int64
	bytes, dedupe float64 // one period
	master, rep   Load
	write         float64 // commands/s of writes
	readFan       float64 // commands/s each fan-out read costs this shard
	rhome         float64 // commands/s of member reads homed here
	slot          int
	node, tag     string
}

// Project computes the plan in three phases, each over the shards the
// scenario's world places on the slot map: memory, commands, then slots and
// masters (which add up the first two per slot, master and board).
func Project(in Input) (*Plan, error) {
	pr, err := newProjection(in)
	if err != nil {
		return nil, err
	}
	if err := pr.memory(); err != nil {
		return nil, err
	}
	if err := pr.commands(); err != nil {
		return nil, err
	}
	pr.slotsAndMasters()
	return pr.p, nil
}

// projection is one run of Project: its input, the world, and the load of
// every shard (loads[board][shard]), which the phases fill in turn.
type projection struct {
	in              Input
	sc              *Scenario
	f               *config.Family
	cal             Calibration
	pl              Placement
	w               *World
	p               *Plan
	layout          shard.Layout
	loads           [][]shardLoad
	version, dedupe bool // per-member versions (:m), per-event dedupe entries

	// Filled by commands.
	period        Load      // commands on the period keys
	events, reads float64   // calls per second
	hot           []float64 // hottest member's write commands/s per board
}

// newProjection checks the input, builds the world and places every shard
// of every board on its slot and master.
func newProjection(in Input) (*projection, error) {
	f := in.Family
	if f == nil {
		return nil, errors.New("plan: no family")
	}
	if len(in.Placement.Ranges) == 0 {
		return nil, errors.New("plan: empty slot map")
	}
	pr := &projection{in: in, f: f, cal: in.Calibration, pl: in.Placement.sorted()}
	pr.sc = &pr.in.Scenario
	shards := map[string]int{}
	for t, d := range f.Dimensions {
		shards[t] = d.Shards
	}
	w, err := NewWorld(pr.sc, shards)
	if err != nil {
		return nil, err
	}
	pr.w = w
	sc := pr.sc
	p := &Plan{Scenario: *sc, Family: f.Name, Tie: f.Tie, Mode: "redis-only", Placement: pr.pl.Source, Calibration: pr.cal, Warnings: []string{}}
	if in.Ledger {
		p.Mode = "ledger"
	}
	p.Periods, p.PeriodsFrom = sc.SeasonPeriods, "scenario season_periods"
	if p.Periods == 0 {
		p.Periods, p.PeriodsFrom = DerivedPeriods(f)
	}
	pr.p = p
	pr.version = f.Projection() || in.Ledger
	pr.dedupe = !pr.version
	if f.Projection() && hasWrites(sc.Ops) {
		p.Warnings = append(p.Warnings, fmt.Sprintf("family %s takes projections: the scenario's events are modelled as one projection script per board", f.Name))
	}

	// Slots come from hash tags, which hold no prefix.
	pr.loads = make([][]shardLoad, len(w.Boards))
	for bi := range w.Boards {
		b := &w.Boards[bi]
		sb := shard.Board{Family: f.Name, Period: in.PeriodID, DimType: b.DimType, DimValue: b.Value}
		pr.loads[bi] = make([]shardLoad, b.Shards)
		for i := range pr.loads[bi] {
			l := &pr.loads[bi][i]
			l.tag = pr.layout.Tag(sb, i, b.Shards)
			l.slot = shard.Slot("{" + l.tag + "}")
			l.node = pr.pl.Master(l.slot)
			l.members = b.ShardMembers[i]
		}
	}
	return pr, nil
}

// memory is the first phase: members × bytes per member (zset, plus :m or
// the :ev member counter) + dedupe entries × bytes per entry + :meta, per
// period. Every member sends events_per_member_per_period events, each
// leaving one entry on each of its boards (member skew shapes the peak rate,
// not the period's totals).
func (pr *projection) memory() error {
	epm := pr.sc.EventsPerMemberPerPeriod
	cols, err := columnsCost(pr.f, pr.cal, int64(pr.sc.Members))
	if err != nil {
		return err
	}
	pr.p.Columns = cols
	for bi := range pr.w.Boards {
		for i := range pr.loads[bi] {
			l := &pr.loads[bi][i]
			if l.members == 0 {
				continue
			}
			ev := 0.0
			if pr.dedupe {
				ev = epm
			}
			c, err := pr.cal.Cost(pr.f.Tie, l.members, ev)
			if err != nil {
				return err
			}
			per := c.Zset
			if pr.version {
				per += c.Version
			}
			if cols != nil {
				per += cols.PerMember
			}
			l.bytes = float64(l.members)*per + c.Meta
			if pr.dedupe {
				l.bytes += float64(l.members) * c.DedupeMember
				l.dedupe = float64(l.members) * epm * c.DedupeEntry
				l.bytes += l.dedupe
			}
		}
	}
	return nil
}

// commands is the second phase: each operation's calls per second times
// its calibrated commands, spread over the shards it reaches.
func (pr *projection) commands() error {
	sc := pr.sc
	var totalW float64
	for _, o := range sc.Ops {
		totalW += o.Weight
	}
	pr.hot = make([]float64, len(pr.w.Boards))
	for _, o := range sc.Ops {
		if o.Weight == 0 {
			continue
		}
		key := OpKey(o)
		cost, ok := pr.cal.Ops[key]
		if !ok {
			return fmt.Errorf("plan: the calibration has no measurement of %s (op %s)", key, o.Name)
		}
		calls := sc.Rate * o.Weight / totalW
		ol := OpLoad{Name: o.Name, Key: key, Calls: calls}
		switch o.Op {
		case workload.OpEvent, workload.OpBatch:
			pr.writeCommands(o, cost, calls, &ol)
		default:
			pr.readCommands(o, cost, calls, &ol)
		}
		pr.p.Ops = append(pr.p.Ops, ol)
	}
	// Every gateway re-reads the period state once a second while events
	// flow (one HGETALL).
	if pr.events > 0 {
		g := float64(sc.Gateways)
		pr.period.add(Load{Commands: g, ServerCommands: g})
	}
	return nil
}

// writeCommands adds an event or batch operation: its scripts on every
// board shard its events reach, and its commands on the period keys.
func (pr *projection) writeCommands(o workload.OpSpec, cost OpCost, calls float64, ol *OpLoad) {
	load := cost.load // commands → Load
	n := 1.0
	if o.Op == workload.OpBatch {
		n = float64(o.Batch)
	}
	ev := calls * n
	pr.events += ev
	ol.Consistency, ol.Loads = "primary", calls
	for bi := range pr.w.Boards {
		b := &pr.w.Boards[bi]
		for i := range pr.loads[bi] {
			x := ev * b.EventShare[i] * cost.PerBoard
			l := &pr.loads[bi][i]
			l.write += x
			l.master.add(load(x))
			ol.add(load(x))
		}
		pr.hot[bi] += ev * b.HotMemberEventShare * cost.PerBoard
	}
	// Period commands are plain INCRBYs: one server command each.
	pc := Load{Commands: calls * cost.Period, ServerCommands: calls * cost.Period}
	pr.period.add(pc)
	ol.add(pc)
}

// readCommands adds a read operation: the loads that reach Redis (past the
// cache, at its consistency) on the shards of the boards it reads.
func (pr *projection) readCommands(o workload.OpSpec, cost OpCost, calls float64, ol *OpLoad) {
	load := cost.load // commands → Load
	f, sc := pr.f, pr.sc
	pr.reads += calls
	level := servedAt(o, f, pr.in.ReplicaReads)
	ol.Consistency = level
	member := o.Op == workload.OpMember || o.Op == workload.OpAround || o.Op == workload.OpLookup
	q := pr.w.ReadBoards(o.Board, member)
	for bi, qb := range q {
		if qb == 0 {
			continue
		}
		b := &pr.w.Boards[bi]
		c := calls * qb
		lc := c
		switch {
		case level == "cached" && o.Op == workload.OpPage:
			first := c / float64(o.Depth)
			lc = CacheLoads(first, f.CacheTTL, sc.Gateways) + (c - first)
		case level == "cached":
			lc = CacheLoads(c, f.CacheTTL, sc.Gateways)
		}
		ol.Loads += lc
		for i := range pr.loads[bi] {
			share := 1 / float64(b.Shards)
			if member {
				share = b.MemberReadShare[i]
			}
			x := lc * (cost.PerShard + cost.Home*share)
			l := &pr.loads[bi][i]
			if level == "replica" {
				l.rep.add(load(x))
			} else {
				l.master.add(load(x))
			}
			l.readFan += lc * cost.PerShard
			l.rhome += lc * cost.Home * share
			ol.add(load(x))
		}
	}
}

// slotsAndMasters is the third phase: the shards' memory and commands added
// up per slot, per master and per board, the boards' advice, the hottest and
// biggest slots, and the warnings.
func (pr *projection) slotsAndMasters() {
	sc, p := pr.sc, pr.p
	slots := map[int]*SlotLoad{}
	slotOf := func(s int) *SlotLoad {
		sl := slots[s]
		if sl == nil {
			sl = &SlotLoad{Slot: s, Master: pr.pl.Master(s)}
			slots[s] = sl
		}
		return sl
	}
	names, slotCount := pr.pl.Masters()
	masters := map[string]*Master{}
	for _, m := range names {
		masters[m] = &Master{Master: m, Slots: slotCount[m]}
	}
	masterOf := func(name string) *Master {
		m := masters[name]
		if m == nil {
			m = &Master{Master: name}
			masters[name] = m
		}
		return m
	}
	limitOps := sc.ShardOpsLimit()
	for bi := range pr.w.Boards {
		pr.board(bi, slotOf, masterOf, len(names), limitOps)
	}
	if pr.period.Commands > 0 {
		pk := pr.layout.Period(pr.f.Name, pr.in.PeriodID)
		sl := slotOf(shard.Slot(pk.Seq))
		sl.add(pr.period)
		sl.Tags = append(sl.Tags, pr.f.Name+":"+pr.in.PeriodID)
		masterOf(sl.Master).add(pr.period)
		p.Totals.Masters.add(pr.period)
	}
	p.Totals.Requests, p.Totals.Events, p.Totals.Reads = sc.Rate, pr.events, pr.reads

	for _, m := range masters {
		if sc.MaxMemoryPerMaster > 0 {
			m.MemoryShare = m.Bytes / float64(sc.MaxMemoryPerMaster)
		}
		m.OpsShare = m.Commands / sc.MaxOpsPerMaster
		p.Masters = append(p.Masters, *m)
	}
	sort.Slice(p.Masters, func(i, j int) bool { return p.Masters[i].Master < p.Masters[j].Master })
	pr.rankSlots(slots)
	p.warn(limitOps, pr.period.Commands, pr.f.Period == config.PeriodAll && pr.dedupe)
}

// board adds board bi's shards to their slots and masters, and the board's
// plan (with its advice and pile-up warning) to the plan.
func (pr *projection) board(bi int, slotOf func(int) *SlotLoad, masterOf func(string) *Master, masters int, limitOps float64) {
	p, b := pr.p, &pr.w.Boards[bi]
	periods := float64(p.Periods)
	bp := BoardPlan{Board: b.Dimension(), Shards: b.Shards, Members: b.Members}
	onMaster := map[string]int{}
	var fan, rhome float64
	for i := range pr.loads[bi] {
		l := &pr.loads[bi][i]
		sl := slotOf(l.slot)
		sl.add(l.master)
		sl.Replicas.add(l.rep)
		sl.Bytes += l.bytes * periods
		sl.Tags = append(sl.Tags, l.tag)
		m := masterOf(l.node)
		m.Shards++
		m.Members += l.members
		m.Bytes += l.bytes * periods
		m.add(l.master)
		m.Replicas.add(l.rep)
		onMaster[l.node]++
		bp.MaxShardMembers = max(bp.MaxShardMembers, l.members)
		bp.Bytes += l.bytes * periods
		bp.DedupeBytes += l.dedupe * periods
		bp.add(l.master)
		bp.Replicas.add(l.rep)
		bp.WriteOps += l.write
		bp.ReadOps += l.master.Commands + l.rep.Commands - l.write
		bp.MaxShardOps = max(bp.MaxShardOps, l.master.Commands+l.rep.Commands)
		fan = max(fan, l.readFan)
		rhome += l.rhome
	}
	bp.FanoutFloor = fan
	bp.Masters = len(onMaster)
	recommend(&bp, b.Members, bp.WriteOps, pr.hot[bi], fan, rhome, pr.sc.MaxMembersPerShard, limitOps)
	if warn := pileUp(bp.Board, onMaster, b.Shards, masters); warn != "" && bp.Commands+bp.Replicas.Commands > 0 {
		p.Warnings = append(p.Warnings, warn)
	}
	p.Boards = append(p.Boards, bp)
	p.Totals.Boards++
	p.Totals.Shards += b.Shards
	p.Totals.Members += b.Members
	p.Totals.Bytes += bp.Bytes
	p.Totals.Dedupe += bp.DedupeBytes
	p.Totals.Masters.add(bp.Load)
	p.Totals.Replicas.add(bp.Replicas)
}

// rankSlots keeps the five busiest and five biggest slots and warns when
// executing one slot's commands takes more of its master's thread than
// max_shard_ops_fraction.
func (pr *projection) rankSlots(slots map[int]*SlotLoad) {
	sc, p := pr.sc, pr.p
	all := make([]SlotLoad, 0, len(slots))
	for _, sl := range slots {
		all = append(all, *sl)
	}
	busy := func(s SlotLoad) float64 { return s.Commands + s.Replicas.Commands }
	sort.Slice(all, func(i, j int) bool {
		if busy(all[i]) != busy(all[j]) {
			return busy(all[i]) > busy(all[j])
		}
		return all[i].Slot < all[j].Slot
	})
	p.HotSlots = append([]SlotLoad(nil), all[:min(5, len(all))]...)
	sort.Slice(all, func(i, j int) bool {
		if all[i].Bytes != all[j].Bytes {
			return all[i].Bytes > all[j].Bytes
		}
		return all[i].Slot < all[j].Slot
	})
	p.BigSlots = append([]SlotLoad(nil), all[:min(5, len(all))]...)
	var busiestExec SlotLoad
	for _, sl := range all {
		if sl.Exec > busiestExec.Exec {
			busiestExec = sl
		}
	}
	if busiestExec.Exec > sc.MaxShardOpsFraction {
		p.Warnings = append(p.Warnings, fmt.Sprintf("slot %d (%s): executing its commands takes %.0f%% of its master's thread, above max_shard_ops_fraction (%.0f%%); "+
			"scripts cost more than their command count says", busiestExec.Slot, strings.Join(busiestExec.Tags, " "), 100*busiestExec.Exec, 100*sc.MaxShardOpsFraction))
	}
}

func hasWrites(ops []workload.OpSpec) bool {
	for _, o := range ops {
		if (o.Op == workload.OpEvent || o.Op == workload.OpBatch) && o.Weight > 0 {
			return true
		}
	}
	return false
}

// servedAt is where a read is served from: its consistency, or the API's
// default (cached for top and pages, primary for member reads); cached
// with cache_ttl 0 is primary, replica without replica reads is primary.
// Member reads asked as cached are counted as primary: their cache keys
// hold the member, so few repeat.
func servedAt(o workload.OpSpec, f *config.Family, replicaReads bool) string {
	c := o.Consistency
	member := o.Op == workload.OpMember || o.Op == workload.OpAround || o.Op == workload.OpLookup
	if c == "" {
		c = "cached"
		if member {
			c = "primary"
		}
	}
	switch {
	case c == "cached" && (f.CacheTTL <= 0 || member):
		c = "primary"
	case c == "replica" && !replicaReads:
		c = "primary"
	}
	return c
}

// CacheLoads is how many of calls/s on one cache key reach Redis with a TTL
// cache in each of g gateways (singleflight: one load per key per gateway
// at a time). Each gateway sees c/g calls/s; after an entry expires the next
// call loads it, so a gateway loads once per TTL + g/c seconds:
// g / (TTL + g/c) = c / (1 + c·TTL/g).
func CacheLoads(calls float64, ttl time.Duration, gateways int) float64 {
	if calls <= 0 {
		return 0
	}
	if ttl <= 0 {
		return calls
	}
	return calls / (1 + calls*ttl.Seconds()/float64(max(1, gateways)))
}

// DerivedPeriods is how many periods of a family hold keys at once when
// every period is archived at its end: the current one plus those within
// retention, 1 + ⌈retention / period length⌉ (1 for period all).
func DerivedPeriods(f *config.Family) (int, string) {
	var l time.Duration
	switch f.Period {
	case config.PeriodDay:
		l = 24 * time.Hour
	case config.PeriodWeek:
		l = 7 * 24 * time.Hour
	case config.PeriodMonth:
		l = 730 * time.Hour // a mean month
	default:
		return 1, "period all: one period"
	}
	n := 1 + int(math.Ceil(float64(f.Retention)/float64(l)))
	return n, fmt.Sprintf("1 + ⌈retention %s / period %s⌉, archived at period end", f.Retention, f.Period)
}

// recommend picks a shard count for a board: the smallest S in 1..1024
// whose busiest shard stays within maxMembers members and maxOps commands/s.
// At S shards the busiest shard takes the fan-out floor (every shard
// answers every fan-out read), the hottest member's writes (they never
// split), and an even share of the other writes and of the member reads.
// Both bounds only improve with S, so the first S that fits is the answer.
func recommend(bp *BoardPlan, members int64, writes, hotWrites, fanFloor, readHome float64, maxMembers int64, maxOps float64) {
	busiest := func(s int) float64 {
		return fanFloor + hotWrites + (writes-hotWrites+readHome)/float64(s)
	}
	perShard := func(s int) int64 { return (members + int64(s) - 1) / int64(s) }
	fits := func(s int) (mem, ops bool) { return perShard(s) <= maxMembers, busiest(s) <= maxOps }
	const maxShards = 1024
	found, memOnly := 0, 0
	for s := 1; s <= maxShards; s++ {
		mem, ops := fits(s)
		if mem && memOnly == 0 {
			memOnly = s
		}
		if mem && ops {
			found = s
			break
		}
	}
	cur := bp.Shards
	curMem, curOps := fits(cur)
	bp.Recommended, bp.Action, bp.Reason = cur, "ok", "within limits"
	switch {
	case memOnly == 0:
		bp.Recommended, bp.Action = maxShards, "split"
		bp.Reason = fmt.Sprintf("%d members need more than %d shards of ≤ %d", members, maxShards, maxMembers)
	case found == 0:
		bp.Recommended, bp.Action = max(cur, memOnly), "cache"
		if bp.Recommended > cur {
			bp.Action = "split+cache"
		}
		bp.Reason = fmt.Sprintf("every shard takes %.0f commands/s of fan-out reads (+%.0f of its hottest member's writes) whatever the shard count, above %.0f: "+
			"serve these reads from the cache or replicas; more shards only add commands", fanFloor, hotWrites, maxOps)
	case !curMem || !curOps:
		bp.Recommended, bp.Action = found, "split"
		var why []string
		if !curMem {
			why = append(why, fmt.Sprintf("%d members per shard > %d", bp.MaxShardMembers, maxMembers))
		}
		if !curOps {
			why = append(why, fmt.Sprintf("busiest shard ≈ %.0f commands/s > %.0f", busiest(cur), maxOps))
		}
		bp.Reason = strings.Join(why, ", ") + fmt.Sprintf("; at %d shards: ≤ %d members, ≈ %.0f commands/s per shard",
			found, perShard(found), busiest(found))
	case found < cur:
		bp.Recommended, bp.Action = found, "fewer"
		bp.Reason = fmt.Sprintf("%d shard(s) would do (≤ %d members, ≈ %.0f commands/s per shard); every shard adds commands to each fan-out read",
			found, perShard(found), busiest(found))
	}
}

// pileUp warns when a board with several shards puts clearly more of them
// on one master than an even spread would (shard.PileUp, the rule of the
// gateway's layout warning too).
func pileUp(board string, onMaster map[string]int, n, masters int) string {
	m, c, fair, ok := shard.PileUp(onMaster, n, masters)
	if !ok {
		return ""
	}
	return fmt.Sprintf("board %s: %d of its %d shards sit on %s (an even spread is %d)", board, c, n, m, fair)
}

// warn adds the plan-wide warnings: budgets, the hottest slot, skew.
func (p *Plan) warn(limitOps, periodOps float64, lifetimeDedupe bool) {
	sc := p.Scenario
	var sumOps float64
	for _, m := range p.Masters {
		sumOps += m.Commands
		switch {
		case sc.MaxMemoryPerMaster > 0 && m.MemoryShare > 1:
			p.Warnings = append(p.Warnings, fmt.Sprintf("master %s: %s, %.0f%% of its %s memory budget", m.Master,
				HumanBytes(m.Bytes), 100*m.MemoryShare, HumanBytes(float64(sc.MaxMemoryPerMaster))))
		case sc.MaxMemoryPerMaster > 0 && m.MemoryShare > 0.75:
			p.Warnings = append(p.Warnings, fmt.Sprintf("master %s: %.0f%% of its memory budget (keep headroom for forks and fragmentation)", m.Master, 100*m.MemoryShare))
		}
		if m.OpsShare > 1 {
			p.Warnings = append(p.Warnings, fmt.Sprintf("master %s: %.0f commands/s, %.0f%% of max_ops_per_master", m.Master, m.Commands, 100*m.OpsShare))
		}
		if m.Exec > 0.5 {
			p.Warnings = append(p.Warnings, fmt.Sprintf("master %s: executing its commands takes %.0f%% of its one thread (before network I/O)", m.Master, 100*m.Exec))
		}
	}
	if n := len(p.Masters); n > 1 && sumOps > 0 {
		mean := sumOps / float64(n)
		for _, m := range p.Masters {
			if m.Commands > 1.5*mean {
				p.Warnings = append(p.Warnings, fmt.Sprintf("master %s takes %.1f× the mean master's commands: hot slots concentrate there", m.Master, m.Commands/mean))
			}
		}
	}
	if len(p.HotSlots) > 0 {
		h := p.HotSlots[0]
		if c := h.Commands + h.Replicas.Commands; c > limitOps {
			p.Warnings = append(p.Warnings, fmt.Sprintf("slot %d (%s) takes %.0f commands/s, above the per-shard limit %.0f", h.Slot, strings.Join(h.Tags, " "), c, limitOps))
		}
	}
	if periodOps > limitOps {
		p.Warnings = append(p.Warnings, fmt.Sprintf("the period key of %s takes %.0f commands/s in one slot (tie first: one INCRBY per event call or batch); batch events to cut it", p.Family, periodOps))
	}
	if p.Totals.Bytes > 0 && p.Totals.Dedupe/p.Totals.Bytes > 0.5 {
		p.Warnings = append(p.Warnings, fmt.Sprintf("dedupe entries are %.0f%% of the memory (Redis-only mode keeps one per event per board for the board's life); ledger mode keeps O(members) instead",
			100*p.Totals.Dedupe/p.Totals.Bytes))
	}
	if lifetimeDedupe && sc.EventsPerMemberPerPeriod > 0 {
		p.Warnings = append(p.Warnings, "period all: the board never rolls over, so its dedupe entries grow with every event; "+
			"events_per_member_per_period is then the lifetime count")
	}
}

// HumanBytes formats a byte count with binary units.
func HumanBytes(n float64) string {
	switch {
	case n >= 1<<40:
		return fmt.Sprintf("%.2fTiB", n/(1<<40))
	case n >= 1<<30:
		return fmt.Sprintf("%.2fGiB", n/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1fMiB", n/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1fKiB", n/(1<<10))
	}
	return fmt.Sprintf("%.0fB", n)
}

package plan

import (
	"fmt"
	"sort"
	"strconv"

	"github.com/rankgate/rankgate/internal/workload"
)

// Calibration is what the planner measured on a live cluster: bytes per
// member and per dedupe entry, and Redis commands per API call. It is plain
// data; calibrate.Run (package internal/plan/calibrate) fills it, tests
// write it by hand.
type Calibration struct {
	Cluster     string `json:"cluster"`       // seeds it was measured on
	RedisServer string `json:"redis_version"` // of the first master
	// ListpackMaxEntries is zset-max-listpack-entries: a shard holding more
	// members is a skiplist. HashListpackMaxEntries is
	// hash-max-listpack-entries: a :m or :ev hash with more fields is a
	// hashtable.
	ListpackMaxEntries     int `json:"listpack_max_entries"`
	HashListpackMaxEntries int `json:"hash_listpack_max_entries"`
	// Memory holds one sample board per (tie, size).
	Memory []MemorySample `json:"memory"`
	// Ops holds the commands per call of each operation, by OpKey.
	Ops map[string]OpCost `json:"ops"`
	// OpsShards are the two shard counts the reads were measured at.
	OpsShards [2]int `json:"ops_shards"`
	// Counting says how commands were counted.
	Counting string `json:"counting"`
}

// MemorySample is one sample board: MEMORY USAGE … SAMPLES 0 (every
// element) of its keys, and the per-member costs derived from them.
type MemorySample struct {
	Tie      string `json:"tie"` // member | first
	Members  int    `json:"members"`
	Encoding string `json:"encoding"` // OBJECT ENCODING of the zset: listpack | skiplist
	// OBJECT ENCODING of :ev (after the last round) and :m: listpack | hashtable.
	DedupeEncoding  string `json:"dedupe_encoding"`
	VersionEncoding string `json:"version_encoding"`
	// Bytes of each key after EventsPerMember events per member.
	EventsPerMember int   `json:"events_per_member"`
	ZsetBytes       int64 `json:"zset_bytes"`
	BareBytes       int64 `json:"bare_zset_bytes"` // plain ZADD of member → points
	DedupeBytes1    int64 `json:"dedupe_bytes_1"`  // :ev after 1 event per member
	DedupeBytes     int64 `json:"dedupe_bytes"`    // :ev after EventsPerMember events per member
	VersionBytes    int64 `json:"version_bytes"`   // :m of a projection board of the same members
	MetaBytes       int64 `json:"meta_bytes"`      // :meta
	// Derived per member (and per event for DedupeEntry).
	Zset          float64 `json:"zset_per_member"`
	Bare          float64 `json:"bare_per_member"`
	Version       float64 `json:"version_per_member"`         // :m
	DedupeMember  float64 `json:"dedupe_per_member"`          // :ev counter field #n:<member>
	DedupeEntry   float64 `json:"dedupe_per_event"`           // :ev field per event
	WithVersion   float64 `json:"with_version_per_member"`    // zset + :m
	WithDedupe    float64 `json:"with_dedupe_per_member"`     // zset + :ev counter (events excluded)
	RatioVersion  float64 `json:"ratio_with_version_to_bare"` // (zset + :m) / bare
	RatioDedupe   float64 `json:"ratio_with_dedupe_to_bare"`  // (zset + :ev counter) / bare
	RatioZsetBare float64 `json:"ratio_zset_to_bare"`
}

// Derive fills the per-member figures from the byte counts: the dedupe
// hash grows by DedupeEntry per event and DedupeMember per member, fitted
// from its size after 1 and after EventsPerMember events per member.
func (m *MemorySample) Derive() {
	n := float64(m.Members)
	if n <= 0 {
		return
	}
	m.Zset = float64(m.ZsetBytes) / n
	m.Bare = float64(m.BareBytes) / n
	m.Version = float64(m.VersionBytes) / n
	if m.EventsPerMember > 1 {
		m.DedupeEntry = float64(m.DedupeBytes-m.DedupeBytes1) / (n * float64(m.EventsPerMember-1))
	}
	m.DedupeMember = max(0, float64(m.DedupeBytes1)/n-m.DedupeEntry)
	m.WithVersion = m.Zset + m.Version
	m.WithDedupe = m.Zset + m.DedupeMember
	if m.Bare > 0 {
		m.RatioVersion = m.WithVersion / m.Bare
		m.RatioDedupe = m.WithDedupe / m.Bare
		m.RatioZsetBare = m.Zset / m.Bare
	}
}

// ShardCost is the bytes of one board shard's keys, per member and per
// dedupe entry.
type ShardCost struct {
	Zset         float64 // zset, per member
	Version      float64 // :m, per member
	DedupeMember float64 // :ev #n:<member> counter, per member
	DedupeEntry  float64 // :ev, per event
	Meta         float64 // :meta, per shard
}

// Cost returns the per-member and per-event bytes of a shard of members
// members that take events dedupe entries each, picking for each key the
// sample of its encoding: the zset is a listpack up to ListpackMaxEntries
// members, :m up to HashListpackMaxEntries members, :ev up to
// HashListpackMaxEntries fields (a counter per member plus one field per
// event). The small sample stands for listpacks, the large one for
// skiplists and hashtables.
func (c *Calibration) Cost(tie string, members int64, events float64) (ShardCost, error) {
	small, large, err := c.samples(tie)
	if err != nil {
		return ShardCost{}, err
	}
	pick := func(fields float64, limit int) MemorySample {
		if limit > 0 && fields <= float64(limit) {
			return small
		}
		return large
	}
	z := pick(float64(members), c.ListpackMaxEntries)
	m := pick(float64(members), c.HashListpackMaxEntries)
	ev := pick(float64(members)*(1+events), c.HashListpackMaxEntries)
	return ShardCost{Zset: z.Zset, Version: m.Version, DedupeMember: ev.DedupeMember, DedupeEntry: ev.DedupeEntry,
		Meta: float64(large.MetaBytes)}, nil
}

// samples returns the smallest and the largest sample of a tie (of any tie
// when it has none).
func (c *Calibration) samples(tie string) (small, large MemorySample, err error) {
	var got []MemorySample
	for _, s := range c.Memory {
		if s.Tie == tie {
			got = append(got, s)
		}
	}
	if len(got) == 0 {
		got = c.Memory
	}
	if len(got) == 0 {
		return small, large, fmt.Errorf("calibration has no memory samples")
	}
	small, large = got[0], got[0]
	for _, s := range got[1:] {
		if s.Members < small.Members {
			small = s
		}
		if s.Members > large.Members {
			large = s
		}
	}
	return small, large, nil
}

// OpCost is the Redis commands one API call costs, measured with a
// counting decorator around the gateway's Backend (see calibrate.Run).
//
// Writes: PerBoard commands on the member's own shard of every board an
// event touches (one apply script), per event. Reads on a board of S
// shards: Home + PerShard × S commands, Home on the shard of the member read
// (member, around, lookup; spread evenly for top and page), PerShard on
// every shard. Period commands go to the family period's slot (the
// achievement counter under tie first).
type OpCost struct {
	Kind     string  `json:"kind"`
	PerBoard float64 `json:"per_board,omitempty"`
	Home     float64 `json:"home,omitempty"`
	PerShard float64 `json:"per_shard,omitempty"`
	Period   float64 `json:"period"`
	// Server is the server-side commands per board shard command (a script
	// runs several inside); 0 means unmeasured, taken as 1. Usec is the
	// execution time per board shard command in µs (commandstats usec).
	Server float64 `json:"server_per_command"`
	Usec   float64 `json:"usec_per_command"`
	// Measured are the raw averages per call at each shard count.
	Measured []OpMeasure `json:"measured"`
}

// OpMeasure is one measurement of an operation.
type OpMeasure struct {
	Shards int `json:"shards"` // shards of the board read (writes: of national)
	Calls  int `json:"calls"`
	// ShardCommands: commands on board shard keys per call; Period:
	// commands on period keys per call (state reads excluded: they are
	// cached for a second per gateway).
	ShardCommands float64 `json:"shard_commands"`
	Period        float64 `json:"period_commands"`
	RoundTrips    float64 `json:"backend_calls"` // Backend calls per API call
	// ServerCommands: commands the masters processed per call (INFO
	// commandstats deltas, inner script commands included).
	ServerCommands float64 `json:"server_commands"`
	ServerUsec     float64 `json:"server_usec"`               // µs of execution per call (commandstats usec deltas)
	Fanouts        float64 `json:"fanouts,omitempty"`         // rankgate_fanout_width observations per call
	FanoutWidth    float64 `json:"fanout_width,omitempty"`    // mean shards per fan-out
	Fetched        float64 `json:"entries_fetched,omitempty"` // rankgate_read_entries_fetched_total per call
	Boards         float64 `json:"boards,omitempty"`          // writes: boards per event
	Events         float64 `json:"events,omitempty"`          // writes: events per call
}

// Amplification is Server, or 1 when unmeasured.
func (o OpCost) Amplification() float64 {
	if o.Server > 0 {
		return o.Server
	}
	return 1
}

// fitServer sets Server and Usec from the measurements, per board shard
// command. Period commands are plain INCRBYs and count once on both sides
// (their µs, about one each, stay in Usec).
func (o *OpCost) fitServer() {
	var client, server, usec float64
	for _, m := range o.Measured {
		client += m.ShardCommands * float64(m.Calls)
		server += (m.ServerCommands - m.Period) * float64(m.Calls)
		usec += m.ServerUsec * float64(m.Calls)
	}
	if client > 0 && server > 0 {
		o.Server = max(1, server/client)
	}
	if client > 0 {
		o.Usec = usec / client
	}
}

// load turns board shard commands/s into a Load.
func (o OpCost) load(commands float64) Load {
	return Load{Commands: commands, ServerCommands: commands * o.Amplification(), Exec: commands * o.Usec / 1e6}
}

// FitReads fits Home + PerShard × S through the two measurements of a read
// (at 1 and at S > 1 shards). A negative intercept (re-asked shards of a
// top read grow faster than S) is folded into PerShard at the larger S, so
// the fit never goes below what was measured there.
func (o *OpCost) FitReads() {
	if len(o.Measured) == 0 {
		return
	}
	ms := append([]OpMeasure(nil), o.Measured...)
	sort.Slice(ms, func(i, j int) bool { return ms[i].Shards < ms[j].Shards })
	lo, hi := ms[0], ms[len(ms)-1]
	var period float64
	for _, m := range ms {
		period += m.Period
	}
	o.Period = period / float64(len(ms))
	o.fitServer()
	if hi.Shards == lo.Shards {
		o.Home, o.PerShard = 0, hi.ShardCommands/float64(hi.Shards)
		return
	}
	o.PerShard = (hi.ShardCommands - lo.ShardCommands) / float64(hi.Shards-lo.Shards)
	o.Home = lo.ShardCommands - o.PerShard*float64(lo.Shards)
	if o.Home < 0 || o.PerShard < 0 {
		o.Home, o.PerShard = 0, hi.ShardCommands/float64(hi.Shards)
	}
}

// FitWrites sets PerBoard and Period from the measurements of a write.
func (o *OpCost) FitWrites() {
	var per, period, n float64
	for _, m := range o.Measured {
		if m.Boards > 0 && m.Events > 0 {
			per += m.ShardCommands / (m.Boards * m.Events)
			period += m.Period
			n++
		}
	}
	if n > 0 {
		o.PerBoard, o.Period = per/n, period/n
	}
	o.fitServer()
}

// OpKey names an operation with the parameters that change its cost:
// "event", "batch:100", "top:100", "member", "around:5", "page:50:5",
// "lookup:20".
func OpKey(o workload.OpSpec) string {
	switch o.Op {
	case workload.OpBatch:
		return workload.OpBatch + ":" + strconv.Itoa(o.Batch)
	case workload.OpTop:
		return workload.OpTop + ":" + strconv.Itoa(o.Limit)
	case workload.OpAround:
		return workload.OpAround + ":" + strconv.Itoa(o.Radius)
	case workload.OpPage:
		return workload.OpPage + ":" + strconv.Itoa(o.Limit) + ":" + strconv.Itoa(o.Depth)
	case workload.OpLookup:
		return workload.OpLookup + ":" + strconv.Itoa(o.Users)
	}
	return o.Op
}

// StandardOps are calibrated on every run besides the scenario's own:
// event, batch of 100, top 10 and 100, member, around 5, page 50 (walks of
// 5), lookup of 20.
func StandardOps() []workload.OpSpec {
	sc := Scenario{Ops: []workload.OpSpec{{Op: workload.OpEvent}, {Op: workload.OpBatch, Batch: 100}, {Op: workload.OpTop, Limit: 10}, {Op: workload.OpTop, Limit: 100},
		{Op: workload.OpMember}, {Op: workload.OpAround, Radius: 5}, {Op: workload.OpPage, Limit: 50, Depth: 5}, {Op: workload.OpLookup, Users: 20}}}
	sc.fillDefaults()
	return sc.Ops
}

// OpsToCalibrate returns the standard operations plus the scenario's, one
// per OpKey, in a stable order.
func OpsToCalibrate(sc *Scenario) []workload.OpSpec {
	seen := map[string]bool{}
	var out []workload.OpSpec
	for _, o := range append(StandardOps(), sc.Ops...) {
		k := OpKey(o)
		if seen[k] {
			continue
		}
		seen[k] = true
		o.Name = k
		out = append(out, o)
	}
	return out
}

package plan

import (
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
)

// MaxBoardRows bounds the boards the table lists: the busiest ones and every
// board whose action is not "ok" (the JSON lists them all).
const MaxBoardRows = 15

// WriteTable prints the plan as tables.
func WriteTable(w io.Writer, p *Plan) error {
	tw := tabwriter.NewWriter(w, 2, 4, 2, ' ', 0)
	pr := func(format string, args ...any) { fmt.Fprintf(tw, format, args...) }
	sc := p.Scenario
	pr("rankgate plan: scenario %q on family %s (tie %s, %s mode)\n", sc.Name, p.Family, p.Tie, p.Mode)
	pr("  %d members, %d boards, %d shards; %g requests/s; %d live periods (%s); placement: %s\n",
		sc.Members, p.Totals.Boards, p.Totals.Shards, sc.Rate, p.Periods, p.PeriodsFrom, p.Placement)
	pr("  events %.1f/s, reads %.1f/s, %g events per member per period, %d gateway(s)\n\n",
		p.Totals.Events, p.Totals.Reads, sc.EventsPerMemberPerPeriod, sc.Gateways)

	c := p.Calibration
	pr("CALIBRATION  measured on %s (redis %s, zset-max-listpack-entries %d, hash-max-listpack-entries %d); MEMORY USAGE … SAMPLES 0, bytes per member\n",
		c.Cluster, c.RedisServer, c.ListpackMaxEntries, c.HashListpackMaxEntries)
	pr("TIE\tMEMBERS\tZSET\tBARE ZSET\t+ :m VERSION\t+ :ev COUNTER\t:ev PER EVENT\t:meta\tZSET / BARE\tZSET+:m / BARE\tZSET+:ev / BARE\n")
	for _, m := range c.Memory {
		pr("%s\t%d\t%.1f (%s)\t%.1f\t%.1f (%s)\t%.1f (%s)\t%.1f\t%d\t%.2f×\t%.2f×\t%.2f×\n", m.Tie, m.Members, m.Zset, m.Encoding, m.Bare,
			m.Version, m.VersionEncoding, m.DedupeMember, m.DedupeEncoding, m.DedupeEntry, m.MetaBytes, m.RatioZsetBare, m.RatioVersion, m.RatioDedupe)
	}
	pr("\n")
	pr("COMMANDS PER CALL  counted by %s\n", c.Counting)
	pr("OP\tAT %d SHARD\tAT %d SHARDS\tHOME\tPER SHARD\tPER BOARD\tPERIOD\tSERVER/CMD\tµS/CMD\tSERVER AT %d\tFETCHED/CALL (AT %d)\n",
		c.OpsShards[0], c.OpsShards[1], c.OpsShards[1], c.OpsShards[1])
	for _, k := range slices.Sorted(maps.Keys(c.Ops)) {
		o := c.Ops[k]
		at := map[int]OpMeasure{}
		for _, m := range o.Measured {
			at[m.Shards] = m
		}
		lo, hi := at[c.OpsShards[0]], at[c.OpsShards[1]]
		pr("%s\t%s\t%s\t%s\t%s\t%s\t%.2f\t%.2f\t%.1f\t%s\t%s\n", k, num(lo.ShardCommands), num(hi.ShardCommands), num(o.Home), num(o.PerShard),
			num(o.PerBoard), o.Period, o.Amplification(), o.Usec, num(hi.ServerCommands), num(hi.Fetched))
	}
	pr("\n")

	pr("LOAD BY OPERATION  (commands: sent by the gateways; server: incl. inside scripts; exec: share of one core)\n")
	pr("OP\tKEY\tSERVED\tCALLS/S\tREACH REDIS/S\tCOMMANDS/S\tSERVER CMDS/S\tEXEC\n")
	for _, o := range p.Ops {
		pr("%s\t%s\t%s\t%.1f\t%.1f\t%.1f\t%.1f\t%s\n", o.Name, o.Key, o.Consistency, o.Calls, o.Loads, o.Commands, o.ServerCommands, pct(o.Exec))
	}
	pr("\n")

	if p.Columns != nil {
		pr("SORT COLUMNS  %s\n\n", p.Columns)
	}
	pr("MASTERS  (memory: every live period; budgets: %s memory, %.0f commands/s; replica columns: consistency=replica reads)\n",
		budget(sc.MaxMemoryPerMaster), sc.MaxOpsPerMaster)
	pr("MASTER\tSLOTS\tSHARDS\tMEMBERS\tMEMORY\tOF BUDGET\tCOMMANDS/S\tOF BUDGET\tSERVER CMDS/S\tEXEC\tREPLICA CMDS/S\n")
	for _, m := range p.Masters {
		mem := "-"
		if sc.MaxMemoryPerMaster > 0 {
			mem = pct(m.MemoryShare)
		}
		pr("%s\t%d\t%d\t%d\t%s\t%s\t%.1f\t%s\t%.1f\t%s\t%.1f\n", m.Master, m.Slots, m.Shards, m.Members, HumanBytes(m.Bytes), mem,
			m.Commands, pct(m.OpsShare), m.ServerCommands, pct(m.Exec), m.Replicas.Commands)
	}
	t := p.Totals
	pr("TOTAL\t\t%d\t%d\t%s\t\t%.1f\t\t%.1f\t%s\t%.1f\n\n", t.Shards, t.Members, HumanBytes(t.Bytes),
		t.Masters.Commands, t.Masters.ServerCommands, pct(t.Masters.Exec), t.Replicas.Commands)

	pr("HOTTEST SLOTS (commands/s)\n")
	slots(pr, p.HotSlots)
	pr("BIGGEST SLOTS (bytes)\n")
	slots(pr, p.BigSlots)

	pr("BOARDS  (shard limits: %d members, %.0f commands/s)\n", sc.MaxMembersPerShard, sc.ShardOpsLimit())
	pr("BOARD\tSHARDS\tMEMBERS\tMAX/SHARD\tMEMORY\tDEDUPE\tCOMMANDS/S\tBUSIEST SHARD\tFAN-OUT FLOOR\tMASTERS\tRECOMMENDED\tACTION\n")
	rows := boardRows(p.Boards)
	for _, b := range rows {
		pr("%s\t%d\t%d\t%d\t%s\t%s\t%.1f\t%.1f\t%.1f\t%d\t%d\t%s\n", b.Board, b.Shards, b.Members, b.MaxShardMembers, HumanBytes(b.Bytes),
			HumanBytes(b.DedupeBytes), b.Commands+b.Replicas.Commands, b.MaxShardOps, b.FanoutFloor, b.Masters, b.Recommended, b.Action)
	}
	if n := len(p.Boards) - len(rows); n > 0 {
		pr("… %d more boards, all ok (see -json)\n", n)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, b := range rows {
		if b.Action != "ok" {
			fmt.Fprintf(w, "  %s: %s: %s\n", b.Board, b.Action, b.Reason)
		}
	}
	if len(p.Warnings) > 0 {
		fmt.Fprintln(w, "\nWARNINGS")
		for _, s := range p.Warnings {
			fmt.Fprintln(w, "  -", s)
		}
	}
	return nil
}

func slots(pr func(string, ...any), ss []SlotLoad) {
	pr("SLOT\tMASTER\tCOMMANDS/S\tSERVER CMDS/S\tEXEC\tREPLICA CMDS/S\tBYTES\tHASH TAGS\n")
	for _, s := range ss {
		pr("%d\t%s\t%.1f\t%.1f\t%s\t%.1f\t%s\t%s\n", s.Slot, s.Master, s.Commands, s.ServerCommands, pct(s.Exec), s.Replicas.Commands,
			HumanBytes(s.Bytes), strings.Join(s.Tags, " "))
	}
	pr("\n")
}

// boardRows picks the boards the table shows: every board not "ok", then
// the busiest, national first, up to MaxBoardRows (more when more need
// action).
func boardRows(all []BoardPlan) []BoardPlan {
	idx := make([]int, len(all))
	for i := range idx {
		idx[i] = i
	}
	sort.SliceStable(idx, func(a, b int) bool {
		x, y := all[idx[a]], all[idx[b]]
		if (x.Action != "ok") != (y.Action != "ok") {
			return x.Action != "ok"
		}
		return x.Commands+x.Replicas.Commands > y.Commands+y.Replicas.Commands
	})
	var out []BoardPlan
	for _, i := range idx {
		if len(out) >= MaxBoardRows && all[i].Action == "ok" {
			break
		}
		out = append(out, all[i])
	}
	sort.SliceStable(out, func(a, b int) bool {
		return out[a].Commands+out[a].Replicas.Commands > out[b].Commands+out[b].Replicas.Commands
	})
	return out
}

func num(f float64) string {
	if f == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", f)
}

func pct(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) }

func budget(b ByteSize) string {
	if b <= 0 {
		return "no"
	}
	return HumanBytes(float64(b))
}

package monitor

import (
	"strconv"
	"strings"
)

// Roles, as the role label spells them.
const (
	roleMaster  = "master"
	roleReplica = "replica"
)

// The INFO fields below are read from one section of go-redis's InfoMap
// (section name → field → value), which parses the reply.

// infoInt returns an integer field of a parsed INFO section.
func infoInt(info map[string]string, k string) (int64, bool) {
	v, ok := info[k]
	if !ok {
		return 0, false
	}
	n, err := strconv.ParseInt(strings.TrimSpace(v), 10, 64)
	return n, err == nil
}

// infoFloat returns a numeric field of a parsed INFO section.
func infoFloat(info map[string]string, k string) (float64, bool) {
	v, ok := info[k]
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
	return f, err == nil
}

// infoRole maps INFO replication's role field to a role label.
func infoRole(info map[string]string) string {
	switch info["role"] {
	case "master":
		return roleMaster
	case "slave", "replica":
		return roleReplica
	}
	return ""
}

// CommandStat is one command's line of INFO commandstats.
type CommandStat struct {
	Calls   int64
	Usec    int64
	PerCall float64 // usec_per_call: the lifetime average, microseconds
}

// ParseCommandStats parses the Commandstats section of InfoMap:
// "cmdstat_zscore" → "calls=3,usec=9,usec_per_call=3.00,…" becomes
// {"zscore": …}. Command names are lowercase; a subcommand keeps its own
// entry ("client|list"). It is the one commandstats parser: the monitor's
// latency gauges and the planner's calibration both read through it.
func ParseCommandStats(section map[string]string) map[string]CommandStat {
	out := make(map[string]CommandStat)
	for k, v := range section {
		name, ok := strings.CutPrefix(k, "cmdstat_")
		if !ok {
			continue
		}
		var st CommandStat
		for field := range strings.SplitSeq(v, ",") {
			fk, fv, _ := strings.Cut(field, "=")
			switch fk {
			case "calls":
				st.Calls, _ = strconv.ParseInt(fv, 10, 64)
			case "usec":
				st.Usec, _ = strconv.ParseInt(fv, 10, 64)
			case "usec_per_call":
				st.PerCall, _ = strconv.ParseFloat(fv, 64)
			}
		}
		out[strings.ToLower(name)] = st
	}
	return out
}

// clusterMember is one line of CLUSTER NODES.
type clusterMember struct {
	id       string
	addr     string // host:port, without the cluster bus port or hostname
	role     string // master | replica
	masterID string // a replica's master; "" for masters
	failed   bool   // flagged fail or fail?
}

// parseClusterNodes parses CLUSTER NODES; nodes still in handshake or without
// an address are left out.
//
//	<id> <ip:port@cport[,hostname]> <flags> <master> <ping> <pong> <epoch> <link> <slots>...
func parseClusterNodes(s string) []clusterMember {
	var out []clusterMember
	for line := range strings.Lines(s) {
		f := strings.Fields(line)
		if len(f) < 8 {
			continue
		}
		addr, _, _ := strings.Cut(f[1], "@")
		addr, _, _ = strings.Cut(addr, ",")
		if strings.HasPrefix(addr, ":") || addr == "" {
			continue // no address known yet
		}
		m := clusterMember{id: f[0], addr: addr}
		skip := false
		for flag := range strings.SplitSeq(f[2], ",") {
			switch flag {
			case "master":
				m.role = roleMaster
			case "slave", "replica":
				m.role = roleReplica
			case "fail", "fail?":
				m.failed = true
			case "handshake", "noaddr":
				skip = true
			}
		}
		if skip || m.role == "" {
			continue
		}
		if m.role == roleReplica && f[3] != "-" {
			m.masterID = f[3]
		}
		out = append(out, m)
	}
	return out
}

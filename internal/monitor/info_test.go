package monitor

import (
	"reflect"
	"testing"
)

// TestInfoFields reads fields of INFO sections as go-redis's InfoMap hands
// them over (it parses the reply; TestRun and the e2e monitor test read a
// real one).
func TestInfoFields(t *testing.T) {
	t.Parallel()
	info := map[string]string{"role": "slave", "master_host": "127.0.0.1", "master_port": "7100",
		"slave_repl_offset": "1234", "used_memory": "1048576", "maxmemory_policy": "noeviction"}
	if got := infoRole(info); got != roleReplica {
		t.Errorf("role = %q, want replica", got)
	}
	if v, ok := infoInt(info, "slave_repl_offset"); !ok || v != 1234 {
		t.Errorf("slave_repl_offset = %d, %v", v, ok)
	}
	if v, ok := infoFloat(info, "used_memory"); !ok || v != 1048576 {
		t.Errorf("used_memory = %v, %v", v, ok)
	}
	if _, ok := infoInt(info, "missing"); ok {
		t.Error("missing field reported present")
	}
	if info["maxmemory_policy"] != "noeviction" {
		t.Errorf("maxmemory_policy = %q", info["maxmemory_policy"])
	}
	if got := infoRole(map[string]string{"role": "master"}); got != roleMaster {
		t.Errorf("role = %q, want master", got)
	}
}

func TestParseCommandStats(t *testing.T) {
	t.Parallel()
	got := ParseCommandStats(map[string]string{
		"cmdstat_evalsha":     "calls=10,usec=250,usec_per_call=25.00,rejected_calls=0,failed_calls=1",
		"cmdstat_client|list": "calls=1,usec=5,usec_per_call=5.00,rejected_calls=0,failed_calls=0",
		"cmdstat_ZSCORE":      "calls=4,usec=6,usec_per_call=1.50",
		"errorstat_ERR":       "count=1",
	})
	want := map[string]CommandStat{
		"evalsha":     {Calls: 10, Usec: 250, PerCall: 25},
		"client|list": {Calls: 1, Usec: 5, PerCall: 5},
		"zscore":      {Calls: 4, Usec: 6, PerCall: 1.5},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

func TestParseClusterNodes(t *testing.T) {
	t.Parallel()
	const nodes = `e4e5 127.0.0.1:7101@17101 master - 0 1795983108782 2 connected 5461-10922
b39b 127.0.0.1:7103@17103,redis-3 slave e84b 0 1795983109000 1 connected
e84b 127.0.0.1:7100@17100 myself,master - 0 1795983108000 1 connected 0-5460
dead 127.0.0.1:7105@17105 slave,fail e4e5 0 1795983108277 3 disconnected
hand 127.0.0.1:7106@17106 handshake - 0 0 0 connected
noad :0@0 master,noaddr - 0 0 0 disconnected
`
	got := parseClusterNodes(nodes)
	want := []clusterMember{
		{id: "e4e5", addr: "127.0.0.1:7101", role: roleMaster},
		{id: "b39b", addr: "127.0.0.1:7103", role: roleReplica, masterID: "e84b"},
		{id: "e84b", addr: "127.0.0.1:7100", role: roleMaster},
		{id: "dead", addr: "127.0.0.1:7105", role: roleReplica, masterID: "e4e5", failed: true},
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v\nwant %+v", got, want)
	}
}

func TestTopKeys(t *testing.T) {
	t.Parallel()
	ks := []keyMemory{{key: "a", bytes: 10}, {key: "b", bytes: 30}, {key: "c", bytes: 20}, {key: "d", bytes: 30}}
	got := topKeys(ks, 3)
	want := []keyMemory{{key: "b", bytes: 30}, {key: "d", bytes: 30}, {key: "c", bytes: 20}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, want %+v", got, want)
	}
	if got := topKeys(nil, 3); len(got) != 0 {
		t.Errorf("topKeys(nil) = %v", got)
	}
}

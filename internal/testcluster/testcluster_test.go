package testcluster_test

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/internal/testcluster"
)

func TestClusterTopology(t *testing.T) {
	addrs := testcluster.Addrs(t)
	if len(addrs) == 0 {
		t.Fatal("no addrs")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	node := redis.NewClient(&redis.Options{Addr: addrs[0], DialTimeout: 2 * time.Second, ReadTimeout: 2 * time.Second})
	defer node.Close()

	info, err := node.ClusterInfo(ctx).Result()
	if err != nil {
		t.Fatalf("CLUSTER INFO: %v", err)
	}
	f := testcluster.InfoFields(info)
	if f["cluster_state"] != "ok" || f["cluster_slots_ok"] != "16384" || f["cluster_size"] != "3" {
		t.Fatalf("CLUSTER INFO: state=%s slots_ok=%s size=%s\n%s", f["cluster_state"], f["cluster_slots_ok"], f["cluster_size"], info)
	}

	nodes, err := node.ClusterNodes(ctx).Result()
	if err != nil {
		t.Fatalf("CLUSTER NODES: %v", err)
	}
	masters := map[string]string{} // id -> addr
	replicas := map[string]int{}   // master id -> healthy replicas
	for _, line := range strings.Split(strings.TrimSpace(nodes), "\n") {
		fs := strings.Fields(line)
		if len(fs) < 8 {
			t.Fatalf("CLUSTER NODES line %q", line)
		}
		id, addr, flags, masterID, link := fs[0], fs[1], fs[2], fs[3], fs[7]
		if strings.Contains(flags, "fail") {
			t.Errorf("node %s is flagged %s", addr, flags)
		}
		switch {
		case strings.Contains(flags, "master"):
			masters[id] = addr
		case strings.Contains(flags, "slave") && link == "connected":
			replicas[masterID]++
		}
	}
	if len(masters) != 3 {
		t.Fatalf("want 3 masters, got %d:\n%s", len(masters), nodes)
	}
	for id, addr := range masters {
		if replicas[id] != 1 {
			t.Errorf("master %s has %d connected replicas, want 1", addr, replicas[id])
		}
	}

	// Hash tags: only the part in braces is hashed (values from the Redis docs).
	for key, want := range map[string]int64{"somekey": 11058, "{user1000}.following": 3443, "{user1000}.followers": 3443} {
		got, err := node.ClusterKeySlot(ctx, key).Result()
		if err != nil {
			t.Fatalf("CLUSTER KEYSLOT %s: %v", key, err)
		}
		if got != want {
			t.Errorf("CLUSTER KEYSLOT %s = %d, want %d", key, got, want)
		}
	}
}

func TestClientAndPrefix(t *testing.T) {
	c := testcluster.Client(t)
	p1, p2 := testcluster.Prefix(t), testcluster.Prefix(t)
	valid := regexp.MustCompile(`^[a-z0-9]{1,16}$`)
	if !valid.MatchString(p1) || !valid.MatchString(p2) || p1 == p2 {
		t.Fatalf("prefixes %q %q: want distinct matches of %s", p1, p2, valid)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	// Keys across many slots go through the cluster client's routing.
	for i := 0; i < 20; i++ {
		k := p1 + ":k" + string(rune('a'+i))
		if err := c.Set(ctx, k, i, time.Minute).Err(); err != nil {
			t.Fatalf("SET %s: %v", k, err)
		}
		if got, err := c.Get(ctx, k).Int(); err != nil || got != i {
			t.Fatalf("GET %s = %d, %v; want %d", k, got, err, i)
		}
		if err := c.Del(ctx, k).Err(); err != nil {
			t.Fatalf("DEL %s: %v", k, err)
		}
	}
}

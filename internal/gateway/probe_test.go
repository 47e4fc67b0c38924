package gateway

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/store"
)

// nodeDown wraps the real store: a pipeline of reads of kind `kind` sent to
// node `down` fails as a node that refuses does (every read of it); the
// rest reach Redis.
type nodeDown struct {
	Backend
	down  string
	all   bool // every node fails
	kinds []store.ReadKind
}

func (n *nodeDown) ReadShards(ctx context.Context, reads []store.ShardRead, replica bool, out []store.ShardReply) {
	if len(reads) > 0 && slices.Contains(n.kinds, reads[0].Kind) && (n.all || n.NodeOf(ctx, reads[0].Key) == n.down) {
		for i := range reads {
			out[i] = store.ShardReply{Err: errShardDown}
		}
		return
	}
	n.Backend.ReadShards(ctx, reads, replica, out)
}

// TestProbeNodeFailsInsidePipeline: a member's standing on a 16-shard board
// of the real cluster when one master fails its pipeline — in the native
// probe round, or in the position.lua round that follows for shards whose
// points group is too large to read (band 1: every shard here). With
// partial=allow the answer counts exactly the other nodes' shards and names
// exactly the failed node's shards as missing; without it the read fails
// naming one of them.
func TestProbeNodeFailsInsidePipeline(t *testing.T) {
	t.Parallel()
	const fam = `  p:
    aggregate: sum
    order: desc
    tie: member
    rank: competition
    period: all
    max_points: 100000
    dimensions:
      national: {shards: 16}
`
	var nd *nodeDown
	svc := newClusterServiceWith(t, fam, func(o *Options, st *store.Store) {
		nd = &nodeDown{Backend: st}
		o.Backend = nd
	})
	ctx := context.Background()
	ref := nationalRef("p", "all")
	points := map[string]int64{}
	for j := 0; j < 240; j++ {
		u := fmt.Sprintf("u%03d", j)
		points[u] = 10 + int64(j/80)
		if _, err := svc.ApplyEvent(ctx, Event{EventID: "e" + u, Family: "p", User: u, Delta: ptr(points[u])}); err != nil {
			t.Fatal(err)
		}
	}
	keys := shardKeys(svc, "p")
	var zkey [16]string
	for k, i := range keys {
		zkey[i] = k
	}
	perShard := make([]map[int64]int, 16)
	for u, p := range points {
		i := shard.Of(u, 16)
		if perShard[i] == nil {
			perShard[i] = map[int64]int{}
		}
		perShard[i][p]++
	}
	for i, m := range perShard {
		if len(m) != 3 {
			t.Fatalf("shard %d holds points %v: every shard must hold every points value", i, m)
		}
	}
	down := nd.NodeOf(ctx, zkey[0])
	nd.down = down
	var downShards []int
	for i, k := range zkey {
		if nd.NodeOf(ctx, k) == down {
			downShards = append(downShards, i)
		}
	}
	if len(downShards) == 0 || len(downShards) == 16 {
		t.Fatalf("node %s serves shards %v: want some, not all", down, downShards)
	}
	// want: u's standing counted over the shards that answered.
	want := func(u string, missing []int) MemberStanding {
		var ms MemberStanding
		for v, p := range points {
			if slices.Contains(missing, shard.Of(v, 16)) {
				continue
			}
			ms.Members++
			if p > points[u] || p == points[u] && v > u {
				ms.Position++
			}
			if p > points[u] {
				ms.Rank++
			}
		}
		ms.Rank++
		return ms
	}
	// wantWindow: the members around u (radius 3) among u and the shards
	// that answered, in board order.
	wantWindow := func(u string, missing []int) []string {
		var live []rank.Item
		for v, p := range points {
			if v == u || !slices.Contains(missing, shard.Of(v, 16)) {
				live = append(live, rank.Item{Score: p, Member: v})
			}
		}
		slices.SortFunc(live, func(a, b rank.Item) int {
			if rank.Before(a, b) {
				return -1
			}
			return 1
		})
		k := slices.IndexFunc(live, func(it rank.Item) bool { return it.Member == u })
		var out []string
		for _, it := range live[max(0, k-3):min(len(live), k+4)] {
			out = append(out, it.Member)
		}
		return out
	}
	for _, c := range []struct {
		name  string
		kinds []store.ReadKind
		band  int
	}{
		{"native round", []store.ReadKind{store.ReadPlace, store.ReadWindow}, 0},
		{"position.lua and seek.lua round after open native reads", []store.ReadKind{store.ReadPositions, store.ReadSeek}, 1},
	} {
		nd.kinds = c.kinds
		svc.rp.Band = c.band
		for _, u := range []string{"u000", "u001", "u002", "u117", "u239"} {
			ms, err := svc.Member(ctx, ref, u, ReadOptions{Consistency: ConsistencyPrimary, AllowPartial: true})
			if err != nil {
				t.Fatalf("%s: member %s: %v", c.name, u, err)
			}
			w := want(u, downShards)
			if !ms.Partial || !slices.Equal(ms.MissingShards, downShards) {
				t.Fatalf("%s: member %s partial %v missing %v, want true %v", c.name, u, ms.Partial, ms.MissingShards, downShards)
			}
			if ms.Position != w.Position || ms.Rank != w.Rank || ms.Members != w.Members || ms.Points != points[u] {
				t.Fatalf("%s: member %s = pos %d rank %d of %d (%d points), want pos %d rank %d of %d (%d)", c.name, u,
					ms.Position, ms.Rank, ms.Members, ms.Points, w.Position, w.Rank, w.Members, points[u])
			}
			// Around-me reads the same shards the same way: its window
			// leaves out exactly the failed node's members.
			page, err := svc.Around(ctx, ref, u, 3, ReadOptions{Consistency: ConsistencyPrimary, AllowPartial: true})
			if err != nil || !page.Partial || !slices.Equal(page.MissingShards, downShards) {
				t.Fatalf("%s: around %s: %v, partial %v missing %v, want %v", c.name, u, err, page.Partial, page.MissingShards, downShards)
			}
			var got []string
			for _, e := range page.Entries {
				got = append(got, e.User)
			}
			if w := wantWindow(u, downShards); !slices.Equal(got, w) {
				t.Fatalf("%s: around %s = %v, want %v", c.name, u, got, w)
			}
			_, err = svc.Member(ctx, ref, u, primaryRead)
			wantRankErr(t, c.name, err, rank.CodeUnavailable, "")
			named := false
			for _, i := range downShards {
				named = named || strings.Contains(err.Error(), fmt.Sprintf("from shard %d:", i))
			}
			if !named || !errors.Is(err, errShardDown) {
				t.Fatalf("%s: %q does not name a shard of the failed node %v", c.name, err, downShards)
			}
		}
	}
	// Every node fails the position.lua round: no shard answered, no answer.
	nd.all, nd.kinds, svc.rp.Band = true, []store.ReadKind{store.ReadPositions}, 1
	_, err := svc.Member(ctx, ref, "u000", ReadOptions{Consistency: ConsistencyPrimary, AllowPartial: true})
	wantRankErr(t, "every node down", err, rank.CodeUnavailable, "")
	// And with the nodes back every standing is whole again.
	nd.all, nd.kinds, svc.rp.Band = false, nil, 0
	ms, err := svc.Member(ctx, ref, "u117", primaryRead)
	if w := want("u117", nil); err != nil || ms.Partial || ms.Position != w.Position || ms.Rank != w.Rank || ms.Members != 240 {
		t.Fatalf("member u117 = %+v (%v), want %+v", ms, err, w)
	}
}

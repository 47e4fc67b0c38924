package readplan

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/store"
)

// nodesBackend answers counts (ZCOUNT of key "k<i>" is i) with keys spread
// over nodes by node(i); down fails every read of one node's pipeline.
type nodesBackend struct {
	node  func(i int) string
	down  string
	mu    sync.Mutex
	calls map[string][]string // node → the keys of each pipeline, joined
}

func shardIndex(key string) int {
	var i int
	_, _ = fmt.Sscanf(key, "k%d", &i)
	return i
}

func (b *nodesBackend) NodeOf(ctx context.Context, key string) string { return b.node(shardIndex(key)) }

func (b *nodesBackend) ReadShards(ctx context.Context, reads []store.ShardRead, replica bool, out []store.ShardReply) {
	node := b.NodeOf(ctx, reads[0].Key)
	keys := make([]string, len(reads))
	for j, r := range reads {
		keys[j] = r.Key
		if b.NodeOf(ctx, r.Key) != node {
			panic("a pipeline mixes nodes")
		}
		if node == b.down {
			out[j] = store.ShardReply{Err: errors.New("connection refused")}
			continue
		}
		out[j] = store.ShardReply{N: int64(shardIndex(r.Key))}
	}
	b.mu.Lock()
	b.calls[node] = append(b.calls[node], strings.Join(keys, ","))
	b.mu.Unlock()
}

// TestFanoutPerNode: one pipeline per node per phase, replies in the reads'
// order; a down node costs exactly its shards (partial) or fails the read
// naming one of them.
func TestFanoutPerNode(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name        string
		n           int
		node        func(i int) string
		down        string
		partial     bool
		wantSum     int64
		wantMissing []int
		wantErr     bool
	}{
		{"one node", 4, func(int) string { return "" }, "-", false, 0 + 1 + 2 + 3, nil, false},
		{"three nodes", 16, func(i int) string { return fmt.Sprint("n", i%3) }, "-", false, 120, nil, false},
		{"a node down, partial", 16, func(i int) string { return fmt.Sprint("n", i%3) }, "n1", true, 120 - (1 + 4 + 7 + 10 + 13), []int{1, 4, 7, 10, 13}, false},
		{"a node down", 16, func(i int) string { return fmt.Sprint("n", i%3) }, "n2", false, 0, nil, true},
		{"every node down, partial", 3, func(i int) string { return "x" }, "x", true, 0, nil, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			be := &nodesBackend{node: c.node, down: c.down, calls: map[string][]string{}}
			r := &Reader{Backend: be, Timeout: time.Second}
			b := &Board{AllowPartial: c.partial}
			for i := 0; i < c.n; i++ {
				b.Keys = append(b.Keys, fmt.Sprint("k", i))
			}
			sum, missing, err := r.Count(context.Background(), "count", b, 0, 1)
			if c.wantErr {
				var re *rank.Error
				if err == nil || !errors.As(err, &re) || re.Code != rank.CodeUnavailable || !strings.Contains(err.Error(), "count from shard ") {
					t.Fatalf("err = %v, want unavailable naming a shard", err)
				}
				return
			}
			if err != nil || sum != c.wantSum || !slices.Equal(missing, c.wantMissing) {
				t.Fatalf("count = %d, missing %v, %v; want %d, %v", sum, missing, err, c.wantSum, c.wantMissing)
			}
			for node, calls := range be.calls {
				if len(calls) != 1 {
					t.Fatalf("node %q got %d pipelines (%v), want 1", node, len(calls), calls)
				}
			}
		})
	}
}

// TestFirstDepth pins the first-round depth: the expected share plus 2.5σ
// plus one, never more than want, want itself on one shard.
func TestFirstDepth(t *testing.T) {
	t.Parallel()
	cases := []struct{ want, n, depth int }{
		{100, 16, 14}, {10, 16, 4}, {1000, 16, 83}, {100, 1, 100}, {1, 16, 1}, {5, 2, 5},
	}
	for _, c := range cases {
		if got := FirstDepth(c.want, c.n); got != c.depth {
			t.Errorf("FirstDepth(%d, %d) = %d, want %d", c.want, c.n, got, c.depth)
		}
	}
}

// TestFoundItems: the items Find found, in shard order, skipping the users
// not on the board and the shards Find did not read.
func TestFoundItems(t *testing.T) {
	t.Parallel()
	a, b, c := rank.Item{Score: 1, Member: "a"}, rank.Item{Score: 2, Member: "b"}, rank.Item{Score: 3, Member: "c"}
	cases := []struct {
		name    string
		byShard [][]string
		items   [][]rank.Item
		found   [][]bool
		want    []rank.Item
	}{
		{"none asked", [][]string{nil, nil}, [][]rank.Item{nil, nil}, [][]bool{nil, nil}, nil},
		{"all found", [][]string{{"a"}, {"b", "c"}}, [][]rank.Item{{a}, {b, c}}, [][]bool{{true}, {true, true}}, []rank.Item{a, b, c}},
		{"some missing", [][]string{{"a", "x"}, {"c"}}, [][]rank.Item{{a, {}}, {c}}, [][]bool{{true, false}, {true}}, []rank.Item{a, c}},
		{"shard not read", [][]string{{"a"}, {"b"}}, [][]rank.Item{nil, {b}}, [][]bool{nil, {true}}, []rank.Item{b}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			if got := FoundItems(tc.byShard, tc.items, tc.found); !slices.Equal(got, tc.want) {
				t.Errorf("FoundItems = %v, want %v", got, tc.want)
			}
		})
	}
}

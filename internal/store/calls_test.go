package store

import (
	"testing"

	"github.com/rankgate/rankgate/internal/shard"
)

// The projections of one Write on one board shard share one project.lua
// call, in their order; a sorted set that another kind of write touches in
// the same Write keeps one call per write (their order matters).
func TestScriptCallsGroupProjectionsPerShard(t *testing.T) {
	l := shard.Layout{Prefix: "t"}
	b := func(v string) shard.Board {
		return shard.Board{Family: "f", Period: "p", DimType: "d", DimValue: v}
	}
	ka, kb, kc := l.Keys(b("a"), 0, 1), l.Keys(b("b"), 0, 1), l.Keys(b("c"), 0, 1)
	proj := func(k shard.Keys, m string) Write {
		return Write{Kind: KindProject, Keys: k, Member: m, Version: 1, KeepMetadata: true}
	}
	ws := []Write{
		proj(ka, "u1"), proj(kb, "u1"), proj(ka, "u2"),
		{Kind: KindApply, Keys: kc, Member: "u1", EventID: "e1", Mode: "sum"},
		proj(kc, "u3"), proj(ka, "u3"), proj(kc, "u4"),
		{Kind: KindProject, Keys: kb, Member: "u5", HasCols: true}, // columns.lua: its own call
		proj(kb, "u6"), // kb: touched by a columns write, so not grouped with write 1
	}
	calls := scriptCalls(ws)
	type want struct {
		name string
		ws   []int
		many bool
		n    int // ARGV[1] of a many call
	}
	exp := []want{
		{"project", []int{0, 2, 5}, true, 3},
		{"project", []int{1}, true, 1}, // kb: touched by a columns write too
		{"apply", []int{3}, false, 0},
		{"project", []int{4}, true, 1}, // kc: touched by an apply too
		{"project", []int{6}, true, 1},
		{"columns", []int{7}, false, 0},
		{"project", []int{8}, true, 1},
	}
	if len(calls) != len(exp) {
		t.Fatalf("%d calls, want %d: %+v", len(calls), len(exp), calls)
	}
	for i, c := range calls {
		e := exp[i]
		if c.name != e.name || c.many != e.many || len(c.ws) != len(e.ws) {
			t.Errorf("call %d: %s many=%v writes %v, want %s many=%v writes %v", i, c.name, c.many, c.ws, e.name, e.many, e.ws)
			continue
		}
		for j := range c.ws {
			if c.ws[j] != e.ws[j] {
				t.Errorf("call %d: writes %v, want %v", i, c.ws, e.ws)
			}
		}
		if !c.many {
			continue
		}
		if c.args[0] != e.n || len(c.args) != 1+11*e.n {
			t.Errorf("call %d: ARGV[1] %v and %d args, want %d and %d", i, c.args[0], len(c.args), e.n, 1+11*e.n)
		}
		for j, w := range c.ws {
			if got := c.args[1+11*j]; got != ws[w].Member {
				t.Errorf("call %d block %d: member %v, want %s", i, j, got, ws[w].Member)
			}
		}
		if len(c.keys) != 4 || c.keys[3] != ws[c.ws[0]].Keys.Md {
			t.Errorf("call %d: keys %v, want z, m, meta, md", i, c.keys)
		}
	}
}

package calibrate

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/rankgate/rankgate/internal/gateway"
	"github.com/rankgate/rankgate/internal/shard"
	"github.com/rankgate/rankgate/internal/store"
)

// countingBackend wraps the gateway's Backend: while recording it counts
// the Redis commands each method sends, split into board-shard commands and
// period-key commands, and it always remembers every key a write may have
// created, so that the calibration can remove them.
//
// Commands per method: Write sends one EVALSHA per write (one pipeline);
// ReadShards one per read it carries (the gateway's read fan-outs); Seek,
// Positions, Scores, Count and Card one command each; TakeSeq one
// INCRBY on the period counter. Period (the state re-read once a second per
// gateway), EnsurePeriod and RegisterBoards (once per period and board per
// gateway) are not per-call costs and are not counted.
type countingBackend struct {
	gateway.Backend

	mu   sync.Mutex
	on   bool
	n    counts
	keys map[string]struct{}
}

type counts struct {
	shard, period, calls int
	zcount, zcard        int // top-level ZCOUNT and ZCARD (scripts send them too)
	zrevrange            int // top-level ZREVRANGE: native seeks from a shard's head
}

var _ gateway.Backend = (*countingBackend)(nil)

func newCountingBackend(b gateway.Backend) *countingBackend {
	return &countingBackend{Backend: b, keys: map[string]struct{}{}}
}

func (c *countingBackend) start() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on, c.n = true, counts{}
}

func (c *countingBackend) stop() counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.on = false
	return c.n
}

func (c *countingBackend) add(shardCmds, periodCmds int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.on {
		c.n.shard += shardCmds
		c.n.period += periodCmds
		c.n.calls++
	}
}

func (c *countingBackend) track(keys ...string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, k := range keys {
		c.keys[k] = struct{}{}
	}
}

// Keys returns every key tracked, sorted.
func (c *countingBackend) Keys() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, 0, len(c.keys))
	for k := range c.keys {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func (c *countingBackend) trackPeriod(pk shard.PeriodKeys) {
	c.track(pk.Seq, pk.Meta, pk.Boards, pk.Late)
}

func (c *countingBackend) Write(ctx context.Context, ws []store.Write) []store.WriteResult {
	for _, w := range ws {
		c.track(w.Keys.Z, w.Keys.M, w.Keys.Ev, w.Keys.Meta)
	}
	c.add(len(ws), 0)
	return c.Backend.Write(ctx, ws)
}

// ReadShards sends one command per read (ZREVRANGE, EVALSHA, ZMSCORE, ZCOUNT
// or ZCARD) in one pipeline per node.
func (c *countingBackend) ReadShards(ctx context.Context, reads []store.ShardRead, replica bool, out []store.ShardReply) {
	n := 0
	for _, r := range reads {
		n += r.Commands()
	}
	c.add(n, 0)
	c.mu.Lock()
	if c.on {
		for _, r := range reads {
			switch r.Kind {
			case store.ReadCount:
				c.n.zcount++
			case store.ReadCard:
				c.n.zcard++
			case store.ReadSeek:
				if r.Seek.Native() {
					c.n.zrevrange++
				}
			}
		}
	}
	c.mu.Unlock()
	c.Backend.ReadShards(ctx, reads, replica, out)
}

func (c *countingBackend) Scores(ctx context.Context, key string, members []string, replica bool) ([]int64, []bool, error) {
	c.add(1, 0)
	return c.Backend.Scores(ctx, key, members, replica)
}

func (c *countingBackend) Card(ctx context.Context, key string, replica bool) (int64, error) {
	c.add(1, 0)
	c.mu.Lock()
	if c.on {
		c.n.zcard++
	}
	c.mu.Unlock()
	return c.Backend.Card(ctx, key, replica)
}

func (c *countingBackend) TakeSeq(ctx context.Context, pk shard.PeriodKeys, n int64) (int64, error) {
	c.trackPeriod(pk)
	c.add(0, 1)
	return c.Backend.TakeSeq(ctx, pk, n)
}

func (c *countingBackend) EnsurePeriod(ctx context.Context, pk shard.PeriodKeys, shards map[string]int, rules string, nowMs int64) (store.PeriodState, error) {
	c.trackPeriod(pk)
	return c.Backend.EnsurePeriod(ctx, pk, shards, rules, nowMs)
}

func (c *countingBackend) RegisterBoards(ctx context.Context, pk shard.PeriodKeys, dims []string) error {
	c.trackPeriod(pk)
	return c.Backend.RegisterBoards(ctx, pk, dims)
}

func (c *countingBackend) RecordLate(ctx context.Context, pk shard.PeriodKeys, e store.LateEvent) (string, error) {
	c.trackPeriod(pk)
	return c.Backend.RecordLate(ctx, pk, e)
}

func (c *countingBackend) Snapshot(ctx context.Context, src, dst, marker string, depth int, ttl time.Duration) (int64, error) {
	c.track(dst, marker)
	c.add(1, 0)
	return c.Backend.Snapshot(ctx, src, dst, marker, depth, ttl)
}

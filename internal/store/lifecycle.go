package store

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/internal/shard"
)

// SetStates marks board-shard meta hashes (and a period's meta) with a state
// such as "frozen", in one pipelined round trip. The write scripts read the
// mark atomically, so once a shard is marked no write lands on it; marking a
// shard that has no data yet creates its meta, so it refuses writes too.
func (s *Store) SetStates(ctx context.Context, metas []string, state string) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	pipe := s.rw.Pipeline()
	for _, m := range metas {
		pipe.HSet(ctx, m, "state", state, "state_at", time.Now().UnixMilli())
	}
	cmds, err := pipe.Exec(ctx)
	if err != nil {
		for i, c := range cmds {
			if c.Err() != nil {
				return s.fail("state", fmt.Errorf("set state on %s: %w", metas[i], c.Err()))
			}
		}
		return s.fail("state", err)
	}
	return nil
}

// Expire sets a TTL on keys (PEXPIRE, pipelined): archive lets Redis free a
// period's keys itself, with no DEL of big keys on the request path.
func (s *Store) Expire(ctx context.Context, keys []string, ttl time.Duration) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	pipe := s.rw.Pipeline()
	for _, k := range keys {
		pipe.PExpire(ctx, k, ttl)
	}
	_, err := pipe.Exec(ctx)
	return s.fail("expire", err)
}

// RebuildEntry is one member of a rebuilt shard.
type RebuildEntry struct {
	Member  string // the user id
	Score   int64
	Version int64
	// Prefix: the stored member's column prefix (a family with sort
	// columns; the sorted-set member is Prefix + Member, and the cols hash
	// maps Member → Prefix). Metadata: the entry's metadata ("" : none).
	Prefix   string
	Metadata string
}

// rebuildBatch bounds one pipelined batch of a rebuild.
const rebuildBatch = 500

// Rebuild replaces a board shard with entries: it fills fresh keys beside the
// live ones (same hash tag) in batches, then swaps them in with RENAME inside
// the slot — sorted set, versions, column prefixes and metadata. It returns
// the members now on the shard. With feedLen > 0 (a family with a read
// index) the swap appends a reset entry to the shard's change feed, so every
// follower reloads the shard.
func (s *Store) Rebuild(ctx context.Context, k shard.Keys, entries []RebuildEntry, feedLen int64) (int64, error) {
	freshZ, freshM, freshCols, freshMd := k.RebuildZ(), k.RebuildM(), k.RebuildCols(), k.RebuildMd()
	pipeCtx, cancel := context.WithTimeout(ctx, s.timeout*10)
	defer cancel()
	if err := s.rw.Unlink(pipeCtx, freshZ, freshM, freshCols, freshMd).Err(); err != nil {
		return 0, s.fail("rebuild", err)
	}
	for start := 0; start < len(entries); start += rebuildBatch {
		batch := entries[start:min(start+rebuildBatch, len(entries))]
		zs := make([]redis.Z, len(batch))
		vs := make([]any, 0, 2*len(batch))
		var cs, ms []any
		for i, e := range batch {
			zs[i] = redis.Z{Score: float64(e.Score), Member: e.Prefix + e.Member}
			vs = append(vs, e.Member, strconv.FormatInt(e.Version, 10))
			if e.Prefix != "" {
				cs = append(cs, e.Member, e.Prefix)
			}
			if e.Metadata != "" {
				ms = append(ms, e.Member, e.Metadata)
			}
		}
		pipe := s.rw.Pipeline()
		pipe.ZAdd(pipeCtx, freshZ, zs...)
		pipe.HSet(pipeCtx, freshM, vs...)
		if len(cs) > 0 {
			pipe.HSet(pipeCtx, freshCols, cs...)
		}
		if len(ms) > 0 {
			pipe.HSet(pipeCtx, freshMd, ms...)
		}
		if _, err := pipe.Exec(pipeCtx); err != nil {
			return 0, s.fail("rebuild", fmt.Errorf("fill %s: %w", freshZ, err))
		}
	}
	keys, args := Write{Keys: k, FeedLen: feedLen}.withFeed([]string{freshZ, k.Z, freshM, k.M, freshCols, k.Cols, freshMd, k.Md}, nil)
	n, err := swapScript.Run(pipeCtx, s.rw, keys, args...).Int64()
	if err != nil {
		s.m.scriptErrors.WithLabelValues("swap").Inc()
		return 0, s.fail("rebuild", fmt.Errorf("swap %s: %w", k.Z, err))
	}
	return n, nil
}

// ShardMembers returns up to count members of one shard with their scores,
// from a ZSCAN cursor (0 to start); next is 0 at the end.
func (s *Store) ShardMembers(ctx context.Context, key string, cursor uint64, count int64) (members []string, scores []int64, next uint64, err error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	kv, next, err := s.rw.ZScan(ctx, key, cursor, "", count).Result()
	if err != nil {
		return nil, nil, 0, s.fail("zscan", err)
	}
	for i := 0; i+1 < len(kv); i += 2 {
		sc, err := ParseScore(kv[i+1])
		if err != nil {
			return nil, nil, 0, err
		}
		members = append(members, kv[i])
		scores = append(scores, sc)
	}
	return members, scores, next, nil
}

// Derive computes one derived board shard in its slot: dst = ZUNIONSTORE of
// the input shards' sorted sets with integer weights and an aggregate (sum,
// min or max). Every key shares one hash tag (a key group), so it is one
// atomic command on one node. It returns the members of dst. With feedLen >
// 0 (a derived family with a read index) it runs derive.lua instead, which
// also appends a reset entry to dst's change feed in the same call.
func (s *Store) Derive(ctx context.Context, dst string, inputs []string, weights []int64, aggregate string, feedLen int64) (int64, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	if feedLen > 0 {
		keys := append(append([]string{dst}, inputs...), shard.FeedKey(dst))
		args := make([]any, 0, 3+len(weights))
		args = append(args, aggregate)
		for _, w := range weights {
			args = append(args, w)
		}
		args = append(args, "~feed", feedLen)
		n, err := deriveScript.Run(ctx, s.rw, keys, args...).Int64()
		if err != nil {
			s.m.scriptErrors.WithLabelValues("derive").Inc()
		}
		return n, s.fail("derive", err)
	}
	w := make([]float64, len(weights))
	for i, x := range weights {
		w[i] = float64(x)
	}
	n, err := s.rw.ZUnionStore(ctx, dst, &redis.ZStore{Keys: inputs, Weights: w, Aggregate: aggregate}).Result()
	return n, s.fail("derive", err)
}

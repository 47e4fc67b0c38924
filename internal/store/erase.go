package store

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/internal/shard"
)

// Erase is one erase.lua call: Member leaves the board shard whose sorted
// set is Z, with every per-member field of the shard.
type Erase struct {
	Z      string
	Member string
	// FeedLen > 0: the shard keeps a change feed (a family with a read
	// index); the removal is appended to it.
	FeedLen int64
}

// EraseResult is an erase.lua answer.
type EraseResult struct {
	Removed bool   // the member was on the shard
	Before  *int64 // its stored score there
	Err     error
}

// EraseKeys are an Erase's KEYS (for the one-slot test).
func EraseKeys(e Erase) []string {
	k := shard.ShardKeys(e.Z)
	keys := []string{k.Z, k.Ev, k.M, k.Cols, k.Md, shard.JoinsKey(k.Z), shard.AttemptsKey(k.Z)}
	if e.FeedLen > 0 {
		keys = append(keys, k.Feed)
	}
	return keys
}

// EraseMember runs the erasures in one pipelined round trip (one per node);
// each answer carries its own error.
func (s *Store) EraseMember(ctx context.Context, es []Erase) []EraseResult {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	out := make([]EraseResult, len(es))
	cmds := s.evalPipelined(ctx, len(es), func(i int) (*redis.Script, []string, []any) {
		args := []any{es[i].Member}
		if es[i].FeedLen > 0 {
			args = append(args, "~feed", es[i].FeedLen)
		}
		return eraseScript, EraseKeys(es[i]), args
	}, nil)
	for i, cmd := range cmds {
		if err := cmd.Err(); err != nil {
			s.m.scriptErrors.WithLabelValues("erase").Inc()
			out[i].Err = s.fail("erase", fmt.Errorf("erase script on %s: %w", es[i].Z, err))
			continue
		}
		arr, ok := cmd.Val().([]any)
		if !ok || len(arr) != 2 {
			out[i].Err = fmt.Errorf("erase script on %s: unexpected reply %v", es[i].Z, cmd.Val())
			continue
		}
		n, _ := arr[0].(int64)
		out[i].Removed = n == 1
		if str, _ := arr[1].(string); str != "" {
			v, err := ParseScore(str)
			if err != nil {
				out[i].Err = fmt.Errorf("erase script on %s: %w", es[i].Z, err)
				continue
			}
			out[i].Before = &v
		}
	}
	return out
}

// TakeIndex starts an erasure of the member whose board index is index: in
// one script under the member's tag it moves the index's elements to the
// erasures' work set (shard.IndexWork) and answers every element of that
// set; then it waits the store's IndexWindow, so that the script of every
// write whose SADD it took has run before the erasure erases (see
// Write.Index). The erasure removes each element from the work set once
// erased there (ForgetBoards); what it does not get to stays for the next.
func (s *Store) TakeIndex(ctx context.Context, index string) ([]string, error) {
	tctx, cancel := s.deadline(ctx)
	zs, err := takeIndexScript.Run(tctx, s.rw, []string{index, shard.IndexWork(index)}).StringSlice()
	cancel()
	if err != nil {
		s.m.scriptErrors.WithLabelValues("take_index").Inc()
		return nil, s.fail("take_index", fmt.Errorf("member board index %s: %w", index, err))
	}
	t := time.NewTimer(s.indexWindow)
	defer t.Stop()
	select {
	case <-t.C:
		return zs, nil
	case <-ctx.Done():
		return nil, context.Cause(ctx)
	}
}

// MemberBoards reads a member's board index (shard.Layout.MemberBoards)
// from the primary, with the elements of its erasures' work set
// (shard.IndexWork) that are not erased yet: one pipeline, one slot.
func (s *Store) MemberBoards(ctx context.Context, key string) ([]string, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	pipe := s.rw.Pipeline()
	idx, work := pipe.SMembers(ctx, key), pipe.SMembers(ctx, shard.IndexWork(key))
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, s.fail("smembers", fmt.Errorf("member board index %s: %w", key, err))
	}
	v, w := idx.Val(), work.Val()
	if len(w) == 0 {
		return v, nil
	}
	seen := make(map[string]bool, len(v))
	for _, z := range v {
		seen[z] = true
	}
	for _, z := range w {
		if !seen[z] {
			v = append(v, z)
		}
	}
	return v, nil
}

// anys copies strings into a slice of any (go-redis's variadic arguments).
func anys(zs []string) []any {
	members := make([]any, len(zs))
	for i, z := range zs {
		members[i] = z
	}
	return members
}

// IndexMemberBoards adds board shards (their sorted sets' keys) to members'
// board indexes (index key → sorted-set keys), in one pipeline.
func (s *Store) IndexMemberBoards(ctx context.Context, idx map[string][]string) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	pipe := s.rw.Pipeline()
	for key, zs := range idx {
		if len(zs) > 0 {
			pipe.SAdd(ctx, key, anys(zs)...)
		}
	}
	if pipe.Len() == 0 {
		return nil
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return s.fail("sadd", fmt.Errorf("member board indexes of %d members: %w", len(idx), err))
	}
	return nil
}

// HashesOf reads whole hashes (a member's league hashes), in one pipeline;
// a missing hash reads empty.
func (s *Store) HashesOf(ctx context.Context, keys []string) ([]map[string]string, error) {
	if len(keys) == 0 {
		return nil, nil
	}
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	pipe := s.rw.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.HGetAll(ctx, k)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return nil, s.fail("hgetall", fmt.Errorf("reading %d hashes: %w", len(keys), err))
	}
	out := make([]map[string]string, len(keys))
	for i, c := range cmds {
		out[i] = c.Val()
	}
	return out, nil
}

// ForgetField removes field from each of hashes (a member's entries in the
// league placement and moves hashes), in one pipeline. Idempotent.
func (s *Store) ForgetField(ctx context.Context, hashes []string, field string) error {
	return execEach(ctx, s, "hdel", "removing "+field+" from hashes", hashes, func(ctx context.Context, p redis.Pipeliner, h string) {
		p.HDel(ctx, h, field)
	})
}

// execEach queues one write per item (queue) in one pipelined round trip
// (one per node); any failure fails the whole (op: the failure's label,
// what: its message). No items, no round trip.
func execEach[T any](ctx context.Context, s *Store, op, what string, items []T, queue func(context.Context, redis.Pipeliner, T)) error {
	if len(items) == 0 {
		return nil
	}
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	pipe := s.rw.Pipeline()
	for _, it := range items {
		queue(ctx, pipe, it)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return s.fail(op, fmt.Errorf("%s (%d): %w", what, len(items), err))
	}
	return nil
}

// ForgetBoards removes board shards from a member's board index (after
// they were erased there).
func (s *Store) ForgetBoards(ctx context.Context, key string, zs []string) error {
	if len(zs) == 0 {
		return nil
	}
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	if err := s.rw.SRem(ctx, key, anys(zs)...).Err(); err != nil {
		return s.fail("srem", fmt.Errorf("member board index %s: %w", key, err))
	}
	return nil
}

// DeleteMemberKeys deletes keys of one member's slot (their profile, rate
// windows, board index: one tag, so one DEL) and answers whether the first
// existed.
func (s *Store) DeleteMemberKeys(ctx context.Context, keys []string) (bool, error) {
	if len(keys) == 0 {
		return false, nil
	}
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	pipe := s.rw.Pipeline()
	first := pipe.Exists(ctx, keys[0])
	pipe.Del(ctx, keys...)
	if _, err := pipe.Exec(ctx); err != nil {
		return false, s.fail("del", fmt.Errorf("member keys: %w", err))
	}
	return first.Val() == 1, nil
}

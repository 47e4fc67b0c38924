package store

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/internal/shard"
)

// leagueChunk bounds the commands of one pipeline of the league's bulk
// reads and writes (each pipeline has its own deadline).
const leagueChunk = 2000

// Place places member in the open cohort of a league tier (place.lua):
// n is its cohort's number, fresh whether it was placed by this call.
func (s *Store) Place(ctx context.Context, pk shard.PlacementKeys, member string, size int) (n int64, fresh bool, err error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	v, err := placeScript.Run(ctx, s.rw, []string{pk.Placed, pk.Cohorts}, member, size).Int64Slice()
	if err != nil {
		return 0, false, s.fail("place", fmt.Errorf("placing %s: %w", member, err))
	}
	if len(v) != 2 || v[1] < 1 {
		return 0, false, fmt.Errorf("place: unexpected reply %v", v)
	}
	return v[1], v[0] == 1, nil
}

// PlacedIn returns the cohort number member was placed in within one tier of
// a league period (ok false: not placed there).
func (s *Store) PlacedIn(ctx context.Context, pk shard.PlacementKeys, member string) (int64, bool, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	n, err := s.rw.HGet(ctx, pk.Placed, member).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, s.fail("league", fmt.Errorf("reading the placement of %s: %w", member, err))
	}
	return n, true, nil
}

// LeagueState is what a member's league hash holds for one period: their
// tier (empty: none yet) and their cohort of the period (empty: not placed).
type LeagueState struct {
	Tier   string
	Cohort string
}

// LeagueMembers reads the tier and the cohort of period of every member
// league hash in keys (shard.Layout LeagueMember), in one pipeline.
func (s *Store) LeagueMembers(ctx context.Context, keys []string, period string) ([]LeagueState, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	pipe := s.rw.Pipeline()
	cmds := make([]*redis.SliceCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.HMGet(ctx, k, "tier", "p:"+period)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, s.fail("league", fmt.Errorf("reading league members: %w", err))
	}
	out := make([]LeagueState, len(keys))
	for i, c := range cmds {
		v := c.Val()
		if len(v) == 2 {
			out[i].Tier, _ = v[0].(string)
			out[i].Cohort, _ = v[1].(string)
		}
	}
	return out, nil
}

// SetLeagueCohort records a member's cohort of period in their league hash
// (idempotent: the placement is the truth, this is its copy in the member's
// slot).
func (s *Store) SetLeagueCohort(ctx context.Context, key, period, cohort string) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	if err := s.rw.HSet(ctx, key, "p:"+period, cohort).Err(); err != nil {
		return s.fail("league", fmt.Errorf("recording the cohort of %s: %w", key, err))
	}
	return nil
}

// CohortSizes returns, per tier's placement keys, the members placed in each
// cohort (index n−1), in one pipeline.
func (s *Store) CohortSizes(ctx context.Context, pks []shard.PlacementKeys) ([][]int64, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	pipe := s.rw.Pipeline()
	cmds := make([]*redis.MapStringStringCmd, len(pks))
	for i, pk := range pks {
		cmds[i] = pipe.HGetAll(ctx, pk.Cohorts)
	}
	if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
		return nil, s.fail("league", fmt.Errorf("reading cohorts: %w", err))
	}
	out := make([][]int64, len(pks))
	for i, c := range cmds {
		h := c.Val()
		open, _ := strconv.ParseInt(h["open"], 10, 64)
		sizes := make([]int64, 0, open)
		for n := int64(1); n <= open; n++ {
			v, _ := strconv.ParseInt(h[strconv.FormatInt(n, 10)], 10, 64)
			sizes = append(sizes, v)
		}
		out[i] = sizes
	}
	return out, nil
}

// BoardMembers returns the members of each sorted set in keys in board order
// (ZREVRANGE: score, then member, descending), in pipelines of leagueChunk.
func (s *Store) BoardMembers(ctx context.Context, keys []string) ([][]string, error) {
	out := make([][]string, len(keys))
	for lo := 0; lo < len(keys); lo += leagueChunk {
		hi := min(lo+leagueChunk, len(keys))
		if err := func() error {
			ctx, cancel := context.WithTimeout(ctx, s.timeout)
			defer cancel()
			pipe := s.rw.Pipeline()
			cmds := make([]*redis.StringSliceCmd, hi-lo)
			for i := lo; i < hi; i++ {
				cmds[i-lo] = pipe.ZRevRange(ctx, keys[i], 0, -1)
			}
			if _, err := pipe.Exec(ctx); err != nil && !errors.Is(err, redis.Nil) {
				return s.fail("league", fmt.Errorf("reading cohort boards: %w", err))
			}
			for i, c := range cmds {
				out[lo+i] = c.Val()
			}
			return nil
		}(); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// TierWrite sets a member's tier: Key is their league hash.
type TierWrite struct {
	Key  string
	Tier string
}

// RecordMoves writes a league period's moves (member → JSON) into its moves
// hash and every moved member's new tier, in pipelines of leagueChunk, then
// marks the moves done. Every write is a plain set: running it again writes
// the same values.
func (s *Store) RecordMoves(ctx context.Context, mk shard.MovesKeys, members []string, moves [][]byte, tiers []TierWrite) error {
	if len(members) != len(moves) {
		return fmt.Errorf("store: %d members, %d moves", len(members), len(moves))
	}
	run := func(n int, queue func(ctx context.Context, p redis.Pipeliner, lo, hi int)) error {
		for lo := 0; lo < n; lo += leagueChunk {
			hi := min(lo+leagueChunk, n)
			ctx, cancel := context.WithTimeout(ctx, s.timeout)
			pipe := s.rw.Pipeline()
			queue(ctx, pipe, lo, hi)
			_, err := pipe.Exec(ctx)
			cancel()
			if err != nil {
				return s.fail("league", fmt.Errorf("recording moves of %s: %w", mk.Moves, err))
			}
		}
		return nil
	}
	if err := run(len(members), func(ctx context.Context, p redis.Pipeliner, lo, hi int) {
		args := make([]any, 0, 2*(hi-lo))
		for i := lo; i < hi; i++ {
			args = append(args, members[i], moves[i])
		}
		p.HSet(ctx, mk.Moves, args...)
	}); err != nil {
		return err
	}
	if err := run(len(tiers), func(ctx context.Context, p redis.Pipeliner, lo, hi int) {
		for _, w := range tiers[lo:hi] {
			p.HSet(ctx, w.Key, "tier", w.Tier)
		}
	}); err != nil {
		return err
	}
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	if err := s.rw.Set(ctx, mk.Done, len(members), 0).Err(); err != nil {
		return s.fail("league", fmt.Errorf("marking the moves of %s done: %w", mk.Moves, err))
	}
	return nil
}

// MovesDone reports whether a league period's moves are recorded.
func (s *Store) MovesDone(ctx context.Context, mk shard.MovesKeys) (bool, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	n, err := s.rw.Exists(ctx, mk.Done).Result()
	if err != nil {
		return false, s.fail("league", fmt.Errorf("reading %s: %w", mk.Done, err))
	}
	return n == 1, nil
}

// Moves returns a league period's recorded moves (member → JSON).
func (s *Store) Moves(ctx context.Context, mk shard.MovesKeys) (map[string]string, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	v, err := s.rw.HGetAll(ctx, mk.Moves).Result()
	if err != nil {
		return nil, s.fail("league", fmt.Errorf("reading the moves %s: %w", mk.Moves, err))
	}
	return v, nil
}

package store

import (
	"context"
	"errors"
	"fmt"

	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/internal/shard"
)

// PutBan stores a member's ban (val: its JSON) and moves the bans' version
// on, in one MULTI (both keys share the tag {bans}); it returns the version.
func (s *Store) PutBan(ctx context.Context, k shard.BanKeys, member string, val []byte) (int64, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	var v *redis.IntCmd
	_, err := s.rw.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.HSet(ctx, k.All, member, val)
		v = p.IncrBy(ctx, k.Version, 1)
		return nil
	})
	if err != nil {
		return 0, s.fail("ban", fmt.Errorf("storing the ban of %s: %w", member, err))
	}
	return v.Val(), nil
}

// DeleteBan lifts a member's ban in one script call and returns the lifted
// ban's JSON; false when there was none. The version moves on only when a ban
// went.
func (s *Store) DeleteBan(ctx context.Context, k shard.BanKeys, member string) ([]byte, bool, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	v, err := unbanScript.Run(ctx, s.rw, []string{k.All, k.Version}, member).Text()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, s.fail("ban", fmt.Errorf("lifting the ban of %s: %w", member, err))
	}
	return []byte(v), true, nil
}

// Bans returns every ban (member → JSON) and the version they belong to,
// read in one MULTI from the primary.
func (s *Store) Bans(ctx context.Context, k shard.BanKeys) (map[string]string, int64, error) {
	return s.versionedHash(ctx, k.Version, k.All, "ban", "the bans")
}

// BanVersion returns the bans' version (0 before the first ban): what every
// gateway polls to learn that its copy of the bans is stale.
func (s *Store) BanVersion(ctx context.Context, k shard.BanKeys) (int64, error) {
	return s.version(ctx, k.Version, "ban", "the bans")
}

// versionedHash reads a registry kept as a hash beside a version counter
// (bans, tournaments): every field and the version, in one MULTI from the
// primary. A missing version is 0. op labels the failure; what names the
// registry in its error.
func (s *Store) versionedHash(ctx context.Context, versionKey, hashKey, op, what string) (map[string]string, int64, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	var all *redis.MapStringStringCmd
	var v *redis.StringCmd
	_, err := s.rw.TxPipelined(ctx, func(p redis.Pipeliner) error {
		v = p.Get(ctx, versionKey)
		all = p.HGetAll(ctx, hashKey)
		return nil
	})
	if err != nil && !errors.Is(err, redis.Nil) {
		return nil, 0, s.fail(op, fmt.Errorf("reading %s: %w", what, err))
	}
	ver, _ := v.Int64() // missing: 0
	return all.Val(), ver, nil
}

// version reads a registry's version counter (0 while it is missing).
func (s *Store) version(ctx context.Context, versionKey, op, what string) (int64, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	v, err := s.rw.Get(ctx, versionKey).Int64()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	if err != nil {
		return 0, s.fail(op, fmt.Errorf("reading %s' version: %w", what, err))
	}
	return v, nil
}

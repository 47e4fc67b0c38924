package store

import (
	"context"
	"errors"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/internal/shard"
)

// SharedGet reads a shared cache copy (GET); ok is false when absent.
func (s *Store) SharedGet(ctx context.Context, key string) ([]byte, bool, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	b, err := s.rw.Get(ctx, key).Bytes()
	if errors.Is(err, redis.Nil) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, s.fail("shared_get", err)
	}
	return b, true, nil
}

// SharedSet stores a shared cache copy for ttl (SET PX).
func (s *Store) SharedSet(ctx context.Context, key string, val []byte, ttl time.Duration) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	return s.fail("shared_set", s.rw.Set(ctx, key, val, ttl).Err())
}

// SharedLease takes a recompute lease (SET NX PX): true when this caller
// holds it now, false when another does.
func (s *Store) SharedLease(ctx context.Context, key, token string, ttl time.Duration) (bool, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	err := s.rw.SetArgs(ctx, key, token, redis.SetArgs{Mode: "NX", TTL: ttl}).Err()
	if errors.Is(err, redis.Nil) {
		return false, nil
	}
	if err != nil {
		return false, s.fail("shared_lease", err)
	}
	return true, nil
}

// SharedPurge drops every shared cache copy and lease whose key starts with
// prefix (shard.Layout.SharedCachePrefix: one board's, all in the slot of
// its hash tag) and returns how many it dropped. On a cluster it lists the
// slot's keys on the master that serves it (CLUSTER GETKEYSINSLOT: the
// board shard's own keys and its cached queries, never the whole node); on
// one node it SCANs for the prefix.
func (s *Store) SharedPurge(ctx context.Context, prefix string) (int64, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	var keys []string
	if cc, ok := s.rw.(*redis.ClusterClient); ok {
		node, err := cc.MasterForKey(ctx, prefix)
		if err != nil {
			return 0, s.fail("shared_purge", err)
		}
		all, err := node.ClusterGetKeysInSlot(ctx, shard.Slot(prefix), purgeSlotKeys).Result()
		if err != nil {
			return 0, s.fail("shared_purge", err)
		}
		for _, k := range all {
			if strings.HasPrefix(k, prefix) {
				keys = append(keys, k)
			}
		}
	} else {
		iter := s.rw.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		if err := iter.Err(); err != nil {
			return 0, s.fail("shared_purge", err)
		}
	}
	if len(keys) == 0 {
		return 0, nil
	}
	n, err := s.rw.Unlink(ctx, keys...).Result()
	return n, s.fail("shared_purge", err)
}

// purgeSlotKeys bounds the keys SharedPurge lists in one slot.
const purgeSlotKeys = 100000

// SharedRelease drops a recompute lease (DEL) once the new copy is stored.
func (s *Store) SharedRelease(ctx context.Context, key string) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	return s.fail("shared_lease", s.rw.Del(ctx, key).Err())
}

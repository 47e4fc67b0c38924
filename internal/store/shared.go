package store

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"
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

// SharedRelease drops a recompute lease (DEL) once the new copy is stored.
func (s *Store) SharedRelease(ctx context.Context, key string) error {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	return s.fail("shared_lease", s.rw.Del(ctx, key).Err())
}

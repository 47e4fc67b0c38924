package store

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/redis/go-redis/v9"
)

// Snapshot copies the top depth entries of a shard (src) into dst with a TTL
// and sets marker; it returns the number copied.
func (s *Store) Snapshot(ctx context.Context, src, dst, marker string, depth int, ttl time.Duration) (int64, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	n, err := snapshotScript.Run(ctx, s.rw, []string{src, dst, marker}, depth, ttl.Milliseconds()).Int64()
	if err != nil {
		s.m.scriptErrors.WithLabelValues("snapshot").Inc()
	}
	return n, s.fail("snapshot", err)
}

// MemoryUsage returns MEMORY USAGE of a key (0 when absent).
func (s *Store) MemoryUsage(ctx context.Context, key string) (int64, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	n, err := s.rw.MemoryUsage(ctx, key).Result()
	if errors.Is(err, redis.Nil) {
		return 0, nil
	}
	return n, s.fail("memory", err)
}

// SlotRange is a range of slots served by one master.
type SlotRange struct {
	Start, End int
	Master     string
	Replicas   []string
}

// Slots returns which master serves which slots (one range covering all for
// a standalone node), sorted by start.
func (s *Store) Slots(ctx context.Context) ([]SlotRange, error) {
	ctx, cancel := s.deadline(ctx)
	defer cancel()
	cc, ok := s.rw.(*redis.ClusterClient)
	if !ok {
		addr := ""
		if c, ok := s.rw.(*redis.Client); ok {
			addr = c.Options().Addr
		}
		return []SlotRange{{Start: 0, End: 16383, Master: addr}}, nil
	}
	//lint:ignore SA1019 CLUSTER SLOTS is what go-redis's cluster client runs itself (so the ACL grants it); CLUSTER SHARDS would need one more grant.
	slots, err := cc.ClusterSlots(ctx).Result()
	if err != nil {
		return nil, s.fail("cluster_slots", fmt.Errorf("cluster slots: %w", err))
	}
	out := make([]SlotRange, 0, len(slots))
	for _, sl := range slots {
		r := SlotRange{Start: sl.Start, End: sl.End}
		for i, n := range sl.Nodes {
			if i == 0 {
				r.Master = n.Addr
			} else {
				r.Replicas = append(r.Replicas, n.Addr)
			}
		}
		out = append(out, r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Start < out[j].Start })
	return out, nil
}

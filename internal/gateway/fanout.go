package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/rankgate/rankgate/internal/rank"
	"github.com/rankgate/rankgate/internal/readplan"
	"github.com/rankgate/rankgate/internal/store"
)

// fanoutObserver feeds the gateway's fan-out metrics from internal/readplan.
type fanoutObserver struct{ m *metrics }

var _ readplan.Observer = fanoutObserver{}

func (o fanoutObserver) Fanout(op string, shards int) {
	o.m.fanoutWidth.WithLabelValues(op).Observe(float64(shards))
}

func (o fanoutObserver) RoundTrip(op string, d time.Duration) {
	o.m.nodeDuration.WithLabelValues(op).Observe(d.Seconds())
}

func (o fanoutObserver) ShardError(op string) { o.m.shardErrors.WithLabelValues(op).Inc() }

func (o fanoutObserver) Fetched(op string, n int) { o.m.fetched.WithLabelValues(op).Add(float64(n)) }

// fanout runs fn once per shard 0..n-1 in parallel, each under its own
// deadline, and writes each answer into a slice indexed by shard. The first
// error cancels the rest and fails the call (503 unless it carries a code);
// errors name their shard. Reads go through internal/readplan (one pipeline
// per node, partial answers); this per-shard fan-out is left for the calls
// that are one script per shard anyway (snapshot copies, derived boards,
// layout cards) and need every shard.
func fanout[T any](ctx context.Context, s *Service, op string, n int,
	fn func(ctx context.Context, i int) (T, error)) ([]T, error) {
	s.m.fanoutWidth.WithLabelValues(op).Observe(float64(n))
	res := make([]T, n)
	hist := s.m.nodeDuration.WithLabelValues(op)
	g, gctx := errgroup.WithContext(ctx)
	for i := 0; i < n; i++ {
		g.Go(func() error {
			cctx, cancel := context.WithTimeout(gctx, s.timeout)
			defer cancel()
			start := time.Now()
			v, err := fn(cctx, i)
			hist.Observe(time.Since(start).Seconds())
			if err != nil {
				if gctx.Err() == nil && !errors.Is(err, store.ErrSnapshotExpired) {
					s.m.shardErrors.WithLabelValues(op).Inc()
				}
				return fmt.Errorf("%s from shard %d: %w", op, i, err)
			}
			res[i] = v
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, readplan.Unavailable(err)
	}
	return res, nil
}

// writeUnavailable is rank.Unavailable for a failed write, saying so plainly
// when the write ran but did not reach redis.wait_replicas replicas in time
// (a retry with the same event id is a replay), and when Redis refused it for
// want of memory (maxmemory reached under noeviction), which no retry fixes
// until an operator acts.
func writeUnavailable(err error, format string, args ...any) error {
	if errors.Is(err, store.ErrNotReplicated) {
		return rank.Unavailable(err, "not replicated yet; retrying with the same event id is safe")
	}
	if errors.Is(err, store.ErrOOM) {
		return rank.Unavailable(err, "Redis is out of memory (maxmemory reached, noeviction): writes are refused until memory is freed or added")
	}
	return rank.Unavailable(err, format, args...)
}

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

// fanout runs fn once per shard 0..n-1; see fanoutShards. Reads go through
// internal/readplan (one pipeline per node); this per-shard fan-out is left
// for the calls that are one script per shard anyway (snapshot copies,
// layout cards).
func fanout[T any](ctx context.Context, s *Service, op string, n int, allowPartial bool,
	fn func(ctx context.Context, i int) (T, error)) (res []T, ok []bool, missing []int, err error) {
	shards := make([]int, n)
	for i := range shards {
		shards[i] = i
	}
	return fanoutShards(ctx, s, op, shards, allowPartial, fn)
}

// fanoutShards runs fn once for each listed shard in parallel, each under its
// own deadline, and writes each answer into a slice indexed like shards
// (fn receives the real shard number). By default the first error cancels the
// rest and fails the whole read (exact ranks need every shard); errors name
// their shard. With allowPartial, failures are collected instead: ok[j] says
// which answered and missing lists the real numbers of the others; if none
// answered it fails.
func fanoutShards[T any](ctx context.Context, s *Service, op string, shards []int, allowPartial bool,
	fn func(ctx context.Context, i int) (T, error)) (res []T, ok []bool, missing []int, err error) {
	n := len(shards)
	s.m.fanoutWidth.WithLabelValues(op).Observe(float64(n))
	res = make([]T, n)
	ok = make([]bool, n)
	errs := make([]error, n)
	hist := s.m.nodeDuration.WithLabelValues(op)
	call := func(ctx context.Context, j int) error {
		cctx, cancel := context.WithTimeout(ctx, s.timeout)
		defer cancel()
		start := time.Now()
		v, err := fn(cctx, shards[j])
		hist.Observe(time.Since(start).Seconds())
		if err != nil {
			if ctx.Err() == nil && !errors.Is(err, store.ErrSnapshotExpired) {
				s.m.shardErrors.WithLabelValues(op).Inc()
			}
			errs[j] = fmt.Errorf("%s from shard %d: %w", op, shards[j], err)
			return errs[j]
		}
		res[j], ok[j] = v, true
		return nil
	}
	if !allowPartial {
		if n == 1 {
			if err := call(ctx, 0); err != nil {
				return nil, nil, nil, unavailable(err)
			}
			return res, ok, nil, nil
		}
		g, gctx := errgroup.WithContext(ctx)
		for j := 0; j < n; j++ {
			g.Go(func() error { return call(gctx, j) })
		}
		if err := g.Wait(); err != nil {
			return nil, nil, nil, unavailable(err)
		}
		return res, ok, nil, nil
	}
	var g errgroup.Group
	for j := 0; j < n; j++ {
		g.Go(func() error { _ = call(ctx, j); return nil })
	}
	_ = g.Wait()
	for j := range ok {
		if !ok[j] {
			missing = append(missing, shards[j])
		}
	}
	if len(missing) == n {
		return nil, nil, nil, unavailable(errors.Join(errs...))
	}
	return res, ok, missing, nil
}

// unavailable turns a backend failure into a 503 unless it already carries a
// code (or is the caller's own cancellation).
func unavailable(err error) error { return readplan.Unavailable(err) }

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

package gateway

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/rankgate/rankgate/internal/rank"
)

// fanout runs fn once per shard in parallel, each under its own deadline, and
// writes each answer into a slice indexed by shard. By default the first
// error cancels the rest and fails the whole read (exact ranks need every
// shard). With allowPartial, failures are collected instead: ok[i] says which
// shards answered and missing lists the others; if none answered it fails.
func fanout[T any](ctx context.Context, s *Service, op string, n int, allowPartial bool,
	fn func(ctx context.Context, i int) (T, error)) (res []T, ok []bool, missing []int, err error) {
	s.m.fanoutWidth.WithLabelValues(op).Observe(float64(n))
	res = make([]T, n)
	ok = make([]bool, n)
	errs := make([]error, n)
	hist := s.m.shardDuration.WithLabelValues(op)
	call := func(ctx context.Context, i int) error {
		cctx, cancel := context.WithTimeout(ctx, s.timeout)
		defer cancel()
		start := time.Now()
		v, err := fn(cctx, i)
		hist.Observe(time.Since(start).Seconds())
		if err != nil {
			s.m.shardErrors.WithLabelValues(op).Inc()
			errs[i] = fmt.Errorf("%s from shard %d: %w", op, i, err)
			return errs[i]
		}
		res[i], ok[i] = v, true
		return nil
	}
	if n == 1 {
		if err := call(ctx, 0); err != nil {
			return nil, nil, nil, unavailable(err)
		}
		return res, ok, nil, nil
	}
	if !allowPartial {
		g, gctx := errgroup.WithContext(ctx)
		for i := 0; i < n; i++ {
			g.Go(func() error { return call(gctx, i) })
		}
		if err := g.Wait(); err != nil {
			return nil, nil, nil, unavailable(err)
		}
		return res, ok, nil, nil
	}
	var g errgroup.Group
	for i := 0; i < n; i++ {
		g.Go(func() error { _ = call(ctx, i); return nil })
	}
	_ = g.Wait()
	for i := range ok {
		if !ok[i] {
			missing = append(missing, i)
		}
	}
	if len(missing) == n {
		return nil, nil, nil, unavailable(errors.Join(errs...))
	}
	if len(missing) > 0 {
		s.m.partial.WithLabelValues(op).Inc()
	}
	return res, ok, missing, nil
}

// unavailable turns a backend failure into a 503 unless it already carries a
// code (or is the caller's own cancellation).
func unavailable(err error) error {
	var re *rank.Error
	if errors.As(err, &re) {
		return err
	}
	return rank.Unavailable(err, "a shard did not answer; retry")
}

package main

import (
	"context"
	"sync"
	"time"

	vegeta "github.com/tsenart/vegeta/v12/lib"

	"github.com/rankgate/rankgate/internal/workload"
)

// Executor runs one operation synchronously (closed loop, and the baseline's
// open loop).
type Executor interface {
	Do(ctx context.Context, op *Op) Outcome
}

// itemsOf is what an operation counts as: events for writes, 1 for reads.
func itemsOf(op *Op) int {
	if op.Kind == workload.OpEvent || op.Kind == workload.OpBatch {
		return len(op.Users)
	}
	return 1
}

func itemsOfSpec(s *workload.OpSpec) int {
	switch s.Op {
	case workload.OpBatch:
		return s.Batch
	}
	return 1
}

// cappedPacer is a constant pacer that stops after max hits (0: no cap).
type cappedPacer struct {
	vegeta.ConstantPacer
	max uint64
}

func (p cappedPacer) Pace(elapsed time.Duration, hits uint64) (time.Duration, bool) {
	if p.max > 0 && hits >= p.max {
		return 0, true
	}
	return p.ConstantPacer.Pace(elapsed, hits)
}

func boundedPacer(rate int, limit int64) vegeta.Pacer {
	return cappedPacer{ConstantPacer: vegeta.ConstantPacer{Freq: rate, Per: time.Second}, max: uint64(max(limit, 0))}
}

// openLoopGateway drives the gateway with vegeta: a constant pacer starts
// requests on schedule whether or not earlier ones returned (no coordinated
// omission while workers are available: vegeta adds a worker whenever all
// are busy, up to maxInflight), a custom targeter draws each request from the
// mix, and results are aggregated per operation by the "#spec.board" tag of
// their URL. The start lag (actual − scheduled start) is recorded so that a
// saturated load generator shows up in the results instead of hiding.
func openLoopGateway(ctx context.Context, sc *Scenario, api *httpAPI, gen *Gen, rec *Recorder, maxInflight int) time.Duration {
	pools := gen.sh.pools
	var mu sync.Mutex
	targeter := func(t *vegeta.Target) error {
		mu.Lock()
		op := gen.Next()
		mu.Unlock()
		*t = api.Target(&op)
		rec.Started()
		return nil
	}
	workers := uint64(min(max(sc.Rate/50, 4), maxInflight))
	atk := vegeta.NewAttacker(
		vegeta.Timeout(sc.Timeout),
		vegeta.KeepAlive(true),
		vegeta.Workers(workers),
		vegeta.MaxWorkers(uint64(maxInflight)),
		vegeta.Connections(maxInflight),
		vegeta.Redirects(vegeta.NoFollow),
	)
	stop := context.AfterFunc(ctx, func() { atk.Stop() })
	defer stop()
	interval := time.Second / time.Duration(sc.Rate)
	begin := time.Now() // this phase; the recorder may span several (-rounds)
	var last time.Time
	for res := range atk.Attack(targeter, boundedPacer(sc.Rate, sc.MaxRequests()), sc.Duration, sc.Name) {
		spec, board, ok := parseTag(res.URL)
		if !ok || spec >= len(sc.Ops) {
			continue
		}
		s := &sc.Ops[spec]
		class := httpOutcome(s.Op, int(res.Code), res.Body, res.Error)
		if s.Op == workload.OpPage && class == "" {
			if c := nextCursor(res.Body); c != "" {
				pools.put(board, c)
			}
		}
		// vegeta's constant pacer schedules hit n at (n+1) × interval.
		lag := res.Timestamp.Sub(begin.Add(time.Duration(res.Seq+1) * interval))
		rec.Add(spec, res.Timestamp, res.Latency, class, itemsOfSpec(s), lag, true)
		if res.Timestamp.After(last) {
			last = res.Timestamp
		}
	}
	if last.IsZero() {
		return 0
	}
	return last.Sub(begin) + interval
}

// openLoopExec is the same open loop for an in-process Executor (the
// baseline): vegeta's constant pacer schedules, every request runs in its own
// goroutine started on schedule (at most maxInflight at once, like vegeta's
// MaxWorkers), and latency runs from the actual start as in vegeta.
func openLoopExec(ctx context.Context, sc *Scenario, exec Executor, gen *Gen, rec *Recorder, maxInflight int) time.Duration {
	pools := gen.sh.pools
	pacer := boundedPacer(sc.Rate, sc.MaxRequests())
	interval := time.Second / time.Duration(sc.Rate)
	begin := time.Now() // this phase; the recorder may span several (-rounds)
	sem := make(chan struct{}, maxInflight)
	var wg sync.WaitGroup
	var last time.Time
	timer := time.NewTimer(0)
	defer timer.Stop()
	<-timer.C
loop:
	for hits := uint64(0); ; hits++ {
		elapsed := time.Since(begin)
		if sc.Duration > 0 && elapsed > sc.Duration {
			break
		}
		wait, stop := pacer.Pace(elapsed, hits)
		if stop {
			break
		}
		if wait > 0 {
			timer.Reset(wait)
			select {
			case <-ctx.Done():
				break loop
			case <-timer.C:
			}
		}
		op := gen.Next()
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
			break loop
		}
		start := time.Now()
		last = start
		lag := start.Sub(begin.Add(time.Duration(hits+1) * interval))
		rec.Started()
		wg.Add(1)
		go func() {
			defer wg.Done()
			octx, cancel := context.WithTimeout(ctx, sc.Timeout)
			out := exec.Do(octx, &op)
			cancel()
			lat := time.Since(start)
			if out.Next != nil {
				pools.put(op.Board, out.Next)
			}
			rec.Add(op.Spec, start, lat, out.Class, itemsOf(&op), lag, true)
			<-sem
		}()
	}
	wg.Wait()
	if last.IsZero() {
		return 0
	}
	return last.Sub(begin) + interval
}

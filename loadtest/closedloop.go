package main

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// workerExecutor is an Executor that gives each closed-loop worker one of
// its own (a connection, buffers), closed when the worker ends.
type workerExecutor interface {
	ForWorker() interface {
		Executor
		Close()
	}
}

// closedLoop runs sc.Workers workers, each sending its next request as soon
// as the previous one answered, until the duration (or the request cap) is
// used up. It measures capacity (throughput at a given concurrency); its
// latencies include no waiting for a schedule, so use the open loop for
// latency at a given arrival rate.
func closedLoop(ctx context.Context, sc *Scenario, exec Executor, w *World, sh *shared, rec *Recorder) time.Duration {
	begin := time.Now() // this phase; the recorder may span several (-rounds)
	deadline := begin.Add(sc.Duration)
	limit := sc.MaxRequests()
	var issued atomic.Int64
	var wg sync.WaitGroup
	for i := range sc.Workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			exec := exec
			if f, ok := exec.(workerExecutor); ok {
				wx := f.ForWorker()
				defer wx.Close()
				exec = wx
			}
			gen := NewGen(w, sc.Seed, uint64(i+1), sh)
			for ctx.Err() == nil && time.Now().Before(deadline) {
				if limit > 0 && issued.Add(1) > limit {
					return
				}
				op := gen.Next()
				rec.Started()
				start := time.Now()
				octx, cancel := context.WithTimeout(ctx, sc.Timeout)
				out := exec.Do(octx, &op)
				cancel()
				lat := time.Since(start)
				if out.Next != nil {
					sh.pools.put(op.Board, out.Next)
				}
				rec.Add(op.Spec, start, lat, out.Class, itemsOf(&op), 0, false)
			}
		}()
	}
	wg.Wait()
	return time.Since(begin)
}

package main

import (
	"context"
	"log/slog"
	"math"
	"runtime/debug"
	"runtime/metrics"
	"sync/atomic"
	"time"
)

// A gateway that answers mostly cached reads keeps a heap of a few MiB and
// allocates tens of MiB a second (net/http's request handling, the request
// context): at Go's default GOGC=100 it collects ten or more times a second,
// and each cycle's mark phase takes the CPU from every request waiting at
// once — the tail of hot reads (docs/performance.md, "Cached reads at a
// refresh"). The GC floor raises the GC target to at least floor bytes of
// heap while the live heap is small, and leaves GOGC as it is once the live
// heap is large (a read index): the heap's headroom is max(floor, GOGC).

// gcFloorRunning: one floor per process (tests run several gateways in one).
var gcFloorRunning atomic.Bool

// gcFloorEvery is how often the floor reads the live heap.
const gcFloorEvery = time.Second

// gcFloorMaxPercent bounds the GC percent the floor sets.
const gcFloorMaxPercent = 100_000

// startGCFloor keeps the GC target at floor bytes or more until ctx ends
// or stop is called (then the GC percent is as before). Off (a no-op) when
// floor is 0, when the environment sets GOGC (the operator chose), or when
// another floor runs in this process.
func startGCFloor(ctx context.Context, floor uint64, gogcEnv string, log *slog.Logger) (stop func()) {
	if floor == 0 || gogcEnv != "" || !gcFloorRunning.CompareAndSwap(false, true) {
		return func() {}
	}
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	liveHeap := func() uint64 {
		metrics.Read(sample)
		if sample[0].Value.Kind() != metrics.KindUint64 {
			return 0
		}
		return sample[0].Value.Uint64()
	}
	log.Info("GC floor on", "floor_mib", floor>>20)
	stopFloor := runGCFloor(ctx, floor, gcFloorEvery, debug.SetGCPercent, liveHeap, log)
	return func() {
		stopFloor()
		gcFloorRunning.Store(false)
	}
}

// runGCFloor is the floor's loop: every period it reads the live heap and
// sets the GC percent (setPercent: debug.SetGCPercent, which answers the
// one before) that gcPercentFor gives; the first time at once. stop ends
// it and sets the percent back to what it was.
func runGCFloor(ctx context.Context, floor uint64, period time.Duration, setPercent func(int) int, liveHeap func() uint64, log *slog.Logger) (stop func()) {
	base := setPercent(100)
	setPercent(base)
	cur := base
	apply := func() {
		live := liveHeap()
		if next := gcPercentFor(floor, live, base); next != cur {
			setPercent(next)
			log.Debug("GC floor: GC percent set", "percent", next, "live_heap_bytes", live, "floor_bytes", floor)
			cur = next
		}
	}
	apply() // at once: the first collections of a new process come early
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		t := time.NewTicker(period)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				setPercent(base)
				return
			case <-t.C:
				apply()
			}
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// gcPercentFor is the GC percent that makes the GC target — live × (1 +
// percent/100) — at least floor, and never below base: base while that
// holds (or nearly: within 25 %), else the next power of two at or above
// the percent needed, so that it does not move at every small change of
// the live heap.
func gcPercentFor(floor, live uint64, base int) int {
	if base < 0 { // GC off: nothing to raise
		return base
	}
	if live == 0 {
		live = 1 << 20
	}
	if live >= floor {
		return base
	}
	need := math.Ceil((float64(floor)/float64(live) - 1) * 100)
	if need <= float64(base)*1.25 {
		return base
	}
	p := 1 << int(math.Ceil(math.Log2(need)))
	return min(p, gcFloorMaxPercent)
}

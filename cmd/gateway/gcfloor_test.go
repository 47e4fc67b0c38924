package main

import (
	"context"
	"log/slog"
	"sync"
	"testing"
	"time"
)

func TestGCPercentFor(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	for _, c := range []struct {
		name       string
		floor      uint64
		live       uint64
		base, want int
	}{
		{name: "live heap above the floor: GOGC as it is", floor: 64 * mib, live: 100 * mib, base: 100, want: 100},
		{name: "target already past the floor", floor: 64 * mib, live: 40 * mib, base: 100, want: 100},
		{name: "small heap: target raised to the floor or above", floor: 64 * mib, live: 4 * mib, base: 100, want: 2048},
		{name: "a user's higher GOGC kept when it reaches the floor", floor: 64 * mib, live: 16 * mib, base: 400, want: 400},
		{name: "no heap read yet: as if 1 MiB", floor: 64 * mib, live: 0, base: 100, want: 8192},
		{name: "GC off stays off", floor: 64 * mib, live: 4 * mib, base: -1, want: -1},
		{name: "bounded", floor: 64 << 30, live: 1, base: 100, want: gcFloorMaxPercent},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			got := gcPercentFor(c.floor, c.live, c.base)
			if got != c.want {
				t.Fatalf("gcPercentFor(%d, %d, %d) = %d, want %d", c.floor, c.live, c.base, got, c.want)
			}
			live := max(c.live, 1<<20)
			if got >= 0 && got < gcFloorMaxPercent && float64(live)*(1+float64(got)/100) < float64(c.floor) {
				t.Fatalf("target %.0f below the floor %d", float64(live)*(1+float64(got)/100), c.floor)
			}
		})
	}
}

// fakeGC is the GC percent and live heap runGCFloor sees.
type fakeGC struct {
	mu      sync.Mutex
	percent int
	live    uint64
	sets    []int // every percent set, in order
}

func (f *fakeGC) set(p int) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	old := f.percent
	f.percent = p
	f.sets = append(f.sets, p)
	return old
}

func (f *fakeGC) heap() uint64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.live
}

// TestGCFloorLoop: the floor raises the GC percent of a small heap at once,
// follows the live heap, and sets the percent it found back when stopped.
func TestGCFloorLoop(t *testing.T) {
	t.Parallel()
	const mib = 1 << 20
	f := &fakeGC{percent: 150, live: 4 * mib}
	// A period far longer than the test: only the first, immediate look.
	stop := runGCFloor(context.Background(), 64*mib, time.Hour, f.set, f.heap, slog.New(slog.DiscardHandler))
	f.mu.Lock()
	raised := f.percent
	f.mu.Unlock()
	stop()
	if raised != gcPercentFor(64*mib, 4*mib, 150) || raised <= 150 {
		t.Fatalf("with 4 MiB live under a 64 MiB floor the percent was %d, want %d", raised, gcPercentFor(64*mib, 4*mib, 150))
	}
	if f.percent != 150 {
		t.Fatalf("after stop the percent is %d, want 150 again (sets %v)", f.percent, f.sets)
	}

	big := &fakeGC{percent: 100, live: 512 * mib}
	stop = runGCFloor(context.Background(), 64*mib, time.Hour, big.set, big.heap, slog.New(slog.DiscardHandler))
	stop()
	for _, p := range big.sets {
		if p != 100 {
			t.Fatalf("a live heap above the floor got percent %d (sets %v), want GOGC alone", p, big.sets)
		}
	}
}

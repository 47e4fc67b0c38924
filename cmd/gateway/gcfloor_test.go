package main

import (
	"context"
	"log/slog"
	"runtime/debug"
	"runtime/metrics"
	"testing"
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

// gcPercent reads the GC percent in force.
func gcPercent(t *testing.T) int {
	t.Helper()
	s := []metrics.Sample{{Name: "/gc/gogc:percent"}}
	metrics.Read(s)
	if s[0].Value.Kind() != metrics.KindUint64 {
		t.Fatal("no /gc/gogc:percent metric")
	}
	return int(s[0].Value.Uint64())
}

// TestGCFloorStartStop: the floor raises the GC percent of a small heap at
// once and gives it back when stopped; a second floor, or GOGC in the
// environment, leaves it alone.
func TestGCFloorStartStop(t *testing.T) {
	// Not parallel: the GC percent is the process's.
	log := slog.New(slog.DiscardHandler)
	before := debug.SetGCPercent(100)
	defer debug.SetGCPercent(before)
	stop := startGCFloor(context.Background(), 1<<30, "200", log)
	if p := gcPercent(t); p != 100 {
		t.Fatalf("the floor set the GC percent to %d although GOGC was set", p)
	}
	stop()
	stop = startGCFloor(context.Background(), 64<<30, "", log) // far above this test's heap
	raised := gcPercent(t)
	startGCFloor(context.Background(), 1<<20, "", log)() // a no-op: one floor per process
	if p := gcPercent(t); p != raised {
		t.Fatalf("a second floor changed the GC percent from %d to %d", raised, p)
	}
	stop()
	if raised != gcFloorMaxPercent {
		t.Fatalf("under a 64 GiB floor the GC percent was %d, want %d", raised, gcFloorMaxPercent)
	}
	if p := gcPercent(t); p != 100 {
		t.Fatalf("after stop the GC percent is %d, want 100 again", p)
	}
}

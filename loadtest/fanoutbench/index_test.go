package main

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestQuantileInterpolatesWithinABucket(t *testing.T) {
	bs := []bucket{{0.001, 0}, {0.005, 50}, {0.01, 90}, {0.05, 100}, {math.Inf(1), 100}}
	for _, c := range []struct{ q, want float64 }{
		{0.5, 0.005},                          // the 50th of 100 is the top of the second bucket
		{0.25, 0.001 + 0.004*25/50},           // halfway into (0.001, 0.005]
		{0.99, 0.01 + 0.04*9/10},              // 9 of the last 10 in (0.01, 0.05]
		{1, 0.05},                             // all within the last finite bound
		{0.95, 0.01 + (0.05-0.01)*(95-90)/10}, // linear
	} {
		if got := quantile(c.q, bs); math.Abs(got-c.want) > 1e-12 {
			t.Errorf("quantile(%v) = %v, want %v", c.q, got, c.want)
		}
	}
	// Past the last finite bound: at least that bound.
	over := []bucket{{0.1, 1}, {math.Inf(1), 10}}
	if got := quantile(0.99, over); got != 0.1 {
		t.Errorf("quantile in +Inf = %v, want 0.1", got)
	}
	if got := quantile(0.5, []bucket{{1, 0}, {math.Inf(1), 0}}); !math.IsNaN(got) {
		t.Errorf("quantile of nothing = %v, want NaN", got)
	}
}

func TestMetricsSumAndBucketDeltas(t *testing.T) {
	m := metrics{
		`rankgate_index_visible_seconds_bucket{family="idx16",le="0.005"}`: 3,
		`rankgate_index_visible_seconds_bucket{family="idx16",le="+Inf"}`:  5,
		`rankgate_index_visible_seconds_bucket{family="other",le="0.005"}`: 7,
		`rankgate_index_boards{state="ready"}`:                             1,
		`rankgate_index_boards{state="too_big"}`:                           2,
		`rankgate_index_boards_extra`:                                      100,
		`process_cpu_seconds_total`:                                        1.5,
	}
	if got := m.sum("rankgate_index_boards"); got != 3 {
		t.Errorf("sum over labels = %v, want 3 (not the other metric with the same prefix)", got)
	}
	if got := m.sum(`rankgate_index_boards{state="too_big"}`); got != 2 {
		t.Errorf("one series = %v, want 2", got)
	}
	if got := m.sum("process_cpu_seconds_total"); got != 1.5 {
		t.Errorf("no labels = %v", got)
	}
	before := m.buckets("rankgate_index_visible_seconds", `family="idx16"`)
	if len(before) != 2 || before[0] != (bucket{0.005, 3}) || !math.IsInf(before[1].le, 1) || before[1].n != 5 {
		t.Fatalf("buckets = %v", before)
	}
	after := []bucket{{0.005, 10}, {math.Inf(1), 15}}
	d := deltaBuckets(before, after)
	if d[0].n != 7 || d[1].n != 10 {
		t.Errorf("delta = %v", d)
	}
}

func TestBaselineConfigLowersMaxMembersOnly(t *testing.T) {
	dir := t.TempDir()
	src := filepath.Join(dir, "c.yaml")
	in := "index:\n  max_boards: 64\n  max_members: 5000000\n  feed_len: 100000\nfamilies: {}\n"
	if err := os.WriteFile(src, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := baselineConfig(src, dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want := strings.Replace(in, "max_members: 5000000", "max_members: 1", 1)
	if string(b) != want {
		t.Errorf("baseline config:\n%s\nwant:\n%s", b, want)
	}
	if err := os.WriteFile(src, []byte("families: {}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := baselineConfig(src, dir); err == nil {
		t.Error("a config without index.max_members: want an error")
	}
}

// closedLoopAll counts a call that outlasts the slice, and leaves out the
// calls that timed out.
func TestClosedLoopAllCountsSlowCallsAndSkipsTimeouts(t *testing.T) {
	slow := func(ctx context.Context, r *rand.Rand) error {
		time.Sleep(60 * time.Millisecond)
		return nil
	}
	n, d, errs, _ := closedLoopAll(context.Background(), slow, 2, 10*time.Millisecond)
	if n != 2 || errs != 0 {
		t.Errorf("slow calls: n %d errs %d, want 2 and 0", n, errs)
	}
	if rate := float64(n) / d.Seconds(); rate < 20 || rate > 40 {
		t.Errorf("rate %.1f/s, want about 2 ÷ 60 ms", rate)
	}
	timedOut := func(ctx context.Context, r *rand.Rand) error { time.Sleep(time.Millisecond); return errTimedOut }
	if n, _, errs, _ := closedLoopAll(context.Background(), timedOut, 2, 10*time.Millisecond); n != 0 || errs != 0 {
		t.Errorf("timed out calls: n %d errs %d, want 0 and 0", n, errs)
	}
	boom := errors.New("boom")
	failing := func(ctx context.Context, r *rand.Rand) error { time.Sleep(time.Millisecond); return boom }
	if _, _, errs, first := closedLoopAll(context.Background(), failing, 1, 5*time.Millisecond); errs == 0 || !errors.Is(first, boom) {
		t.Errorf("errors: %d, first %v", errs, first)
	}
}

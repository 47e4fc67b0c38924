package main

import (
	"slices"
	"testing"
	"time"

	"github.com/rankgate/rankgate/internal/workload"
)

func durs(ms ...int) []time.Duration {
	out := make([]time.Duration, len(ms))
	for i, m := range ms {
		out[i] = time.Duration(m) * time.Millisecond
	}
	return out
}

func TestPercentile(t *testing.T) {
	hundred := make([]int, 100)
	for i := range hundred {
		hundred[i] = i + 1 // 1..100 ms
	}
	thousand := make([]int, 1000)
	for i := range thousand {
		thousand[i] = i + 1
	}
	tests := []struct {
		name string
		in   []time.Duration
		q    float64
		want time.Duration
	}{
		{"empty", nil, 0.5, 0},
		{"one value p0", durs(7), 0, 7 * time.Millisecond},
		{"one value p50", durs(7), 0.5, 7 * time.Millisecond},
		{"one value p100", durs(7), 1, 7 * time.Millisecond},
		{"two values p50", durs(1, 9), 0.5, 1 * time.Millisecond},
		{"two values p51", durs(1, 9), 0.51, 9 * time.Millisecond},
		{"four values p75", durs(1, 2, 3, 4), 0.75, 3 * time.Millisecond},
		{"1..100 p50", durs(hundred...), 0.50, 50 * time.Millisecond},
		{"1..100 p90", durs(hundred...), 0.90, 90 * time.Millisecond},
		{"1..100 p99", durs(hundred...), 0.99, 99 * time.Millisecond},
		{"1..100 p999", durs(hundred...), 0.999, 100 * time.Millisecond},
		{"1..100 max", durs(hundred...), 1, 100 * time.Millisecond},
		{"1..1000 p999", durs(thousand...), 0.999, 999 * time.Millisecond},
		{"q below 0", durs(3, 4), -1, 3 * time.Millisecond},
		{"q above 1", durs(3, 4), 2, 4 * time.Millisecond},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percentile(tt.in, tt.q); got != tt.want {
				t.Errorf("Percentile(q=%g) = %s, want %s", tt.q, got, tt.want)
			}
		})
	}
}

func TestSummarize(t *testing.T) {
	lats := durs(5, 1, 3, 2, 4)
	slices.Sort(lats)
	s := summarize("top", workload.OpTop, lats, 1, 5, 2, true)
	if s.Count != 5 || s.Errors != 1 || s.Rate != 2.5 || s.ItemRate != 2.5 {
		t.Errorf("counts: %+v", s)
	}
	if s.MeanMs != 3 || s.P50Ms != 3 || s.P99Ms != 5 || s.MaxMs != 5 {
		t.Errorf("latencies: %+v", s)
	}
	if len(s.CDF) != len(cdfQuantiles) || s.CDF[0][1] != 1 || s.CDF[len(s.CDF)-1] != [2]float64{1, 5} {
		t.Errorf("cdf: %v", s.CDF)
	}
	for i := 1; i < len(s.CDF); i++ {
		if s.CDF[i][0] < s.CDF[i-1][0] || s.CDF[i][1] < s.CDF[i-1][1] {
			t.Fatalf("cdf not monotone at %d: %v", i, s.CDF)
		}
	}
}

func TestRecorderFinish(t *testing.T) {
	begin := time.Unix(1000, 0)
	rec := NewRecorder([]string{"event", "top"}, begin)
	add := func(op int, atMs, latMs int, class string, items int) {
		rec.Started()
		rec.Add(op, begin.Add(time.Duration(atMs)*time.Millisecond), time.Duration(latMs)*time.Millisecond, class, items, 0, false)
	}
	add(0, 100, 10, "", 1)
	add(1, 200, 2, "", 1)
	add(1, 900, 4, "503", 1)
	add(1, 1500, 6, "", 1)
	add(0, 1600, 20, "item_error", 100)
	total, ops, series, lag := rec.Finish([]string{workload.OpEvent, workload.OpTop}, 2)
	if lag != nil {
		t.Errorf("closed-loop results have no lag: %+v", lag)
	}
	if total.Count != 5 || total.Errors != 2 || total.Items != 104 || total.Codes["ok"] != 3 || total.Codes["503"] != 1 {
		t.Errorf("total: %+v", total)
	}
	if ops[0].Count != 2 || ops[0].Items != 101 || ops[0].ItemRate != 50.5 || ops[0].Codes["item_error"] != 1 {
		t.Errorf("event: %+v", ops[0])
	}
	if ops[1].Count != 3 || ops[1].P50Ms != 4 || ops[1].Rate != 1.5 {
		t.Errorf("top: %+v", ops[1])
	}
	// Second 0: event, top, all; second 1: event, top, all.
	var got []string
	for _, p := range series {
		got = append(got, p.Op)
		if p.Op == "all" && p.Second == 0 && (p.Count != 3 || p.Errors != 1 || p.MaxMs != 10) {
			t.Errorf("second 0: %+v", p)
		}
	}
	if want := []string{"event", "top", "all", "event", "top", "all"}; !slices.Equal(got, want) {
		t.Errorf("series ops %v, want %v", got, want)
	}
	if _, _, inflight := rec.Tick(); inflight != 0 {
		t.Errorf("in flight %d", inflight)
	}
}

func TestRecorderWindows(t *testing.T) {
	begin := time.Unix(1000, 0)
	rec := NewRecorder([]string{"top"}, begin)
	for _, at := range []int{100, 1200, 2100, 2400, 5100, 6100} {
		rec.Add(0, begin.Add(time.Duration(at)*time.Millisecond), time.Millisecond, "", 1, 0, false)
	}
	// Two phases: [0, 2.2s) and [5s, 7s); seconds 2 (20% covered), 3 and 4 are out.
	rec.Window(begin, begin.Add(2200*time.Millisecond))
	rec.Window(begin.Add(5*time.Second), begin.Add(7*time.Second))
	total, _, series, _ := rec.Finish([]string{workload.OpTop}, 4.2)
	if total.Count != 6 {
		t.Errorf("totals keep every request: %d", total.Count)
	}
	var secs []int
	for _, p := range series {
		if p.Op == "all" {
			secs = append(secs, p.Second)
		}
	}
	if want := []int{0, 1, 5, 6}; !slices.Equal(secs, want) {
		t.Errorf("series seconds %v, want %v", secs, want)
	}
}

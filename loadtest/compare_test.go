package main

import (
	"math"
	"strings"
	"testing"
)

func result(target string, total OpStats, ops ...OpStats) *Result {
	return &Result{Target: target, Mode: "open", Rate: 100, Total: total, Ops: ops}
}

func TestCompareResults(t *testing.T) {
	old := result("baseline", OpStats{Op: "all", Rate: 300, P50Ms: 1, P99Ms: 4},
		OpStats{Op: "top", Rate: 200, P50Ms: 1, P99Ms: 4},
		OpStats{Op: "event", Rate: 100, P50Ms: 2, P99Ms: 8, Errors: 3})
	new := result("gateway", OpStats{Op: "all", Rate: 240, P50Ms: 1.5, P99Ms: 6},
		OpStats{Op: "top", Rate: 140, P50Ms: 1.5, P99Ms: 6},
		OpStats{Op: "lookup", Rate: 10, P50Ms: 3, P99Ms: 9})
	rows := CompareResults(old, new)
	tests := []struct {
		op                   string
		only                 string
		rate, p50, p99       float64 // NaN: no ratio
		oldErr, newErr       int64
		wantOldRate, newRate float64
	}{
		{"top", "", 0.7, 1.5, 1.5, 0, 0, 200, 140},
		{"event", "old", math.NaN(), math.NaN(), math.NaN(), 3, 0, 100, 0},
		{"lookup", "new", math.NaN(), math.NaN(), math.NaN(), 0, 0, 0, 10},
		{"all", "", 0.8, 1.5, 1.5, 0, 0, 300, 240},
	}
	if len(rows) != len(tests) {
		t.Fatalf("got %d rows, want %d: %+v", len(rows), len(tests), rows)
	}
	same := func(a, b float64) bool {
		return math.IsNaN(a) && math.IsNaN(b) || math.Abs(a-b) < 1e-9
	}
	for i, tt := range tests {
		r := rows[i]
		if r.Op != tt.op || r.Only != tt.only || r.OldErr != tt.oldErr || r.NewErr != tt.newErr || r.OldRate != tt.wantOldRate || r.NewRate != tt.newRate {
			t.Errorf("row %d: %+v", i, r)
		}
		if !same(r.RateRatio(), tt.rate) || !same(r.P50Ratio(), tt.p50) || !same(r.P99Ratio(), tt.p99) {
			t.Errorf("row %s ratios: rate %g p50 %g p99 %g, want %g %g %g", r.Op, r.RateRatio(), r.P50Ratio(), r.P99Ratio(), tt.rate, tt.p50, tt.p99)
		}
	}
}

func TestFormatCompare(t *testing.T) {
	rows := []CompareRow{
		{Op: "top", OldRate: 200, NewRate: 140, OldP50: 1, NewP50: 1.5, OldP99: 4, NewP99: 6},
		{Op: "event", OldRate: 100, OldP50: 2, OldP99: 8, OldErr: 3, Only: "old"},
		{Op: "lookup", NewRate: 10, NewP50: 3, NewP99: 9, Only: "new"},
		{Op: "zero", OldRate: 0, NewRate: 5},
	}
	var b strings.Builder
	FormatCompare(&b, "a.json", "b.json", rows)
	lines := strings.Split(strings.TrimRight(b.String(), "\n"), "\n")
	tests := []struct {
		line int
		want []string
	}{
		{0, []string{"old: a.json"}},
		{1, []string{"new: b.json"}},
		{2, []string{"op", "req/s old → new", "ratio", "p50 ms old → new", "p99 ms old → new"}},
		{3, []string{"top", "200.0 → 140.0", "0.70×", "1.00 → 1.50", "1.50×", "4.00 → 6.00", "0 → 0"}},
		{4, []string{"event", "100.0 → —", "2.00 → —", "8.00 → —", "3 → 0"}},
		{5, []string{"lookup", "— → 10.0", "— → 3.00", "— → 9.00"}},
		{6, []string{"zero", "0.0 → 5.0", "—"}},
	}
	if len(lines) != 7 {
		t.Fatalf("got %d lines:\n%s", len(lines), b.String())
	}
	for _, tt := range tests {
		for _, w := range tt.want {
			if !strings.Contains(lines[tt.line], w) {
				t.Errorf("line %d %q lacks %q", tt.line, lines[tt.line], w)
			}
		}
	}
	if strings.Contains(lines[4], "×") {
		t.Errorf("one-sided op has a ratio: %q", lines[4])
	}
	md := markdownRatios(rows[:1])
	if !strings.Contains(md, "| top | 200.0 → 140.0 | 0.70× | 1.00 → 1.50 | 1.50× | 4.00 → 6.00 | 1.50× |") {
		t.Errorf("markdown:\n%s", md)
	}
}

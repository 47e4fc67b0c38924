package main

import (
	"fmt"
	"io"
	"math"
	"strings"
)

// CompareRow is one operation of two runs side by side.
type CompareRow struct {
	Op               string
	OldRate, NewRate float64 // requests per second
	OldP50, NewP50   float64 // ms
	OldP99, NewP99   float64 // ms
	OldErr, NewErr   int64
	Only             string // "old" or "new" when the op ran on one side only
}

// RateRatio is new ÷ old throughput (NaN when old is 0 or a side is missing).
func (r CompareRow) RateRatio() float64 { return r.ratio(r.NewRate, r.OldRate) }

// P50Ratio is new ÷ old median latency.
func (r CompareRow) P50Ratio() float64 { return r.ratio(r.NewP50, r.OldP50) }

// P99Ratio is new ÷ old p99 latency.
func (r CompareRow) P99Ratio() float64 { return r.ratio(r.NewP99, r.OldP99) }

func (r CompareRow) ratio(a, b float64) float64 {
	if b == 0 || r.Only != "" {
		return math.NaN()
	}
	return a / b
}

// CompareResults pairs the operations of two runs by name: old's order
// first, then operations only new has, then the total.
func CompareResults(old, new *Result) []CompareRow {
	newBy := map[string]OpStats{}
	for _, s := range new.Ops {
		newBy[s.Op] = s
	}
	seen := map[string]bool{}
	var rows []CompareRow
	for _, o := range old.Ops {
		seen[o.Op] = true
		n, ok := newBy[o.Op]
		row := CompareRow{Op: o.Op, OldRate: o.Rate, OldP50: o.P50Ms, OldP99: o.P99Ms, OldErr: o.Errors}
		if ok {
			row.NewRate, row.NewP50, row.NewP99, row.NewErr = n.Rate, n.P50Ms, n.P99Ms, n.Errors
		} else {
			row.Only = "old"
		}
		rows = append(rows, row)
	}
	for _, n := range new.Ops {
		if !seen[n.Op] {
			rows = append(rows, CompareRow{Op: n.Op, NewRate: n.Rate, NewP50: n.P50Ms, NewP99: n.P99Ms, NewErr: n.Errors, Only: "new"})
		}
	}
	t := CompareRow{Op: "all", OldRate: old.Total.Rate, NewRate: new.Total.Rate, OldP50: old.Total.P50Ms, NewP50: new.Total.P50Ms,
		OldP99: old.Total.P99Ms, NewP99: new.Total.P99Ms, OldErr: old.Total.Errors, NewErr: new.Total.Errors}
	return append(rows, t)
}

func fmtRatio(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "—"
	}
	return fmt.Sprintf("%.2f×", v)
}

func fmtPair(a, b float64, prec int, only string) string {
	switch only {
	case "old":
		return fmt.Sprintf("%.*f → —", prec, a)
	case "new":
		return fmt.Sprintf("— → %.*f", prec, b)
	}
	return fmt.Sprintf("%.*f → %.*f", prec, a, prec, b)
}

// FormatCompare prints the rows as an aligned table: per operation, rate and
// p50/p99 old → new and new ÷ old.
func FormatCompare(w io.Writer, oldLabel, newLabel string, rows []CompareRow) {
	fmt.Fprintf(w, "old: %s\nnew: %s\n", oldLabel, newLabel)
	fmt.Fprintf(w, "%-14s %-22s %7s  %-20s %7s  %-20s %7s  %s\n", "op", "req/s old → new", "ratio", "p50 ms old → new", "ratio", "p99 ms old → new", "ratio", "errors old → new")
	for _, r := range rows {
		fmt.Fprintf(w, "%-14s %-22s %7s  %-20s %7s  %-20s %7s  %d → %d\n", r.Op,
			fmtPair(r.OldRate, r.NewRate, 1, r.Only), fmtRatio(r.RateRatio()),
			fmtPair(r.OldP50, r.NewP50, 2, r.Only), fmtRatio(r.P50Ratio()),
			fmtPair(r.OldP99, r.NewP99, 2, r.Only), fmtRatio(r.P99Ratio()),
			r.OldErr, r.NewErr)
	}
}

// markdownRatios renders rows (old = baseline, new = gateway) as Markdown.
func markdownRatios(rows []CompareRow) string {
	var b strings.Builder
	b.WriteString("| op | req/s baseline → gateway | ratio | p50 ms baseline → gateway | ratio | p99 ms baseline → gateway | ratio |\n")
	b.WriteString("| --- | --- | ---: | --- | ---: | --- | ---: |\n")
	for _, r := range rows {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %s | %s | %s |\n", r.Op,
			fmtPair(r.OldRate, r.NewRate, 1, r.Only), fmtRatio(r.RateRatio()),
			fmtPair(r.OldP50, r.NewP50, 2, r.Only), fmtRatio(r.P50Ratio()),
			fmtPair(r.OldP99, r.NewP99, 2, r.Only), fmtRatio(r.P99Ratio()))
	}
	return b.String()
}

package main

import (
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rankgate/rankgate/internal/workload"
)

// Result is one run against one target, as written to <target>.json.
type Result struct {
	Tool     string    `json:"tool"`
	RunID    string    `json:"run_id"`
	Target   string    `json:"target"` // gateway | baseline
	Mode     string    `json:"mode"`   // open | closed
	Rate     int       `json:"rate,omitempty"`
	Workers  int       `json:"workers,omitempty"`
	Started  time.Time `json:"started"`
	ElapsedS float64   `json:"elapsed_s"` // load time, summed over rounds
	Rounds   int       `json:"rounds,omitempty"`
	Command  string    `json:"command"`
	Host     Host      `json:"host"`
	Period   string    `json:"period,omitempty"`
	// NationalMembers is the national board's size when the run started.
	NationalMembers int64         `json:"national_members"`
	Scenario        Scenario      `json:"scenario"`
	Prefill         *PrefillStats `json:"prefill,omitempty"`
	Lag             *LagStats     `json:"start_lag,omitempty"`
	Total           OpStats       `json:"total"`
	Ops             []OpStats     `json:"ops"`
	Series          []Point       `json:"series"`
}

// Host describes the machine a run ran on.
type Host struct {
	Hostname   string `json:"hostname"`
	OS         string `json:"os"`
	Arch       string `json:"arch"`
	CPUs       int    `json:"cpus"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	Go         string `json:"go"`
}

func thisHost() Host {
	h, _ := os.Hostname()
	return Host{Hostname: h, OS: runtime.GOOS, Arch: runtime.GOARCH, CPUs: runtime.NumCPU(), GOMAXPROCS: runtime.GOMAXPROCS(0), Go: runtime.Version()}
}

// Label is "gateway open 200/s" or "baseline closed ×16".
func (r *Result) Label() string {
	s := fmt.Sprintf("%s open %d/s", r.Target, r.Rate)
	if r.Mode == "closed" {
		s = fmt.Sprintf("%s closed ×%d", r.Target, r.Workers)
	}
	if r.Rounds > 1 {
		s += fmt.Sprintf(" (%d rounds)", r.Rounds)
	}
	return s
}

// ReadResult loads a result JSON.
func ReadResult(path string) (*Result, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var r Result
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return &r, nil
}

// WriteFiles writes <target>.json, <target>-ops.csv and <target>-series.csv
// into dir and returns their paths.
func (r *Result) WriteFiles(dir string) ([]string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	base := filepath.Join(dir, r.Target)
	data, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := os.WriteFile(base+".json", append(data, '\n'), 0o644); err != nil {
		return nil, err
	}
	if err := writeCSV(base+"-ops.csv", opsCSV(r)); err != nil {
		return nil, err
	}
	if err := writeCSV(base+"-series.csv", seriesCSV(r)); err != nil {
		return nil, err
	}
	return []string{base + ".json", base + "-ops.csv", base + "-series.csv"}, nil
}

func f2(v float64) string { return strconv.FormatFloat(v, 'f', 3, 64) }

func opsCSV(r *Result) [][]string {
	rows := [][]string{{"target", "op", "count", "errors", "items", "rate", "item_rate", "mean_ms", "p50_ms", "p90_ms", "p99_ms", "p999_ms", "max_ms"}}
	for _, s := range append(append([]OpStats(nil), r.Ops...), r.Total) {
		rows = append(rows, []string{r.Target, s.Op, strconv.FormatInt(s.Count, 10), strconv.FormatInt(s.Errors, 10),
			strconv.FormatInt(s.Items, 10), f2(s.Rate), f2(s.ItemRate), f2(s.MeanMs), f2(s.P50Ms), f2(s.P90Ms), f2(s.P99Ms), f2(s.P999Ms), f2(s.MaxMs)})
	}
	return rows
}

func seriesCSV(r *Result) [][]string {
	rows := [][]string{{"target", "second", "op", "count", "errors", "p50_ms", "p90_ms", "p99_ms", "max_ms"}}
	for _, p := range r.Series {
		rows = append(rows, []string{r.Target, strconv.Itoa(p.Second), p.Op, strconv.FormatInt(p.Count, 10), strconv.FormatInt(p.Errors, 10),
			f2(p.P50Ms), f2(p.P90Ms), f2(p.P99Ms), f2(p.MaxMs)})
	}
	return rows
}

func writeCSV(path string, rows [][]string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := csv.NewWriter(f)
	_ = w.WriteAll(rows)
	if err := w.Error(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

// fmtCodes renders {"ok": 10, "503": 2} as "503×2" (successes left out).
func fmtCodes(c map[string]int64) string {
	var parts []string
	for _, k := range slices.Sorted(maps.Keys(c)) {
		if k != "ok" {
			parts = append(parts, fmt.Sprintf("%s×%d", k, c[k]))
		}
	}
	return strings.Join(parts, " ")
}

// PrintSummary writes the per-operation table of a result.
func PrintSummary(w io.Writer, r *Result) {
	fmt.Fprintf(w, "\n%s — %s, %.1fs, national board %d members\n", r.Label(), r.Scenario.Name, r.ElapsedS, r.NationalMembers)
	fmt.Fprintf(w, "%-14s %8s %7s %10s %11s %8s %8s %8s %8s %9s  %s\n", "op", "count", "errors", "req/s", "items/s", "p50 ms", "p90 ms", "p99 ms", "p999 ms", "max ms", "error codes")
	for _, s := range append(append([]OpStats(nil), r.Ops...), r.Total) {
		if s.Count == 0 && s.Op != "all" {
			continue
		}
		fmt.Fprintf(w, "%-14s %8d %7d %10.1f %11.1f %8.2f %8.2f %8.2f %8.2f %9.2f  %s\n", s.Op, s.Count, s.Errors, s.Rate, s.ItemRate,
			s.P50Ms, s.P90Ms, s.P99Ms, s.P999Ms, s.MaxMs, fmtCodes(s.Codes))
	}
	if r.Lag != nil {
		fmt.Fprintf(w, "start lag vs schedule: p50 %.2fms  p99 %.2fms  max %.2fms\n", r.Lag.P50Ms, r.Lag.P99Ms, r.Lag.MaxMs)
	}
}

// WriteReport writes report.md into dir with the charts of every result and,
// for a gateway + baseline pair, the ratio table.
func WriteReport(dir string, results []*Result, withPlots bool) (string, error) {
	var b strings.Builder
	fmt.Fprintf(&b, "# Load test report\n\n")
	if len(results) > 0 {
		r0 := results[0]
		sc := r0.Scenario
		fmt.Fprintf(&b, "Run `%s`, started %s on %s (%d CPUs, %s).\n\n", r0.RunID, r0.Started.UTC().Format(time.RFC3339), r0.Host.Hostname, r0.Host.CPUs, r0.Host.Go)
		fmt.Fprintf(&b, "Command: `%s`\n\n", r0.Command)
		fmt.Fprintf(&b, "Scenario `%s`: family `%s`, period `%s`, %d members (`%s0`…), %d provinces, %d classes, board skew %g, member skew %g; ",
			sc.Name, sc.Family, r0.Period, sc.Members, sc.MemberPrefix, sc.Provinces, sc.Classes, sc.BoardSkew, sc.MemberSkew)
		if sc.Mode == "closed" {
			fmt.Fprintf(&b, "closed loop, %d workers, %s.\n\n", sc.Workers, sc.Duration)
		} else {
			fmt.Fprintf(&b, "open loop, %d req/s, %s.\n\n", sc.Rate, sc.Duration)
		}
		b.WriteString("| op | kind | weight | parameters |\n| --- | --- | --- | --- |\n")
		for _, o := range sc.Ops {
			fmt.Fprintf(&b, "| %s | %s | %g | %s |\n", o.Name, o.Op, o.Weight, opParams(o))
		}
		b.WriteString("\n")
	}
	if gw, bl := pair(results); gw != nil && bl != nil {
		b.WriteString("## Gateway / baseline\n\n")
		b.WriteString("Ratios are gateway ÷ baseline: throughput ≥ 1 and latency ≤ 1 mean the gateway is as fast as doing the work in-process.\n\n")
		b.WriteString(markdownRatios(CompareResults(bl, gw)))
		b.WriteString("\n")
	}
	for _, r := range results {
		fmt.Fprintf(&b, "## %s\n\n", r.Label())
		fmt.Fprintf(&b, "Elapsed %.1fs; national board had %d members at the start.", r.ElapsedS, r.NationalMembers)
		if r.Lag != nil {
			fmt.Fprintf(&b, " Start lag vs schedule: p50 %.2f ms, p99 %.2f ms, max %.2f ms.", r.Lag.P50Ms, r.Lag.P99Ms, r.Lag.MaxMs)
		}
		if r.Prefill != nil {
			fmt.Fprintf(&b, " Prefill: members %d..%d in %.1fs (%.0f events/s, %d failed).", r.Prefill.From, r.Prefill.To-1, r.Prefill.Seconds, r.Prefill.Rate, r.Prefill.Failed)
		}
		b.WriteString("\n\n| op | count | errors | req/s | items/s | p50 ms | p90 ms | p99 ms | p99.9 ms | max ms | error codes |\n")
		b.WriteString("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | --- |\n")
		for _, s := range append(append([]OpStats(nil), r.Ops...), r.Total) {
			fmt.Fprintf(&b, "| %s | %d | %d | %.1f | %.1f | %.2f | %.2f | %.2f | %.2f | %.2f | %s |\n", s.Op, s.Count, s.Errors, s.Rate, s.ItemRate,
				s.P50Ms, s.P90Ms, s.P99Ms, s.P999Ms, s.MaxMs, fmtCodes(s.Codes))
		}
		b.WriteString("\n")
		if withPlots {
			files, err := WritePlots(dir, r)
			if err != nil {
				return "", err
			}
			for _, f := range files {
				fmt.Fprintf(&b, "![%s](%s)\n\n", strings.TrimSuffix(f, ".png"), f)
			}
		}
	}
	path := filepath.Join(dir, "report.md")
	return path, os.WriteFile(path, []byte(b.String()), 0o644)
}

func opParams(o workload.OpSpec) string {
	var p []string
	add := func(k string, v any) { p = append(p, fmt.Sprintf("%s=%v", k, v)) }
	if o.Board != "" {
		add("board", o.Board)
	}
	if o.Consistency != "" {
		add("consistency", o.Consistency)
	}
	switch o.Op {
	case workload.OpTop:
		add("limit", o.Limit)
	case workload.OpPage:
		add("limit", o.Limit)
		add("depth", o.Depth)
	case workload.OpBatch:
		add("batch", o.Batch)
	case workload.OpAround:
		add("radius", o.Radius)
	case workload.OpLookup:
		add("users", o.Users)
	}
	return strings.Join(p, ", ")
}

// pair finds the gateway and the baseline result of a list.
func pair(results []*Result) (gw, bl *Result) {
	for _, r := range results {
		switch r.Target {
		case "gateway":
			gw = r
		case "baseline":
			bl = r
		}
	}
	return gw, bl
}

package main

import (
	"fmt"
	"image/color"
	"math"
	"path/filepath"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
)

// WritePlots draws a result's charts as PNGs into dir and returns their file
// names: latency percentiles over time, throughput over time, latency CDF per
// operation, and the per-operation breakdown.
func WritePlots(dir string, r *Result) ([]string, error) {
	charts := []struct {
		name string
		make func(*Result) (*plot.Plot, error)
	}{
		{"latency", latencyPlot},
		{"throughput", throughputPlot},
		{"cdf", cdfPlot},
		{"ops", opsPlot},
	}
	var files []string
	for _, c := range charts {
		p, err := c.make(r)
		if err != nil {
			return nil, fmt.Errorf("%s chart: %w", c.name, err)
		}
		name := r.Target + "-" + c.name + ".png"
		if err := p.Save(20*vg.Centimeter, 11*vg.Centimeter, filepath.Join(dir, name)); err != nil {
			return nil, fmt.Errorf("%s chart: %w", c.name, err)
		}
		files = append(files, name)
	}
	return files, nil
}

func newPlot(title, x, y string) *plot.Plot {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = x
	p.Y.Label.Text = y
	p.Add(plotter.NewGrid())
	p.Legend.Top = true
	p.Legend.Left = true
	return p
}

// palette is Tableau 10: distinct enough for up to ten operations.
var palette = []color.Color{
	color.RGBA{0x4e, 0x79, 0xa7, 0xff}, color.RGBA{0xf2, 0x8e, 0x2b, 0xff}, color.RGBA{0xe1, 0x57, 0x59, 0xff},
	color.RGBA{0x76, 0xb7, 0xb2, 0xff}, color.RGBA{0x59, 0xa1, 0x4f, 0xff}, color.RGBA{0xed, 0xc9, 0x48, 0xff},
	color.RGBA{0xb0, 0x7a, 0xa1, 0xff}, color.RGBA{0xff, 0x9d, 0xa7, 0xff}, color.RGBA{0x9c, 0x75, 0x5f, 0xff},
	color.RGBA{0xba, 0xb0, 0xac, 0xff},
}

func colorOf(i int) color.Color { return palette[(i%len(palette)+len(palette))%len(palette)] }

// addLine adds a line; name "all" is drawn black and thicker. With time on
// X (gaps allowed), a gap of more than one second (the other target's phase
// under -rounds) breaks the line instead of bridging it.
func addLine(p *plot.Plot, name string, xys plotter.XYs, i int, dashed bool) error {
	return addLineGaps(p, name, xys, i, dashed, false)
}

func addTimeLine(p *plot.Plot, name string, xys plotter.XYs, i int, dashed bool) error {
	return addLineGaps(p, name, xys, i, dashed, true)
}

func addLineGaps(p *plot.Plot, name string, xys plotter.XYs, i int, dashed, splitGaps bool) error {
	if len(xys) == 0 {
		return nil
	}
	var segs []plotter.XYs
	start := 0
	for j := 1; j <= len(xys); j++ {
		if j == len(xys) || (splitGaps && xys[j].X-xys[j-1].X > 1) {
			segs = append(segs, xys[start:j])
			start = j
		}
	}
	for k, seg := range segs {
		l, err := plotter.NewLine(seg)
		if err != nil {
			return err
		}
		l.Color = colorOf(i)
		l.Width = vg.Points(1.5)
		if name == "all" {
			l.Color, l.Width = color.Black, vg.Points(2)
		}
		if dashed {
			l.Dashes = []vg.Length{vg.Points(4), vg.Points(3)}
		}
		p.Add(l)
		if k == 0 {
			p.Legend.Add(name, l)
		}
	}
	return nil
}

// seriesOf returns the points of one op ("all" for the total), by second.
func seriesOf(r *Result, op string) []Point {
	var out []Point
	for _, p := range r.Series {
		if p.Op == op {
			out = append(out, p)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Second < out[j].Second })
	return out
}

// latencyPlot: p50, p90, p99 and max of all operations, per second.
func latencyPlot(r *Result) (*plot.Plot, error) {
	p := newPlot(r.Label()+": latency over time (all ops)", "second of run", "latency (ms)")
	var pts []Point
	for _, pt := range seriesOf(r, "all") {
		if pt.Count > 0 { // a second without requests is a gap, not 0 ms
			pts = append(pts, pt)
		}
	}
	lines := []struct {
		name string
		get  func(Point) float64
	}{{"p50", func(p Point) float64 { return p.P50Ms }}, {"p90", func(p Point) float64 { return p.P90Ms }},
		{"p99", func(p Point) float64 { return p.P99Ms }}, {"max", func(p Point) float64 { return p.MaxMs }}}
	for i, l := range lines {
		xys := make(plotter.XYs, len(pts))
		for j, pt := range pts {
			xys[j] = plotter.XY{X: float64(pt.Second), Y: l.get(pt)}
		}
		if err := addTimeLine(p, l.name, xys, i, l.name == "max"); err != nil {
			return nil, err
		}
	}
	p.Y.Min = 0
	p.Y.Max *= 1.3 // room for the legend
	p.Legend.Left = false
	return p, nil
}

// throughputPlot: completed requests per second, total and per operation.
func throughputPlot(r *Result) (*plot.Plot, error) {
	p := newPlot(r.Label()+": throughput over time", "second of run", "requests per second")
	names := append([]string{"all"}, opNames(r)...)
	p.Legend.Left = false
	for i, name := range names {
		pts := seriesOf(r, name)
		xys := make(plotter.XYs, len(pts))
		for j, pt := range pts {
			xys[j] = plotter.XY{X: float64(pt.Second), Y: float64(pt.Count)}
		}
		if err := addTimeLine(p, name, xys, i-1, false); err != nil {
			return nil, err
		}
	}
	p.Y.Min = 0
	p.Y.Max *= 1.1 + 0.06*float64(len(names)) // room for the legend
	return p, nil
}

func opNames(r *Result) []string {
	var out []string
	for _, s := range r.Ops {
		if s.Count > 0 {
			out = append(out, s.Op)
		}
	}
	return out
}

// cdfPlot: latency CDF per operation, latency on a log axis.
func cdfPlot(r *Result) (*plot.Plot, error) {
	p := newPlot(r.Label()+": latency CDF", "latency (ms, log scale)", "fraction of requests ≤ latency")
	p.X.Scale = plot.LogScale{}
	p.X.Tick.Marker = plot.LogTicks{Prec: -1}
	p.Legend.Top, p.Legend.Left = false, false
	stats := append(append([]OpStats(nil), r.Ops...), r.Total)
	lo := math.Inf(1)
	for i, s := range stats {
		if s.Count == 0 {
			continue
		}
		var xys plotter.XYs
		for _, c := range s.CDF {
			if c[1] > 0 {
				xys = append(xys, plotter.XY{X: c[1], Y: c[0]})
				lo = math.Min(lo, c[1])
			}
		}
		if err := addLine(p, s.Op, xys, i, s.Op == "all"); err != nil {
			return nil, err
		}
	}
	if !math.IsInf(lo, 1) {
		p.X.Min = lo
	}
	p.Y.Min, p.Y.Max = 0, 1
	return p, nil
}

// opsPlot: p50, p90 and p99 per operation, grouped bars.
func opsPlot(r *Result) (*plot.Plot, error) {
	p := newPlot(r.Label()+": latency by operation", "", "latency (ms)")
	var names []string
	var p50, p90, p99 plotter.Values
	for _, s := range r.Ops {
		if s.Count == 0 {
			continue
		}
		names = append(names, fmt.Sprintf("%s\n%.0f/s", s.Op, s.Rate))
		p50, p90, p99 = append(p50, s.P50Ms), append(p90, s.P90Ms), append(p99, s.P99Ms)
	}
	if len(names) == 0 {
		return p, nil
	}
	w := vg.Points(14)
	for i, v := range []struct {
		name string
		vals plotter.Values
	}{{"p50", p50}, {"p90", p90}, {"p99", p99}} {
		b, err := plotter.NewBarChart(v.vals, w)
		if err != nil {
			return nil, err
		}
		b.Color = colorOf(i)
		b.LineStyle.Width = 0
		b.Offset = vg.Length(i-1) * w
		p.Add(b)
		p.Legend.Add(v.name, b)
	}
	p.NominalX(names...)
	p.Legend.Left = false
	p.Y.Min = 0
	p.X.Tick.Label.Color = color.Black
	return p, nil
}

package ui_test

// End to end: the status page at 1280×800 with 100+ boards in 14 families —
// it opens on the busiest board, its shard map groups the boards by family
// with a legend that stays whole, and each node shows its memory and ops/s
// from the cluster monitor. Checked through the DOM and on a screenshot.

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	dto "github.com/prometheus/client_model/go"

	"github.com/rankgate/rankgate/internal/gateway"
	"github.com/rankgate/rankgate/internal/teststack"
)

// mapFamily is one family of the fixture: a sum family, national on
// nationalShards shards and a province dimension on one.
func mapFamily(name string, nationalShards int) string {
	return fmt.Sprintf(`  %s:
    source: events
    aggregate: sum
    order: desc
    period: week
    timezone: UTC
    week_start: monday
    grace: 5m
    tie: first
    rank: competition
    max_points: 8388607
    seq_capacity: 1073741824
    cache_ttl: 1s
    dimensions:
      national: {shards: %d}
      province: {shards: 1}
`, name, nationalShards)
}

const (
	viewW, viewH = 1280, 800
	// quizProvinces is the number of province boards of the busiest family.
	quizProvinces = 90
	// smallFamilies are b01…b12: one member each (a national and a province board).
	smallFamilies = 12
)

// legendBox is what the page reports of one legend entry.
type legendBox struct {
	Family, Kind, Color     string
	Left, Top, Right, Bot   float64 // the entry, viewport pixels
	SwatchX, SwatchY        float64 // the swatch's centre
	ScrollWidth, ClientW    float64 // the legend list's
	DocScrollW, ViewportW   float64
	LegendBottom, LegendTop float64
	Overflow                bool // the entry's content is wider or taller than the entry
}

func TestStatusPageManyBoards(t *testing.T) {
	path := chromium(t)
	// "arcade" comes first by name and stays empty; quiz is the busiest.
	fams := mapFamily("arcade", 2) + mapFamily("learning", 4) + mapFamily("quiz", 4)
	for i := 1; i <= smallFamilies; i++ {
		fams += mapFamily(fmt.Sprintf("b%02d", i), 2)
	}
	stack := teststack.New(t, teststack.Options{Families: fams})
	ctx := context.Background()

	var evs []gateway.Event
	add := func(family, user, province string, points int64) {
		d := points
		evs = append(evs, gateway.Event{EventID: fmt.Sprintf("%s-%s", family, user), Family: family, User: user,
			Delta: &d, Dims: map[string]string{"province": province}})
	}
	for i := range 120 { // quiz: 120 members over 90 provinces; q119 leads
		add("quiz", fmt.Sprintf("q%03d", i), fmt.Sprintf("p%03d", i%quizProvinces), int64(i+1))
	}
	for i := range 5 {
		add("learning", fmt.Sprintf("l%d", i), "zhejiang", 1000) // fewer members, more points
	}
	for i := 1; i <= smallFamilies; i++ {
		add(fmt.Sprintf("b%02d", i), "solo", "jiangsu", 5)
	}
	items, err := stack.Service.ApplyBatch(ctx, evs)
	if err != nil {
		t.Fatal(err)
	}
	for _, it := range items {
		if it.Err != nil {
			t.Fatalf("seeding: %v", it.Err)
		}
	}
	const (
		wantBoards = 1 + quizProvinces + 2 + 2*smallFamilies // 117
		wantShards = 4 + quizProvinces + 4 + 1 + 3*smallFamilies
		wantFams   = 2 + smallFamilies // arcade has no board
	)

	// One monitor poll, so the page finds every node's memory and ops/s.
	if err := stack.Monitor.Poll(ctx); err != nil {
		t.Fatalf("monitor poll: %v", err)
	}
	nodeMem, nodeOps := gatherNodes(t, stack)

	srv := newServer(t, stack)
	bctx, problems := browser(t, path)
	if err := chromedp.Do(bctx, chromedp.EmulateViewport(viewW, viewH), chromedp.Navigate(srv+"/ui/")); err != nil {
		t.Fatalf("navigate: %v", err)
	}

	// Opens on the busiest board: quiz/national (120 members), not arcade.
	if _, err := chromedp.Run(bctx, chromedp.Poll[bool](`document.querySelector("#top-meta").textContent !== ""`,
		chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("no board shown: %v", err)
	}
	if got := text(t, bctx, "#families-body tr:first-child td"); got != "arcade" {
		t.Errorf("first family listed %q, want arcade (by name)", got)
	}
	for sel, want := range map[string]string{"#family": "quiz", "#board": "national"} {
		if v, err := chromedp.Run(bctx, chromedp.Evaluate[string](fmt.Sprintf("document.querySelector(%q).value", sel))); err != nil {
			t.Fatal(err)
		} else if v != want {
			t.Errorf("%s opened on %q, want %q", sel, v, want)
		}
	}
	if _, err := chromedp.Run(bctx, chromedp.Poll[bool](`document.querySelectorAll("#top-body tr td.user").length === 10`,
		chromedp.WithPollingTimeout(10*time.Second))); err != nil {
		t.Fatalf("the top of the board opened never showed 10 members: %v", err)
	}
	if got := text(t, bctx, "#top-body tr:first-child td.user"); got != "q119" {
		t.Errorf("first of the top is %q, want q119 (quiz's leader)", got)
	}
	if got := text(t, bctx, "#top-why"); got != "busiest board: 120 members" {
		t.Errorf("busiest note %q", got)
	}

	// The map: every shard, grouped by family inside each node's column.
	if _, err := chromedp.Run(bctx, chromedp.Poll[bool](
		fmt.Sprintf(`document.querySelectorAll("#layout svg g.shard").length === %d`, wantShards),
		chromedp.WithPollingTimeout(20*time.Second))); err != nil {
		t.Fatalf("layout never drew %d shards (has %d): %v", wantShards, count(t, bctx, "#layout svg g.shard"), err)
	}
	if n := count(t, bctx, "#layout svg text.node"); n != 3 {
		t.Errorf("layout draws %d master columns, want 3", n)
	}
	split, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`(() => {
		const seen = {}, last = {}, bad = [];
		for (const g of document.querySelectorAll("#layout svg g.shard")) {
			const n = g.dataset.node, f = g.dataset.family;
			seen[n] ||= new Set();
			if (last[n] !== f && seen[n].has(f)) bad.push(n + ": " + f);
			seen[n].add(f); last[n] = f;
		}
		return bad;
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	if len(split) > 0 {
		t.Errorf("families split inside a node column: %v", split)
	}

	// The legend: one entry per family and dimension kind, every colour its
	// own, and each shard drawn in its entry's colour.
	if n := count(t, bctx, "#layout-legend li.legend-family"); n != wantFams {
		t.Errorf("legend has %d families, want %d", n, wantFams)
	}
	colors, err := chromedp.Run(bctx, chromedp.Evaluate[map[string]string](`Object.fromEntries(
		[...document.querySelectorAll("#layout-legend li.legend-kind")].map((li) =>
			[li.dataset.family + "/" + li.dataset.kind, li.querySelector(".swatch").dataset.color]))`))
	if err != nil {
		t.Fatal(err)
	}
	if len(colors) != 2*wantFams {
		t.Errorf("legend has %d family/kind entries, want %d", len(colors), 2*wantFams)
	}
	checkDistinct(t, colors)
	wrong, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`(() => {
		const want = Object.fromEntries([...document.querySelectorAll("#layout-legend li.legend-kind")].map((li) =>
			[li.dataset.family + "/" + li.dataset.kind, li.querySelector(".swatch").dataset.color]));
		return [...document.querySelectorAll("#layout svg g.shard")]
			.filter((g) => g.querySelector("rect").getAttribute("fill") !== want[g.dataset.family + "/" + g.dataset.kind])
			.map((g) => g.dataset.board);
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	if len(wrong) > 0 {
		t.Errorf("%d shards not in their legend colour, e.g. %s", len(wrong), wrong[0])
	}

	// Per node: memory and ops/s as the monitor's last poll saw them.
	for node, mem := range nodeMem {
		sel := fmt.Sprintf(`#layout text.node-stats[data-node=%q]`, node)
		if _, err := chromedp.Run(bctx, chromedp.Poll[bool](
			fmt.Sprintf(`document.querySelector(%q)?.dataset.memoryBytes === %q`, sel, strconv.FormatFloat(mem, 'f', -1, 64)),
			chromedp.WithPollingTimeout(15*time.Second))); err != nil {
			t.Errorf("node %s: memory %v never shown: %v", node, mem, err)
			continue
		}
		attrs, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](fmt.Sprintf(
			`(() => { const e = document.querySelector(%q); return [e.dataset.ops, e.textContent]; })()`, sel)))
		if err != nil {
			t.Fatal(err)
		}
		if ops, _ := strconv.ParseFloat(attrs[0], 64); ops != nodeOps[node] {
			t.Errorf("node %s: ops/s %s shown, the monitor has %v", node, attrs[0], nodeOps[node])
		}
		if !strings.HasPrefix(attrs[1], "used ") || !strings.HasSuffix(attrs[1], " ops/s") {
			t.Errorf("node %s: stats read %q", node, attrs[1])
		}
	}

	// At 1280×800, with the legend scrolled into view: nothing wider than
	// the viewport, the legend inside it, and the screenshot shows each
	// swatch in its colour.
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`document.querySelector("#layout-legend").scrollIntoView({block: "end"}), true`)); err != nil {
		t.Fatal(err)
	}
	boxes, err := chromedp.Run(bctx, chromedp.Evaluate[[]legendBox](`(() => {
		const ul = document.querySelector("#layout-legend"), lr = ul.getBoundingClientRect();
		return [...ul.querySelectorAll("li.legend-family, li.legend-kind")].map((li) => {
			const r = li.getBoundingClientRect(), s = li.querySelector(".swatch").getBoundingClientRect();
			return {Family: li.dataset.family, Kind: li.dataset.kind || "", Color: li.querySelector(".swatch").dataset.color,
				Left: r.left, Top: r.top, Right: r.right, Bot: r.bottom,
				SwatchX: s.left + s.width / 2, SwatchY: s.top + s.height / 2,
				ScrollWidth: ul.scrollWidth, ClientW: ul.clientWidth,
				DocScrollW: document.documentElement.scrollWidth, ViewportW: window.innerWidth,
				LegendTop: lr.top, LegendBottom: lr.bottom,
				Overflow: li.scrollWidth > li.clientWidth || li.scrollHeight > li.clientHeight};
		});
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	if len(boxes) != 3*wantFams {
		t.Fatalf("legend measured %d entries, want %d", len(boxes), 3*wantFams)
	}
	shot, err := chromedp.Run(bctx, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatal(err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatal(err)
	}
	if b := img.Bounds(); b.Dx() != viewW || b.Dy() != viewH {
		t.Fatalf("screenshot is %d×%d, want %d×%d", b.Dx(), b.Dy(), viewW, viewH)
	}
	b0 := boxes[0]
	if b0.ViewportW != viewW || b0.DocScrollW > viewW || b0.ScrollWidth > b0.ClientW {
		t.Errorf("something is wider than the %d px viewport: page %v px, legend %v of %v px (viewport %v)",
			viewW, b0.DocScrollW, b0.ScrollWidth, b0.ClientW, b0.ViewportW)
	}
	if b0.LegendTop < 0 || b0.LegendBottom > viewH {
		t.Errorf("legend spans y %v…%v, outside the %d px screenshot", b0.LegendTop, b0.LegendBottom, viewH)
	}
	for _, b := range boxes {
		name := b.Family + "/" + b.Kind
		if b.Left < 0 || b.Top < 0 || b.Right > viewW || b.Bot > viewH || b.Overflow {
			t.Errorf("legend entry %s at (%v,%v)-(%v,%v) is cut off at %d×%d (content overflowing: %v)", name, b.Left, b.Top, b.Right, b.Bot, viewW, viewH, b.Overflow)
			continue
		}
		got := img.At(int(b.SwatchX), int(b.SwatchY))
		if d := colorDistance(got, b.Color); d > 6 {
			r, g, bl, _ := got.RGBA()
			t.Errorf("legend entry %s: screenshot shows #%02x%02x%02x at its swatch, want %s", name, r>>8, g>>8, bl>>8, b.Color)
		}
	}

	if p := os.Getenv(envScreenshot); p != "" {
		full, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(strings.TrimSuffix(p, ".png")+"-map.png", full, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// A family named in the address wins over the busiest board.
	if err := chromedp.Do(bctx, chromedp.Navigate(srv+"/ui/?family=b03")); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(bctx, chromedp.Poll[bool](
		`document.querySelector("#top-body tr:first-child td.user")?.textContent === "solo" && document.querySelector("#family").value === "b03"`,
		chromedp.WithPollingTimeout(15*time.Second))); err != nil {
		t.Errorf("?family=b03 did not open b03's board: %v", err)
	}
	if hidden, err := chromedp.Run(bctx, chromedp.Evaluate[bool](`document.querySelector("#top-why").hidden`)); err != nil || !hidden {
		t.Errorf("the busiest note shows on a board named in the address (hidden=%v, %v)", hidden, err)
	}

	for _, p := range problems() {
		t.Errorf("page problem: %s", p)
	}
}

// checkDistinct fails when two legend colours are the same or too close to
// tell apart (summed RGB difference below 40 of 765).
func checkDistinct(t *testing.T, colors map[string]string) {
	t.Helper()
	names := make([]string, 0, len(colors))
	for k := range colors {
		names = append(names, k)
	}
	for i, a := range names {
		for _, b := range names[i+1:] {
			ra, ga, ba := hexRGB(t, colors[a])
			rb, gb, bb := hexRGB(t, colors[b])
			if d := abs(ra-rb) + abs(ga-gb) + abs(ba-bb); d < 40 {
				t.Errorf("legend colours of %s (%s) and %s (%s) differ by only %d", a, colors[a], b, colors[b], d)
			}
		}
	}
}

func hexRGB(t *testing.T, s string) (int, int, int) {
	t.Helper()
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "#"), 16, 32)
	if err != nil || len(s) != 7 {
		t.Fatalf("colour %q is not #rrggbb", s)
	}
	return int(v >> 16 & 255), int(v >> 8 & 255), int(v & 255)
}

func abs(x int) int { return int(math.Abs(float64(x))) }

// colorDistance is the largest channel difference between a pixel and a
// #rrggbb colour.
func colorDistance(c interface{ RGBA() (r, g, b, a uint32) }, hex string) int {
	r, g, b, _ := c.RGBA()
	v, err := strconv.ParseUint(strings.TrimPrefix(hex, "#"), 16, 32)
	if err != nil {
		return 255
	}
	return max(abs(int(r>>8)-int(v>>16&255)), abs(int(g>>8)-int(v>>8&255)), abs(int(b>>8)-int(v&255)))
}

// newServer serves the stack's handler until the test ends.
func newServer(t *testing.T, stack *teststack.Stack) string {
	t.Helper()
	srv := httptest.NewServer(toursFirst(stack.Handler))
	t.Cleanup(srv.Close)
	return srv.URL
}

// toursFirst answers each GET /v1/families only after a GET /v1/tournaments
// was answered (or 2 s passed): the page asks both at once, and the order
// in which they answer must not change the board it opens.
func toursFirst(next http.Handler) http.Handler {
	tours := make(chan struct{}, 64)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/families":
			select {
			case <-tours:
			case <-time.After(2 * time.Second):
			}
			next.ServeHTTP(w, r)
		case "/v1/tournaments":
			next.ServeHTTP(w, r)
			select {
			case tours <- struct{}{}:
			default:
			}
		default:
			next.ServeHTTP(w, r)
		}
	})
}

// gatherNodes reads the monitor's used memory and ops/s of every master
// from the stack's registry.
func gatherNodes(t *testing.T, stack *teststack.Stack) (mem, ops map[string]float64) {
	t.Helper()
	mfs, err := stack.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	mem, ops = map[string]float64{}, map[string]float64{}
	for _, mf := range mfs {
		var into map[string]float64
		switch mf.GetName() {
		case "rankgate_redis_node_used_memory_bytes":
			into = mem
		case "rankgate_redis_node_ops_per_second":
			into = ops
		default:
			continue
		}
		for _, m := range mf.GetMetric() {
			if label(m, "role") == "master" {
				into[label(m, "node")] = m.GetGauge().GetValue()
			}
		}
	}
	if len(mem) != 3 || len(ops) != 3 {
		t.Fatalf("the monitor saw %d masters' memory and %d masters' ops/s, want 3 each", len(mem), len(ops))
	}
	return mem, ops
}

func label(m *dto.Metric, name string) string {
	for _, l := range m.GetLabel() {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

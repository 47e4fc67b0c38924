package ui_test

// End to end: the status page in headless Chromium against a real in-process
// gateway (the full handler stack on the test Redis Cluster).

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/rankgate/rankgate/internal/gateway"
	"github.com/rankgate/rankgate/internal/teststack"
)

// envScreenshot names a file to write a full-page screenshot of the status
// page to (PNG), for looking at it during development.
const envScreenshot = "RANKGATE_UI_SCREENSHOT"

// chromium returns the browser's path; without one the test is skipped, or
// fails when CI=true (make test installs the Debian package chromium).
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"/usr/bin/chromium", "chromium", "chromium-browser"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("chromium is not installed (make test installs it: deploy/deps.sh chromium), and CI=true forbids skipping")
	}
	t.Skip("chromium is not installed (apt-get install -y chromium)")
	return ""
}

// browser starts a headless Chromium with a fresh profile, closed when the
// test ends, and collects the page's uncaught exceptions and error logs.
func browser(t *testing.T, path string) (context.Context, func() []string) {
	t.Helper()
	actx, cancelAlloc := chromedp.NewExecAllocator(context.Background(),
		chromedp.ExecPath(path),
		chromedp.Headless,
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.NoFirstRun,
		chromedp.NoDefaultBrowserCheck,
		chromedp.Flag("disable-quic", true),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.Flag("disable-dev-shm-usage", true),
		chromedp.UserDataDir(t.TempDir()),
		chromedp.WindowSize(1400, 1100),
	)
	ctx, cancelCtx := chromedp.NewContext(actx)
	ctx, cancelTimeout := context.WithTimeout(ctx, 90*time.Second)
	t.Cleanup(func() { cancelTimeout(); cancelCtx(); cancelAlloc() })

	var mu sync.Mutex
	var problems []string
	if err := chromedp.Listen(ctx, func(ev any) {
		var p string
		switch ev := ev.(type) {
		case *runtime.EventExceptionThrown:
			p = "exception: " + ev.ExceptionDetails.Text
			if ev.ExceptionDetails.Exception != nil {
				p += " " + ev.ExceptionDetails.Exception.Description
			}
		case *cdplog.EventEntryAdded:
			if ev.Entry.Level == cdplog.EntryLevelError {
				p = fmt.Sprintf("log %s: %s (%s)", ev.Entry.Source, ev.Entry.Text, ev.Entry.URL)
			}
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError {
				p = "console.error"
				for _, a := range ev.Args {
					p += " " + string(a.Value) + a.Description
				}
			}
		}
		if p != "" {
			mu.Lock()
			problems = append(problems, p)
			mu.Unlock()
		}
	}); err != nil {
		t.Fatalf("chromium did not start: %v", err)
	}
	if _, err := chromedp.Call(ctx, cdplog.Enable, cdp.Empty{}); err != nil {
		t.Fatalf("Log.enable: %v", err)
	}
	return ctx, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), problems...)
	}
}

func text(t *testing.T, ctx context.Context, sel string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Text(chromedp.CSS(sel)))
	if err != nil {
		t.Fatalf("text of %s: %v", sel, err)
	}
	return strings.TrimSpace(s)
}

func count(t *testing.T, ctx context.Context, sel string) int {
	t.Helper()
	n, err := chromedp.Run(ctx, chromedp.Evaluate[int](fmt.Sprintf("document.querySelectorAll(%q).length", sel)))
	if err != nil {
		t.Fatalf("count %s: %v", sel, err)
	}
	return n
}

func waitVisible(t *testing.T, ctx context.Context, what, sel string) {
	t.Helper()
	if err := chromedp.Do(ctx, chromedp.WaitVisible(chromedp.CSS(sel))); err != nil {
		t.Fatalf("%s (%s) never showed: %v", what, sel, err)
	}
}

func TestStatusPage(t *testing.T) {
	path := chromium(t)
	stack := teststack.New(t, teststack.Options{})
	ctx := context.Background()

	// A board of 30: user-N has N×10 points, so user-30 leads and user-17
	// ranks 14th.
	evs := make([]gateway.Event, 30)
	for i := range evs {
		d := int64((i + 1) * 10)
		evs[i] = gateway.Event{EventID: fmt.Sprintf("seed-%d", i+1), Family: "learning", User: fmt.Sprintf("user-%02d", i+1),
			Delta: &d, Dims: map[string]string{"province": "zhejiang"}}
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
	period, err := stack.Service.Period(ctx, "learning", time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(stack.Handler)
	t.Cleanup(srv.Close)
	// One read first, so the cache counters of the family exist when the
	// page first reads /metrics.
	if res, err := srv.Client().Get(srv.URL + "/v1/boards/learning/current/national/top?limit=10"); err != nil {
		t.Fatal(err)
	} else {
		res.Body.Close()
	}

	// An active tournament with one seat taken and one event: the page lists
	// it and its board reads like any family's.
	tourStart, tourEnd := time.Now().Add(-time.Minute).UTC(), time.Now().Add(time.Hour).UTC()
	postJSON(t, srv.URL+"/v1/tournaments", fmt.Sprintf(`{"id":"cup-ui","title":"Friday cup","start":%q,"end":%q,"max_size":100}`,
		tourStart.Format(time.RFC3339), tourEnd.Format(time.RFC3339)), http.StatusCreated)
	postJSON(t, srv.URL+"/v1/tournaments/cup-ui/join", `{"user":"racer-1"}`, http.StatusOK)
	tourPts := int64(7)
	if _, err := stack.Service.ApplyEvent(ctx, gateway.Event{EventID: "cup-1", Family: "cup-ui", User: "racer-1", Delta: &tourPts}); err != nil {
		t.Fatal(err)
	}

	bctx, problems := browser(t, path)
	if err := chromedp.Do(bctx, chromedp.Navigate(srv.URL+"/ui")); err != nil { // redirected to /ui/
		t.Fatalf("navigate: %v", err)
	}

	// Families and their current periods.
	waitVisible(t, bctx, "the families table", "#families-body td.period")
	if got := text(t, bctx, "#families-body td.period"); got != period.Period {
		t.Errorf("current period shown %q, want %q", got, period.Period)
	}

	// The live top of the default board (learning, national).
	waitVisible(t, bctx, "the top 10", "#top-body tr:nth-child(10)")
	if n := count(t, bctx, "#top-body tr"); n != 10 {
		t.Errorf("top shows %d rows, want 10", n)
	}
	if got := text(t, bctx, "#top-body tr:first-child td.user"); got != "user-30" {
		t.Errorf("first of the top is %q, want user-30", got)
	}
	if got := text(t, bctx, "#top-body tr:nth-child(10) td.user"); got != "user-21" {
		t.Errorf("tenth of the top is %q, want user-21", got)
	}

	// Member search: standing and neighbours.
	if err := chromedp.Do(bctx,
		chromedp.SendKeys(chromedp.CSS("#search-input"), "user-17"),
		chromedp.Click(chromedp.CSS("#search-button")),
	); err != nil {
		t.Fatal(err)
	}
	waitVisible(t, bctx, "the member's standing", "#member-standing dd.rank")
	if got := text(t, bctx, "#member-standing dd.user"); got != "user-17" {
		t.Errorf("search found %q, want user-17", got)
	}
	if got := text(t, bctx, "#member-standing dd.rank"); got != "#14" {
		t.Errorf("user-17 ranks %q, want #14", got)
	}
	if got := text(t, bctx, "#member-standing dd.points"); got != "170" {
		t.Errorf("user-17 has %q points, want 170", got)
	}
	if got := text(t, bctx, "#around-body tr.hl td.user"); got != "user-17" {
		t.Errorf("highlighted neighbour %q, want user-17", got)
	}
	if n := count(t, bctx, "#around-body tr"); n != 7 {
		t.Errorf("around shows %d rows, want 7 (radius 3)", n)
	}
	// The link to the board's big-screen page follows the board and member.
	if href, err := chromedp.Run(bctx, chromedp.Evaluate[string](`document.querySelector("#live-link").getAttribute("href")`)); err != nil {
		t.Fatal(err)
	} else if want := "/ui/live/learning/current/national?top=10&member=user-17"; href != want {
		t.Errorf("big-screen link %q, want %q", href, want)
	}

	// The shard → node picture: national's 4 shards and the province
	// board's one, each in its master's column.
	waitVisible(t, bctx, "the layout picture", "#layout svg g.shard")
	if n := count(t, bctx, "#layout svg g.shard"); n != 5 {
		t.Errorf("layout draws %d shards, want 5", n)
	}
	if n := count(t, bctx, "#layout svg text.node"); n != 3 {
		t.Errorf("layout draws %d master columns, want 3", n)
	}

	// The cache hit ratio, from /metrics.
	waitVisible(t, bctx, "the cache ratio", `#cache .ratio[data-family="learning"]`)

	// Active tournaments: listed with their seats; the link shows the
	// tournament's board in the live top.
	waitVisible(t, bctx, "the tournaments card", "#tournaments-body td.tournament")
	if n := count(t, bctx, "#tournaments-body tr"); n != 1 {
		t.Errorf("tournaments card lists %d rows, want 1", n)
	}
	if got := text(t, bctx, "#tournaments-body td.seats"); got != "1 / 100" {
		t.Errorf("seats shown %q, want 1 / 100", got)
	}
	if err := chromedp.Do(bctx, chromedp.Click(chromedp.CSS("#tournaments-body a.show"))); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(bctx, chromedp.Poll[bool](
		`document.querySelector("#top-body tr:first-child td.user")?.textContent === "racer-1" && document.querySelector("#family").value === "cup-ui"`,
		chromedp.WithPollingTimeout(15*time.Second))); err != nil {
		t.Errorf("the tournament's top did not show racer-1: %v", err)
	}
	// Back to the family the rest of the test reads.
	if _, err := chromedp.Run(bctx, chromedp.Evaluate[bool](
		`(() => { const s = document.querySelector("#family"); s.value = "learning"; s.dispatchEvent(new Event("change")); return true; })()`)); err != nil {
		t.Fatal(err)
	}

	// The top refreshes by itself: user-05 overtakes everyone.
	d := int64(1000)
	if _, err := stack.Service.ApplyEvent(ctx, gateway.Event{EventID: "jump", Family: "learning", User: "user-05", Delta: &d}); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(bctx, chromedp.Poll[bool](
		`document.querySelector("#top-body tr:first-child td.user")?.textContent === "user-05"`,
		chromedp.WithPollingTimeout(15*time.Second))); err != nil {
		t.Errorf("the top did not refresh to show user-05 first: %v", err)
	}

	if p := os.Getenv(envScreenshot); p != "" {
		png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range problems() {
		t.Errorf("page problem: %s", p)
	}
}

// postJSON posts body to url and fails the test unless the answer is want.
func postJSON(t *testing.T, url, body string, want int) {
	t.Helper()
	res, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	defer res.Body.Close()
	if res.StatusCode != want {
		b, _ := io.ReadAll(res.Body)
		t.Fatalf("POST %s: %d %s, want %d", url, res.StatusCode, b, want)
	}
}

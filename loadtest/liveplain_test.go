package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// fakeCPU answers /metrics with a CPU counter that grows by step per call.
type fakeCPU struct {
	mu   sync.Mutex
	cpu  float64
	step float64
}

func (f *fakeCPU) serve(w http.ResponseWriter) {
	f.mu.Lock()
	f.cpu += f.step
	v := f.cpu
	f.mu.Unlock()
	fmt.Fprintf(w, "process_cpu_seconds_total %g\n", v)
}

// The plain phases run the same clients against the plain server: plainlive
// opens K streams asking for the events per client-second the live phases
// of that K got (times the interval), plainpoll sends one GET per top-only
// client and interval; both measure the plain server's CPU, not the
// gateway's; plainlive before any live phase of its K is refused.
func TestPlainPhases(t *testing.T) {
	t.Parallel()
	gwCPU := &fakeCPU{step: 100}
	gateway := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch {
		case r.URL.Path == "/metrics":
			gwCPU.serve(w)
		case r.Method == http.MethodPost && r.URL.Path == "/v1/events":
			w.Header().Set("Content-Type", "application/json")
			_, _ = io.WriteString(w, `{"event_id":"e","boards":[]}`)
		default:
			http.NotFound(w, r)
		}
	}))
	defer gateway.Close()

	plainCPU := &fakeCPU{step: 0.001}
	var streams, gets atomic.Int64
	rates := make(chan string, 16)
	plain := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/metrics":
			plainCPU.serve(w)
		case "/live":
			streams.Add(1)
			rates <- r.URL.Query().Get("rate")
			// Delimited by the connection's close, as the plain server's.
			conn, _, err := http.NewResponseController(w).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			_, _ = io.WriteString(conn, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"+
				"id: 1\nevent: snapshot\ndata: {}\n\nid: 2\nevent: update\ndata: {}\n\n")
			_, _ = conn.Read(make([]byte, 1)) // until the client goes
		default:
			gets.Add(1)
			_, _ = io.WriteString(w, `{"entries":[]}`)
		}
	}))
	defer plain.Close()

	w := testWorld(t, func(sc *Scenario) {
		sc.Gateway = gateway.URL
		sc.Rate = 20
		sc.Duration = 300 * time.Millisecond
	})
	lf := &liveFlags{interval: 100 * time.Millisecond, topOnly: 1, top: 10, radius: 2, settle: 50 * time.Millisecond, connect: 4, plain: plain.URL}
	lr := &liveRun{sc: w.sc, lf: lf, w: w, stderr: io.Discard, quiet: true, seed: 1, rates: map[int][]float64{}}
	ctx := context.Background()

	if _, err := lr.phase(ctx, "plainlive", 3); err == nil || !strings.Contains(err.Error(), "needs a live phase") {
		t.Fatalf("plainlive before a live phase: %v, want refused", err)
	}
	lr.rates[3] = []float64{2, 4} // two live phases of K=3: 3 events per client-second on average
	p, err := lr.phase(ctx, "plainlive", 3)
	if err != nil {
		t.Fatal(err)
	}
	if p.Attached != 3 || streams.Load() != 3 || p.Events != 6 {
		t.Fatalf("plainlive: attached %d, streams %d, events %d; want 3, 3, 6", p.Attached, streams.Load(), p.Events)
	}
	for range 3 {
		if r := <-rates; r != "0.3000" { // 3 per second × 100 ms
			t.Fatalf("rate asked %q, want 0.3000", r)
		}
	}
	// The plain server's CPU: its counter grows by 1 ms between two reads,
	// the gateway's by 100 s.
	if want := 0.001; p.CPUSeconds < want*0.99 || p.CPUSeconds > want*1.01 {
		t.Fatalf("plainlive CPU %v s, want the plain server's %v", p.CPUSeconds, want)
	}
	if p.Writes == 0 {
		t.Fatal("no writes during the plain phase")
	}

	q, err := lr.phase(ctx, "plainpoll", 3)
	if err != nil {
		t.Fatal(err)
	}
	if q.Reads == 0 || q.ReadErrors != 0 || gets.Load() != q.Reads || q.ReadsDue == 0 {
		t.Fatalf("plainpoll: %d reads (%d errors), %d GETs served, %d due", q.Reads, q.ReadErrors, gets.Load(), q.ReadsDue)
	}
	if want := 0.001; q.CPUSeconds < want*0.99 || q.CPUSeconds > want*1.01 {
		t.Fatalf("plainpoll CPU %v s, want the plain server's %v", q.CPUSeconds, want)
	}
}

// The summary shows the plain server's live ÷ poll beside the gateway's.
func TestLiveSummaryPlainFloor(t *testing.T) {
	t.Parallel()
	all := []livePhase{
		{Kind: "writes", K: 100, CPUPerClient: 10},
		{Kind: "live", K: 100, CPUPerClient: 18},
		{Kind: "writes", K: 100, CPUPerClient: 10},
		{Kind: "poll", K: 100, CPUPerClient: 70},
		{Kind: "plainlive", K: 100, CPUPerClient: 4},
		{Kind: "plainpoll", K: 100, CPUPerClient: 50},
		{Kind: "plainlive", K: 100, CPUPerClient: 6},
		{Kind: "live", K: 200, CPUPerClient: 1},
	}
	sum := liveSummary(all, []int{100, 200}, time.Second)
	for _, want := range []string{
		"| 100 | 0.133 (8.0 ÷ 60.0 µs) |",
		"| 0.100 (5.0 ÷ 50.0 µs) |\n",
		"| 100 | plainpoll | 0 | 0 / 0 / 0 | 0 (0) | 0 of 0 / 0 |",
	} {
		if !strings.Contains(sum, want) {
			t.Errorf("summary lacks %q:\n%s", want, sum)
		}
	}
	if l := sum[strings.Index(sum, "\n| 200 | - |"):]; !strings.HasSuffix(strings.TrimSpace(strings.SplitN(l[1:], "\n", 2)[0]), "| - |") {
		t.Errorf("K=200 without plain phases: %q, want a floor of -", l)
	}
}

package httpapi_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/prometheus/client_golang/prometheus"

	"github.com/rankgate/rankgate/internal/gateway"
	"github.com/rankgate/rankgate/internal/httpapi"
	"github.com/rankgate/rankgate/internal/player"
	"github.com/rankgate/rankgate/internal/soon"
	"github.com/rankgate/rankgate/internal/teststack"
)

// liveFamilies: a family refreshed every 100 ms, without the answer cache
// (so an update follows a write within one interval).
const liveFamilies = `  lv:
    source: events
    aggregate: sum
    order: desc
    period: week
    timezone: UTC
    cache_ttl: 0s
    live: {interval: 100ms}
    dimensions:
      national: {shards: 4}
`

const livePath = "/v1/boards/lv/current/national/live"

type sseEvent struct {
	ID, Type, Data string
	Comment        string // a comment line (": ping"), nothing else set
}

// liveData is the data of a snapshot or update.
type liveData struct {
	Board  string          `json:"board"`
	AsOf   time.Time       `json:"as_of"`
	Source string          `json:"source"`
	Top    *livePage       `json:"top"`
	Member json.RawMessage `json:"member"`
	Around *livePage       `json:"around"`
}

type livePage struct {
	Entries []struct {
		User   string `json:"user"`
		Points int64  `json:"points"`
		Rank   int64  `json:"rank"`
	} `json:"entries"`
}

func liveStack(t *testing.T, lv teststack.Live) (*teststack.Stack, *httptest.Server) {
	t.Helper()
	if lv.Heartbeat == 0 {
		lv.Heartbeat = time.Hour
	}
	st := teststack.New(t, teststack.Options{Families: liveFamilies, Live: lv})
	srv := httptest.NewServer(st.Handler)
	t.Cleanup(srv.Close)
	return st, srv
}

func writeEvent(t *testing.T, st *teststack.Stack, user string, delta int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	id := fmt.Sprintf("%s-%d", user, time.Now().UnixNano())
	if _, err := st.Service.ApplyEvent(ctx, gateway.Event{EventID: id, Family: "lv", User: user, Delta: &delta}); err != nil {
		t.Fatal(err)
	}
}

// openLive opens a stream; its events arrive on the channel, closed at the
// stream's end.
func openLive(t *testing.T, url string, hdr http.Header) (*http.Response, <-chan sseEvent) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range hdr {
		req.Header[k] = v
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = resp.Body.Close() })
	ch := make(chan sseEvent, 1000)
	if resp.StatusCode != http.StatusOK {
		close(ch)
		return resp, ch
	}
	go func() {
		defer close(ch)
		sc := bufio.NewScanner(resp.Body)
		sc.Buffer(make([]byte, 1<<20), 1<<20)
		var ev sseEvent
		for sc.Scan() {
			line := sc.Text()
			switch {
			case line == "":
				if ev.Type != "" {
					ch <- ev
				}
				ev = sseEvent{}
			case strings.HasPrefix(line, ":"):
				ch <- sseEvent{Comment: strings.TrimSpace(line[1:])}
			case strings.HasPrefix(line, "id: "):
				ev.ID = line[4:]
			case strings.HasPrefix(line, "event: "):
				ev.Type = line[7:]
			case strings.HasPrefix(line, "data: "):
				ev.Data = line[6:]
			}
		}
	}()
	return resp, ch
}

// nextEvent returns the stream's next event (comments skipped), failing the
// test after 10 s or at the stream's end.
func nextEvent(t *testing.T, ch <-chan sseEvent) sseEvent {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatal("the stream ended")
			}
			if ev.Comment == "" {
				return ev
			}
		case <-timeout:
			t.Fatal("no event within 10s")
		}
	}
}

func decodeData(t *testing.T, ev sseEvent) liveData {
	t.Helper()
	var d liveData
	if err := json.Unmarshal([]byte(ev.Data), &d); err != nil {
		t.Fatalf("event data %q: %v", ev.Data, err)
	}
	return d
}

func metricSum(t *testing.T, reg prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	next:
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				if v, ok := labels[lp.GetName()]; ok && v != lp.GetValue() {
					continue next
				}
			}
			switch {
			case m.Counter != nil:
				sum += m.Counter.GetValue()
			case m.Gauge != nil:
				sum += m.Gauge.GetValue()
			case m.Histogram != nil:
				sum += float64(m.Histogram.GetSampleCount())
			}
		}
	}
	return sum
}

func TestLiveSnapshotThenUpdate(t *testing.T) {
	t.Parallel()
	st, srv := liveStack(t, teststack.Live{})
	writeEvent(t, st, "u1", 10)
	resp, ch := openLive(t, srv.URL+livePath+"?top=5", nil)
	if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream" {
		t.Fatalf("status %d, content type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	ev := nextEvent(t, ch)
	if ev.Type != "snapshot" || ev.ID != "1" {
		t.Fatalf("first event %+v, want snapshot id 1", ev)
	}
	d := decodeData(t, ev)
	if d.Board == "" || d.AsOf.IsZero() || d.Source == "" || d.Top == nil || len(d.Top.Entries) != 1 || d.Top.Entries[0].User != "u1" {
		t.Fatalf("snapshot %s", ev.Data)
	}
	if strings.Contains(ev.Data, `"member"`) || strings.Contains(ev.Data, `"around"`) {
		t.Fatalf("member and around without ?member=: %s", ev.Data)
	}
	writeEvent(t, st, "u2", 20)
	ev = nextEvent(t, ch)
	if ev.Type != "update" || ev.ID != "2" {
		t.Fatalf("second event %+v, want update id 2", ev)
	}
	d = decodeData(t, ev)
	if len(d.Top.Entries) != 2 || d.Top.Entries[0].User != "u2" || d.Top.Entries[0].Points != 20 {
		t.Fatalf("update %s", ev.Data)
	}
}

func TestLiveNoUpdateWithoutChange(t *testing.T) {
	t.Parallel()
	st, srv := liveStack(t, teststack.Live{Heartbeat: 50 * time.Millisecond})
	writeEvent(t, st, "u1", 10)
	_, ch := openLive(t, srv.URL+livePath, nil)
	if ev := nextEvent(t, ch); ev.Type != "snapshot" {
		t.Fatalf("first event %+v", ev)
	}
	// Five more computations of the board and at least two heartbeats:
	// nothing changed, so nothing but pings.
	start := metricSum(t, st.Registry, "rankgate_live_computation_seconds", nil)
	pings := 0
	timeout := time.After(10 * time.Second)
	for pings < 2 || metricSum(t, st.Registry, "rankgate_live_computation_seconds", nil) < start+5 {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatal("the stream ended")
			}
			if ev.Comment == "ping" {
				pings++
			} else if ev.Comment == "" {
				t.Fatalf("an event without a change: %+v", ev)
			}
		case <-timeout:
			t.Fatalf("%d pings in 10s", pings)
		}
	}
}

func TestLiveMemberAround(t *testing.T) {
	t.Parallel()
	st, srv := liveStack(t, teststack.Live{})
	for i, u := range []string{"a", "b", "c", "d", "e"} {
		writeEvent(t, st, u, int64(10*(i+1)))
	}
	_, ch := openLive(t, srv.URL+livePath+"?top=2&member=c&radius=1", nil)
	d := decodeData(t, nextEvent(t, ch))
	var m struct {
		User   string `json:"user"`
		Points int64  `json:"points"`
		Rank   int64  `json:"rank"`
		Board  string `json:"board"`
	}
	if err := json.Unmarshal(d.Member, &m); err != nil || m.User != "c" || m.Rank != 3 || m.Points != 30 || m.Board == "" {
		t.Fatalf("member %s (%v)", d.Member, err)
	}
	if d.Around == nil || len(d.Around.Entries) != 3 || d.Around.Entries[1].User != "c" {
		t.Fatalf("around %+v", d.Around)
	}
	if len(d.Top.Entries) != 2 || d.Top.Entries[0].User != "e" {
		t.Fatalf("top %+v", d.Top)
	}

	// Not ranked: member and around are null, and the member's first event
	// is an update.
	_, ch = openLive(t, srv.URL+livePath+"?member=zed", nil)
	ev := nextEvent(t, ch)
	if !strings.Contains(ev.Data, `"member":null`) || !strings.Contains(ev.Data, `"around":null`) {
		t.Fatalf("unranked member: %s", ev.Data)
	}
	writeEvent(t, st, "zed", 1)
	ev = nextEvent(t, ch)
	d = decodeData(t, ev)
	if ev.Type != "update" || !strings.Contains(string(d.Member), `"user":"zed"`) || d.Around == nil {
		t.Fatalf("after zed's event: %+v", ev)
	}
}

func TestLiveLastEventIDGivesFreshSnapshot(t *testing.T) {
	t.Parallel()
	st, srv := liveStack(t, teststack.Live{})
	writeEvent(t, st, "u1", 10)
	_, ch := openLive(t, srv.URL+livePath, http.Header{"Last-Event-ID": {"41"}})
	ev := nextEvent(t, ch)
	if ev.Type != "snapshot" || ev.ID != "42" {
		t.Fatalf("after Last-Event-ID 41: %+v, want snapshot id 42", ev)
	}
}

func liveTokens() []httpapi.Token {
	return []httpapi.Token{
		{Name: "ALICE", Secret: "alice-secret-0123456789abcdef", Scopes: []string{httpapi.ScopeRead}},
		{Name: "BOB", Secret: "bob-secret-0123456789abcdef0", Scopes: []string{httpapi.ScopeRead}},
	}
}

func bearer(secret string) http.Header { return http.Header{"Authorization": {"Bearer " + secret}} }

func TestLiveLimits(t *testing.T) {
	t.Parallel()
	alice, bob := bearer(liveTokens()[0].Secret), bearer(liveTokens()[1].Secret)
	for _, tc := range []struct {
		title string
		lv    teststack.Live
		third http.Header // refused
		other http.Header // let in (nil: none tried)
	}{
		{"max_subscribers", teststack.Live{MaxSubscribers: 2, MaxPerToken: 2}, bob, nil},
		{"max_per_token", teststack.Live{MaxSubscribers: 100, MaxPerToken: 2}, alice, bob},
	} {
		t.Run(tc.title, func(t *testing.T) {
			t.Parallel()
			st := teststack.New(t, teststack.Options{Families: liveFamilies, Live: tc.lv, Tokens: liveTokens()})
			srv := httptest.NewServer(st.Handler)
			t.Cleanup(srv.Close)
			writeEvent(t, st, "u1", 10)
			for range 2 {
				_, ch := openLive(t, srv.URL+livePath, alice)
				nextEvent(t, ch)
			}
			resp, _ := openLive(t, srv.URL+livePath, tc.third)
			body := new(bytes.Buffer)
			_, _ = body.ReadFrom(resp.Body)
			if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") == "" ||
				!strings.Contains(body.String(), `"unavailable"`) {
				t.Fatalf("third stream: %d Retry-After %q %s", resp.StatusCode, resp.Header.Get("Retry-After"), body)
			}
			if got := metricSum(t, st.Registry, "rankgate_live_refused_total", map[string]string{"reason": tc.title}); got != 1 {
				t.Fatalf("refused{%s} = %v", tc.title, got)
			}
			if tc.other != nil {
				_, ch := openLive(t, srv.URL+livePath, tc.other)
				if ev := nextEvent(t, ch); ev.Type != "snapshot" {
					t.Fatalf("another token's stream: %+v", ev)
				}
			}
		})
	}
}

// TestLiveTicket: a browser opens the stream with ?ticket= from POST
// /v1/tickets (no Authorization header); the ticket counts for its token.
func TestLiveTicket(t *testing.T) {
	t.Parallel()
	st := teststack.New(t, teststack.Options{Families: liveFamilies, Live: teststack.Live{MaxPerToken: 1}, Tokens: liveTokens()})
	srv := httptest.NewServer(st.Handler)
	t.Cleanup(srv.Close)
	writeEvent(t, st, "u1", 10)
	ticket := func() string {
		req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/tickets", nil)
		req.Header = bearer(liveTokens()[0].Secret)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var tk struct{ Ticket string }
		if err := json.NewDecoder(resp.Body).Decode(&tk); err != nil || resp.StatusCode != http.StatusCreated {
			t.Fatalf("POST /v1/tickets: %d %v", resp.StatusCode, err)
		}
		return tk.Ticket
	}
	_, ch := openLive(t, srv.URL+livePath+"?ticket="+ticket(), nil)
	if ev := nextEvent(t, ch); ev.Type != "snapshot" {
		t.Fatalf("with a ticket: %+v", ev)
	}
	// The ticket stood for ALICE, who has her one stream open now.
	resp, _ := openLive(t, srv.URL+livePath+"?ticket="+ticket(), nil)
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("ALICE's second stream by ticket: %d", resp.StatusCode)
	}
	resp, _ = openLive(t, srv.URL+livePath, nil)
	if resp.StatusCode != http.StatusUnauthorized {
		t.Fatalf("without token or ticket: %d", resp.StatusCode)
	}
}

func TestLiveSharedComputation(t *testing.T) {
	t.Parallel()
	st, srv := liveStack(t, teststack.Live{})
	writeEvent(t, st, "u1", 10)
	const n = 8
	chans := make([]<-chan sseEvent, 0, 2*n)
	for range n {
		_, ch := openLive(t, srv.URL+livePath+"?top=3", nil)
		chans = append(chans, ch)
		_, ch = openLive(t, srv.URL+livePath+"?top=3&member=u1&radius=1", nil)
		chans = append(chans, ch)
	}
	for _, ch := range chans {
		nextEvent(t, ch)
	}
	read := func() (rounds, tops, members float64) {
		return metricSum(t, st.Registry, "rankgate_live_computation_seconds", nil),
			metricSum(t, st.Registry, "rankgate_live_computations_total", map[string]string{"shape": "top"}),
			metricSum(t, st.Registry, "rankgate_live_computations_total", map[string]string{"shape": "member"})
	}
	r0, t0, m0 := read()
	writeEvent(t, st, "u2", 20)
	soon.Eventually(t, 10*time.Second, func() error {
		if r, _, _ := read(); r < r0+5 {
			return fmt.Errorf("%v rounds", r-r0)
		}
		return nil
	})
	r1, t1, m1 := read()
	// One Top and one member computation per round, whatever the number of
	// subscribers (a round may be between its reads and its observation).
	rounds := r1 - r0
	for name, d := range map[string]float64{"top": t1 - t0, "member": m1 - m0} {
		if d < rounds-1 || d > rounds+1 {
			t.Errorf("%s computations: %v in %v rounds, for %d subscribers", name, d, rounds, n)
		}
	}
	// Every subscriber got the update, from the shared computation.
	for _, ch := range chans {
		if ev := nextEvent(t, ch); ev.Type != "update" {
			t.Fatalf("event %+v", ev)
		}
	}
}

func TestLiveShutdownSendsReconnect(t *testing.T) {
	t.Parallel()
	st, srv := liveStack(t, teststack.Live{})
	writeEvent(t, st, "u1", 10)
	_, ch := openLive(t, srv.URL+livePath, nil)
	nextEvent(t, ch)
	st.Live.Close()
	if ev := nextEvent(t, ch); ev.Type != "reconnect" {
		t.Fatalf("at shutdown: %+v", ev)
	}
	for ev := range ch { // the stream ends
		if ev.Comment == "" {
			t.Fatalf("after reconnect: %+v", ev)
		}
	}
	resp, _ := openLive(t, srv.URL+livePath, nil)
	if resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("a stream after shutdown: %d", resp.StatusCode)
	}
}

// TestLiveOutlivesWriteTimeout: a server write_timeout shorter than the
// stream does not cut it (each write sets its own deadline).
func TestLiveOutlivesWriteTimeout(t *testing.T) {
	t.Parallel()
	st := teststack.New(t, teststack.Options{Families: liveFamilies, Live: teststack.Live{Heartbeat: 50 * time.Millisecond}})
	srv := httptest.NewUnstartedServer(st.Handler)
	srv.Config.WriteTimeout = 200 * time.Millisecond
	srv.Start()
	t.Cleanup(srv.Close)
	writeEvent(t, st, "u1", 10)
	_, ch := openLive(t, srv.URL+livePath, nil)
	nextEvent(t, ch)
	start := time.Now()
	for pings := 0; pings < 20 || time.Since(start) < time.Second; {
		select {
		case ev, ok := <-ch:
			if !ok {
				t.Fatalf("the stream ended after %s (%d pings), server write_timeout 200ms", time.Since(start), pings)
			}
			if ev.Comment == "ping" {
				pings++
			}
		case <-time.After(10 * time.Second):
			t.Fatal("no ping within 10s")
		}
	}
}

// blockingWriter is a ResponseWriter over a connection whose reader stops
// taking bytes after the first `open` writes: later writes block until the
// deadline set by SetWriteDeadline passes (then fail as a net.Conn would) or
// until release is closed.
type blockingWriter struct {
	hdr     http.Header
	release chan struct{}
	blocked chan struct{} // closed at the first blocked write

	mu       sync.Mutex
	open     int
	deadline time.Time
	buf      bytes.Buffer
	once     sync.Once
}

func newBlockingWriter(open int) *blockingWriter {
	return &blockingWriter{hdr: http.Header{}, open: open, release: make(chan struct{}), blocked: make(chan struct{})}
}

func (w *blockingWriter) Header() http.Header { return w.hdr }
func (w *blockingWriter) WriteHeader(int)     {}
func (w *blockingWriter) Flush()              {}

func (w *blockingWriter) SetWriteDeadline(t time.Time) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.deadline = t
	return nil
}

func (w *blockingWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	if w.open > 0 {
		w.open--
		defer w.mu.Unlock()
		return w.buf.Write(p)
	}
	deadline := w.deadline
	w.mu.Unlock()
	w.once.Do(func() { close(w.blocked) })
	var expire <-chan time.Time
	if !deadline.IsZero() {
		tm := time.NewTimer(time.Until(deadline))
		defer tm.Stop()
		expire = tm.C
	}
	select {
	case <-expire:
		return 0, os.ErrDeadlineExceeded
	case <-w.release:
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.buf.Write(p)
	}
}

func (w *blockingWriter) written() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}

// TestLiveReaderThatStopsIsDropped: a client that stops reading is dropped
// once a write waits past live.write_timeout; its handler returns and its
// place is freed.
func TestLiveReaderThatStopsIsDropped(t *testing.T) {
	t.Parallel()
	st := teststack.New(t, teststack.Options{Families: liveFamilies,
		Live: teststack.Live{Heartbeat: 50 * time.Millisecond, WriteTimeout: 200 * time.Millisecond}})
	writeEvent(t, st, "u1", 10)
	w := newBlockingWriter(2) // the opening comment and the snapshot
	req := httptest.NewRequest(http.MethodGet, livePath, nil)
	done := make(chan struct{})
	go func() { defer close(done); st.Handler.ServeHTTP(w, req) }()
	select {
	case <-w.blocked:
	case <-time.After(10 * time.Second):
		t.Fatal("no blocked write within 10s")
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler of a reader that stopped still runs after 10s (write timeout 200ms)")
	}
	if !strings.Contains(w.written(), "event: snapshot") {
		t.Fatalf("written: %q", w.written())
	}
	if n := st.Live.Subscribers(); n != 0 {
		t.Fatalf("%d subscribers after the drop", n)
	}
	if got := metricSum(t, st.Registry, "rankgate_live_drops_total", map[string]string{"reason": "write"}); got != 1 {
		t.Fatalf("drops{write} = %v", got)
	}
}

// TestLiveSlowReaderOverloaded: a reader that takes its writes, but too
// slowly — its newest answer waits longer than live.max_behind — gets
// "event: overloaded" and is closed.
func TestLiveSlowReaderOverloaded(t *testing.T) {
	t.Parallel()
	st := teststack.New(t, teststack.Options{Families: liveFamilies,
		Live: teststack.Live{Heartbeat: time.Hour, WriteTimeout: time.Minute, MaxBehind: 300 * time.Millisecond}})
	writeEvent(t, st, "u1", 10)
	w := newBlockingWriter(2)
	req := httptest.NewRequest(http.MethodGet, livePath, nil)
	done := make(chan struct{})
	go func() { defer close(done); st.Handler.ServeHTTP(w, req) }()
	soon.Eventually(t, 10*time.Second, func() error {
		if !strings.Contains(w.written(), "event: snapshot") {
			return errors.New("no snapshot yet")
		}
		return nil
	})
	writeEvent(t, st, "u2", 20) // taken by the handler, whose write blocks
	select {
	case <-w.blocked:
	case <-time.After(10 * time.Second):
		t.Fatal("no blocked write within 10s")
	}
	writeEvent(t, st, "u3", 30) // pending behind the blocked write
	soon.Eventually(t, 10*time.Second, func() error {
		if got := metricSum(t, st.Registry, "rankgate_live_drops_total", map[string]string{"reason": "overloaded"}); got != 1 {
			return fmt.Errorf("drops{overloaded} = %v", got)
		}
		return nil
	})
	close(w.release)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the handler still runs 10s after overloaded")
	}
	out := w.written()
	if !strings.HasSuffix(out, "event: overloaded\ndata: {}\n\n") {
		t.Fatalf("written: %q", out)
	}
	if n := st.Live.Subscribers(); n != 0 {
		t.Fatalf("%d subscribers after the drop", n)
	}
}

// TestLiveFromTheReadIndex: a family with a read index is answered from it
// (source "index"), and its updates follow writes through the change feed.
func TestLiveFromTheReadIndex(t *testing.T) {
	t.Parallel()
	families := strings.Replace(liveFamilies, "    live: {interval: 100ms}\n",
		"    live: {interval: 100ms}\n    index: {enabled: true, max_lag: 250ms}\n", 1)
	st := teststack.New(t, teststack.Options{Families: families, Live: teststack.Live{Heartbeat: time.Hour}})
	srv := httptest.NewServer(st.Handler)
	t.Cleanup(srv.Close)
	ctx, cancel := context.WithCancel(context.Background())
	indexDone := make(chan struct{})
	go func() { defer close(indexDone); st.Service.RunIndex(ctx) }()
	t.Cleanup(func() { cancel(); <-indexDone })
	writeEvent(t, st, "u0", 1)
	_, ch := openLive(t, srv.URL+livePath, nil)
	nextEvent(t, ch)
	// Until the board is loaded the answers come from Redis; every write
	// changes the answer, so each brings an update naming its source.
	for i := int64(2); ; i++ {
		writeEvent(t, st, "u0", 1)
		ev := nextEvent(t, ch)
		d := decodeData(t, ev)
		if d.Top.Entries[0].Points < i {
			continue // an earlier write's update
		}
		if d.Source == "index" {
			break
		}
		if i > 200 {
			t.Fatalf("after %d writes the live answer still comes from %q", i, d.Source)
		}
	}
}

// TestLiveStoppedReaderOverTCP: over a real connection taken over from
// net/http, a client that stops reading (its small receive window closes)
// is let go as overloaded within live.max_behind of its stall — long before
// the write timeout (a minute here) — and its place is freed.
func TestLiveStoppedReaderOverTCP(t *testing.T) {
	t.Parallel()
	st := teststack.New(t, teststack.Options{Families: liveFamilies,
		Live: teststack.Live{Heartbeat: 50 * time.Millisecond, WriteTimeout: time.Minute, MaxBehind: 300 * time.Millisecond}})
	srv := httptest.NewServer(st.Handler)
	t.Cleanup(srv.Close)
	for i := range 60 {
		writeEvent(t, st, fmt.Sprintf("member-with-a-long-name-%03d", i), int64(100+i))
	}
	d := net.Dialer{Control: func(_, _ string, c syscall.RawConn) error {
		var serr error
		if err := c.Control(func(fd uintptr) {
			serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_RCVBUF, 2048)
		}); err != nil {
			return err
		}
		return serr
	}}
	conn, err := d.Dial("tcp", srv.Listener.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	if _, err := fmt.Fprintf(conn, "GET %s?top=60 HTTP/1.1\r\nHost: rankgate\r\n\r\n", livePath); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(conn)
	status, err := br.ReadString('\n')
	if err != nil || !strings.HasPrefix(status, "HTTP/1.1 200") {
		t.Fatalf("status line %q: %v", status, err)
	}
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatalf("before the snapshot: %v", err)
		}
		if strings.HasPrefix(line, "event: snapshot") {
			break
		}
	}
	if n := st.Live.Subscribers(); n != 1 {
		t.Fatalf("%d subscribers, want 1", n)
	}
	// The client reads no more; the board changes every interval, so every
	// interval has an update of a few KB for it.
	stop := make(chan struct{})
	writerDone := make(chan struct{})
	go func() {
		defer close(writerDone)
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-time.After(20 * time.Millisecond):
			}
			writeEvent(t, st, fmt.Sprintf("member-with-a-long-name-%03d", i%60), 7)
		}
	}()
	defer func() { close(stop); <-writerDone }()
	soon.Eventually(t, 20*time.Second, func() error {
		if got := metricSum(t, st.Registry, "rankgate_live_drops_total", map[string]string{"reason": "overloaded"}); got != 1 {
			return fmt.Errorf("drops{overloaded} = %v", got)
		}
		if n := st.Live.Subscribers(); n != 0 {
			return fmt.Errorf("%d subscribers still", n)
		}
		return nil
	})
}

// TestLivePerJWTSubject: player tokens count against live.max_per_token by
// their subject, whichever token of that subject opens the stream (by
// header or by a ticket it asked for); another subject has its own share.
func TestLivePerJWTSubject(t *testing.T) {
	t.Parallel()
	secret := "0123456789abcdef0123456789abcdef-live"
	st := teststack.New(t, teststack.Options{Families: liveFamilies, Live: teststack.Live{MaxPerToken: 1}, Tokens: liveTokens(),
		JWT: player.Options{Keys: []player.Key{{Kid: "k", Alg: player.AlgHS256, Secret: []byte(secret)}}}})
	srv := httptest.NewServer(st.Handler)
	t.Cleanup(srv.Close)
	writeEvent(t, st, "u1", 10)
	token := func(sub, scope string, n int) string {
		tok := jwt.NewWithClaims(jwt.SigningMethodHS256, jwt.MapClaims{"sub": sub, "scope": scope, "jti": strconv.Itoa(n),
			"exp": time.Now().Add(time.Hour).Unix()})
		tok.Header["kid"] = "k"
		s, err := tok.SignedString([]byte(secret))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	_, ch := openLive(t, srv.URL+livePath, bearer(token("p1", "live", 1)))
	if ev := nextEvent(t, ch); ev.Type != "snapshot" {
		t.Fatalf("p1's first stream: %+v", ev)
	}
	// Another token of the same subject: over its share.
	if resp, _ := openLive(t, srv.URL+livePath, bearer(token("p1", "read", 2))); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("p1's second stream by another token: %d, want 503", resp.StatusCode)
	}
	// The same by a ticket p1 asked for.
	req, _ := http.NewRequest(http.MethodPost, srv.URL+"/v1/tickets", nil)
	req.Header = bearer(token("p1", "live", 3))
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var tk struct{ Ticket string }
	if err := json.NewDecoder(resp.Body).Decode(&tk); err != nil || resp.StatusCode != http.StatusCreated {
		t.Fatalf("POST /v1/tickets with a player token: %d %v", resp.StatusCode, err)
	}
	resp.Body.Close()
	if resp, _ := openLive(t, srv.URL+livePath+"?ticket="+tk.Ticket, nil); resp.StatusCode != http.StatusServiceUnavailable {
		t.Fatalf("p1's second stream by ticket: %d, want 503", resp.StatusCode)
	}
	// Another subject has a share of its own; a token without read or live none.
	_, ch = openLive(t, srv.URL+livePath, bearer(token("p2", "live", 4)))
	if ev := nextEvent(t, ch); ev.Type != "snapshot" {
		t.Fatalf("p2's stream: %+v", ev)
	}
	if resp, _ := openLive(t, srv.URL+livePath, bearer(token("p3", "write:self", 5))); resp.StatusCode != http.StatusForbidden {
		t.Fatalf("a write:self-only token's stream: %d, want 403", resp.StatusCode)
	}
}

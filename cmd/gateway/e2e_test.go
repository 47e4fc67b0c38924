package main

// End-to-end tests: the real program (run) against the real Redis Cluster,
// driven over HTTP. Each gateway gets its own key prefix, so tests share the
// cluster without colliding.

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rankgate/rankgate/internal/apitest"
	"github.com/rankgate/rankgate/internal/soon"
	"github.com/rankgate/rankgate/internal/testcluster"
	"github.com/rankgate/rankgate/internal/teststack"
)

// ---------------------------------------------------------------- harness

// syncBuffer is a goroutine-safe log sink.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// e2eFamilies are the families of the end-to-end gateway (teststack.ConfigYAML
// adds the rest of the config).
const e2eFamilies = `  learning:
    source: events
    aggregate: sum
    order: desc
    period: week
    timezone: Asia/Shanghai
    week_start: monday
    grace: 5m
    tie: first
    rank: competition
    max_points: 8388607
    seq_capacity: 1073741824
    rules_version: "2026.08"
    cache_ttl: 1s
    dimensions:
      national: {shards: 16}
      province: {shards: 1}
      class: {shards: 1}
  game:
    source: events
    aggregate: max
    period: all
    tie: member
    rank: ordinal
    max_points: 9007199254740991
    cache_ttl: 2s
    dimensions:
      national: {shards: 8}
  course:
    source: projection
    period: week
    timezone: UTC
    tie: member
    rank: competition
    dimensions:
      national: {shards: 1}
  race:
    source: events
    aggregate: max
    period: all
    tie: member
    rank: competition
    max_points: 1000000
    cache_ttl: 1s
    columns:
      - {name: time_ms, order: asc, max: 86400000}
      - {name: kills, order: desc, max: 999}
    dimensions:
      national: {shards: 4}
  indexed:
    source: events
    aggregate: sum
    period: all
    tie: first
    rank: competition
    max_points: 8388607
    seq_capacity: 1073741824
    index: {enabled: true, max_lag: 30s}
    dimensions:
      national: {shards: 16}
`

// gw is one running gateway.
type gw struct {
	addr   string
	base   string
	client *http.Client
	// api checks every exchange of client against api/openapi.yaml.
	api    *apitest.Checker
	logs   *syncBuffer
	cancel context.CancelFunc
	done   chan error
}

// startGateway starts the real program in-process and waits for its ready
// file. Unless manual is set, cleanup cancels it and asserts a clean return.
func startGateway(t *testing.T, manual bool) *gw {
	t.Helper()
	return startGatewayOn(t, manual, testcluster.Addrs(t))
}

// startGatewayOn is startGateway with the given redis.addrs.
func startGatewayOn(t *testing.T, manual bool, addrs []string) *gw {
	t.Helper()
	g, ready := launchGateway(t, addrs)
	g.waitReady(t, ready, manual)
	return g
}

// launchGateway starts the real program in-process on the given redis.addrs
// and returns at once, with the path of its ready file.
func launchGateway(t *testing.T, addrs []string) (*gw, string) {
	t.Helper()
	g, ready, err := launch(t.TempDir(), addrs, testcluster.Prefix(t))
	if err != nil {
		t.Fatal(err)
	}
	return g, ready
}

// launch starts the real program in-process on redis.addrs and key prefix,
// with its config and ready file in dir and e2eNow as the service's clock,
// and returns at once, with the path of its ready file.
func launch(dir string, addrs []string, prefix string) (*gw, string, error) {
	cfgPath := filepath.Join(dir, "rankgate.yaml")
	if err := os.WriteFile(cfgPath, teststack.ConfigYAML(addrs, prefix, e2eFamilies), 0o644); err != nil {
		return nil, "", err
	}
	ready := filepath.Join(dir, "ready")
	logs := &syncBuffer{}
	ctx, cancel := context.WithCancel(context.Background())
	g := &gw{logs: logs, cancel: cancel, done: make(chan error, 1)}
	args := []string{"serve", "-config", cfgPath, "-ready-file", ready, "-log-format", "text"}
	go func() { g.done <- runAt(ctx, e2eNow, args, func(string) string { return "" }, io.Discard, logs) }()
	return g, ready, nil
}

// waitReady waits (bounded) for the ready file or an early exit. Unless
// manual is set, cleanup cancels the gateway and asserts a clean return.
func (g *gw) waitReady(t *testing.T, ready string, manual bool) {
	t.Helper()
	g.awaitReady(t, ready)
	g.api.Require(t, 0)
	t.Cleanup(func() {
		g.client.CloseIdleConnections()
		if !manual {
			g.stop(t)
		}
		if t.Failed() {
			t.Logf("gateway logs (tail):\n%s", tailLines(g.logs.String(), 30))
		}
	})
}

// awaitReady waits (bounded) for the ready file, failing t when the gateway
// exits first or is not ready within 15 s, and sets up g's HTTP client. It
// registers no cleanup: the caller owns the gateway's end.
func (g *gw) awaitReady(t *testing.T, ready string) {
	t.Helper()
	err := soon.Within(15*time.Second, func() error {
		select {
		case err := <-g.done:
			g.cancel()
			t.Fatalf("gateway exited before ready: %v\nlogs:\n%s", err, g.logs.String())
		default:
		}
		b, err := os.ReadFile(ready)
		if err != nil || len(b) == 0 {
			return fmt.Errorf("no address in the ready file (%v)", err)
		}
		g.addr = strings.TrimSpace(string(b))
		return nil
	})
	if err != nil {
		g.cancel()
		t.Fatalf("gateway not ready: %v\nlogs:\n%s", err, g.logs.String())
	}
	g.base = "http://" + g.addr
	checker, err := apitest.New()
	if err != nil {
		g.cancel()
		t.Fatal(err)
	}
	// Every request and answer through g.client is checked against the
	// contract: g.do reports a mismatch on its test, anything else sent
	// through g.client is reported when the test ends (a gateway of its own)
	// or by TestMain (the shared one).
	g.api = checker
	g.client = &http.Client{
		Timeout:       20 * time.Second,
		Transport:     checker.Transport(&http.Transport{MaxIdleConnsPerHost: 16}),
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// stop cancels the run context and asserts run returns nil (graceful).
func (g *gw) stop(t *testing.T) {
	t.Helper()
	if err := g.shutdown(); err != nil {
		t.Error(err)
	}
}

// shutdown cancels the run context and waits (bounded) for run to return;
// an error says run did not return nil (graceful) in time.
func (g *gw) shutdown() error {
	g.cancel()
	select {
	case err := <-g.done:
		if err != nil {
			return fmt.Errorf("run returned %v after cancel, want nil (graceful shutdown)", err)
		}
		return nil
	case <-time.After(25 * time.Second):
		return errors.New("run did not return within 25s of cancel")
	}
}

// ---------------------------------------------------------------- shared fixture

// world is the shared fixture of the endpoint tests that only read: one
// gateway on a key prefix of its own, holding the boards they read
// (seedWorld), built once per test process by the first test that asks for
// it and stopped by TestMain. Tests that write start a gateway of their own,
// so every test runs alone (go test -run) and in any order.
var world struct {
	once  sync.Once
	g     *gw
	dir   string
	built bool // seedWorld completed without failing its test
}

// readWorld returns the shared gateway, building it on first use.
func readWorld(t *testing.T) *gw {
	t.Helper()
	addrs := testcluster.Addrs(t) // skips (or fails in CI) like every integration test
	world.once.Do(func() { buildWorld(t, addrs) })
	if !world.built {
		t.Fatal("the shared gateway of the read tests could not be built: see the failure of the test that built it")
	}
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("shared gateway logs (tail):\n%s", tailLines(world.g.logs.String(), 30))
		}
	})
	return world.g
}

// buildWorld starts the shared gateway and writes its boards; a failure
// fails t (the test that asked first) and leaves world.built false.
func buildWorld(t *testing.T, addrs []string) {
	t.Helper()
	dir, err := os.MkdirTemp("", "rankgate-e2e-")
	if err != nil {
		t.Fatal(err)
	}
	world.dir = dir
	g, ready, err := launch(dir, addrs, testcluster.Prefix(t))
	if err != nil {
		t.Fatal(err)
	}
	world.g = g
	g.awaitReady(t, ready)
	seedWorld(t, g)
	world.built = true
}

// stopWorld stops the shared gateway, if one was started, requiring a
// graceful return, and removes its files.
func stopWorld() error {
	if world.g == nil {
		return nil
	}
	if world.g.client != nil {
		world.g.client.CloseIdleConnections()
	}
	err := world.g.shutdown()
	if err != nil {
		err = fmt.Errorf("shared gateway: %w\nlogs (tail):\n%s", err, tailLines(world.g.logs.String(), 30))
	}
	return errors.Join(err, os.RemoveAll(world.dir))
}

func TestMain(m *testing.M) {
	code := m.Run()
	if err := stopWorld(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		if code == 0 {
			code = 1
		}
	}
	// The contract check over the whole run: every exchange of the e2e
	// tests' clients against api/openapi.yaml.
	checked, failed := apitest.Totals()
	if checked > 0 {
		fmt.Printf("openapi: %d exchanges of the end-to-end tests checked against api/openapi.yaml, %d mismatches\n", checked, failed)
	}
	if world.g != nil && world.g.api != nil {
		for _, f := range world.g.api.Failures() {
			fmt.Fprintln(os.Stderr, "openapi (shared gateway):", f)
			code = max(code, 1)
		}
	}
	os.Exit(code)
}

func tailLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	for i, l := range lines {
		if len(l) > 300 {
			lines[i] = l[:300] + "…"
		}
	}
	return strings.Join(lines, "\n")
}

// resp is one HTTP answer.
type resp struct {
	status int
	header http.Header
	body   []byte
}

func (r resp) String() string { return fmt.Sprintf("%d %s", r.status, bytes.TrimSpace(r.body)) }

// do sends method path (a raw request-URI: sent exactly as given) with body:
// nil, a string or []byte (sent verbatim), or anything else (JSON-encoded).
func (g *gw) do(t *testing.T, method, path string, body any) resp {
	t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	var contract error
	req, err := http.NewRequestWithContext(apitest.WithResult(context.Background(), &contract), method, g.base, rd)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if contract != nil {
			t.Errorf("openapi: %v", contract)
		}
	}()
	req.URL.Opaque = path // the raw request-URI, unescaped and uncleaned
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := g.client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	defer res.Body.Close()
	data, err := io.ReadAll(res.Body)
	if err != nil {
		t.Fatalf("%s %s: reading body: %v", method, path, err)
	}
	return resp{status: res.StatusCode, header: res.Header, body: data}
}

// ok sends a request, requires 200 and decodes the JSON answer into out.
func (g *gw) ok(t *testing.T, method, path string, body, out any) resp {
	t.Helper()
	r := g.do(t, method, path, body)
	if r.status != http.StatusOK {
		t.Fatalf("%s %s: got %s, want 200", method, path, r)
	}
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s %s: Content-Type %q, want application/json", method, path, ct)
	}
	if out != nil {
		// Decode into a zero value: encoding/json keeps fields (and slice
		// elements' fields) that the answer leaves out.
		reflect.ValueOf(out).Elem().SetZero()
		if err := json.Unmarshal(r.body, out); err != nil {
			t.Fatalf("%s %s: decoding %s: %v", method, path, r.body, err)
		}
	}
	return r
}

// wantErr sends a request and requires the error answer: status, code and,
// when field is not "", that field ("-" requires no field).
func (g *gw) wantErr(t *testing.T, method, path string, body any, status int, code, field string) errBody {
	t.Helper()
	r := g.do(t, method, path, body)
	if r.status != status {
		t.Errorf("%s %s: got %s, want %d %s", method, path, r, status, code)
		return errBody{}
	}
	e := checkErrShape(t, method+" "+path, r)
	if e.Code != code {
		t.Errorf("%s %s: code %q, want %q (%s)", method, path, e.Code, code, r)
	}
	switch field {
	case "":
	case "-":
		if e.Field != "" {
			t.Errorf("%s %s: field %q, want none", method, path, e.Field)
		}
	default:
		if e.Field != field {
			t.Errorf("%s %s: field %q, want %q (%s)", method, path, e.Field, field, r)
		}
	}
	return e
}

type errBody struct {
	Code    string `json:"code"`
	Message string `json:"message"`
	Field   string `json:"field"`
}

// checkErrShape requires exactly {"error": {"code", "message"[, "field"]}}
// with non-empty strings, as JSON.
func checkErrShape(t *testing.T, what string, r resp) errBody {
	t.Helper()
	if ct := r.header.Get("Content-Type"); ct != "application/json" {
		t.Errorf("%s: error Content-Type %q, want application/json (%s)", what, ct, r)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(r.body, &top); err != nil {
		t.Errorf("%s: error body is not a JSON object: %v (%s)", what, err, r)
		return errBody{}
	}
	if len(top) != 1 || top["error"] == nil {
		t.Errorf("%s: error body must hold only \"error\": %s", what, r.body)
	}
	var inner map[string]any
	if err := json.Unmarshal(top["error"], &inner); err != nil {
		t.Errorf("%s: error is not an object: %s", what, r.body)
		return errBody{}
	}
	for k, v := range inner {
		s, isStr := v.(string)
		switch {
		case k != "code" && k != "message" && k != "field":
			t.Errorf("%s: unexpected error key %q: %s", what, k, r.body)
		case !isStr || s == "":
			t.Errorf("%s: error.%s must be a non-empty string: %s", what, k, r.body)
		}
	}
	var e errBody
	_ = json.Unmarshal(top["error"], &e)
	if e.Code == "" || e.Message == "" {
		t.Errorf("%s: error needs code and message: %s", what, r.body)
	}
	return e
}

// ---------------------------------------------------------------- wire types

type eventRes struct {
	EventID   string `json:"event_id"`
	Duplicate bool   `json:"duplicate"`
	Period    string `json:"period"`
	Boards    []struct {
		Board    string `json:"board"`
		Points   int64  `json:"points"`
		Improved *bool  `json:"improved"`
	} `json:"boards"`
	Improved *bool `json:"improved"`
}

func (e eventRes) points() map[string]int64 {
	m := map[string]int64{}
	for _, b := range e.Boards {
		m[b.Board] = b.Points
	}
	return m
}

type entry struct {
	User     string            `json:"user"`
	Points   int64             `json:"points"`
	Position int64             `json:"position"`
	Rank     int64             `json:"rank"`
	Profile  map[string]string `json:"profile"`
}

type readMeta struct {
	Board   string `json:"board"`
	Source  string `json:"source"`
	AsOf    string `json:"as_of"`
	LagMs   *int64 `json:"lag_ms"`
	Partial bool   `json:"partial"`
	Missing []int  `json:"missing_shards"`
}

type page struct {
	readMeta
	Entries    []entry `json:"entries"`
	NextCursor string  `json:"next_cursor"`
}

type standing struct {
	readMeta
	User       string            `json:"user"`
	Points     int64             `json:"points"`
	Position   int64             `json:"position"`
	Rank       int64             `json:"rank"`
	Members    int64             `json:"members"`
	Percentile float64           `json:"percentile"`
	Profile    map[string]string `json:"profile"`
}

type countRes struct {
	readMeta
	Count int64 `json:"count"`
}

type periodRes struct {
	Family string `json:"family"`
	Period string `json:"period"`
	Starts string `json:"starts"`
	Ends   string `json:"ends"`
	State  string `json:"state"`
}

type projRes struct {
	Applied        bool   `json:"applied"`
	Version        int64  `json:"version"`
	CurrentVersion int64  `json:"current_version"`
	Points         int64  `json:"points"`
	Board          string `json:"board"`
}

// checkMeta requires the read metadata of every read.
func checkMeta(t *testing.T, what string, m readMeta, board string, r resp) {
	t.Helper()
	if m.Board != board {
		t.Errorf("%s: board %q, want %q", what, m.Board, board)
	}
	switch m.Source {
	case "cache", "replica", "primary":
	default:
		t.Errorf("%s: source %q, want cache|replica|primary", what, m.Source)
	}
	at, err := time.Parse(time.RFC3339, m.AsOf)
	if err != nil {
		t.Errorf("%s: as_of %q is not RFC 3339: %v", what, m.AsOf, err)
	} else if d := e2eNow().Sub(at); d < -time.Minute || d > time.Minute {
		t.Errorf("%s: as_of %s is %s away from now", what, m.AsOf, d)
	}
	if m.Partial || len(m.Missing) > 0 {
		t.Errorf("%s: partial answer on a healthy cluster: %+v", what, m)
	}
	if cc := r.header.Get("Cache-Control"); m.Source != "cache" && cc != "no-store" {
		t.Errorf("%s: Cache-Control %q for source %s, want no-store", what, cc, m.Source)
	}
}

func users(es []entry) []string {
	out := make([]string, len(es))
	for i, e := range es {
		out[i] = e.User
	}
	return out
}

var shanghai = func() *time.Location {
	loc, err := time.LoadLocation("Asia/Shanghai")
	if err != nil {
		panic(err)
	}
	return loc
}()

// weekMargin is how far from a week change the end-to-end tests' clock
// stays: longer than any run of this package.
const weekMargin = 10 * time.Minute

// e2eOffset moves e2eNow off a week change; see weekSafeOffset.
var e2eOffset = weekSafeOffset(time.Now())

// e2eNow is the service clock of the gateways these tests start and the
// "now" of the ids and times they expect: the tests read and write the
// "current" week and compare it with ids computed here, so the week must not
// change under a run.
func e2eNow() time.Time { return time.Now().Add(e2eOffset) }

// weekSafeOffset is 0, or -weekMargin when now lies within weekMargin before
// a week change in Asia/Shanghai (learning) or UTC (course): then the clock
// runs weekMargin behind, at least weekMargin away from the change. (The two
// changes are 8 hours apart, so one move never nears the other.)
func weekSafeOffset(now time.Time) time.Duration {
	for _, loc := range []*time.Location{shanghai, time.UTC} {
		t := now.In(loc)
		days := (8 - int(t.Weekday())) % 7 // to next Monday
		if days == 0 {
			days = 7
		}
		y, m, d := t.Date()
		if next := time.Date(y, m, d+days, 0, 0, 0, 0, loc); next.Sub(now) < weekMargin {
			return -weekMargin
		}
	}
	return 0
}

func TestWeekSafeOffset(t *testing.T) {
	t.Parallel()
	mondayShanghai := time.Date(2026, 12, 7, 0, 0, 0, 0, shanghai) // Sunday 16:00 UTC
	mondayUTC := time.Date(2026, 12, 7, 0, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name string
		now  time.Time
		want time.Duration
	}{
		{"mid-week", time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC), 0},
		{"30s before Monday in Shanghai", mondayShanghai.Add(-30 * time.Second), -weekMargin},
		{"just inside the margin, Shanghai", mondayShanghai.Add(-weekMargin + time.Second), -weekMargin},
		{"just outside the margin, Shanghai", mondayShanghai.Add(-weekMargin), 0},
		{"30s before Monday in UTC", mondayUTC.Add(-30 * time.Second), -weekMargin},
		{"at the change", mondayUTC, 0},
		{"just after the change", mondayUTC.Add(time.Second), 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			got := weekSafeOffset(c.now)
			if got != c.want {
				t.Fatalf("weekSafeOffset(%s) = %s, want %s", c.now.UTC().Format(time.RFC3339), got, c.want)
			}
			// The moved clock and the next weekMargin lie in one week, in both zones.
			for _, loc := range []*time.Location{shanghai, time.UTC} {
				from, to := c.now.Add(got).In(loc), c.now.Add(got+weekMargin-time.Nanosecond).In(loc)
				y1, w1 := from.ISOWeek()
				y2, w2 := to.ISOWeek()
				if y1 != y2 || w1 != w2 {
					t.Errorf("%s: the clock from %s crosses a week change within %s", loc, from, weekMargin)
				}
			}
		})
	}
}

// currentWeek is the learning family's period id now: the ISO week in Asia/Shanghai.
func currentWeek() string {
	y, w := e2eNow().In(shanghai).ISOWeek()
	return fmt.Sprintf("%04d-W%02d", y, w)
}

// lb is the path of a learning board of the current week; bn is its name.
func lb(dim string) string { return "/v1/boards/learning/current/" + dim }
func bn(dim string) string { return "learning/" + currentWeek() + "/" + dim }

// learningDims are the dimensions of u1001's events (province:zhejiang, class:c42).
var learningDims = map[string]string{"province": "zhejiang", "class": "c42"}

// ---------------------------------------------------------------- seed model

// The read tests seed 30 members r00..r29 (province:seed, class:s1) in one
// batch, in index order. Points fall by 10 per index, with ties r10=r11 and
// r20=r21=r22; under tie "first" the earlier event ranks ahead, so board
// order is index order. Everything else on the learning boards has < 100.
const seedN = 30

func seedPoints(i int) int64 {
	switch i {
	case 11:
		i = 10
	case 21, 22:
		i = 20
	}
	return 2000 - 10*int64(i)
}

func seedUser(i int) string { return fmt.Sprintf("r%02d", i) }

// seedRank is the competition rank: 1 + members with strictly more points.
func seedRank(i int) int64 {
	var n int64
	for j := 0; j < seedN; j++ {
		if seedPoints(j) > seedPoints(i) {
			n++
		}
	}
	return n + 1
}

func checkSeedEntries(t *testing.T, what string, es []entry, firstIndex int) {
	t.Helper()
	for k, e := range es {
		i := firstIndex + k
		if e.User != seedUser(i) || e.Points != seedPoints(i) || e.Position != int64(i) || e.Rank != seedRank(i) {
			t.Errorf("%s: entry %d = %+v, want {%s %d pos %d rank %d}", what, k, e, seedUser(i), seedPoints(i), i, seedRank(i))
		}
	}
}

// ---------------------------------------------------------------- the endpoints

// One test per endpoint. Tests that only read share one gateway and its
// boards (readWorld); tests that write start a gateway of their own. None
// depends on another having run.

// TestE2EEvents: POST /v1/events, on a gateway of its own.
func TestE2EEvents(t *testing.T) {
	t.Parallel()
	g := startGateway(t, false)
	week := currentWeek()
	var r eventRes
	ev := map[string]any{"event_id": "evt-8842", "family": "learning", "user": "u1001", "delta": 20, "dims": learningDims}
	g.ok(t, "POST", "/v1/events", ev, &r)
	want := map[string]int64{bn("national"): 20, bn("province:zhejiang"): 20, bn("class:c42"): 20}
	if r.EventID != "evt-8842" || r.Duplicate || r.Period != week || len(r.Boards) != 3 || !mapsEqual(r.points(), want) || r.Improved != nil {
		t.Errorf("first event: %+v, want 3 boards %v in %s, duplicate false", r, want, week)
	}

	// Replay: duplicate, current points, nothing changes.
	var rep eventRes
	g.ok(t, "POST", "/v1/events", ev, &rep)
	if !rep.Duplicate || !mapsEqual(rep.points(), want) {
		t.Errorf("replay: %+v, want duplicate with %v", rep, want)
	}

	var r2 eventRes
	g.ok(t, "POST", "/v1/events", map[string]any{"event_id": "evt-8843", "family": "learning", "user": "u1001", "delta": 30, "dims": learningDims}, &r2)
	if r2.points()[bn("national")] != 50 {
		t.Errorf("second event: %+v, want 50", r2)
	}

	// Reversal subtracts what evt-8843 added, once.
	rev := map[string]any{"event_id": "evt-9001", "family": "learning", "user": "u1001", "dims": learningDims, "reverses": "evt-8843", "reason": "fraud"}
	var rr eventRes
	g.ok(t, "POST", "/v1/events", rev, &rr)
	if rr.Duplicate || !mapsEqual(rr.points(), want) {
		t.Errorf("reversal: %+v, want applied with %v", rr, want)
	}
	g.ok(t, "POST", "/v1/events", rev, &rr)
	if !rr.Duplicate || !mapsEqual(rr.points(), want) {
		t.Errorf("reversal replay: %+v, want duplicate with %v", rr, want)
	}
	rev2 := map[string]any{"event_id": "evt-9002", "family": "learning", "user": "u1001", "dims": learningDims, "reverses": "evt-8843"}
	g.ok(t, "POST", "/v1/events", rev2, &rr)
	if !rr.Duplicate || !mapsEqual(rr.points(), want) {
		t.Errorf("second reversal of the same event: %+v, want duplicate (nothing changes) with %v", rr, want)
	}
	g.wantErr(t, "POST", "/v1/events", map[string]any{"event_id": "evt-9003", "family": "learning", "user": "u1001", "reverses": "evt-nope"},
		404, "unknown_event", "")
	g.wantErr(t, "POST", "/v1/events", map[string]any{"event_id": "evt-9004", "family": "learning", "user": "u1001", "reverses": "evt-9004"},
		400, "invalid_argument", "reverses")
	g.wantErr(t, "POST", "/v1/events", map[string]any{"event_id": "evt-9005", "family": "learning", "user": "u1001", "delta": 1, "reverses": "evt-8842"},
		400, "invalid_argument", "reverses")

	// Period closed: the week of 30 days ago ended far more than grace ago.
	past := e2eNow().Add(-30 * 24 * time.Hour).UTC().Format(time.RFC3339)
	g.wantErr(t, "POST", "/v1/events", map[string]any{"event_id": "evt-late", "family": "learning", "user": "u1001", "delta": 5, "at": past},
		409, "period_closed", "")
	// at: > 5 minutes ahead is a 400; just inside is accepted.
	g.wantErr(t, "POST", "/v1/events", map[string]any{"event_id": "evt-fut", "family": "learning", "user": "u1002", "delta": 5,
		"at": e2eNow().Add(6 * time.Minute).Format(time.RFC3339)}, 400, "invalid_argument", "at")
	g.ok(t, "POST", "/v1/events", map[string]any{"event_id": "evt-soon", "family": "learning", "user": "u1002", "delta": 5,
		"at": e2eNow().Add(30 * time.Second).Format(time.RFC3339)}, nil)
	g.wantErr(t, "POST", "/v1/events", `{"event_id":"evt-t","family":"learning","user":"u1","delta":1,"at":"yesterday"}`, 400, "invalid_argument", "at")

	g.wantErr(t, "POST", "/v1/events", map[string]any{"event_id": "evt-c", "family": "course", "user": "u1", "delta": 5}, 409, "wrong_source", "")
	g.wantErr(t, "POST", "/v1/events", map[string]any{"event_id": "evt-f", "family": "nosuch", "user": "u1", "delta": 5}, 404, "unknown_family", "")
	g.wantErr(t, "POST", "/v1/events", `{"event_id":"evt-u","family":"learning","user":"u1","delta":1,"colour":"red"}`, 400, "invalid_argument", "colour")
	g.wantErr(t, "POST", "/v1/events", `{"event_id":"evt-b","family":`, 400, "invalid_argument", "")
	g.wantErr(t, "POST", "/v1/events", `{"event_id":"evt-b"} {}`, 400, "invalid_argument", "")
	g.wantErr(t, "POST", "/v1/events", ``, 400, "invalid_argument", "")
	g.wantErr(t, "POST", "/v1/events", `{"event_id":"evt-d","family":"learning","user":"u1","delta":1.5}`, 400, "invalid_argument", "delta")
	g.wantErr(t, "POST", "/v1/events", `{"event_id":"evt-d","family":"learning","user":"u1","delta":"5"}`, 400, "invalid_argument", "delta")
	g.wantErr(t, "POST", "/v1/events", `{"event_id":"evt-d","family":"learning","user":"u1","delta":0}`, 400, "invalid_argument", "delta")
	g.wantErr(t, "POST", "/v1/events", `{"event_id":"evt-d","family":"learning","user":"u1"}`, 400, "invalid_argument", "delta")
	g.wantErr(t, "POST", "/v1/events", `{"event_id":"evt-d","family":"learning","user":"u1","delta":8388608}`, 422, "out_of_range", "delta")
	g.wantErr(t, "POST", "/v1/events", `{"event_id":"evt-d","family":"learning","user":"bad user","delta":1}`, 400, "invalid_argument", "user")
	g.wantErr(t, "POST", "/v1/events", `{"event_id":"","family":"learning","user":"u1","delta":1}`, 400, "invalid_argument", "event_id")
	g.wantErr(t, "POST", "/v1/events", `{"event_id":"evt-d","family":"learning","user":"u1","delta":1,"dims":{"school":"x"}}`, 400, "invalid_argument", "dims")
	g.wantErr(t, "POST", "/v1/events", `{"event_id":"evt-d","family":"learning","user":"u1","delta":1,"dims":{"province":"a b"}}`, 400, "invalid_argument", "dims.province")

	// Over 1 MiB: 413, with a Content-Length and chunked.
	big := `{"event_id":"evt-big","family":"learning","user":"u1","delta":1,"reason":"` + strings.Repeat("x", 1<<20) + `"}`
	g.wantErr(t, "POST", "/v1/events", big, 413, "too_large", "")
	r413 := g.postChunked(t, "/v1/events", big)
	if r413.status != 413 {
		t.Errorf("chunked body over 1 MiB: got %s, want 413", r413)
	} else if e := checkErrShape(t, "chunked 413", r413); e.Code != "too_large" {
		t.Errorf("chunked body over 1 MiB: code %q, want too_large", e.Code)
	}

	// max family: value, improved.
	var gr eventRes
	g.ok(t, "POST", "/v1/events", map[string]any{"event_id": "g-1", "family": "game", "user": "p1", "value": 100}, &gr)
	if gr.Period != "all" || gr.Improved == nil || !*gr.Improved || gr.points()["game/all/national"] != 100 {
		t.Errorf("game value 100: %+v, want improved, 100 on game/all/national", gr)
	}
	g.ok(t, "POST", "/v1/events", map[string]any{"event_id": "g-2", "family": "game", "user": "p1", "value": 50}, &gr)
	if gr.Improved == nil || *gr.Improved || gr.points()["game/all/national"] != 100 {
		t.Errorf("game value 50: %+v, want not improved, still 100", gr)
	}
	g.wantErr(t, "POST", "/v1/events", map[string]any{"event_id": "g-3", "family": "game", "user": "p1", "delta": 5}, 400, "invalid_argument", "delta")
	g.wantErr(t, "POST", "/v1/events", map[string]any{"event_id": "g-4", "family": "game", "user": "p1", "reverses": "g-1"}, 412, "ledger_required", "")
}

// TestE2EBatch: POST /v1/events:batch, on a gateway of its own that has
// applied evt-8842 (u1001, 20 points) before.
func TestE2EBatch(t *testing.T) {
	t.Parallel()
	g := startGateway(t, false)
	g.ok(t, "POST", "/v1/events", map[string]any{"event_id": "evt-8842", "family": "learning", "user": "u1001", "delta": 20, "dims": learningDims}, nil)
	var out struct {
		Results []json.RawMessage `json:"results"`
	}
	g.ok(t, "POST", "/v1/events:batch", map[string]any{"events": []any{
		map[string]any{"event_id": "b-1", "family": "learning", "user": "u2001", "delta": 5},
		map[string]any{"event_id": "b-2", "family": "learning", "user": "u2002", "delta": 0},
		map[string]any{"event_id": "b-3", "family": "course", "user": "u2003", "delta": 5},
		map[string]any{"event_id": "evt-8842", "family": "learning", "user": "u1001", "delta": 20, "dims": learningDims},
		map[string]any{"event_id": "b-5", "family": "nosuch", "user": "u2005", "delta": 5},
		map[string]any{"event_id": "b-1", "family": "learning", "user": "u2001", "delta": 5},
		map[string]any{"event_id": "b-7", "family": "learning", "user": "u2001", "delta": 7},
	}}, &out)
	if len(out.Results) != 7 {
		t.Fatalf("batch of 7: %d results", len(out.Results))
	}
	okAt := func(i int, id string, dup bool, national int64) {
		var r eventRes
		if err := json.Unmarshal(out.Results[i], &r); err != nil || r.EventID != id || r.Duplicate != dup || r.points()[bn("national")] != national {
			t.Errorf("results[%d] = %s, want event %s duplicate=%v national=%d", i, out.Results[i], id, dup, national)
		}
	}
	errAt := func(i int, code, field string) {
		e := checkErrShape(t, fmt.Sprintf("results[%d]", i), resp{status: 200, header: http.Header{"Content-Type": {"application/json"}}, body: out.Results[i]})
		if e.Code != code || (field != "" && e.Field != field) {
			t.Errorf("results[%d] = %s, want %s (field %q)", i, out.Results[i], code, field)
		}
	}
	okAt(0, "b-1", false, 5)
	errAt(1, "invalid_argument", "delta")
	errAt(2, "wrong_source", "")
	okAt(3, "evt-8842", true, 20)
	errAt(4, "unknown_family", "")
	okAt(5, "b-1", true, 5) // same id twice in one batch: applied once
	okAt(6, "b-7", false, 12)

	// A malformed item fails the whole batch, naming it.
	g.wantErr(t, "POST", "/v1/events:batch", `{"events":[{"event_id":"x1","family":"learning","user":"u1","delta":1},{"event_id":"x2","family":"learning","user":"u1","delta":"1"}]}`,
		400, "invalid_argument", "events[1].delta")
	g.wantErr(t, "POST", "/v1/events:batch", `{"events":[{"event_id":"x1","family":"learning","user":"u1","delta":1,"extra":1}]}`,
		400, "invalid_argument", "events[0].extra")
	g.wantErr(t, "POST", "/v1/events:batch", `{"events":[]}`, 400, "invalid_argument", "events")
	g.wantErr(t, "POST", "/v1/events:batch", `{}`, 400, "invalid_argument", "events")
	g.wantErr(t, "POST", "/v1/events:batch", `{"evnts":[]}`, 400, "invalid_argument", "evnts")
	many := make([]any, 1001)
	for i := range many {
		many[i] = map[string]any{"event_id": fmt.Sprintf("m-%d", i), "family": "learning", "user": "u3000", "delta": 1}
	}
	g.wantErr(t, "POST", "/v1/events:batch", map[string]any{"events": many}, 400, "invalid_argument", "events")
}

// TestE2EProjection: PUT /v1/boards/{family}/{period}/{dimension}/members/{member},
// on a gateway of its own.
func TestE2EProjection(t *testing.T) {
	t.Parallel()
	g := startGateway(t, false)
	cb := "/v1/boards/course/current/national/members/"
	y, w := e2eNow().UTC().ISOWeek()
	courseBoard := fmt.Sprintf("course/%04d-W%02d/national", y, w)
	var p projRes
	g.ok(t, "PUT", cb+"c1", map[string]any{"version": 37, "points": 1250}, &p)
	if !p.Applied || p.Version != 37 || p.Points != 1250 || p.CurrentVersion != 0 || p.Board != courseBoard {
		t.Errorf("projection v37: %+v, want applied v37 1250 on %s", p, courseBoard)
	}
	g.ok(t, "PUT", cb+"c1", map[string]any{"version": 38, "points": 1270}, &p)
	if !p.Applied || p.Version != 38 || p.Points != 1270 {
		t.Errorf("projection v38: %+v", p)
	}
	p = projRes{}
	g.ok(t, "PUT", cb+"c1", map[string]any{"version": 37, "points": 1}, &p)
	if p.Applied || p.CurrentVersion != 38 || p.Points != 1270 {
		t.Errorf("stale projection v37: %+v, want applied=false current_version 38 points 1270", p)
	}
	g.ok(t, "PUT", cb+"c1", map[string]any{"version": 38, "points": 1}, &p)
	if p.Applied || p.CurrentVersion != 38 {
		t.Errorf("projection with the same version: %+v, want applied=false", p)
	}
	g.ok(t, "PUT", cb+"c2", map[string]any{"version": 1, "points": 900}, nil)

	var top page
	r := g.ok(t, "GET", "/v1/boards/course/current/national/top", nil, &top)
	checkMeta(t, "course top", top.readMeta, courseBoard, r)
	if got := users(top.Entries); !slices.Equal(got, []string{"c1", "c2"}) || top.Entries[0].Points != 1270 {
		t.Errorf("course top: %+v, want c1 (1270), c2", top.Entries)
	}

	g.wantErr(t, "PUT", "/v1/boards/learning/current/national/members/u1", map[string]any{"version": 1, "points": 1}, 409, "wrong_source", "")
	g.wantErr(t, "PUT", "/v1/boards/nosuch/current/national/members/u1", map[string]any{"version": 1, "points": 1}, 404, "unknown_family", "")
	g.wantErr(t, "PUT", cb+"c1", map[string]any{"version": 0, "points": 1}, 400, "invalid_argument", "version")
	g.wantErr(t, "PUT", cb+"c1", `{"version":1,"points":1,"x":2}`, 400, "invalid_argument", "x")
	g.wantErr(t, "PUT", cb+"c1", `{"version":1,"points":1.5}`, 400, "invalid_argument", "points")
	g.wantErr(t, "PUT", cb+"bad%20id", map[string]any{"version": 1, "points": 1}, 400, "invalid_argument", "user")
	g.wantErr(t, "PUT", "/v1/boards/course/current/province:x/members/c1", map[string]any{"version": 1, "points": 1}, 404, "unknown_board", "")
	g.wantErr(t, "PUT", "/v1/boards/course/2026-W99/national/members/c1", map[string]any{"version": 1, "points": 1}, 400, "invalid_argument", "period")
}

// TestE2EProfiles: PUT /v1/profiles/{member} (on the shared gateway: it
// writes r00's profile as seedWorld did, so nothing changes there).
func TestE2EProfiles(t *testing.T) {
	t.Parallel()
	g := readWorld(t)
	var p struct {
		User    string            `json:"user"`
		Profile map[string]string `json:"profile"`
	}
	g.ok(t, "PUT", "/v1/profiles/r00", map[string]any{"name": "Ada", "avatar": "https://img.example/ada.png"}, &p)
	if p.User != "r00" || p.Profile["name"] != "Ada" || p.Profile["avatar"] != "https://img.example/ada.png" {
		t.Errorf("profile answer: %+v", p)
	}
	g.wantErr(t, "PUT", "/v1/profiles/bad%20id", map[string]any{"name": "x"}, 400, "invalid_argument", "user")
	g.wantErr(t, "PUT", "/v1/profiles/r00", `{"name":"a\u0001b"}`, 400, "invalid_argument", "name")
	g.wantErr(t, "PUT", "/v1/profiles/r00", `{"name":"x","email":"x@y"}`, 400, "invalid_argument", "email")
	g.wantErr(t, "PUT", "/v1/profiles/r00", `{"name":5}`, 400, "invalid_argument", "name")
}

// TestE2ETop: GET {board}/top
func TestE2ETop(t *testing.T) {
	t.Parallel()
	g := readWorld(t)
	for _, dim := range []string{"national", "province:seed", "class:s1"} {
		var p page
		r := g.ok(t, "GET", lb(dim)+"/top", nil, &p)
		checkMeta(t, dim+" top", p.readMeta, bn(dim), r)
		if len(p.Entries) != 10 {
			t.Errorf("%s top: %d entries, want the default 10", dim, len(p.Entries))
		}
		checkSeedEntries(t, dim+" top", p.Entries, 0)
		if p.NextCursor != "" {
			t.Errorf("%s top: next_cursor %q", dim, p.NextCursor)
		}
	}
	var p page
	g.ok(t, "GET", lb("province:seed")+"/top?limit=1000", nil, &p)
	if len(p.Entries) != seedN {
		t.Errorf("province:seed top 1000: %d entries, want %d", len(p.Entries), seedN)
	}
	checkSeedEntries(t, "province:seed top 1000", p.Entries, 0)
	g.ok(t, "GET", lb("national")+"/top?limit=1", nil, &p)
	checkSeedEntries(t, "national top 1", p.Entries, 0)

	// consistency=primary answers from the masters, and says so.
	r := g.ok(t, "GET", lb("national")+"/top?limit=3&consistency=primary", nil, &p)
	checkMeta(t, "top primary", p.readMeta, bn("national"), r)
	if p.Source != "primary" {
		t.Errorf("consistency=primary: source %q", p.Source)
	}
	checkSeedEntries(t, "top primary", p.Entries, 0)
	// This build serves every level from the masters (read.go startRead).
	g.ok(t, "GET", lb("national")+"/top?limit=3", nil, &p)
	t.Logf("default consistency answers source=%q", p.Source)

	// profiles=1 shows a stored profile, and none where none exists.
	g.ok(t, "GET", lb("national")+"/top?limit=2&profiles=1", nil, &p)
	if len(p.Entries) != 2 || p.Entries[0].Profile["name"] != "Ada" || p.Entries[1].Profile != nil {
		t.Errorf("top profiles=1: %+v, want r00 with profile Ada, r01 without", p.Entries)
	}
	g.ok(t, "GET", lb("national")+"/top?limit=2", nil, &p)
	if p.Entries[0].Profile != nil {
		t.Errorf("top without profiles=1 shows a profile: %+v", p.Entries[0])
	}

	g.wantErr(t, "GET", lb("national")+"/top?limit=0", nil, 400, "invalid_argument", "limit")
	g.wantErr(t, "GET", lb("national")+"/top?limit=1001", nil, 400, "invalid_argument", "limit")
	g.wantErr(t, "GET", lb("national")+"/top?limit=-1", nil, 400, "invalid_argument", "limit")
	g.wantErr(t, "GET", lb("national")+"/top?limit=ten", nil, 400, "invalid_argument", "limit")
	g.wantErr(t, "GET", lb("national")+"/top?limit=1&limit=2", nil, 400, "invalid_argument", "limit")
	g.wantErr(t, "GET", lb("national")+"/top?consistency=eventual", nil, 400, "invalid_argument", "consistency")
	g.wantErr(t, "GET", lb("national")+"/top?profiles=yes", nil, 400, "invalid_argument", "profiles")
	g.wantErr(t, "GET", lb("national")+"/top?partial=deny", nil, 400, "invalid_argument", "partial")
	g.wantErr(t, "GET", "/v1/boards/nosuch/current/national/top", nil, 404, "unknown_family", "")
}

// TestE2EMember: GET {board}/members/{member}
func TestE2EMember(t *testing.T) {
	t.Parallel()
	g := readWorld(t)
	for _, dim := range []string{"province:seed", "national"} {
		var s standing
		r := g.ok(t, "GET", lb(dim)+"/members/r11", nil, &s)
		checkMeta(t, dim+" member", s.readMeta, bn(dim), r)
		if s.User != "r11" || s.Points != seedPoints(11) || s.Position != 11 || s.Rank != seedRank(11) {
			t.Errorf("%s member r11: %+v, want %d pos 11 rank %d", dim, s, seedPoints(11), seedRank(11))
		}
		var c countRes
		g.ok(t, "GET", lb(dim)+"/count", nil, &c)
		if s.Members != c.Count || (dim == "province:seed" && s.Members != seedN) || s.Members < seedN {
			t.Errorf("%s member r11: members %d, count %d", dim, s.Members, c.Count)
		}
		// Competition: strictly behind = fewer points than r11 (r00..r11 have ≥).
		behind := s.Members - 12
		if want := float64(behind*10000/s.Members) / 100; s.Percentile != want {
			t.Errorf("%s member r11: percentile %v, want %v", dim, s.Percentile, want)
		}
	}
	var s standing
	g.ok(t, "GET", lb("province:seed")+"/members/r00?profiles=1", nil, &s)
	if s.Position != 0 || s.Rank != 1 || s.Percentile != float64((seedN-1)*10000/seedN)/100 || s.Profile["name"] != "Ada" {
		t.Errorf("member r00 profiles=1: %+v", s)
	}
	g.ok(t, "GET", lb("province:seed")+"/members/r29", nil, &s)
	if s.Position != 29 || s.Rank != 30 || s.Percentile != 0 {
		t.Errorf("member r29: %+v, want last with percentile 0", s)
	}
	g.wantErr(t, "GET", lb("national")+"/members/nobody", nil, 404, "not_ranked", "")
	g.wantErr(t, "GET", lb("province:zhejiang")+"/members/r00", nil, 404, "not_ranked", "")
	g.wantErr(t, "GET", lb("national")+"/members/bad%21id", nil, 400, "invalid_argument", "user")
	g.wantErr(t, "GET", lb("national")+"/members/"+strings.Repeat("a", 65), nil, 400, "invalid_argument", "user")
}

// TestE2EAround: GET {board}/members/{member}/around
func TestE2EAround(t *testing.T) {
	t.Parallel()
	g := readWorld(t)
	for _, dim := range []string{"national", "province:seed"} {
		var p page
		r := g.ok(t, "GET", lb(dim)+"/members/r15/around", nil, &p)
		checkMeta(t, dim+" around", p.readMeta, bn(dim), r)
		if got := users(p.Entries); !slices.Equal(got, []string{"r13", "r14", "r15", "r16", "r17"}) {
			t.Errorf("%s around r15 (default radius 2): %v", dim, got)
		}
		checkSeedEntries(t, dim+" around r15", p.Entries, 13)
		// The window starts on r11, tied with r10 outside it: rank 11.
		g.ok(t, "GET", lb(dim)+"/members/r12/around?radius=1", nil, &p)
		checkSeedEntries(t, dim+" around r12", p.Entries, 11)
		if len(p.Entries) != 3 {
			t.Errorf("%s around r12 radius 1: %v", dim, users(p.Entries))
		}
		g.ok(t, "GET", lb(dim)+"/members/r01/around?radius=3", nil, &p)
		checkSeedEntries(t, dim+" around r01", p.Entries, 0)
		if len(p.Entries) != 5 {
			t.Errorf("%s around r01 radius 3 (cut at the top): %v", dim, users(p.Entries))
		}
		g.ok(t, "GET", lb(dim)+"/members/r20/around?radius=0", nil, &p)
		checkSeedEntries(t, dim+" around r20 radius 0", p.Entries, 20)
		if len(p.Entries) != 1 {
			t.Errorf("%s around r20 radius 0: %v", dim, users(p.Entries))
		}
	}
	var p page
	g.ok(t, "GET", lb("province:seed")+"/members/r28/around?radius=3", nil, &p)
	checkSeedEntries(t, "around r28 (cut at the end)", p.Entries, 25)
	if len(p.Entries) != 5 {
		t.Errorf("around r28 radius 3: %v", users(p.Entries))
	}
	g.wantErr(t, "GET", lb("national")+"/members/r15/around?radius=101", nil, 400, "invalid_argument", "radius")
	g.wantErr(t, "GET", lb("national")+"/members/r15/around?radius=-1", nil, 400, "invalid_argument", "radius")
	g.wantErr(t, "GET", lb("national")+"/members/nobody/around", nil, 404, "not_ranked", "")
}

// TestE2EEntries: GET {board}/entries (cursor and offset)
func TestE2EEntries(t *testing.T) {
	t.Parallel()
	g := readWorld(t)
	var all page
	g.ok(t, "GET", lb("national")+"/top?limit=1000", nil, &all)
	for _, c := range []struct {
		dim   string
		limit int
		want  []entry
	}{{"province:seed", 7, nil}, {"national", 4, all.Entries}} {
		var got []entry
		cursor, pages := "", 0
		var first string
		for {
			path := fmt.Sprintf("%s/entries?limit=%d", lb(c.dim), c.limit)
			if cursor != "" {
				path += "&cursor=" + cursor
			}
			var p page
			r := g.ok(t, "GET", path, nil, &p)
			checkMeta(t, c.dim+" entries", p.readMeta, bn(c.dim), r)
			got = append(got, p.Entries...)
			pages++
			if p.NextCursor == "" {
				break
			}
			if len(p.Entries) != c.limit {
				t.Errorf("%s entries: a page before the end holds %d entries", c.dim, len(p.Entries))
			}
			if first == "" {
				first = p.NextCursor
			}
			cursor = p.NextCursor
			if pages > 100 {
				t.Fatalf("%s entries: cursor walk does not end", c.dim)
			}
		}
		seen := map[string]bool{}
		for k, e := range got {
			if seen[e.User] {
				t.Errorf("%s entries: %s returned twice", c.dim, e.User)
			}
			seen[e.User] = true
			if e.Position != int64(k) {
				t.Errorf("%s entries: entry %d (%s) has position %d", c.dim, k, e.User, e.Position)
			}
		}
		if c.want == nil {
			if len(got) != seedN {
				t.Errorf("%s entries: walk returned %d, want %d", c.dim, len(got), seedN)
			}
			checkSeedEntries(t, c.dim+" entries walk", got, 0)
			if pages != (seedN+c.limit-1)/c.limit {
				t.Errorf("%s entries: %d pages, want %d", c.dim, pages, (seedN+c.limit-1)/c.limit)
			}
		} else if !slices.EqualFunc(got, c.want, sameEntry) {
			t.Errorf("%s entries walk differs from top?limit=1000:\n got %+v\nwant %+v", c.dim, got, c.want)
		}
		if len(got) < seedN {
			continue
		}
		// A tampered cursor, and a foreign one (another board, or a range query's).
		b := []byte(first)
		b[len(b)/2] ^= 1
		if b[len(b)/2] == '-' || b[len(b)/2] == '_' {
			b[len(b)/2] = 'A'
		}
		g.wantErr(t, "GET", lb(c.dim)+"/entries?cursor="+string(b), nil, 400, "invalid_cursor", "cursor")
		g.wantErr(t, "GET", lb(c.dim)+"/entries?cursor="+first+"x", nil, 400, "invalid_cursor", "cursor")
		g.wantErr(t, "GET", lb(c.dim)+"/entries?cursor=!!!", nil, 400, "invalid_cursor", "cursor")
		g.wantErr(t, "GET", lb(c.dim)+"/range?cursor="+first, nil, 400, "invalid_cursor", "cursor")
		other := "class:s1"
		if c.dim == other {
			other = "national"
		}
		g.wantErr(t, "GET", lb(other)+"/entries?cursor="+first, nil, 400, "invalid_cursor", "cursor")
		g.wantErr(t, "GET", lb(c.dim)+"/entries?cursor="+first+"&offset=3", nil, 400, "invalid_argument", "offset")
	}

	var p page
	r := g.ok(t, "GET", lb("national")+"/entries?offset=10&limit=5", nil, &p)
	checkMeta(t, "entries offset", p.readMeta, bn("national"), r)
	checkSeedEntries(t, "entries offset=10", p.Entries, 10)
	if len(p.Entries) != 5 || p.NextCursor != "" {
		t.Errorf("entries offset=10 limit=5: %v next %q", users(p.Entries), p.NextCursor)
	}
	g.ok(t, "GET", lb("province:seed")+"/entries?offset=28", nil, &p)
	checkSeedEntries(t, "entries offset=28", p.Entries, 28)
	if len(p.Entries) != 2 {
		t.Errorf("entries offset=28: %v", users(p.Entries))
	}
	g.ok(t, "GET", lb("national")+"/entries?offset=10000&limit=1", nil, &p)
	if len(p.Entries) != 0 {
		t.Errorf("entries offset=10000: %v", users(p.Entries))
	}
	g.wantErr(t, "GET", lb("national")+"/entries?offset=10001", nil, 400, "offset_too_deep", "offset")
	g.wantErr(t, "GET", lb("national")+"/entries?offset=-1", nil, 400, "invalid_argument", "offset")
	g.wantErr(t, "GET", lb("national")+"/entries?limit=0", nil, 400, "invalid_argument", "limit")
	g.wantErr(t, "GET", lb("national")+"/entries?limit=1001", nil, 400, "invalid_argument", "limit")
}

// TestE2ELookup: POST {board}/members:lookup
func TestE2ELookup(t *testing.T) {
	t.Parallel()
	g := readWorld(t)
	var p page
	r := g.ok(t, "POST", lb("national")+"/members:lookup", map[string]any{"users": []string{"r20", "r05", "nobody", "r05", "r22"}}, &p)
	checkMeta(t, "lookup", p.readMeta, bn("national"), r)
	want := []entry{
		{User: "r05", Points: seedPoints(5), Position: 5, Rank: seedRank(5)},
		{User: "r20", Points: seedPoints(20), Position: 20, Rank: seedRank(20)},
		{User: "r22", Points: seedPoints(22), Position: 22, Rank: seedRank(22)},
	}
	if !slices.EqualFunc(p.Entries, want, sameEntry) {
		t.Errorf("lookup: %+v, want %+v", p.Entries, want)
	}
	g.ok(t, "POST", lb("national")+"/members:lookup?profiles=1", map[string]any{"users": []string{"r00"}}, &p)
	if len(p.Entries) != 1 || p.Entries[0].Profile["name"] != "Ada" {
		t.Errorf("lookup profiles=1: %+v", p.Entries)
	}
	g.ok(t, "POST", lb("national")+"/members:lookup", map[string]any{"users": []string{"nobody"}}, &p)
	if p.Entries == nil || len(p.Entries) != 0 {
		t.Errorf("lookup of absent members: %+v, want []", p.Entries)
	}
	if !strings.Contains(string(g.do(t, "POST", lb("national")+"/members:lookup", `{"users":["nobody"]}`).body), `"entries":[]`) {
		t.Errorf("lookup of absent members must answer \"entries\":[]")
	}
	g.wantErr(t, "POST", lb("national")+"/members:lookup", `{"users":[]}`, 400, "invalid_argument", "users")
	g.wantErr(t, "POST", lb("national")+"/members:lookup", `{"users":["ok","bad id"]}`, 400, "invalid_argument", "users[1]")
	g.wantErr(t, "POST", lb("national")+"/members:lookup", `{"user":["a"]}`, 400, "invalid_argument", "user")
	g.wantErr(t, "POST", lb("national")+"/members:lookup", `{"users":"a"}`, 400, "invalid_argument", "users")
	many := make([]string, 1001)
	for i := range many {
		many[i] = fmt.Sprintf("m%d", i)
	}
	g.wantErr(t, "POST", lb("national")+"/members:lookup", map[string]any{"users": many}, 400, "invalid_argument", "users")
}

// TestE2ECountRange: GET {board}/count and {board}/range
func TestE2ECountRange(t *testing.T) {
	t.Parallel()
	g := readWorld(t)
	inBand := func(lo, hi int64) (idx []int) {
		for i := 0; i < seedN; i++ {
			if p := seedPoints(i); p >= lo && p <= hi {
				idx = append(idx, i)
			}
		}
		return idx
	}
	var c countRes
	r := g.ok(t, "GET", lb("national")+"/count?min=1800&max=1900", nil, &c)
	checkMeta(t, "count", c.readMeta, bn("national"), r)
	if want := int64(len(inBand(1800, 1900))); c.Count != want {
		t.Errorf("count 1800..1900: %d, want %d", c.Count, want)
	}
	g.ok(t, "GET", lb("province:seed")+"/count", nil, &c)
	if c.Count != seedN {
		t.Errorf("count province:seed: %d", c.Count)
	}
	g.ok(t, "GET", lb("national")+"/count?min=1000", nil, &c)
	if c.Count != seedN {
		t.Errorf("count min=1000: %d, want %d", c.Count, seedN)
	}
	g.ok(t, "GET", lb("national")+"/count?min=1801&max=1809", nil, &c)
	if c.Count != 0 {
		t.Errorf("empty band count: %d", c.Count)
	}
	g.wantErr(t, "GET", lb("national")+"/count?min=5&max=1", nil, 400, "invalid_argument", "min")
	g.wantErr(t, "GET", lb("national")+"/count?min=x", nil, 400, "invalid_argument", "min")

	want := inBand(1800, 1900)
	var got []entry
	cursor := ""
	for pages := 0; ; pages++ {
		path := lb("national") + "/range?min=1800&max=1900&limit=3"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		var p page
		r := g.ok(t, "GET", path, nil, &p)
		checkMeta(t, "range", p.readMeta, bn("national"), r)
		got = append(got, p.Entries...)
		if cursor = p.NextCursor; cursor == "" || pages > 20 {
			break
		}
	}
	if len(got) != len(want) {
		t.Errorf("range 1800..1900: %v, want %d entries from r%02d", users(got), len(want), want[0])
	} else {
		checkSeedEntries(t, "range 1800..1900", got, want[0])
	}
	var p page
	g.ok(t, "GET", lb("national")+"/range?min=1801&max=1809", nil, &p)
	if len(p.Entries) != 0 || p.NextCursor != "" {
		t.Errorf("empty range: %+v", p)
	}
	g.wantErr(t, "GET", lb("national")+"/range?min=5&max=1", nil, 400, "invalid_argument", "min")
	g.wantErr(t, "GET", lb("national")+"/range?limit=0", nil, 400, "invalid_argument", "limit")
	// A range cursor is bound to its band.
	g.ok(t, "GET", lb("national")+"/range?min=1800&max=1900&limit=3", nil, &p)
	g.wantErr(t, "GET", lb("national")+"/range?min=1700&max=1900&limit=3&cursor="+p.NextCursor, nil, 400, "invalid_cursor", "cursor")
}

// TestE2EPeriod: GET /v1/families/{family}/period
func TestE2EPeriod(t *testing.T) {
	t.Parallel()
	g := readWorld(t)
	var p periodRes
	before := currentWeek()
	g.ok(t, "GET", "/v1/families/learning/period", nil, &p)
	if p.Period != before && p.Period != currentWeek() {
		t.Errorf("learning period now: %q, want %q", p.Period, before)
	}
	starts, err1 := time.Parse(time.RFC3339, p.Starts)
	ends, err2 := time.Parse(time.RFC3339, p.Ends)
	if err1 != nil || err2 != nil {
		t.Fatalf("starts/ends not RFC 3339: %+v", p)
	}
	now := e2eNow()
	ls := starts.In(shanghai)
	if p.Family != "learning" || p.State != "open" || now.Before(starts) || !now.Before(ends) ||
		ls.Weekday() != time.Monday || ls.Hour() != 0 || ls.Minute() != 0 || !ends.Equal(starts.AddDate(0, 0, 7)) {
		t.Errorf("learning period now: %+v (now %s)", p, now.Format(time.RFC3339))
	}

	g.ok(t, "GET", "/v1/families/learning/period?at=2027-01-03T12:00:00Z", nil, &p)
	wantStart := time.Date(2026, 12, 28, 0, 0, 0, 0, shanghai)
	s, _ := time.Parse(time.RFC3339, p.Starts)
	e, _ := time.Parse(time.RFC3339, p.Ends)
	if p.Period != "2026-W53" || !s.Equal(wantStart) || !e.Equal(wantStart.AddDate(0, 0, 7)) || p.State != "open" {
		t.Errorf("learning period at 2027-01-03T12:00Z: %+v, want 2026-W53 from %s", p, wantStart.Format(time.RFC3339))
	}
	// The query's '+' arrives as a space; it is read back as '+'.
	g.ok(t, "GET", "/v1/families/learning/period?at=2027-01-03T20:00:00+08:00", nil, &p)
	if p.Period != "2026-W53" {
		t.Errorf("at with +08:00 offset: %+v", p)
	}
	g.ok(t, "GET", "/v1/families/learning/period?at=2026-01-01T00:00:00Z", nil, &p)
	if p.Period != "2026-W01" || p.State != "closed" {
		t.Errorf("a past week: %+v, want 2026-W01 closed", p)
	}
	g.ok(t, "GET", "/v1/families/game/period", nil, &p)
	if p.Period != "all" || p.Starts != "" || p.Ends != "" || p.State != "open" {
		t.Errorf("game period: %+v, want all without bounds", p)
	}
	g.ok(t, "GET", "/v1/families/course/period?at=2027-01-03T23:30:00Z", nil, &p)
	if p.Period != "2026-W53" {
		t.Errorf("course (UTC) period at 2027-01-03T23:30Z: %+v", p)
	}
	g.wantErr(t, "GET", "/v1/families/learning/period?at=yesterday", nil, 400, "invalid_argument", "at")
	g.wantErr(t, "GET", "/v1/families/nosuch/period", nil, 404, "unknown_family", "")
	g.wantErr(t, "GET", "/v1/families/BAD/period", nil, 400, "invalid_argument", "family")
}

// TestE2EBoardNames: period ids and dimensions in board paths.
func TestE2EBoardNames(t *testing.T) {
	t.Parallel()
	g := readWorld(t)
	week := currentWeek()
	var p page
	r := g.ok(t, "GET", "/v1/boards/learning/2026-W53/national/top", nil, &p)
	checkMeta(t, "W53 top", p.readMeta, "learning/2026-W53/national", r)
	if len(p.Entries) != 0 {
		t.Errorf("2026-W53 top: %+v", p.Entries)
	}
	var c countRes
	g.ok(t, "GET", "/v1/boards/learning/2026-W53/province:zhejiang/count", nil, &c)
	if c.Count != 0 || c.Board != "learning/2026-W53/province:zhejiang" {
		t.Errorf("2026-W53 count: %+v", c)
	}
	g.wantErr(t, "GET", "/v1/boards/learning/2026-W53/national/members/r00", nil, 404, "not_ranked", "")
	g.ok(t, "GET", "/v1/boards/learning/"+week+"/national/top?limit=1", nil, &p)
	if p.Board != bn("national") {
		t.Errorf("explicit current week: board %q", p.Board)
	}
	checkSeedEntries(t, "explicit week top", p.Entries, 0)
	g.ok(t, "GET", "/v1/boards/game/current/national/top", nil, &p)
	if p.Board != "game/all/national" || len(p.Entries) != 1 || p.Entries[0].User != "p1" || p.Entries[0].Points != 100 || p.Entries[0].Rank != 1 {
		t.Errorf("game top: %+v", p)
	}
	g.ok(t, "GET", "/v1/boards/game/all/national/top", nil, &p)

	for _, bad := range []string{"2026-W54", "2025-W53", "2026-W00", "2026-53", "2026-w10", "2026-08-20", "week", "all"} {
		g.wantErr(t, "GET", "/v1/boards/learning/"+bad+"/national/top", nil, 400, "invalid_argument", "period")
	}
	g.wantErr(t, "GET", "/v1/boards/game/2026-W10/national/top", nil, 400, "invalid_argument", "period")

	g.wantErr(t, "GET", lb("school:x")+"/top", nil, 404, "unknown_board", "")
	g.wantErr(t, "GET", "/v1/boards/game/current/province:x/top", nil, 404, "unknown_board", "")
	for _, bad := range []string{"province:", "province:a%20b", "province:" + strings.Repeat("v", 65), "Province:x", "province", ":x", "province:a:b"} {
		g.wantErr(t, "GET", lb(bad)+"/top", nil, 400, "invalid_argument", "dimension")
	}
}

// TestE2EConsistency: consistency levels: cached (default for top), replica, primary.
func TestE2EConsistency(t *testing.T) {
	t.Parallel()
	g := readWorld(t)
	var a, b page
	cached := false
	for try := 0; try < 3 && !cached; try++ {
		g.ok(t, "GET", lb("province:seed")+fmt.Sprintf("/top?limit=%d", 7+try), nil, &a)
		r := g.ok(t, "GET", lb("province:seed")+fmt.Sprintf("/top?limit=%d", 7+try), nil, &b)
		checkMeta(t, "cached top", b.readMeta, bn("province:seed"), r)
		if b.Source == "cache" {
			cached = true
			if cc := r.header.Get("Cache-Control"); !strings.HasPrefix(cc, "max-age=") {
				t.Errorf("a cached answer: Cache-Control %q, want max-age=N", cc)
			}
			if !slices.EqualFunc(a.Entries, b.Entries, sameEntry) {
				t.Errorf("cached answer differs from the one that filled the cache")
			}
		}
	}
	if !cached {
		t.Errorf("a repeated top read within cache_ttl was never answered from the cache (source %q)", b.Source)
	}
	r := g.ok(t, "GET", lb("province:seed")+"/top?limit=3&consistency=replica", nil, &a)
	checkMeta(t, "replica top", a.readMeta, bn("province:seed"), r)
	if a.Source != "replica" {
		t.Errorf("consistency=replica with replica_reads on: source %q, want replica", a.Source)
	}
	var st standing
	r = g.ok(t, "GET", lb("province:seed")+"/members/r03?consistency=primary", nil, &st)
	checkMeta(t, "primary member", st.readMeta, bn("province:seed"), r)
	if st.Source != "primary" || st.Position != 3 {
		t.Errorf("member consistency=primary: %+v", st)
	}
}

// TestE2EBoardList: GET /v1/boards/{family}/{period}
func TestE2EBoardList(t *testing.T) {
	t.Parallel()
	g := readWorld(t)
	week := currentWeek()
	type summary struct {
		Board     string `json:"board"`
		Dimension string `json:"dimension"`
		Shards    int    `json:"shards"`
		Members   int64  `json:"members"`
	}
	var l struct {
		readMeta
		Family string    `json:"family"`
		Period string    `json:"period"`
		Boards []summary `json:"boards"`
	}
	r := g.ok(t, "GET", "/v1/boards/learning/current", nil, &l)
	checkMeta(t, "board list", l.readMeta, "learning/"+week, r)
	if l.Family != "learning" || l.Period != week {
		t.Errorf("board list: family %q period %q", l.Family, l.Period)
	}
	got := map[string]summary{}
	for _, b := range l.Boards {
		got[b.Dimension] = b
	}
	var c countRes
	g.ok(t, "GET", lb("national")+"/count", nil, &c)
	for dim, want := range map[string]summary{
		"national":          {Board: bn("national"), Dimension: "national", Shards: 16, Members: c.Count},
		"province:seed":     {Board: bn("province:seed"), Dimension: "province:seed", Shards: 1, Members: seedN},
		"class:s1":          {Board: bn("class:s1"), Dimension: "class:s1", Shards: 1, Members: seedN},
		"province:zhejiang": {Board: bn("province:zhejiang"), Dimension: "province:zhejiang", Shards: 1, Members: 1},
		"class:c42":         {Board: bn("class:c42"), Dimension: "class:c42", Shards: 1, Members: 1},
	} {
		if got[dim] != want {
			t.Errorf("board list %s: %+v, want %+v", dim, got[dim], want)
		}
	}
	if len(l.Boards) != 5 {
		t.Errorf("board list: %d boards, want 5: %+v", len(l.Boards), l.Boards)
	}
	g.ok(t, "GET", "/v1/boards/learning/2026-W53", nil, &l)
	if l.Period != "2026-W53" || l.Boards == nil || len(l.Boards) != 0 {
		t.Errorf("board list of an empty period: %+v", l)
	}
	g.ok(t, "GET", "/v1/boards/game/current", nil, &l)
	if l.Period != "all" || len(l.Boards) != 1 || l.Boards[0].Board != "game/all/national" || l.Boards[0].Shards != 8 || l.Boards[0].Members != 1 {
		t.Errorf("game board list: %+v", l)
	}
	g.wantErr(t, "GET", "/v1/boards/nosuch/current", nil, 404, "unknown_family", "")
	g.wantErr(t, "GET", "/v1/boards/learning/2026-W54", nil, 400, "invalid_argument", "period")
}

// TestE2ELayout: GET /v1/layout
func TestE2ELayout(t *testing.T) {
	t.Parallel()
	g := readWorld(t)
	var l struct {
		readMeta
		Boards []struct {
			Board  string `json:"board"`
			Shards []struct {
				Shard   int    `json:"shard"`
				Key     string `json:"key"`
				Slot    int    `json:"slot"`
				Node    string `json:"node"`
				Members int64  `json:"members"`
				Memory  int64  `json:"memory_bytes"`
			} `json:"shards"`
			Nodes map[string]int `json:"nodes"`
		} `json:"boards"`
		Nodes []struct {
			Node     string   `json:"node"`
			Replicas []string `json:"replicas"`
			Slots    int      `json:"slots"`
			Shards   int      `json:"shards"`
			Members  int64    `json:"members"`
			Memory   int64    `json:"memory_bytes"`
		} `json:"nodes"`
		Warnings []string `json:"warnings"`
	}
	r := g.ok(t, "GET", "/v1/layout", nil, &l)
	checkMeta(t, "layout", l.readMeta, "*", r)
	slots, masters := 0, map[string]bool{}
	for _, n := range l.Nodes {
		slots += n.Slots
		masters[n.Node] = true
	}
	if slots != 16384 || len(masters) != 3 {
		t.Errorf("layout nodes: %d masters covering %d slots, want 3 covering 16384: %+v", len(masters), slots, l.Nodes)
	}
	if l.Warnings == nil {
		t.Errorf("layout: warnings must be an array")
	}
	found := false
	for _, b := range l.Boards {
		if b.Board != bn("national") {
			continue
		}
		found = true
		var members int64
		placed := 0
		for i, sh := range b.Shards {
			if sh.Shard != i || sh.Slot < 0 || sh.Slot > 16383 || !masters[sh.Node] || sh.Key == "" {
				t.Errorf("layout shard %d: %+v", i, sh)
			}
			members += sh.Members
		}
		for _, n := range b.Nodes {
			placed += n
		}
		var c countRes
		g.ok(t, "GET", lb("national")+"/count", nil, &c)
		if len(b.Shards) != 16 || placed != 16 || members != c.Count {
			t.Errorf("layout %s: %d shards, %d placed, %d members (count %d)", b.Board, len(b.Shards), placed, members, c.Count)
		}
	}
	if !found {
		t.Errorf("layout lacks %s", bn("national"))
	}
	g.ok(t, "GET", "/v1/layout?family=game&period=current", nil, &l)
	if len(l.Boards) != 1 || l.Boards[0].Board != "game/all/national" || len(l.Boards[0].Shards) != 8 {
		t.Errorf("layout of game: %+v", l.Boards)
	}
	g.wantErr(t, "GET", "/v1/layout?family=nosuch", nil, 404, "unknown_family", "")
	g.wantErr(t, "GET", "/v1/layout?family=learning&period=2026-W54", nil, 400, "invalid_argument", "period")
	g.wantErr(t, "GET", "/v1/layout?family=learning&family=game", nil, 400, "invalid_argument", "family")
}

// TestE2EService: service endpoints, routing, metrics.
func TestE2EService(t *testing.T) {
	t.Parallel()
	g := readWorld(t)
	var st struct {
		Status string `json:"status"`
	}
	g.ok(t, "GET", "/healthz", nil, &st)
	if st.Status != "ok" {
		t.Errorf("healthz: %+v", st)
	}
	g.ok(t, "GET", "/readyz", nil, &st)
	if st.Status != "ok" {
		t.Errorf("readyz: %+v", st)
	}

	g.wantErr(t, "GET", "/v1/nope", nil, 404, "not_found", "")
	g.wantErr(t, "GET", "/", nil, 404, "not_found", "")
	g.wantErr(t, "GET", lb("national")+"/bottom", nil, 404, "not_found", "")
	e := g.do(t, "DELETE", "/v1/events", nil)
	if e.status != 405 || !strings.Contains(e.header.Get("Allow"), "POST") {
		t.Errorf("DELETE /v1/events: %s Allow=%q, want 405 allowing POST", e, e.header.Get("Allow"))
	}
	g.wantErr(t, "DELETE", "/v1/events", nil, 405, "method_not_allowed", "")
	g.wantErr(t, "GET", "/v1/events", nil, 405, "method_not_allowed", "")
	g.wantErr(t, "POST", lb("national")+"/top", `{}`, 405, "method_not_allowed", "")
	g.wantErr(t, "POST", "/healthz", nil, 405, "method_not_allowed", "")

	// What the metrics below count: a replay (a dedupe hit) and a top read.
	var rep eventRes
	g.ok(t, "POST", "/v1/events", map[string]any{"event_id": "evt-8842", "family": "learning", "user": "u1001", "delta": 20, "dims": learningDims}, &rep)
	if !rep.Duplicate {
		t.Errorf("replay of the shared world's evt-8842: %+v, want duplicate", rep)
	}
	g.ok(t, "GET", lb("national")+"/top", nil, nil)

	text := g.metrics(t)
	for _, name := range []string{
		"rankgate_http_requests_total",
		"rankgate_fanout_node_duration_seconds",
		"rankgate_dedupe_hits_total",
	} {
		if !strings.Contains(text, "\n"+name) {
			t.Errorf("/metrics lacks %s", name)
		}
	}
	if !strings.Contains(text, `rankgate_http_requests_total{code="200",method="GET",route="GET /v1/boards/{family}/{period}/{dimension}/top"}`) {
		t.Errorf("/metrics lacks the top route's 200 counter")
	}
	if !strings.Contains(text, `rankgate_dedupe_hits_total{family="learning"}`) {
		t.Errorf("/metrics lacks learning dedupe hits after replays")
	}
	t.Run("redis_errors_total", func(t *testing.T) {
		if !strings.Contains(text, "\nrankgate_redis_errors_total") {
			t.Error("rankgate_redis_errors_total is absent from /metrics before the first Redis error")
		}
	})
}

// TestE2ESnapshots: POST {board}/snapshots and GET {board}/entries?snapshot=,
// on a gateway of its own (it adds a member ahead of the seed on the
// national board). Expired snapshots are the client's 410, not Redis failing.
func TestE2ESnapshots(t *testing.T) {
	t.Parallel()
	g := startGateway(t, false)
	seedBoards(t, g)
	redisErrorsBefore, _ := metricSum(g.metrics(t), "rankgate_redis_errors_total")
	var sn struct {
		Board     string `json:"board"`
		Snapshot  string `json:"snapshot"`
		ExpiresAt string `json:"expires_at"`
		Size      int64  `json:"size"`
		Depth     int    `json:"depth"`
	}
	r := g.do(t, "POST", lb("national")+"/snapshots", map[string]any{"depth": 20, "ttl_seconds": 60})
	if r.status != 201 {
		t.Fatalf("create snapshot: %s, want 201", r)
	}
	if err := json.Unmarshal(r.body, &sn); err != nil {
		t.Fatal(err)
	}
	exp, err := time.Parse(time.RFC3339, sn.ExpiresAt)
	if err != nil || sn.Board != bn("national") || sn.Snapshot == "" || sn.Size != 20 || sn.Depth != 20 ||
		exp.Before(e2eNow().Add(55*time.Second)) || exp.After(e2eNow().Add(65*time.Second)) {
		t.Errorf("create snapshot: %+v", sn)
	}

	// The board moves on; the snapshot does not.
	g.ok(t, "POST", "/v1/events", map[string]any{"event_id": "snap-1", "family": "learning", "user": "zz", "delta": 5000}, nil)
	var p page
	g.ok(t, "GET", lb("national")+"/top?limit=1&consistency=primary", nil, &p)
	if len(p.Entries) != 1 || p.Entries[0].User != "zz" {
		t.Errorf("live top after the new event: %+v", p.Entries)
	}
	r = g.ok(t, "GET", lb("national")+"/entries?snapshot="+sn.Snapshot+"&offset=0&limit=5", nil, &p)
	checkMeta(t, "snapshot page", p.readMeta, bn("national"), r)
	checkSeedEntries(t, "snapshot offset=0", p.Entries, 0)
	if len(p.Entries) != 5 {
		t.Errorf("snapshot offset=0 limit=5: %v", users(p.Entries))
	}
	g.ok(t, "GET", lb("national")+"/entries?snapshot="+sn.Snapshot+"&offset=15&limit=10", nil, &p)
	checkSeedEntries(t, "snapshot offset=15", p.Entries, 15)
	if len(p.Entries) != 5 {
		t.Errorf("snapshot offset=15 limit=10 (depth 20): %v", users(p.Entries))
	}
	g.ok(t, "GET", lb("national")+"/entries?snapshot="+sn.Snapshot+"&offset=20", nil, &p)
	if len(p.Entries) != 0 {
		t.Errorf("snapshot past its depth: %v", users(p.Entries))
	}

	// Defaults: depth 1000, ttl 60.
	r = g.do(t, "POST", lb("province:seed")+"/snapshots", `{}`)
	if r.status != 201 || json.Unmarshal(r.body, &sn) != nil || sn.Depth != 1000 || sn.Size != seedN {
		t.Errorf("snapshot with defaults: %s", r)
	}
	g.wantErr(t, "POST", lb("national")+"/snapshots", `{"depth":0}`, 400, "invalid_argument", "depth")
	g.wantErr(t, "POST", lb("national")+"/snapshots", `{"depth":10001}`, 400, "invalid_argument", "depth")
	g.wantErr(t, "POST", lb("national")+"/snapshots", `{"ttl_seconds":0}`, 400, "invalid_argument", "ttl_seconds")
	g.wantErr(t, "POST", lb("national")+"/snapshots", `{"ttl_seconds":601}`, 400, "invalid_argument", "ttl_seconds")
	g.wantErr(t, "POST", lb("national")+"/snapshots", `{"depth":10,"size":3}`, 400, "invalid_argument", "size")
	g.wantErr(t, "POST", lb("national")+"/snapshots", ``, 400, "invalid_argument", "")
	g.wantErr(t, "POST", lb("school:x")+"/snapshots", `{}`, 404, "unknown_board", "")
	g.wantErr(t, "POST", "/v1/boards/nosuch/current/national/snapshots", `{}`, 404, "unknown_family", "")

	g.wantErr(t, "GET", lb("national")+"/entries?snapshot=nope", nil, 400, "invalid_argument", "snapshot")
	g.wantErr(t, "GET", lb("national")+"/entries?snapshot="+sn.Snapshot+"&cursor=abc", nil, 400, "invalid_argument", "cursor")
	// A well-formed id that never existed answers like an expired one.
	g.wantErr(t, "GET", lb("national")+"/entries?snapshot=20x18c0000000x0123456789abcdef", nil, 410, "snapshot_expired", "")
	// A snapshot of one board is not readable on another.
	g.wantErr(t, "GET", lb("class:s1")+"/entries?snapshot="+sn.Snapshot, nil, 410, "snapshot_expired", "")

	// Expiry: a 1 s snapshot is gone shortly after (bounded poll on its state).
	r = g.do(t, "POST", lb("class:s1")+"/snapshots", `{"depth":5,"ttl_seconds":1}`)
	if r.status != 201 || json.Unmarshal(r.body, &sn) != nil {
		t.Fatalf("short snapshot: %s", r)
	}
	g.ok(t, "GET", lb("class:s1")+"/entries?snapshot="+sn.Snapshot+"&offset=0&limit=5", nil, &p)
	checkSeedEntries(t, "short snapshot", p.Entries, 0)
	soon.Eventually(t, 5*time.Second, func() error {
		r := g.do(t, "GET", lb("class:s1")+"/entries?snapshot="+sn.Snapshot, nil)
		switch r.status {
		case 410:
			if e := checkErrShape(t, "expired snapshot", r); e.Code != "snapshot_expired" {
				t.Errorf("expired snapshot: code %q", e.Code)
			}
			return nil
		case 200:
			return fmt.Errorf("a 1 s snapshot still answers %s", r)
		}
		t.Fatalf("a 1 s snapshot answers %s, want 200 until it expires, then 410", r)
		return nil
	})

	after, _ := metricSum(g.metrics(t), "rankgate_redis_errors_total")
	if after != redisErrorsBefore {
		t.Errorf("rankgate_redis_errors_total rose from %v to %v on a healthy cluster during snapshot 410s: "+
			"a cancelled sibling of an expired shard is not a Redis error", redisErrorsBefore, after)
	}
}

// seedBoards writes the seed model (r00..r29 on province:seed and class:s1,
// in one batch) and checks every result.
func seedBoards(t *testing.T, g *gw) {
	t.Helper()
	evs := make([]any, seedN)
	for i := range evs {
		evs[i] = map[string]any{"event_id": "seed-" + seedUser(i), "family": "learning", "user": seedUser(i),
			"delta": seedPoints(i), "dims": map[string]string{"province": "seed", "class": "s1"}}
	}
	var out struct {
		Results []eventRes `json:"results"`
	}
	g.ok(t, "POST", "/v1/events:batch", map[string]any{"events": evs}, &out)
	for i, r := range out.Results {
		if r.EventID != "seed-"+seedUser(i) || r.Duplicate || r.points()[bn("province:seed")] != seedPoints(i) {
			t.Fatalf("seed result %d: %+v", i, r)
		}
	}
	if len(out.Results) != seedN {
		t.Fatalf("seed: %d results", len(out.Results))
	}
}

// seedWorld writes the boards the read tests read: u1001's 20 points on
// learning's national, province:zhejiang and class:c42 boards (evt-8842),
// p1's 100 on game (g-1), r00's profile (Ada), then the seed model, which
// no read has touched before. Everything but the seed has < 100 points.
func seedWorld(t *testing.T, g *gw) {
	t.Helper()
	g.ok(t, "POST", "/v1/events", map[string]any{"event_id": "evt-8842", "family": "learning", "user": "u1001", "delta": 20, "dims": learningDims}, nil)
	g.ok(t, "POST", "/v1/events", map[string]any{"event_id": "g-1", "family": "game", "user": "p1", "value": 100}, nil)
	g.ok(t, "PUT", "/v1/profiles/r00", map[string]any{"name": "Ada", "avatar": "https://img.example/ada.png"}, nil)
	seedBoards(t, g)
}

// metrics returns the /metrics text.
func (g *gw) metrics(t *testing.T) string {
	t.Helper()
	r := g.do(t, "GET", "/metrics", nil)
	if r.status != 200 || !strings.HasPrefix(r.header.Get("Content-Type"), "text/plain") {
		t.Fatalf("metrics: %s (Content-Type %q)", r, r.header.Get("Content-Type"))
	}
	return string(r.body)
}

// metricSum sums every sample of a counter or gauge; ok says whether any exists.
func metricSum(text, name string) (sum float64, ok bool) {
	for _, l := range strings.Split(text, "\n") {
		var value string
		switch {
		case strings.HasPrefix(l, name+"{"):
			value = l[strings.LastIndexByte(l, '}')+1:] // label values may hold spaces
		case strings.HasPrefix(l, name+" "):
			value = l[len(name):]
		default:
			continue
		}
		if f := strings.Fields(value); len(f) > 0 {
			if v, err := strconv.ParseFloat(f[0], 64); err == nil {
				sum, ok = sum+v, true
			}
		}
	}
	return sum, ok
}

// sameEntry compares entries without their profiles.
func sameEntry(a, b entry) bool {
	return a.User == b.User && a.Points == b.Points && a.Position == b.Position && a.Rank == b.Rank
}

func mapsEqual(a, b map[string]int64) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// postChunked sends body without a Content-Length (chunked), so the server
// cannot refuse it by its header alone.
func (g *gw) postChunked(t *testing.T, path, body string) resp {
	t.Helper()
	pr, pw := io.Pipe()
	go func() {
		_, err := io.Copy(pw, strings.NewReader(body))
		pw.CloseWithError(err)
	}()
	req, err := http.NewRequest("POST", g.base+path, pr)
	if err != nil {
		t.Fatal(err)
	}
	req.ContentLength = -1
	res, err := g.client.Do(req)
	if err != nil {
		t.Fatalf("chunked POST %s: %v", path, err)
	}
	defer res.Body.Close()
	data, _ := io.ReadAll(res.Body)
	return resp{status: res.StatusCode, header: res.Header, body: data}
}

// ---------------------------------------------------------------- hostile input

// TestE2EOneSeed: redis.addrs with a single node of the cluster is enough.
// The gateway asks that node, runs in cluster mode with replica reads, and
// a board whose shards sit on every master reads and writes exactly (a
// standalone client would have answered most keys with MOVED).
func TestE2EOneSeed(t *testing.T) {
	t.Parallel()
	g := startGatewayOn(t, false, testcluster.Addrs(t)[:1])
	const users = 64 // over the 8 shards of game's national board, so on all 3 masters
	events := make([]any, users)
	for i := range users {
		events[i] = map[string]any{"event_id": fmt.Sprintf("seed-%d", i), "family": "game", "user": fmt.Sprintf("s%02d", i), "value": 1000 + i}
	}
	var out struct {
		Results []struct {
			Error *errBody `json:"error"`
		} `json:"results"`
	}
	g.ok(t, "POST", "/v1/events:batch", map[string]any{"events": events}, &out)
	if len(out.Results) != users {
		t.Fatalf("batch of %d: %d results", users, len(out.Results))
	}
	for i, r := range out.Results {
		if r.Error != nil {
			t.Fatalf("event %d: %+v", i, *r.Error)
		}
	}
	for _, consistency := range []string{"primary", "replica"} {
		var p page
		g.ok(t, "GET", "/v1/boards/game/current/national/top?limit=100&consistency="+consistency, nil, &p)
		if len(p.Entries) != users || p.Partial {
			t.Fatalf("%s: %d entries (partial %v), want %d", consistency, len(p.Entries), p.Partial, users)
		}
		for k, e := range p.Entries {
			if want := fmt.Sprintf("s%02d", users-1-k); e.User != want || e.Points != int64(1000+users-1-k) || e.Rank != int64(k+1) {
				t.Fatalf("%s: entry %d = %+v, want %s with %d points, rank %d", consistency, k, e, want, 1000+users-1-k, k+1)
			}
		}
	}
	if logs := g.logs.String(); !strings.Contains(logs, "using cluster mode") {
		t.Errorf("no log line about the seed being a cluster node:\n%s", tailLines(logs, 20))
	}
}

// TestE2EWaitsForRedis: a gateway started before its Redis waits (bounded)
// and comes up when Redis does — also with a single address, where building
// the client already needs the node to answer (is it a cluster node?).
func TestE2EWaitsForRedis(t *testing.T) {
	t.Parallel()
	bin, err := exec.LookPath("redis-server")
	if err != nil {
		t.Fatalf("redis-server not found (make test installs it through deploy/cluster/cluster.sh): %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	g, ready := launchGateway(t, []string{"127.0.0.1:" + strconv.Itoa(port)})
	if err := soon.Within(10*time.Second, func() error {
		if !strings.Contains(g.logs.String(), "waiting for redis") {
			return errors.New("no \"waiting for redis\" in the log")
		}
		return nil
	}); err != nil {
		g.cancel()
		t.Fatalf("%v\nlogs:\n%s", err, g.logs.String())
	}
	srv := exec.Command(bin, "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", t.TempDir())
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Process.Kill(); _ = srv.Wait() })
	g.waitReady(t, ready, false)

	g.ok(t, "POST", "/v1/events", map[string]any{"event_id": "w-1", "family": "game", "user": "late", "value": 7}, nil)
	var p page
	g.ok(t, "GET", "/v1/boards/game/current/national/top?consistency=primary", nil, &p)
	if len(p.Entries) != 1 || p.Entries[0].User != "late" || p.Entries[0].Points != 7 {
		t.Fatalf("top after a late Redis: %+v", p.Entries)
	}
}

// TestE2ENoInputProduces5xx: bad input is never answered with a 5xx.
func TestE2ENoInputProduces5xx(t *testing.T) {
	g := startGateway(t, false)
	// Something on the boards, so reads go past the empty-board shortcuts.
	g.ok(t, "POST", "/v1/events", map[string]any{"event_id": "h-1", "family": "learning", "user": "h1", "delta": 5,
		"dims": map[string]string{"province": "p", "class": "c"}}, nil)
	g.ok(t, "POST", "/v1/events", map[string]any{"event_id": "h-2", "family": "game", "user": "h1", "value": 5}, nil)

	const b = "/v1/boards/learning/current/national"
	deep := strings.Repeat("[", 20000) + strings.Repeat("]", 20000)
	cases := []struct {
		name         string
		method, path string
		body         string
	}{
		{"nul in member", "GET", b + "/members/a%00b", ""},
		{"nul in family", "GET", "/v1/boards/lea%00rning/current/national/top", ""},
		{"nul in query", "GET", b + "/top?limit=%00", ""},
		{"braces member raw", "GET", b + "/members/{}", ""},
		{"braces member escaped", "GET", b + "/members/%7Bu1%7D", ""},
		{"braces member around", "GET", b + "/members/{u1}/around", ""},
		{"braces in projection member", "PUT", "/v1/boards/course/current/national/members/%7Bx%7D", `{"version":1,"points":1}`},
		{"braces in profile member", "PUT", "/v1/profiles/%7B%7D", `{"name":"x"}`},
		{"slash-escaped member", "GET", b + "/members/a%2Fb", ""},
		{"dot-dot path", "GET", "/v1/boards/learning/current/../../healthz", ""},
		{"double slash", "GET", "/v1//boards/learning/current/national/top", ""},
		{"bad percent escape", "GET", b + "/members/%zz", ""},
		{"bad percent escape in query", "GET", b + "/top?limit=%zz", ""},
		{"huge limit", "GET", b + "/top?limit=99999999999999999999999", ""},
		{"max int limit", "GET", b + "/top?limit=9223372036854775807", ""},
		{"negative limit", "GET", b + "/top?limit=-5", ""},
		{"negative entries limit", "GET", b + "/entries?limit=-1&offset=0", ""},
		{"huge offset", "GET", b + "/entries?offset=9223372036854775807", ""},
		{"max offset max limit", "GET", b + "/entries?offset=10000&limit=1000", ""},
		{"negative radius", "GET", b + "/members/h1/around?radius=-9223372036854775808", ""},
		{"huge radius", "GET", b + "/members/h1/around?radius=1e9", ""},
		{"count int64 extremes", "GET", b + "/count?min=-9223372036854775808&max=9223372036854775807", ""},
		{"count overflow", "GET", b + "/count?min=-99999999999999999999", ""},
		{"range int64 extremes", "GET", b + "/range?min=-9223372036854775808&max=9223372036854775807&limit=1000", ""},
		{"range below the board", "GET", b + "/range?min=-9223372036854775808&max=-9223372036854775807", ""},
		{"range above the board", "GET", b + "/range?min=9007199254740993&max=9223372036854775807", ""},
		{"game range extremes", "GET", "/v1/boards/game/all/national/range?min=-9223372036854775808&max=9223372036854775807", ""},
		{"game count extremes", "GET", "/v1/boards/game/all/national/count?min=-9223372036854775808&max=9223372036854775807", ""},
		{"duplicate params", "GET", b + "/top?limit=1&limit=1", ""},
		{"duplicate consistency", "GET", b + "/top?consistency=primary&consistency=primary", ""},
		{"duplicate cursor", "GET", b + "/entries?cursor=a&cursor=b", ""},
		{"semicolon query", "GET", b + "/top?limit=1;limit=2", ""},
		{"long garbage cursor", "GET", b + "/entries?cursor=" + strings.Repeat("A", 5000), ""},
		{"base64 garbage cursor", "GET", b + "/entries?cursor=AQAAAAAAAAAAaDEAAAAAAAAAAA", ""},
		{"snapshot param", "GET", b + "/entries?snapshot=x", ""},
		{"unicode member", "GET", b + "/members/%E7%94%A8%E6%88%B7", ""},
		{"unicode dimension", "GET", "/v1/boards/learning/current/province:%E6%B5%99%E6%B1%9F/top", ""},
		{"unicode family", "GET", "/v1/boards/%F0%9F%98%80/current/national/top", ""},
		{"unicode period", "GET", "/v1/boards/learning/2026-W%EF%BC%91%EF%BC%90/national/top", ""},
		{"invalid utf8 member", "GET", b + "/members/%FF%FE", ""},
		{"huge period year", "GET", "/v1/boards/learning/99999999999999999999-W01/national/top", ""},
		{"period year 0", "GET", "/v1/boards/learning/0000-W01/national/top", ""},
		{"period far future", "GET", "/v1/boards/learning/9999-W52/national/top", ""},
		{"period at extremes", "GET", "/v1/families/learning/period?at=9999-12-31T23:59:59Z", ""},
		{"period at year 0", "GET", "/v1/families/learning/period?at=0000-01-01T00:00:00Z", ""},
		{"course period at extremes", "GET", "/v1/families/course/period?at=9999-12-31T12:00:00Z", ""},
		{"event at year 0", "POST", "/v1/events", `{"event_id":"h-y0","family":"learning","user":"u","delta":1,"at":"0000-01-01T00:00:00Z"}`},
		{"event at zero time", "POST", "/v1/events", `{"event_id":"h-z","family":"learning","user":"u","delta":1,"at":"0001-01-01T00:00:00Z"}`},
		{"event at year 9999", "POST", "/v1/events", `{"event_id":"h-y9","family":"learning","user":"u","delta":1,"at":"9999-12-31T23:59:59Z"}`},
		{"snapshot huge depth", "POST", b + "/snapshots", `{"depth":9223372036854775807}`},
		{"snapshot negative ttl", "POST", b + "/snapshots", `{"ttl_seconds":-9223372036854775808}`},
		{"snapshot null body", "POST", b + "/snapshots", `null`},
		{"snapshot array body", "POST", b + "/snapshots", `[]`},
		{"snapshot id overflow", "GET", b + "/entries?snapshot=99999999999999999999x1x0123456789abcdef", ""},
		{"snapshot id huge time", "GET", b + "/entries?snapshot=5xffffffffffffffffx0123456789abcdef", ""},
		{"snapshot id negative time", "GET", b + "/entries?snapshot=5x-1x0123456789abcdef", ""},
		{"snapshot id offset past depth", "GET", b + "/entries?snapshot=5x1x0123456789abcdef&offset=10000&limit=1000", ""},
		{"snapshot with braces", "GET", b + "/entries?snapshot={}x{}x{}", ""},
		{"board list garbage period", "GET", "/v1/boards/learning/%00", ""},
		{"board list unicode family", "GET", "/v1/boards/%E2%9C%93/current", ""},
		{"layout garbage", "GET", "/v1/layout?family=%00&period=%FF", ""},
		{"layout duplicate period", "GET", "/v1/layout?period=current&period=all", ""},
		{"period at zero time", "GET", "/v1/families/learning/period?at=0001-01-01T00:00:00Z", ""},
		{"period at huge offset", "GET", "/v1/families/learning/period?at=2026-01-01T00:00:00%2B23:59", ""},
		{"empty event body", "POST", "/v1/events", ""},
		{"whitespace event body", "POST", "/v1/events", " \n\t "},
		{"null event body", "POST", "/v1/events", "null"},
		{"array event body", "POST", "/v1/events", `[{"event_id":"a","family":"learning","user":"u","delta":1}]`},
		{"string event body", "POST", "/v1/events", `"event"`},
		{"nested unknown field", "POST", "/v1/events", `{"event_id":"a","family":"learning","user":"u","delta":1,"dims":{"province":{"x":{"y":1}}}}`},
		{"nested unknown in at", "POST", "/v1/events", `{"event_id":"a","family":"learning","user":"u","delta":1,"at":{"t":1}}`},
		{"delta overflow", "POST", "/v1/events", `{"event_id":"a","family":"learning","user":"u","delta":9223372036854775808}`},
		{"delta min int64", "POST", "/v1/events", `{"event_id":"a","family":"learning","user":"u","delta":-9223372036854775808}`},
		{"delta 1e400", "POST", "/v1/events", `{"event_id":"a","family":"learning","user":"u","delta":1e400}`},
		{"delta NaN", "POST", "/v1/events", `{"event_id":"a","family":"learning","user":"u","delta":NaN}`},
		{"game value min int64", "POST", "/v1/events", `{"event_id":"a","family":"game","user":"u","value":-9223372036854775808}`},
		{"game value 2^53", "POST", "/v1/events", `{"event_id":"a","family":"game","user":"u","value":9007199254740992}`},
		{"game value -(2^53-1)", "POST", "/v1/events", `{"event_id":"h-3","family":"game","user":"h2","value":-9007199254740991}`},
		{"delta max points then more", "POST", "/v1/events:batch", `{"events":[{"event_id":"h-4","family":"learning","user":"h3","delta":8388607},{"event_id":"h-5","family":"learning","user":"h3","delta":8388607}]}`},
		{"unicode event id", "POST", "/v1/events", `{"event_id":"évt","family":"learning","user":"u","delta":1}`},
		{"invalid utf8 body", "POST", "/v1/events", "{\"event_id\":\"a\xff\",\"family\":\"learning\",\"user\":\"u\",\"delta\":1}"},
		{"utf8 bom", "POST", "/v1/events", "\xef\xbb\xbf{}"},
		{"deeply nested", "POST", "/v1/events", deep},
		{"duplicate json keys", "POST", "/v1/events", `{"event_id":"h-6","event_id":"h-7","family":"learning","user":"u","delta":1,"delta":2}`},
		{"dims national", "POST", "/v1/events", `{"event_id":"a","family":"learning","user":"u","delta":1,"dims":{"national":"x"}}`},
		{"dims empty value", "POST", "/v1/events", `{"event_id":"a","family":"learning","user":"u","delta":1,"dims":{"province":""}}`},
		{"dims array", "POST", "/v1/events", `{"event_id":"a","family":"learning","user":"u","delta":1,"dims":["province"]}`},
		{"long reason", "POST", "/v1/events", `{"event_id":"a","family":"learning","user":"u","delta":1,"reason":"` + strings.Repeat("r", 5000) + `"}`},
		{"reversal of unknown in course", "POST", "/v1/events", `{"event_id":"a","family":"course","user":"u","reverses":"b"}`},
		{"batch events object", "POST", "/v1/events:batch", `{"events":{}}`},
		{"batch null items", "POST", "/v1/events:batch", `{"events":[null,null]}`},
		{"batch mixed types", "POST", "/v1/events:batch", `{"events":[1,"x",true]}`},
		{"batch array body", "POST", "/v1/events:batch", `[]`},
		{"batch empty body", "POST", "/v1/events:batch", ``},
		{"projection null body", "PUT", "/v1/boards/course/current/national/members/x", `null`},
		{"projection huge version", "PUT", "/v1/boards/course/current/national/members/x", `{"version":9223372036854775807,"points":1}`},
		{"projection huge points", "PUT", "/v1/boards/course/current/national/members/x", `{"version":1,"points":9223372036854775807}`},
		{"projection min points", "PUT", "/v1/boards/course/current/national/members/x", `{"version":2,"points":-9223372036854775808}`},
		{"projection array body", "PUT", "/v1/boards/course/current/national/members/x", `[1,2]`},
		{"projection on W53", "PUT", "/v1/boards/course/2026-W53/national/members/x", `{"version":1,"points":1}`},
		{"projection on past week", "PUT", "/v1/boards/course/2020-W01/national/members/x", `{"version":1,"points":1}`},
		{"profile null body", "PUT", "/v1/profiles/h9", `null`},
		{"profile empty object", "PUT", "/v1/profiles/h9", `{}`},
		{"profile long name", "PUT", "/v1/profiles/h9", `{"name":"` + strings.Repeat("n", 200) + `"}`},
		{"profile nested", "PUT", "/v1/profiles/h9", `{"name":{"first":"a"}}`},
		{"lookup null users", "POST", b + "/members:lookup", `{"users":null}`},
		{"lookup nested", "POST", b + "/members:lookup", `{"users":[["a"]]}`},
		{"lookup empty body", "POST", b + "/members:lookup", ``},
		{"lookup braces", "POST", b + "/members:lookup", `{"users":["{}","{h1}"]}`},
		{"wrong method on lookup", "GET", b + "/members:lookup", ""},
		{"wrong method on board", "PATCH", b + "/top", ""},
		{"odd method", "BREW", "/v1/events", ""},
		{"trailing slash", "GET", b + "/top/", ""},
		{"path too deep", "GET", b + "/members/h1/around/x/y/z", ""},
		{"very long path", "GET", "/v1/boards/" + strings.Repeat("a", 8000) + "/current/national/top", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var body any
			if c.body != "" || c.method == "POST" || c.method == "PUT" {
				body = c.body
			}
			r := g.do(t, c.method, c.path, body)
			if r.status >= 500 {
				t.Fatalf("%s %s: %s — a 5xx must never answer bad input", c.method, c.path, r)
			}
			t.Logf("%s → %d", c.name, r.status)
			// Answers from the gateway (not net/http's own 400 for an
			// unparsable request line) are in the one error shape.
			if r.status >= 400 && r.header.Get("Content-Type") == "application/json" {
				checkErrShape(t, c.name, r)
			}
			if r.status >= 300 && r.status < 400 {
				t.Logf("%s %s: %d (redirect to %s)", c.method, c.path, r.status, r.header.Get("Location"))
			}
		})
	}

	// Raw requests net/http's client will not send.
	for _, raw := range []string{
		"GET /v1/boards/learning/current/national/members/a b HTTP/1.1\r\nHost: x\r\n\r\n",
		"GET /v1/boards/learning/current/national/top?limit=\x01 HTTP/1.1\r\nHost: x\r\n\r\n",
		"POST /v1/events HTTP/1.1\r\nHost: x\r\nContent-Length: -1\r\n\r\n",
		"POST /v1/events HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\nContent-Length: 11\r\n\r\n{}",
		"POST /v1/events HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
		"POST /v1/events HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\nConnection: close\r\n\r\n{\"event_id\":",
	} {
		status := rawStatus(t, g.addr, raw)
		if status >= 500 {
			t.Errorf("raw %q: status %d", raw, status)
		}
	}

	// The gateway is still healthy after all that.
	g.ok(t, "GET", "/readyz", nil, nil)
}

// rawStatus writes a raw request and returns the answer's status (0 when
// the server closed without answering, which is not a 5xx).
func rawStatus(t *testing.T, addr, raw string) int {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := io.WriteString(c, raw); err != nil {
		t.Fatal(err)
	}
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.CloseWrite() // a truncated body ends here
	}
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return 0
	}
	res.Body.Close()
	return res.StatusCode
}

// ---------------------------------------------------------------- shutdown

// TestE2EGracefulShutdown cancels the run context while a 1000-event batch
// is in flight: the batch completes with 200 and run returns nil.
//
// The request is made provably in flight without sleeps: its headers and the
// first half of its body are sent, the in-flight gauge shows it being served,
// the context is cancelled, and only once the listener is closed (shutdown
// has begun) is the rest of the body sent.
func TestE2EGracefulShutdown(t *testing.T) {
	g := startGateway(t, true)
	evs := make([]any, 1000)
	for i := range evs {
		evs[i] = map[string]any{"event_id": fmt.Sprintf("gs-%d", i), "family": "learning", "user": fmt.Sprintf("s%03d", i%300),
			"delta": i + 1, "dims": map[string]string{"province": fmt.Sprintf("p%d", i%7), "class": fmt.Sprintf("c%d", i%13)}}
	}
	body, err := json.Marshal(map[string]any{"events": evs})
	if err != nil {
		t.Fatal(err)
	}
	conn, err := net.DialTimeout("tcp", g.addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(25 * time.Second))
	half := len(body) / 2
	if _, err := fmt.Fprintf(conn, "POST /v1/events:batch HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n", g.addr, len(body)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Write(body[:half]); err != nil {
		t.Fatal(err)
	}

	// Wait (bounded) until the batch is being served: in flight with this probe.
	probe := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	if err := soon.Within(15*time.Second, func() error {
		if n := inflight(t, probe, g.base); n < 2 {
			return fmt.Errorf("%v requests in flight, want 2", n)
		}
		return nil
	}); err != nil {
		t.Fatalf("the batch never showed as in flight: %v\nlogs:\n%s", err, tailLines(g.logs.String(), 40))
	}

	g.cancel()
	// Wait (bounded) until shutdown has closed the listener.
	soon.Eventually(t, 15*time.Second, func() error {
		c, err := net.DialTimeout("tcp", g.addr, time.Second)
		if err != nil {
			return nil
		}
		c.Close()
		return errors.New("listener still open after cancel")
	})
	select {
	case err := <-g.done:
		t.Fatalf("run returned (%v) while a request was in flight", err)
	default:
	}

	if _, err := conn.Write(body[half:]); err != nil {
		t.Fatalf("finishing the in-flight request after shutdown began: %v", err)
	}
	res, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("in-flight request got no answer during shutdown: %v", err)
	}
	data, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 {
		t.Fatalf("in-flight batch: %d %s, want 200", res.StatusCode, data)
	}
	var out struct {
		Results []eventRes `json:"results"`
	}
	if err := json.Unmarshal(data, &out); err != nil || len(out.Results) != 1000 {
		t.Fatalf("in-flight batch: %d results (%v)", len(out.Results), err)
	}
	for i, r := range out.Results {
		if r.EventID != fmt.Sprintf("gs-%d", i) || r.Duplicate || len(r.Boards) != 3 {
			t.Errorf("result %d: %+v", i, r)
			break
		}
	}

	select {
	case err := <-g.done:
		if err != nil {
			t.Errorf("run returned %v, want nil", err)
		}
	case <-time.After(25 * time.Second):
		t.Fatalf("run did not return after the in-flight request completed")
	}
	if logs := g.logs.String(); !strings.Contains(logs, "shutting down") || !strings.Contains(logs, "stopped") {
		t.Errorf("logs lack the shutdown lines:\n%s", tailLines(logs, 20))
	}
	if _, err := probe.Get(g.base + "/healthz"); err == nil {
		t.Errorf("the gateway still answers after run returned")
	}
}

// inflight reads rankgate_http_inflight_requests from /metrics (the probe
// itself counts as one).
func inflight(t *testing.T, c *http.Client, base string) float64 {
	t.Helper()
	res, err := c.Get(base + "/metrics")
	if err != nil {
		t.Fatalf("metrics: %v", err)
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "rankgate_http_inflight_requests "); ok {
			f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
			if err != nil {
				t.Fatalf("inflight gauge %q: %v", v, err)
			}
			return f
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	t.Fatal(errors.New("rankgate_http_inflight_requests not in /metrics"))
	return 0
}

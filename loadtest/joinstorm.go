package main

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/rankgate/rankgate/client"
)

// The join-storm scenario (-join-storm N): the start of a tournament, when
// N players join at once. Each storm creates a fresh tournament (max size
// -join-max-size, joins required), opens N connections, then releases N
// concurrent POST /v1/tournaments/{id}/join together and records each
// answer's latency. Two yardsticks, measured in the same run before each
// storm, each after a round that opens its connections: N concurrent
// GET /healthz over the storm's own connections — what N concurrent HTTP
// round trips to this gateway cost at that moment, with no Redis behind
// them — and N concurrent GETs of a plain Go net/http handler that answers
// "ok" and does nothing else, served by this process on loopback: what N
// concurrent HTTP round trips cost on this machine at all. A storm fails the
// run unless exactly max size joins got in and every other one was answered
// tournament_full.

// joinStormFlags are the flags of the join-storm scenario.
type joinStormFlags struct {
	n       int
	storms  int
	maxSize int
}

func bindJoinStormFlags(fs interface {
	IntVar(*int, string, int, string)
}, j *joinStormFlags) {
	fs.IntVar(&j.n, "join-storm", 0, "join-storm scenario: concurrent joins per storm, e.g. 1000 (each storm on a fresh tournament)")
	fs.IntVar(&j.storms, "join-storms", 5, "join-storm scenario: storms to run")
	fs.IntVar(&j.maxSize, "join-max-size", 100, "join-storm scenario: the tournaments' max_size")
}

// stormResult is one storm and its yardstick.
type stormResult struct {
	Tournament string  `json:"tournament"`
	Joined     int     `json:"joined"`
	Full       int     `json:"full"`
	JoinP50    float64 `json:"join_p50_ms"`
	JoinP99    float64 `json:"join_p99_ms"`
	JoinMax    float64 `json:"join_max_ms"`
	PlainP50   float64 `json:"healthz_p50_ms"`
	PlainP99   float64 `json:"healthz_p99_ms"`
	BareP50    float64 `json:"plain_handler_p50_ms"`
	BareP99    float64 `json:"plain_handler_p99_ms"`
}

// joinStormReport is what the scenario writes to its results directory.
type joinStormReport struct {
	Tool    string        `json:"tool"`
	Command string        `json:"command"`
	Host    Host          `json:"host"`
	Gateway string        `json:"gateway"`
	N       int           `json:"n"`
	MaxSize int           `json:"max_size"`
	Started time.Time     `json:"started"`
	Storms  []stormResult `json:"storms"`
}

func runJoinStorm(ctx context.Context, base, clientKind string, timeout time.Duration, j joinStormFlags, dir string, stdout, stderr io.Writer) error {
	switch {
	case j.n < 1 || j.n > 100_000:
		return fmt.Errorf("-join-storm must be within 1..100000, got %d", j.n)
	case j.storms < 1 || j.storms > 1000:
		return fmt.Errorf("-join-storms must be within 1..1000, got %d", j.storms)
	case j.maxSize < 1 || j.maxSize > j.n:
		return fmt.Errorf("-join-max-size must be within 1..-join-storm (%d), got %d", j.n, j.maxSize)
	}
	if from, to, err := raiseNoFile(); err != nil || to < uint64(j.n)+64 {
		fmt.Fprintf(stderr, "RLIMIT_NOFILE %d→%d (%v): %d connections may not open\n", from, to, err, j.n)
	}
	if err := gatewayReady(ctx, base); err != nil {
		return err
	}
	hc := newHTTPClient(j.n, timeout)
	opts := []client.Option{client.WithHTTPClient(hc), client.WithRetry(client.Retry{Attempts: 1})}
	tok := os.Getenv("RANKGATE_TOKEN")
	if tok != "" {
		opts = append(opts, client.WithToken(tok))
	}
	c, err := client.New(base, opts...)
	if err != nil {
		return err
	}
	bare, stop, err := startPlainHandler()
	if err != nil {
		return err
	}
	defer stop()
	var y stormClient = &transportStorm{stormAdmin: stormAdmin{c}, hc: hc, base: base, bareURL: bare, bareHC: newHTTPClient(j.n, timeout)}
	switch clientKind {
	case "", ClientTransport:
	case ClientConn:
		cs, err := newConnStorm(c, base, bare, tok, j.n)
		if err != nil {
			return err
		}
		defer cs.close()
		y = cs
	default:
		return fmt.Errorf("-client must be %s or %s, got %q", ClientTransport, ClientConn, clientKind)
	}
	rep := joinStormReport{Tool: "rankgate-loadtest", Command: "loadtest " + strings.Join(os.Args[1:], " "),
		Host: thisHost(), Gateway: base, N: j.n, MaxSize: j.maxSize, Started: time.Now().UTC()}
	run := "js" + fmt.Sprint(time.Now().UnixMilli()%1e9)
	fmt.Fprintf(stdout, "join storms: %d concurrent joins, max_size %d, %d storms against %s (-client %s)\n", j.n, j.maxSize, j.storms, base, cmp.Or(clientKind, ClientTransport))
	fmt.Fprintf(stdout, "%-22s %7s %5s %9s %9s %11s %11s %11s %11s\n", "tournament", "joined", "full", "join p50", "join p99",
		"healthz p50", "healthz p99", "plain p50", "plain p99")
	for i := range j.storms {
		r, err := oneStorm(ctx, y, fmt.Sprintf("%s-%d", run, i), j)
		if err != nil {
			return err
		}
		rep.Storms = append(rep.Storms, r)
		fmt.Fprintf(stdout, "%-22s %7d %5d %7.1fms %7.1fms %9.1fms %9.1fms %9.1fms %9.1fms\n", r.Tournament, r.Joined, r.Full,
			r.JoinP50, r.JoinP99, r.PlainP50, r.PlainP99, r.BareP50, r.BareP99)
		fmt.Fprintf(stderr, "storm %d/%d done\n", i+1, j.storms)
	}
	var jp, pp, bp []float64
	for _, r := range rep.Storms {
		jp, pp, bp = append(jp, r.JoinP99), append(pp, r.PlainP99), append(bp, r.BareP99)
	}
	for _, s := range [][]float64{jp, pp, bp} {
		slices.Sort(s)
	}
	mid := len(jp) / 2
	fmt.Fprintf(stdout, "median over storms (p99): join %.1f ms, healthz %.1f ms, plain handler %.1f ms; join ÷ healthz %.2f×, join ÷ plain handler %.2f×\n",
		jp[mid], pp[mid], bp[mid], jp[mid]/max(pp[mid], 0.001), jp[mid]/max(bp[mid], 0.001))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, _ := json.MarshalIndent(rep, "", "  ")
	path := filepath.Join(dir, "joinstorm.json")
	if err := os.WriteFile(path, append(b, '\n'), 0o644); err != nil {
		return err
	}
	fmt.Fprintf(stdout, "results: %s\n", path)
	return nil
}

// stormClient sends a storm's requests: the two yardsticks' n concurrent
// GETs (the gateway's /healthz over the storm's connections, and a plain
// handler on its own), and the joins.
type stormClient interface {
	// healthz and bare send n concurrent GETs, released together, and
	// return their latencies.
	healthz(ctx context.Context, n int) ([]time.Duration, error)
	bare(ctx context.Context, n int) ([]time.Duration, error)
	// joins sends the n joins of tournament id, released together, and
	// returns their latencies and outcomes.
	joins(ctx context.Context, id string, n int) ([]time.Duration, []joinOutcome, error)
	create(ctx context.Context, t client.Tournament) error
	cancel(ctx context.Context, id string)
}

// joinOutcome is one join's answer: in, or refused with code.
type joinOutcome struct {
	joined bool
	code   string
}

// stormAdmin creates and cancels a storm's tournaments through the Go
// client, whichever client sends the storm.
type stormAdmin struct{ c *client.Client }

func (a stormAdmin) create(ctx context.Context, t client.Tournament) error {
	_, err := a.c.CreateTournament(ctx, t)
	return err
}

func (a stormAdmin) cancel(ctx context.Context, id string) { _, _ = a.c.CancelTournament(ctx, id) }

// transportStorm is the storm through net/http's Transport and the Go
// client (-client transport).
type transportStorm struct {
	stormAdmin
	hc, bareHC    *http.Client
	base, bareURL string
}

func (y *transportStorm) healthz(ctx context.Context, n int) ([]time.Duration, error) {
	return getAll(ctx, y.hc, y.base+"/healthz", n)
}

func (y *transportStorm) bare(ctx context.Context, n int) ([]time.Duration, error) {
	return getAll(ctx, y.bareHC, y.bareURL+"/", n)
}

func (y *transportStorm) joins(ctx context.Context, id string, n int) ([]time.Duration, []joinOutcome, error) {
	out := make([]joinOutcome, n)
	ds, err := together(n, func(i int) error {
		res, err := y.c.Join(ctx, id, fmt.Sprintf("p%d", i))
		var apiErr *client.Error
		switch {
		case err == nil:
			out[i].joined = res.Joined
			if !res.Joined {
				out[i].code = "already in"
			}
		case errors.As(err, &apiErr) && apiErr.Code != "":
			out[i].code = apiErr.Code
		default:
			return fmt.Errorf("join of p%d: %w", i, err)
		}
		return nil
	})
	return ds, out, err
}

// startPlainHandler serves a plain Go net/http handler on a loopback port
// of this process: 200 "ok", nothing else.
func startPlainHandler() (string, func(), error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", nil, err
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		_, _ = io.WriteString(w, "ok")
	}), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = srv.Serve(ln) }()
	return "http://" + ln.Addr().String(), func() { _ = srv.Close() }, nil
}

// getAll sends n concurrent GETs of url through hc (released together) and
// returns their latencies.
func getAll(ctx context.Context, hc *http.Client, url string, n int) ([]time.Duration, error) {
	return together(n, func(int) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
		if err != nil {
			return err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("GET %s: %d", url, resp.StatusCode)
		}
		return nil
	})
}

// oneStorm runs the yardsticks and one storm on a fresh tournament.
func oneStorm(ctx context.Context, y stormClient, id string, j joinStormFlags) (stormResult, error) {
	size := int64(j.maxSize)
	start, end := time.Now().Add(-time.Second), time.Now().Add(time.Hour)
	if err := y.create(ctx, client.Tournament{ID: id, Start: &start, End: &end, MaxSize: &size, JoinRequired: true}); err != nil {
		return stormResult{}, fmt.Errorf("creating tournament %s: %w", id, err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		y.cancel(cctx, id)
	}()
	// Each yardstick's first round opens (or checks) the N connections; the
	// second is measured. The healthz connections are the storm's own.
	var plain, bare []time.Duration
	for _, yd := range []struct {
		get func(context.Context, int) ([]time.Duration, error)
		out *[]time.Duration
	}{{y.bare, &bare}, {y.healthz, &plain}} {
		for range 2 {
			var err error
			if *yd.out, err = yd.get(ctx, j.n); err != nil {
				return stormResult{}, err
			}
		}
	}
	r := stormResult{Tournament: id}
	joins, outs, err := y.joins(ctx, id, j.n)
	if err != nil {
		return stormResult{}, err
	}
	for i, o := range outs {
		switch {
		case o.joined:
			r.Joined++
		case o.code == "tournament_full":
			r.Full++
		default:
			return stormResult{}, fmt.Errorf("join of p%d: %s", i, o.code)
		}
	}
	if r.Joined != j.maxSize || r.Full != j.n-j.maxSize {
		return r, fmt.Errorf("storm on %s: %d joined and %d full, want exactly %d and %d", id, r.Joined, r.Full, j.maxSize, j.n-j.maxSize)
	}
	r.JoinP50, r.JoinP99, r.JoinMax = ms(Percentile(joins, 0.5)), ms(Percentile(joins, 0.99)), ms(Percentile(joins, 1))
	r.PlainP50, r.PlainP99 = ms(Percentile(plain, 0.5)), ms(Percentile(plain, 0.99))
	r.BareP50, r.BareP99 = ms(Percentile(bare, 0.5)), ms(Percentile(bare, 0.99))
	return r, nil
}

// together runs call(0..n-1) in n goroutines released at once and returns
// each call's latency (sorted); the first error wins.
func together(n int, call func(i int) error) ([]time.Duration, error) {
	start := make(chan struct{})
	ds := make([]time.Duration, n)
	errs := make([]error, n)
	var ready, wg sync.WaitGroup
	ready.Add(n)
	for i := range n {
		wg.Go(func() {
			ready.Done()
			<-start
			t0 := time.Now()
			errs[i] = call(i)
			ds[i] = time.Since(t0)
		})
	}
	ready.Wait()
	close(start)
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			return nil, err
		}
	}
	slices.Sort(ds)
	return ds, nil
}

// connStorm is the storm over connections the load tool writes and reads
// itself (-client conn): n kept-alive connections to the gateway (the
// joins' and the healthz yardstick's) and n to the plain handler, each
// request rendered before the storm is released, each answer read into a
// buffer its connection reuses. Administration (create, cancel) goes
// through the Go client.
type connStorm struct {
	stormAdmin
	host          string
	token         string
	gw, bareConns []*connWorker
}

func newConnStorm(c *client.Client, base, bare, token string, n int) (*connStorm, error) {
	gw, err := newConnExec(&httpAPI{base: base})
	if err != nil {
		return nil, err
	}
	bh, err := newConnExec(&httpAPI{base: bare})
	if err != nil {
		return nil, err
	}
	cs := &connStorm{stormAdmin: stormAdmin{c}, host: gw.addr, token: token, gw: make([]*connWorker, n), bareConns: make([]*connWorker, n)}
	for i := range n {
		cs.gw[i] = &connWorker{e: gw}
		cs.bareConns[i] = &connWorker{e: bh}
	}
	return cs, nil
}

func (cs *connStorm) close() {
	for i := range cs.gw {
		cs.gw[i].Close()
		cs.bareConns[i].Close()
	}
}

// getAllConn sends one GET of path on each of ws, released together.
func getAllConn(ctx context.Context, ws []*connWorker, host, path string) ([]time.Duration, error) {
	req := []byte("GET " + path + " HTTP/1.1\r\nHost: " + host + "\r\n\r\n")
	return together(len(ws), func(i int) error {
		code, _, err := ws[i].roundTrip(ctx, req)
		if err != nil {
			return err
		}
		if code != http.StatusOK {
			return fmt.Errorf("GET %s: %d", path, code)
		}
		return nil
	})
}

func (cs *connStorm) healthz(ctx context.Context, n int) ([]time.Duration, error) {
	return getAllConn(ctx, cs.gw[:n], cs.host, "/healthz")
}

func (cs *connStorm) bare(ctx context.Context, n int) ([]time.Duration, error) {
	return getAllConn(ctx, cs.bareConns[:n], cs.bareConns[0].e.addr, "/")
}

func (cs *connStorm) joins(ctx context.Context, id string, n int) ([]time.Duration, []joinOutcome, error) {
	reqs := make([][]byte, n)
	path := "/v1/tournaments/" + url.PathEscape(id) + "/join"
	for i := range reqs {
		body := `{"user":"p` + strconv.Itoa(i) + `"}`
		r := "POST " + path + " HTTP/1.1\r\nHost: " + cs.host + "\r\nContent-Type: application/json\r\nAccept: application/json\r\n"
		if cs.token != "" {
			r += "Authorization: Bearer " + cs.token + "\r\n"
		}
		reqs[i] = []byte(r + "Content-Length: " + strconv.Itoa(len(body)) + "\r\n\r\n" + body)
	}
	out := make([]joinOutcome, n)
	ds, err := together(n, func(i int) error {
		code, body, err := cs.gw[i].roundTrip(ctx, reqs[i])
		if err != nil {
			return fmt.Errorf("join of p%d: %w", i, err)
		}
		out[i], err = joinAnswer(code, body)
		if err != nil {
			return fmt.Errorf("join of p%d: %w", i, err)
		}
		return nil
	})
	return ds, out, err
}

// joinAnswer reads a join's answer: 200 with a JoinResult, or an error
// envelope with its code.
func joinAnswer(code int, body []byte) (joinOutcome, error) {
	if code == http.StatusOK {
		var res client.JoinResult
		if err := json.Unmarshal(body, &res); err != nil {
			return joinOutcome{}, fmt.Errorf("200 with %q: %w", body, err)
		}
		if !res.Joined {
			return joinOutcome{code: "already in"}, nil
		}
		return joinOutcome{joined: true}, nil
	}
	var env struct {
		Error struct {
			Code string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &env); err != nil || env.Error.Code == "" {
		return joinOutcome{}, fmt.Errorf("HTTP %d: %.200q", code, body)
	}
	return joinOutcome{code: env.Error.Code}, nil
}

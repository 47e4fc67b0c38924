package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/rankgate/rankgate/client"
)

// The join-storm scenario (-join-storm N): the start of a tournament, when
// N players join at once. Each storm creates a fresh tournament (max size
// -join-max-size, joins required), opens N connections, then releases N
// concurrent POST /v1/tournaments/{id}/join together and records each
// answer's latency. The yardstick, measured in the same run over the same
// open connections before each storm: N concurrent GET /healthz — what N
// concurrent HTTP round trips to this gateway cost on this machine at that
// moment, with no Redis behind them. A storm fails the run unless exactly
// max size joins got in and every other one was answered tournament_full.

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

func runJoinStorm(ctx context.Context, base string, timeout time.Duration, j joinStormFlags, dir string, stdout, stderr io.Writer) error {
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
	if tok := os.Getenv("RANKGATE_TOKEN"); tok != "" {
		opts = append(opts, client.WithToken(tok))
	}
	c, err := client.New(base, opts...)
	if err != nil {
		return err
	}
	rep := joinStormReport{Tool: "rankgate-loadtest", Command: "loadtest " + strings.Join(os.Args[1:], " "),
		Host: thisHost(), Gateway: base, N: j.n, MaxSize: j.maxSize, Started: time.Now().UTC()}
	run := "js" + fmt.Sprint(time.Now().UnixMilli()%1e9)
	fmt.Fprintf(stdout, "join storms: %d concurrent joins, max_size %d, %d storms against %s\n", j.n, j.maxSize, j.storms, base)
	fmt.Fprintf(stdout, "%-22s %7s %5s %9s %9s %11s %11s %8s\n", "tournament", "joined", "full", "join p50", "join p99", "healthz p50", "healthz p99", "p99 ÷")
	for i := range j.storms {
		r, err := oneStorm(ctx, c, hc, base, fmt.Sprintf("%s-%d", run, i), j)
		if err != nil {
			return err
		}
		rep.Storms = append(rep.Storms, r)
		fmt.Fprintf(stdout, "%-22s %7d %5d %7.1fms %7.1fms %9.1fms %9.1fms %7.2f×\n", r.Tournament, r.Joined, r.Full,
			r.JoinP50, r.JoinP99, r.PlainP50, r.PlainP99, r.JoinP99/max(r.PlainP99, 0.001))
		fmt.Fprintf(stderr, "storm %d/%d done\n", i+1, j.storms)
	}
	var jp, pp []float64
	for _, r := range rep.Storms {
		jp, pp = append(jp, r.JoinP99), append(pp, r.PlainP99)
	}
	slices.Sort(jp)
	slices.Sort(pp)
	fmt.Fprintf(stdout, "median over storms: join p99 %.1f ms, healthz p99 %.1f ms, join ÷ healthz (p99) %.2f×\n",
		jp[len(jp)/2], pp[len(pp)/2], jp[len(jp)/2]/max(pp[len(pp)/2], 0.001))
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

// oneStorm runs the yardstick and one storm on a fresh tournament.
func oneStorm(ctx context.Context, c *client.Client, hc *http.Client, base, id string, j joinStormFlags) (stormResult, error) {
	size := int64(j.maxSize)
	start, end := time.Now().Add(-time.Second), time.Now().Add(time.Hour)
	if _, err := c.CreateTournament(ctx, client.Tournament{ID: id, Start: &start, End: &end, MaxSize: &size, JoinRequired: true}); err != nil {
		return stormResult{}, fmt.Errorf("creating tournament %s: %w", id, err)
	}
	defer func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
		defer cancel()
		_, _ = c.CancelTournament(cctx, id)
	}()
	// The yardstick also opens the N connections the storm reuses.
	plain, err := together(j.n, func(int) error {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/healthz", nil)
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
			return fmt.Errorf("GET /healthz: %d", resp.StatusCode)
		}
		return nil
	})
	if err != nil {
		return stormResult{}, err
	}
	var mu sync.Mutex
	r := stormResult{Tournament: id}
	joins, err := together(j.n, func(i int) error {
		res, err := c.Join(ctx, id, fmt.Sprintf("p%d", i))
		var apiErr *client.Error
		switch {
		case err == nil && res.Joined:
			mu.Lock()
			r.Joined++
			mu.Unlock()
		case errors.As(err, &apiErr) && apiErr.Code == "tournament_full":
			mu.Lock()
			r.Full++
			mu.Unlock()
		case err == nil:
			return fmt.Errorf("join of p%d: already in", i)
		default:
			return fmt.Errorf("join of p%d: %w", i, err)
		}
		return nil
	})
	if err != nil {
		return stormResult{}, err
	}
	if r.Joined != j.maxSize || r.Full != j.n-j.maxSize {
		return r, fmt.Errorf("storm on %s: %d joined and %d full, want exactly %d and %d", id, r.Joined, r.Full, j.maxSize, j.n-j.maxSize)
	}
	r.JoinP50, r.JoinP99, r.JoinMax = ms(Percentile(joins, 0.5)), ms(Percentile(joins, 0.99)), ms(Percentile(joins, 1))
	r.PlainP50, r.PlainP99 = ms(Percentile(plain, 0.5)), ms(Percentile(plain, 0.99))
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

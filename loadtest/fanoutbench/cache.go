package main

import (
	"bufio"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
)

// cacheRun measures the cache level across several gateways: workers spread
// over the gateways read the same hot Top-N at the default consistency
// (cached); the gateways' own metrics count the fan-outs that cost.
type cacheRun struct {
	name     string
	gateways []string
}

// fanoutCount sums rankgate_fanout_width_count{op="top"} over gateways.
func fanoutCount(ctx context.Context, hc *http.Client, gateways []string) (float64, error) {
	var sum float64
	for _, g := range gateways {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, g+"/metrics", nil)
		if err != nil {
			return 0, err
		}
		res, err := hc.Do(req)
		if err != nil {
			return 0, err
		}
		sc := bufio.NewScanner(res.Body)
		sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
		for sc.Scan() {
			line := sc.Text()
			if rest, ok := strings.CutPrefix(line, `rankgate_fanout_width_count{op="top"} `); ok {
				v, err := strconv.ParseFloat(strings.TrimSpace(rest), 64)
				if err != nil {
					res.Body.Close()
					return 0, err
				}
				sum += v
			}
		}
		res.Body.Close()
		if err := sc.Err(); err != nil {
			return 0, err
		}
	}
	return sum, nil
}

// measureCache runs the hot read on every gateway of r for d and returns
// reads/s and fan-outs/s over all of them.
func measureCache(ctx context.Context, hc *http.Client, r cacheRun, fam string, limit, workers int, d time.Duration) (reads, fanouts float64, err error) {
	before, err := fanoutCount(ctx, hc, r.gateways)
	if err != nil {
		return 0, 0, err
	}
	var next atomic.Uint64
	do := func(ctx context.Context, _ *rand.Rand) error {
		g := r.gateways[next.Add(1)%uint64(len(r.gateways))]
		return get(ctx, hc, fmt.Sprintf("%s/v1/boards/%s/all/national/top?limit=%d", g, fam, limit))
	}
	n, took, errs := closedLoop(ctx, do, workers, d)
	elapsed := took.Seconds()
	rate := float64(n) / elapsed
	if errs > 0 {
		return 0, 0, fmt.Errorf("%s: %d errors", r.name, errs)
	}
	after, err := fanoutCount(ctx, hc, r.gateways)
	if err != nil {
		return 0, 0, err
	}
	return rate, (after - before) / elapsed, nil
}

package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rankgate/rankgate/internal/store"
)

// cpuSample is the CPU seconds spent so far by this process (the load
// generator, and the read plan and naive fan-outs that run in it), by the
// gateway a measurement talks to (its process_cpu_seconds_total) and by the
// cluster's masters (INFO cpu, user + sys).
type cpuSample struct {
	client, gateway, redis float64
}

// cpuMeter samples CPU around every slice, so each measurement is charged
// the CPU of its own slices only.
type cpuMeter struct {
	rc redis.UniversalClient
	hc *http.Client
}

func (c cpuMeter) sample(ctx context.Context, gateway string) (cpuSample, error) {
	var s cpuSample
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return s, err
	}
	s.client = tv(ru.Utime) + tv(ru.Stime)
	var mu sync.Mutex
	err := store.ForEachMaster(ctx, c.rc, func(ctx context.Context, n *redis.Client) error {
		info, err := n.InfoMap(ctx, "cpu").Result()
		if err != nil {
			return err
		}
		u, err1 := strconv.ParseFloat(info["CPU"]["used_cpu_user"], 64)
		y, err2 := strconv.ParseFloat(info["CPU"]["used_cpu_sys"], 64)
		if err1 != nil || err2 != nil {
			return fmt.Errorf("INFO cpu of %s: %v %v", n.Options().Addr, err1, err2)
		}
		mu.Lock()
		s.redis += u + y
		mu.Unlock()
		return nil
	})
	if err != nil {
		return s, err
	}
	if gateway != "" {
		if s.gateway, err = c.processCPU(ctx, gateway); err != nil {
			return s, err
		}
	}
	return s, nil
}

// processCPU reads process_cpu_seconds_total from a gateway's /metrics.
func (c cpuMeter) processCPU(ctx context.Context, gateway string) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, gateway+"/metrics", nil)
	if err != nil {
		return 0, err
	}
	res, err := c.hc.Do(req)
	if err != nil {
		return 0, err
	}
	defer res.Body.Close()
	sc := bufio.NewScanner(res.Body)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "process_cpu_seconds_total "); ok {
			return strconv.ParseFloat(strings.TrimSpace(v), 64)
		}
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	return 0, fmt.Errorf("%s/metrics has no process_cpu_seconds_total", gateway)
}

func tv(t syscall.Timeval) float64 { return float64(t.Sec) + float64(t.Usec)/1e6 }

// cpuPer is a measurement's CPU per completed request, in µs.
type cpuPer = cpuSample

func (c cpuSample) total() float64 { return c.client + c.gateway + c.redis }

// printCPU prints the CPU per request of every measurement over all rounds,
// then for each goal num ÷ den ≥ g what Redis's own CPU leaves of it. On a
// machine the closed loop saturates, throughput goes as 1 ÷ CPU per request,
// so the goal holds when num's CPU per request is at most den's ÷ g. Redis
// alone caps the ratio at den ÷ (den + num's extra Redis CPU) — what num would
// reach if it cost the load generator and the gateway only what den does —
// and leaves num den ÷ g − den − its extra Redis CPU of extra client and
// gateway CPU ("room"), to set beside what it spends over den now.
func printCPU(ms []measurement, per map[string]cpuPer) {
	fmt.Println()
	fmt.Println("| CPU per request, µs (all rounds) | load generator + in-process reads | gateway | Redis masters | total |")
	fmt.Println("| --- | --- | --- | --- | --- |")
	for _, m := range ms {
		c, ok := per[m.name]
		if !ok {
			continue
		}
		gw := "—"
		if m.gateway != "" {
			gw = fmt.Sprintf("%.0f", c.gateway)
		}
		fmt.Printf("| %s | %.0f | %s | %.0f | %.0f |\n", m.name, c.client, gw, c.redis, c.total())
	}
	fmt.Println()
	fmt.Println("| goal | Redis µs per request | Redis alone caps it at | room for extra client + gateway µs | spent over the yardstick now |")
	fmt.Println("| --- | --- | --- | --- | --- |")
	for _, q := range goals {
		if q.goal == 0 {
			continue
		}
		n, okN := per[q.num]
		d, okD := per[q.den]
		if !okN || !okD || d.total() == 0 {
			continue
		}
		extra := n.redis - d.redis
		ceil := d.total() / (d.total() + extra)
		room := d.total()/q.goal - d.total() - extra
		spent := n.client + n.gateway - d.client - d.gateway
		fmt.Printf("| %s ≥ %.2f× | %.0f vs %.0f | %.2f× | %.0f | %.0f |\n", q.what, q.goal, n.redis, d.redis, ceil, room, spent)
	}
}

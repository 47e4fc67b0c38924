package main

// The writes of fanoutbench -index (index.go): events and batches, the
// closed loop that counts slow calls, the balancing writes.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Writes.

var runID = "ib" + strconv.FormatInt(time.Now().UnixNano(), 36)

var eventSeq atomic.Int64

// appendEvent appends one event (a random member, delta 1..10) as JSON.
func appendEvent(b []byte, fam, user string, delta int) []byte {
	b = append(b, `{"event_id":"`...)
	b = append(b, runID...)
	b = append(b, '-')
	b = strconv.AppendInt(b, eventSeq.Add(1), 10)
	b = append(b, `","family":"`...)
	b = append(b, fam...)
	b = append(b, `","user":"`...)
	b = append(b, user...)
	b = append(b, `","delta":`...)
	b = strconv.AppendInt(b, int64(delta), 10)
	return append(b, '}')
}

type eventAnswer struct {
	Boards []struct {
		Points int64 `json:"points"`
	} `json:"boards"`
	Error *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

// post sends body and decodes the answer into v.
func post(ctx context.Context, hc *http.Client, url string, body []byte, v any) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	return call(hc, req, url, v)
}

// call sends req (to url) and decodes a 200 answer into v; any other status
// is an error naming the method, the URL and the start of the body.
func call(hc *http.Client, req *http.Request, url string, v any) error {
	res, err := hc.Do(req)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(res.Body, 512))
		return fmt.Errorf("%s %s: %d %s", req.Method, url, res.StatusCode, b)
	}
	return json.NewDecoder(res.Body).Decode(v)
}

// postEvent writes one event of user and returns the points it answered.
func postEvent(ctx context.Context, hc *http.Client, base, fam, user string, delta int) (int64, error) {
	var a eventAnswer
	if err := post(ctx, hc, base+"/v1/events", appendEvent(nil, fam, user, delta), &a); err != nil {
		return 0, err
	}
	if a.Error != nil || len(a.Boards) == 0 {
		return 0, fmt.Errorf("event: %+v", a)
	}
	return a.Boards[0].Points, nil
}

// postBatch writes a batch of n events of random members; points of the
// first event's member.
func postBatch(ctx context.Context, hc *http.Client, base, fam string, r *rand.Rand, members, n int, first string) (int64, error) {
	b := make([]byte, 0, 96*n+16)
	b = append(b, `{"events":[`...)
	for i := range n {
		if i > 0 {
			b = append(b, ',')
		}
		u := first
		if i > 0 || u == "" {
			u = member(r.IntN(members))
		}
		b = appendEvent(b, fam, u, 1+r.IntN(10))
	}
	b = append(b, "]}"...)
	var a struct {
		Results []eventAnswer `json:"results"`
	}
	if err := post(ctx, hc, base+"/v1/events:batch", b, &a); err != nil {
		return 0, err
	}
	if len(a.Results) != n {
		return 0, fmt.Errorf("batch: %d results for %d events", len(a.Results), n)
	}
	for _, res := range a.Results {
		if res.Error != nil || len(res.Boards) == 0 {
			return 0, fmt.Errorf("batch: %+v", res)
		}
	}
	return a.Results[0].Boards[0].Points, nil
}

// indexWrites: closed-loop events on the indexed family (feed on) and on
// the 16-shard family without an index (feed off).
func indexWrites(o options, hc *http.Client, base string) []measurement {
	x := o.ix
	single := func(fam string) op {
		return func(ctx context.Context, r *rand.Rand) error {
			_, err := postEvent(ctx, hc, base, fam, member(r.IntN(o.members)), 1+r.IntN(10))
			return err
		}
	}
	batch := func(fam string) op {
		return func(ctx context.Context, r *rand.Rand) error {
			_, err := postBatch(ctx, hc, base, fam, r, o.members, x.batch, "")
			return err
		}
	}
	bn := strconv.Itoa(x.batch)
	return []measurement{
		{"idx_event", "POST /v1/events on " + x.family + " (change feed on)", single(x.family), base},
		{"gw16_event", "POST /v1/events on " + o.fam16 + " (change feed off)", single(o.fam16), base},
		{"idx_batch", "POST /v1/events:batch of " + bn + " on " + x.family + " (feed on), batches/s", batch(x.family), base},
		{"gw16_batch", "POST /v1/events:batch of " + bn + " on " + o.fam16 + " (feed off), batches/s", batch(o.fam16), base},
	}
}

// sliceRound runs round r of ms: the measurements take turns in o.slices
// slices; rates, CPU and completed calls are added to the maps.
func sliceRound(ctx context.Context, o options, r int, ms []measurement, meter *cpuMeter, rates map[string][]float64, spent map[string]cpuSample, total map[string]int64) error {
	slice := o.duration / time.Duration(o.slices)
	done := make([]int64, len(ms))
	took := make([]time.Duration, len(ms))
	for range o.slices {
		for i, m := range ms {
			var before cpuSample
			var err error
			if meter != nil {
				if before, err = meter.sample(ctx, m.gateway); err != nil {
					return fmt.Errorf("CPU before %s: %w", m.name, err)
				}
			}
			workers := o.workers
			if strings.HasSuffix(m.name, "_page") {
				workers = o.ix.pageWorkers
			}
			n, d, errs, first := closedLoopAll(ctx, m.do, workers, slice)
			if errs > 0 {
				return fmt.Errorf("round %d %s: %d errors, the first: %w", r, m.name, errs, first)
			}
			if meter != nil {
				after, err := meter.sample(ctx, m.gateway)
				if err != nil {
					return fmt.Errorf("CPU after %s: %w", m.name, err)
				}
				s := spent[m.name]
				s.client += after.client - before.client
				s.gateway += after.gateway - before.gateway
				s.redis += after.redis - before.redis
				spent[m.name] = s
			}
			done[i] += n
			took[i] += d
		}
	}
	for i, m := range ms {
		total[m.name] += done[i]
		rate := float64(done[i]) / took[i].Seconds()
		rates[m.name] = append(rates[m.name], rate)
		fmt.Printf("round %d  %-12s %9.0f req/s\n", r, m.name, rate)
	}
	return nil
}

// closedLoopAll runs do on workers goroutines for d, then lets every call
// in flight finish and counts it: each worker's rate is its calls over the
// time to the end of its last one, and the rate of the whole is their sum
// (returned as calls and calls ÷ rate). A read that takes longer than a
// slice (a deep page on a fan-out) is counted, not dropped as closedLoop
// drops the call that straddles the end.
func closedLoopAll(ctx context.Context, do op, workers int, d time.Duration) (int64, time.Duration, int64, error) {
	var errs atomic.Int64
	var first atomic.Pointer[error]
	calls := make([]int64, workers)
	spans := make([]time.Duration, workers)
	var wg sync.WaitGroup
	start := time.Now()
	end := start.Add(d)
	for w := range workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), uint64(start.UnixNano())))
			for time.Now().Before(end) {
				if err := do(ctx, r); errors.Is(err, errTimedOut) {
					continue
				} else if err != nil {
					errs.Add(1)
					first.CompareAndSwap(nil, &err)
					continue
				}
				calls[w]++
			}
			spans[w] = time.Since(start)
		})
	}
	wg.Wait()
	var n int64
	var rate float64
	for w := range workers {
		n += calls[w]
		rate += float64(calls[w]) / spans[w].Seconds()
	}
	var err error
	if e := first.Load(); e != nil {
		err = *e
	}
	if rate == 0 {
		return 0, time.Since(start), errs.Load(), err
	}
	return n, time.Duration(float64(n) / rate * float64(time.Second)), errs.Load(), err
}

// balance writes n events to the feed-off family (-family16) in batches,
// 8 at a time: what the freshness loops wrote to the indexed family.
func balance(ctx context.Context, o options, hc *http.Client, base string, n int64) error {
	var left atomic.Int64
	left.Store(n)
	var wg sync.WaitGroup
	var failed atomic.Pointer[error]
	for w := range o.workers {
		wg.Go(func() {
			r := rand.New(rand.NewPCG(uint64(w), 11))
			for {
				k := min(left.Add(-int64(o.ix.batch))+int64(o.ix.batch), int64(o.ix.batch))
				if k <= 0 {
					return
				}
				if _, err := postBatch(ctx, hc, base, o.fam16, r, o.members, int(k), ""); err != nil {
					failed.CompareAndSwap(nil, &err)
					return
				}
			}
		})
	}
	wg.Wait()
	if e := failed.Load(); e != nil {
		return fmt.Errorf("balancing %s: %w", o.fam16, *e)
	}
	return nil
}

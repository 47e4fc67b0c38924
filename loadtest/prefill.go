package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rankgate/rankgate/client"
	"github.com/rankgate/rankgate/internal/workload"
)

// PrefillStats is what a prefill did.
type PrefillStats struct {
	From        int     `json:"from"`
	To          int     `json:"to"`
	Batch       int     `json:"batch"`
	Concurrency int     `json:"concurrency"`
	Events      int64   `json:"events"`
	Failed      int64   `json:"failed"`
	Seconds     float64 `json:"seconds"`
	Rate        float64 `json:"events_per_s"`
}

// prefillEventID is deterministic, so a repeated prefill is a duplicate (a
// no-op) on every board rather than extra points.
func prefillEventID(prefix string, i int) string {
	return eventID(prefillEventPrefix(prefix), uint64(i))
}

func prefillEventPrefix(memberPrefix string) string { return "pf." + memberPrefix }

// prefillPoints spreads members over 1..max points, deterministically.
func prefillPoints(i int, max int64) int64 {
	return 1 + int64(workload.Mix64(uint64(i)^0xa0761d6478bd642f)%uint64(max))
}

// sendBatch loads the events of members [start, end) and returns how many
// failed for good; an error stops the prefill.
type sendBatch func(ctx context.Context, start, end int) (failed int, err error)

// prefill loads members [From, Members), one event per member (national +
// the member's province and class boards), Batch events per call of send,
// Concurrency calls in flight, with a progress bar on stderr. It is bounded
// by the member count and by timeout.
func prefill(ctx context.Context, w *World, stderr io.Writer, timeout time.Duration, send sendBatch) (*PrefillStats, error) {
	p := w.sc.Prefill
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	total := p.Members - p.From
	st := &PrefillStats{From: p.From, To: p.Members, Batch: p.Batch, Concurrency: p.Concurrency}
	var done, failed atomic.Int64
	batches := make(chan int)
	errc := make(chan error, p.Concurrency)
	var wg sync.WaitGroup
	for range p.Concurrency {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for start := range batches {
				end := min(start+p.Batch, p.Members)
				n, err := send(ctx, start, end)
				if err != nil {
					select {
					case errc <- fmt.Errorf("members %d..%d: %w", start, end-1, err):
					default:
					}
					cancel()
					return
				}
				failed.Add(int64(n))
				done.Add(int64(end - start))
			}
		}()
	}
	began := time.Now()
	stopBar := make(chan struct{})
	barDone := make(chan struct{})
	go func() {
		defer close(barDone)
		t := time.NewTicker(250 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stopBar:
				fmt.Fprintln(stderr, progressBar(done.Load(), int64(total), failed.Load(), time.Since(began)))
				return
			case <-t.C:
				fmt.Fprint(stderr, "\r"+progressBar(done.Load(), int64(total), failed.Load(), time.Since(began)))
			}
		}
	}()
feed:
	for start := p.From; start < p.Members; start += p.Batch {
		select {
		case batches <- start:
		case <-ctx.Done():
			break feed
		}
	}
	close(batches)
	wg.Wait()
	close(stopBar)
	<-barDone
	st.Events, st.Failed = done.Load(), failed.Load()
	st.Seconds = time.Since(began).Seconds()
	if st.Seconds > 0 {
		st.Rate = float64(st.Events) / st.Seconds
	}
	select {
	case err := <-errc:
		return st, err
	default:
	}
	if st.Events < int64(total) {
		return st, fmt.Errorf("prefill stopped after %d of %d members: %w", st.Events, total, context.Cause(ctx))
	}
	return st, nil
}

// httpSend posts each batch to the gateway's POST /v1/events:batch.
func httpSend(w *World) sendBatch {
	c, err := prefillClient(w.sc.Gateway, newHTTPClient(w.sc.Prefill.Concurrency, 30*time.Second))
	return func(ctx context.Context, start, end int) (int, error) {
		if err != nil {
			return 0, err
		}
		return postBatch(ctx, c, prefillEvents(w, start, end))
	}
}

// eventWriter writes a batch operation's events straight to Redis: the
// baseline's write path, the gateway's ApplyBatch without HTTP.
type eventWriter interface {
	events(ctx context.Context, op *Op) error
}

var _ eventWriter = (*Baseline)(nil)

// directSend writes each batch through ew (-prefill-direct): the same
// scripts, keys, event ids and points as the HTTP prefill, so that the two
// are interchangeable and a repeated prefill is a duplicate either way. It
// exists to build boards of millions of members, where HTTP and JSON cost
// more than the writes. A failed round trip is retried (safe: the event ids
// are deterministic); a refusal of the period (frozen, out of range) stops.
func directSend(w *World, ew eventWriter, backoff time.Duration) sendBatch {
	return func(ctx context.Context, start, end int) (int, error) {
		op := &Op{Kind: workload.OpBatch, Prefix: prefillEventPrefix(w.sc.MemberPrefix), Event: uint64(start),
			Users: make([]int32, 0, end-start), Deltas: make([]int64, 0, end-start)}
		for i := start; i < end; i++ {
			op.Users = append(op.Users, int32(i))
			op.Deltas = append(op.Deltas, prefillPoints(i, w.sc.Prefill.PointsMax))
		}
		var last error
		for attempt := range 6 {
			if attempt > 0 {
				select {
				case <-ctx.Done():
					return 0, ctx.Err()
				case <-time.After(time.Duration(attempt*attempt) * backoff):
				}
			}
			err := ew.events(ctx, op)
			var refused errStatus
			switch {
			case err == nil:
				return 0, nil
			case ctx.Err() != nil:
				return 0, ctx.Err()
			case errors.As(err, &refused):
				return 0, fmt.Errorf("the period refused the events: %w", err)
			}
			last = err
		}
		return 0, fmt.Errorf("gave up after 6 attempts: %w", last)
	}
}

// prefillEvents renders the events of members [start, end) as JSON objects.
func prefillEvents(w *World, start, end int) [][]byte {
	out := make([][]byte, 0, end-start)
	for i := start; i < end; i++ {
		b := make([]byte, 0, 160)
		out = append(out, appendEventJSON(b, w, prefillEventID(w.sc.MemberPrefix, i), int32(i), prefillPoints(i, w.sc.Prefill.PointsMax)))
	}
	return out
}

func batchBody(events [][]byte) []byte {
	n := 16
	for _, e := range events {
		n += len(e) + 1
	}
	b := append(make([]byte, 0, n), `{"events":[`...)
	for i, e := range events {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, e...)
	}
	return append(b, "]}"...)
}

// postBatch sends one batch through the gateway client and returns how many
// events failed for good. The client retries the whole batch on a 503, a
// 429 or a transport error (with backoff, honouring Retry-After); events
// answered unavailable inside a 200 are sent again alone, up to 6 rounds.
// Retrying is safe: event ids are deterministic, so a board that already
// has the event answers duplicate.
func postBatch(ctx context.Context, c *client.Client, events [][]byte) (int, error) {
	pending, failed := events, 0
	for round := range prefillRounds {
		if round > 0 {
			select {
			case <-ctx.Done():
				return 0, ctx.Err()
			case <-time.After(time.Duration(round*round) * 200 * time.Millisecond):
			}
		}
		raw := make([]json.RawMessage, len(pending))
		for i, e := range pending {
			raw[i] = e
		}
		items, err := c.PostEventsJSON(ctx, raw)
		if err != nil {
			if ctx.Err() != nil {
				return 0, ctx.Err()
			}
			return 0, err
		}
		if len(items) != len(pending) {
			return 0, fmt.Errorf("unexpected batch answer: %d results for %d events", len(items), len(pending))
		}
		var again [][]byte
		for i, it := range items {
			switch {
			case it.Error == nil:
			case it.Error.Code == "unavailable":
				again = append(again, pending[i])
			default:
				failed++
			}
		}
		if len(again) == 0 {
			return failed, nil
		}
		pending = again
	}
	return failed + len(pending), nil
}

// prefillRounds bounds the rounds of postBatch, and the client's tries of
// one batch.
const prefillRounds = 6

// prefillClient is the gateway client of the prefill: up to prefillRounds
// tries of a batch, with backoff from 200 ms.
func prefillClient(base string, hc *http.Client) (*client.Client, error) {
	return client.New(base, client.WithHTTPClient(hc),
		client.WithRetry(client.Retry{Attempts: prefillRounds, Base: 200 * time.Millisecond, Max: 5 * time.Second}))
}

// progressBar renders "[#####.....]  45.0%  45000/100000  12345 ev/s  ETA 4s".
func progressBar(done, total, failed int64, elapsed time.Duration) string {
	const width = 30
	frac := 1.0
	if total > 0 {
		frac = float64(done) / float64(total)
	}
	n := int(frac * width)
	rate := 0.0
	if s := elapsed.Seconds(); s > 0 {
		rate = float64(done) / s
	}
	eta := "?"
	if rate > 0 {
		eta = (time.Duration(float64(total-done)/rate) * time.Second).Round(time.Second).String()
	}
	s := fmt.Sprintf("prefill [%s%s] %5.1f%%  %d/%d members  %6.0f ev/s  ETA %s",
		strings.Repeat("#", n), strings.Repeat(".", width-n), 100*frac, done, total, rate, eta)
	if failed > 0 {
		s += fmt.Sprintf("  failed %d", failed)
	}
	return s + "   "
}

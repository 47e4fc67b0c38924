package gateway

import (
	"context"
	"sync"
	"time"
)

// coalescer sends concurrent requests of one key to Redis together: the
// first request of an idle key goes out at once, alone; the requests that
// arrive while a call is in flight wait for it and then go out together, in
// arrival order, up to max requests a call. A storm of requests is a handful
// of round trips instead of one each; run answers each request on its own,
// in order, so what one request would get alone holds for each.
//
// No goroutine runs while no request is pending.
type coalescer[Req, Res any] struct {
	run func(ctx context.Context, reqs []Req) ([]Res, error)
	max int

	mu     sync.Mutex
	queues map[string]*coalesceQueue[Req, Res] // key → its pending requests
}

// coalesceTimeout bounds one call: it outlives the caller that opened it.
const coalesceTimeout = 5 * time.Second

type coalesceQueue[Req, Res any] struct {
	pending []*pendingReq[Req, Res]
}

type pendingReq[Req, Res any] struct {
	req  Req
	ctx  context.Context
	res  Res
	err  error
	done chan struct{}
}

func newCoalescer[Req, Res any](max int, run func(ctx context.Context, reqs []Req) ([]Res, error)) *coalescer[Req, Res] {
	return &coalescer[Req, Res]{run: run, max: max, queues: map[string]*coalesceQueue[Req, Res]{}}
}

// do sends req with the other requests of key and waits for its answer. A
// caller that gives up first gets its context's error; its request may
// still be sent.
func (c *coalescer[Req, Res]) do(ctx context.Context, key string, req Req) (Res, error) {
	r := &pendingReq[Req, Res]{req: req, ctx: ctx, done: make(chan struct{})}
	c.mu.Lock()
	q, busy := c.queues[key]
	if !busy {
		q = &coalesceQueue[Req, Res]{}
		c.queues[key] = q
	}
	q.pending = append(q.pending, r)
	c.mu.Unlock()
	if !busy {
		go c.drain(key, q)
	}
	select {
	case <-r.done:
		return r.res, r.err
	case <-ctx.Done():
		var zero Res
		return zero, ctx.Err()
	}
}

// drain sends the queue's pending requests, a batch a call, until none is
// left; then the key is idle again.
func (c *coalescer[Req, Res]) drain(key string, q *coalesceQueue[Req, Res]) {
	for {
		c.mu.Lock()
		if len(q.pending) == 0 {
			delete(c.queues, key)
			c.mu.Unlock()
			return
		}
		n := min(len(q.pending), c.max)
		batch := q.pending[:n:n]
		q.pending = q.pending[n:]
		c.mu.Unlock()
		c.send(batch)
	}
}

// send makes one call for batch and answers each of its requests. Requests
// whose callers already gave up are left out of the call.
func (c *coalescer[Req, Res]) send(batch []*pendingReq[Req, Res]) {
	live := batch[:0:0]
	reqs := make([]Req, 0, len(batch))
	for _, r := range batch {
		if r.ctx.Err() != nil {
			close(r.done)
			continue
		}
		live = append(live, r)
		reqs = append(reqs, r.req)
	}
	if len(live) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(live[0].ctx), coalesceTimeout)
	defer cancel()
	res, err := c.run(ctx, reqs)
	for i, r := range live {
		if err != nil {
			r.err = err
		} else {
			r.res = res[i]
		}
		close(r.done)
	}
}

package gateway

import (
	"context"
	"sync"
	"time"

	"github.com/rankgate/rankgate/internal/store"
)

// joinFunc takes seats for members in order on the tournament period of k
// (its member board indexes first, then store.Store.Join).
type joinFunc func(ctx context.Context, k joinKeys, members []string, maxSize, nowMs int64) ([]store.JoinResult, error)

// joinBatcher coalesces concurrent joins of one tournament period into few
// script calls: the first join of an idle seats hash goes out at once,
// alone; the joins that arrive while a call is in flight wait for it and
// then go out together, in arrival order, up to maxJoinBatch members a
// call. A storm of 1 000 joins at a tournament's start is a handful of
// round trips instead of 1 000 scripts queued in one slot; seats are still
// taken one member at a time inside the script, so the size bound and the
// arrival order hold exactly as for single joins.
//
// No goroutine runs while no join is pending.
type joinBatcher struct {
	run joinFunc

	mu     sync.Mutex
	queues map[string]*joinQueue // seats key → its pending joins
}

// maxJoinBatch bounds the members of one script call (its run time in
// Redis: about a microsecond a member).
const maxJoinBatch = 512

// joinTimeout bounds one call: it outlives the caller that opened it.
const joinTimeout = 5 * time.Second

type joinQueue struct {
	k       joinKeys
	maxSize int64
	pending []*joinReq
}

type joinReq struct {
	member string
	nowMs  int64
	ctx    context.Context
	res    store.JoinResult
	err    error
	done   chan struct{}
}

func newJoinBatcher(run joinFunc) *joinBatcher {
	return &joinBatcher{run: run, queues: map[string]*joinQueue{}}
}

// join takes a seat for member and waits for its answer. A caller that
// gives up first gets its context's error; its join may still be made (a
// retry answers "in").
func (b *joinBatcher) join(ctx context.Context, k joinKeys, member string, maxSize, nowMs int64) (store.JoinResult, error) {
	r := &joinReq{member: member, nowMs: nowMs, ctx: ctx, done: make(chan struct{})}
	seats := k.seats
	b.mu.Lock()
	q, busy := b.queues[seats]
	if !busy {
		q = &joinQueue{k: k, maxSize: maxSize}
		b.queues[seats] = q
	}
	q.pending = append(q.pending, r)
	b.mu.Unlock()
	if !busy {
		go b.drain(seats, q)
	}
	select {
	case <-r.done:
		return r.res, r.err
	case <-ctx.Done():
		return store.JoinResult{}, ctx.Err()
	}
}

// drain sends the queue's pending joins, a batch a call, until none is
// left; then the seats hash is idle again.
func (b *joinBatcher) drain(seats string, q *joinQueue) {
	for {
		b.mu.Lock()
		if len(q.pending) == 0 {
			delete(b.queues, seats)
			b.mu.Unlock()
			return
		}
		n := min(len(q.pending), maxJoinBatch)
		batch := q.pending[:n:n]
		q.pending = q.pending[n:]
		b.mu.Unlock()
		b.send(q, batch)
	}
}

// send makes one call for batch and answers each of its joins. Joins whose
// callers already gave up are left out of the call.
func (b *joinBatcher) send(q *joinQueue, batch []*joinReq) {
	live := batch[:0:0]
	members := make([]string, 0, len(batch))
	var nowMs int64
	for _, r := range batch {
		if r.ctx.Err() != nil {
			close(r.done)
			continue
		}
		live = append(live, r)
		members = append(members, r.member)
		nowMs = max(nowMs, r.nowMs)
	}
	if len(live) == 0 {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(live[0].ctx), joinTimeout)
	defer cancel()
	res, err := b.run(ctx, q.k, members, q.maxSize, nowMs)
	for i, r := range live {
		if err != nil {
			r.err = err
		} else {
			r.res = res[i]
		}
		close(r.done)
	}
}

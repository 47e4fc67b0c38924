package gateway

import (
	"context"
	"sync"
	"time"

	"github.com/rankgate/rankgate/internal/rank"
)

// commitQueue coalesces concurrent ledger writes into groups (ledger mode,
// group commit): requests that arrive within linger of the first one of a
// group, up to maxEvents events, share one ledger transaction and one Redis
// projection pipeline; each caller gets its own answers. The linger applies
// only while another group is in flight: with none, a request commits at once. At most maxGroups
// groups run at once; while they do, the next group keeps filling, so the
// group size follows the load.
//
// A request may come before it may commit (ready: its tournament checks are
// still in Redis): it waits in the queue meanwhile, and a group takes only
// the requests that are ready, in order, leaving the others for the next —
// so the checks' round trip overlaps the wait for the group in flight
// instead of coming before it.
//
// No goroutine runs while the queue is empty: the first request of a group
// starts a collector, which ends when nothing is pending.
type commitQueue struct {
	linger    time.Duration
	maxEvents int
	run       runFunc
	slots     chan struct{} // one per group committing
	kick      chan struct{} // wakes a lingering collector once maxEvents are pending
	arrived   chan struct{} // a request ready at once came (wakes a collector waiting for checks)
	waited    observer      // each request's wait from submit until its group starts

	mu         sync.Mutex
	pending    []*commitReq
	n          int // events pending
	collecting bool
}

// commitReq is one caller's part of a group.
type commitReq struct {
	ctx   context.Context
	at    time.Time // submitted
	plans []*plan
	out   []BatchItem
	done  chan struct{}
	ready <-chan struct{} // closed once it may commit; nil: at once
}

// isReady reports whether r may join a group now.
func (r *commitReq) isReady() bool {
	if r.ready == nil {
		return true
	}
	select {
	case <-r.ready:
		return true
	default:
		return false
	}
}

// runFunc commits and projects one group, answering each plan; it calls
// committed once the ledger transaction ended (before the projection), which
// frees the group's slot for the next group.
type runFunc func(ctx context.Context, plans []*plan, committed func()) []BatchItem

func newCommitQueue(linger time.Duration, maxEvents, maxGroups int, run runFunc) *commitQueue {
	return &commitQueue{linger: linger, maxEvents: max(maxEvents, 1), run: run,
		slots: make(chan struct{}, max(maxGroups, 1)), kick: make(chan struct{}, 1), arrived: make(chan struct{}, 1), waited: noObserver{}}
}

// observer is what the queue needs of a prometheus.Observer.
type observer interface{ Observe(float64) }

type noObserver struct{}

func (noObserver) Observe(float64) {}

// groupTimeout bounds one group's commit and projection: a group outlives the
// caller that opened it (its other callers still wait for it).
const groupTimeout = 10 * time.Second

// submit queues plans and waits for their answers (one per plan, in order).
// A caller that gives up first is answered unavailable: its events may still
// commit, and a retry is a duplicate. ready (nil: at once) is closed when
// the plans may commit; a group takes them only then.
func (q *commitQueue) submit(ctx context.Context, plans []*plan, ready <-chan struct{}) []BatchItem {
	r := &commitReq{ctx: ctx, at: time.Now(), plans: plans, done: make(chan struct{}), ready: ready}
	q.mu.Lock()
	q.pending = append(q.pending, r)
	q.n += len(plans)
	start := !q.collecting
	q.collecting = true
	full := q.n >= q.maxEvents
	q.mu.Unlock()
	if start {
		go q.collect()
	} else if full {
		select {
		case q.kick <- struct{}{}:
		default:
		}
	}
	if ready == nil && !start {
		select {
		case q.arrived <- struct{}{}:
		default:
		}
	}
	select {
	case <-r.done:
		return r.out
	case <-ctx.Done():
		out := make([]BatchItem, len(plans))
		for i := range out {
			out[i].Err = rank.Unavailable(ctx.Err(), "gave up waiting for the ledger commit; the event may be recorded, a retry is safe")
		}
		return out
	}
}

// collect forms groups while requests are pending.
func (q *commitQueue) collect() {
	for {
		q.mu.Lock()
		if len(q.pending) == 0 {
			q.collecting = false
			q.mu.Unlock()
			return
		}
		full := q.n >= q.maxEvents
		q.mu.Unlock()
		// Linger only while a group is in flight: an idle queue commits at
		// once (the commit takes longer than the linger, and the next
		// group fills meanwhile); a busy one waits for companions.
		if !full && q.linger > 0 && len(q.slots) > 0 {
			t := time.NewTimer(q.linger)
			select {
			case <-t.C:
			case <-q.kick:
				t.Stop()
			}
		}
		q.slots <- struct{}{} // a free group slot; requests keep queueing meanwhile
		q.mu.Lock()
		var group []*commitReq
		var wait <-chan struct{} // the first request not ready, when none is
		n := 0
		rest, full := q.pending[:0], false
		for _, r := range q.pending {
			ready := r.isReady()
			full = full || (ready && n > 0 && n+len(r.plans) > q.maxEvents)
			if full || !ready {
				if wait == nil && !ready {
					wait = r.ready
				}
				rest = append(rest, r)
				continue
			}
			group = append(group, r)
			n += len(r.plans)
		}
		clear(q.pending[len(rest):])
		q.pending = rest
		q.n -= n
		q.mu.Unlock()
		if len(group) == 0 {
			<-q.slots // nothing may commit yet: wait for the first check, or a request ready at once
			select {
			case <-wait:
			case <-q.arrived:
			}
			continue
		}
		go q.runGroup(group, n)
	}
}

// runGroup commits and projects one group and answers its callers. Its slot
// is freed once the commit ended: the next group commits while this one is
// projected (projections carry versions, so their order does not matter).
func (q *commitQueue) runGroup(group []*commitReq, n int) {
	var once sync.Once
	release := func() { once.Do(func() { <-q.slots }) }
	defer release()
	ctx, cancel := context.WithTimeout(context.WithoutCancel(group[0].ctx), groupTimeout)
	defer cancel()
	plans := make([]*plan, 0, n)
	now := time.Now()
	for _, r := range group {
		q.waited.Observe(now.Sub(r.at).Seconds())
		plans = append(plans, r.plans...)
	}
	out := q.run(ctx, plans, release)
	i := 0
	for _, r := range group {
		r.out = out[i : i+len(r.plans) : i+len(r.plans)]
		i += len(r.plans)
		close(r.done)
	}
}

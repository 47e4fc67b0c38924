package gateway

import (
	"context"

	"github.com/rankgate/rankgate/internal/store"
)

// joinFunc takes seats for members in order on the tournament period of k
// (its member board indexes first, then store.Store.Join).
type joinFunc func(ctx context.Context, k joinKeys, members []string, maxSize, nowMs int64) ([]store.JoinResult, error)

// joinBatcher coalesces concurrent joins of one tournament period (keyed
// by its seats hash) into few script calls (coalescer): a storm of 1 000
// joins at a tournament's start is a handful of round trips instead of
// 1 000 scripts queued in one slot; seats are still taken one member at a
// time inside the script, so the size bound and the arrival order hold
// exactly as for single joins.
type joinBatcher struct {
	*coalescer[joinReq, store.JoinResult]
}

// maxJoinBatch bounds the members of one script call (its run time in
// Redis: about a microsecond a member).
const maxJoinBatch = 512

// joinReq is one join: the period's keys, the member, the size bound and
// its time. One call carries joins of one seats hash (one k and bound).
type joinReq struct {
	k       joinKeys
	member  string
	maxSize int64
	nowMs   int64
}

func newJoinBatcher(run joinFunc) *joinBatcher {
	return &joinBatcher{newCoalescer(maxJoinBatch, func(ctx context.Context, reqs []joinReq) ([]store.JoinResult, error) {
		members := make([]string, len(reqs))
		var nowMs int64
		for i, r := range reqs {
			members[i], nowMs = r.member, max(nowMs, r.nowMs)
		}
		return run(ctx, reqs[0].k, members, reqs[0].maxSize, nowMs)
	})}
}

// join takes a seat for member and waits for its answer. A caller that
// gives up first gets its context's error; its join may still be made (a
// retry answers "in").
func (b *joinBatcher) join(ctx context.Context, k joinKeys, member string, maxSize, nowMs int64) (store.JoinResult, error) {
	return b.do(ctx, k.seats, joinReq{k: k, member: member, maxSize: maxSize, nowMs: nowMs})
}
